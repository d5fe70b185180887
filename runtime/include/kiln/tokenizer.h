/* kiln's text tokenizer: Hugging Face tokenizer.json files with a BPE model, byte-level (GPT-2,
 * Llama 3, Qwen 2/2.5/3) or SentencePiece-style with byte fallback (Llama 2, TinyLlama, Mistral,
 * Gemma); Unigram and WordPiece models are refused as not supported. Encodes prompts to token ids
 * and decodes ids to UTF-8 text, also one id at a time for streaming generation. See
 * docs/runtime.md, "Tokenizer". */
#ifndef KILN_TOKENIZER_H
#define KILN_TOKENIZER_H

/* Same conventions as kiln.h: functions that can fail return a kiln_error* (NULL = success) that
 * the caller frees with kiln_error_free(); out-parameters come last and are set to NULL/0 on
 * failure; every destroy/free function accepts NULL. */

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded tokenizer. Immutable after load (its word cache is internally synchronized): any number
 * of threads may encode and decode with one tokenizer at the same time. */
typedef struct kiln_tokenizer kiln_tokenizer;

/* Loads a tokenizer.json. Errors: KILN_ERROR_IO (cannot read the file), KILN_ERROR_INVALID_ARGUMENT
 * (not JSON, missing or mistyped fields, limits exceeded), KILN_ERROR_INCOMPATIBLE (valid, but
 * uses a component kiln does not implement, e.g. a WordPiece model or an unknown split regex). */
KILN_API kiln_error *kiln_tokenizer_load(const char *path, kiln_tokenizer **out_tokenizer);
/* The same from tokenizer.json text held in memory (copied; `json` need not be NUL-terminated). */
KILN_API kiln_error *kiln_tokenizer_load_from_memory(const char *json, size_t json_len,
                                                     kiln_tokenizer **out_tokenizer);
/* Releases the caller's reference; streams created from the tokenizer keep it alive. */
KILN_API void kiln_tokenizer_destroy(kiln_tokenizer *tokenizer);

/* Flags of kiln_tokenizer_encode (bitwise or). */
enum {
  /* Add the post-processor's special tokens (e.g. a TemplateProcessing BOS). */
  KILN_TOKENIZER_ADD_SPECIAL = 1u << 0,
  /* Recognize special added tokens ("<|im_start|>", ...) written in the text. Without it their text
   * is tokenized like any other; added tokens that are not special are always recognized, as in
   * Hugging Face tokenizers. */
  KILN_TOKENIZER_PARSE_SPECIAL = 1u << 1,
  /* Replace invalid UTF-8 in the text by U+FFFD (each maximal invalid subsequence by one U+FFFD,
   * as the WHATWG decoder does) instead of failing with KILN_ERROR_INVALID_ARGUMENT. */
  KILN_TOKENIZER_REPLACE_INVALID_UTF8 = 1u << 2
};

/* Encodes `text_len` bytes of UTF-8 `text` (may contain NUL bytes; may be NULL when text_len is 0).
 * On success *out_ids is a new array of *out_count ids (never NULL, even when the count is 0)
 * that the caller frees with kiln_tokenizer_ids_free. */
KILN_API kiln_error *kiln_tokenizer_encode(const kiln_tokenizer *tokenizer, const char *text,
                                           size_t text_len, uint32_t flags, int32_t **out_ids,
                                           size_t *out_count);
KILN_API void kiln_tokenizer_ids_free(int32_t *ids);

/* Flags of kiln_tokenizer_decode and kiln_tokenizer_stream_create. */
enum {
  /* Leave out special added tokens ("<|eot_id|>", ...). */
  KILN_TOKENIZER_SKIP_SPECIAL = 1u << 0
};

/* Decodes ids to text: the bytes of the tokens, with invalid UTF-8 replaced by U+FFFD, so the text
 * is always valid UTF-8. On success *out_text is a new NUL-terminated string of *out_len bytes
 * (it may also contain NUL bytes) that the caller frees with kiln_tokenizer_text_free. An id
 * outside [0, vocab_size) or without a token is an error (KILN_ERROR_INVALID_ARGUMENT). */
KILN_API kiln_error *kiln_tokenizer_decode(const kiln_tokenizer *tokenizer, const int32_t *ids,
                                           size_t count, uint32_t flags, char **out_text,
                                           size_t *out_len);
KILN_API void kiln_tokenizer_text_free(char *text);

/* Ids run from 0 to vocab_size - 1 (the largest id of the vocabulary and the added tokens, plus
 * one: the row count of a model's embedding table). */
KILN_API size_t kiln_tokenizer_vocab_size(const kiln_tokenizer *tokenizer);
/* The id of a token written as in tokenizer.json ("<|eot_id|>", "hello", "Ġworld"): added tokens
 * first, then the vocabulary. -1 if there is none. */
KILN_API int32_t kiln_tokenizer_token_to_id(const kiln_tokenizer *tokenizer, const char *token);
/* The token of an id as written in tokenizer.json, borrowed from the tokenizer; NULL if none. */
KILN_API const char *kiln_tokenizer_id_to_token(const kiln_tokenizer *tokenizer, int32_t id);
/* 1 if `id` is a special added token, else 0. */
KILN_API int kiln_tokenizer_is_special(const kiln_tokenizer *tokenizer, int32_t id);

/* Streaming decoder: takes generated ids one at a time and returns only complete UTF-8, holding
 * back the bytes of a character split across tokens until it is complete. The pieces it returns,
 * followed by kiln_tokenizer_stream_flush, concatenate to kiln_tokenizer_decode of all the ids.
 * One stream serves one sequence on one thread at a time; it holds a reference to its tokenizer. */
typedef struct kiln_tokenizer_stream kiln_tokenizer_stream;

KILN_API kiln_error *kiln_tokenizer_stream_create(const kiln_tokenizer *tokenizer, uint32_t flags,
                                                  kiln_tokenizer_stream **out_stream);
KILN_API void kiln_tokenizer_stream_destroy(kiln_tokenizer_stream *stream);
/* Feeds one id. *out_text receives the new complete text (valid UTF-8, NUL-terminated, possibly
 * empty), borrowed from the stream until its next call; *out_len its length in bytes. */
KILN_API kiln_error *kiln_tokenizer_stream_push(kiln_tokenizer_stream *stream, int32_t id,
                                                const char **out_text, size_t *out_len);
/* Ends the sequence: returns what is held back (an incomplete character becomes U+FFFD) and
 * makes the stream ready for a new sequence. */
KILN_API kiln_error *kiln_tokenizer_stream_flush(kiln_tokenizer_stream *stream,
                                                 const char **out_text, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* KILN_TOKENIZER_H */
