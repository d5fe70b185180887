// Heavy concurrent use of loaded artifacts: many threads on one model with mixed shapes, many generators with
// cancellations, models loaded and released from many threads, and the heap back to its baseline afterwards.
// KILN_STRESS_THREADS (8) and KILN_STRESS_RUNS (60 per thread; 1000 for the full load test) size it.
#include "e2e_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using kiln::test::artifactPath;
using kiln::test::Bits;
using kiln::test::bitsOf;
using kiln::test::envInt;

// Collects failures from worker threads; the main thread asserts on them.
struct Failures {
  std::atomic<int> count{0};
  std::mutex mutex;
  std::string first;
  void add(const std::string &what) {
    if (count.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      first = what;
    }
  }
};

// Requests of several batch sizes and contents, with their outputs computed on one thread.
struct Workload {
  std::vector<int64_t> batches;
  std::vector<std::vector<kiln::Tensor>> inputs;
  std::vector<std::vector<Bits>> expected;

  Workload(const std::string &artifact, std::vector<int64_t> sizes) {
    kiln::Model model = kiln::Model::load(artifactPath(artifact), 1);
    kiln::Session session(model);
    for (int64_t b : sizes)
      for (uint64_t variant = 0; variant < 3; ++variant) {
        batches.push_back(b);
        inputs.push_back(kiln::test::seededInputs(model, b, 1000 * uint64_t(b) + variant));
        expected.push_back(bitsOf(session.run(inputs.back())));
        EXPECT_FALSE(expected.back().at(0).bytes.empty());
      }
  }
  size_t size() const { return batches.size(); }
};

// Each thread runs `runs` requests, picked so that threads run different shapes at the same time,
// on its own session of the shared model (a fresh session every 100 runs).
void serve(const kiln::Model &model, const Workload &w, int threads, int runs, Failures &failures) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        auto session = std::make_unique<kiln::Session>(model);
        for (int i = 0; i < runs; ++i) {
          if (i > 0 && i % 100 == 0)
            session = std::make_unique<kiln::Session>(model);
          size_t k = size_t(t * 7 + i * 5 + (i * i) % 11) % w.size();
          std::vector<Bits> got = bitsOf(session->run(w.inputs[k]));
          if (got != w.expected[k])
            failures.add("thread " + std::to_string(t) + " run " + std::to_string(i) + ": batch " +
                         std::to_string(w.batches[k]) + " differs from the single-threaded reference");
        }
      } catch (const std::exception &e) {
        failures.add("thread " + std::to_string(t) + ": " + e.what());
      }
    });
  for (auto &th : pool)
    th.join();
}

class SharedModel : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedModel, ManyThreadsWithMixedShapesMatchTheSingleThreadedReference) {
  Workload w(GetParam(), {1, 2, 3, 5, 8, 13});
  const int threads = envInt("KILN_STRESS_THREADS", 8), runs = envInt("KILN_STRESS_RUNS", 60);
  kiln::Model model = kiln::Model::load(artifactPath(GetParam()), 4);
  Failures failures;
  auto t0 = std::chrono::steady_clock::now();
  serve(model, w, threads, runs, failures);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(failures.count.load(), 0) << failures.first;
  std::printf("%s: %d threads x %d runs in %.2f s\n", GetParam().c_str(), threads, runs, s);
}

INSTANTIATE_TEST_SUITE_P(Models, SharedModel, ::testing::Values("cnn", "mlp"));

TEST(SharedModel, ReleasedWhileItsSessionsRun) {
  Workload w("mlp", {4});
  Failures failures;
  std::vector<std::thread> pool;
  {
    kiln::Model model = kiln::Model::load(artifactPath("mlp"), 2);
    std::atomic<int> ready{0};
    for (int t = 0; t < 4; ++t)
      pool.emplace_back([&, session = std::make_shared<kiln::Session>(model)] {
        ++ready;
        for (int i = 0; i < 50; ++i)
          if (bitsOf(session->run(w.inputs[size_t(i) % w.size()])) != w.expected[size_t(i) % w.size()])
            failures.add("run " + std::to_string(i) + " differs");
      });
    while (ready.load() < 4)
      std::this_thread::yield();
  } // the caller's reference goes here; the sessions keep the model alive
  for (auto &th : pool)
    th.join();
  EXPECT_EQ(failures.count.load(), 0) << failures.first;
}

