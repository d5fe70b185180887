// Hugging Face tokenizer.json (byte-level BPE) into the tokenizer's model. The semantics follow the Rust
// `tokenizers` library (what `tokenizer.json` means); the tests compare the ids with the files' own
// JavaScript encoders and with that library.
#include "generate/tokenizer_model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <new>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {

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

// Exactly one code point (the JSON parser has checked the text is valid UTF-8).
bool oneCharacter(const std::string &s) {
  size_t i = 0;
  return !s.empty() && (unicode::decodeUtf8(s, i), i == s.size());
}

// A Replace normalizer's or decoder's pattern: {"String": s} (a {"Regex": r} is refused).
const std::string &stringPattern(const Json &j, const std::string &what) {
  const Json &pattern = field(j, "pattern", what);
  if (!pattern.is_object())
    throw invalid("tokenizer.json: " + what + ".pattern must be an object");
  const Json *str = optional(pattern, "String");
  if (!str)
    throw unsupported("tokenizer.json: " + what + " with a Regex pattern is not supported (only String)");
  const std::string &s = asString(*str, what + ".pattern.String");
  if (s.empty())
    throw invalid("tokenizer.json: " + what + ".pattern.String is empty");
  return s;
}

void parseNormalizer(const Json *j, Tokenizer::Impl &m) {
  if (!j)
    return;
  const std::string &type = typeOf(*j, "normalizer");
  NormalizerStep step{NormalizerStep::kNfc, {}, {}};
  if (type == "NFC") {
    step.kind = NormalizerStep::kNfc;
  } else if (type == "Prepend") {
    step.kind = NormalizerStep::kPrepend;
    step.content = asString(field(*j, "prepend", "normalizer Prepend"), "Prepend.prepend");
  } else if (type == "Replace") {
    step.kind = NormalizerStep::kReplace;
    step.pattern = stringPattern(*j, "normalizer Replace");
    step.content = asString(field(*j, "content", "normalizer Replace"), "Replace.content");
  } else if (type == "Strip") {
    step.kind = NormalizerStep::kStrip;
    step.left = asBool(optional(*j, "strip_left"), true, "Strip.strip_left");
    step.right = asBool(optional(*j, "strip_right"), true, "Strip.strip_right");
  } else if (type == "Sequence") {
    const Json &list = field(*j, "normalizers", "normalizer");
    if (!list.is_array())
      throw invalid("tokenizer.json: normalizer.normalizers must be an array");
    for (const Json &n : list)
      parseNormalizer(&n, m);
    return;
  } else {
    throw unsupported("tokenizer.json: normalizer '" + type +
                      "' is not supported (kiln implements NFC, Prepend, Replace, Strip and Sequence)");
  }
  m.normalizers.push_back(std::move(step));
}

