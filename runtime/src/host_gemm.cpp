// A plain loop nest: the products it serves are the CUDA pipeline's, emulated on the CPU to
// check them, so it is written to be obviously right rather than fast.
#include "host_gemm.h"

#include <cmath>
#include <cstring>

namespace kiln::runtime {
namespace {

constexpr int64_t kFloat = 1, kFloat16 = 10, kBFloat16 = 16;

float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0) // zero or subnormal: mantissa * 2^-24
    return (h & 0x8000 ? -1.0f : 1.0f) * std::ldexp(float(mantissa), -24);
  uint32_t bits = exponent == 31 ? sign | 0x7f800000 | (mantissa << 13)
                                 : sign | ((exponent + 112) << 23) | (mantissa << 13);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest, ties to even, as the GPU's conversions do.
uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t magnitude = x & 0x7fffffff;
  if (magnitude >= 0x7f800000) // infinity, NaN (kept quiet)
    return sign | (magnitude > 0x7f800000 ? 0x7e00 : 0x7c00);
  if (magnitude >= 0x477ff000) // rounds past 65504
    return sign | 0x7c00;
  if (magnitude < 0x38800000) { // below 2^-14: a subnormal half, exact scaling then rounding
    float a;
    std::memcpy(&a, &magnitude, sizeof a);
    return sign | uint16_t(std::nearbyint(a * 16777216.0f));
  }
  uint32_t h = ((magnitude >> 23) - 112) << 10 | ((magnitude >> 13) & 0x3ff);
  const uint32_t rest = magnitude & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // a carry into the exponent is the right result
  return sign | uint16_t(h);
}

float bf16ToFloat(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffff) > 0x7f800000)
    return uint16_t((x >> 16) | 0x40);
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float load(const void *base, int64_t type, int64_t index) {
  if (type == kFloat) {
    float f;
    std::memcpy(&f, static_cast<const float *>(base) + index, sizeof f);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const uint16_t *>(base) + index, sizeof h);
  return type == kFloat16 ? halfToFloat(h) : bf16ToFloat(h);
}

void store(void *base, int64_t type, int64_t index, float value) {
  if (type == kFloat) {
    std::memcpy(static_cast<float *>(base) + index, &value, sizeof value);
    return;
  }
  const uint16_t h = type == kFloat16 ? floatToHalf(value) : floatToBf16(value);
  std::memcpy(static_cast<uint16_t *>(base) + index, &h, sizeof h);
}

bool knownType(int64_t type) { return type == kFloat || type == kFloat16 || type == kBFloat16; }

} // namespace

int32_t hostGemm(const kiln_abi_gemm &p) {
  if (!knownType(p.a_type) || !knownType(p.b_type) || !knownType(p.c_type) || p.batch_rank < 0 ||
      p.batch_rank > KILN_ABI_GEMM_MAX_BATCH || p.m < 0 || p.n < 0 || p.k < 0)
    return 1;
  int64_t batches = 1;
  for (int64_t d = 0; d < p.batch_rank; ++d) {
    if (p.batch[d] < 0)
      return 1;
    batches *= p.batch[d];
  }
  const float alpha = float(p.alpha), beta = float(p.beta);
  for (int64_t flat = 0; flat < batches; ++flat) {
    // This batch's offsets: its index along each batch dim (innermost last) times the strides.
    int64_t a0 = 0, b0 = 0, c0 = 0, rest = flat;
    for (int64_t d = p.batch_rank - 1; d >= 0; --d) {
      const int64_t i = rest % p.batch[d];
      rest /= p.batch[d];
      a0 += i * p.a_stride_batch[d];
      b0 += i * p.b_stride_batch[d];
      c0 += i * p.c_stride_batch[d];
    }
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        float sum = 0;
        for (int64_t l = 0; l < p.k; ++l)
          sum += load(p.a, p.a_type, a0 + i * p.a_stride_m + l * p.a_stride_k) *
                 load(p.b, p.b_type, b0 + l * p.b_stride_k + j * p.b_stride_n);
        const int64_t c = c0 + i * p.c_stride_m + j * p.c_stride_n;
        // beta 0 never reads C: it may hold anything (the product's fill was dropped).
        store(p.c, p.c_type, c, beta == 0 ? alpha * sum : alpha * sum + beta * load(p.c, p.c_type, c));
      }
  }
  return 0;
}

} // namespace kiln::runtime
