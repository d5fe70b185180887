// Fuzz target (b): a model directory with external data. Each input is a ModelProto and the bytes
// of two data files, written into a directory that also holds the traps of past bypasses in other
// projects: a symlink and a hard link to a file outside it, a symlinked subdirectory pointing up,
// a FIFO. Besides crashes, a finding is any import that maps bytes of the outside file.
//
// Input layout: u16 model length (little-endian), the model, u16 split, then the data bytes:
// [0, split) become weights.bin and the rest sub/w.bin.
#include "FuzzCompile.h"

#include "compiler/importer/ModelSource.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

// Stored only outside the model directory: seeing it in a mapped file means an escape.
constexpr char kSecret[] = "kiln-fuzz-secret-7f3a9c1e5b2d4086";

struct Sandbox {
  std::string root, model, secret; // secret: the outside file's contents
};

void writeFile(const std::string &path, const uint8_t *data, size_t size) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  if (size)
    std::fwrite(data, 1, size, f);
  std::fclose(f);
}

const Sandbox &sandbox() {
  static const Sandbox box = [] {
    char tmpl[] = "/tmp/kiln-fuzz-dir-XXXXXX";
    if (!::mkdtemp(tmpl))
      std::abort();
    Sandbox b{tmpl, std::string(tmpl) + "/model", ""};
    for (int i = 0; i < 128; ++i)
      b.secret += kSecret;
    writeFile(b.root + "/outside.bin", reinterpret_cast<const uint8_t *>(b.secret.data()), b.secret.size());
    ::mkdir(b.model.c_str(), 0700);
    ::mkdir((b.model + "/sub").c_str(), 0700);
    if (::symlink("../outside.bin", (b.model + "/link.bin").c_str()) != 0 ||
        ::symlink("..", (b.model + "/sub/up").c_str()) != 0 ||
        ::link((b.root + "/outside.bin").c_str(), (b.model + "/hard.bin").c_str()) != 0 ||
        ::mkfifo((b.model + "/fifo").c_str(), 0600) != 0)
      std::abort();
    return b;
  }();
  return box;
}

size_t readU16(const uint8_t *&p, size_t &left) {
  if (left < 2)
    return 0;
  size_t v = p[0] | (size_t(p[1]) << 8);
  p += 2;
  left -= 2;
  return v;
}

bool contains(const uint8_t *data, size_t size, const char *needle, size_t n) {
  for (size_t i = 0; i + n <= size; ++i)
    if (std::memcmp(data + i, needle, n) == 0)
      return true;
  return false;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  kiln::fuzz::initialize();
  sandbox();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Sandbox &box = sandbox();
  const uint8_t *p = data;
  size_t left = size;
  size_t modelLen = std::min(readU16(p, left), left);
  const uint8_t *model = p;
  p += modelLen;
  left -= modelLen;
  size_t split = std::min(readU16(p, left), left);
  writeFile(box.model + "/weights.bin", p, split);
  writeFile(box.model + "/sub/w.bin", p + split, left - split);

  // A mapped slice that is a piece of the outside file, yet appears nowhere in the input (whence
  // the data files came), can only have been read from outside. Slices under 8 bytes are too
  // likely to match by chance to tell.
  kiln::fuzz::compileBytes(model, modelLen, box.model, kiln::fuzz::Depth::Import,
                           [&](const kiln::ModelSource &source) {
                             for (const auto &f : source.mappedFiles) {
                               std::string slice(f->getBufferStart(), f->getBufferSize());
                               if (slice.size() >= 8 && box.secret.find(slice) != std::string::npos &&
                                   !contains(data, size, slice.data(), slice.size())) {
                                 std::fprintf(stderr, "fuzz_model_dir: the import mapped a file "
                                                      "from outside the model's directory\n");
                                 std::abort();
                               }
                             }
                           });
  return 0;
}
