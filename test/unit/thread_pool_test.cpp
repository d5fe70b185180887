// Thread pool: every index runs exactly once, for any count and thread count, with concurrent and nested callers.
#include "device.h"
#include "thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

using kiln::runtime::ThreadPool;

namespace {

struct Hits {
  std::vector<std::atomic<int>> count;
  std::atomic<int> outOfRange{0};
  explicit Hits(int64_t n) : count(size_t(n)) {}
};

void hit(void *captures, int64_t begin, int64_t end) {
  auto *h = static_cast<Hits *>(captures);
  if (begin < 0 || end > int64_t(h->count.size()) || begin >= end) {
    ++h->outOfRange;
    return;
  }
  for (int64_t i = begin; i < end; ++i)
    h->count[size_t(i)].fetch_add(1, std::memory_order_relaxed);
}

void expectEachOnce(const Hits &h) {
  EXPECT_EQ(h.outOfRange.load(), 0);
  for (size_t i = 0; i < h.count.size(); ++i)
    ASSERT_EQ(h.count[i].load(), 1) << "index " << i;
}

} // namespace

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int32_t threads : {1, 2, 3, 4, 8, 16}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t count : {0, 1, 2, 3, 5, 7, 31, 64, 65, 1000, 100003}) {
      Hits h(count);
      pool.parallelFor(hit, &h, count);
      SCOPED_TRACE("threads " + std::to_string(threads) + " count " + std::to_string(count));
      expectEachOnce(h);
    }
  }
}

TEST(ThreadPool, NegativeCountRunsNothing) {
  ThreadPool pool(4);
  Hits h(0);
  pool.parallelFor(hit, &h, -5);
  EXPECT_EQ(h.outOfRange.load(), 0);
}

TEST(ThreadPool, ConcurrentCallersShareThePool) {
  ThreadPool pool(4);
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int c = 0; c < 6; ++c)
    callers.emplace_back([&, c] {
      for (int iter = 0; iter < 200; ++iter) {
        const int64_t count = 1 + (c * 131 + iter * 17) % 2000;
        Hits h(count);
        pool.parallelFor(hit, &h, count);
        bool ok = h.outOfRange.load() == 0;
        for (auto &x : h.count)
          ok = ok && x.load() == 1;
        if (!ok)
          ++bad;
      }
    });
  for (auto &t : callers)
    t.join();
  EXPECT_EQ(bad.load(), 0);
}

namespace {
struct Nested {
  ThreadPool *pool;
  std::vector<std::unique_ptr<Hits>> inner;
};
void outerBody(void *captures, int64_t begin, int64_t end) {
  auto *n = static_cast<Nested *>(captures);
  for (int64_t i = begin; i < end; ++i)
    n->pool->parallelFor(hit, n->inner[size_t(i)].get(), int64_t(n->inner[size_t(i)]->count.size()));
}
} // namespace

TEST(ThreadPool, NestedLoopsFinish) {
  ThreadPool pool(3);
  Nested n{&pool, {}};
  for (int i = 0; i < 40; ++i)
    n.inner.push_back(std::make_unique<Hits>(50 + i));
  pool.parallelFor(outerBody, &n, int64_t(n.inner.size()));
  for (auto &h : n.inner)
    expectEachOnce(*h);
}

namespace {
// Per nested loop: the thread that ran its outer item, and whether any of its chunks ran on
// another thread.
struct NestedOnCaller {
  ThreadPool *pool;
  std::thread::id outerThread[2];
  std::atomic<int> chunksElsewhere{0};
  std::unique_ptr<Hits> inner[2];
};
struct NestedLoopArgs {
  NestedOnCaller *n;
  int64_t item;
};
void nestedHit(void *captures, int64_t begin, int64_t end) {
  auto *a = static_cast<NestedLoopArgs *>(captures);
  if (std::this_thread::get_id() != a->n->outerThread[a->item])
    ++a->n->chunksElsewhere;
  hit(a->n->inner[a->item].get(), begin, end);
  // A few microseconds per index, so that the thread whose loop is short is free while the
  // other's still runs (and would take part of it if it were published).
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(2 * (end - begin));
  while (std::chrono::steady_clock::now() < until) {
  }
}
void outerItems(void *captures, int64_t begin, int64_t end) {
  auto *n = static_cast<NestedOnCaller *>(captures);
  for (int64_t i = begin; i < end; ++i) {
    n->outerThread[i] = std::this_thread::get_id();
    NestedLoopArgs args{n, i};
    n->pool->parallelFor(nestedHit, &args, int64_t(n->inner[i]->count.size()));
  }
}
} // namespace

