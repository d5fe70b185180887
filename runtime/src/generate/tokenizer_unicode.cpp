// The tokenizer's Unicode pieces: category tables (\p{L}, \p{N}, White_Space), UTF-8 decoding and
// validation, and canonical composition (NFC).
#include "generate/tokenizer.h"

#include <algorithm>
#include <array>
#include <cstring>

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

} // namespace

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

} // namespace kiln
