// Autoregressive decoding over a decoder artifact: runtime-owned KV caches, prefill, decode steps, sampling.
#include "generate/generator.h"

#include "error.h"
#include "model.h"
#include "generate/sampling.h"
#include "tensor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using kiln::runtime::makeError;

namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

using kiln::runtime::CacheSlot;

// Owns a kiln_tensor for the duration of one run.
struct TensorPtr {
  kiln_tensor *t = nullptr;
  ~TensorPtr() { kiln_tensor_destroy(t); }
};

} // namespace

namespace {

long findInput(const kiln::artifact::Metadata &m, const char *name) {
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (m.inputs[i].name == name)
      return long(i);
  return -1;
}

kiln_error *invalid(const std::string &msg) { return makeError(KILN_ERROR_INVALID_ARGUMENT, msg); }

kiln_error *configure(kiln_generator &g, const kiln_generator_options *options) {
  const auto &m = g.model->view.meta;
  if (!m.decoder.present)
    return invalid("the artifact is not a decoder with a KV cache (compile a model with past_key_values "
                   "inputs with kiln-compile --kv-cache=true)");
  long ids = findInput(m, "input_ids"), mask = findInput(m, "attention_mask");
  if (ids < 0 || mask < 0)
    return invalid("a decoder artifact needs inputs 'input_ids' and 'attention_mask'");
  g.idsInput = size_t(ids);
  g.maskInput = size_t(mask);
  g.positionIdsInput = findInput(m, "position_ids");
  g.positionInput = m.decoder.positionInput;
  const auto &idsSig = m.inputs[g.idsInput];
  if (idsSig.dtype != 7 || idsSig.dims.size() != 2 || m.inputs[g.maskInput].dtype != 7 ||
      m.inputs[g.maskInput].dims.size() != 2)
    return invalid("input_ids and attention_mask must be int64 [batch, length]");
  if (g.positionIdsInput >= 0 && (m.inputs[g.positionIdsInput].dtype != 7 || m.inputs[g.positionIdsInput].dims.size() != 2))
    return invalid("position_ids must be int64 [batch, sequence_length]");
  const std::string batchSymbol = idsSig.dims[0].symbol;

  std::vector<bool> fed(m.inputs.size(), false);
  fed[g.idsInput] = fed[g.maskInput] = fed[g.positionInput] = true;
  if (g.positionIdsInput >= 0)
    fed[g.positionIdsInput] = true;
  for (const auto &c : m.decoder.caches) {
    CacheSlot slot;
    slot.input = c.input;
    slot.axis = c.axis;
    const auto &sig = m.inputs[c.input];
    for (size_t d = 0; d < sig.dims.size(); ++d) {
      if (d == c.axis)
        slot.dims.push_back(-2);
      else if (sig.dims[d].size >= 0)
        slot.dims.push_back(sig.dims[d].size);
      else if (d == 0 || (!batchSymbol.empty() && sig.dims[d].symbol == batchSymbol))
        slot.dims.push_back(-1);
      else
        return invalid("cache input '" + sig.name + "' has symbolic dim " + std::to_string(d) + " ('" +
                       sig.dims[d].symbol + "') that is neither the batch nor the cache axis");
    }
    fed[c.input] = true;
    g.caches.push_back(std::move(slot));
  }
  for (size_t i = 0; i < fed.size(); ++i)
    if (!fed[i])
      return invalid("decoder input '" + m.inputs[i].name + "' is not one the generator can feed");

  long logits = -1;
  for (size_t i = 0; i < m.outputs.size(); ++i)
    if (m.outputs[i].name == "logits")
      logits = long(i);
  if (logits < 0)
    return invalid("a decoder artifact needs an output 'logits'");
  const auto &ls = m.outputs[logits];
  if (ls.dtype != 1 || ls.dims.size() != 3 || ls.dims[2].size <= 0)
    return invalid("logits must be float32 [batch, sequence_length, vocab] with a static vocab");
  g.logitsOutput = size_t(logits);
  g.vocab = int32_t(std::min<int64_t>(ls.dims[2].size, INT32_MAX));

  g.capacity = m.decoder.maxContext;
  if (options && options->struct_size >= offsetof(kiln_generator_options, max_context) + sizeof(int64_t) &&
      options->max_context != 0)
    g.capacity = options->max_context;
  // The artifact's context is a limit, not only a default: a model with a learned position
  // table has no positions beyond it (kiln-compile caps --max-context at the table's size).
  if (g.capacity < 1 || g.capacity > m.decoder.maxContext)
    return invalid("max_context " + std::to_string(g.capacity) + " is outside [1, " +
                   std::to_string(m.decoder.maxContext) + "], the context the artifact was compiled for");
  return nullptr;
}

// Runs the model on `tokens` ([batch][len]) with these position ids; keeps the last position's logits.
kiln_error *runStep(kiln_generator &g, const std::vector<int64_t> &tokens, const std::vector<int64_t> &positionIds,
                    int64_t len) {
  const auto &m = g.model->view.meta;
  const int64_t total = g.position + len;
  if (total > g.capacity)
    return makeError(KILN_ERROR_OUT_OF_RANGE, "the KV cache is full: " + std::to_string(g.position) + " + " +
                                                  std::to_string(len) + " tokens exceed the context of " +
                                                  std::to_string(g.capacity));
  const int64_t b = int64_t(g.batch);
  std::vector<int64_t> mask(size_t(b * total));
  for (int64_t s = 0; s < b; ++s)
    std::copy(g.mask[s].begin(), g.mask[s].end(), mask.begin() + s * total);

  std::vector<TensorPtr> owned(m.inputs.size());
  auto wrap = [&](size_t input, kiln_dtype dtype, std::vector<int64_t> shape, void *data, size_t bytes) {
    return kiln_tensor_wrap(dtype, shape.data(), shape.size(), data, bytes, &owned[input].t);
  };
  int64_t past = g.position;
  kiln_error *e = wrap(g.idsInput, KILN_DTYPE_INT64, {b, len}, const_cast<int64_t *>(tokens.data()), tokens.size() * 8);
  if (!e)
    e = wrap(g.maskInput, KILN_DTYPE_INT64, {b, total}, mask.data(), mask.size() * 8);
  if (!e && g.positionIdsInput >= 0)
    e = wrap(size_t(g.positionIdsInput), KILN_DTYPE_INT64, {b, len}, const_cast<int64_t *>(positionIds.data()),
             positionIds.size() * 8);
  if (!e)
    e = wrap(g.positionInput, KILN_DTYPE_INT64, {}, &past, 8);
  for (CacheSlot &c : g.caches) {
    if (!e)
      e = wrap(c.input, KILN_DTYPE_FLOAT32, c.shape, c.data.get(), c.elements * sizeof(float));
    if (!e)
      owned[c.input].t->device = !g.model->device->hostMemory();
  }
  if (e)
    return e;
  std::vector<const kiln_tensor *> inputs;
  for (auto &t : owned)
    inputs.push_back(t.t);
  std::vector<kiln_tensor *> outputs(m.outputs.size(), nullptr);
  e = kiln_session_run(g.session, inputs.data(), inputs.size(), outputs.data(), outputs.size());
  if (e)
    return e;
  std::vector<TensorPtr> results(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    results[i].t = outputs[i];
  const kiln_tensor *logits = outputs[g.logitsOutput];
  // Every position, or (kiln-last-position-logits) only the last.
  const int64_t *shape = kiln_tensor_shape(logits);
  const int64_t rows = shape[1];
  if (shape[0] != b || (rows != len && rows != 1) || shape[2] != g.vocab)
    return makeError(KILN_ERROR_INTERNAL, "logits came back with shape [" + std::to_string(shape[0]) + ", " +
                                              std::to_string(rows) + ", " + std::to_string(shape[2]) + "], expected [" +
                                              std::to_string(b) + ", " + std::to_string(len) + " or 1, " +
                                              std::to_string(g.vocab) + "]");
  const float *data = static_cast<const float *>(kiln_tensor_data_const(logits));
  g.logits.resize(size_t(b) * g.vocab);
  for (int64_t s = 0; s < b; ++s)
    std::memcpy(&g.logits[size_t(s) * g.vocab], data + (s * rows + rows - 1) * g.vocab, sizeof(float) * g.vocab);
  g.position = total;
  return nullptr;
}

// A fresh, zeroed cache of `n` floats in the model's device memory. On a GPU it stays there for the
// whole decode: the kernels append to it in place, and only each step's tokens and logits cross the bus.
kiln_error *allocateCache(kiln_generator &g, CacheSlot &c, size_t n) {
  kiln::runtime::Device *device = g.model->device.get();
  c.data.reset();
  const std::string &name = g.model->view.meta.inputs[c.input].name;
  void *p = device->allocate(n * sizeof(float), 64);
  const char *memory = device->hostMemory() ? "memory" : "GPU memory";
  if (!p && !device->allocationFailure().empty())
    return makeError(KILN_ERROR_INTERNAL, "KV cache '" + name + "': " + device->allocationFailure());
  if (!p)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, std::string("out of ") + memory + " for the KV cache '" + name + "' (" +
                                                   std::to_string(n * sizeof(float)) + " bytes)");
  c.data = std::shared_ptr<void>(p, [device](void *q) { device->deallocate(q); });
  std::string error;
  if (!device->zero(p, n * sizeof(float), error))
    return makeError(KILN_ERROR_INTERNAL, "KV cache '" + name + "': " + error);
  return nullptr;
}

kiln::SamplingParams toParams(const kiln_sampling_params &p) {
  kiln::SamplingParams s;
  s.temperature = p.temperature;
  s.top_k = p.top_k;
  s.top_p = p.top_p;
  s.min_p = p.min_p;
  s.repetition_penalty = p.repetition_penalty;
  s.seed = p.seed;
  return s;
}

kiln_error *start(kiln_generator &g, const int32_t *const *prompts, const size_t *lengths, size_t batch,
                  const kiln_sampling_params *sampling) {
  if (batch == 0 || !prompts || !lengths)
    return invalid("kiln_generator_start: no prompts");
  kiln_sampling_params defaults;
  kiln_sampling_params_init(&defaults);
  kiln::SamplingParams params = toParams(sampling ? *sampling : defaults);
  std::string why = params.validate();
  if (!why.empty())
    return invalid("sampling: " + why);
  size_t longest = 0;
  for (size_t s = 0; s < batch; ++s) {
    if (lengths[s] == 0 || !prompts[s])
      return invalid("prompt " + std::to_string(s) + " is empty");
    longest = std::max(longest, lengths[s]);
    for (size_t i = 0; i < lengths[s]; ++i)
      if (prompts[s][i] < 0 || prompts[s][i] >= g.vocab)
        return invalid("prompt " + std::to_string(s) + " token " + std::to_string(i) + " is id " +
                       std::to_string(prompts[s][i]) + ", outside the vocabulary [0, " + std::to_string(g.vocab) + ")");
  }
  if (int64_t(longest) >= g.capacity)
    return makeError(KILN_ERROR_OUT_OF_RANGE, "prompt of " + std::to_string(longest) +
                                                  " tokens does not fit the context of " +
                                                  std::to_string(g.capacity) + " tokens (with one new token)");
  // Fresh caches for this batch.
  g.batch = batch;
  g.position = 0;
  g.logitsFresh = false;
  for (CacheSlot &c : g.caches) {
    c.shape.clear();
    size_t n = 1;
    for (int64_t d : c.dims) {
      int64_t v = d == -1 ? int64_t(batch) : d == -2 ? g.capacity : d;
      c.shape.push_back(v);
      n *= size_t(v);
    }
    c.elements = n;
    if (kiln_error *e = allocateCache(g, c, n)) {
      g.batch = 0;
      return e;
    }
  }
  // Left padding: pad id 0 with mask 0; positions count real tokens only.
  const int64_t len = int64_t(longest);
  std::vector<int64_t> tokens(batch * longest, 0), positions(batch * longest, 0);
  g.mask.assign(batch, std::vector<int64_t>());
  g.nextPositionId.assign(batch, 0);
  g.history.assign(batch, {});
  g.samplers.clear();
  for (size_t s = 0; s < batch; ++s) {
    size_t pad = longest - lengths[s];
    g.mask[s].assign(longest, 1);
    std::fill(g.mask[s].begin(), g.mask[s].begin() + pad, 0);
    for (size_t i = 0; i < lengths[s]; ++i) {
      tokens[s * longest + pad + i] = prompts[s][i];
      positions[s * longest + pad + i] = int64_t(i);
    }
    g.nextPositionId[s] = int64_t(lengths[s]);
    g.history[s].assign(prompts[s], prompts[s] + lengths[s]);
    kiln::SamplingParams p = params;
    p.seed = params.seed + s; // one stream per sequence
    g.samplers.emplace_back(p);
  }
  kiln_error *e = runStep(g, tokens, positions, len);
  if (e) {
    g.batch = 0;
    return e;
  }
  g.logitsFresh = true;
  return nullptr;
}

// One decode step feeding ids[batch] at every sequence's next position.
kiln_error *decodeStep(kiln_generator &g, const std::vector<int64_t> &ids) {
  std::vector<int64_t> positions(g.batch);
  for (size_t s = 0; s < g.batch; ++s)
    positions[s] = g.nextPositionId[s];
  if (g.position + 1 > g.capacity)
    return makeError(KILN_ERROR_OUT_OF_RANGE, "the KV cache is full: the context holds " +
                                                  std::to_string(g.capacity) + " tokens");
  for (size_t s = 0; s < g.batch; ++s)
    g.mask[s].push_back(1);
  kiln_error *e = runStep(g, ids, positions, 1);
  if (e) {
    for (size_t s = 0; s < g.batch; ++s)
      g.mask[s].pop_back();
    return e;
  }
  for (size_t s = 0; s < g.batch; ++s)
    ++g.nextPositionId[s];
  return nullptr;
}

kiln_error *next(kiln_generator &g, int32_t *tokens) {
  if (g.batch == 0)
    return invalid("kiln_generator_next: call kiln_generator_start first");
  if (!g.logitsFresh) {
    // Feed the previous tokens: one decode step.
    std::vector<int64_t> ids(g.batch);
    for (size_t s = 0; s < g.batch; ++s)
      ids[s] = g.lastTokens[s];
    if (kiln_error *e = decodeStep(g, ids))
      return e;
  }
  g.logitsFresh = false;
  g.lastTokens.resize(g.batch);
  for (size_t s = 0; s < g.batch; ++s) {
    int32_t t = g.samplers[s].sample(&g.logits[s * g.vocab], g.vocab, g.history[s].data(), g.history[s].size());
    if (t < 0)
      return makeError(KILN_ERROR_INTERNAL, "sampling sequence " + std::to_string(s) + ": " + g.samplers[s].error());
    g.lastTokens[s] = t;
    g.history[s].push_back(t);
    tokens[s] = t;
  }
  return nullptr;
}

// Teacher forcing: the given tokens replace the ones next() last returned, if not yet fed.
kiln_error *feed(kiln_generator &g, const int32_t *tokens) {
  if (g.batch == 0)
    return invalid("kiln_generator_feed: call kiln_generator_start first");
  std::vector<int64_t> ids(g.batch);
  for (size_t s = 0; s < g.batch; ++s) {
    if (tokens[s] < 0 || tokens[s] >= g.vocab)
      return invalid("kiln_generator_feed: sequence " + std::to_string(s) + " token is id " +
                     std::to_string(tokens[s]) + ", outside the vocabulary [0, " + std::to_string(g.vocab) + ")");
    ids[s] = tokens[s];
  }
  if (kiln_error *e = decodeStep(g, ids))
    return e;
  // A token next() sampled but never fed is not part of the sequence: the fed one takes its place
  // in the history the repetition penalty reads.
  const bool dropPending = !g.logitsFresh && g.lastTokens.size() == g.batch;
  for (size_t s = 0; s < g.batch; ++s) {
    if (dropPending && !g.history[s].empty())
      g.history[s].pop_back();
    g.history[s].push_back(tokens[s]);
  }
  g.logitsFresh = true;
  return nullptr;
}

} // namespace

