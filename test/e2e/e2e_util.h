// Shared by the run-determinism and concurrency tests: artifact paths, seeded inputs, output bits, heap accounting.
#ifndef KILN_TEST_E2E_E2E_UTIL_H
#define KILN_TEST_E2E_E2E_UTIL_H

#include "kiln/kiln.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KILN_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KILN_TEST_SANITIZED 1
#endif

#ifdef KILN_TEST_SANITIZED
#include <sanitizer/allocator_interface.h>
#else
#include <malloc.h>
#endif

#ifndef KILN_E2E_ARTIFACT_DIR
#define KILN_E2E_ARTIFACT_DIR ""
#endif

namespace kiln::test {

// The build's artifacts, or KILN_E2E_ARTIFACT_DIR from the environment (scripts/tsan.sh builds the
// runtime alone and compiles the artifacts with a Release kiln-compile).
inline std::string artifactPath(const std::string &name) {
  const char *env = std::getenv("KILN_E2E_ARTIFACT_DIR");
  std::string dir = env && *env ? env : KILN_E2E_ARTIFACT_DIR;
  return dir + "/" + name + ".kiln";
}

inline int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// Values in [-1, 1) from a fixed LCG, so inputs are the same on every platform and library.
inline std::vector<float> seededFloats(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float &x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float((s >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f;
  }
  return v;
}

// An output's dtype, shape and bytes, compared bit for bit.
struct Bits {
  kiln_dtype dtype = KILN_DTYPE_FLOAT32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  bool operator==(const Bits &o) const { return dtype == o.dtype && shape == o.shape && bytes == o.bytes; }
  bool operator!=(const Bits &o) const { return !(*this == o); }
};

inline Bits bitsOf(const Tensor &t) {
  Bits b;
  b.dtype = t.dtype();
  b.shape = t.shape();
  const auto *p = static_cast<const uint8_t *>(kiln_tensor_data_const(t.get()));
  b.bytes.assign(p, p + kiln_tensor_byte_size(t.get()));
  return b;
}

inline std::vector<Bits> bitsOf(const std::vector<Tensor> &ts) {
  std::vector<Bits> out;
  for (const Tensor &t : ts)
    out.push_back(bitsOf(t));
  return out;
}

// One tensor per float32 input of `model`, symbolic dims set to `batch`, values from `seed`.
inline std::vector<Tensor> seededInputs(const Model &model, int64_t batch, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (const TensorInfo &info : model.inputs()) {
    std::vector<int64_t> shape = info.dims;
    size_t n = 1;
    for (int64_t &d : shape) {
      if (d < 0)
        d = batch;
      n *= size_t(d);
    }
    inputs.push_back(Tensor::fromVector(KILN_DTYPE_FLOAT32, shape, seededFloats(n, seed + inputs.size())));
  }
  return inputs;
}

// Heap bytes in use: the sanitizer allocator's count under ASan/TSan, glibc's (all arenas,
// mmapped blocks included) otherwise. Freed chunks cached in a live thread's tcache still count,
// so compare with a tolerance of a few hundred KiB.
inline int64_t heapInUse() {
#ifdef KILN_TEST_SANITIZED
  return int64_t(__sanitizer_get_current_allocated_bytes());
#else
  struct mallinfo2 m = mallinfo2();
  return int64_t(m.uordblks + m.hblkhd);
#endif
}

} // namespace kiln::test

#endif
