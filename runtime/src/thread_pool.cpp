// Thread pool: a caller publishes its loop in a slot without taking a lock; workers and the caller
// claim chunks of it, each thread first from the front of its own part, then from the back of
// the others'.
#include "thread_pool.h"

#include <algorithm>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace kiln::runtime {

namespace {
inline void cpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}
} // namespace

// Lives on the caller's stack for the duration of parallelFor.
struct ThreadPool::Job {
  // The loop is split into one contiguous part per thread: thread t (the caller is 0) works
  // through part t from its front, then takes what is left of the others from their backs.
  // Consecutive kernels over the same rows thus give each thread the same rows, whose data its
  // own cache still holds; only a late thread's last rows move. (Claiming everything in shared
  // chunks from the front made the thread that finished first take the start of the other's
  // part, moving that part's data between the cores' L2s on every launch: a 1 MiB elementwise
  // loop took as long on two threads as on one.)
  static constexpr int kMaxParts = 64;
  struct alignas(64) Part {
    // Unclaimed [front, back) as offsets from `base`, packed as back << 32 | front so that
    // the owner (front) and the others (back) claim with one compare-and-swap.
    std::atomic<uint64_t> range{0};
    int64_t base = 0;
    int64_t chunk = 1;
    bool claim(bool fromFront, int64_t &begin, int64_t &end) {
      uint64_t r = range.load(std::memory_order_relaxed);
      for (;;) {
        uint64_t front = r & 0xFFFFFFFFu, back = r >> 32;
        if (front >= back)
          return false;
        uint64_t size = std::min<uint64_t>(uint64_t(chunk), back - front);
        uint64_t next = fromFront ? (back << 32 | (front + size)) : ((back - size) << 32 | front);
        if (range.compare_exchange_weak(r, next, std::memory_order_relaxed)) {
          begin = base + int64_t(fromFront ? front : back - size);
          end = begin + int64_t(size);
          return true;
        }
      }
    }
  };
  kiln_abi_kernel_fn fn;
  void *captures;
  int parts = 1;
  uint32_t fpMode = 0; // the caller's MXCSR control bits (x86-64)
  Part part[kMaxParts];
};

// A place to publish one loop. `owned` is held by the publishing caller from before it
// publishes until no worker uses the job any more; `users` counts workers looking at `job`.
struct alignas(64) ThreadPool::Slot {
  std::atomic<Job *> job{nullptr};
  std::atomic<uint64_t> seq{0}; // publications in this slot, so a worker helps each once
  std::atomic<int> users{0};
  std::atomic<bool> owned{false};
};

ThreadPool::ThreadPool(int32_t threads) : slots(new Slot[kSlots]) {
  for (int32_t i = 1; i < threads; ++i)
    workers.emplace_back([this, i] { workerMain(i); });
}

