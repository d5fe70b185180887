// Hugging Face tokenizer.json (byte-level BPE) for kiln's runtime: Unicode tables and NFC, the
// GPT-2 / Llama 3 / Qwen 2 split regexes as hand-written matchers, BPE merges by rank, added
// tokens, the byte-level decoder and the C API of kiln/tokenizer.h.
//
// The semantics follow the Rust `tokenizers` library (what `tokenizer.json` means); the tests
// compare the ids with the files' own JavaScript encoders and with that library.
#include "tokenizer.h"

#include "error.h"
#include "kiln/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <new>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace kiln {
namespace {

struct UnicodeRange {
  uint32_t first, last;
  uint8_t value;
};
struct UnicodeTriple {
  uint32_t a, b, c;
};

#include "unicode_tables.inc"

// Limits that keep a hostile tokenizer.json from exhausting memory or the stack.
constexpr size_t kMaxJsonBytes = size_t(1) << 30;
constexpr int kMaxJsonDepth = 64;
constexpr int64_t kMaxTokenId = (int64_t(1) << 24) - 1;
constexpr size_t kMaxIdGap = 1 << 16;

TokenizerError invalid(const std::string &message) {
  return TokenizerError(KILN_ERROR_INVALID_ARGUMENT, message);
}
TokenizerError unsupported(const std::string &message) {
  return TokenizerError(KILN_ERROR_INCOMPATIBLE, message);
}

} // namespace

// ------------------------------------------------------------------------------------ Unicode

namespace unicode {
namespace {

// \p{L}/\p{N}/White_Space of the Basic Multilingual Plane, expanded once from the range tables.
const uint8_t *bmpCategories() {
  static const std::unique_ptr<uint8_t[]> table = [] {
    std::unique_ptr<uint8_t[]> t(new uint8_t[0x10000]());
    for (const UnicodeRange &r : kCategoryRanges)
      for (uint32_t cp = r.first; cp <= r.last && cp < 0x10000; ++cp)
        t[cp] = r.value;
    for (uint32_t cp : kWhiteSpace)
      t[cp] = kSpace;
    return t;
  }();
  return table.get();
}

template <size_t N> uint8_t lookupRange(const UnicodeRange (&table)[N], uint32_t cp) {
  const UnicodeRange *it = std::upper_bound(
      table, table + N, cp, [](uint32_t c, const UnicodeRange &r) { return c < r.first; });
  if (it == table)
    return 0;
  --it;
  return cp <= it->last ? it->value : 0;
}

uint8_t combiningClass(uint32_t cp) { return cp < 0x300 ? 0 : lookupRange(kCccRanges, cp); }

constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

void decompose(uint32_t cp, std::vector<uint32_t> &out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount)
      out.push_back(kTBase + s % kTCount);
    return;
  }
  if (cp >= 0xC0) {
    const UnicodeTriple *end = kDecompositions + std::size(kDecompositions);
    const UnicodeTriple *it = std::lower_bound(
        kDecompositions, end, cp, [](const UnicodeTriple &t, uint32_t c) { return t.a < c; });
    if (it != end && it->a == cp) {
      decompose(it->b, out);
      if (it->c)
        decompose(it->c, out);
      return;
    }
  }
  out.push_back(cp);
}

// The primary composite of (a, b), or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const UnicodeTriple *end = kCompositions + std::size(kCompositions);
  const UnicodeTriple *it =
      std::lower_bound(kCompositions, end, std::make_pair(a, b),
                       [](const UnicodeTriple &t, const std::pair<uint32_t, uint32_t> &k) {
                         return t.a < k.first || (t.a == k.first && t.b < k.second);
                       });
  return it != end && it->a == a && it->b == b ? it->c : 0;
}

} // namespace

const char *version() { return KILN_UNICODE_VERSION; }

Category category(uint32_t cp) {
  if (cp < 0x10000)
    return Category(bmpCategories()[cp]);
  return cp <= 0x10FFFF ? Category(lookupRange(kCategoryRanges, cp)) : kOther;
}

uint32_t decodeUtf8(std::string_view text, size_t &i) {
  uint8_t b = uint8_t(text[i]);
  if (b < 0x80) {
    ++i;
    return b;
  }
  if (b < 0xE0) {
    uint32_t cp = (uint32_t(b & 0x1F) << 6) | (uint8_t(text[i + 1]) & 0x3F);
    i += 2;
    return cp;
  }
  if (b < 0xF0) {
    uint32_t cp = (uint32_t(b & 0x0F) << 12) | (uint32_t(uint8_t(text[i + 1]) & 0x3F) << 6) |
                  (uint8_t(text[i + 2]) & 0x3F);
    i += 3;
    return cp;
  }
  uint32_t cp = (uint32_t(b & 0x07) << 18) | (uint32_t(uint8_t(text[i + 1]) & 0x3F) << 12) |
                (uint32_t(uint8_t(text[i + 2]) & 0x3F) << 6) | (uint8_t(text[i + 3]) & 0x3F);
  i += 4;
  return cp;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

namespace {
// Length of the valid UTF-8 sequence at text[i], or 0 if the bytes there are not one.
size_t validSequenceLength(std::string_view text, size_t i) {
  uint8_t b = uint8_t(text[i]);
  if (b < 0x80)
    return 1;
  size_t n;
  uint8_t lower = 0x80, upper = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0)
      lower = 0xA0;
    if (b == 0xED)
      upper = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0)
      lower = 0x90;
    if (b == 0xF4)
      upper = 0x8F;
  } else {
    return 0;
  }
  if (text.size() - i < n)
    return 0;
  uint8_t c = uint8_t(text[i + 1]);
  if (c < lower || c > upper)
    return 0;
  for (size_t k = 2; k < n; ++k)
    if ((uint8_t(text[i + k]) & 0xC0) != 0x80)
      return 0;
  return n;
}
} // namespace

size_t findInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    // Skip ASCII eight bytes at a time.
    while (i + 8 <= text.size()) {
      uint64_t w;
      std::memcpy(&w, text.data() + i, 8);
      if (w & 0x8080808080808080ull)
        break;
      i += 8;
    }
    if (i >= text.size())
      break;
    size_t n = validSequenceLength(text, i);
    if (n == 0)
      return i;
    i += n;
  }
  return std::string_view::npos;
}

void Utf8Stream::pushByte(uint8_t b, std::string &out) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  for (;;) {
    if (needed_ == 0) {
      if (b < 0x80) {
        out.push_back(char(b));
      } else if (b >= 0xC2 && b <= 0xDF) {
        needed_ = 1;
      } else if (b >= 0xE0 && b <= 0xEF) {
        needed_ = 2;
        lower_ = b == 0xE0 ? 0xA0 : 0x80;
        upper_ = b == 0xED ? 0x9F : 0xBF;
      } else if (b >= 0xF0 && b <= 0xF4) {
        needed_ = 3;
        lower_ = b == 0xF0 ? 0x90 : 0x80;
        upper_ = b == 0xF4 ? 0x8F : 0xBF;
      } else {
        out.append(kReplacement, 3);
        return;
      }
      if (needed_)
        held_[heldCount_++] = char(b);
      return;
    }
    if (b < lower_ || b > upper_) {
      // The held bytes are a maximal invalid subsequence; `b` starts afresh.
      needed_ = 0;
      heldCount_ = 0;
      lower_ = 0x80;
      upper_ = 0xBF;
      out.append(kReplacement, 3);
      continue;
    }
    lower_ = 0x80;
    upper_ = 0xBF;
    held_[heldCount_++] = char(b);
    if (--needed_ == 0) {
      out.append(held_, heldCount_);
      heldCount_ = 0;
    }
    return;
  }
}

