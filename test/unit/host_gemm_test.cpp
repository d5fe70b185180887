// The CPU runtime's gemm (what --target=cuda-emulated code calls instead of cuBLASLt): strided and
// broadcast batches against a reference, alpha and beta (beta 0 never reads C), the half-precision
// roundings at their ties and limits, and the descriptors it declines.
#include "host_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

using kiln::runtime::hostGemm;

kiln_abi_gemm product(const void *a, const void *b, void *c, int64_t m, int64_t n, int64_t k) {
  kiln_abi_gemm p{};
  p.a = a;
  p.b = b;
  p.c = c;
  p.a_type = p.b_type = p.c_type = 1;
  p.m = m, p.n = n, p.k = k;
  p.a_stride_m = k, p.a_stride_k = 1; // row-major A[m, k], B[k, n], C[m, n]
  p.b_stride_k = n, p.b_stride_n = 1;
  p.c_stride_m = n, p.c_stride_n = 1;
  p.alpha = 1;
  return p;
}

TEST(HostGemm, StridedBroadcastBatchesAgainstReference) {
  // A: [2, 3] batches of [m, k] matrices stored column-major; B: [3, k, n] broadcast
  // along the first batch dim; C: [2, 3, m, n] with rows padded to n + 2.
  const int64_t m = 4, n = 5, k = 6, b0 = 2, b1 = 3, cPitch = n + 2;
  std::vector<float> a(b0 * b1 * m * k), b(b1 * k * n), c(b0 * b1 * m * cPitch, 7.0f);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i * 7 % 11) - 5) / 4;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i * 5 % 13) - 6) / 8;
  kiln_abi_gemm p = product(a.data(), b.data(), c.data(), m, n, k);
  p.a_stride_m = 1, p.a_stride_k = m; // each A matrix column-major
  p.c_stride_m = cPitch;
  p.batch_rank = 2;
  p.batch[0] = b0, p.batch[1] = b1;
  p.a_stride_batch[0] = b1 * m * k, p.a_stride_batch[1] = m * k;
  p.b_stride_batch[0] = 0, p.b_stride_batch[1] = k * n;
  p.c_stride_batch[0] = b1 * m * cPitch, p.c_stride_batch[1] = m * cPitch;
  p.alpha = 0.5, p.beta = 2;
  ASSERT_EQ(hostGemm(p), 0);
  for (int64_t x = 0; x < b0; ++x)
    for (int64_t y = 0; y < b1; ++y)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < cPitch; ++j) {
          const float got = c[((x * b1 + y) * m + i) * cPitch + j];
          if (j >= n) {
            EXPECT_EQ(got, 7.0f) << "padding written";
            continue;
          }
          double sum = 0;
          for (int64_t l = 0; l < k; ++l)
            sum += double(a[(x * b1 + y) * m * k + l * m + i]) * b[(y * k + l) * n + j];
          EXPECT_NEAR(got, 0.5 * sum + 2 * 7.0, 1e-5) << x << "," << y << "," << i << "," << j;
        }
}

TEST(HostGemm, BetaZeroNeverReadsC) {
  const float a[2] = {1, 2}, b[2] = {3, 4};
  float c[1] = {std::numeric_limits<float>::quiet_NaN()};
  kiln_abi_gemm p = product(a, b, c, 1, 1, 2);
  ASSERT_EQ(hostGemm(p), 0);
  EXPECT_EQ(c[0], 11.0f);
  p.beta = 1;
  ASSERT_EQ(hostGemm(p), 0);
  EXPECT_EQ(c[0], 22.0f);
}

// One f32 value through a 1 x 1 x 1 product into a half-precision C.
uint16_t rounded(float x, int64_t type) {
  const float one = 1;
  uint16_t c = 0;
  kiln_abi_gemm p = product(&x, &one, &c, 1, 1, 1);
  p.c_type = type;
  EXPECT_EQ(hostGemm(p), 0);
  return c;
}

TEST(HostGemm, HalfPrecisionRoundsToNearestEven) {
  EXPECT_EQ(rounded(1.0f + std::ldexp(1.0f, -11), 10), 0x3c00); // tie, to the even 1.0
  EXPECT_EQ(rounded(1.0f + 3 * std::ldexp(1.0f, -11), 10), 0x3c02); // tie, up to even
  EXPECT_EQ(rounded(-0.5f, 10), 0xb800);
  EXPECT_EQ(rounded(65504.0f, 10), 0x7bff);
  EXPECT_EQ(rounded(65519.0f, 10), 0x7bff);
  EXPECT_EQ(rounded(65520.0f, 10), 0x7c00); // the tie past the largest half is infinity
  EXPECT_EQ(rounded(std::ldexp(1.0f, -25), 10), 0x0000); // half the smallest subnormal: to 0
  EXPECT_EQ(rounded(3 * std::ldexp(1.0f, -25), 10), 0x0002);
  EXPECT_EQ(rounded(std::ldexp(1.0f, -14), 10), 0x0400); // the smallest normal
  EXPECT_EQ(rounded(std::numeric_limits<float>::infinity(), 10), 0x7c00);
  EXPECT_EQ(rounded(std::numeric_limits<float>::quiet_NaN(), 10) & 0x7e00, 0x7e00);
  EXPECT_EQ(rounded(1.0f + std::ldexp(1.0f, -8), 16), 0x3f80); // bf16 tie to even
  EXPECT_EQ(rounded(1.0f + 3 * std::ldexp(1.0f, -8), 16), 0x3f82);
  EXPECT_EQ(rounded(std::numeric_limits<float>::quiet_NaN(), 16) & 0x7fc0, 0x7fc0);
}

TEST(HostGemm, HalfInputsAccumulateInFloat) {
  // f16 1.5 = 0x3e00, bf16 -2 = 0xc000; 1000 terms of 1.5 * 1.5 = 2250 exactly in f32.
  std::vector<uint16_t> a(1000, 0x3e00), b(1000, 0x3e00);
  float c = 0;
  kiln_abi_gemm p = product(a.data(), b.data(), &c, 1, 1, 1000);
  p.a_type = p.b_type = 10;
  ASSERT_EQ(hostGemm(p), 0);
  EXPECT_EQ(c, 2250.0f);
  std::fill(a.begin(), a.end(), 0xc000);
  p.a_type = p.b_type = 16;
  std::fill(b.begin(), b.end(), 0x3f80); // bf16 1
  ASSERT_EQ(hostGemm(p), 0);
  EXPECT_EQ(c, -2000.0f);
}

TEST(HostGemm, DeclinesWhatTheAbiDoesNotDefine) {
  const float a = 1, b = 1;
  float c = 0;
  kiln_abi_gemm p = product(&a, &b, &c, 1, 1, 1);
  p.a_type = 7; // int64
  EXPECT_NE(hostGemm(p), 0);
  p = product(&a, &b, &c, 1, 1, 1);
  p.batch_rank = KILN_ABI_GEMM_MAX_BATCH + 1;
  EXPECT_NE(hostGemm(p), 0);
  p = product(&a, &b, &c, 1, -1, 1);
  EXPECT_NE(hostGemm(p), 0);
  EXPECT_EQ(c, 0.0f);
}

} // namespace
