// Sessions: validate a request, call the generated entry, and turn its outputs into owned tensors.
#include "device_queue.h"
#include "error.h"
#include "model.h"
#include "string_tensors.h"
#include "tensor.h"
#include "validate.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

using kiln::runtime::makeError;

struct kiln_session {
  kiln_model *model = nullptr;
  std::atomic<bool> running{false};
  // Reused across runs so a request allocates only its outputs.
  std::vector<kiln_abi_tensor> inputs; // graph inputs, then the model's weights
  std::vector<kiln_abi_tensor> outputs;
  std::vector<std::vector<int64_t>> outputShapes;
  bool profiling = false;
  bool lastRunProfiled = false;
  std::vector<kiln_profile_event> profile; // the last run's launches
  // The session's stream, arena and buffers on the model's device (made by the first run).
  std::unique_ptr<kiln::runtime::Queue> queue;
};

namespace {

using kiln::runtime::RunState;

// Clears the busy flag however run() returns.
struct RunningGuard {
  std::atomic<bool> &flag;
  ~RunningGuard() { flag.store(false, std::memory_order_release); }
};

// Output `i` as the generated code returned it, checked against the signature.
std::string checkOutput(const kiln::artifact::TensorSignature &sig, const kiln_abi_tensor &o, size_t *bytes) {
  const std::string where = "generated code returned output '" + sig.name + "'";
  for (size_t d = 0; d < sig.dims.size(); ++d) {
    if (o.shape[d] < 0)
      return where + " with dim " + std::to_string(d) + " = " + std::to_string(o.shape[d]);
    if (sig.dims[d].size >= 0 && o.shape[d] != sig.dims[d].size)
      return where + " with dim " + std::to_string(d) + " = " + std::to_string(o.shape[d]) + ", signature says " +
             std::to_string(sig.dims[d].size);
  }
  std::string error;
  if (!kiln::runtime::tensorByteSize(kiln_dtype(sig.dtype), o.shape, sig.dims.size(), bytes, &error))
    return where + ": " + error;
  if (*bytes > 0 && !o.data)
    return where + " without data";
  return {};
}

// A decoder's `kiln.past_length` must lie within every cache's capacity (the generated code
// writes the new entries from there on).
std::string checkCachePosition(const kiln::artifact::Metadata &meta, const kiln_tensor *const *inputs) {
  const auto &d = meta.decoder;
  if (!d.present)
    return {};
  const kiln_tensor *pos = inputs[d.positionInput];
  if (pos->device)
    return "input '" + meta.inputs[d.positionInput].name + "' must be in host memory (the runtime checks it)";
  int64_t past = 0;
  std::memcpy(&past, pos->data, sizeof past);
  // A paged cache holds, per sequence, as many blocks as its table row has.
  long tableInput = -1;
  for (size_t i = 0; i < meta.inputs.size(); ++i)
    if (meta.inputs[i].name == kiln::artifact::kBlockTableInput)
      tableInput = long(i);
  const kiln_tensor *table = tableInput >= 0 ? inputs[tableInput] : nullptr;
  if (table && table->device)
    return "input '" + meta.inputs[size_t(tableInput)].name + "' must be in host memory (the runtime checks it)";
  for (const auto &c : d.caches) {
    const int64_t capacity = table ? table->shape[1] * inputs[c.input]->shape[c.axis] : inputs[c.input]->shape[c.axis];
    if (past < 0 || past > capacity)
      return "input '" + meta.inputs[d.positionInput].name + "' is " + std::to_string(past) +
             ", outside the capacity of cache '" + meta.inputs[c.input].name + "' (" + std::to_string(capacity) + ")";
  }
  // Each row's own length (kiln.row_positions) lies within the capacity. A row appends there when
  // that is within the read extent [0, past]; a row past it sits the run out (nothing written).
  int64_t capacity = INT64_MAX;
  for (const auto &c : d.caches) {
    capacity = std::min(capacity, table ? table->shape[1] * inputs[c.input]->shape[c.axis]
                                        : inputs[c.input]->shape[c.axis]);
    // Block ids name blocks of the pool (or are negative: none yet; never written, never read
    // as a sequence's own entries).
    if (table) {
      const int64_t blocks = inputs[c.input]->shape[0];
      const int64_t *ids = static_cast<const int64_t *>(table->data);
      for (int64_t k = 0; k < table->shape[0] * table->shape[1]; ++k)
        if (ids[k] >= blocks)
          return "input '" + meta.inputs[size_t(tableInput)].name + "' names block " + std::to_string(ids[k]) +
                 ", outside the pool of cache '" + meta.inputs[c.input].name + "' (" + std::to_string(blocks) +
                 " blocks)";
    }
  }
  for (size_t i = 0; i < meta.inputs.size(); ++i) {
    // The logits of each row's last N positions: N >= 1 (0 would read as "from position 0").
    if (meta.inputs[i].name == kiln::artifact::kLogitRowsInput) {
      if (inputs[i]->device)
        return "input '" + meta.inputs[i].name + "' must be in host memory (the runtime checks it)";
      int64_t n = 0;
      std::memcpy(&n, inputs[i]->data, sizeof n);
      if (n < 1)
        return "input '" + meta.inputs[i].name + "' is " + std::to_string(n) + ": it must be at least 1";
      continue;
    }
    if (meta.inputs[i].name != kiln::artifact::kRowPositionsInput)
      continue;
    const kiln_tensor *rows = inputs[i];
    if (rows->device)
      return "input '" + meta.inputs[i].name + "' must be in host memory (the runtime checks it)";
    const int64_t n = rows->shape.empty() ? 0 : rows->shape[0];
    for (int64_t r = 0; r < n; ++r) {
      int64_t p = 0;
      std::memcpy(&p, static_cast<const char *>(rows->data) + r * sizeof p, sizeof p);
      if (p < 0 || p > capacity)
        return "input '" + meta.inputs[i].name + "' row " + std::to_string(r) + " is " + std::to_string(p) +
               ", outside the caches' capacity [0, " + std::to_string(capacity) + "]";
    }
  }
  return {};
}

// The first failure of the run's string kernels, if any: they ran to the end of the entry
// without failing the generated code.
kiln_error *stringError(const RunState &state) {
  if (state.strings.outOfMemory)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory making this request's strings");
  if (!state.strings.error.empty())
    return makeError(KILN_ERROR_INVALID_ARGUMENT, state.strings.error);
  return nullptr;
}

// The run's failed allocation, if any: the generated code returned at once, before writing (or
// after failing to allocate) its outputs, so nothing of the run is kept.
kiln_error *allocationError(const RunState &state, const char *what) {
  if (state.workspaceFailed >= 0)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, std::string(what) + ": this request's intermediates need " +
                                                   std::to_string(state.workspaceFailed) + " bytes of scratch memory");
  if (state.allocationFailed >= 0)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, std::string(what) + ": an output or a data-sized intermediate of " +
                                                   std::to_string(state.allocationFailed) +
                                                   " bytes could not be allocated (check the request's sizes)");
  return nullptr;
}

