// Thread pool: callers publish a loop, workers and the caller claim chunks of it with an atomic counter.
#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace kiln::runtime {

// Lives on the caller's stack for the duration of parallelFor.
struct ThreadPool::Job {
  // The loop is split into one contiguous part per thread: thread t (the caller is 0) works
  // through part t first, then helps with the others. Consecutive kernels over the same rows
  // thus give each thread the same rows, whose data its own cache still holds (dynamic chunks
  // scattered them, so two threads moved each activation between the cores' L2s).
  static constexpr int kMaxParts = 64;
  struct alignas(64) Part {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
    int64_t chunk = 1;
  };
  kiln_abi_kernel_fn fn;
  void *captures;
  int parts = 1;
  uint32_t fpMode = 0; // the caller's MXCSR control bits (x86-64)
  Part part[kMaxParts];
  // Workers inside runChunks. Changed only under the pool mutex; read without it while the
  // caller spins for the last chunks.
  std::atomic<int> helpers{0};
  bool callerSleeping = false; // guarded by the pool mutex
  std::condition_variable helpersDone;
};

ThreadPool::ThreadPool(int32_t threads) {
  for (int32_t i = 1; i < threads; ++i)
    workers.emplace_back([this, i] { workerMain(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping.store(true, std::memory_order_relaxed);
  }
  wake.notify_all();
  for (auto &t : workers)
    t.join();
}

#if defined(__x86_64__)
// MXCSR's control bits: DAZ, the exception masks, rounding, FTZ (the low 6 are sticky status flags).
constexpr uint32_t kFpControlBits = 0xFFC0;
#endif

// A worker keeps the floating-point mode of the thread that created the pool (the one that loaded
// the model); it takes the caller's for the caller's chunks, so a caller that flushes subnormals
// or rounds differently gets the same bits whichever threads run its loop.
struct ThreadPool::CallerFpMode {
#if defined(__x86_64__)
  explicit CallerFpMode(const Job &job) : own(_mm_getcsr()) {
    if ((own & kFpControlBits) != job.fpMode)
      _mm_setcsr((own & ~kFpControlBits) | job.fpMode);
  }
  ~CallerFpMode() {
    unsigned now = _mm_getcsr();
    if ((now & kFpControlBits) != (own & kFpControlBits))
      _mm_setcsr((now & ~kFpControlBits) | (own & kFpControlBits));
  }
  unsigned own;
#else
  explicit CallerFpMode(const Job &) {}
#endif
};

void ThreadPool::runChunks(Job &job, int self) {
  for (int k = 0; k < job.parts; ++k) {
    Job::Part &part = job.part[(self + k) % job.parts];
    for (;;) {
      int64_t begin = part.next.fetch_add(part.chunk, std::memory_order_relaxed);
      if (begin >= part.end)
        break;
      job.fn(job.captures, begin, std::min(part.end, begin + part.chunk));
    }
  }
}

void ThreadPool::parallelFor(kiln_abi_kernel_fn fn, void *captures, int64_t count) {
  if (count <= 0)
    return;
  if (workers.empty() || count == 1) {
    fn(captures, 0, count);
    return;
  }
  Job job;
  job.fn = fn;
  job.captures = captures;
#if defined(__x86_64__)
  job.fpMode = _mm_getcsr() & kFpControlBits;
#endif
  // A few chunks per part balance uneven work (and a late helper) without making chunks tiny.
  job.parts = int(std::min<int64_t>({count, int64_t(threads()), int64_t(Job::kMaxParts)}));
  for (int t = 0; t < job.parts; ++t) {
    Job::Part &part = job.part[t];
    int64_t begin = count * t / job.parts;
    part.end = count * (t + 1) / job.parts;
    part.next.store(begin, std::memory_order_relaxed);
    part.chunk = std::max<int64_t>(1, (part.end - begin + 3) / 4);
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back(&job);
    pending.fetch_add(1, std::memory_order_release);
  }
  // Spinning workers see `pending` without a wake-up; only sleepers need one.
  if (sleepers.load(std::memory_order_acquire) > 0)
    wake.notify_all();
  runChunks(job, 0);
  // Every chunk is claimed. Once the job leaves the queue no new helper can join, so waiting for
  // the current helpers means every claimed chunk has finished and `job` may leave the stack.
  std::unique_lock<std::mutex> lock(mutex);
  auto it = std::find(queue.begin(), queue.end(), &job);
  if (it != queue.end()) {
    queue.erase(it);
    pending.fetch_sub(1, std::memory_order_relaxed);
  }
  if (job.helpers.load(std::memory_order_acquire) == 0)
    return;
  // A helper is finishing its last chunk, usually within microseconds: spin for it first,
  // because sleeping on the condition variable costs a wake-up of tens of microseconds, more
  // than a small kernel (it is what made two threads slower than one on small models).
  lock.unlock();
  for (int spin = 0; spin < kSpinIterations && job.helpers.load(std::memory_order_acquire) != 0; ++spin) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  lock.lock();
  job.callerSleeping = true;
  job.helpersDone.wait(lock, [&] { return job.helpers.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::workerMain(int self) {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    if (queue.empty() && !stopping) {
      // A model runs its kernels back to back: spin briefly before sleeping,
      // because a condition-variable wake-up costs more than a small kernel.
      lock.unlock();
      for (int spin = 0; spin < kSpinIterations; ++spin) {
        if (pending.load(std::memory_order_acquire) > 0 || stopping.load(std::memory_order_relaxed))
          break;
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      }
      lock.lock();
      sleepers.fetch_add(1, std::memory_order_acq_rel);
      wake.wait(lock, [&] { return stopping || !queue.empty(); });
      sleepers.fetch_sub(1, std::memory_order_acq_rel);
    }
    if (stopping)
      return;
    Job *job = queue.front();
    job->helpers.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    {
      CallerFpMode mode(*job);
      runChunks(*job, self);
    }
    lock.lock();
    // All chunks are claimed now: take the job out so idle workers do not spin on it.
    auto it = std::find(queue.begin(), queue.end(), job);
    if (it != queue.end()) {
      queue.erase(it);
      pending.fetch_sub(1, std::memory_order_relaxed);
    }
    // The caller may return (and `job` leave its stack) as soon as this reaches 0, so read
    // callerSleeping before; both happen under the mutex, which the sleeping caller needs too.
    bool wakeCaller = job->callerSleeping;
    if (job->helpers.fetch_sub(1, std::memory_order_acq_rel) == 1 && wakeCaller)
      job->helpersDone.notify_all();
  }
}

} // namespace kiln::runtime