void Utf8Stream::push(const char *bytes, size_t n, std::string &out) {
  for (size_t i = 0; i < n; ++i) {
    uint8_t b = uint8_t(bytes[i]);
    if (b < 0x80 && needed_ == 0)
      out.push_back(char(b));
    else
      pushByte(b, out);
  }
}

void Utf8Stream::finish(std::string &out) {
  if (needed_ != 0)
    out.append("\xEF\xBF\xBD");
  needed_ = 0;
  heldCount_ = 0;
  lower_ = 0x80;
  upper_ = 0xBF;
}

std::string replaceInvalidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  Utf8Stream stream;
  stream.push(text.data(), text.size(), out);
  stream.finish(out);
  return out;
}

namespace {
// NFC of a stretch of valid UTF-8, from scratch, appended to `out`.
void appendNfc(std::string_view text, std::string &out) {
  // Full decomposition, canonical ordering, then canonical composition.
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();)
    decompose(decodeUtf8(text, i), cps);
  std::vector<uint8_t> ccc(cps.size());
  for (size_t k = 0; k < cps.size(); ++k)
    ccc[k] = combiningClass(cps[k]);
  for (size_t k = 1; k < cps.size(); ++k) {
    // Insertion sort inside each run of non-starters (stable, runs are short).
    for (size_t j = k; j > 0 && ccc[j] != 0 && ccc[j - 1] > ccc[j]; --j) {
      std::swap(cps[j], cps[j - 1]);
      std::swap(ccc[j], ccc[j - 1]);
    }
  }
  // Canonical composition: each character composes with the last starter unless blocked (a kept
  // character in between with a class >= its own, or a kept starter, which becomes the new one).
  size_t starter = 0, kept = 0;
  bool haveStarter = false;
  int lastClass = 256;
  for (size_t k = 0; k < cps.size(); ++k) {
    uint32_t cp = cps[k];
    int cls = ccc[k];
    if (haveStarter && (lastClass < cls || lastClass == 0)) {
      if (uint32_t composite = compose(cps[starter], cp)) {
        cps[starter] = composite;
        continue;
      }
    }
    if (cls == 0) {
      starter = kept;
      haveStarter = true;
    }
    lastClass = cls;
    cps[kept++] = cp;
  }
  for (size_t k = 0; k < kept; ++k)
    appendUtf8(out, cps[k]);
}
} // namespace

bool toNfc(std::string_view text, std::string &out) {
  // Quick check (UAX #15) that also finds what to normalize. A character with ccc 0 and NFC_QC Yes
  // is a boundary: nothing before it interacts with it or with anything after it, so only the
  // stretches between boundaries that hold a No/Maybe character or misordered marks are rebuilt.
  // Below U+0300 every character is a boundary: in UTF-8 every lead byte below 0xCC.
  bool changed = false, dirty = false;
  size_t segment = 0, copied = 0;
  uint8_t lastCcc = 0;
  auto flush = [&](size_t end) {
    if (!changed) {
      out.clear();
      out.reserve(text.size() + 16);
      changed = true;
    }
    out.append(text.substr(copied, segment - copied));
    appendNfc(text.substr(segment, end - segment), out);
    copied = end;
    dirty = false;
  };
  for (size_t i = 0; i < text.size();) {
    size_t at = i;
    uint8_t ccc = 0;
    bool boundary = true;
    if (uint8_t(text[i]) < 0xCC) {
      i += uint8_t(text[i]) < 0x80 ? 1 : 2;
    } else {
      uint32_t cp = decodeUtf8(text, i);
      ccc = combiningClass(cp);
      uint8_t qc = lookupRange(kNfcQcRanges, cp);
      boundary = ccc == 0 && qc == 0;
      if (qc != 0 || (ccc != 0 && lastCcc > ccc))
        dirty = true;
    }
    if (boundary) {
      if (dirty)
        flush(at);
      segment = at;
    }
    lastCcc = ccc;
  }
  if (dirty)
    flush(text.size());
  if (changed)
    out.append(text.substr(copied));
  return changed;
}

} // namespace unicode

// ------------------------------------------------------------------------------ pre-tokenizers