// The memory a run holds: inputs staged in device memory and the outputs the generated code
// allocated, each released however the run ends unless a tensor took it over. Device memory goes
// back to the queue's cache; host memory, which the code allocated with malloc, to free().
struct RunMemory {
  kiln::runtime::Queue &queue;
  bool host;
  std::vector<void *> blocks;
  void add(void *p) {
    if (p && std::find(blocks.begin(), blocks.end(), p) == blocks.end())
      blocks.push_back(p);
  }
  void take(void *p) { blocks.erase(std::remove(blocks.begin(), blocks.end(), p), blocks.end()); }
  ~RunMemory() {
    for (void *p : blocks)
      host ? std::free(p) : queue.release(p);
  }
};

// The signature a graph is kept for: each input's dtype, rank and dims, and the address of an
// input already in device memory, which the graph reads in place (its address is in the graph:
// the same caller buffer run after run replays it, another one is another signature).
std::vector<int64_t> signatureOf(const kiln_tensor *const *inputs, size_t count) {
  std::vector<int64_t> key;
  for (size_t i = 0; i < count; ++i) {
    key.push_back(int64_t(inputs[i]->dtype));
    key.push_back(int64_t(inputs[i]->shape.size()));
    key.insert(key.end(), inputs[i]->shape.begin(), inputs[i]->shape.end());
    key.push_back(inputs[i]->device ? int64_t(reinterpret_cast<uintptr_t>(inputs[i]->data)) : 0);
  }
  return key;
}