void parsePreTokenizer(const Json *j, Tokenizer::Impl &m, bool &sawByteLevel) {
  // Split, Metaspace, Sequence of them, ending with ByteLevel for a byte-level model.
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
    PreTokenizerStep step{PreTokenizerStep::kRegex};
    const Json *behavior = optional(*j, "behavior");
    std::string how = behavior ? asString(*behavior, "Split.behavior") : "Isolated";
    if (how == "Isolated")
      step.behavior = SplitBehavior::kIsolated;
    else if (how == "Removed")
      step.behavior = SplitBehavior::kRemoved;
    else if (how == "MergedWithPrevious")
      step.behavior = SplitBehavior::kMergedWithPrevious;
    else if (how == "MergedWithNext")
      step.behavior = SplitBehavior::kMergedWithNext;
    else
      throw unsupported("tokenizer.json: Split behavior '" + how + "' is not supported");
    if (asBool(optional(*j, "invert"), false, "Split.invert"))
      throw unsupported("tokenizer.json: Split with invert=true is not supported");
    if (const Json *literal = optional(pattern, "String")) {
      step.kind = PreTokenizerStep::kLiteral;
      step.literal = asString(*literal, "Split.pattern.String");
      if (step.literal.empty())
        throw invalid("tokenizer.json: Split.pattern.String is empty");
    } else {
      const Json *regex = optional(pattern, "Regex");
      if (!regex)
        throw invalid("tokenizer.json: Split.pattern must have a String or a Regex");
      const std::string &source = asString(*regex, "Split.pattern.Regex");
      if (!splitPatternFromRegex(source, step.pattern))
        throw unsupported("tokenizer.json: unknown Split regex '" + source +
                          "' (kiln knows the GPT-2, Llama 3 and Qwen 2 patterns)");
      if (step.behavior != SplitBehavior::kIsolated)
        throw unsupported("tokenizer.json: Split behavior '" + how +
                          "' is not supported with a Regex (only Isolated)");
    }
    m.preTokenizers.push_back(std::move(step));
  } else if (type == "Metaspace") {
    PreTokenizerStep step{PreTokenizerStep::kMetaspace};
    const Json *replacement = optional(*j, "replacement");
    step.literal = replacement ? asString(*replacement, "Metaspace.replacement") : "\u2581";
    // One character, as Hugging Face reads it (a Rust char); "" or "ab" would not load there.
    if (!oneCharacter(step.literal))
      throw invalid("tokenizer.json: Metaspace.replacement must be one character");
    if (const Json *scheme = optional(*j, "prepend_scheme")) {
      const std::string &v = asString(*scheme, "Metaspace.prepend_scheme");
      if (v == "always")
        step.prepend = PreTokenizerStep::kAlways;
      else if (v == "first")
        step.prepend = PreTokenizerStep::kFirst;
      else if (v == "never")
        step.prepend = PreTokenizerStep::kNever;
      else
        throw invalid("tokenizer.json: Metaspace.prepend_scheme must be always, first or never, not '" + v + "'");
    } else { // files from tokenizers < 0.14
      step.prepend = asBool(optional(*j, "add_prefix_space"), true, "Metaspace.add_prefix_space")
                         ? PreTokenizerStep::kAlways
                         : PreTokenizerStep::kNever;
    }
    step.split = asBool(optional(*j, "split"), true, "Metaspace.split");
    m.preTokenizers.push_back(std::move(step));
  } else if (type == "ByteLevel") {
    sawByteLevel = true;
    m.addPrefixSpace = asBool(optional(*j, "add_prefix_space"), true, "ByteLevel.add_prefix_space");
    m.byteLevelRegex = asBool(optional(*j, "use_regex"), true, "ByteLevel.use_regex");
  } else {
    throw unsupported("tokenizer.json: pre_tokenizer '" + type +
                      "' is not supported (kiln implements Split, Metaspace, ByteLevel and Sequence)");
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

// A decoder as steps applied to each token's text in order (Hugging Face's decode_chain), plus the
// rules for the start of the text that Impl keeps (Strip after Fuse, Metaspace's first token).
struct DecoderStep {
  enum Kind { kByteLevel, kReplace, kByteFallback, kStrip, kMetaspace } kind;
  std::string pattern, content; // kReplace; kStrip: content; kMetaspace: pattern = replacement
  size_t start = 0, stop = 0;   // kStrip
};

void parseDecoder(const Json *j, std::vector<DecoderStep> &steps, bool &fused, Tokenizer::Impl &m) {
  if (!j)
    throw unsupported("tokenizer.json has no decoder (kiln implements ByteLevel, Replace, ByteFallback, "
                      "Fuse, Strip and Metaspace)");
  const std::string &type = typeOf(*j, "decoder");
  if (type == "Sequence") {
    const Json &list = field(*j, "decoders", "decoder");
    if (!list.is_array() || list.empty())
      throw invalid("tokenizer.json: decoder.decoders must be a non-empty array");
    for (const Json &d : list)
      parseDecoder(&d, steps, fused, m);
  } else if (type == "ByteLevel") {
    steps.push_back(DecoderStep{DecoderStep::kByteLevel});
  } else if (type == "Replace") {
    DecoderStep s{DecoderStep::kReplace};
    s.pattern = stringPattern(*j, "decoder Replace");
    s.content = asString(field(*j, "content", "decoder Replace"), "Replace.content");
    steps.push_back(std::move(s));
  } else if (type == "ByteFallback") {
    steps.push_back(DecoderStep{DecoderStep::kByteFallback});
  } else if (type == "Fuse") {
    fused = true;
  } else if (type == "Strip") {
    DecoderStep s{DecoderStep::kStrip};
    s.content = asString(field(*j, "content", "decoder Strip"), "Strip.content");
    if (!oneCharacter(s.content))
      throw invalid("tokenizer.json: decoder Strip.content must be one character");
    for (auto [key, dst] : {std::pair<const char *, size_t *>{"start", &s.start}, {"stop", &s.stop}}) {
      const Json *v = optional(*j, key);
      if (v && (!v->is_number_unsigned() || v->get<uint64_t>() > 1024))
        throw invalid(std::string("tokenizer.json: decoder Strip.") + key + " must be a count up to 1024");
      *dst = v ? size_t(v->get<uint64_t>()) : 0;
    }
    if (fused) { // on the whole text: its start only (a stream cannot take back its end)
      if (s.stop != 0)
        throw unsupported("tokenizer.json: decoder Strip with stop > 0 after Fuse is not supported");
      if (m.stripStart != 0 && s.start != 0)
        throw unsupported("tokenizer.json: more than one decoder Strip after Fuse is not supported");
      if (s.start != 0) {
        m.stripStart = s.start;
        m.stripContent = s.content;
      }
    } else {
      steps.push_back(std::move(s));
    }
  } else if (type == "Metaspace") {
    DecoderStep s{DecoderStep::kMetaspace};
    const Json *replacement = optional(*j, "replacement");
    s.pattern = replacement ? asString(*replacement, "decoder Metaspace.replacement") : "\u2581";
    if (!oneCharacter(s.pattern))
      throw invalid("tokenizer.json: decoder Metaspace.replacement must be one character");
    bool prepend;
    if (const Json *scheme = optional(*j, "prepend_scheme"))
      prepend = asString(*scheme, "decoder Metaspace.prepend_scheme") != "never";
    else
      prepend = asBool(optional(*j, "add_prefix_space"), true, "decoder Metaspace.add_prefix_space");
    if (fused)
      throw unsupported("tokenizer.json: decoder Metaspace after Fuse is not supported");
    if (prepend)
      m.firstTokenDrop = " ";
    steps.push_back(std::move(s));
  } else {
    throw unsupported("tokenizer.json: decoder '" + type +
                      "' is not supported (kiln implements ByteLevel, Replace, ByteFallback, Fuse, "
                      "Strip, Metaspace and Sequence)");
  }
}

// What token `s` decodes to through the per-token steps.
std::string decodeToken(const std::vector<DecoderStep> &steps, const std::string &s,
                        const std::unordered_map<uint32_t, uint8_t> &c2b) {
  std::string t = s;
  for (const DecoderStep &d : steps) {
    switch (d.kind) {
    case DecoderStep::kByteLevel: {
      // A token whose characters all belong to GPT-2's alphabet becomes their bytes; another
      // stays as its UTF-8 (Hugging Face's ByteLevel decoder).
      std::string raw;
      bool mapped = unicode::findInvalidUtf8(t) == std::string::npos;
      for (size_t i = 0; i < t.size() && mapped;) {
        auto it = c2b.find(unicode::decodeUtf8(t, i));
        if (it == c2b.end())
          mapped = false;
        else
          raw.push_back(char(it->second));
      }
      if (mapped)
        t = std::move(raw);
      break;
    }
    case DecoderStep::kReplace:
      t = replaceAll(t, d.pattern, d.content);
      break;
    case DecoderStep::kMetaspace:
      t = replaceAll(t, d.pattern, " ");
      break;
    case DecoderStep::kByteFallback: {
      auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && hex(t[3]) && hex(t[4]) && t[5] == '>')
        t.assign(1, char(std::stoi(t.substr(3, 2), nullptr, 16)));
      break;
    }
    case DecoderStep::kStrip: {
      size_t begin = 0, end = t.size();
      for (size_t k = 0; k < d.start && t.compare(begin, d.content.size(), d.content) == 0; ++k)
        begin += d.content.size();
      for (size_t k = 0; k < d.stop && end >= begin + d.content.size() &&
                         t.compare(end - d.content.size(), d.content.size(), d.content) == 0;
           ++k)
        end -= d.content.size();
      t = t.substr(begin, end - begin);
      break;
    }
    }
  }
  return t;
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
      throw unsupported("tokenizer.json: tokenizer model " + modelType->get<std::string>() +
                        " is not supported (only BPE)");
    if (const Json *dropout = optional(model, "dropout"))
      if (!dropout->is_number() || dropout->get<double>() != 0.0)
        throw unsupported("tokenizer.json: BPE dropout is not supported");
    for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (const Json *v = optional(model, key))
        if (!asString(*v, std::string("model.") + key).empty())
          throw unsupported(std::string("tokenizer.json: BPE ") + key + " is not supported");
    m.byteFallback = asBool(optional(model, "byte_fallback"), false, "model.byte_fallback");
    m.fuseUnk = asBool(optional(model, "fuse_unk"), false, "model.fuse_unk");
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
        t.normalized = asBool(optional(a, "normalized"), false, "added_tokens[].normalized");
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
    }

    // The pipeline around the model: ByteLevel pre-tokenizer = byte-level BPE, else
    // SentencePiece-style BPE over code points.
    parseNormalizer(optional(root, "normalizer"), m);
    // Added tokens: raw ones are found in the text first; "normalized" ones (with a normalizer
    // that is there) in each normalized stretch between them, by their normalized content.
    for (size_t k = 0; k < m.added.size(); ++k) {
      AddedToken &t = m.added[k];
      std::string content;
      if (t.normalized && !m.normalizers.empty()) {
        if (!normalize(m.normalizers, t.content, content))
          content = t.content;
        if (!content.empty()) { // (a Strip normalizer can leave nothing to match)
          m.normalizedTrie.insert(content, int32_t(k));
          m.hasNormalizedAdded = true;
        }
      } else {
        t.normalized = false;
        m.trie.insert(t.content, int32_t(k));
      }
    }
    bool sawByteLevel = false;
    parsePreTokenizer(optional(root, "pre_tokenizer"), m, sawByteLevel);
    m.byteLevel = sawByteLevel;
    std::vector<DecoderStep> decoder;
    bool fused = false;
    parseDecoder(optional(root, "decoder"), decoder, fused, m);
    bool byteLevelDecoder = std::any_of(decoder.begin(), decoder.end(),
                                        [](const DecoderStep &d) { return d.kind == DecoderStep::kByteLevel; });
    if (byteLevelDecoder && !m.byteLevel)
      throw unsupported("tokenizer.json: ByteLevel decoder but no ByteLevel pre_tokenizer");
    if (m.byteLevel && !byteLevelDecoder)
      throw unsupported("tokenizer.json: ByteLevel pre_tokenizer without the ByteLevel decoder");

    // What each token decodes to.
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
      m.bytes[id] = decodeToken(decoder, s, c2b);
    }
    if (m.ignoreMerges) {
      m.vocabBytes.reset(m.vocab.size());
      for (auto &[token, id] : m.vocab) {
        // The word the model sees: raw bytes (byte-level) or the token itself.
        const std::string &key = m.byteLevel ? m.bytes[id] : token;
        m.vocabBytes.insert(key, hashBytes(key), &id, 1);
      }
    }
    for (uint32_t b = 0; b < 256; ++b) {
      std::string ch;
      if (m.byteLevel)
        unicode::appendUtf8(ch, b2c[b]);
      else if (b < 0x80)
        ch.push_back(char(b));
      auto it = ch.empty() ? m.vocab.end() : m.vocab.find(ch);
      m.byteIds[b] = it == m.vocab.end() ? -1 : it->second;
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto fb = m.vocab.find(name);
      m.fallbackIds[b] = fb == m.vocab.end() ? -1 : fb->second;
    }
    if (!m.byteLevel) {
      for (auto &[token, id] : m.vocab) {
        size_t i = 0;
        uint32_t cp = unicode::decodeUtf8(token, i);
        if (i == token.size() && !token.empty())
          m.charIds.emplace(cp, id);
      }
      // See Impl::cutBeforeSpaceRuns. Merged tokens are the concatenation of their parts, so a
      // merge across a cut would make a vocabulary token with "▁" after another character.
      static const std::string space = "\u2581";
      bool joinsAcross = false;
      for (auto it = m.vocab.begin(); it != m.vocab.end() && !joinsAcross; ++it) {
        const std::string &token = it->first;
        for (size_t at = token.find(space, 1); at != std::string::npos && !joinsAcross;
             at = token.find(space, at + 1))
          joinsAcross = at < space.size() || token.compare(at - space.size(), space.size(), space) != 0;
      }
      // "▁" itself must be a symbol: an unknown one would be unk (fused with unknown neighbours
      // under fuse_unk) or byte tokens, which a cut could part.
      m.cutBeforeSpaceRuns = !joinsAcross && !m.ignoreMerges && m.charIds.count(0x2581);
    }
    if (const Json *unk = optional(model, "unk_token")) {
      auto it = m.vocab.find(asString(*unk, "model.unk_token"));
      if (it == m.vocab.end())
        throw invalid("tokenizer.json: model.unk_token '" + unk->get<std::string>() +
                      "' is not in the vocabulary");
      m.unkId = it->second;
      // The unk symbol stands for characters other than "▁": if its text ended with "▁", a merge
      // could join it to a "▁" after it although no token has "▁" after another character.
      const std::string &unkText = it->first;
      if (unkText.size() >= 3 && unkText.compare(unkText.size() - 3, 3, "\u2581") == 0)
        m.cutBeforeSpaceRuns = false;
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
