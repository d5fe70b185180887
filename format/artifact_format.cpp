// Encoder and bounds-checked decoder of the kiln artifact file (layout: docs/artifact.md).
#include "format/artifact_format.h"
#include "format/weight_files.h"
#include "support/sha256/sha256.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <algorithm>
#include <array>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::artifact {
namespace {

// PNG-style magic: the high byte and CR/LF/^Z catch text-mode mangling and truncated transfers.
constexpr uint8_t kMagic[8] = {0x89, 'K', 'I', 'L', 'N', '\r', '\n', 0x1a};
constexpr uint64_t kHeaderFixedSize = 24;  // magic, version, section count, file size
constexpr uint64_t kSectionEntrySize = 24; // kind, reserved, offset, size
constexpr uint32_t kMaxSections = 16;
constexpr uint64_t kWeightsSectionAlignment = 4096;
constexpr uint64_t kCodeSectionAlignment = 64;

enum SectionKind : uint32_t {
  kMetadataSection = 1,
  kCodeSection = 2,
  kWeightsSection = 3,
  kDecoderSection = 4,
  kQuantizationSection = 5,
  kCudaSection = 6,
  kExternalWeightsSection = 7,
  kLastKnownSection = kExternalWeightsSection
};

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// ---- Encoding: explicit little-endian so the bytes do not depend on the host. ----
class Encoder {
public:
  std::string bytes;
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      bytes.push_back(char((v >> (8 * i)) & 0xff));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      bytes.push_back(char((v >> (8 * i)) & 0xff));
  }
  void i64(int64_t v) { u64(uint64_t(v)); }
  // IEEE-754 binary64 bits, so NaN (a figure not measured) survives the round trip.
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    u64(bits);
  }
  void str(const std::string &s) {
    u32(uint32_t(s.size()));
    bytes += s;
  }
  void strList(const std::vector<std::string> &l) {
    u32(uint32_t(l.size()));
    for (const auto &s : l)
      str(s);
  }
};

void encodeSignature(Encoder &e, const TensorSignature &t) {
  e.str(t.name);
  e.u32(t.dtype);
  e.u32(uint32_t(t.dims.size()));
  for (const Dim &d : t.dims) {
    e.i64(d.size);
    e.str(d.symbol);
  }
}

std::string encodeMetadata(const Metadata &m) {
  Encoder e;
  e.u32(m.abiVersion);
  e.str(m.compilerVersion);
  e.str(m.sourceModelSha256);
  e.str(m.producer);
  e.i64(m.opsetVersion);
  e.str(m.targetTriple);
  e.str(m.targetCpu);
  e.strList(m.cpuFeatures);
  e.strList(m.passes);
  e.str(m.entrySymbol);
  e.u32(uint32_t(m.inputs.size()));
  for (const auto &t : m.inputs)
    encodeSignature(e, t);
  e.u32(uint32_t(m.outputs.size()));
  for (const auto &t : m.outputs)
    encodeSignature(e, t);
  e.u32(uint32_t(m.weights.size()));
  for (const WeightInfo &w : m.weights) {
    e.str(w.name);
    e.u32(w.dtype);
    e.u32(uint32_t(w.dims.size()));
    for (int64_t d : w.dims)
      e.i64(d);
    e.u64(w.offset);
    e.u64(w.size);
  }
  e.u32(uint32_t(m.kernels.size()));
  for (const KernelInfo &k : m.kernels) {
    e.str(k.name);
    e.strList(k.sourceNodes);
  }
  return std::move(e.bytes);
}

std::string encodeDecoder(const DecoderInfo &d) {
  Encoder e;
  e.u32(d.positionInput);
  e.i64(d.maxContext);
  e.u32(uint32_t(d.caches.size()));
  for (const KvCacheInfo &c : d.caches) {
    e.u32(c.input);
    e.u32(c.axis);
  }
  return std::move(e.bytes);
}

std::string encodeCuda(const CudaInfo &c) {
  Encoder e;
  e.str(c.arch);
  e.str(c.ptx);
  e.str(c.cubin);
  e.strList(c.kernelParams);
  return std::move(e.bytes);
}

std::string encodeExternalWeights(const ExternalWeights &x) {
  Encoder e;
  e.u32(uint32_t(x.files.size()));
  for (const ExternalFile &f : x.files) {
    e.str(f.name);
    e.u32(uint32_t(f.origin));
    e.u64(f.size);
    e.str(f.sha256);
  }
  e.u32(uint32_t(x.refs.size()));
  for (const ExternalRef &r : x.refs) {
    e.u32(r.file);
    e.u64(r.offset);
    e.u64(r.size);
  }
  return e.bytes;
}