// Whether this request may run as a CUDA graph at all: a device with graphs (not turned off,
// no debug mode), no profiling (events per launch), no decoder state, no strings (host memory).
bool graphsFor(const kiln_session &s, kiln::runtime::Device &device, const kiln_tensor *const *inputs,
               size_t count) {
  const auto &meta = s.model->view.meta;
  if (device.hostMemory() || !device.capturesGraphs() || s.profiling || meta.decoder.present)
    return false;
  for (size_t i = 0; i < count; ++i)
    if (inputs[i]->dtype == KILN_DTYPE_STRING)
      return false;
  for (const auto &o : meta.outputs)
    if (kiln_dtype(o.dtype) == KILN_DTYPE_STRING)
      return false;
  return true;
}

// Whether this decoder run may go through a step graph (step_graph.h): a device that can set its
// graphs' kernels, no profiling, no strings.
bool stepGraphsFor(const kiln_session &s, kiln::runtime::Device &device, const kiln_tensor *const *inputs,
                   size_t count) {
  const auto &meta = s.model->view.meta;
  if (!meta.decoder.present || device.hostMemory() || !device.setsGraphKernels() || s.profiling)
    return false;
  for (size_t i = 0; i < count; ++i)
    if (inputs[i]->dtype == KILN_DTYPE_STRING)
      return false;
  return true;
}

// The shape class one step graph serves: the run's signature without the attention mask's
// length, which grows by one every step.
std::vector<int64_t> stepSignatureOf(const kiln_session &s, const kiln_tensor *const *inputs, size_t count) {
  std::vector<int64_t> key{-2}; // apart from whole-run signatures
  const auto &meta = s.model->view.meta;
  for (size_t i = 0; i < count; ++i) {
    key.push_back(int64_t(inputs[i]->dtype));
    key.push_back(int64_t(inputs[i]->shape.size()));
    if (meta.inputs[i].name == "attention_mask")
      key.push_back(inputs[i]->shape.empty() ? 0 : inputs[i]->shape[0]);
    else
      key.insert(key.end(), inputs[i]->shape.begin(), inputs[i]->shape.end());
    key.push_back(inputs[i]->device ? int64_t(reinterpret_cast<uintptr_t>(inputs[i]->data)) : 0);
  }
  return key;
}

// Where a run's outputs go: new tensors into `fresh` (kiln_session_run), or written into the
// caller's tensors `into` (kiln_session_run_into; then `fresh` is null).
struct OutputSlots {
  kiln_tensor **fresh = nullptr;
  kiln_tensor *const *into = nullptr;
};

kiln_error *takeOutputs(kiln_session &s, RunMemory &memory, OutputSlots outputs);

void resetOutputs(kiln_session &s) {
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    // -1 marks dims the generated code forgot to fill; checkOutput catches them.
    std::fill(s.outputShapes[i].begin(), s.outputShapes[i].end(), -1);
    s.outputs[i] = kiln_abi_tensor{nullptr, nullptr, s.outputShapes[i].data()};
  }
}

// The run failed or could not be what it was for (a wait for the GPU, an allocation refused).
bool runFailed(const RunState &state, int32_t rc) {
  return rc != 0 || state.hostWaits || !state.error.empty() || state.workspaceFailed >= 0 ||
         state.allocationFailed >= 0;
}

