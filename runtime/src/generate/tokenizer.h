// kiln's byte-level BPE tokenizer (Hugging Face tokenizer.json) behind kiln/tokenizer.h, and the
// Unicode and UTF-8 pieces it is built from (exposed here for the unit tests).
#ifndef KILN_RUNTIME_TOKENIZER_H
#define KILN_RUNTIME_TOKENIZER_H

#include "kiln/kiln.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

// Thrown by the tokenizer's C++ interface; the C API turns it into a kiln_error with this code.
class TokenizerError : public std::runtime_error {
public:
  TokenizerError(kiln_error_code code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  kiln_error_code code() const { return code_; }

private:
  kiln_error_code code_;
};

namespace unicode {

// The Unicode version of the tables (runtime/src/unicode_tables.inc).
const char *version();

enum Category : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };
// \p{L}, \p{N}, White_Space (\s), or anything else. Code points above U+10FFFF are kOther.
Category category(uint32_t cp);

// Decodes the code point at text[i] (text must be valid UTF-8) and advances i.
uint32_t decodeUtf8(std::string_view text, size_t &i);
void appendUtf8(std::string &out, uint32_t cp);

// Offset of the first byte that is not part of valid UTF-8 (overlong forms, surrogates and code
// points above U+10FFFF are invalid), or npos when all of `text` is valid.
size_t findInvalidUtf8(std::string_view text);
// `text` with each maximal invalid subsequence replaced by U+FFFD (WHATWG / Unicode "best practice").
std::string replaceInvalidUtf8(std::string_view text);

// Incremental UTF-8 validation with the same replacement policy: push bytes, get valid UTF-8 out.
// Bytes of an incomplete but so far valid sequence are held back until it completes or fails.
class Utf8Stream {
public:
  void push(const char *bytes, size_t n, std::string &out);
  // Emits U+FFFD for a held-back incomplete sequence and resets.
  void finish(std::string &out);
  bool pending() const { return needed_ != 0; }

private:
  void pushByte(uint8_t b, std::string &out);
  char held_[4] = {};
  uint8_t heldCount_ = 0, needed_ = 0, lower_ = 0x80, upper_ = 0xBF;
};

// Canonical composition (NFC) of valid UTF-8. Returns false when the quick check proves `text` is
// in NFC (`out` untouched); otherwise writes the normalized text to `out` and returns true.
bool toNfc(std::string_view text, std::string &out);

} // namespace unicode

// The split regexes of the pre-tokenizers kiln implements, as hand-written matchers.
enum class SplitPattern {
  kGpt2,   // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kLlama3, // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen2,  // the same with \p{N} (one digit per piece)
};
// The pattern whose regex source (as written in tokenizer.json, JSON-decoded) is `regex`, if known.
bool splitPatternFromRegex(std::string_view regex, SplitPattern &out);
// Splits valid UTF-8 `text` into the pieces the regex matches ("Isolated": consecutive pieces that
// cover the text), as byte ranges [begin, end).
void splitText(SplitPattern pattern, std::string_view text,
               std::vector<std::pair<size_t, size_t>> &pieces);

class Tokenizer {
public:
  enum EncodeFlags : uint32_t { kAddSpecial = 1, kParseSpecial = 2, kReplaceInvalidUtf8 = 4 };

  // Parses tokenizer.json text. Throws TokenizerError.
  static std::shared_ptr<const Tokenizer> fromJson(std::string_view json);
  static std::shared_ptr<const Tokenizer> fromFile(const std::string &path);
  ~Tokenizer();
  Tokenizer(const Tokenizer &) = delete;
  Tokenizer &operator=(const Tokenizer &) = delete;

  std::vector<int32_t> encode(std::string_view text, uint32_t flags) const;
  // Decoded text (lossy UTF-8, like Hugging Face's ByteLevel decoder). Throws on an unknown id.
  std::string decode(const int32_t *ids, size_t count, bool skipSpecial) const;
  // Appends the raw bytes of token `id` (empty for a skipped special token). Throws on an unknown id.
  void appendTokenBytes(int32_t id, bool skipSpecial, std::string &out) const;
  // What decoding carries from token to token: the decoders' rules for the text's start (Strip
  // after Fuse, Metaspace's first token).
  struct DecodeState {
    bool first = true;
    bool stripDone = false;
    size_t stripped = 0;
  };
  // appendTokenBytes with those rules applied; decode() is this over all ids, then lossy UTF-8.
  void appendDecoded(int32_t id, bool skipSpecial, DecodeState &state, std::string &out) const;

  size_t vocabSize() const;
  int32_t tokenToId(std::string_view token) const; // -1 if none
  const std::string *idToToken(int32_t id) const;   // nullptr if none
  bool isSpecial(int32_t id) const;

  struct Impl;

private:
  Tokenizer();
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln

#endif