std::string encodeQuantization(const QuantizationInfo &q) {
  Encoder e;
  e.str(q.mode);
  e.u32(q.groupSize);
  e.str(q.scaleType);
  e.strList(q.keep);
  const AccuracyReport &a = q.accuracy;
  e.u32(a.present ? 1 : 0);
  if (a.present) {
    e.str(a.inputs);
    e.u32(a.samples);
    e.u32(uint32_t(a.outputs.size()));
    for (const OutputAccuracy &o : a.outputs) {
      e.str(o.name);
      e.f64(o.maxAbsError);
      e.f64(o.maxRelError);
      e.f64(o.cosine);
    }
    e.u64(a.positions);
    e.f64(a.top1Agreement);
    e.f64(a.perplexityFloat);
    e.f64(a.perplexityQuantized);
    e.str(a.tokens);
  }
  return std::move(e.bytes);
}

// ---- Decoding: every read checks the remaining length first; failures are sticky. ----
class Decoder {
public:
  Decoder(const uint8_t *p, uint64_t n) : p(p), n(n) {}
  bool ok() const { return error.empty(); }
  uint64_t remaining() const { return n - pos; }
  std::string error;

  uint32_t u32(const char *what) {
    if (!need(4, what))
      return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= uint32_t(p[pos + i]) << (8 * i);
    pos += 4;
    return v;
  }
  uint64_t u64(const char *what) {
    if (!need(8, what))
      return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t(p[pos + i]) << (8 * i);
    pos += 8;
    return v;
  }
  int64_t i64(const char *what) { return int64_t(u64(what)); }
  double f64(const char *what) {
    const uint64_t bits = u64(what);
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  std::string str(const char *what) {
    uint32_t len = u32(what);
    if (!need(len, what))
      return {};
    std::string s(reinterpret_cast<const char *>(p + pos), len);
    pos += len;
    return s;
  }
  // A list count is trusted only if that many minimal items could still fit, so a corrupted
  // count can never trigger a huge allocation.
  uint32_t count(uint64_t minItemSize, const char *what) {
    uint32_t c = u32(what);
    if (ok() && uint64_t(c) * minItemSize > remaining()) {
      fail(std::string("metadata: ") + what + " count " + std::to_string(c) + " exceeds the section size");
      return 0;
    }
    return c;
  }
  std::vector<std::string> strList(const char *what) {
    std::vector<std::string> l(count(4, what));
    for (auto &s : l)
      s = str(what);
    return l;
  }
  // A section must be consumed exactly.
  void expectEnd(const char *section) {
    if (ok() && remaining() != 0)
      fail(std::string(section) + " has " + std::to_string(remaining()) + " unexpected trailing bytes");
  }
  void fail(std::string msg) {
    if (error.empty())
      error = std::move(msg);
    pos = n;
  }

private:
  bool need(uint64_t bytes, const char *what) {
    if (!ok())
      return false;
    if (bytes > remaining()) {
      fail(std::string("metadata truncated while reading ") + what);
      return false;
    }
    return true;
  }
  const uint8_t *p;
  uint64_t n;
  uint64_t pos = 0;
};

TensorSignature decodeSignature(Decoder &d) {
  TensorSignature t;
  t.name = d.str("tensor name");
  t.dtype = d.u32("tensor dtype");
  t.dims.resize(d.count(12, "dims"));
  for (Dim &dim : t.dims) {
    dim.size = d.i64("dim size");
    dim.symbol = d.str("dim symbol");
  }
  return t;
}

void decodeMetadata(Decoder &d, Metadata &m) {
  m.abiVersion = d.u32("abi version");
  m.compilerVersion = d.str("compiler version");
  m.sourceModelSha256 = d.str("source sha256");
  m.producer = d.str("producer");
  m.opsetVersion = d.i64("opset version");
  m.targetTriple = d.str("target triple");
  m.targetCpu = d.str("target cpu");
  m.cpuFeatures = d.strList("cpu features");
  m.passes = d.strList("passes");
  m.entrySymbol = d.str("entry symbol");
  m.inputs.resize(d.count(12, "inputs"));
  for (auto &t : m.inputs)
    t = decodeSignature(d);
  m.outputs.resize(d.count(12, "outputs"));
  for (auto &t : m.outputs)
    t = decodeSignature(d);
  m.weights.resize(d.count(28, "weights")); // smallest encoding: 3 empty fields + 2 u64
  for (WeightInfo &w : m.weights) {
    w.name = d.str("weight name");
    w.dtype = d.u32("weight dtype");
    w.dims.resize(d.count(8, "weight dims"));
    for (int64_t &x : w.dims)
      x = d.i64("weight dim");
    w.offset = d.u64("weight offset");
    w.size = d.u64("weight size");
  }
  m.kernels.resize(d.count(8, "kernels"));
  for (KernelInfo &k : m.kernels) {
    k.name = d.str("kernel name");
    k.sourceNodes = d.strList("kernel source nodes");
  }
  d.expectEnd("metadata");
}

void decodeDecoder(Decoder &d, DecoderInfo &info) {
  info.present = true;
  info.positionInput = d.u32("decoder position input");
  info.maxContext = d.i64("decoder max context");
  info.caches.resize(d.count(8, "kv caches"));
  for (KvCacheInfo &c : info.caches) {
    c.input = d.u32("kv cache input");
    c.axis = d.u32("kv cache axis");
  }
  d.expectEnd("decoder section");
}

void decodeCuda(Decoder &d, CudaInfo &c) {
  c.present = true;
  c.arch = d.str("cuda arch");
  c.ptx = d.str("cuda ptx");
  c.cubin = d.str("cuda cubin");
  // The kernels' parameter table came later within format version 1: absent in older artifacts.
  if (d.ok() && d.remaining() > 0)
    c.kernelParams = d.strList("cuda kernel parameters");
  d.expectEnd("cuda section");
}

void decodeExternalWeights(Decoder &d, ExternalWeights &x) {
  x.present = true;
  x.files.resize(d.count(20, "external weight files")); // empty name and digest, u32, u64
  for (ExternalFile &f : x.files) {
    f.name = d.str("external file name");
    const uint32_t origin = d.u32("external file origin");
    if (d.ok() && origin > uint32_t(WeightFileOrigin::Kiln))
      d.fail("external file origin " + std::to_string(origin) + " is neither 0 nor 1");
    f.origin = WeightFileOrigin(origin);
    f.size = d.u64("external file size");
    f.sha256 = d.str("external file sha256");
  }
  x.refs.resize(d.count(20, "external weight refs"));
  for (ExternalRef &r : x.refs) {
    r.file = d.u32("external ref file");
    r.offset = d.u64("external ref offset");
    r.size = d.u64("external ref size");
  }
  d.expectEnd("external weights section");
}

// The manifest against the weights: every file named safely, once, with a digest; one ref per
// weight, of its size, aligned and inside its file.
bool checkExternalWeights(const Metadata &m, std::string *error) {
  const ExternalWeights &x = m.external;
  for (size_t i = 0; i < x.files.size(); ++i) {
    const ExternalFile &f = x.files[i];
    std::string why;
    if (!checkWeightFileName(f.name, &why)) {
      *error = "external weight file " + std::to_string(i) + ": " + why;
      return false;
    }
    if (f.sha256.size() != 64 || f.sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
      *error = "external weight file '" + f.name + "' has no valid sha256";
      return false;
    }
    for (size_t j = 0; j < i; ++j)
      if (x.files[j].name == f.name && x.files[j].origin == f.origin) {
        *error = "external weight file '" + f.name + "' is listed twice";
        return false;
      }
  }
  if (x.refs.size() != m.weights.size()) {
    *error = "external weights section has " + std::to_string(x.refs.size()) + " refs for " +
             std::to_string(m.weights.size()) + " weights";
    return false;
  }
  for (size_t i = 0; i < x.refs.size(); ++i) {
    const ExternalRef &r = x.refs[i];
    const std::string where = "weight '" + m.weights[i].name + "'";
    if (r.file >= x.files.size()) {
      *error = where + " names external file " + std::to_string(r.file) + " of " + std::to_string(x.files.size());
      return false;
    }
    const ExternalFile &f = x.files[r.file];
    if (r.offset % kWeightAlignment != 0 || r.offset > f.size || r.size > f.size - r.offset) {
      *error = where + " (offset " + std::to_string(r.offset) + ", " + std::to_string(r.size) +
               " bytes) is unaligned or lies outside '" + f.name + "' (" + std::to_string(f.size) + " bytes)";
      return false;
    }
    if (r.size != m.weights[i].size || m.weights[i].offset != 0) {
      *error = where + " has " + std::to_string(m.weights[i].size) + " bytes at offset " +
               std::to_string(m.weights[i].offset) + " but its external ref " + std::to_string(r.size) + " bytes";
      return false;
    }
  }
  return true;
}

void decodeQuantization(Decoder &d, QuantizationInfo &q) {
  q.present = true;
  q.mode = d.str("quantization mode");
  q.groupSize = d.u32("quantization group size");
  q.scaleType = d.str("quantization scale type");
  q.keep = d.strList("quantization kept layers");
  AccuracyReport &a = q.accuracy;
  const uint32_t hasAccuracy = d.u32("accuracy flag");
  if (d.ok() && hasAccuracy > 1)
    d.fail("accuracy flag " + std::to_string(hasAccuracy) + " is neither 0 nor 1");
  if (hasAccuracy == 1 && d.ok()) {
    a.present = true;
    a.inputs = d.str("accuracy inputs");
    a.samples = d.u32("accuracy samples");
    a.outputs.resize(d.count(28, "accuracy outputs")); // empty name + 3 f64
    for (OutputAccuracy &o : a.outputs) {
      o.name = d.str("accuracy output name");
      o.maxAbsError = d.f64("accuracy max abs error");
      o.maxRelError = d.f64("accuracy max rel error");
      o.cosine = d.f64("accuracy cosine");
    }
    a.positions = d.u64("accuracy positions");
    a.top1Agreement = d.f64("accuracy top-1 agreement");
    a.perplexityFloat = d.f64("accuracy float perplexity");
    a.perplexityQuantized = d.f64("accuracy quantized perplexity");
    a.tokens = d.str("accuracy tokens");
  }
  d.expectEnd("quantization section");
}

// Element count times element size, or false on overflow / negative dims.
bool byteSize(uint32_t dtype, const std::vector<int64_t> &dims, uint64_t *out) {
  uint64_t n = dtypeSize(dtype);
  for (int64_t d : dims) {
    if (d < 0 || (d != 0 && n > UINT64_MAX / uint64_t(d)))
      return false;
    n *= uint64_t(d);
  }
  *out = n;
  return true;
}

// Checks shared by the writer and the reader, so the writer never produces a file the reader refuses.
bool checkMetadata(const Metadata &m, uint64_t weightsSize, std::string *error) {
  auto checkSig = [&](const TensorSignature &t, const char *kind) {
    for (size_t i = 0; i < t.dims.size(); ++i) {
      const Dim &d = t.dims[i];
      if (d.size < -1) {
        *error = std::string(kind) + " '" + t.name + "' dim " + std::to_string(i) + " has invalid size " +
                 std::to_string(d.size);
        return false;
      }
      if (d.size >= 0 && !d.symbol.empty()) {
        *error = std::string(kind) + " '" + t.name + "' dim " + std::to_string(i) +
                 " is static but names symbol '" + d.symbol + "'";
        return false;
      }
    }
    return true;
  };
  for (const auto &t : m.inputs)
    if (!checkSig(t, "input"))
      return false;
  for (const auto &t : m.outputs)
    if (!checkSig(t, "output"))
      return false;
  if (m.decoder.present) {
    const DecoderInfo &d = m.decoder;
    if (d.positionInput >= m.inputs.size() || m.inputs[d.positionInput].dtype != 7 ||
        !m.inputs[d.positionInput].dims.empty()) {
      *error = "decoder position input " + std::to_string(d.positionInput) + " is not an int64 scalar input";
      return false;
    }
    if (d.maxContext < 1 || d.caches.empty()) {
      *error = "decoder has no caches or a max context below 1";
      return false;
    }
    // A paged cache (kiln-compile --kv-block-size) is a pool [blocks, .., block, ..]: its axis holds
    // one block, a static size, and a [batch, blocks] int64 table says where each sequence's are.
    bool paged = false;
    for (const auto &t : m.inputs)
      if (t.name == kBlockTableInput) {
        if (t.dtype != 7 || t.dims.size() != 2) {
          *error = std::string("decoder input ") + kBlockTableInput + " is not an int64 [batch, blocks] input";
          return false;
        }
        paged = true;
      }
    for (const KvCacheInfo &c : d.caches) {
      const bool shaped = c.input < m.inputs.size() && c.axis < m.inputs[c.input].dims.size();
      const int64_t size = shaped ? m.inputs[c.input].dims[c.axis].size : 0;
      if (!shaped || c.input == d.positionInput || m.inputs[c.input].dtype != 1 ||
          (paged ? c.axis == 0 || size < 1 : size != -1)) {
        *error = "kv cache input " + std::to_string(c.input) + " (axis " + std::to_string(c.axis) + ") is not a " +
                 (paged ? "float32 pool with a static block size on that axis"
                        : "float32 input with a symbolic dim on that axis");
        return false;
      }
    }
  }
  for (const WeightInfo &w : m.weights) {
    const std::string where = "weight '" + w.name + "'";
    if (w.offset % kWeightAlignment != 0) {
      *error = where + " offset " + std::to_string(w.offset) + " is not aligned to " +
               std::to_string(kWeightAlignment);
      return false;
    }
    if (!m.external.present && (w.offset > weightsSize || w.size > weightsSize - w.offset)) {
      *error = where + " (offset " + std::to_string(w.offset) + ", " + std::to_string(w.size) +
               " bytes) lies outside the weights section (" + std::to_string(weightsSize) + " bytes)";
      return false;
    }
    uint64_t expected = 0;
    if (!byteSize(w.dtype, w.dims, &expected)) {
      *error = where + " has an invalid or overflowing shape";
      return false;
    }
    // Sub-byte and future dtypes have dtypeSize 0: their size cannot be derived here.
    if (dtypeSize(w.dtype) != 0 && expected != w.size) {
      *error = where + " has " + std::to_string(w.size) + " bytes; its dtype and shape need " +
               std::to_string(expected);
      return false;
    }
  }
  if (m.external.present && !checkExternalWeights(m, error))
    return false;
  return true;
}

bool writeAll(int fd, const void *data, uint64_t size, std::string *error) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size > (1u << 30) ? (1u << 30) : size_t(size));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      *error = std::string("write failed: ") + std::strerror(errno);
      return false;
    }
    p += n;
    size -= uint64_t(n);
  }
  return true;
}