namespace {

constexpr char kGpt2Regex[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr char kLlama3Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr char kQwen2Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

using unicode::kLetter;
using unicode::kNumber;
using unicode::kOther;
using unicode::kSpace;

constexpr std::array<uint8_t, 128> kAsciiCategory = [] {
  std::array<uint8_t, 128> t{};
  for (int c = 0; c < 128; ++c)
    t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ? kLetter
           : c >= '0' && c <= '9'                           ? kNumber
           : (c >= 0x09 && c <= 0x0D) || c == ' '           ? kSpace
                                                            : kOther;
  return t;
}();

// The text being split, one entry per code point (off has one more: the end).
struct CodePoints {
  std::vector<uint32_t> cp;
  std::vector<uint8_t> cls;
  std::vector<uint32_t> off;

  void load(std::string_view text) {
    cp.clear();
    cls.clear();
    off.clear();
    for (size_t i = 0; i < text.size();) {
      off.push_back(uint32_t(i));
      uint32_t c = unicode::decodeUtf8(text, i);
      cp.push_back(c);
      cls.push_back(uint8_t(c < 0x80 ? kAsciiCategory[c] : unicode::category(c)));
    }
    off.push_back(uint32_t(text.size()));
  }
};

inline uint32_t asciiLower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// 's|'t|'re|'ve|'m|'ll|'d at i (cp[i] == '\''), case-insensitively if asked; the end or 0.
inline size_t matchContraction(const uint32_t *cp, size_t i, size_t n, bool ignoreCase) {
  if (i + 1 >= n)
    return 0;
  uint32_t a = ignoreCase ? asciiLower(cp[i + 1]) : cp[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return i + 2;
  if (i + 2 >= n)
    return 0;
  uint32_t b = ignoreCase ? asciiLower(cp[i + 2]) : cp[i + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
    return i + 3;
  return 0;
}

inline size_t runOf(const uint8_t *cls, size_t j, size_t n, uint8_t c) {
  while (j < n && cls[j] == c)
    ++j;
  return j;
}

// \s+(?!\S)|\s+ at i (cls[i] == kSpace).
inline size_t matchSpaces(const uint8_t *cls, size_t i, size_t n) {
  size_t k = runOf(cls, i, n, kSpace);
  if (k == n || k - i == 1)
    return k;
  return k - 1; // leave the last space to prefix the next word
}

size_t matchGpt2(const uint32_t *cp, const uint8_t *cls, size_t i, size_t n) {
  if (cp[i] == '\'')
    if (size_t e = matchContraction(cp, i, n, false))
      return e;
  size_t j = i;
  if (cp[i] == ' ' && i + 1 < n && cls[i + 1] != kSpace)
    j = i + 1; // " ?" then a letter, number or other run
  if (cls[j] != kSpace)
    return runOf(cls, j, n, cls[j]);
  return matchSpaces(cls, i, n);
}

size_t matchLlama3(const uint32_t *cp, const uint8_t *cls, size_t i, size_t n, size_t maxDigits) {
  uint32_t c = cp[i];
  uint8_t k = cls[i];
  if (c == '\'')
    if (size_t e = matchContraction(cp, i, n, true))
      return e;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (k == kLetter)
    return runOf(cls, i, n, kLetter);
  bool crlf = c == '\r' || c == '\n';
  if (k != kNumber && !crlf && i + 1 < n && cls[i + 1] == kLetter)
    return runOf(cls, i + 1, n, kLetter);
  // \p{N}{1,maxDigits}
  if (k == kNumber) {
    size_t j = i + 1;
    while (j < n && j - i < maxDigits && cls[j] == kNumber)
      ++j;
    return j;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  size_t j = i;
  if (c == ' ' && i + 1 < n && cls[i + 1] == kOther)
    j = i + 1;
  if (cls[j] == kOther) {
    j = runOf(cls, j, n, kOther);
    while (j < n && (cp[j] == '\r' || cp[j] == '\n'))
      ++j;
    return j;
  }
  // \s*[\r\n]+ : through the last line break of the whitespace run.
  size_t end = runOf(cls, i, n, kSpace);
  for (size_t m = end; m > i; --m)
    if (cp[m - 1] == '\r' || cp[m - 1] == '\n')
      return m;
  return matchSpaces(cls, i, n);
}

} // namespace

bool splitPatternFromRegex(std::string_view regex, SplitPattern &out) {
  if (regex == kGpt2Regex)
    out = SplitPattern::kGpt2;
  else if (regex == kLlama3Regex)
    out = SplitPattern::kLlama3;
  else if (regex == kQwen2Regex)
    out = SplitPattern::kQwen2;
  else
    return false;
  return true;
}

namespace {
void splitCodePoints(SplitPattern pattern, const CodePoints &cps,
                     std::vector<std::pair<size_t, size_t>> &pieces) {
  const uint32_t *cp = cps.cp.data();
  const uint8_t *cls = cps.cls.data();
  size_t n = cps.cp.size();
  for (size_t i = 0; i < n;) {
    size_t e;
    switch (pattern) {
    case SplitPattern::kGpt2:
      e = matchGpt2(cp, cls, i, n);
      break;
    case SplitPattern::kLlama3:
      e = matchLlama3(cp, cls, i, n, 3);
      break;
    default:
      e = matchLlama3(cp, cls, i, n, 1);
      break;
    }
    pieces.emplace_back(cps.off[i], cps.off[e]);
    i = e;
  }
}
} // namespace

void splitText(SplitPattern pattern, std::string_view text,
               std::vector<std::pair<size_t, size_t>> &pieces) {
  thread_local CodePoints cps;
  cps.load(text);
  pieces.clear();
  splitCodePoints(pattern, cps, pieces);
  if (cps.cp.capacity() > (1u << 20)) // do not keep a huge text's buffers for the thread's life
    cps = CodePoints();
}

// ------------------------------------------------------------------------------------ model

namespace {

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to U+0100 and up.
std::array<uint32_t, 256> byteToChar() {
  std::array<uint32_t, 256> m{};
  uint32_t n = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    m[b] = printable ? b : 256 + n++;
  }
  return m;
}

// (left id, right id) -> (rank, merged id), open addressing.
class MergeMap {
public:
  struct Slot {
    uint64_t key;
    uint32_t rank;
    int32_t id;
  };
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2)
      cap <<= 1;
    slots_.assign(cap, Slot{kEmpty, 0, 0});
    mask_ = cap - 1;
  }
  static uint64_t key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  // A later duplicate overrides an earlier one, as in Hugging Face's HashMap construction.
  void insert(uint64_t k, uint32_t rank, int32_t id) {
    for (size_t s = hash(k);; s = (s + 1) & mask_) {
      if (slots_[s].key == kEmpty || slots_[s].key == k) {
        slots_[s] = Slot{k, rank, id};
        return;
      }
    }
  }
  const Slot *find(uint64_t k) const {
    for (size_t s = hash(k);; s = (s + 1) & mask_) {
      if (slots_[s].key == k)
        return &slots_[s];
      if (slots_[s].key == kEmpty)
        return nullptr;
    }
  }

private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  size_t hash(uint64_t k) const { return size_t((k * 0x9E3779B97F4A7C15ull) >> 17) & mask_; }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

uint64_t hashBytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  size_t i = 0;
  auto mix = [&](uint64_t v) {
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  };
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t v;
    std::memcpy(&v, s.data() + i, 8);
    mix(v);
  }
  if (i < s.size()) {
    uint64_t v = 0;
    std::memcpy(&v, s.data() + i, s.size() - i);
    mix(v);
  }
  h *= 0x94D049BB133111EBull;
  return (h ^ (h >> 32)) | 1; // never 0, the empty slot
}

// Byte strings -> short id sequences, open addressing over flat arrays (no allocation per lookup).
class WordTable {
public:
  explicit WordTable(size_t capacity = 0) { reset(capacity); }
  void reset(size_t capacity) {
    size_t cap = 16;
    while (cap < capacity * 2)
      cap <<= 1;
    slots_.assign(cap, Slot{});
    keys_.clear();
    ids_.clear();
    count_ = 0;
  }
  size_t size() const { return count_; }
  size_t capacity() const { return slots_.size() / 2; }
  bool find(std::string_view key, uint64_t hash, std::vector<int32_t> &out) const {
    for (size_t i = hash & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot &s = slots_[i];
      if (s.hash == 0)
        return false;
      if (s.hash == hash && s.keyLen == key.size() &&
          std::memcmp(keys_.data() + s.keyOff, key.data(), key.size()) == 0) {
        out.insert(out.end(), ids_.begin() + s.idsOff, ids_.begin() + s.idsOff + s.idsLen);
        return true;
      }
    }
  }
  // Adds key -> ids unless the key is present or the table is full (then returns false).
  bool insert(std::string_view key, uint64_t hash, const int32_t *ids, size_t n) {
    if (count_ >= capacity())
      return false;
    size_t i = hash & (slots_.size() - 1);
    for (; slots_[i].hash != 0; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i].hash == hash && slots_[i].keyLen == key.size() &&
          std::memcmp(keys_.data() + slots_[i].keyOff, key.data(), key.size()) == 0)
        return false;
    slots_[i] = Slot{hash, uint32_t(keys_.size()), uint32_t(key.size()), uint32_t(ids_.size()), uint32_t(n)};
    keys_.append(key);
    ids_.insert(ids_.end(), ids, ids + n);
    ++count_;
    return true;
  }

private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t keyOff = 0, keyLen = 0, idsOff = 0, idsLen = 0;
  };
  std::vector<Slot> slots_;
  std::string keys_;
  std::vector<int32_t> ids_;
  size_t count_ = 0;
};

// Words -> ids, shared by all threads (sharded locks); a full shard starts over.
class WordCache {
public:
  static constexpr size_t kMaxWordBytes = 128;
  bool find(std::string_view word, uint64_t hash, std::vector<int32_t> &out) const {
    Shard &s = shards_[hash >> 60];
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.table.find(word, hash, out);
  }
  void put(std::string_view word, uint64_t hash, const int32_t *ids, size_t n) const {
    Shard &s = shards_[hash >> 60];
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.table.size() >= s.table.capacity())
      s.table.reset(kEntriesPerShard);
    s.table.insert(word, hash, ids, n);
  }

private:
  static constexpr size_t kEntriesPerShard = 4096;
  struct Shard {
    std::mutex mutex;
    WordTable table; // grows to kEntriesPerShard on first use
  };
  mutable Shard shards_[16];
};

struct AddedToken {
  std::string content;
  int32_t id;
  bool special, lstrip, rstrip, singleWord;
};

// Byte trie of the added tokens' contents.
struct Trie {
  struct Node {
    std::vector<std::pair<uint8_t, uint32_t>> next;
    int32_t token = -1; // index into the added tokens
  };
  std::vector<Node> nodes{Node{}};
  std::array<bool, 256> first{};

