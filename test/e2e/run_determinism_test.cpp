// Repeated runs of one artifact on one input give the same bits, on 1 thread and on several, and decoding
// gives the same logits at every step whatever the thread count.
#include "e2e_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <xmmintrin.h>
#include <vector>

namespace {

using kiln::test::artifactPath;
using kiln::test::Bits;
using kiln::test::bitsOf;

struct RunCase {
  std::string artifact;
  int64_t batch;
};

std::string caseName(const ::testing::TestParamInfo<RunCase> &info) {
  return info.param.artifact + "_batch" + std::to_string(info.param.batch);
}

class RunDeterminism : public ::testing::TestWithParam<RunCase> {};

// The work items of a launch are the parallel iterations only; each reduction runs whole inside
// one item (kiln-form-cpu-launches never splits it), so how the pool chunks a launch, and which
// thread runs which chunk, cannot change the order of any floating-point sum.
TEST_P(RunDeterminism, RepeatedRunsOnAnyThreadCountGiveTheSameBits) {
  const RunCase &c = GetParam();
  const int runs = kiln::test::envInt("KILN_DETERMINISM_RUNS", 100);
  std::vector<Bits> reference;
  {
    kiln::Model model = kiln::Model::load(artifactPath(c.artifact), 1);
    kiln::Session session(model);
    reference = bitsOf(session.run(kiln::test::seededInputs(model, c.batch, 42)));
  }
  ASSERT_FALSE(reference.empty());
  ASSERT_FALSE(reference[0].bytes.empty());
  // 3 threads: chunks that do not divide the work evenly.
  for (int32_t threads : {1, 3, 4}) {
    kiln::Model model = kiln::Model::load(artifactPath(c.artifact), threads);
    kiln::Session session(model);
    std::vector<kiln::Tensor> inputs = kiln::test::seededInputs(model, c.batch, 42);
    for (int i = 0; i < runs; ++i) {
      std::vector<Bits> got = bitsOf(session.run(inputs));
      ASSERT_EQ(got.size(), reference.size());
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_TRUE(got[k] == reference[k]) << "output " << k << " differs on run " << i << " with " << threads
                                            << " threads";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, RunDeterminism,
                         ::testing::Values(RunCase{"cnn", 1}, RunCase{"cnn", 32}, RunCase{"mlp", 1},
                                           RunCase{"mlp", 256}, RunCase{"mlp_int8_dynamic", 64}),
                         caseName);

// z = x * y (ONNX's node/test_mul with every dim symbolic) on 1e-20s: every product (1e-40) is
// subnormal, so z is 0 where the thread computing it flushes subnormals to zero (MXCSR FTZ) and
// 1e-40 where it does not.
std::vector<float> tinyProducts(kiln::Session &session) {
  const std::vector<int64_t> shape = {64, 64, 64}; // 1 MiB per tensor: the launch goes to the pool
  std::vector<float> x(64 * 64 * 64, 1e-20f);
  kiln::Tensor tx = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, shape, x);
  kiln::Tensor ty = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, shape, x);
  kiln::Tensor z = std::move(session.run({&tx, &ty}).at(0));
  return std::vector<float>(z.data<float>(), z.data<float>() + z.elementCount());
}

size_t countZeros(const std::vector<float> &v) { return size_t(std::count(v.begin(), v.end(), 0.0f)); }

// The pool's workers are started by whoever loads the model and would keep that thread's
// floating-point mode; each loop's chunks run in the mode of the thread that launched it, so a
// caller that flushes subnormals gets the same bits on any thread count. ("mul" is compiled with
// --denormals=keep: its kernels leave the mode to the caller.)
TEST(RunDeterminism, TheCallersFloatingPointModeHoldsOnEveryThread) {
  kiln::Model one = kiln::Model::load(artifactPath("mul"), 1);
  kiln::Model four = kiln::Model::load(artifactPath("mul"), 4);
  kiln::Session s1(one), s4(four);
  ASSERT_EQ(countZeros(tinyProducts(s1)), 0u);
  ASSERT_EQ(countZeros(tinyProducts(s4)), 0u);
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8000); // FTZ, on this thread only
  std::vector<size_t> zeros;
  zeros.push_back(countZeros(tinyProducts(s1)));
  for (int i = 0; i < 20; ++i)
    zeros.push_back(countZeros(tinyProducts(s4)));
  _mm_setcsr(saved);
  for (size_t z : zeros)
    EXPECT_EQ(z, size_t(64 * 64 * 64)) << "a thread did not flush subnormals like the caller";
  EXPECT_EQ(countZeros(tinyProducts(s4)), 0u) << "the caller's mode stuck to a worker";
}

// By default (--denormals=flush) every kernel flushes subnormals on whichever thread runs it,
// whatever the caller's mode, and gives the caller's mode back: MXCSR after a run is what it was.
TEST(RunDeterminism, FlushedKernelsGiveTheCallerItsModeBack) {
  kiln::Model one = kiln::Model::load(artifactPath("mul_flush"), 1);
  kiln::Model four = kiln::Model::load(artifactPath("mul_flush"), 4);
  kiln::Session s1(one), s4(four);
  const unsigned saved = _mm_getcsr();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(countZeros(tinyProducts(s1)), size_t(64 * 64 * 64)) << "a subnormal product was kept on 1 thread";
    EXPECT_EQ(countZeros(tinyProducts(s4)), size_t(64 * 64 * 64)) << "a subnormal product was kept on 4 threads";
  }
  // Control bits only: the low 6 are sticky exception flags the products may set.
  EXPECT_EQ(_mm_getcsr() & ~0x3Fu, saved & ~0x3Fu) << "the run left its floating-point mode on the caller's thread";
  // And a caller of --denormals=keep code afterwards still gets IEEE subnormals.
  kiln::Model keep = kiln::Model::load(artifactPath("mul"), 4);
  kiln::Session sk(keep);
  EXPECT_EQ(countZeros(tinyProducts(sk)), 0u) << "the flushed kernels' mode stuck to a worker";
}

// Every decode step's logits, greedy.
std::vector<std::vector<float>> decodeLogits(const std::string &family, int32_t threads) {
  kiln::Model model = kiln::Model::load(artifactPath(family), threads);
  kiln::Generator gen(model);
  gen.start({{3, 14, 15, 92, 65, 35}, {8, 9}});
  std::vector<std::vector<float>> steps;
  const size_t n = size_t(2 * gen.vocabSize());
  for (int step = 0; step < 24; ++step) {
    gen.next();
    steps.emplace_back(gen.logits(), gen.logits() + n);
  }
  return steps;
}

class DecodeDeterminism : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeDeterminism, LogitsAreTheSameBitsOnAnyThreadCount) {
  auto reference = decodeLogits(GetParam(), 1);
  auto again = decodeLogits(GetParam(), 1);
  auto threaded = decodeLogits(GetParam(), 4);
  ASSERT_EQ(reference.size(), 24u);
  for (size_t s = 0; s < reference.size(); ++s) {
    ASSERT_EQ(std::memcmp(reference[s].data(), again[s].data(), reference[s].size() * 4), 0) << "step " << s;
    ASSERT_EQ(std::memcmp(reference[s].data(), threaded[s].data(), reference[s].size() * 4), 0)
        << "step " << s << ": 4 threads differ from 1";
  }
}

INSTANTIATE_TEST_SUITE_P(Families, DecodeDeterminism, ::testing::Values("gpt2", "llama"));

} // namespace