// A decoder step through its shape class's graph (inputs staged, in the step region): the host
// program is run against the graph's work, the nodes that differ are set anew and the graph is
// launched; when the work is not the graph's, the step is captured again and launched. `*eager`:
// neither could be done, the caller runs the step eagerly (the graph is dropped; for good when
// the step cannot be captured at all).
kiln_error *runStep(kiln_session &s, kiln::runtime::CapturedGraph &g, const std::vector<RunState::StagedInput> &staged,
                    RunMemory &memory, OutputSlots outputs, bool *eager) {
  using State = kiln::runtime::CapturedGraph::State;
  using kiln::runtime::StepRun;
  kiln::runtime::Queue &queue = *s.queue;
  kiln::runtime::Device &device = queue.device();
  const size_t mark = queue.stepMark();
  std::string error;
  *eager = false;
  auto launch = [&]() -> kiln_error * {
    if (!device.launchGraph(g.exec, queue.stream(), error) || !queue.finish(error))
      return makeError(KILN_ERROR_INTERNAL, error);
    return takeOutputs(s, memory, outputs);
  };
  if (g.state == State::Ready) {
    StepRun step{StepRun::Mode::Compare, &device, g.exec, &g.steps};
    RunState state;
    state.step = &step;
    state.staged = staged;
    resetOutputs(s);
    kiln_abi_context ctx = queue.begin(state);
    const int32_t rc = s.model->entry(&ctx, s.inputs.data(), s.outputs.data());
    for (const auto &o : s.outputs)
      memory.add(o.allocated);
    if (!runFailed(state, rc) && stepMatched(step))
      return launch();
    queue.rewindStep(mark); // captured again below, with the same addresses
  }
  device.destroyGraph(g.exec);
  g.exec = nullptr;
  g.steps.work.clear();
  g.state = State::Seen;
  StepRun step{StepRun::Mode::Capture, &device, nullptr, &g.steps};
  RunState state;
  state.step = &step;
  state.capturing = true;
  state.staged = staged;
  resetOutputs(s);
  kiln_abi_context ctx = queue.begin(state);
  if (!device.beginCapture(queue.stream(), error)) {
    *eager = true;
    return nullptr;
  }
  queue.setCapturing(true);
  const int32_t rc = s.model->entry(&ctx, s.inputs.data(), s.outputs.data());
  queue.setCapturing(false);
  void *exec = device.endCapture(queue.stream(), error);
  for (const auto &o : s.outputs)
    memory.add(o.allocated);
  if (!exec || runFailed(state, rc) || step.untracked) {
    device.destroyGraph(exec);
    g.steps.work.clear();
    if (step.untracked || state.hostWaits)
      g.state = State::Never;
    queue.rewindStep(mark);
    *eager = true;
    return nullptr;
  }
  g.exec = exec;
  g.state = State::Ready;
  return launch();
}

// Copies the host inputs into the graph's buffers (their addresses are in the graph); device
// inputs are read where they are.
kiln_error *uploadGraphInputs(kiln_session &s, kiln::runtime::CapturedGraph &g, const kiln_tensor *const *inputs,
                              size_t count) {
  std::string error;
  for (size_t i = 0; i < count; ++i)
    if (!inputs[i]->device && !s.model->device->upload(g.inputs[i], inputs[i]->data, inputs[i]->bytes, error))
      return makeError(KILN_ERROR_INTERNAL, "input '" + s.model->view.meta.inputs[i].name + "': " + error);
  return nullptr;
}

// A run of a captured graph: inputs into its buffers, one launch, outputs from its buffers.
kiln_error *replay(kiln_session &s, kiln::runtime::CapturedGraph &g, const kiln_tensor *const *inputs, size_t count,
                   OutputSlots outputs) {
  kiln::runtime::Queue &queue = *s.queue;
  if (kiln_error *e = uploadGraphInputs(s, g, inputs, count))
    return e;
  std::string error;
  if (!queue.device().launchGraph(g.exec, queue.stream(), error) || !queue.finish(error))
    return makeError(KILN_ERROR_INTERNAL, error);
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    s.outputShapes[i] = g.outputShapes[i];
    s.outputs[i] = g.outputs[i];
    s.outputs[i].shape = s.outputShapes[i].data();
  }
  RunMemory none{queue, false, {}}; // the graph keeps its buffers
  return takeOutputs(s, none, outputs);
}

// The second run of a signature: inputs into buffers the graph keeps, the host program run while
// the stream is captured (every launch and product recorded, not run), the graph instantiated and
// launched. No outputs and no error: the capture was given up (the run could not be a graph),
// the signature is marked Never and the caller runs the request eagerly.
kiln_error *capture(kiln_session &s, kiln::runtime::CapturedGraph &g, const kiln_tensor *const *inputs, size_t count,
                    OutputSlots outputs, bool *gaveUp) {
  using State = kiln::runtime::CapturedGraph::State;
  kiln::runtime::Queue &queue = *s.queue;
  kiln::runtime::Device &device = queue.device();
  *gaveUp = true;
  auto giveUp = [&]() -> kiln_error * {
    queue.dropGraph(g);
    g.state = State::Never;
    return nullptr;
  };
  queue.holdFor(&g);
  for (size_t i = 0; i < count; ++i) {
    if (inputs[i]->device) { // read in place: its address is part of the signature
      g.inputs.push_back(inputs[i]->data);
      s.inputs[i].shape = const_cast<int64_t *>(inputs[i]->shape.data());
      s.inputs[i].data = inputs[i]->data;
      continue;
    }
    void *p = queue.allocate(inputs[i]->bytes);
    if (!p) {
      queue.holdFor(nullptr);
      return giveUp(); // the eager run reports it
    }
    g.inputs.push_back(p);
    s.inputs[i].shape = const_cast<int64_t *>(inputs[i]->shape.data());
    s.inputs[i].data = p;
  }
  queue.holdFor(nullptr);
  if (kiln_error *e = uploadGraphInputs(s, g, inputs, count)) {
    kiln_error_free(e);
    return giveUp();
  }
  resetOutputs(s);
  std::string error;
  RunState state;
  state.capturing = true;
  kiln_abi_context ctx = queue.begin(state); // the arena is made (or kept) before the capture
  if (!device.beginCapture(queue.stream(), error))
    return giveUp();
  queue.holdFor(&g);
  const uint64_t arena = queue.arenaGeneration();
  const int32_t rc = s.model->entry(&ctx, s.inputs.data(), s.outputs.data());
  queue.holdFor(nullptr);
  g.exec = device.endCapture(queue.stream(), error);
  if (!g.exec || runFailed(state, rc) || state.readsInputs || queue.arenaGeneration() != arena)
    return giveUp();
  for (const auto &o : s.outputs) // outputs the code allocated outside the pool would leak
    if (o.allocated && std::find(g.held.begin(), g.held.end(), o.allocated) == g.held.end())
      return giveUp();
  g.arenaGeneration = arena;
  g.outputs = s.outputs;
  g.outputShapes = s.outputShapes;
  g.state = State::Ready;
  *gaveUp = false;
  return replay(s, g, inputs, count, outputs);
}