  void insert(std::string_view s, int32_t token) {
    uint32_t n = 0;
    for (char ch : s) {
      uint8_t b = uint8_t(ch);
      uint32_t child = 0;
      for (auto &e : nodes[n].next)
        if (e.first == b)
          child = e.second;
      if (!child) {
        child = uint32_t(nodes.size());
        nodes[n].next.emplace_back(b, child);
        nodes.emplace_back();
      }
      n = child;
    }
    nodes[n].token = token;
    first[uint8_t(s[0])] = true;
  }
};

} // namespace

struct Tokenizer::Impl {
  // Vocabulary.
  std::vector<std::string> tokens;  // by id, as written in tokenizer.json
  std::vector<std::string> bytes;   // by id, what the byte-level decoder makes of the token
  std::vector<uint8_t> present;     // by id: 1 = has a token
  std::vector<uint8_t> special;     // by id: 1 = special added token
  std::unordered_map<std::string, int32_t> vocab;      // model vocabulary, token -> id
  WordTable vocabBytes;                                // raw bytes -> id (for ignore_merges)
  std::array<int32_t, 256> byteIds{};                  // single byte -> id (-1 if absent)
  MergeMap merges;
  int32_t unkId = -1;
  bool ignoreMerges = false;

  // Added tokens.
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int32_t> addedIds;
  Trie trie;

  // Pipeline.
  bool nfc = false;
  std::vector<SplitPattern> splits; // Split pre-tokenizers, in order
  bool byteLevelRegex = false;      // ByteLevel's own GPT-2 split (use_regex)
  bool addPrefixSpace = false;
  std::vector<int32_t> prefixIds, suffixIds; // post-processor

  WordCache cache;

  void bpe(std::string_view word, std::vector<int32_t> &out) const;
  void encodeWord(std::string_view word, std::vector<int32_t> &out) const;
  void encodePiece(size_t stage, std::string_view piece, std::vector<int32_t> &out) const;
  void encodeSection(std::string_view section, std::vector<int32_t> &out) const;
  bool wordBoundary(std::string_view text, size_t begin, size_t end) const;
};

// ------------------------------------------------------------------------------------- BPE

void Tokenizer::Impl::bpe(std::string_view word, std::vector<int32_t> &out) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next; // -1 at the ends
  };
  struct Candidate {
    uint32_t rank;
    uint32_t pos;
    int32_t left, right, merged;
    bool operator<(const Candidate &o) const { // a max-heap on this yields the lowest (rank, pos)
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.clear();
  heap.clear();
  for (char ch : word) {
    int32_t id = byteIds[uint8_t(ch)];
    if (id < 0)
      id = unkId; // a byte the vocabulary lacks: unk, or dropped without one (as in tokenizers)
    if (id < 0)
      continue;
    int32_t idx = int32_t(symbols.size());
    symbols.push_back(Symbol{id, idx - 1, -1});
    if (idx > 0)
      symbols[idx - 1].next = idx;
  }
  auto consider = [&](int32_t pos) {
    int32_t nx = symbols[pos].next;
    if (nx < 0)
      return;
    const MergeMap::Slot *m = merges.find(MergeMap::key(symbols[pos].id, symbols[nx].id));
    if (!m)
      return;
    heap.push_back(Candidate{m->rank, uint32_t(pos), symbols[pos].id, symbols[nx].id, m->id});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int32_t i = 0; i + 1 < int32_t(symbols.size()); ++i)
    consider(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    Candidate c = heap.back();
    heap.pop_back();
    Symbol &s = symbols[c.pos];
    // Stale if either side has merged since (a merged symbol never gets an old id back).
    if (s.id != c.left || s.next < 0 || symbols[s.next].id != c.right)
      continue;
    Symbol &r = symbols[s.next];
    s.id = c.merged;
    s.next = r.next;
    if (r.next >= 0)
      symbols[r.next].prev = int32_t(c.pos);
    r.id = -1;
    if (s.prev >= 0)
      consider(s.prev);
    consider(int32_t(c.pos));
  }
  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next)
    out.push_back(symbols[i].id);
  if (symbols.capacity() > (1u << 20)) {
    symbols = std::vector<Symbol>();
    heap = std::vector<Candidate>();
  }
}

void Tokenizer::Impl::encodeWord(std::string_view word, std::vector<int32_t> &out) const {
  if (word.empty())
    return;
  if (word.size() == 1 && byteIds[uint8_t(word[0])] >= 0) {
    out.push_back(byteIds[uint8_t(word[0])]);
    return;
  }
  uint64_t hash = hashBytes(word);
  if (ignoreMerges && vocabBytes.find(word, hash, out))
    return;
  bool cacheable = word.size() <= WordCache::kMaxWordBytes;
  if (cacheable && cache.find(word, hash, out))
    return;
  size_t start = out.size();
  bpe(word, out);
  if (cacheable)
    cache.put(word, hash, out.data() + start, out.size() - start);
}

void Tokenizer::Impl::encodePiece(size_t stage, std::string_view piece,
                                  std::vector<int32_t> &out) const {
  if (piece.empty())
    return;
  if (stage < splits.size()) {
    std::vector<std::pair<size_t, size_t>> ranges;
    splitText(splits[stage], piece, ranges);
    for (auto &r : ranges)
      encodePiece(stage + 1, piece.substr(r.first, r.second - r.first), out);
    return;
  }
  // The ByteLevel pre-tokenizer: optional prefix space, optional GPT-2 split, then BPE on bytes.
  std::string prefixed;
  if (addPrefixSpace && piece[0] != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (!byteLevelRegex) {
    encodeWord(piece, out);
    return;
  }
  std::vector<std::pair<size_t, size_t>> ranges;
  splitText(SplitPattern::kGpt2, piece, ranges);
  for (auto &r : ranges)
    encodeWord(piece.substr(r.first, r.second - r.first), out);
}

void Tokenizer::Impl::encodeSection(std::string_view section, std::vector<int32_t> &out) const {
  if (section.empty())
    return;
  std::string normalized;
  if (nfc && unicode::toNfc(section, normalized))
    section = normalized;
  encodePiece(0, section, out);
}

// single_word: the match must not touch a letter, number or '_' on either side.
bool Tokenizer::Impl::wordBoundary(std::string_view text, size_t begin, size_t end) const {
  auto isWord = [](uint32_t c) {
    auto k = unicode::category(c);
    return k == kLetter || k == kNumber || c == '_';
  };
  if (begin > 0) {
    size_t i = begin - 1;
    while (i > 0 && (uint8_t(text[i]) & 0xC0) == 0x80)
      --i;
    if (isWord(unicode::decodeUtf8(text, i)))
      return false;
  }
  if (end < text.size()) {
    size_t i = end;
    if (isWord(unicode::decodeUtf8(text, i)))
      return false;
  }
  return true;
}

// ------------------------------------------------------------------------------- Tokenizer

Tokenizer::Tokenizer() : impl_(new Impl) {}
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, uint32_t flags) const {
  const Impl &m = *impl_;
  std::string repaired;
  size_t bad = unicode::findInvalidUtf8(text);
  if (bad != std::string_view::npos) {
    if (!(flags & kReplaceInvalidUtf8))
      throw invalid("text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    repaired = unicode::replaceInvalidUtf8(text);
    text = repaired;
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (flags & kAddSpecial)
    out.insert(out.end(), m.prefixIds.begin(), m.prefixIds.end());

  bool parseSpecial = (flags & kParseSpecial) != 0;
  size_t sectionStart = 0;
  if (!m.added.empty()) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (!m.trie.first[uint8_t(text[i])])
        continue;
      // Longest added token starting at i (leftmost-longest, like Hugging Face's Aho-Corasick).
      int32_t best = -1;
      size_t bestEnd = 0;
      uint32_t node = 0;
      for (size_t j = i; j < text.size(); ++j) {
        uint32_t child = 0;
        for (auto &e : m.trie.nodes[node].next)
          if (e.first == uint8_t(text[j]))
            child = e.second;
        if (!child)
          break;
        node = child;
        if (m.trie.nodes[node].token >= 0) {
          best = m.trie.nodes[node].token;
          bestEnd = j + 1;
        }
      }
      if (best < 0)
        continue;
      const AddedToken &tok = m.added[best];
      // A match that is not taken (a special token without PARSE_SPECIAL, a single_word token
      // inside a word) stays text, and the search goes on after it, as Hugging Face's does.
      if ((tok.special && !parseSpecial) || (tok.singleWord && !m.wordBoundary(text, i, bestEnd))) {
        i = bestEnd - 1;
        continue;
      }
      size_t begin = i, end = bestEnd;
      if (tok.lstrip) {
        while (begin > sectionStart) {
          size_t k = begin - 1;
          while (k > sectionStart && (uint8_t(text[k]) & 0xC0) == 0x80)
            --k;
          size_t probe = k;
          if (unicode::category(unicode::decodeUtf8(text, probe)) != kSpace)
            break;
          begin = k;
        }
      }
      if (tok.rstrip) {
        while (end < text.size()) {
          size_t probe = end;
          if (unicode::category(unicode::decodeUtf8(text, probe)) != kSpace)
            break;
          end = probe;
        }
      }
      m.encodeSection(text.substr(sectionStart, begin - sectionStart), out);
      out.push_back(tok.id);
      sectionStart = end;
      i = end - 1;
    }
  }
  m.encodeSection(text.substr(sectionStart), out);
  if (flags & kAddSpecial)
    out.insert(out.end(), m.suffixIds.begin(), m.suffixIds.end());
  return out;
}

