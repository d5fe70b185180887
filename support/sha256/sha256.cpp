// SHA-256 (FIPS 180-4): a portable compression function and one using the x86 SHA extensions
// (SHA-NI: Intel Goldmont and Ice Lake onwards, AMD Zen), chosen once per process.
#include "support/sha256/sha256.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kiln::sha256 {
namespace {

alignas(16) constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compressPortable(uint32_t state[8], const uint8_t *data, size_t blocks) {
  for (; blocks > 0; --blocks, data += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(data[4 * i]) << 24 | uint32_t(data[4 * i + 1]) << 16 | uint32_t(data[4 * i + 2]) << 8 |
             uint32_t(data[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5], g = state[6],
             h = state[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
  }
}

#if defined(__x86_64__)
// Sixteen groups of four rounds; the message schedule of group i >= 4 from groups i-4..i-1.
__attribute__((target("sha,sse4.1,ssse3"))) void compressShaNi(uint32_t state[8], const uint8_t *data,
                                                                size_t blocks) {
  const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i *>(&state[0]));
  __m128i state1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(&state[4]));
  tmp = _mm_shuffle_epi32(tmp, 0xB1);            // CDAB
  state1 = _mm_shuffle_epi32(state1, 0x1B);      // EFGH
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8); // ABEF
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);   // CDGH
  for (; blocks > 0; --blocks, data += 64) {
    const __m128i abefSave = state0, cdghSave = state1;
    __m128i w[16];
    for (int i = 0; i < 16; ++i) {
      if (i < 4)
        w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(data + 16 * i)), mask);
      else
        w[i] = _mm_sha256msg2_epu32(
            _mm_add_epi32(_mm_sha256msg1_epu32(w[i - 4], w[i - 3]), _mm_alignr_epi8(w[i - 1], w[i - 2], 4)),
            w[i - 1]);
      __m128i msg = _mm_add_epi32(w[i], _mm_load_si128(reinterpret_cast<const __m128i *>(&kK[4 * i])));
      state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
      msg = _mm_shuffle_epi32(msg, 0x0E);
      state0 = _mm_sha256rnds2_epu32(state0, state1, msg);
    }
    state0 = _mm_add_epi32(state0, abefSave);
    state1 = _mm_add_epi32(state1, cdghSave);
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);         // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);      // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0);   // DCBA
  state1 = _mm_alignr_epi8(state1, tmp, 8);      // HGFE
  _mm_storeu_si128(reinterpret_cast<__m128i *>(&state[0]), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(&state[4]), state1);
}

bool cpuHasSha() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("ssse3");
}
#endif

std::atomic<int> forced{-1}; // tests: -1 = detect, 0 = portable, 1 = SHA extensions

bool useSha() {
#if defined(__x86_64__)
  static const bool has = cpuHasSha();
  int f = forced.load(std::memory_order_relaxed);
  return f < 0 ? has : (f == 1 && has);
#else
  return false;
#endif
}

void compress(uint32_t state[8], const uint8_t *data, size_t blocks) {
#if defined(__x86_64__)
  if (useSha())
    return compressShaNi(state, data, blocks);
#endif
  compressPortable(state, data, blocks);
}

} // namespace

namespace detail {
void forceImplementation(int which) { forced.store(which, std::memory_order_relaxed); }
} // namespace detail

bool usesShaExtensions() { return useSha(); }

Hasher::Hasher() {
  static constexpr uint32_t kInit[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::memcpy(state_, kInit, sizeof(state_));
}

void Hasher::update(const void *data, size_t size) {
  const auto *p = static_cast<const uint8_t *>(data);
  total_ += size;
  if (buffered_ > 0) {
    size_t n = std::min(size, size_t(64) - buffered_);
    std::memcpy(buffer_ + buffered_, p, n);
    buffered_ += n;
    p += n;
    size -= n;
    if (buffered_ < 64)
      return;
    compress(state_, buffer_, 1);
    buffered_ = 0;
  }
  if (size >= 64) {
    compress(state_, p, size / 64);
    p += size / 64 * 64;
    size %= 64;
  }
  if (size > 0) {
    std::memcpy(buffer_, p, size);
    buffered_ = size;
  }
}

Digest Hasher::finish() {
  const uint64_t bits = total_ * 8;
  uint8_t pad[72] = {0x80};
  size_t padLen = (buffered_ < 56 ? 56 : 120) - buffered_;
  for (int i = 0; i < 8; ++i)
    pad[padLen + i] = uint8_t(bits >> (56 - 8 * i));
  update(pad, padLen + 8);
  Digest d;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j)
      d[4 * i + j] = uint8_t(state_[i] >> (24 - 8 * j));
  return d;
}

Digest hash(const void *data, size_t size) {
  Hasher h;
  h.update(data, size);
  return h.finish();
}

std::string hex(const Digest &d) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s.push_back(digits[b >> 4]);
    s.push_back(digits[b & 15]);
  }
  return s;
}

} // namespace kiln::sha256
