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

int64_t bytesOf(int64_t type) { return type == kFloat ? 4 : 2; }

// The bytes [begin, end) of a rows x cols operand (strides in elements) over the product's batches.
struct Span {
  uintptr_t begin = 0, end = 0;
};
Span spanOf(const void *data, int64_t type, int64_t rows, int64_t cols, int64_t sr, int64_t sc,
            const int64_t *batchStrides, const kiln_abi_gemm &p) {
  __int128 low = 0, high = 0;
  auto reach = [&](int64_t size, int64_t stride) {
    const __int128 d = __int128(size - 1) * stride;
    (d < 0 ? low : high) += d;
  };
  reach(rows, sr);
  reach(cols, sc);
  for (int64_t d = 0; batchStrides && d < p.batch_rank; ++d)
    reach(p.batch[d], batchStrides[d]);
  const __int128 base = __int128(reinterpret_cast<uintptr_t>(data));
  return {uintptr_t(base + low * bytesOf(type)), uintptr_t(base + (high + 1) * bytesOf(type))};
}

// A null operand is no memory (planGemm's layout tests use none).
bool overlap(Span x, Span y) { return x.begin && y.begin && x.begin < y.end && y.begin < x.end; }

} // namespace

bool gemmOutputOverlaps(const kiln_abi_gemm &p, const kiln_abi_epilogue *e) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return false; // nothing is written, or nothing read
  const Span c = spanOf(p.c, p.c_type, p.m, p.n, p.c_stride_m, p.c_stride_n, p.c_stride_batch, p);
  if (overlap(c, spanOf(p.a, p.a_type, p.m, p.k, p.a_stride_m, p.a_stride_k, p.a_stride_batch, p)) ||
      overlap(c, spanOf(p.b, p.b_type, p.k, p.n, p.b_stride_k, p.b_stride_n, p.b_stride_batch, p)))
    return true;
  if (!e)
    return false;
  if (e->bias && overlap(c, spanOf(e->bias, e->bias_type, 1, p.n, 0, e->bias_stride, nullptr, p)))
    return true;
  return e->c_source && e->c_source != p.c &&
         overlap(c, spanOf(e->c_source, p.c_type, p.m, p.n, p.c_stride_m, p.c_stride_n, p.c_stride_batch, p));
}

int32_t hostGemm(const kiln_abi_gemm &p, const kiln_abi_epilogue *epilogue) {
  if (!knownType(p.a_type) || !knownType(p.b_type) || !knownType(p.c_type) || p.batch_rank < 0 ||
      p.batch_rank > KILN_ABI_GEMM_MAX_BATCH || p.m < 0 || p.n < 0 || p.k < 0)
    return 1;
  const kiln_abi_epilogue none{};
  const kiln_abi_epilogue &e = epilogue ? *epilogue : none;
  if ((e.bias && !knownType(e.bias_type)) || e.activation < 0 || e.activation > 1 || gemmOutputOverlaps(p, epilogue))
    return 1;
  // S: the source of the beta term, C itself unless the epilogue names another buffer.
  const void *source = e.c_source ? e.c_source : p.c;
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
        // beta 0 never reads S: it may hold anything (the product's fill was dropped).
        float v = beta == 0 ? alpha * sum : alpha * sum + beta * load(source, p.c_type, c);
        if (e.bias)
          v += load(e.bias, e.bias_type, j * e.bias_stride);
        if (e.activation == 1)
          v = v > 0 ? v : 0; // NaN gives 0, as kiln's Relu kernels do
        store(p.c, p.c_type, c, v);
      }
  }
  return 0;
}

} // namespace kiln::runtime
