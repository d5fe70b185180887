// The tokenizer's C API (kiln/tokenizer.h) over kiln::Tokenizer: errors become kiln_error, never exceptions.
#include "generate/tokenizer.h"

#include "error.h"
#include "kiln/tokenizer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

struct kiln_tokenizer {
  std::shared_ptr<const kiln::Tokenizer> tok;
};

struct kiln_tokenizer_stream {
  std::shared_ptr<const kiln::Tokenizer> tok;
  bool skipSpecial = false;
  kiln::unicode::Utf8Stream utf8;
  kiln::Tokenizer::DecodeState state;
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
    stream->tok->appendDecoded(id, stream->skipSpecial, stream->state, stream->bytes);
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
