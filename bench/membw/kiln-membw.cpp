// kiln-membw: the machine's memory read bandwidth, the bound on decoding speed (weights read per token).
//
//   kiln-membw [--threads N] [--mb SIZE] [--rounds R]
//
// Each of N threads sums its share of a SIZE MB buffer (default 2048, far above any cache), R
// times (default 5); prints the best round as `read_gb_per_s=X threads=N mb=SIZE`. Reading a
// decoder's weights once per token is the same access pattern: long sequential streams.
#include <algorithm>
#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {
// 64 independent partial sums (several vector registers after vectorization), so the loop is
// bound by loads rather than by the latency of one chain of adds.
float sumRange(const float *p, size_t n) {
  constexpr int kLanes = 64;
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int line = 0; line < kLanes; line += 16) // every 64-byte line, 8 KiB ahead
      __builtin_prefetch(p + i + 2048 + line);
    for (int k = 0; k < kLanes; ++k)
      acc[k] += p[i + k];
  }
  for (; i < n; ++i)
    acc[0] += p[i];
  float s = 0;
  for (float a : acc)
    s += a;
  return s;
}
} // namespace

int main(int argc, char **argv) {
  int threads = 1, rounds = 5;
  size_t mb = 2048;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 < argc && a == "--threads")
      threads = std::max(1, std::atoi(argv[++i]));
    else if (i + 1 < argc && a == "--mb")
      mb = std::max<size_t>(64, std::strtoull(argv[++i], nullptr, 10));
    else if (i + 1 < argc && a == "--rounds")
      rounds = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: kiln-membw [--threads N] [--mb SIZE] [--rounds R]\n");
      return 1;
    }
  }
  const size_t n = mb * (size_t(1) << 20) / sizeof(float);
  // 2 MiB pages where the kernel offers them (as for weights the runtime maps with MADV_HUGEPAGE).
  float *raw = static_cast<float *>(std::aligned_alloc(size_t(2) << 20, (n * sizeof(float) + (size_t(2) << 20) - 1) / (size_t(2) << 20) * (size_t(2) << 20)));
  if (!raw) {
    std::fprintf(stderr, "kiln-membw: cannot allocate %zu MB\n", mb);
    return 1;
  }
  if (!getenv("KILN_MEMBW_NO_HUGEPAGES"))
    madvise(raw, n * sizeof(float), MADV_HUGEPAGE);
  struct Span {
    float *p;
    float &operator[](size_t i) { return p[i]; }
    float *data() { return p; }
  } data{raw};
  // Touch every page from the thread that will read it (first-touch placement).
  auto chunk = [&](int t) { return std::make_pair(n * t / threads, n * (t + 1) / threads); };
  {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        auto [b, e] = chunk(t);
        for (size_t i = b; i < e; ++i)
          data[i] = float(i & 7);
      });
    for (auto &th : pool)
      th.join();
  }
  double best = 0;
  volatile float sink = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<float> sums(threads);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        auto [b, e] = chunk(t);
        sums[t] = sumRange(data.data() + b, e - b);
      });
    for (auto &th : pool)
      th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (float x : sums)
      sink = sink + x;
    best = std::max(best, double(n * sizeof(float)) / s / 1e9);
  }
  std::free(raw);
  std::printf("read_gb_per_s=%.2f threads=%d mb=%zu\n", best, threads, mb);
  return 0;
}
