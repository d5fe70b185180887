// Fuzz target (e): the tokenizer on arbitrary bytes. Byte 0 chooses what the rest is:
//   0x80 set:  tokenizer.json text for kiln_tokenizer_load_from_memory (then a short encode);
//   0x40 set:  int32 ids to decode, at once and through a stream;
//   otherwise: text to encode with one of the bundled tokenizers and flags (bits 1-3).
// The bundled tokenizers (also for 0x40): bit 4 set, the SentencePiece-style Llama 2 layout of
// test/models/tokenizers/sentencepiece_tiny.json (normalizers, byte fallback, Strip decoder); else
// bit 0 chooses GPT-2 or Llama 3 (byte-level).
// Besides crashes, a finding is any broken promise of tokenizer.h: a stream's pieces plus its
// flush differ from decoding all ids at once, or text without special tokens does not come back
// from decode(encode(text)) (byte-level BPE without a normalizer is lossless; so is the Llama 2
// layout with byte fallback, except that a literal U+2581 in the text decodes as a space).
#include "kiln/tokenizer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

kiln_tokenizer *bundled[3];

void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", what);
    std::abort();
  }
}

// Decodes `ids` at once and through a stream; both must agree. Returns the text, or false.
bool decodeBoth(const kiln_tokenizer *tok, const int32_t *ids, size_t n, std::string *text) {
  char *out = nullptr;
  size_t len = 0;
  kiln_error *e = kiln_tokenizer_decode(tok, ids, n, 0, &out, &len);
  if (e) {
    check(kiln_error_message(e) && *kiln_error_message(e), "an error without a message");
    kiln_error_free(e);
    return false;
  }
  text->assign(out, len);
  kiln_tokenizer_text_free(out);

  kiln_tokenizer_stream *stream = nullptr;
  check(kiln_tokenizer_stream_create(tok, 0, &stream) == nullptr, "stream_create failed");
  std::string streamed;
  for (size_t i = 0; i < n; ++i) {
    const char *piece = nullptr;
    size_t pieceLen = 0;
    check(kiln_tokenizer_stream_push(stream, ids[i], &piece, &pieceLen) == nullptr,
          "stream_push failed on an id decode accepted");
    streamed.append(piece, pieceLen);
  }
  const char *rest = nullptr;
  size_t restLen = 0;
  check(kiln_tokenizer_stream_flush(stream, &rest, &restLen) == nullptr, "stream_flush failed");
  streamed.append(rest, restLen);
  kiln_tokenizer_stream_destroy(stream);
  check(streamed == *text, "streamed pieces differ from decode");
  return true;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *paths[3] = {KILN_FUZZ_LM_DIR "/gpt2/tokenizer.json", KILN_FUZZ_LM_DIR "/llama/tokenizer.json",
                          KILN_FUZZ_TOKENIZER_DATA "/sentencepiece_tiny.json"};
  for (int i = 0; i < 3; ++i)
    if (kiln_error *e = kiln_tokenizer_load(paths[i], &bundled[i])) {
      std::fprintf(stderr, "fuzz_tokenizer: %s\n", kiln_error_message(e));
      std::abort();
    }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const uint8_t mode = data[0];
  const char *rest = reinterpret_cast<const char *>(data + 1);
  const size_t restLen = size - 1;

  if (mode & 0x80) {
    kiln_tokenizer *tok = nullptr;
    if (kiln_error *e = kiln_tokenizer_load_from_memory(rest, restLen, &tok)) {
      check(kiln_error_message(e) && *kiln_error_message(e), "an error without a message");
      kiln_error_free(e);
      return 0;
    }
    int32_t *ids = nullptr;
    size_t n = 0;
    if (kiln_error *e = kiln_tokenizer_encode(tok, "Hello, world!", 13, KILN_TOKENIZER_ADD_SPECIAL, &ids, &n))
      kiln_error_free(e);
    else {
      std::string text;
      decodeBoth(tok, ids, n, &text);
      kiln_tokenizer_ids_free(ids);
    }
    kiln_tokenizer_destroy(tok);
    return 0;
  }

  const bool sentencePiece = mode & 0x10;
  const kiln_tokenizer *tok = bundled[sentencePiece ? 2 : mode & 1];
  if (mode & 0x40) {
    std::vector<int32_t> ids(restLen / 4);
    if (!ids.empty())
      std::memcpy(ids.data(), rest, ids.size() * 4);
    std::string text;
    decodeBoth(tok, ids.data(), ids.size(), &text);
    return 0;
  }

  uint32_t flags = (mode >> 1) & 7;
  int32_t *ids = nullptr;
  size_t n = 0;
  if (kiln_error *e = kiln_tokenizer_encode(tok, rest, restLen, flags, &ids, &n)) {
    check(kiln_error_message(e) && *kiln_error_message(e), "an error without a message");
    kiln_error_free(e);
    return 0;
  }
  for (size_t i = 0; i < n; ++i)
    check(ids[i] >= 0 && size_t(ids[i]) < kiln_tokenizer_vocab_size(tok), "an id outside the vocabulary");
  std::string text;
  check(decodeBoth(tok, ids, n, &text), "decode refused ids encode produced");
  // Without specials or replacement, encoding succeeded only on valid UTF-8: it must round-trip.
  const std::string input(rest, restLen);
  if (flags == 0 && !(sentencePiece && input.find("\xE2\x96\x81") != std::string::npos))
    check(text == input, "decode(encode(text)) != text");
  kiln_tokenizer_ids_free(ids);
  return 0;
}
