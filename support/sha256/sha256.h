// Streaming SHA-256 (FIPS 180-4) without LLVM: the runtime verifies external weight files with it,
// the compiler records their digests (docs/artifact.md "External weights section").
#ifndef KILN_SUPPORT_SHA256_H
#define KILN_SUPPORT_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::sha256 {

using Digest = std::array<uint8_t, 32>;

class Hasher {
public:
  Hasher();
  void update(const void *data, size_t size);
  Digest finish(); // the hasher must not be updated afterwards

private:
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

Digest hash(const void *data, size_t size);
std::string hex(const Digest &d); // 64 lowercase hex digits
// Whether this process uses the CPU's SHA extensions (SHA-NI); false means the portable code.
bool usesShaExtensions();

namespace detail {
// Tests: -1 = detect (the default), 0 = the portable code, 1 = the SHA extensions when the CPU has them.
void forceImplementation(int which);
} // namespace detail

} // namespace kiln::sha256

#endif