bool writeZeros(int fd, uint64_t size, std::string *error) {
  static const char zeros[4096] = {};
  while (size > 0) {
    uint64_t n = size < sizeof(zeros) ? size : sizeof(zeros);
    if (!writeAll(fd, zeros, n, error))
      return false;
    size -= n;
  }
  return true;
}

// Drops the whole pages of [p, p + n) from the process (they stay in the page cache).
void dropPages(const void *p, uint64_t n) {
  const long page = ::sysconf(_SC_PAGESIZE);
  uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

// A [rows, cols] matrix (or its transpose) written as column panels [cols / panel, rows, panel], through a bounded buffer.
bool writePanels(int fd, const WeightSource &w, std::string *error) {
  const uint64_t segment = w.panel * w.elementSize, rowBytes = w.cols * w.elementSize;
  const uint64_t flushAt = std::max<uint64_t>(segment, uint64_t(16) << 20);
  const auto *src = static_cast<const uint8_t *>(w.data);
  std::string buffer;
  buffer.reserve(flushAt);
  for (uint64_t p = 0; p < w.cols / w.panel; ++p)
    for (uint64_t r = 0; r < w.rows; ++r) {
      if (w.transposed) {
        // Element (p, r, b) is source[p * panel + b][r] of the [cols, rows] source.
        const uint64_t columnBytes = w.rows * w.elementSize;
        for (uint64_t b = 0; b < w.panel; ++b)
          buffer.append(reinterpret_cast<const char *>(src + (p * w.panel + b) * columnBytes + r * w.elementSize),
                        w.elementSize);
      } else {
        buffer.append(reinterpret_cast<const char *>(src + r * rowBytes + p * segment), segment);
      }
      if (buffer.size() >= flushAt) {
        if (!writeAll(fd, buffer.data(), buffer.size(), error))
          return false;
        buffer.clear();
      }
    }
  bool ok = writeAll(fd, buffer.data(), buffer.size(), error);
  if (ok && w.dropAfterWrite)
    dropPages(w.data, w.size);
  return ok;
}

bool writeWeight(int fd, const WeightSource &w, std::string *error) {
  if (w.panel > 0) {
    if (w.elementSize == 0 || w.cols % w.panel != 0 || w.rows * w.cols * w.elementSize != w.size) {
      *error = "a packed weight's shape does not match its bytes";
      return false;
    }
    return writePanels(fd, w, error);
  }
  if (!w.dropAfterWrite)
    return writeAll(fd, w.data, w.size, error);
  const uint64_t chunk = uint64_t(64) << 20;
  const auto *p = static_cast<const uint8_t *>(w.data);
  for (uint64_t done = 0; done < w.size; done += chunk) {
    const uint64_t n = std::min(chunk, w.size - done);
    if (!writeAll(fd, p + done, n, error))
      return false;
    dropPages(p + done, n);
  }
  return true;
}

} // namespace

