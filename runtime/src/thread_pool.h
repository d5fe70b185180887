// A fixed pool of worker threads that several callers can share to run parallel loops.
#ifndef KILN_RUNTIME_THREAD_POOL_H
#define KILN_RUNTIME_THREAD_POOL_H

#include "kiln/abi.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::runtime {

class ThreadPool {
public:
  // `threads` counts the calling thread: threads - 1 workers are started.
  explicit ThreadPool(int32_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int32_t threads() const { return int32_t(workers.size()) + 1; }

  // Runs fn over chunks of [0, count). The caller works on its own loop too, so a loop always
  // finishes even if every worker is busy elsewhere (concurrent callers, nested loops). A loop
  // started inside a chunk of a loop that has a part for every thread runs on the caller alone.
  void parallelFor(kiln_abi_kernel_fn fn, void *captures, int64_t count);

private:
  struct Job;
  struct Slot;
  struct CallerFpMode;
  void workerMain(int self);
  bool helpWithPublishedJobs(int self, std::vector<uint64_t> &helped);
  static void runParts(Job &job, int self);

  // About 50-100 microseconds of polling before a worker sleeps.
  static constexpr int kSpinIterations = 20000;
  // Loops published at once (concurrent callers, nested loops); a caller that finds every slot
  // taken runs its loop alone.
  static constexpr int kSlots = 16;

  std::unique_ptr<Slot[]> slots; // kSlots of them
  std::atomic<int> published{0}; // slots holding a job, readable without locks
  // Publications so far: sleeping workers wait for it to change.
  std::atomic<uint64_t> generation{0};
  std::atomic<int> sleepers{0};
  std::mutex sleepMutex; // only for sleeping and waking
  std::condition_variable wake;
  std::atomic<bool> stopping{false};
  std::vector<std::thread> workers;
};

} // namespace kiln::runtime

#endif
