// The pre-tokenizers' split regexes (GPT-2, Llama 3, Qwen 2) as hand-written matchers over code points.
#include "generate/tokenizer.h"

#include <array>
#include <cstring>

namespace kiln {

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

} // namespace kiln