// A new file beside `path` with a name no one else uses (`*tmp`), opened with `access` (O_WRONLY or
// O_RDWR); -1 with the reason in `error`. 0666 lets the umask decide the final permissions.
static int openTemporary(const std::string &path, int access, std::string *tmp, std::string *error) {
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    *tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(attempt);
    fd = ::open(tmp->c_str(), access | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    *error = "cannot create '" + *tmp + "': " + std::strerror(errno);
  return fd;
}

// The end of writing `tmp` (open as `fd`) in place of `path`: flushed to disk, closed and renamed
// over `path` when everything so far went well (`ok`), else removed, with `what` and `path`
// prefixed to the error. A reader never sees a half-written file.
static bool finishWrite(int fd, bool ok, const std::string &tmp, const std::string &path, const char *what,
                        std::string *error) {
  if (ok && ::fsync(fd) != 0) {
    *error = std::string("fsync failed: ") + std::strerror(errno);
    ok = false;
  }
  if (::close(fd) != 0 && ok) {
    *error = std::string("close failed: ") + std::strerror(errno);
    ok = false;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno);
    ok = false;
  }
  if (!ok) {
    *error = std::string("writing ") + what + " '" + path + "': " + *error;
    ::unlink(tmp.c_str());
  }
  return ok;
}