void Tokenizer::appendTokenBytes(int32_t id, bool skipSpecial, std::string &out) const {
  const Impl &m = *impl_;
  if (id < 0 || size_t(id) >= m.present.size() || !m.present[id])
    throw invalid("token id " + std::to_string(id) + " is not in the vocabulary (size " +
                  std::to_string(m.present.size()) + ")");
  if (skipSpecial && m.special[id])
    return;
  out.append(m.bytes[id]);
}

std::string Tokenizer::decode(const int32_t *ids, size_t count, bool skipSpecial) const {
  std::string raw;
  for (size_t i = 0; i < count; ++i)
    appendTokenBytes(ids[i], skipSpecial, raw);
  if (unicode::findInvalidUtf8(raw) == std::string_view::npos)
    return raw;
  return unicode::replaceInvalidUtf8(raw);
}

size_t Tokenizer::vocabSize() const { return impl_->present.size(); }

int32_t Tokenizer::tokenToId(std::string_view token) const {
  std::string key(token);
  auto a = impl_->addedIds.find(key);
  if (a != impl_->addedIds.end())
    return a->second;
  auto v = impl_->vocab.find(key);
  return v != impl_->vocab.end() ? v->second : -1;
}

const std::string *Tokenizer::idToToken(int32_t id) const {
  if (id < 0 || size_t(id) >= impl_->present.size() || !impl_->present[id])
    return nullptr;
  return &impl_->tokens[id];
}

bool Tokenizer::isSpecial(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->special.size() && impl_->special[id];
}

// ---------------------------------------------------------------------------- tokenizer.json

