// Hugging Face tokenizer.json (byte-level BPE) into the tokenizer's model. The semantics follow the Rust
// `tokenizers` library (what `tokenizer.json` means); the tests compare the ids with the files' own
// JavaScript encoders and with that library.
#include "generate/tokenizer_model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
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
