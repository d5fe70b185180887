// kiln-fmapeak: the machine's f32 multiply-add peak, the bound a compute-bound model (a ResNet's
// convolutions) is measured against.
//
//   kiln-fmapeak [--threads N] [--ms DURATION] [--rounds R]
//
// Each of N threads runs a loop of independent fused multiply-adds on registers only (no memory
// traffic), in the widest vectors this build targets (-march=native: 512-bit with AVX-512,
// 256-bit with AVX2), for DURATION ms (default 200), R times (default 5); prints the best round as
// `fma_gflop_per_s=X threads=N vector_bits=B` (2 flops per multiply-add per lane). bench/run.py
// runs it beside the models it times, so "% of peak" is measured in the same run.
//
// With 2 or more threads it also prints `round_trip_ns=R`: the median time for a cache line to go
// from one thread to another and back (two threads passing a counter, 100,000 times). On a
// virtual machine it moves with where the host places the vCPUs (160 ns on the same core
// complex, 600-700 ns across them were both seen here within an hour), and small models on two
// threads, whose kernels hand rows between the cores, move with it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
// Independent accumulators: more than the FMA units times their latency (2 units x 4 cycles on
// recent x86 cores), so the loop is bound by FMA throughput, not by one dependency chain. Named
// variables, not an array: the compiler keeps them in registers.
constexpr int kChains = 12;
constexpr int64_t kStep = 256; // multiply-adds per chain per block

// Runs `blocks` blocks; returns a value that depends on every result, so nothing is optimized
// out (repeated multiply-adds of floats are not folded without -ffast-math).
float fmaBlocks(int64_t blocks, float seed) {
  Vec mul, add, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
  for (int l = 0; l < kLanes; ++l) {
    mul[l] = 0.999999f;
    add[l] = seed * 1e-7f;
  }
  // Different starting values, so the compiler cannot merge identical chains.
  Vec one = add * 0 + 1;
  a0 = add, a1 = a0 + one, a2 = a1 + one, a3 = a2 + one, a4 = a3 + one, a5 = a4 + one;
  a6 = a5 + one, a7 = a6 + one, a8 = a7 + one, a9 = a8 + one, a10 = a9 + one, a11 = a10 + one;
  for (int64_t s = 0; s < blocks * kStep; ++s) {
    // Each contracted to one FMA (-ffp-contract=fast, GCC's default).
    a0 = a0 * mul + add;
    a1 = a1 * mul + add;
    a2 = a2 * mul + add;
    a3 = a3 * mul + add;
    a4 = a4 * mul + add;
    a5 = a5 * mul + add;
    a6 = a6 * mul + add;
    a7 = a7 * mul + add;
    a8 = a8 * mul + add;
    a9 = a9 * mul + add;
    a10 = a10 * mul + add;
    a11 = a11 * mul + add;
  }
  Vec all = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
  float sum = 0;
  for (int l = 0; l < kLanes; ++l)
    sum += all[l];
  return sum;
}
// Median round trip of a cache line between two threads, in nanoseconds.
double roundTripNs() {
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    alignas(64) static std::atomic<int64_t> ping{0};
    alignas(64) static std::atomic<int64_t> pong{0};
    ping.store(0);
    pong.store(0);
    constexpr int64_t kPasses = 100000;
    std::thread other([] {
      for (int64_t i = 1; i <= kPasses; ++i) {
        while (ping.load(std::memory_order_acquire) != i) {
        }
        pong.store(i, std::memory_order_release);
      }
    });
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 1; i <= kPasses; ++i) {
      ping.store(i, std::memory_order_release);
      while (pong.load(std::memory_order_acquire) != i) {
      }
    }
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    other.join();
    rounds.push_back(ns / kPasses);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  int threads = 1, rounds = 5, ms = 200;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 < argc && a == "--threads")
      threads = std::max(1, std::atoi(argv[++i]));
    else if (i + 1 < argc && a == "--ms")
      ms = std::max(10, std::atoi(argv[++i]));
    else if (i + 1 < argc && a == "--rounds")
      rounds = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: kiln-fmapeak [--threads N] [--ms DURATION] [--rounds R]\n");
      return 1;
    }
  }
  // Calibrate blocks per round on one thread: about `ms` milliseconds.
  int64_t blocks = 64;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    volatile float sink = fmaBlocks(blocks, 1.0f);
    (void)sink;
    double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (took >= ms / 4.0 || blocks > (int64_t(1) << 40)) {
      blocks = std::max<int64_t>(1, int64_t(double(blocks) * ms / std::max(took, 1e-3)));
      break;
    }
    blocks *= 4;
  }
  double best = 0;
  std::atomic<float> sink{0};
  for (int r = 0; r < rounds; ++r) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load())
          std::this_thread::yield();
        float v = fmaBlocks(blocks, 1.0f + float(t));
        float old = sink.load();
        while (!sink.compare_exchange_weak(old, old + v)) {
        }
      });
    while (ready.load() < threads)
      std::this_thread::yield();
    auto t0 = std::chrono::steady_clock::now();
    go.store(true);
    for (auto &th : pool)
      th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double flops = 2.0 * double(threads) * double(blocks) * kStep * kChains * kLanes;
    best = std::max(best, flops / s / 1e9);
  }
  if (threads >= 2)
    std::printf("fma_gflop_per_s=%.1f threads=%d vector_bits=%d round_trip_ns=%.0f\n", best, threads, kLanes * 32,
                roundTripNs());
  else
    std::printf("fma_gflop_per_s=%.1f threads=%d vector_bits=%d\n", best, threads, kLanes * 32);
  return sink.load() == 12345.0f ? 2 : 0;
}