TEST(SharedModel, LoadedRunAndReleasedFromManyThreads) {
  Workload w("cnn", {2});
  Failures failures;
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int i = 0; i < 6; ++i) {
          kiln::Model model = kiln::Model::load(artifactPath("cnn"), 1 + (t + i) % 3);
          kiln::Session session(model);
          size_t k = size_t(t + i) % w.size();
          if (bitsOf(session.run(w.inputs[k])) != w.expected[k])
            failures.add("thread " + std::to_string(t) + " load " + std::to_string(i) + " differs");
        }
      } catch (const std::exception &e) {
        failures.add(e.what());
      }
    });
  for (auto &th : pool)
    th.join();
  EXPECT_EQ(failures.count.load(), 0) << failures.first;
}

// Decoding: greedy and seeded sampling, run to the end, stopped by the callback, cancelled from
// the callback, or cancelled at random moments by another thread.
struct Prompt {
  std::vector<int32_t> ids;
  kiln_sampling_params sampling;
};

constexpr int kNewTokens = 24;

kiln_generate_options optionsFor(const Prompt &p) {
  kiln_generate_options o = kiln::Generator::defaultOptions();
  o.max_new_tokens = kNewTokens;
  o.sampling = p.sampling;
  return o;
}

std::vector<Prompt> prompts() {
  std::vector<Prompt> out;
  const std::vector<std::vector<int32_t>> ids = {{7}, {72, 101, 108, 108, 111}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
                                                 {300, 20, 400, 17, 5, 99, 250, 31, 8, 64, 128, 256, 3, 1, 4}};
  for (size_t i = 0; i < ids.size(); ++i)
    for (int sampled = 0; sampled < 2; ++sampled) {
      Prompt p{ids[i], kiln::Generator::greedy()};
      if (sampled) {
        p.sampling.temperature = 0.8f;
        p.sampling.top_k = 40;
        p.sampling.top_p = 0.9f;
        p.sampling.seed = 11 + i;
      }
      out.push_back(p);
    }
  return out;
}

class ManyGenerators : public ::testing::TestWithParam<std::string> {};

TEST_P(ManyGenerators, CancellationsMidStreamLeaveOthersExact) {
  const std::vector<Prompt> ps = prompts();
  std::vector<std::vector<int32_t>> reference;
  {
    kiln::Model model = kiln::Model::load(artifactPath(GetParam()), 1);
    kiln::Generator gen(model);
    for (const Prompt &p : ps) {
      kiln::Generation g = gen.generate({p.ids}, optionsFor(p));
      ASSERT_EQ(g.tokens.at(0).size(), size_t(kNewTokens));
      reference.push_back(g.tokens[0]);
    }
  }
  const int threads = envInt("KILN_STRESS_THREADS", 8);
  const int generations = std::max(4, envInt("KILN_STRESS_RUNS", 60) / 5);
  kiln::Model model = kiln::Model::load(artifactPath(GetParam()), 4);
  // Generators outlive the canceller, which may cancel any of them at any time.
  struct Slot {
    std::unique_ptr<kiln::Generator> gen;
    std::mutex mutex;         // held by the canceller while it cancels
    bool cancellable = false; // the running generation accepts an outside cancel (guarded by mutex)
  };
  std::vector<Slot> slots(static_cast<size_t>(threads));
  for (Slot &s : slots)
    s.gen = std::make_unique<kiln::Generator>(model);
  Failures failures;
  std::atomic<bool> done{false};
  std::atomic<int> outsideCancels{0}, cancelledByOutside{0};
  std::thread canceller([&] {
    uint64_t r = 12345;
    while (!done.load()) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      Slot &s = slots[size_t(r >> 33) % slots.size()];
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.cancellable) {
          s.gen->cancel();
          ++outsideCancels;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200 + (r >> 50) % 800));
    }
  });
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      Slot &slot = slots[size_t(t)];
      kiln::Generator &gen = *slot.gen;
      for (int i = 0; i < generations; ++i) {
        const size_t k = size_t(t * 3 + i) % ps.size();
        const int mode = (t + i) % 4; // 0 whole, 1 callback stops, 2 callback cancels, 3 outside cancels
        const size_t stopAt = 1 + size_t(t * 5 + i * 3) % (kNewTokens - 1);
        std::string where = "thread " + std::to_string(t) + " generation " + std::to_string(i) + " mode " +
                            std::to_string(mode) + ": ";
        try {
          if (mode == 3) {
            std::lock_guard<std::mutex> lock(slot.mutex);
            slot.cancellable = true;
          }
          size_t seen = 0;
          kiln::Generation g = gen.generate({ps[k].ids}, optionsFor(ps[k]), [&](size_t, int32_t) {
            ++seen;
            if (mode == 2 && seen == stopAt)
              gen.cancel();
            return !(mode == 1 && seen == stopAt);
          });
          {
            std::lock_guard<std::mutex> lock(slot.mutex);
            slot.cancellable = false;
          }
          const std::vector<int32_t> &got = g.tokens.at(0);
          const std::vector<int32_t> &want = reference[k];
          size_t n = got.size();
          bool cancelled = g.finish.at(0) == KILN_FINISH_CANCELLED;
          if (mode == 1 || mode == 2) {
            if (!cancelled || n != stopAt)
              failures.add(where + "expected cancelled after " + std::to_string(stopAt) + " tokens, got " +
                           std::to_string(n));
          } else if (mode == 0 && (cancelled || n != size_t(kNewTokens))) {
            failures.add(where + "a generation nobody cancelled stopped after " + std::to_string(n));
          } else if (mode == 3 && cancelled) {
            ++cancelledByOutside;
          } else if (mode == 3 && n != size_t(kNewTokens)) {
            failures.add(where + "not cancelled but " + std::to_string(n) + " tokens");
          }
          if (n > want.size() || !std::equal(got.begin(), got.end(), want.begin()))
            failures.add(where + "tokens are not the single-threaded ones");
          if (seen != n)
            failures.add(where + "the callback saw " + std::to_string(seen) + " of " + std::to_string(n));
        } catch (const std::exception &e) {
          failures.add(where + e.what());
        }
      }
    });
  for (auto &th : pool)
    th.join();
  done = true;
  canceller.join();
  EXPECT_EQ(failures.count.load(), 0) << failures.first;
  std::printf("%s: %d generators x %d generations; %d outside cancels landed in %d generations\n",
              GetParam().c_str(), threads, generations, outsideCancels.load(), cancelledByOutside.load());
}

