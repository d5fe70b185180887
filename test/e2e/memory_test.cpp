// The memory plan end to end: outer_sum (sum(x[n,2] @ y[2,n])) keeps an n x n intermediate in
// the runtime's arena; the arena follows n across runs, and an n whose arena cannot exist
// fails with KILN_ERROR_OUT_OF_MEMORY while the session stays usable.
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

namespace {

const std::string kArtifact = std::string(KILN_E2E_ARTIFACT_DIR) + "/outer_sum.kiln";

float outerSum(kiln::Session &session, int64_t n, float xFill, float yFill) {
  std::vector<float> x(size_t(2 * n), xFill), y(size_t(2 * n), yFill);
  kiln::Tensor tx = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, {n, 2}, x);
  kiln::Tensor ty = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, {2, n}, y);
  std::vector<kiln::Tensor> out = session.run({&tx, &ty});
  return out.at(0).data<float>()[0];
}

TEST(MemoryPlan, ArenaFollowsTheInputShapes) {
  kiln::Model model = kiln::Model::load(kArtifact, 1);
  kiln::Session session(model);
  // Growing, shrinking and growing again: each run's values come out of the same arena.
  for (int64_t n : {3, 300, 7, 1000, 5})
    EXPECT_FLOAT_EQ(outerSum(session, n, 1.0f, 2.0f), 4.0f * float(n) * float(n)) << "n = " << n;
}

TEST(MemoryPlan, ArenaTooLargeIsAnErrorNotACrash) {
  kiln::Model model = kiln::Model::load(kArtifact, 1);
  kiln::Session session(model);
  // n = 2^23: inputs of 64 MiB each, an intermediate of 2^48 bytes.
  const int64_t n = int64_t(1) << 23;
  try {
    outerSum(session, n, 0.0f, 0.0f);
    FAIL() << "a 256 TiB intermediate should not fit";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), KILN_ERROR_OUT_OF_MEMORY) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_FLOAT_EQ(outerSum(session, 4, 3.0f, 1.0f), 96.0f);
}

} // namespace