ThreadPool::~ThreadPool() {
  stopping.store(true, std::memory_order_seq_cst);
  generation.fetch_add(1, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lock(sleepMutex);
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

namespace {
// The parts of the loop this thread is running a chunk of (0 outside any): a loop made inside a
// chunk of a loop that already has a part for every thread (a banded chain's two sections on two
// threads, passes/cpu/RunBandSections.cpp) runs on the calling thread, since publishing it would
// only cost the publication; with more threads than parts, the idle ones help.
thread_local int tlsEnclosingParts = 0;
} // namespace

void ThreadPool::runParts(Job &job, int self) {
  struct Enclosing {
    int saved;
    explicit Enclosing(int parts) : saved(tlsEnclosingParts) { tlsEnclosingParts = parts; }
    ~Enclosing() { tlsEnclosingParts = saved; }
  } enclosing(job.parts);
  int64_t begin, end;
  if (self < job.parts)
    while (job.part[self].claim(/*fromFront=*/true, begin, end))
      job.fn(job.captures, begin, end);
  for (int k = 1; k <= job.parts; ++k) {
    Job::Part &part = job.part[(self + k) % job.parts];
    while (part.claim(/*fromFront=*/false, begin, end))
      job.fn(job.captures, begin, end);
  }
}

void ThreadPool::parallelFor(kiln_abi_kernel_fn fn, void *captures, int64_t count) {
  if (count <= 0)
    return;
  const int parts = int(std::min<int64_t>({count, int64_t(threads()), int64_t(Job::kMaxParts)}));
  // A part's offsets are 32-bit (no kernel launches billions of work items).
  if (workers.empty() || count == 1 || count / parts >= int64_t(UINT32_MAX) || tlsEnclosingParts >= threads()) {
    fn(captures, 0, count);
    return;
  }
  Slot *slot = nullptr;
  for (int i = 0; i < kSlots && !slot; ++i) {
    bool free = false;
    if (!slots[i].owned.load(std::memory_order_relaxed) &&
        slots[i].owned.compare_exchange_strong(free, true, std::memory_order_acquire))
      slot = &slots[i];
  }
  if (!slot) { // every slot busy: the workers have plenty to do
    fn(captures, 0, count);
    return;
  }
  Job job;
  job.fn = fn;
  job.captures = captures;
#if defined(__x86_64__)
  job.fpMode = _mm_getcsr() & kFpControlBits;
#endif
  job.parts = parts;
  for (int t = 0; t < parts; ++t) {
    Job::Part &part = job.part[t];
    part.base = count * t / parts;
    uint64_t size = uint64_t(count * (t + 1) / parts - part.base);
    // Eight chunks per part: what a late thread leaves for the others to take.
    part.chunk = int64_t(std::max<uint64_t>(1, (size + 7) / 8));
    part.range.store(size << 32, std::memory_order_relaxed);
  }
  slot->seq.store(slot->seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  slot->job.store(&job, std::memory_order_release);
  published.fetch_add(1, std::memory_order_seq_cst);
  generation.fetch_add(1, std::memory_order_seq_cst);
  // Spinning workers see the new generation; only sleepers need a wake-up (a system call).
  if (sleepers.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(sleepMutex); }
    wake.notify_all();
  }
  runParts(job, 0);
  // Every chunk is claimed. A worker that looks at the slot from now on finds no job; one that
  // already did holds `users` until its last chunk is done, after which `job` may leave the
  // stack. That is usually microseconds away, so spin, then yield (a worker that was descheduled
  // mid-chunk may take a time slice).
  slot->job.store(nullptr, std::memory_order_seq_cst);
  published.fetch_sub(1, std::memory_order_relaxed);
  for (int spin = 0; slot->users.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIterations)
      cpuRelax();
    else
      std::this_thread::yield();
  }
  slot->owned.store(false, std::memory_order_release);
}

// Helps every published loop this worker has not helped yet; returns whether it found one.
bool ThreadPool::helpWithPublishedJobs(int self, std::vector<uint64_t> &helped) {
  bool found = false;
  for (int i = 0; i < kSlots; ++i) {
    Slot &slot = slots[i];
    if (!slot.job.load(std::memory_order_relaxed))
      continue;
    // Announce before reading the job, so its caller (which clears the job, then waits for
    // users to drain) either sees this worker or this worker sees no job.
    slot.users.fetch_add(1, std::memory_order_seq_cst);
    Job *job = slot.job.load(std::memory_order_seq_cst);
    uint64_t seq = slot.seq.load(std::memory_order_relaxed);
    if (job && helped[size_t(i)] != seq) {
      helped[size_t(i)] = seq;
      found = true;
      CallerFpMode mode(*job);
      runParts(*job, self);
    }
    slot.users.fetch_sub(1, std::memory_order_release);
  }
  return found;
}

void ThreadPool::workerMain(int self) {
  std::vector<uint64_t> helped(kSlots, 0);
  for (;;) {
    const uint64_t seen = generation.load(std::memory_order_seq_cst);
    if (stopping.load(std::memory_order_relaxed))
      return;
    if (published.load(std::memory_order_acquire) > 0 && helpWithPublishedJobs(self, helped))
      continue;
    // A model runs its kernels back to back: spin briefly before sleeping, because a
    // condition-variable wake-up costs more than a small kernel.
    int spin = 0;
    while (spin < kSpinIterations && generation.load(std::memory_order_acquire) == seen) {
      cpuRelax();
      ++spin;
    }
    if (spin < kSpinIterations)
      continue;
    std::unique_lock<std::mutex> lock(sleepMutex);
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    wake.wait(lock, [&] { return generation.load(std::memory_order_seq_cst) != seen; });
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

} // namespace kiln::runtime