// One request on any device: validate, place the inputs where the device's kernels can read them,
// run the generated entry with the device's context, wait for its work, and turn its outputs into
// tensors the caller owns (zero copy where they are already in host memory). On a device with
// graphs, the second request of a shape signature is captured and the later ones replay it.
kiln_error *run(kiln_session &s, const kiln_tensor *const *inputs, size_t inputCount, OutputSlots outputs) {
  using State = kiln::runtime::CapturedGraph::State;
  kiln_model &m = *s.model;
  const auto &meta = m.view.meta;
  std::string why = kiln::runtime::validateInputs(meta.inputs, inputs, inputCount);
  if (why.empty())
    why = checkCachePosition(meta, inputs);
  if (!why.empty())
    return makeError(KILN_ERROR_INVALID_ARGUMENT, why);
  kiln::runtime::Device &device = *m.device;
  const bool host = device.hostMemory();
  if (host)
    for (size_t i = 0; i < inputCount; ++i)
      if (inputs[i]->device)
        return makeError(KILN_ERROR_INVALID_ARGUMENT, "input '" + meta.inputs[i].name +
                                                          "' is in GPU memory, but the model was compiled for the CPU");
  std::string error;
  if (!s.queue) {
    auto queue = std::make_unique<kiln::runtime::Queue>(device);
    if (!queue->open(error))
      return makeError(KILN_ERROR_INTERNAL, error);
    s.queue = std::move(queue);
  }
  kiln::runtime::Queue &queue = *s.queue;
  const bool graphs = graphsFor(s, device, inputs, inputCount);
  std::vector<int64_t> signature;
  if (graphs) {
    signature = signatureOf(inputs, inputCount);
    kiln::runtime::CapturedGraph *g = queue.findGraph(signature);
    if (g && g->state == State::Ready && g->arenaGeneration != queue.arenaGeneration())
      queue.dropGraph(*g); // the arena it addresses has moved: capture again
    if (g && g->state == State::Ready) {
      s.profile.clear();
      s.lastRunProfiled = false;
      return replay(s, *g, inputs, inputCount, outputs);
    }
    if (g && g->state == State::Seen) {
      s.profile.clear();
      s.lastRunProfiled = false;
      bool gaveUp = false;
      kiln_error *e = capture(s, *g, inputs, inputCount, outputs, &gaveUp);
      if (e || !gaveUp)
        return e;
      // Given up: eager below, as the first run was.
    }
  }
  RunMemory memory{queue, host, {}};
  // A decoder's runs take their buffers from the step region (eager ones too, so that a step
  // allocates the same way whether it is a graph or not), and may be step graphs.
  const bool region = meta.decoder.present && !host;
  const bool steps = region && stepGraphsFor(s, device, inputs, inputCount);
  if (region && !queue.beginStep(error))
    return makeError(KILN_ERROR_INTERNAL, error);
  struct StepEnd { // the step region is taken back however the run ends
    kiln::runtime::Queue *queue;
    ~StepEnd() {
      if (queue)
        queue->endStep();
    }
  } stepEnd{region ? &queue : nullptr};
  std::vector<RunState::StagedInput> staged;
  for (size_t i = 0; i < inputCount; ++i) {
    s.inputs[i].shape = const_cast<int64_t *>(inputs[i]->shape.data());
    if (host || inputs[i]->device) {
      // In place: the ABI's input tensors are not const, but generated code only reads them (and
      // a decoder's KV caches stay in device memory between steps).
      s.inputs[i].data = const_cast<void *>(inputs[i]->data);
      continue;
    }
    void *p = queue.allocate(inputs[i]->bytes);
    if (!p) {
      const std::string failure = device.allocationFailure();
      if (!failure.empty())
        return makeError(KILN_ERROR_INTERNAL, "input '" + meta.inputs[i].name + "': " + failure);
      return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of GPU memory for input '" + meta.inputs[i].name + "' (" +
                                                     std::to_string(inputs[i]->bytes) + " bytes)");
    }
    memory.add(p);
    if (!device.upload(p, inputs[i]->data, inputs[i]->bytes, error))
      return makeError(KILN_ERROR_INTERNAL, "input '" + meta.inputs[i].name + "': " + error);
    s.inputs[i].data = p;
    staged.push_back({static_cast<const char *>(p), static_cast<const char *>(inputs[i]->data),
                      int64_t(inputs[i]->bytes)});
  }
  if (steps) {
    signature = stepSignatureOf(s, inputs, inputCount);
    kiln::runtime::CapturedGraph *g = queue.findGraph(signature);
    if (g && g->state != State::Never) {
      s.profile.clear();
      s.lastRunProfiled = false;
      bool eager = false;
      kiln_error *e = runStep(s, *g, staged, memory, outputs, &eager);
      if (!eager)
        return e;
    }
  }
  resetOutputs(s);
  s.profile.clear();
  // Launches timed with the host's clock are in the profile however the run ends; those timed
  // on the device are read once it has finished well.
  s.lastRunProfiled = s.profiling && !device.timesOnDevice();
  RunState state;
  state.profiling = s.profiling;
  state.profile = &s.profile;
  state.staged = std::move(staged);
  kiln_abi_context ctx = queue.begin(state);
  const int32_t rc = m.entry(&ctx, s.inputs.data(), s.outputs.data());
  // An allocation failed: the device's own error comes first when there is one (a fault, whose
  // broken context then refuses allocations), else it was out of memory.
  if (state.workspaceFailed >= 0 || state.allocationFailed >= 0) {
    if (!state.error.empty())
      return makeError(KILN_ERROR_INTERNAL, state.error);
    return allocationError(state, host ? "out of memory" : "out of GPU memory");
  }
  // From here on the outputs the code allocated are ours to free.
  for (const auto &o : s.outputs)
    memory.add(o.allocated);
  const bool finished = queue.finish(error);
  if (!state.error.empty())
    return makeError(KILN_ERROR_INTERNAL, state.error);
  if (!finished)
    return makeError(KILN_ERROR_INTERNAL, error);
  if (rc != 0)
    return makeError(KILN_ERROR_INTERNAL, "generated code failed with status " + std::to_string(rc));
  if (state.deviceTimed) {
    queue.collectProfile(state);
    s.lastRunProfiled = true;
  }
  if (kiln_error *e = stringError(state))
    return e;
  // Capturable: the next request of this signature is captured. A whole-run graph bakes in the
  // values the host read from its inputs; a step graph is launched for one step's values only.
  const bool waits = state.hostWaits || (graphs && state.readsInputs);
  if ((graphs || steps) && !waits && !queue.findGraph(signature))
    queue.addGraph(signature);
  else if ((graphs || steps) && waits)
    if (kiln::runtime::CapturedGraph *g = queue.findGraph(signature))
      g->state = State::Never;
  return takeOutputs(s, memory, outputs);
}