// A loop started inside a chunk of a loop that has a part for every thread (a banded chain's two
// sections on two threads) runs on the thread that started it: every other thread has its own
// part, so publishing it would only cost the publication. With more threads than parts, such a
// loop is published and still covers every index once.
TEST(ThreadPool, ALoopNestedInAPartPerThreadRunsOnItsCaller) {
  for (int32_t threads : {2, 4}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 20; ++round) {
      NestedOnCaller n;
      n.pool = &pool;
      n.inner[0] = std::make_unique<Hits>(400); // about 0.8 ms
      n.inner[1] = std::make_unique<Hits>(8);
      pool.parallelFor(outerItems, &n, 2);
      expectEachOnce(*n.inner[0]);
      expectEachOnce(*n.inner[1]);
      if (threads == 2)
        EXPECT_EQ(n.chunksElsewhere.load(), 0) << "round " << round;
    }
  }
}

namespace {
// The first index each thread ran. Each thread's first chunk waits (up to a second) for the
// other's, so neither can finish its own part and take the other's before that one starts.
struct FirstChunks {
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<int64_t> callerFirst{-1}, workerFirst{-1};
  std::atomic<int> workerChunks{0};
};
void recordFirstChunk(void *captures, int64_t begin, int64_t) {
  auto *f = static_cast<FirstChunks *>(captures);
  int64_t none = -1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  if (std::this_thread::get_id() != f->caller) {
    bool first = f->workerFirst.compare_exchange_strong(none, begin);
    ++f->workerChunks;
    while (first && f->callerFirst.load() < 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    return;
  }
  if (!f->callerFirst.compare_exchange_strong(none, begin))
    return;
  while (f->workerChunks.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
}
} // namespace

// Each thread starts on its own contiguous part of the loop (the caller on the first, the
// worker on the second half), so consecutive kernels over the same rows keep each row's data
// in the cache of the core that wrote it.
TEST(ThreadPool, EachThreadStartsOnItsOwnPart) {
  ThreadPool pool(2);
  for (int iter = 0; iter < 20; ++iter) {
    FirstChunks f;
    pool.parallelFor(recordFirstChunk, &f, 1000);
    EXPECT_EQ(f.callerFirst.load(), 0);
    ASSERT_GT(f.workerChunks.load(), 0) << "no worker joined within a second";
    EXPECT_EQ(f.workerFirst.load(), 500);
  }
}

namespace {
// Every index each thread ran. The caller's first chunk waits (up to a second) for the worker to
// start one, and the worker's first chunk waits until the caller has run out of its own part
// and taken some of the worker's.
struct LateWorker {
  std::thread::id caller = std::this_thread::get_id();
  std::mutex m;
  std::vector<int64_t> callerIndices, workerIndices;
  int64_t firstStolenEnd = -1; // end of the first chunk of the worker's half the caller ran
  std::atomic<bool> callerTookWorkersPart{false}, workerStarted{false};
};
void recordLate(void *captures, int64_t begin, int64_t end) {
  auto *l = static_cast<LateWorker *>(captures);
  const bool isCaller = std::this_thread::get_id() == l->caller;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  if (isCaller && begin == 0)
    while (!l->workerStarted.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  if (!isCaller && !l->workerStarted.exchange(true)) {
    while (!l->callerTookWorkersPart.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  }
  std::lock_guard<std::mutex> lock(l->m);
  for (int64_t i = begin; i < end; ++i)
    (isCaller ? l->callerIndices : l->workerIndices).push_back(i);
  if (isCaller && begin >= 500 && !l->callerTookWorkersPart.exchange(true))
    l->firstStolenEnd = end;
}
} // namespace

// A thread that is late loses only the end of its part: the caller, done with its own half,
// takes the worker's from the back, so the rows the worker does run are the first ones of its
// half, the same as in the kernels before (taking from the front moved the start of the
// worker's half, whose data the worker's cache held, to the caller's core on every launch).
TEST(ThreadPool, ALateThreadLosesOnlyTheEndOfItsPart) {
  ThreadPool pool(2);
  for (int iter = 0; iter < 20; ++iter) {
    LateWorker l;
    pool.parallelFor(recordLate, &l, 1000);
    ASSERT_EQ(l.callerIndices.size() + l.workerIndices.size(), 1000u);
    if (l.workerIndices.empty())
      continue; // the worker never arrived: the caller ran everything
    int64_t firstStolen = 1000, lastWorker = -1;
    for (int64_t i : l.callerIndices)
      if (i >= 500)
        firstStolen = std::min(firstStolen, i);
    for (int64_t i : l.workerIndices)
      lastWorker = std::max(lastWorker, i);
    EXPECT_LT(lastWorker, firstStolen) << "iteration " << iter;
    EXPECT_EQ(l.firstStolenEnd, 1000) << "iteration " << iter;
    EXPECT_EQ(*std::min_element(l.workerIndices.begin(), l.workerIndices.end()), 500);
  }
}

#if defined(__x86_64__)
namespace {
// Records the MXCSR control bits each index ran under. The caller's first chunk waits (up to a
// second) for a worker to run one, so the workers' side is always exercised.
struct FpModes {
  std::vector<std::atomic<unsigned>> seen;
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> workerChunks{0};
  explicit FpModes(int64_t n) : seen(size_t(n)) {}
};
void recordFpMode(void *captures, int64_t begin, int64_t end) {
  auto *m = static_cast<FpModes *>(captures);
  for (int64_t i = begin; i < end; ++i)
    m->seen[size_t(i)].store(_mm_getcsr() & 0xFFC0u, std::memory_order_relaxed);
  if (std::this_thread::get_id() != m->caller) {
    ++m->workerChunks;
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (m->workerChunks.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
}
} // namespace

// A loop's chunks run in its caller's floating-point mode (here FTZ + DAZ + round toward zero),
// on the workers too, and the workers get their own mode back afterwards.
TEST(ThreadPool, ChunksRunInTheCallersFloatingPointMode) {
  ThreadPool pool(4);
  const unsigned saved = _mm_getcsr();
  const unsigned mode = (saved & 0xFFC0u & ~0x6000u) | 0x8040u | 0x6000u;
  for (int iter = 0; iter < 50; ++iter) {
    FpModes m(256);
    _mm_setcsr((saved & ~0xFFC0u) | mode);
    pool.parallelFor(recordFpMode, &m, 256);
    _mm_setcsr(saved);
    ASSERT_GT(m.workerChunks.load(), 0);
    for (size_t i = 0; i < m.seen.size(); ++i)
      ASSERT_EQ(m.seen[i].load(), mode) << "index " << i << " of iteration " << iter;
    FpModes plain(256);
    pool.parallelFor(recordFpMode, &plain, 256);
    for (size_t i = 0; i < plain.seen.size(); ++i)
      ASSERT_EQ(plain.seen[i].load(), saved & 0xFFC0u) << "a worker kept the previous caller's mode";
  }
}
#endif

TEST(CpuDevice, ImplementsTheDeviceInterface) {
  auto device = kiln::runtime::createCpuDevice(3);
  EXPECT_STREQ(device->name(), "cpu");
  EXPECT_EQ(device->concurrency(), 3);
  void *p = device->allocate(100, 64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  device->deallocate(p);
  Hits h(777);
  std::string error;
  EXPECT_TRUE(device->parallelFor(0, hit, &h, 777, 0, 0, error));
  expectEachOnce(h);
  EXPECT_EQ(kiln::runtime::createCpuDevice(0)->concurrency(), kiln::runtime::availableCores());
}
