// The ABI context over the Device interface: the generated code's calls become device entries.
#include "device_queue.h"

#include <algorithm>
#include <cstring>

namespace kiln::runtime {

namespace {

RunState &runOf(void *runtime) { return *static_cast<RunState *>(runtime); }

// The arena's size for a request of `bytes`: rounded up to 64 and grown by at least 1/8 over
// `current`, so slowly growing requests (a decoder's context) do not reallocate each step. 0 when
// the request is outside what any machine could hold.
int64_t workspaceGrowth(int64_t bytes, int64_t current) {
  const int64_t limit = int64_t(1) << 46;
  if (bytes <= 0 || bytes > limit)
    return 0;
  int64_t want = std::max(bytes, std::min(limit, current + current / 8));
  return (want + 63) / 64 * 64;
}

void parallelForEntry(void *runtime, int32_t kernelId, kiln_abi_kernel_fn fn, void *captures, int64_t count,
                      int64_t flops, int64_t bytes) {
  RunState &run = runOf(runtime);
  if (!run.error.empty())
    return; // after a failed launch the rest would compute from garbage
  Device &device = run.queue->device();
  if (!run.profiling || run.inProfiledLaunch.load(std::memory_order_relaxed)) {
    device.parallelFor(kernelId, fn, captures, count, flops, bytes, run.error);
    return;
  }
  // Work on host threads is done when the call returns: the host's clock times it.
  using us = std::chrono::duration<double, std::micro>;
  auto begin = std::chrono::steady_clock::now();
  run.inProfiledLaunch.store(true, std::memory_order_relaxed);
  const bool ran = device.parallelFor(kernelId, fn, captures, count, flops, bytes, run.error);
  run.inProfiledLaunch.store(false, std::memory_order_relaxed);
  auto end = std::chrono::steady_clock::now();
  if (ran)
    run.profile->push_back(
        kiln_profile_event{kernelId, us(begin - run.start).count(), us(end - begin).count(), count, flops, bytes});
}

void *workspaceEntry(void *runtime, int64_t bytes) { return runOf(runtime).queue->workspace(runOf(runtime), bytes); }

void allocationFailedEntry(void *runtime, int64_t bytes) { runOf(runtime).allocationFailed = bytes; }

kiln_abi_string stringFromFloatEntry(void *runtime, double value, int32_t bits) {
  return stringFromFloat(runOf(runtime).strings, value, bits);
}
double stringToFloatEntry(void *runtime, const char *data, int64_t size, int32_t bits) {
  return stringToFloat(runOf(runtime).strings, data, size, bits);
}
kiln_abi_string stringChangeCaseEntry(void *runtime, const char *data, int64_t size, int32_t upper) {
  return stringChangeCase(runOf(runtime).strings, data, size, upper);
}
int32_t stringEqualEntry(void *, const char *a, int64_t aSize, const char *b, int64_t bSize, int32_t ignoreCase) {
  return stringEqual(a, aSize, b, bSize, ignoreCase);
}

void gpuLaunchEntry(void *runtime, int32_t kernelId, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by,
                    int64_t bz, int32_t sharedBytes, void **params) {
  RunState &run = runOf(runtime);
  if (!run.error.empty())
    return; // after a failed launch the rest would compute from garbage
  Queue &q = *run.queue;
  const int64_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  size_t begin = 0, end = 0;
  if (run.step && run.step->mode == StepRun::Mode::Compare) {
    stepLaunch(*run.step, q.stream(), kernelId, grid, block, sharedBytes, params);
    return;
  }
  const bool timed = run.deviceTimed && q.recordEvent(run, &begin);
  if (q.device().launch(q.stream(), kernelId, grid, block, sharedBytes, params, run.error) && run.step)
    stepLaunch(*run.step, q.stream(), kernelId, grid, block, sharedBytes, params);
  if (timed && q.recordEvent(run, &end))
    run.timed.push_back({kernelId, gx * gy * gz * bx * by * bz, begin, end});
}

// A failed allocation the device did not refuse for want of memory (a GPU context a fault broke)
// fails the run with the device's reason, so the run does not report it as out of memory.
void noteAllocationFailure(RunState &run, int64_t bytes) {
  const std::string why = run.queue->device().allocationFailure();
  if (!why.empty() && run.error.empty())
    run.error = "allocating " + std::to_string(bytes) + " bytes of device memory: " + why;
}

void *deviceAllocEntry(void *runtime, int64_t bytes) {
  if (bytes < 0)
    return nullptr;
  RunState &run = runOf(runtime);
  void *p = run.queue->allocate(size_t(bytes));
  if (!p)
    noteAllocationFailure(run, bytes);
  return p;
}

void deviceFreeEntry(void *runtime, void *ptr) { runOf(runtime).queue->release(ptr); }

// The host code reads values the kernels wrote (data-dependent sizes): wait for the launches so
// far, then copy. A failure fails the run; the code goes on with zeros, the sizes of empty tensors.
void deviceReadEntry(void *runtime, void *host, const void *device, int64_t bytes) {
  RunState &run = runOf(runtime);
  Queue &q = *run.queue;
  // Bytes of an input this run uploaded from host memory (a scalar such as kiln.past_length,
  // read where it is by the generated code): no kernel writes inputs, so its host copy is what
  // the device holds, without waiting for the GPU (also while the run is captured: a step graph
  // is launched for this step's values only).
  const char *from = static_cast<const char *>(device);
  for (const RunState::StagedInput &in : run.staged)
    if (from >= in.device && from + bytes <= in.device + in.bytes) {
      std::memcpy(host, in.host + (from - in.device), size_t(bytes));
      run.readsInputs = true;
      return;
    }
  run.hostWaits = true;
  if (run.deferred()) {
    // Nothing has run yet: the capture is discarded and the run redone eagerly.
    std::memset(host, 0, size_t(bytes));
    return;
  }
  if (run.error.empty()) {
    std::string error;
    if (!q.device().synchronize(q.stream(), error) || !q.device().download(host, device, size_t(bytes), error))
      run.error = "reading sizes back from the GPU: " + error;
  }
  if (!run.error.empty())
    std::memset(host, 0, size_t(bytes));
}

// What host code (ops on strings) wrote into its copy of a buffer goes back to the device.
void deviceWriteEntry(void *runtime, void *device, const void *host, int64_t bytes) {
  RunState &run = runOf(runtime);
  Queue &q = *run.queue;
  run.hostWaits = true;
  if (!run.error.empty() || run.deferred())
    return;
  std::string error;
  if (!q.device().synchronize(q.stream(), error) || !q.device().upload(device, host, size_t(bytes), error))
    run.error = "writing to the GPU: " + error;
}

// A matrix product of the generated code: the device's library on the session's stream, or
// declined (nonzero) so that the code's own kernels compute it.
int32_t gemmEpilogueEntry(void *runtime, const kiln_abi_gemm *product, const kiln_abi_epilogue *epilogue) {
  RunState &run = runOf(runtime);
  if (!run.error.empty())
    return 0; // the run has failed: nothing more to compute
  if (run.step && run.step->mode == StepRun::Mode::Compare)
    return stepCompareProduct(*run.step, *product, epilogue);
  Queue &q = *run.queue;
  uint64_t workspaceBytes = 0;
  void *workspace = q.gemmWorkspace(&workspaceBytes);
  std::string error;
  int32_t declined = 1;
  switch (q.device().gemm(q.stream(), *product, epilogue, workspace, workspaceBytes, error)) {
  case Device::GemmResult::Done:
    declined = 0;
    break;
  case Device::GemmResult::Declined:
    break;
  case Device::GemmResult::Failed:
    run.error = "matrix product on the GPU: " + error;
    return 0;
  }
  if (run.step)
    stepRecordProduct(*run.step, *product, epilogue, declined);
  return declined;
}

int32_t gemmEntry(void *runtime, const kiln_abi_gemm *product) { return gemmEpilogueEntry(runtime, product, nullptr); }

} // namespace

Queue::~Queue() {
  holding_ = nullptr;
  for (auto &g : graphs_)
    dropGraph(*g);
  graphs_.clear();
  for (void *e : events_)
    device_.destroyEvent(e);
  device_.deallocate(arena_);
  device_.deallocate(region_);
  device_.deallocate(gemmWorkspace_);
  device_.destroyStream(stream_);
}

bool Queue::open(std::string &error) {
  if (opened_)
    return true;
  opened_ = device_.createStream(&stream_, error);
  return opened_;
}

kiln_abi_context Queue::begin(RunState &run) {
  run.queue = this;
  run.deviceTimed = run.profiling && device_.timesOnDevice() && recordEvent(run, &run.startEvent);
  const bool host = device_.hostMemory();
  return kiln_abi_context{&run,
                          parallelForEntry,
                          workspaceEntry,
                          allocationFailedEntry,
                          stringFromFloatEntry,
                          stringToFloatEntry,
                          stringChangeCaseEntry,
                          stringEqualEntry,
                          host ? nullptr : gpuLaunchEntry,
                          host ? nullptr : deviceAllocEntry,
                          host ? nullptr : deviceFreeEntry,
                          deviceReadEntry,
                          deviceWriteEntry,
                          gemmEntry,
                          gemmEpilogueEntry};
}

bool Queue::finish(std::string &error) { return device_.synchronize(stream_, error); }

void Queue::collectProfile(const RunState &run) {
  // The stream has finished: each launch's events give its time on the device. The compiler has
  // no cost estimates for device kernels yet (flops and bytes 0).
  if (!run.deviceTimed)
    return;
  for (const RunState::TimedLaunch &l : run.timed) {
    const double startMs = device_.elapsedMs(events_[run.startEvent], events_[l.begin]);
    const double durationMs = device_.elapsedMs(events_[l.begin], events_[l.end]);
    run.profile->push_back(kiln_profile_event{l.kernel, 1e3 * startMs, 1e3 * durationMs, l.threads, 0, 0});
  }
}

void *Queue::workspace(RunState &run, int64_t bytes) {
  if (bytes <= arenaBytes_ && arena_)
    return arena_;
  if (run.capturing) {
    // The old arena cannot go while a capture is open: the capture is given up and the run
    // redone eagerly, which grows it.
    run.workspaceFailed = bytes;
    return nullptr;
  }
  // Called first thing in a run: no kernel of this session is using the old arena any more, and
  // it goes before a larger one is taken.
  const int64_t want = workspaceGrowth(std::max<int64_t>(bytes, 64), arenaBytes_);
  ++arenaGeneration_; // graphs that address the old arena are stale from here on
  device_.deallocate(arena_);
  arena_ = nullptr;
  arenaBytes_ = 0;
  void *p = want > 0 ? device_.allocate(size_t(want), 64) : nullptr;
  if (p) {
    arena_ = p;
    arenaBytes_ = want;
  } else {
    run.workspaceFailed = bytes;
    if (want > 0)
      noteAllocationFailure(run, want);
  }
  return p;
}

// The next timing event of a profiled run, recorded now on the stream; false when none can be
// made (the launch then goes untimed).
bool Queue::recordEvent(RunState &run, size_t *index) {
  std::string error;
  if (run.eventsUsed == events_.size()) {
    void *e = device_.createEvent(error);
    if (!e)
      return false;
    events_.push_back(e);
  }
  if (!device_.record(events_[run.eventsUsed], stream_, error))
    return false;
  *index = run.eventsUsed++;
  return true;
}

void *Queue::gemmWorkspace(uint64_t *bytes) {
  const uint64_t want = device_.gemmWorkspaceBytes();
  if (!gemmWorkspaceTried_ && want > 0) {
    gemmWorkspaceTried_ = true; // without it the library picks among the algorithms that need none
    gemmWorkspace_ = device_.allocate(size_t(want), 256);
  }
  *bytes = gemmWorkspace_ ? want : 0;
  return gemmWorkspace_;
}

void *Queue::allocate(size_t bytes) {
  if (stepping_) {
    const size_t size = DevicePool::roundUp(bytes);
    stepNeed_ = std::max(stepNeed_, stepUsed_ + size);
    if (region_ && stepUsed_ <= regionBytes_ && size <= regionBytes_ - stepUsed_) {
      void *p = region_ + stepUsed_;
      stepUsed_ += size;
      return p;
    }
    stepUsed_ += size; // counted, so the next step's region holds it
    if (capturing_)
      return nullptr; // the capture is given up; the eager run takes it from the pool
  }
  void *p = pool_.allocate(bytes);
  if (p && holding_)
    holding_->held.push_back(p);
  return p;
}

bool Queue::beginStep(std::string &error) {
  if (stepNeed_ > regionBytes_) {
    // The last step outgrew the region. Nothing of this session runs now (every run waits for its
    // work, but one that failed early may not have): wait, then take a larger one.
    if (!device_.synchronize(stream_, error))
      return false;
    device_.deallocate(region_);
    regionBytes_ = DevicePool::roundUp(stepNeed_);
    region_ = static_cast<char *>(device_.allocate(regionBytes_, 256));
    if (!region_)
      regionBytes_ = 0; // the pool serves the step
  }
  stepping_ = true;
  stepUsed_ = 0;
  return true;
}

void Queue::endStep() {
  stepping_ = false;
  stepUsed_ = 0;
}

void Queue::release(void *ptr) {
  if (!ptr)
    return;
  const char *p = static_cast<const char *>(ptr);
  if (region_ && p >= region_ && p < region_ + regionBytes_)
    return; // the step region is taken back whole when the step ends
  if (holding_ && std::find(holding_->held.begin(), holding_->held.end(), ptr) != holding_->held.end())
    return; // the graph addresses it: freed with the graph
  pool_.release(ptr);
}

CapturedGraph *Queue::findGraph(const std::vector<int64_t> &key) {
  for (auto &g : graphs_)
    if (g->key == key) {
      g->lastUse = ++graphClock_;
      return g.get();
    }
  return nullptr;
}

CapturedGraph &Queue::addGraph(const std::vector<int64_t> &key) {
  if (graphs_.size() >= kMaxGraphs) {
    auto oldest = std::min_element(graphs_.begin(), graphs_.end(),
                                   [](const auto &a, const auto &b) { return a->lastUse < b->lastUse; });
    dropGraph(**oldest);
    graphs_.erase(oldest);
  }
  graphs_.push_back(std::make_unique<CapturedGraph>());
  CapturedGraph &g = *graphs_.back();
  g.key = key;
  g.lastUse = ++graphClock_;
  return g;
}

void Queue::dropGraph(CapturedGraph &g) {
  if (holding_ == &g)
    holding_ = nullptr;
  if (g.exec)
    device_.destroyGraph(g.exec);
  g.exec = nullptr;
  std::vector<void *> held;
  held.swap(g.held);
  g.inputs.clear();
  g.outputs.clear();
  g.outputShapes.clear();
  if (g.state == CapturedGraph::State::Ready)
    g.state = CapturedGraph::State::Seen;
  for (void *p : held)
    pool_.release(p);
}

} // namespace kiln::runtime