bool writeArtifact(const std::string &path, Metadata meta, const std::string &code,
                   const std::vector<WeightSource> &weights, std::string *error) {
  std::string scratch;
  if (!error)
    error = &scratch;
  if (!meta.external.present && meta.weights.size() != weights.size()) {
    *error = "metadata lists " + std::to_string(meta.weights.size()) + " weights but " +
             std::to_string(weights.size()) + " weight sources were given";
    return false;
  }
  meta.formatVersion = kFormatVersion;
  uint64_t weightsSize = 0;
  if (meta.external.present) {
    // The weights live in the manifest's files; the section stays empty.
    if (!weights.empty()) {
      *error = "an artifact with external weights takes no weight sources";
      return false;
    }
    if (meta.external.refs.size() != meta.weights.size()) {
      *error = "external weights section has " + std::to_string(meta.external.refs.size()) + " refs for " +
               std::to_string(meta.weights.size()) + " weights";
      return false;
    }
    for (size_t i = 0; i < meta.weights.size(); ++i) {
      meta.weights[i].offset = 0;
      meta.weights[i].size = meta.external.refs[i].size;
    }
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i].size > 0 && !weights[i].data) {
      *error = "weight '" + meta.weights[i].name + "' has no data";
      return false;
    }
    meta.weights[i].offset = alignUp(weightsSize, kWeightAlignment);
    meta.weights[i].size = weights[i].size;
    weightsSize = meta.weights[i].offset + weights[i].size;
  }
  if (!checkMetadata(meta, weightsSize, error))
    return false;

  const std::string metadata = encodeMetadata(meta);
  const std::string decoder = meta.decoder.present ? encodeDecoder(meta.decoder) : std::string();
  const std::string quantization =
      meta.quantization.present ? encodeQuantization(meta.quantization) : std::string();
  const std::string cuda = meta.cuda.present ? encodeCuda(meta.cuda) : std::string();
  const std::string external = meta.external.present ? encodeExternalWeights(meta.external) : std::string();
  const uint32_t sectionCount = 3 + (meta.decoder.present ? 1 : 0) + (meta.quantization.present ? 1 : 0) +
                                (meta.cuda.present ? 1 : 0) + (meta.external.present ? 1 : 0);
  const uint64_t headerSize = kHeaderFixedSize + sectionCount * kSectionEntrySize;
  const uint64_t metaOffset = headerSize;
  // The optional decoder, quantization and cuda sections sit between the metadata and the code.
  const uint64_t decoderOffset = metaOffset + metadata.size();
  const uint64_t quantizationOffset = decoderOffset + decoder.size();
  const uint64_t cudaOffset = quantizationOffset + quantization.size();
  const uint64_t externalOffset = cudaOffset + cuda.size();
  const uint64_t optionalEnd = externalOffset + external.size();
  const uint64_t codeOffset = alignUp(optionalEnd, kCodeSectionAlignment);
  const uint64_t weightsOffset = alignUp(codeOffset + code.size(), kWeightsSectionAlignment);
  const uint64_t fileSize = weightsOffset + weightsSize;

  Encoder header;
  header.bytes.assign(reinterpret_cast<const char *>(kMagic), sizeof(kMagic));
  header.u32(kFormatVersion);
  header.u32(sectionCount);
  header.u64(fileSize);
  std::vector<std::array<uint64_t, 3>> sections = {{kMetadataSection, metaOffset, metadata.size()},
                                                   {kCodeSection, codeOffset, code.size()},
                                                   {kWeightsSection, weightsOffset, weightsSize}};
  if (meta.decoder.present)
    sections.push_back({kDecoderSection, decoderOffset, decoder.size()});
  if (meta.quantization.present)
    sections.push_back({kQuantizationSection, quantizationOffset, quantization.size()});
  if (meta.cuda.present)
    sections.push_back({kCudaSection, cudaOffset, cuda.size()});
  if (meta.external.present)
    sections.push_back({kExternalWeightsSection, externalOffset, external.size()});
  for (const auto &s : sections) {
    header.u32(uint32_t(s[0]));
    header.u32(0);
    header.u64(s[1]);
    header.u64(s[2]);
  }

  // A temporary beside the artifact, renamed over it at the end: readers never see half a file.
  std::string tmp;
  const int fd = openTemporary(path, O_WRONLY, &tmp, error);
  if (fd < 0)
    return false;
  bool ok = writeAll(fd, header.bytes.data(), header.bytes.size(), error) &&
            writeAll(fd, metadata.data(), metadata.size(), error) &&
            writeAll(fd, decoder.data(), decoder.size(), error) &&
            writeAll(fd, quantization.data(), quantization.size(), error) &&
            writeAll(fd, cuda.data(), cuda.size(), error) &&
            writeAll(fd, external.data(), external.size(), error) &&
            writeZeros(fd, codeOffset - optionalEnd, error) &&
            writeAll(fd, code.data(), code.size(), error) &&
            writeZeros(fd, weightsOffset - (codeOffset + code.size()), error);
  uint64_t written = weightsOffset;
  for (size_t i = 0; ok && i < weights.size(); ++i) {
    ok = writeZeros(fd, meta.weights[i].offset - (written - weightsOffset), error) &&
         writeWeight(fd, weights[i], error);
    written = weightsOffset + meta.weights[i].offset + weights[i].size;
  }
  return finishWrite(fd, ok, tmp, path, "artifact", error);
}