// The run's outputs (s.outputs) as tensors the caller owns: handed over where they are host
// memory the code allocated, else copied (from device memory, or a weight or an input).
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// The run's outputs written into the caller's tensors (kiln_session_run_into): every shape is
// checked first, so a mismatch writes none. Host memory to host memory is a copy; from the GPU,
// a download, or a copy on the device (waited for) into a GPU destination.
kiln_error *writeOutputs(kiln_session &s, kiln_tensor *const *into, const std::vector<size_t> &bytes) {
  const auto &meta = s.model->view.meta;
  kiln::runtime::Device &device = *s.model->device;
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const std::vector<int64_t> shape(s.outputs[i].shape, s.outputs[i].shape + meta.outputs[i].dims.size());
    if (into[i]->shape != shape || into[i]->bytes != bytes[i])
      return makeError(KILN_ERROR_INVALID_ARGUMENT, "output '" + meta.outputs[i].name + "' is " + shapeText(shape) +
                                                        "; the tensor given for it is " + shapeText(into[i]->shape));
  }
  std::string error;
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    kiln_tensor &d = *into[i];
    const void *from = s.outputs[i].data;
    bool ok = true;
    if (bytes[i] == 0)
      continue;
    if (device.hostMemory())
      std::memcpy(d.data, from, bytes[i]);
    else if (d.device)
      ok = device.copyOnDevice(s.queue->stream(), d.data, from, bytes[i], error);
    else
      ok = device.download(d.data, from, bytes[i], error);
    if (!ok)
      return makeError(KILN_ERROR_INTERNAL, "output '" + meta.outputs[i].name + "': " + error);
  }
  return nullptr;
}