INSTANTIATE_TEST_SUITE_P(Families, ManyGenerators, ::testing::Values("gpt2", "llama"));

// The whole heavy-use cycle, twice: after the first (which also warms lazily created process
// state: the loader's, the C++ runtime's), the second must leave the heap where it found it.
void heavyUseCycle(Failures &failures, const Workload &w) {
  kiln::Model model = kiln::Model::load(artifactPath("cnn"), 4);
  serve(model, w, 4, 40, failures);
  kiln::Model lm = kiln::Model::load(artifactPath("llama"), 2);
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      kiln::Generator gen(lm);
      kiln_generate_options o = kiln::Generator::defaultOptions();
      o.max_new_tokens = 16;
      gen.generate({{1, 2, 3}}, o, [&](size_t, int32_t) {
        if (t % 2)
          gen.cancel();
        return true;
      });
    });
  for (auto &th : pool)
    th.join();
}

TEST(Memory, HeapReturnsToItsBaselineAfterHeavyUse) {
  Workload w("cnn", {1, 4, 9});
  Failures failures;
  heavyUseCycle(failures, w);
  const int64_t baseline = kiln::test::heapInUse();
  heavyUseCycle(failures, w);
  const int64_t after = kiln::test::heapInUse();
  EXPECT_EQ(failures.count.load(), 0) << failures.first;
  std::printf("heap in use: %lld bytes before, %lld after the second cycle\n", (long long)baseline,
              (long long)after);
  EXPECT_LT(after - baseline, 256 << 10) << "the heap grew by " << (after - baseline) << " bytes";
}

TEST(Memory, RepeatedRunsDoNotGrowTheHeap) {
  kiln::Model model = kiln::Model::load(artifactPath("mlp"), 2);
  kiln::Session session(model);
  std::vector<kiln::Tensor> inputs = kiln::test::seededInputs(model, 64, 5);
  for (int i = 0; i < 20; ++i)
    session.run(inputs);
  const int64_t baseline = kiln::test::heapInUse();
  // A leaked output (64 x 10 floats) would be 2.5 MB over 1000 runs.
  for (int i = 0; i < 1000; ++i)
    session.run(inputs);
  const int64_t after = kiln::test::heapInUse();
  EXPECT_LT(after - baseline, 256 << 10) << "the heap grew by " << (after - baseline) << " bytes";
}

} // namespace