struct kiln_generation {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<kiln_finish_reason> reasons;
  kiln_generation_stats stats{};
};

extern "C" {

int kiln_model_is_decoder(const kiln_model *model) { return model && model->view.meta.decoder.present ? 1 : 0; }

void kiln_generator_options_init(kiln_generator_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

void kiln_sampling_params_init(kiln_sampling_params *params) {
  if (!params)
    return;
  std::memset(params, 0, sizeof *params);
  params->top_p = 1.0f;
  params->repetition_penalty = 1.0f;
}

void kiln_generate_options_init(kiln_generate_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  kiln_sampling_params_init(&options->sampling);
  options->max_new_tokens = 64;
}

kiln_error *kiln_generator_create(kiln_model *model, const kiln_generator_options *options,
                                  kiln_generator **out_generator) {
  if (!out_generator)
    return invalid("kiln_generator_create: out_generator is NULL");
  *out_generator = nullptr;
  if (!model)
    return invalid("kiln_generator_create: model is NULL");
  try {
    auto g = std::make_unique<kiln_generator>();
    kiln::runtime::retainModel(model);
    g->model = model;
    if (kiln_error *e = configure(*g, options))
      return e;
    if (kiln_error *e = kiln_session_create(model, &g->session))
      return e;
    *out_generator = g.release();
    return nullptr;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory creating the generator");
  }
}

void kiln_generator_destroy(kiln_generator *generator) { delete generator; }

int32_t kiln_generator_vocab_size(const kiln_generator *g) { return g ? g->vocab : 0; }
int64_t kiln_generator_max_context(const kiln_generator *g) { return g ? g->capacity : 0; }
int64_t kiln_generator_position(const kiln_generator *g) { return g ? g->position : 0; }
const float *kiln_generator_logits(const kiln_generator *g) {
  return g && g->batch > 0 && !g->logits.empty() ? g->logits.data() : nullptr;
}
void kiln_generator_cancel(kiln_generator *g) {
  if (g)
    g->cancelled.store(true, std::memory_order_relaxed);
}

kiln_error *kiln_generator_start(kiln_generator *g, const int32_t *const *prompts, const size_t *lengths,
                                 size_t batch, const kiln_sampling_params *sampling) {
  if (!g)
    return invalid("kiln_generator_start: generator is NULL");
  try {
    return start(*g, prompts, lengths, batch, sampling);
  } catch (...) {
    g->batch = 0;
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory starting generation");
  }
}

kiln_error *kiln_generator_next(kiln_generator *g, int32_t *tokens) {
  if (!g || !tokens)
    return invalid("kiln_generator_next: generator or tokens is NULL");
  try {
    return next(*g, tokens);
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory generating");
  }
}

kiln_error *kiln_generator_feed(kiln_generator *g, const int32_t *tokens) {
  if (!g || !tokens)
    return invalid("kiln_generator_feed: generator or tokens is NULL");
  try {
    return feed(*g, tokens);
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory feeding tokens");
  }
}

kiln_error *kiln_generate(kiln_generator *g, const int32_t *const *prompts, const size_t *lengths, size_t batch,
                          const kiln_generate_options *options, kiln_generation **out_generation) {
  if (!out_generation)
    return invalid("kiln_generate: out_generation is NULL");
  *out_generation = nullptr;
  if (!g)
    return invalid("kiln_generate: generator is NULL");
  kiln_generate_options defaults;
  kiln_generate_options_init(&defaults);
  const kiln_generate_options &o = options ? *options : defaults;
  if (o.max_new_tokens < 1)
    return invalid("max_new_tokens must be at least 1");
  if (o.stop_token_count > 0 && !o.stop_tokens)
    return invalid("stop_tokens is NULL but stop_token_count is " + std::to_string(o.stop_token_count));
  try {
    auto gen = std::make_unique<kiln_generation>();
    g->cancelled.store(false, std::memory_order_relaxed);
    auto t0 = Clock::now();
    if (kiln_error *e = start(*g, prompts, lengths, batch, &o.sampling))
      return e;
    gen->tokens.assign(batch, {});
    gen->reasons.assign(batch, KILN_FINISH_NONE);
    for (size_t s = 0; s < batch; ++s)
      gen->stats.prompt_tokens += lengths[s];
    std::vector<int32_t> step(batch);
    std::vector<double> stepMs;
    size_t live = batch;
    bool first = true;
    auto finishAll = [&](kiln_finish_reason r) {
      for (auto &reason : gen->reasons)
        if (reason == KILN_FINISH_NONE)
          reason = r;
      live = 0;
    };
    while (live > 0) {
      if (g->cancelled.load(std::memory_order_relaxed)) {
        finishAll(KILN_FINISH_CANCELLED);
        break;
      }
      if (!first && g->position + 1 > g->capacity) {
        finishAll(KILN_FINISH_CONTEXT);
        break;
      }
      auto ts = Clock::now();
      if (kiln_error *e = next(*g, step.data()))
        return e;
      if (first)
        gen->stats.time_to_first_token_ms = msSince(t0);
      else
        stepMs.push_back(msSince(ts));
      first = false;
      for (size_t s = 0; s < batch && live > 0; ++s) {
        if (gen->reasons[s] != KILN_FINISH_NONE)
          continue;
        gen->tokens[s].push_back(step[s]);
        ++gen->stats.new_tokens;
        bool stop = std::find(o.stop_tokens, o.stop_tokens + o.stop_token_count, step[s]) !=
                    o.stop_tokens + o.stop_token_count;
        if (o.on_token && o.on_token(o.user_data, s, step[s]) != 0) {
          finishAll(KILN_FINISH_CANCELLED);
          break;
        }
        if (stop || int32_t(gen->tokens[s].size()) >= o.max_new_tokens) {
          gen->reasons[s] = stop ? KILN_FINISH_STOP_TOKEN : KILN_FINISH_LENGTH;
          --live;
        }
      }
    }
    gen->stats.steps = stepMs.size();
    for (double ms : stepMs)
      gen->stats.decode_ms += ms;
    if (!stepMs.empty()) {
      std::vector<double> sorted = stepMs;
      std::sort(sorted.begin(), sorted.end());
      gen->stats.inter_token_median_ms = sorted[sorted.size() / 2];
      gen->stats.inter_token_p99_ms = sorted[std::min(sorted.size() - 1, size_t(sorted.size() * 0.99))];
      size_t later = gen->stats.new_tokens > batch ? gen->stats.new_tokens - batch : 0;
      gen->stats.tokens_per_second = gen->stats.decode_ms > 0 ? later / (gen->stats.decode_ms / 1000.0) : 0;
    }
    *out_generation = gen.release();
    return nullptr;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory generating");
  }
}

size_t kiln_generation_batch(const kiln_generation *gen) { return gen ? gen->tokens.size() : 0; }

const int32_t *kiln_generation_tokens(const kiln_generation *gen, size_t index, size_t *out_count) {
  if (out_count)
    *out_count = 0;
  if (!gen || index >= gen->tokens.size())
    return nullptr;
  if (out_count)
    *out_count = gen->tokens[index].size();
  return gen->tokens[index].data();
}

kiln_finish_reason kiln_generation_finish_reason(const kiln_generation *gen, size_t index) {
  return gen && index < gen->reasons.size() ? gen->reasons[index] : KILN_FINISH_NONE;
}

void kiln_generation_stats_get(const kiln_generation *gen, kiln_generation_stats *out) {
  if (out)
    *out = gen ? gen->stats : kiln_generation_stats{};
}

void kiln_generation_destroy(kiln_generation *gen) { delete gen; }

} // extern "C"
