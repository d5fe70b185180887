// The tokenizer's model, shared by its BPE and its tokenizer.json parser: vocabulary, merges, added
// tokens and the word cache (private to runtime/src/generate).
#ifndef KILN_RUNTIME_GENERATE_TOKENIZER_MODEL_H
#define KILN_RUNTIME_GENERATE_TOKENIZER_MODEL_H

#include "generate/tokenizer.h"

#include <array>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::tokenizer_model {

// Limits that keep a hostile tokenizer.json from exhausting memory or the stack.
constexpr size_t kMaxJsonBytes = size_t(1) << 30;
constexpr int kMaxJsonDepth = 64;
constexpr int64_t kMaxTokenId = (int64_t(1) << 24) - 1;
constexpr size_t kMaxIdGap = 1 << 16;

inline TokenizerError invalid(const std::string &message) {
  return TokenizerError(KILN_ERROR_INVALID_ARGUMENT, message);
}
inline TokenizerError unsupported(const std::string &message) {
  return TokenizerError(KILN_ERROR_INCOMPATIBLE, message);
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to U+0100 and up.
inline std::array<uint32_t, 256> byteToChar() {
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

inline uint64_t hashBytes(std::string_view s) {
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
  // Matched in the normalized text, as its normalized content (Hugging Face's "normalized": a
  // Llama 2 Prepend normalizer makes "<s>" "▁<s>" there); otherwise in the raw text, first.
  bool normalized = false;
};

// Where encode cuts text at added tokens: [begin, end) is text when token < 0, else the match of
// added token `token` (an index into Impl::added).
struct AddedSegment {
  size_t begin, end;
  int32_t token;
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

// A normalizer step (applied in order to each section of text between added tokens).
struct NormalizerStep {
  enum Kind { kNfc, kPrepend, kReplace, kStrip } kind;
  std::string pattern, content; // kPrepend: content; kReplace: pattern -> content
  bool left = false, right = false; // kStrip
};

// How a Split keeps its matches (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext };

// A pre-tokenizer step before the model: a split regex, a literal split, or Metaspace.
struct PreTokenizerStep {
  enum Kind { kRegex, kLiteral, kMetaspace } kind;
  SplitPattern pattern = SplitPattern::kGpt2; // kRegex (behavior Isolated)
  std::string literal;                        // kLiteral: the delimiter; kMetaspace: the replacement
  SplitBehavior behavior = SplitBehavior::kIsolated;
  enum Prepend { kNever, kFirst, kAlways } prepend = kAlways; // kMetaspace
  bool split = true;                                         // kMetaspace
};

// Splits `text` at each non-overlapping occurrence of `delimiter`, as Hugging Face's Split does
// with a String pattern; pieces are byte ranges [begin, end), empty ones left out.
void splitLiteral(std::string_view text, std::string_view delimiter, SplitBehavior behavior,
                  std::vector<std::pair<size_t, size_t>> &pieces);
// `text` with every occurrence of `pattern` replaced by `content`.
std::string replaceAll(std::string_view text, std::string_view pattern, std::string_view content);
// Applies the steps in order; returns false (and leaves `out` alone) when none changes `text`.
bool normalize(const std::vector<NormalizerStep> &steps, std::string_view text, std::string &out);

} // namespace kiln::tokenizer_model

namespace kiln {

using namespace tokenizer_model;

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
  // byteLevel: the model's alphabet is GPT-2's 256 byte characters (ByteLevel pre-tokenizer).
  // Otherwise (SentencePiece-style BPE) it starts from code points: charIds, then <0xNN> byte
  // tokens (byteFallback), then unk (fuseUnk merges a run of unknown characters into one).
  bool byteLevel = true;
  bool byteFallback = false, fuseUnk = false;
  std::unordered_map<uint32_t, int32_t> charIds; // single code point -> id (non-byte-level)
  std::array<int32_t, 256> fallbackIds{};        // byte -> id of <0xNN> (-1 if absent)
  // SentencePiece-style without a splitting pre-tokenizer (Llama 2, Gemma 1/2), a whole stretch of
  // text is one word: BPE over megabytes, no word cache. When no vocabulary token has "▁" right
  // after another character (SentencePiece's split_by_whitespace vocabularies; checked at load), no
  // merge can join the two sides of such a place, so cutting words there changes no id and lets the
  // pieces be cached. Off with ignore_merges (a whole-word look-up sees the uncut word).
  bool cutBeforeSpaceRuns = false;

  // Added tokens.
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int32_t> addedIds;
  Trie trie;           // the added tokens matched in the raw text
  Trie normalizedTrie; // those matched after normalization (normalized content)
  bool hasNormalizedAdded = false;

  // Pipeline.
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> preTokenizers; // before ByteLevel (if any), in order
  bool byteLevelRegex = false;      // ByteLevel's own GPT-2 split (use_regex)
  bool addPrefixSpace = false;
  std::vector<int32_t> prefixIds, suffixIds; // post-processor
  // Decoder rules that depend on the position in the decoded text (bytes[] holds the rest):
  // Strip after Fuse takes up to stripStart leading `stripContent` off the whole text; Metaspace
  // (prepend_scheme first/always) drops every `firstTokenDrop` from the first token.
  size_t stripStart = 0;
  std::string stripContent, firstTokenDrop;

  WordCache cache;

  void bpe(std::string_view word, std::vector<int32_t> &out) const;
  void encodeWord(std::string_view word, std::vector<int32_t> &out) const;
  void encodeCodePointWord(std::string_view word, std::vector<int32_t> &out) const;
  void initialSymbols(std::string_view word, std::vector<int32_t> &ids) const;
  void encodePiece(size_t stage, std::string_view piece, bool atStart, std::vector<int32_t> &out) const;
  void encodeSection(std::string_view section, bool atStart, bool parseSpecial, std::vector<int32_t> &out) const;
  void findAdded(const Trie &t, std::string_view text, bool parseSpecial, std::vector<AddedSegment> &segments) const;
  bool wordBoundary(std::string_view text, size_t begin, size_t end) const;
};

} // namespace kiln

#endif