bool parseArtifact(const uint8_t *data, uint64_t size, ArtifactView *out, std::string *error) {
  std::string scratch;
  if (!error)
    error = &scratch;
  auto fail = [&](std::string msg) {
    *error = std::move(msg);
    return false;
  };
  if (!data && size > 0)
    return fail("no artifact data");
  if (size < sizeof(kMagic) || std::memcmp(data, kMagic, sizeof(kMagic)) != 0)
    return fail("not a kiln artifact (bad magic)");
  if (size < kHeaderFixedSize)
    return fail("artifact truncated: " + std::to_string(size) + " bytes, shorter than its header");
  Decoder h(data + sizeof(kMagic), size - sizeof(kMagic));
  const uint32_t version = h.u32("format version");
  if (version != kFormatVersion)
    return fail("artifact format version " + std::to_string(version) + "; this runtime reads " +
                std::to_string(kFormatVersion));
  const uint32_t sectionCount = h.u32("section count");
  const uint64_t declaredSize = h.u64("file size");
  if (declaredSize != size)
    return fail("artifact truncated or padded: header says " + std::to_string(declaredSize) +
                " bytes, got " + std::to_string(size));
  if (sectionCount > kMaxSections)
    return fail("artifact header lists " + std::to_string(sectionCount) + " sections (at most " +
                std::to_string(kMaxSections) + ")");
  const uint64_t headerSize = kHeaderFixedSize + uint64_t(sectionCount) * kSectionEntrySize;
  if (headerSize > size)
    return fail("artifact truncated inside its section table");

  struct Section {
    uint64_t offset = 0, size = 0;
    bool present = false;
  } sections[kLastKnownSection + 1];
  for (uint32_t i = 0; i < sectionCount; ++i) {
    const uint32_t kind = h.u32("section kind");
    h.u32("section reserved");
    const uint64_t off = h.u64("section offset");
    const uint64_t len = h.u64("section size");
    // Overflow-safe "off + len <= size".
    if (off < headerSize || off > size || len > size - off)
      return fail("artifact section " + std::to_string(i) + " (offset " + std::to_string(off) + ", " +
                  std::to_string(len) + " bytes) lies outside the file (" + std::to_string(size) + " bytes)");
    if (kind < kMetadataSection || kind > kLastKnownSection)
      continue; // unknown sections are skipped, which lets a later version add optional ones
    if (sections[kind].present)
      return fail("artifact has two sections of kind " + std::to_string(kind));
    sections[kind] = {off, len, true};
  }
  const char *names[] = {"", "metadata", "code", "weights", "decoder", "quantization", "cuda", "external weights"};
  for (uint32_t k = kMetadataSection; k <= kLastKnownSection; ++k) {
    if (!sections[k].present && k <= kWeightsSection)
      return fail(std::string("artifact has no ") + names[k] + " section");
    for (uint32_t j = k + 1; j <= kLastKnownSection; ++j) {
      const Section &a = sections[k], &b = sections[j];
      if (a.size && b.size && a.offset < b.offset + b.size && b.offset < a.offset + a.size)
        return fail(std::string("artifact ") + names[k] + " and " + names[j] + " sections overlap");
    }
  }
  if (sections[kWeightsSection].offset % kWeightsSectionAlignment != 0)
    return fail("artifact weights section offset " + std::to_string(sections[kWeightsSection].offset) +
                " is not aligned to 4096");

  ArtifactView view;
  Decoder md(data + sections[kMetadataSection].offset, sections[kMetadataSection].size);
  decodeMetadata(md, view.meta);
  if (!md.ok())
    return fail("artifact " + md.error);
  if (sections[kDecoderSection].present) {
    Decoder dd(data + sections[kDecoderSection].offset, sections[kDecoderSection].size);
    decodeDecoder(dd, view.meta.decoder);
    if (!dd.ok())
      return fail("artifact " + dd.error);
  }
  if (sections[kQuantizationSection].present) {
    Decoder qd(data + sections[kQuantizationSection].offset, sections[kQuantizationSection].size);
    decodeQuantization(qd, view.meta.quantization);
    if (!qd.ok())
      return fail("artifact quantization section: " + qd.error);
  }
  if (sections[kCudaSection].present) {
    Decoder cd(data + sections[kCudaSection].offset, sections[kCudaSection].size);
    decodeCuda(cd, view.meta.cuda);
    if (!cd.ok())
      return fail("artifact cuda section: " + cd.error);
  }
  if (sections[kExternalWeightsSection].present) {
    Decoder xd(data + sections[kExternalWeightsSection].offset, sections[kExternalWeightsSection].size);
    decodeExternalWeights(xd, view.meta.external);
    if (!xd.ok())
      return fail("artifact external weights section: " + xd.error);
  }
  view.meta.formatVersion = version;
  if (!checkMetadata(view.meta, sections[kWeightsSection].size, error)) {
    *error = "artifact metadata: " + *error;
    return false;
  }
  view.code = data + sections[kCodeSection].offset;
  view.codeSize = sections[kCodeSection].size;
  view.weights = data + sections[kWeightsSection].offset;
  view.weightsSize = sections[kWeightsSection].size;
  if (out)
    *out = std::move(view);
  return true;
}

