// One session's work on its model's device, and the ABI context each run hands the generated code.
#ifndef KILN_RUNTIME_DEVICE_QUEUE_H
#define KILN_RUNTIME_DEVICE_QUEUE_H

#include "device.h"
#include "device_pool.h"
#include "step_graph.h"
#include "kiln/kiln.h"
#include "string_tensors.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime {

class Queue;

// A session's graph for one shape signature (its inputs' dtypes and shapes), made by stream
// capture: Seen after an eager run that could be captured, Ready once captured, Never when it
// cannot be (the host reads device memory, or the capture failed).
struct CapturedGraph {
  enum class State { Seen, Ready, Never };
  std::vector<int64_t> key;
  State state = State::Seen;
  void *exec = nullptr;                 // the device's executable graph
  StepGraphWork steps;                  // a decoder's step graph: the work its nodes hold
  std::vector<void *> inputs;           // where the inputs are uploaded before each replay
  std::vector<void *> held;             // every buffer the graph addresses (inputs included)
  std::vector<kiln_abi_tensor> outputs; // as the captured run returned them
  std::vector<std::vector<int64_t>> outputShapes;
  uint64_t arenaGeneration = 0; // the arena it addresses; another arena makes it stale
  uint64_t lastUse = 0;
};

// One run in flight: what the context's `runtime` pointer points at.
struct RunState {
  Queue *queue = nullptr;
  bool profiling = false;
  std::vector<kiln_profile_event> *profile = nullptr; // the session's; host-timed launches go here at once
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int64_t workspaceFailed = -1;  // the bytes a failed workspace request asked for
  int64_t allocationFailed = -1; // the bytes of a heap allocation the generated code could not make
  StringRun strings;             // bytes of the strings this run makes, released after it
  std::string error;             // the first failed device operation (a launch, a copy, a product)
  // A profiled host launch is running: a launch made from inside one of its work items (the
  // sections of a banded chain, passes/cpu/RunBandSections.cpp) is part of its event, not one of
  // its own (its time would count twice, and two threads would append at once).
  std::atomic<bool> inProfiledLaunch{false};
  // CUDA graphs: `capturing` while the run is recorded into a graph instead of run. A run that
  // reads device memory back or writes host results to it (data-dependent sizes, ops on strings)
  // cannot be replayed: `hostWaits` says it did (an eager run), and under capture the read is
  // not done (zeros; the capture is then discarded and the run redone eagerly).
  bool capturing = false;
  bool hostWaits = false;
  bool readsInputs = false; // read bytes of its staged inputs (values a whole-run graph would bake in)
  // A decoder step recorded for, or compared with, its step graph (step_graph.h); null otherwise.
  StepRun *step = nullptr;
  // Nothing the run issues is done now: it is captured, or compared with a graph. A read of device
  // memory then gets zeros (and the run is redone eagerly).
  bool deferred() const { return capturing || (step && step->mode == StepRun::Mode::Compare); }
  // The inputs uploaded from host memory for this run: a device_read of their bytes is served
  // from the host copy (no wait for the GPU).
  struct StagedInput {
    const char *device;
    const char *host;
    int64_t bytes;
  };
  std::vector<StagedInput> staged;
  // Launches timed on the device, each between two of the queue's events, read after the run.
  struct TimedLaunch {
    int32_t kernel;
    int64_t threads;
    size_t begin, end; // indices into the queue's events
  };
  std::vector<TimedLaunch> timed;
  bool deviceTimed = false; // the run's start event was recorded
  size_t startEvent = 0;
  size_t eventsUsed = 0;
};

// A session's stream on the device, the memory plan's arena (kept across runs and grown to the
// largest run's need, so a steady stream of requests allocates it once), a cache of device buffers,
// the profiler's events, and the scratch of the device's matrix products. Its runs go in order,
// one at a time (like its session).
class Queue {
public:
  explicit Queue(Device &device) : device_(device), pool_(device) {}
  ~Queue();
  Queue(const Queue &) = delete;
  Queue &operator=(const Queue &) = delete;

  // Makes the stream; false with the device's reason.
  bool open(std::string &error);
  Device &device() { return device_; }
  void *stream() const { return stream_; }

  // Buffers of one run in device memory (staged inputs, what the code allocates with device_alloc).
  // While a graph is being captured, what is allocated is held for the graph and frees of it are
  // deferred until the graph goes (its addresses are baked into the graph).
  void *allocate(size_t bytes);
  void release(void *ptr);

  // A decoder step's buffers come from one region, handed out in order and all taken back when the
  // step ends (frees in between do nothing), so the same sizes get the same addresses step after
  // step, as a step graph's matrix products need (step_graph.h). Sizes are rounded up as the pool
  // rounds them. A step that outgrows the region takes the rest from the pool (but a capture
  // fails instead: the pool may give memory back to the driver); the next step gets a region as
  // large as that step's need. `rewindStep` takes back what was handed out since `stepMark`.
  bool beginStep(std::string &error);
  size_t stepMark() const { return stepUsed_; }
  void rewindStep(size_t mark) { stepUsed_ = mark; }
  void endStep();
  void setCapturing(bool on) { capturing_ = on; }

  // Graphs, per shape signature, at most kMaxGraphs kept (least recently used go first).
  static constexpr size_t kMaxGraphs = 4;
  CapturedGraph *findGraph(const std::vector<int64_t> &key);
  CapturedGraph &addGraph(const std::vector<int64_t> &key); // evicts the least recently used
  void dropGraph(CapturedGraph &g);                            // destroys it, frees what it held; back to Seen
  void holdFor(CapturedGraph *g) { holding_ = g; }             // null: stop holding
  uint64_t arenaGeneration() const { return arenaGeneration_; }

  // The context for `run`: the device's entries (devices in host memory get no device_alloc,
  // device_free or gpu_launch, as abi.h says) and the string kernels. Starts the run's timing.
  kiln_abi_context begin(RunState &run);
  // Waits for the run's work on the stream.
  bool finish(std::string &error);
  // The device-timed launches of a finished run, appended to its profile.
  void collectProfile(const RunState &run);

  // For the context's entries (device_queue.cpp).
  void *workspace(RunState &run, int64_t bytes);
  bool recordEvent(RunState &run, size_t *index);
  void *gemmWorkspace(uint64_t *bytes);

private:
  Device &device_;
  DevicePool pool_;
  void *stream_ = nullptr;
  bool opened_ = false;
  void *arena_ = nullptr;
  int64_t arenaBytes_ = 0;
  void *gemmWorkspace_ = nullptr; // made on the first product
  bool gemmWorkspaceTried_ = false;
  std::vector<void *> events_; // reused run after run
  uint64_t arenaGeneration_ = 0; // bumped when the arena moves
  std::vector<std::unique_ptr<CapturedGraph>> graphs_;
  CapturedGraph *holding_ = nullptr;
  uint64_t graphClock_ = 0;
  char *region_ = nullptr; // the step region
  size_t regionBytes_ = 0, stepUsed_ = 0, stepNeed_ = 0;
  bool stepping_ = false, capturing_ = false;
};

} // namespace kiln::runtime

#endif
