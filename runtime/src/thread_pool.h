// A fixed pool of worker threads that several callers can share to run parallel loops.
#ifndef KILN_RUNTIME_THREAD_POOL_H
#define KILN_RUNTIME_THREAD_POOL_H

#include "kiln/abi.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
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
  // finishes even if every worker is busy elsewhere (concurrent callers, nested loops).
  void parallelFor(kiln_abi_kernel_fn fn, void *captures, int64_t count);

private:
  struct Job;
  struct CallerFpMode;
  void workerMain(int self);
  static void runChunks(Job &job, int self);

  // About 50-100 microseconds of polling before a worker sleeps.
  static constexpr int kSpinIterations = 20000;

  std::mutex mutex;
  std::condition_variable wake;
  std::atomic<int> pending{0};   // jobs in `queue`, readable without the mutex
  std::atomic<int> sleepers{0};  // workers blocked on `wake`
  std::deque<Job *> queue; // loops that still have unclaimed chunks
  // Written under `mutex` (so waiters see it), read without it while spinning.
  std::atomic<bool> stopping{false};
  std::vector<std::thread> workers;
};

} // namespace kiln::runtime

#endif
