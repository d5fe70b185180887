// Encoding and decoding with a loaded tokenizer: added tokens, pre-tokenization, BPE merges by rank.
#include "generate/tokenizer_model.h"

#include <algorithm>

namespace kiln {

using unicode::kLetter;
using unicode::kNumber;
using unicode::kSpace;

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
  thread_local std::vector<int32_t> initial;
  symbols.clear();
  heap.clear();
  initial.clear();
  initialSymbols(word, initial);
  for (int32_t id : initial) {
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
    initial = std::vector<int32_t>();
  }
}

// The word's symbols before any merge. Byte-level: one per byte. Otherwise, as Hugging Face's BPE:
// one per code point in the vocabulary; an unknown one becomes its <0xNN> byte tokens (byte_fallback,
// when all exist) or unk, a run of unks one unk with fuse_unk (a pending unk is written when the
// next known character comes, after any byte tokens in between, exactly as Hugging Face does).
void Tokenizer::Impl::initialSymbols(std::string_view word, std::vector<int32_t> &ids) const {
  if (byteLevel) {
    for (char ch : word) {
      int32_t id = byteIds[uint8_t(ch)];
      if (id < 0)
        id = unkId; // a byte the vocabulary lacks: unk, or dropped without one (as in tokenizers)
      if (id >= 0)
        ids.push_back(id);
    }
    return;
  }
  bool pendingUnk = false;
  for (size_t i = 0; i < word.size();) {
    size_t begin = i;
    uint32_t cp = unicode::decodeUtf8(word, i);
    int32_t id = cp < 0x80 ? byteIds[cp] : -1;
    if (id < 0 && cp >= 0x80) {
      auto it = charIds.find(cp);
      if (it != charIds.end())
        id = it->second;
    }
    if (id >= 0) {
      if (pendingUnk)
        ids.push_back(unkId);
      pendingUnk = false;
      ids.push_back(id);
      continue;
    }
    if (byteFallback) {
      bool all = true;
      for (size_t k = begin; k < i && all; ++k)
        all = fallbackIds[uint8_t(word[k])] >= 0;
      if (all) {
        for (size_t k = begin; k < i; ++k)
          ids.push_back(fallbackIds[uint8_t(word[k])]);
        continue;
      }
    }
    if (unkId >= 0) {
      if (pendingUnk && !fuseUnk)
        ids.push_back(unkId);
      pendingUnk = true;
    }
  }
  if (pendingUnk)
    ids.push_back(unkId);
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

// A SentencePiece-style word, cut before each run of "▁" that follows another character when the
// vocabulary allows it (cutBeforeSpaceRuns: no merge joins across such a cut, so the ids are those of
// the uncut word).
void Tokenizer::Impl::encodeCodePointWord(std::string_view word, std::vector<int32_t> &out) const {
  if (!cutBeforeSpaceRuns) {
    encodeWord(word, out);
    return;
  }
  static constexpr std::string_view kSpace = "\u2581";
  size_t begin = 0;
  for (size_t at = word.find(kSpace, 1); at != std::string_view::npos; at = word.find(kSpace, at + kSpace.size())) {
    if (at - begin >= kSpace.size() && word.substr(at - kSpace.size(), kSpace.size()) == kSpace)
      continue; // inside a run of "▁"
    if (at > begin) {
      encodeWord(word.substr(begin, at - begin), out);
      begin = at;
    }
  }
  encodeWord(word.substr(begin), out);
}

void Tokenizer::Impl::encodePiece(size_t stage, std::string_view piece, bool atStart,
                                  std::vector<int32_t> &out) const {
  if (piece.empty())
    return;
  if (stage < preTokenizers.size()) {
    const PreTokenizerStep &step = preTokenizers[stage];
    std::vector<std::pair<size_t, size_t>> ranges;
    std::string metaspaced;
    switch (step.kind) {
    case PreTokenizerStep::kRegex:
      splitText(step.pattern, piece, ranges);
      break;
    case PreTokenizerStep::kLiteral:
      splitLiteral(piece, step.literal, step.behavior, ranges);
      break;
    case PreTokenizerStep::kMetaspace: {
      // Spaces become the replacement; prepend it (always, or for the text's first section only)
      // unless already there; then split before each replacement (MergedWithNext).
      bool prepend = step.prepend == PreTokenizerStep::kAlways ||
                     (step.prepend == PreTokenizerStep::kFirst && atStart);
      metaspaced = replaceAll(piece, " ", step.literal);
      if (prepend && std::string_view(metaspaced).substr(0, step.literal.size()) != step.literal)
        metaspaced.insert(0, step.literal);
      piece = metaspaced;
      if (step.split)
        splitLiteral(piece, step.literal, SplitBehavior::kMergedWithNext, ranges);
      else
        ranges.emplace_back(0, piece.size());
      break;
    }
    }
    for (auto &r : ranges)
      encodePiece(stage + 1, piece.substr(r.first, r.second - r.first), atStart && r.first == 0, out);
    return;
  }
  if (!byteLevel) {
    encodeCodePointWord(piece, out);
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

// A stretch of text between added tokens found in the raw text: normalized, then cut at the added
// tokens matched after normalization (if any), each remaining piece pre-tokenized and encoded.
// `atStart`: the stretch begins the text (Metaspace's prepend_scheme first).
void Tokenizer::Impl::encodeSection(std::string_view section, bool atStart, bool parseSpecial,
                                    std::vector<int32_t> &out) const {
  if (section.empty())
    return;
  std::string normalized;
  if (!normalizers.empty() && normalize(normalizers, section, normalized))
    section = normalized;
  if (!hasNormalizedAdded) {
    encodePiece(0, section, atStart, out);
    return;
  }
  std::vector<AddedSegment> segments;
  findAdded(normalizedTrie, section, parseSpecial, segments);
  for (const AddedSegment &g : segments) {
    if (g.token >= 0)
      out.push_back(added[g.token].id);
    else
      encodePiece(0, section.substr(g.begin, g.end - g.begin), atStart && g.begin == 0, out);
  }
}

// Cuts `text` at the added tokens of `t`: leftmost-longest, non-overlapping matches (as Hugging
// Face's Aho-Corasick), widened by lstrip/rstrip over White_Space. A match that is not taken (a
// special token without PARSE_SPECIAL, a single_word token inside a word) stays text, and the
// search goes on after it, as Hugging Face's does.
void Tokenizer::Impl::findAdded(const Trie &t, std::string_view text, bool parseSpecial,
                                std::vector<AddedSegment> &segments) const {
  size_t sectionStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!t.first[uint8_t(text[i])])
      continue;
    int32_t best = -1;
    size_t bestEnd = 0;
    uint32_t node = 0;
    for (size_t j = i; j < text.size(); ++j) {
      uint32_t child = 0;
      for (auto &e : t.nodes[node].next)
        if (e.first == uint8_t(text[j]))
          child = e.second;
      if (!child)
        break;
      node = child;
      if (t.nodes[node].token >= 0) {
        best = t.nodes[node].token;
        bestEnd = j + 1;
      }
    }
    if (best < 0)
      continue;
    const AddedToken &tok = added[best];
    if ((tok.special && !parseSpecial) || (tok.singleWord && !wordBoundary(text, i, bestEnd))) {
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
    if (begin > sectionStart)
      segments.push_back(AddedSegment{sectionStart, begin, -1});
    segments.push_back(AddedSegment{begin, end, best});
    sectionStart = end;
    i = end - 1;
  }
  if (sectionStart < text.size())
    segments.push_back(AddedSegment{sectionStart, text.size(), -1});
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
  if (m.added.empty() || m.trie.nodes.size() == 1) {
    m.encodeSection(text, true, parseSpecial, out);
  } else {
    std::vector<AddedSegment> segments;
    m.findAdded(m.trie, text, parseSpecial, segments);
    for (const AddedSegment &g : segments) {
      if (g.token >= 0)
        out.push_back(m.added[g.token].id);
      else
        m.encodeSection(text.substr(g.begin, g.end - g.begin), g.begin == 0, parseSpecial, out);
    }
  }
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

void Tokenizer::appendDecoded(int32_t id, bool skipSpecial, DecodeState &state, std::string &out) const {
  const Impl &m = *impl_;
  size_t start = out.size();
  appendTokenBytes(id, skipSpecial, out);
  if (out.size() == start)
    return; // a skipped special token is not the first token
  if (state.first && !m.firstTokenDrop.empty()) {
    std::string token = out.substr(start);
    out.resize(start);
    out.append(replaceAll(token, m.firstTokenDrop, ""));
  }
  state.first = false;
  // Strip (after Fuse): up to stripStart leading stripContent off the whole text.
  size_t pos = start;
  while (state.stripped < m.stripStart && !state.stripDone && pos < out.size()) {
    if (out.compare(pos, m.stripContent.size(), m.stripContent) == 0) {
      pos += m.stripContent.size();
      ++state.stripped;
    } else {
      state.stripDone = true;
    }
  }
  out.erase(start, pos - start);
}

std::string Tokenizer::decode(const int32_t *ids, size_t count, bool skipSpecial) const {
  std::string raw;
  DecodeState state;
  for (size_t i = 0; i < count; ++i)
    appendDecoded(ids[i], skipSpecial, state, raw);
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

} // namespace kiln