namespace {

using Json = nlohmann::json;

const char *typeName(const Json &j) { return j.type_name(); }

const Json &field(const Json &obj, const char *key, const std::string &where) {
  auto it = obj.find(key);
  if (it == obj.end())
    throw invalid("tokenizer.json: " + where + " has no '" + key + "'");
  return *it;
}

// A field that may be absent or null.
const Json *optional(const Json &obj, const char *key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

const std::string &asString(const Json &j, const std::string &what) {
  if (!j.is_string())
    throw invalid("tokenizer.json: " + what + " must be a string, not " + typeName(j));
  return j.get_ref<const std::string &>();
}

bool asBool(const Json *j, bool fallback, const std::string &what) {
  if (!j)
    return fallback;
  if (!j->is_boolean())
    throw invalid("tokenizer.json: " + what + " must be a boolean, not " + typeName(*j));
  return j->get<bool>();
}

int32_t asId(const Json &j, const std::string &what) {
  if (!j.is_number_integer())
    throw invalid("tokenizer.json: " + what + " must be an integer id, not " + typeName(j));
  int64_t v = j.is_number_unsigned() ? int64_t(std::min<uint64_t>(j.get<uint64_t>(), uint64_t(kMaxTokenId) + 1))
                                      : j.get<int64_t>();
  if (v < 0 || v > kMaxTokenId)
    throw invalid("tokenizer.json: " + what + " is " + j.dump() + ", outside [0, " +
                  std::to_string(kMaxTokenId) + "]");
  return int32_t(v);
}

const std::string &typeOf(const Json &obj, const std::string &what) {
  if (!obj.is_object())
    throw invalid("tokenizer.json: " + what + " must be an object or null, not " + typeName(obj));
  return asString(field(obj, "type", what), what + ".type");
}

// Rejects deep nesting before nlohmann's parser sees it.
void checkDepth(std::string_view json) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw invalid("tokenizer.json nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

void parseNormalizer(const Json *j, Tokenizer::Impl &m) {
  if (!j)
    return;
  const std::string &type = typeOf(*j, "normalizer");
  if (type == "NFC") {
    m.nfc = true;
  } else if (type == "Sequence") {
    const Json &list = field(*j, "normalizers", "normalizer");
    if (!list.is_array())
      throw invalid("tokenizer.json: normalizer.normalizers must be an array");
    for (const Json &n : list)
      parseNormalizer(&n, m);
  } else {
    throw unsupported("tokenizer.json: normalizer '" + type +
                      "' is not supported (kiln implements NFC and Sequence)");
  }
}

void parsePreTokenizer(const Json *j, Tokenizer::Impl &m, bool &sawByteLevel) {
  if (!j)
    return;
  const std::string &type = typeOf(*j, "pre_tokenizer");
  if (sawByteLevel)
    throw unsupported("tokenizer.json: pre_tokenizer '" + type +
                      "' after ByteLevel is not supported (ByteLevel must come last)");
  if (type == "Sequence") {
    const Json &list = field(*j, "pretokenizers", "pre_tokenizer");
    if (!list.is_array())
      throw invalid("tokenizer.json: pre_tokenizer.pretokenizers must be an array");
    for (const Json &p : list)
      parsePreTokenizer(&p, m, sawByteLevel);
  } else if (type == "Split") {
    const Json &pattern = field(*j, "pattern", "pre_tokenizer Split");
    if (!pattern.is_object())
      throw invalid("tokenizer.json: Split.pattern must be an object");
    const Json *regex = optional(pattern, "Regex");
    if (!regex)
      throw unsupported("tokenizer.json: Split with a String pattern is not supported (only the "
                        "GPT-2, Llama 3 and Qwen 2 regexes are)");
    const std::string &source = asString(*regex, "Split.pattern.Regex");
    SplitPattern p;
    if (!splitPatternFromRegex(source, p))
      throw unsupported("tokenizer.json: unknown Split regex '" + source +
                        "' (kiln knows the GPT-2, Llama 3 and Qwen 2 patterns)");
    const Json *behavior = optional(*j, "behavior");
    if (behavior && asString(*behavior, "Split.behavior") != "Isolated")
      throw unsupported("tokenizer.json: Split behavior '" + behavior->get<std::string>() +
                        "' is not supported (only Isolated)");
    if (asBool(optional(*j, "invert"), false, "Split.invert"))
      throw unsupported("tokenizer.json: Split with invert=true is not supported");
    m.splits.push_back(p);
  } else if (type == "ByteLevel") {
    sawByteLevel = true;
    m.addPrefixSpace = asBool(optional(*j, "add_prefix_space"), true, "ByteLevel.add_prefix_space");
    m.byteLevelRegex = asBool(optional(*j, "use_regex"), true, "ByteLevel.use_regex");
  } else {
    throw unsupported("tokenizer.json: pre_tokenizer '" + type +
                      "' is not supported (kiln implements Split, ByteLevel and Sequence)");
  }
}

void parsePostProcessor(const Json *j, Tokenizer::Impl &m,
                        const std::unordered_map<std::string, int32_t> &allTokens) {
  if (!j)
    return;
  const std::string &type = typeOf(*j, "post_processor");
  auto idOf = [&](const Json &pair, const char *what) {
    // ["<s>", 0] as RobertaProcessing/BertProcessing write cls and sep.
    if (!pair.is_array() || pair.size() != 2)
      throw invalid(std::string("tokenizer.json: post_processor.") + what + " must be [token, id]");
    return asId(pair[1], std::string("post_processor.") + what + " id");
  };
  if (type == "ByteLevel") {
    // Offsets only.
  } else if (type == "Sequence") {
    const Json &list = field(*j, "processors", "post_processor");
    if (!list.is_array())
      throw invalid("tokenizer.json: post_processor.processors must be an array");
    for (const Json &p : list)
      parsePostProcessor(&p, m, allTokens);
  } else if (type == "TemplateProcessing") {
    const Json &single = field(*j, "single", "post_processor TemplateProcessing");
    const Json *specials = optional(*j, "special_tokens");
    if (!single.is_array())
      throw invalid("tokenizer.json: TemplateProcessing.single must be an array");
    bool seenSequence = false;
    for (const Json &piece : single) {
      if (!piece.is_object())
        throw invalid("tokenizer.json: TemplateProcessing.single items must be objects");
      if (const Json *seq = optional(piece, "Sequence")) {
        const Json *id = seq->is_object() ? optional(*seq, "id") : nullptr;
        if (!id || !id->is_string() || id->get<std::string>() != "A")
          throw unsupported("tokenizer.json: TemplateProcessing.single may only use sequence A");
        if (seenSequence)
          throw unsupported("tokenizer.json: TemplateProcessing.single uses sequence A twice");
        seenSequence = true;
      } else if (const Json *tok = optional(piece, "SpecialToken")) {
        const std::string &name =
            asString(tok->is_object() ? field(*tok, "id", "SpecialToken") : *tok, "SpecialToken.id");
        const Json *entry = specials && specials->is_object() ? optional(*specials, name.c_str()) : nullptr;
        std::vector<int32_t> ids;
        if (entry) {
          const Json &list = field(*entry, "ids", "special_tokens['" + name + "']");
          if (!list.is_array())
            throw invalid("tokenizer.json: special_tokens['" + name + "'].ids must be an array");
          for (const Json &v : list)
            ids.push_back(asId(v, "special_tokens['" + name + "'].ids[]"));
        } else {
          auto it = allTokens.find(name);
          if (it == allTokens.end())
            throw invalid("tokenizer.json: TemplateProcessing names unknown token '" + name + "'");
          ids.push_back(it->second);
        }
        auto &dst = seenSequence ? m.suffixIds : m.prefixIds;
        dst.insert(dst.end(), ids.begin(), ids.end());
      } else {
        throw invalid("tokenizer.json: TemplateProcessing.single items are Sequence or SpecialToken");
      }
    }
    if (!seenSequence)
      throw invalid("tokenizer.json: TemplateProcessing.single has no sequence A");
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    m.prefixIds.push_back(idOf(field(*j, "cls", type), "cls"));
    m.suffixIds.push_back(idOf(field(*j, "sep", type), "sep"));
  } else {
    throw unsupported("tokenizer.json: post_processor '" + type + "' is not supported");
  }
}

void parseDecoder(const Json *j) {
  if (!j)
    throw unsupported("tokenizer.json has no decoder (kiln implements the ByteLevel decoder)");
  const std::string &type = typeOf(*j, "decoder");
  if (type == "Sequence") {
    const Json &list = field(*j, "decoders", "decoder");
    if (!list.is_array() || list.empty())
      throw invalid("tokenizer.json: decoder.decoders must be a non-empty array");
    for (const Json &d : list)
      parseDecoder(&d);
  } else if (type != "ByteLevel") {
    throw unsupported("tokenizer.json: decoder '" + type +
                      "' is not supported (kiln implements the ByteLevel decoder)");
  }
}

} // namespace

std::shared_ptr<const Tokenizer> Tokenizer::fromJson(std::string_view text) {
  if (text.size() > kMaxJsonBytes)
    throw invalid("tokenizer.json is larger than " + std::to_string(kMaxJsonBytes >> 20) + " MiB");
  checkDepth(text);
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error &e) {
    throw invalid(std::string("tokenizer.json is not valid JSON: ") + e.what());
  }
  if (!root.is_object())
    throw invalid(std::string("tokenizer.json must be a JSON object, not ") + typeName(root));

  std::shared_ptr<Tokenizer> tok(new Tokenizer);
  Impl &m = *tok->impl_;
  try {
    // The model.
    const Json &model = field(root, "model", "the file");
    if (!model.is_object())
      throw invalid(std::string("tokenizer.json: model must be an object, not ") + typeName(model));
    const Json *modelType = optional(model, "type");
    if (modelType && asString(*modelType, "model.type") != "BPE")
      throw unsupported("tokenizer.json: model '" + modelType->get<std::string>() +
                        "' is not supported (kiln implements byte-level BPE)");
    if (const Json *dropout = optional(model, "dropout"))
      if (!dropout->is_number() || dropout->get<double>() != 0.0)
        throw unsupported("tokenizer.json: BPE dropout is not supported");
    for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (const Json *v = optional(model, key))
        if (!asString(*v, std::string("model.") + key).empty())
          throw unsupported(std::string("tokenizer.json: BPE ") + key + " is not supported");
    if (asBool(optional(model, "byte_fallback"), false, "model.byte_fallback"))
      throw unsupported("tokenizer.json: BPE byte_fallback is not supported (byte-level BPE needs none)");
    m.ignoreMerges = asBool(optional(model, "ignore_merges"), false, "model.ignore_merges");

    const Json &vocab = field(model, "vocab", "model");
    if (!vocab.is_object())
      throw invalid(std::string("tokenizer.json: model.vocab must be an object of token -> id, not ") +
                    typeName(vocab));
    int32_t maxId = -1;
    m.vocab.reserve(vocab.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      int32_t id = asId(it.value(), "model.vocab['" + it.key() + "']");
      m.vocab.emplace(it.key(), id);
      maxId = std::max(maxId, id);
    }
    std::vector<const AddedToken *> addedById;
    const Json *addedList = optional(root, "added_tokens");
    if (addedList && !addedList->is_array())
      throw invalid("tokenizer.json: added_tokens must be an array");
    if (addedList) {
      for (const Json &a : *addedList) {
        if (!a.is_object())
          throw invalid("tokenizer.json: added_tokens items must be objects");
        AddedToken t;
        t.content = asString(field(a, "content", "an added token"), "added_tokens[].content");
        t.id = asId(field(a, "id", "added token '" + t.content + "'"), "added token '" + t.content + "' id");
        if (t.content.empty())
          throw invalid("tokenizer.json: added token " + std::to_string(t.id) + " is empty");
        if (unicode::findInvalidUtf8(t.content) != std::string_view::npos)
          throw invalid("tokenizer.json: added token " + std::to_string(t.id) + " is not valid UTF-8");
        t.special = asBool(optional(a, "special"), false, "added_tokens[].special");
        t.lstrip = asBool(optional(a, "lstrip"), false, "added_tokens[].lstrip");
        t.rstrip = asBool(optional(a, "rstrip"), false, "added_tokens[].rstrip");
        t.singleWord = asBool(optional(a, "single_word"), false, "added_tokens[].single_word");
        maxId = std::max(maxId, t.id);
        m.added.push_back(std::move(t));
      }
    }
    // Memory follows the largest id: gaps without a token are allowed, but not unbounded ones.
    size_t size = size_t(maxId + 1);
    if (size > m.vocab.size() + m.added.size() + kMaxIdGap)
      throw invalid("tokenizer.json: the largest id, " + std::to_string(maxId) + ", leaves more than " +
                    std::to_string(kMaxIdGap) + " ids without a token (" +
                    std::to_string(m.vocab.size() + m.added.size()) + " tokens)");
    m.tokens.assign(size, std::string());
    m.present.assign(size, 0);
    m.special.assign(size, 0);
    for (auto &[token, id] : m.vocab) {
      if (m.present[id])
        throw invalid("tokenizer.json: tokens '" + m.tokens[id] + "' and '" + token +
                      "' have the same id " + std::to_string(id));
      m.present[id] = 1;
      m.tokens[id] = token;
    }
    for (size_t k = 0; k < m.added.size(); ++k) {
      const AddedToken &t = m.added[k];
      if (m.addedIds.count(t.content))
        throw invalid("tokenizer.json: added token '" + t.content + "' appears twice");
      m.addedIds.emplace(t.content, t.id);
      m.present[t.id] = 1;
      m.tokens[t.id] = t.content; // an added token wins over the vocabulary's entry for its id
      m.special[t.id] = t.special;
      m.trie.insert(t.content, int32_t(k));
    }

    // The byte-level alphabet and what each token decodes to (Hugging Face's ByteLevel decoder:
    // a token whose characters all belong to the alphabet becomes their bytes; another stays
    // as its UTF-8).
    std::array<uint32_t, 256> b2c = byteToChar();
    std::unordered_map<uint32_t, uint8_t> c2b;
    for (uint32_t b = 0; b < 256; ++b)
      c2b.emplace(b2c[b], uint8_t(b));
    m.bytes.assign(size, std::string());
    for (size_t id = 0; id < size; ++id) {
      if (!m.present[id])
        continue;
      const std::string &s = m.tokens[id];
      if (unicode::findInvalidUtf8(s) != std::string_view::npos)
        throw invalid("tokenizer.json: token " + std::to_string(id) + " is not valid UTF-8");
      std::string raw;
      bool mapped = true;
      for (size_t i = 0; i < s.size() && mapped;) {
        auto it = c2b.find(unicode::decodeUtf8(s, i));
        if (it == c2b.end())
          mapped = false;
        else
          raw.push_back(char(it->second));
      }
      m.bytes[id] = mapped ? std::move(raw) : s;
    }
    if (m.ignoreMerges) {
      m.vocabBytes.reset(m.vocab.size());
      for (auto &[token, id] : m.vocab)
        m.vocabBytes.insert(m.bytes[id], hashBytes(m.bytes[id]), &id, 1);
    }
    for (uint32_t b = 0; b < 256; ++b) {
      std::string ch;
      unicode::appendUtf8(ch, b2c[b]);
      auto it = m.vocab.find(ch);
      m.byteIds[b] = it == m.vocab.end() ? -1 : it->second;
    }
    if (const Json *unk = optional(model, "unk_token")) {
      auto it = m.vocab.find(asString(*unk, "model.unk_token"));
      if (it == m.vocab.end())
        throw invalid("tokenizer.json: model.unk_token '" + unk->get<std::string>() +
                      "' is not in the vocabulary");
      m.unkId = it->second;
    }

    // Merges: "a b" strings (tokenizers < 0.20) or ["a", "b"] pairs.
    const Json &merges = field(model, "merges", "model");
    if (!merges.is_array())
      throw invalid(std::string("tokenizer.json: model.merges must be an array, not ") + typeName(merges));
    m.merges.reserve(merges.size());
    std::string joined;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const Json &e = merges[rank];
      std::string_view a, b;
      if (e.is_string()) {
        const std::string &s = e.get_ref<const std::string &>();
        size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          throw invalid("tokenizer.json: merge " + std::to_string(rank) + " '" + s +
                        "' is not two tokens separated by one space");
        a = std::string_view(s).substr(0, sp);
        b = std::string_view(s).substr(sp + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        a = e[0].get_ref<const std::string &>();
        b = e[1].get_ref<const std::string &>();
      } else {
        throw invalid("tokenizer.json: merge " + std::to_string(rank) +
                      " must be \"a b\" or [\"a\", \"b\"]");
      }
      joined.assign(a);
      joined.append(b);
      auto ia = m.vocab.find(std::string(a)), ib = m.vocab.find(std::string(b)),
           ij = m.vocab.find(joined);
      if (ia == m.vocab.end() || ib == m.vocab.end() || ij == m.vocab.end())
        throw invalid("tokenizer.json: merge " + std::to_string(rank) + " ('" + std::string(a) +
                      "', '" + std::string(b) + "') uses a token that is not in the vocabulary");
      m.merges.insert(MergeMap::key(ia->second, ib->second), uint32_t(rank), ij->second);
    }

    // The pipeline around the model.
    parseNormalizer(optional(root, "normalizer"), m);
    bool sawByteLevel = false;
    parsePreTokenizer(optional(root, "pre_tokenizer"), m, sawByteLevel);
    if (!sawByteLevel)
      throw unsupported("tokenizer.json: no ByteLevel pre_tokenizer (kiln implements byte-level BPE)");
    std::unordered_map<std::string, int32_t> allTokens = m.vocab;
    for (auto &[content, id] : m.addedIds)
      allTokens[content] = id;
    parsePostProcessor(optional(root, "post_processor"), m, allTokens);
    for (int32_t id : m.prefixIds)
      if (!m.present[id])
        throw invalid("tokenizer.json: post_processor adds id " + std::to_string(id) + ", which has no token");
    for (int32_t id : m.suffixIds)
      if (!m.present[id])
        throw invalid("tokenizer.json: post_processor adds id " + std::to_string(id) + ", which has no token");
    parseDecoder(optional(root, "decoder"));
  } catch (const Json::exception &e) {
    throw invalid(std::string("tokenizer.json: ") + e.what());
  }
  return tok;
}

std::shared_ptr<const Tokenizer> Tokenizer::fromFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw TokenizerError(KILN_ERROR_IO, "cannot open tokenizer '" + path + "': " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw TokenizerError(KILN_ERROR_IO, "tokenizer '" + path + "' is not a regular file");
  if (uint64_t(st.st_size) > kMaxJsonBytes)
    throw invalid("tokenizer '" + path + "' is larger than " + std::to_string(kMaxJsonBytes >> 20) + " MiB");
  std::string text(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t r = ::read(fd, &text[got], text.size() - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      throw TokenizerError(KILN_ERROR_IO, "cannot read tokenizer '" + path + "': " +
                                              (r < 0 ? std::strerror(errno) : "file shrank"));
    got += size_t(r);
  }
  try {
    return fromJson(text);
  } catch (const TokenizerError &e) {
    throw TokenizerError(e.code(), path + ": " + e.what());
  }
}

} // namespace kiln

// ------------------------------------------------------------------------------------ C API

struct kiln_tokenizer {
  std::shared_ptr<const kiln::Tokenizer> tok;
};

struct kiln_tokenizer_stream {
  std::shared_ptr<const kiln::Tokenizer> tok;
  bool skipSpecial = false;
  kiln::unicode::Utf8Stream utf8;
  std::string bytes, text;
};

namespace {

using kiln::runtime::makeError;

template <class F> kiln_error *guarded(F &&f) {
  try {
    f();
    return nullptr;
  } catch (const kiln::TokenizerError &e) {
    return makeError(e.code(), e.what());
  } catch (const std::bad_alloc &) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return makeError(KILN_ERROR_INTERNAL, e.what());
  }
}

kiln_error *nullArgument(const char *fn, const char *arg) {
  return makeError(KILN_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + arg + " is NULL");
}

} // namespace