bool rewriteArtifact(const std::string &path, const ArtifactView &view, Metadata meta, std::string *error) {
  std::string scratch;
  if (!error)
    error = &scratch;
  if (meta.weights.size() != view.meta.weights.size()) {
    *error = "rewriting an artifact: the new metadata lists " + std::to_string(meta.weights.size()) +
             " weights, the artifact " + std::to_string(view.meta.weights.size());
    return false;
  }
  // Weights are copied as stored (packed panels stay packed): the new metadata describes the
  // stored form, exactly as the parsed one does.
  // External weights stay where the manifest says (the new metadata keeps view.meta.external).
  std::vector<WeightSource> sources(meta.external.present ? 0 : view.meta.weights.size());
  for (size_t i = 0; i < view.meta.weights.size(); ++i) {
    const WeightInfo &w = view.meta.weights[i];
    if (!meta.external.present) {
      sources[i].data = view.weights + w.offset;
      sources[i].size = w.size;
    }
    meta.weights[i].dims = w.dims;
    meta.weights[i].dtype = w.dtype;
  }
  const std::string code(reinterpret_cast<const char *>(view.code), size_t(view.codeSize));
  return writeArtifact(path, std::move(meta), code, sources, error);
}

std::string formatFigure(double v, const char *format) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

} // namespace kiln::artifact