kiln_error *takeOutputs(kiln_session &s, RunMemory &memory, OutputSlots slots) {
  kiln_model &m = *s.model;
  const auto &meta = m.view.meta;
  kiln::runtime::Device &device = *m.device;
  const bool host = device.hostMemory();
  std::string why, error;
  std::vector<size_t> bytes(s.outputs.size());
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    why = checkOutput(meta.outputs[i], s.outputs[i], &bytes[i]);
    if (!why.empty())
      return makeError(KILN_ERROR_INTERNAL, why);
  }
  if (slots.into)
    return writeOutputs(s, slots.into, bytes); // `memory` releases what the code allocated
  kiln_tensor **outputs = slots.fresh;
  // Outputs in host memory are handed over: one shared owner per distinct allocation.
  std::map<void *, std::shared_ptr<void>> owners;
  if (host) {
    try {
      for (const auto &o : s.outputs)
        if (o.allocated && !owners.count(o.allocated)) {
          memory.take(o.allocated); // from here `owner` frees it, also when it cannot be made
          std::shared_ptr<void> owner(o.allocated, std::free);
          owners.emplace(o.allocated, std::move(owner));
        }
    } catch (...) {
      return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory taking outputs");
    }
  }
  std::vector<uint8_t> copied; // an output read back from device memory
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const kiln_abi_tensor &o = s.outputs[i];
    const size_t rank = meta.outputs[i].dims.size();
    const kiln_dtype dtype = kiln_dtype(meta.outputs[i].dtype);
    const void *data = bytes[i] ? o.data : nullptr;
    kiln_tensor *t = nullptr;
    kiln_error *e = nullptr;
    if (!host) {
      copied.resize(bytes[i]);
      data = copied.data();
      if (!device.download(copied.data(), o.data, bytes[i], error))
        e = makeError(KILN_ERROR_INTERNAL, "output '" + meta.outputs[i].name + "': " + error);
    }
    if (e) {
      // reported below
    } else if (dtype == KILN_DTYPE_STRING) {
      // The elements point into the run's string arena, the inputs or the code's literals: the
      // tensor gets its own copy of them and their bytes (the arena goes with `state`).
      e = kiln::runtime::makeStringTensor(o.shape, rank, static_cast<const kiln_string *>(bytes[i] ? data : nullptr),
                                          bytes[i] / sizeof(kiln_string), &t);
    } else if (host && (o.allocated || bytes[i] == 0)) {
      e = kiln_tensor_wrap(dtype, o.shape, rank, const_cast<void *>(data), bytes[i], &t);
      if (!e && o.allocated)
        t->owner = owners[o.allocated];
    } else {
      // Not owned by the caller-to-be (device memory, or a weight or an input): copy it out.
      e = kiln_tensor_create_copy(dtype, o.shape, rank, data, bytes[i], &t);
    }
    if (e) {
      for (size_t j = 0; j < i; ++j) {
        kiln_tensor_destroy(outputs[j]);
        outputs[j] = nullptr;
      }
      return e; // `owners` and `memory` release the rest
    }
    outputs[i] = t;
  }
  return nullptr;
}

} // namespace