extern "C" {

kiln_error *kiln_tokenizer_load(const char *path, kiln_tokenizer **out_tokenizer) {
  if (!out_tokenizer)
    return nullArgument("kiln_tokenizer_load", "out_tokenizer");
  *out_tokenizer = nullptr;
  if (!path)
    return nullArgument("kiln_tokenizer_load", "path");
  return guarded([&] { *out_tokenizer = new kiln_tokenizer{kiln::Tokenizer::fromFile(path)}; });
}

kiln_error *kiln_tokenizer_load_from_memory(const char *json, size_t json_len,
                                            kiln_tokenizer **out_tokenizer) {
  if (!out_tokenizer)
    return nullArgument("kiln_tokenizer_load_from_memory", "out_tokenizer");
  *out_tokenizer = nullptr;
  if (!json && json_len)
    return nullArgument("kiln_tokenizer_load_from_memory", "json");
  return guarded([&] {
    *out_tokenizer = new kiln_tokenizer{kiln::Tokenizer::fromJson(std::string_view(json ? json : "", json_len))};
  });
}

void kiln_tokenizer_destroy(kiln_tokenizer *tokenizer) { delete tokenizer; }

kiln_error *kiln_tokenizer_encode(const kiln_tokenizer *tokenizer, const char *text,
                                  size_t text_len, uint32_t flags, int32_t **out_ids,
                                  size_t *out_count) {
  if (!out_ids || !out_count)
    return nullArgument("kiln_tokenizer_encode", !out_ids ? "out_ids" : "out_count");
  *out_ids = nullptr;
  *out_count = 0;
  if (!tokenizer)
    return nullArgument("kiln_tokenizer_encode", "tokenizer");
  if (!text && text_len)
    return nullArgument("kiln_tokenizer_encode", "text");
  return guarded([&] {
    std::vector<int32_t> ids = tokenizer->tok->encode(std::string_view(text ? text : "", text_len), flags);
    auto *buf = static_cast<int32_t *>(std::malloc(std::max<size_t>(1, ids.size()) * sizeof(int32_t)));
    if (!buf)
      throw std::bad_alloc();
    if (!ids.empty())
      std::memcpy(buf, ids.data(), ids.size() * sizeof(int32_t));
    *out_ids = buf;
    *out_count = ids.size();
  });
}

void kiln_tokenizer_ids_free(int32_t *ids) { std::free(ids); }

kiln_error *kiln_tokenizer_decode(const kiln_tokenizer *tokenizer, const int32_t *ids, size_t count,
                                  uint32_t flags, char **out_text, size_t *out_len) {
  if (!out_text || !out_len)
    return nullArgument("kiln_tokenizer_decode", !out_text ? "out_text" : "out_len");
  *out_text = nullptr;
  *out_len = 0;
  if (!tokenizer)
    return nullArgument("kiln_tokenizer_decode", "tokenizer");
  if (!ids && count)
    return nullArgument("kiln_tokenizer_decode", "ids");
  return guarded([&] {
    std::string text = tokenizer->tok->decode(ids, count, (flags & KILN_TOKENIZER_SKIP_SPECIAL) != 0);
    auto *buf = static_cast<char *>(std::malloc(text.size() + 1));
    if (!buf)
      throw std::bad_alloc();
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';
    *out_text = buf;
    *out_len = text.size();
  });
}

void kiln_tokenizer_text_free(char *text) { std::free(text); }

size_t kiln_tokenizer_vocab_size(const kiln_tokenizer *tokenizer) {
  return tokenizer ? tokenizer->tok->vocabSize() : 0;
}

int32_t kiln_tokenizer_token_to_id(const kiln_tokenizer *tokenizer, const char *token) {
  if (!tokenizer || !token)
    return -1;
  try {
    return tokenizer->tok->tokenToId(token);
  } catch (...) {
    return -1;
  }
}

const char *kiln_tokenizer_id_to_token(const kiln_tokenizer *tokenizer, int32_t id) {
  const std::string *s = tokenizer ? tokenizer->tok->idToToken(id) : nullptr;
  return s ? s->c_str() : nullptr;
}

int kiln_tokenizer_is_special(const kiln_tokenizer *tokenizer, int32_t id) {
  return tokenizer && tokenizer->tok->isSpecial(id) ? 1 : 0;
}

kiln_error *kiln_tokenizer_stream_create(const kiln_tokenizer *tokenizer, uint32_t flags,
                                         kiln_tokenizer_stream **out_stream) {
  if (!out_stream)
    return nullArgument("kiln_tokenizer_stream_create", "out_stream");
  *out_stream = nullptr;
  if (!tokenizer)
    return nullArgument("kiln_tokenizer_stream_create", "tokenizer");
  return guarded([&] {
    auto *s = new kiln_tokenizer_stream;
    s->tok = tokenizer->tok;
    s->skipSpecial = (flags & KILN_TOKENIZER_SKIP_SPECIAL) != 0;
    *out_stream = s;
  });
}

void kiln_tokenizer_stream_destroy(kiln_tokenizer_stream *stream) { delete stream; }

kiln_error *kiln_tokenizer_stream_push(kiln_tokenizer_stream *stream, int32_t id,
                                       const char **out_text, size_t *out_len) {
  if (!out_text || !out_len)
    return nullArgument("kiln_tokenizer_stream_push", !out_text ? "out_text" : "out_len");
  *out_text = nullptr;
  *out_len = 0;
  if (!stream)
    return nullArgument("kiln_tokenizer_stream_push", "stream");
  return guarded([&] {
    stream->text.clear();
    stream->bytes.clear();
    stream->tok->appendTokenBytes(id, stream->skipSpecial, stream->bytes);
    stream->utf8.push(stream->bytes.data(), stream->bytes.size(), stream->text);
    *out_text = stream->text.c_str();
    *out_len = stream->text.size();
  });
}

kiln_error *kiln_tokenizer_stream_flush(kiln_tokenizer_stream *stream, const char **out_text,
                                        size_t *out_len) {
  if (!out_text || !out_len)
    return nullArgument("kiln_tokenizer_stream_flush", !out_text ? "out_text" : "out_len");
  *out_text = nullptr;
  *out_len = 0;
  if (!stream)
    return nullArgument("kiln_tokenizer_stream_flush", "stream");
  return guarded([&] {
    stream->text.clear();
    stream->utf8.finish(stream->text);
    *out_text = stream->text.c_str();
    *out_len = stream->text.size();
  });
}

} // extern "C"