// ---- The kiln weights file (weight_files.h): transformed weights of an artifact compiled with
// --weights=external, written with the same packing as the weights section. ----
namespace kiln::artifact {
void weightsFileMagic(uint8_t out[8]); // weight_files.cpp

bool writeWeightsFile(const std::string &path, const std::vector<WeightSource> &weights,
                      std::vector<uint64_t> *offsets, ExternalFile *file, std::string *error) {
  offsets->clear();
  uint64_t end = kWeightsFileHeaderSize;
  for (const WeightSource &w : weights) {
    if (w.size > 0 && !w.data) {
      *error = "a weight has no data";
      return false;
    }
    offsets->push_back(alignUp(end, kWeightAlignment));
    end = offsets->back() + w.size;
  }
  std::string tmp;
  const int fd = openTemporary(path, O_RDWR, &tmp, error);
  if (fd < 0)
    return false;
  // The header's digest (bytes 24..56) is filled in once the data is on disk.
  Encoder header;
  header.bytes.resize(8);
  weightsFileMagic(reinterpret_cast<uint8_t *>(header.bytes.data()));
  header.u32(1);
  header.u32(0);
  header.u64(end);
  bool ok = writeAll(fd, header.bytes.data(), header.bytes.size(), error) &&
            writeZeros(fd, kWeightsFileHeaderSize - header.bytes.size(), error);
  uint64_t written = kWeightsFileHeaderSize;
  for (size_t i = 0; ok && i < weights.size(); ++i) {
    ok = writeZeros(fd, (*offsets)[i] - written, error) && writeWeight(fd, weights[i], error);
    written = (*offsets)[i] + weights[i].size;
  }
  // The data's digest, read back from the file, into the header; then the whole file's for the manifest.
  if (ok) {
    std::vector<uint8_t> buffer(size_t(4) << 20);
    sha256::Hasher h;
    for (uint64_t at = kWeightsFileHeaderSize; ok && at < end;) {
      ssize_t n = ::pread(fd, buffer.data(), size_t(std::min<uint64_t>(buffer.size(), end - at)), off_t(at));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        *error = std::string("reading back failed: ") + std::strerror(errno);
        ok = false;
        break;
      }
      h.update(buffer.data(), size_t(n));
      at += uint64_t(n);
    }
    const sha256::Digest d = h.finish();
    if (ok && ::pwrite(fd, d.data(), d.size(), 24) != ssize_t(d.size())) {
      *error = std::string("write failed: ") + std::strerror(errno);
      ok = false;
    }
  }
  if (ok)
    ok = sha256OfFile(fd, &file->sha256, error);
  file->size = end;
  return finishWrite(fd, ok, tmp, path, "weights file", error);
}

} // namespace kiln::artifact