extern "C" {

kiln_error *kiln_session_create(kiln_model *model, kiln_session **out_session) {
  if (!out_session)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_create: out_session is NULL");
  *out_session = nullptr;
  if (!model)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_create: model is NULL");
  try {
    auto *s = new kiln_session;
    const auto &meta = model->view.meta;
    s->inputs.resize(meta.inputs.size());
    s->inputs.insert(s->inputs.end(), model->weightTensors.begin(), model->weightTensors.end());
    s->outputs.resize(meta.outputs.size());
    for (const auto &o : meta.outputs)
      s->outputShapes.emplace_back(std::max<size_t>(o.dims.size(), 1));
    kiln::runtime::retainModel(model);
    s->model = model;
    *out_session = s;
    return nullptr;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory creating session");
  }
}

void kiln_session_destroy(kiln_session *session) {
  if (!session)
    return;
  session->queue.reset(); // its buffers go back to the device before the model can go
  kiln::runtime::releaseModel(session->model);
  delete session;
}

kiln_error *kiln_session_run(kiln_session *session, const kiln_tensor *const *inputs, size_t input_count,
                             kiln_tensor **outputs, size_t output_count) {
  if (!session)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_run: session is NULL");
  const size_t expected = session->model->view.meta.outputs.size();
  if (output_count != expected)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "expected " + std::to_string(expected) + " output slots, got " +
                                                      std::to_string(output_count));
  if (expected > 0 && !outputs)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_run: outputs array is NULL");
  for (size_t i = 0; i < output_count; ++i)
    outputs[i] = nullptr;
  if (session->running.exchange(true, std::memory_order_acquire))
    return makeError(KILN_ERROR_BUSY, "session is already running a request on another thread; "
                                      "create one session per thread");
  RunningGuard guard{session->running};
  try {
    return run(*session, inputs, input_count, OutputSlots{outputs, nullptr});
  } catch (...) {
    for (size_t i = 0; i < output_count; ++i) {
      kiln_tensor_destroy(outputs[i]);
      outputs[i] = nullptr;
    }
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory running the model");
  }
}

kiln_error *kiln_session_run_into(kiln_session *session, const kiln_tensor *const *inputs, size_t input_count,
                                  kiln_tensor *const *outputs, size_t output_count) {
  if (!session)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_run_into: session is NULL");
  const auto &meta = session->model->view.meta;
  if (output_count != meta.outputs.size())
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "expected " + std::to_string(meta.outputs.size()) +
                                                      " output tensors, got " + std::to_string(output_count));
  if (output_count > 0 && !outputs)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_run_into: outputs array is NULL");
  // What can be checked before the model runs; the shapes are checked after it.
  const bool host = session->model->device->hostMemory();
  for (size_t i = 0; i < output_count; ++i) {
    const std::string name = "output '" + meta.outputs[i].name + "'";
    const kiln_dtype dtype = kiln_dtype(meta.outputs[i].dtype);
    if (!outputs[i])
      return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_session_run_into: no tensor for " + name);
    if (dtype == KILN_DTYPE_STRING)
      return makeError(KILN_ERROR_INVALID_ARGUMENT,
                       name + " holds strings, which cannot be written into caller memory: use kiln_session_run");
    if (outputs[i]->dtype != dtype)
      return makeError(KILN_ERROR_INVALID_ARGUMENT, name + " is " + kiln_dtype_name(dtype) + "; the tensor given for it is " +
                                                        kiln_dtype_name(outputs[i]->dtype));
    if (outputs[i]->device && host)
      return makeError(KILN_ERROR_INVALID_ARGUMENT,
                       "the tensor given for " + name + " is in GPU memory, but the model was compiled for the CPU");
    if (outputs[i]->bytes > 0 && !outputs[i]->data)
      return makeError(KILN_ERROR_INVALID_ARGUMENT, "the tensor given for " + name + " has no data");
  }
  if (session->running.exchange(true, std::memory_order_acquire))
    return makeError(KILN_ERROR_BUSY, "session is already running a request on another thread; "
                                      "create one session per thread");
  RunningGuard guard{session->running};
  try {
    return run(*session, inputs, input_count, OutputSlots{nullptr, outputs});
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory running the model");
  }
}

} // extern "C"

void kiln_session_set_profiling(kiln_session *session, int enabled) {
  if (session)
    session->profiling = enabled != 0;
}

const kiln_profile_event *kiln_session_profile(const kiln_session *session, size_t *out_count) {
  if (out_count)
    *out_count = 0;
  if (!session || !session->lastRunProfiled)
    return nullptr;
  if (out_count)
    *out_count = session->profile.size();
  return session->profile.data();
}
