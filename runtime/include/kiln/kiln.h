/* The kiln runtime's stable C API: load an artifact, query its signature, run it. */
#ifndef KILN_KILN_H
#define KILN_KILN_H

/* Conventions (see docs/runtime.md):
 * - Functions that can fail return kiln_error*; NULL means success. A non-NULL error is owned by
 *   the caller and must be released with kiln_error_free(). On failure, out-parameters are left
 *   NULL/untouched-zero and nothing is leaked.
 * - Out-parameters come last. Every create or load function has a matching destroy; destroy(NULL) is a no-op.
 * - "Borrowed" pointers returned by queries stay valid as long as the object they came from.
 * - Thread safety: a kiln_model may be shared by any number of threads. A kiln_session serves one
 *   request at a time (create one session per concurrent caller). Tensors are not synchronized. */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KILN_BUILDING_RUNTIME)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

/* Bumped on any incompatible change of this header. */
#define KILN_API_VERSION 1

/* The runtime's version string, e.g. "0.1.0". Static storage. */
KILN_API const char *kiln_runtime_version(void);

/* ---------------------------------------------------------------- errors */

typedef enum kiln_error_code {
  KILN_ERROR_INVALID_ARGUMENT = 1, /* a request or argument does not match what was expected */
  KILN_ERROR_IO = 2,               /* a file could not be opened, read or mapped */
  KILN_ERROR_INVALID_ARTIFACT = 3, /* the file is not a valid kiln artifact */
  KILN_ERROR_INCOMPATIBLE = 4,     /* a valid artifact this runtime or host cannot run */
  KILN_ERROR_OUT_OF_MEMORY = 5,
  KILN_ERROR_INTERNAL = 6,         /* the generated code failed or broke the ABI contract */
  KILN_ERROR_BUSY = 7,             /* the session is already running on another thread */
  KILN_ERROR_OUT_OF_RANGE = 8      /* a prompt longer than the context, or the KV cache is full */
} kiln_error_code;

typedef struct kiln_error kiln_error;

/* The message, one line without a trailing newline. Borrowed from `error`. */
KILN_API const char *kiln_error_message(const kiln_error *error);
KILN_API kiln_error_code kiln_error_get_code(const kiln_error *error);
KILN_API void kiln_error_free(kiln_error *error);

/* ---------------------------------------------------------------- dtypes */

/* Values are ONNX TensorProto.DataType codes. */
typedef enum kiln_dtype {
  KILN_DTYPE_FLOAT32 = 1,
  KILN_DTYPE_UINT8 = 2,
  KILN_DTYPE_INT8 = 3,
  KILN_DTYPE_UINT16 = 4,
  KILN_DTYPE_INT16 = 5,
  KILN_DTYPE_INT32 = 6,
  KILN_DTYPE_INT64 = 7,
  KILN_DTYPE_STRING = 8, /* elements are kiln_string */
  KILN_DTYPE_BOOL = 9,
  KILN_DTYPE_FLOAT16 = 10,
  KILN_DTYPE_FLOAT64 = 11,
  KILN_DTYPE_UINT32 = 12,
  KILN_DTYPE_UINT64 = 13,
  KILN_DTYPE_BFLOAT16 = 16,
  /* Not dtypes: they make every int32 value a valid kiln_dtype, so that a caller passing a code
   * this header does not know gets an error, not undefined behaviour in the runtime's C++. */
  KILN_DTYPE_INVALID_ = -1,
  KILN_DTYPE_FORCE_INT32_ = 0x7fffffff
} kiln_dtype;

/* "float32", "int64", ... or "unknown". Static storage. */
KILN_API const char *kiln_dtype_name(kiln_dtype dtype);
/* Bytes per element; 0 for a dtype the runtime cannot hold in a tensor. */
KILN_API size_t kiln_dtype_size(kiln_dtype dtype);

/* ---------------------------------------------------------------- tensors */

/* A dense, row-major tensor living in host memory. */
typedef struct kiln_tensor kiln_tensor;

/* A tensor owning a fresh 64-byte-aligned copy of `data` (`data_bytes` must equal the element
 * count times the dtype size). `data` may be NULL: the tensor is then zero-filled. `shape` is
 * copied; every dim must be >= 0. */
KILN_API kiln_error *kiln_tensor_create_copy(kiln_dtype dtype, const int64_t *shape, size_t rank,
                                             const void *data, size_t data_bytes,
                                             kiln_tensor **out_tensor);

/* A tensor viewing caller memory without copying it. The caller keeps `data` alive and unchanged
 * while the tensor is in use, and frees it after kiln_tensor_destroy(). */
KILN_API kiln_error *kiln_tensor_wrap(kiln_dtype dtype, const int64_t *shape, size_t rank, void *data,
                                      size_t data_bytes, kiln_tensor **out_tensor);

/* A tensor viewing memory of the CUDA device a --target=cuda model runs on (a CUdeviceptr from
 * the device's primary context, as cuMemAlloc gives), so a run reads it there instead of copying
 * it from the host. The caller keeps it alive and unchanged until the run using it has returned.
 * kiln_tensor_data() gives the device pointer back. Such a tensor is an input of CUDA models
 * only: a CPU model refuses it, as does a decoder's position input (the runtime checks it on the
 * host). Strings are host memory and cannot be wrapped this way. */
KILN_API kiln_error *kiln_tensor_wrap_device(kiln_dtype dtype, const int64_t *shape, size_t rank, void *device_data,
                                             size_t data_bytes, kiln_tensor **out_tensor);


/* One element of a KILN_DTYPE_STRING tensor: `size` bytes at `data` (UTF-8 by convention, not
 * NUL-terminated; `data` may be NULL when `size` is 0). The layout of kiln_abi_string. */
typedef struct kiln_string {
  const char *data;
  int64_t size;
} kiln_string;

/* A string tensor owning copies of `strings` (element count of `shape` of them, row-major).
 * `sizes` gives each string's byte size; NULL means every string is NUL-terminated.
 * kiln_tensor_create_copy() of KILN_DTYPE_STRING also copies the bytes its kiln_string elements
 * point at; kiln_tensor_wrap() borrows both the elements (16-byte aligned) and their bytes. */
KILN_API kiln_error *kiln_tensor_create_strings(const int64_t *shape, size_t rank, const char *const *strings,
                                                const size_t *sizes, kiln_tensor **out_tensor);
/* Element `index` (row-major) of a string tensor, its byte size in *out_size (may be NULL); the
 * bytes are borrowed from the tensor. NULL if the tensor is no string tensor or index is out of
 * range. */
KILN_API const char *kiln_tensor_string(const kiln_tensor *tensor, int64_t index, size_t *out_size);

/* Releases the tensor and, if it owns them, its bytes. */
KILN_API void kiln_tensor_destroy(kiln_tensor *tensor);

KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *tensor);
KILN_API size_t kiln_tensor_rank(const kiln_tensor *tensor);
/* `rank` dims, borrowed from the tensor. */
KILN_API const int64_t *kiln_tensor_shape(const kiln_tensor *tensor);
KILN_API int64_t kiln_tensor_element_count(const kiln_tensor *tensor);
KILN_API size_t kiln_tensor_byte_size(const kiln_tensor *tensor);
/* The first element, borrowed from the tensor; may be NULL when the tensor has no elements. */
KILN_API void *kiln_tensor_data(kiln_tensor *tensor);
KILN_API const void *kiln_tensor_data_const(const kiln_tensor *tensor);

/* ---------------------------------------------------------------- models */

/* A loaded artifact: the file mapped read-only (weights used in place), its code loaded, and a
 * CPU device (thread pool) that every session of the model shares. */
typedef struct kiln_model kiln_model;

typedef struct kiln_model_options {
  /* Set by kiln_model_options_init() to sizeof(kiln_model_options); lets later versions of the
   * runtime append fields without breaking callers built against this header. */
  size_t struct_size;
  /* Threads that run kernels, the calling thread included. 0 = every core this process may use. */
  int32_t num_threads;
  /* Artifacts compiled with --weights=external (docs/artifact.md): the directory holding the ONNX
   * external data files their manifest names. NULL = the artifact's own directory. Each file is
   * opened without leaving that directory (no absolute path, "..", or symlink on the way; one hard
   * link), checked against the manifest's size and SHA-256, and mapped read-only. The kiln weights
   * file the compiler wrote (<artifact>.weights) is always looked up beside the artifact. Ignored
   * for artifacts that hold their weights. */
  const char *weights_dir;
} kiln_model_options;

KILN_API void kiln_model_options_init(kiln_model_options *options);

/* Loads the artifact at `path`. `options` may be NULL (defaults). Fails with a message saying why
 * if the file is not an artifact, has another format or ABI version, targets another architecture,
 * or needs CPU features this host lacks. */
KILN_API kiln_error *kiln_model_load(const char *path, const kiln_model_options *options,
                                     kiln_model **out_model);

/* Releases the caller's reference. Sessions created from the model keep it alive until they are
 * destroyed; tensors returned by runs never depend on the model. */
KILN_API void kiln_model_destroy(kiln_model *model);

/* One input or output of the signature. All pointers are borrowed from the model. */
typedef struct kiln_tensor_info {
  const char *name;
  kiln_dtype dtype;
  size_t rank;
  const int64_t *dims;            /* `rank` values: >= 0 static, -1 symbolic */
  const char *const *dim_symbols; /* `rank` strings: the symbol of a symbolic dim ("" if unnamed,
                                     and "" for static dims) */
} kiln_tensor_info;

KILN_API size_t kiln_model_input_count(const kiln_model *model);
KILN_API size_t kiln_model_output_count(const kiln_model *model);
KILN_API kiln_error *kiln_model_input_info(const kiln_model *model, size_t index,
                                           kiln_tensor_info *out_info);
KILN_API kiln_error *kiln_model_output_info(const kiln_model *model, size_t index,
                                            kiln_tensor_info *out_info);

/* Lineage and resources of the artifact. All pointers are borrowed from the model. */
typedef struct kiln_model_metadata {
  uint32_t format_version;
  uint32_t abi_version;
  const char *compiler_version;
  const char *source_sha256;
  const char *producer;
  int64_t opset_version;
  const char *target_triple;
  const char *target_cpu;
  size_t cpu_feature_count;
  const char *const *cpu_features;
  size_t weight_count;
  uint64_t weights_bytes;
  uint64_t code_bytes;
  size_t kernel_count;
  int32_t num_threads; /* threads of the model's device */
} kiln_model_metadata;

KILN_API void kiln_model_get_metadata(const kiln_model *model, kiln_model_metadata *out_metadata);
/* Name of kernel `index` (NULL if out of range), borrowed from the model. */
KILN_API const char *kiln_model_kernel_name(const kiln_model *model, size_t index);
/* The ONNX nodes kernel `index` came from, comma-separated (NULL if out of range), borrowed. */
KILN_API const char *kiln_model_kernel_nodes(const kiln_model *model, size_t index);

/* ------------------------------------------------------- device tensors */

/* A tensor owning memory of the CUDA device `model` (a --target=cuda model) runs on, holding a copy
 * of `data` (NULL: zeros), for callers without CUDA code of their own: pass it as an input (read
 * in place) or as a kiln_session_run_into destination (the output stays on the GPU), run after
 * run. It keeps the model alive until kiln_tensor_destroy() frees the memory. A CPU model refuses
 * it; strings cannot live there. kiln_tensor_data() gives the device pointer. */
KILN_API kiln_error *kiln_tensor_create_device(kiln_model *model, kiln_dtype dtype, const int64_t *shape, size_t rank,
                                               const void *data, size_t data_bytes, kiln_tensor **out_tensor);

/* A host copy of `tensor` (kiln_tensor_create_copy's kind): of host memory, or of the device
 * memory of a kiln_tensor_create_device tensor. A kiln_tensor_wrap_device tensor is refused: kiln
 * does not know which device its memory is on. */
KILN_API kiln_error *kiln_tensor_copy_to_host(const kiln_tensor *tensor, kiln_tensor **out_tensor);

/* ---------------------------------------------------------------- sessions */

/* Per-caller run state. One request at a time per session; many sessions of one model may run
 * concurrently and share the model's thread pool. Holds a reference to the model. */
typedef struct kiln_session kiln_session;

KILN_API kiln_error *kiln_session_create(kiln_model *model, kiln_session **out_session);
KILN_API void kiln_session_destroy(kiln_session *session);

/* Runs the model. `inputs` holds `input_count` tensors in signature order; each is checked
 * (count, dtype, rank, static dims, symbolic dims consistent across inputs) before any code
 * runs. `outputs` is a caller array of `output_count` (= kiln_model_output_count) slots; on
 * success each receives a new tensor owned by the caller (kiln_tensor_destroy each). On failure
 * every slot is set to NULL. Inputs are only read, except the KV caches of a decoder artifact
 * (kiln_model_is_decoder), which the run updates in place: it writes the new entries at
 * [kiln.past_length, kiln.past_length + new) along the cache axis. */
KILN_API kiln_error *kiln_session_run(kiln_session *session, const kiln_tensor *const *inputs,
                                      size_t input_count, kiln_tensor **outputs, size_t output_count);

/* Runs the model as kiln_session_run does, but writes each output into memory the caller gives:
 * `outputs[i]` is a tensor the caller made for output i (kiln_tensor_wrap or kiln_tensor_create_copy
 * for host memory; kiln_tensor_wrap_device for memory of the CUDA device a --target=cuda model runs
 * on, so the output never leaves the GPU), of the output's dtype and the exact shape this run
 * produces. Symbolic output dims are known once the model has run: a destination of another shape
 * fails the run, naming the output and both shapes, and no destination is written. The outputs are
 * written when the call returns (a GPU destination too: the copy is waited for). String outputs
 * cannot be written into caller memory (their elements point at bytes the run owns): use
 * kiln_session_run. The tensors stay the caller's; `outputs` itself is only read. */
KILN_API kiln_error *kiln_session_run_into(kiln_session *session, const kiln_tensor *const *inputs,
                                           size_t input_count, kiln_tensor *const *outputs, size_t output_count);

/* -------------------------------------------------------------- generation */

/* Autoregressive decoding of a decoder artifact: one compiled with a KV cache (kiln-compile's
 * default for models in the Hugging Face "with past" layout: inputs input_ids, attention_mask,
 * optional position_ids and past_key_values.*; output logits). The generator owns the caches,
 * with room for max_context tokens per sequence, and writes each step's keys and values into
 * them in place; nothing already cached is copied again. */
KILN_API int kiln_model_is_decoder(const kiln_model *model);

typedef struct kiln_generator kiln_generator;

typedef struct kiln_generator_options {
  size_t struct_size;  /* set by kiln_generator_options_init */
  int64_t max_context; /* cache capacity in tokens per sequence (prompt + new); 0: the artifact's,
                          which is also the most it may be (kiln-compile --max-context) */
  int32_t max_sequences; /* cache rows of the sequence API (kiln_generator_add_sequence); 0: 1 */
  int64_t kv_cache_blocks; /* paged caches (kiln-compile --kv-block-size): blocks in the pool, shared by
                              all sequences; 0: enough for every sequence at max_context. Fewer bound
                              the memory: a sequence that needs a block when none is free fails
                              with KILN_ERROR_OUT_OF_RANGE */
  int32_t prefix_caching; /* paged caches: 1 keeps the full blocks of prompts after their sequences
                             end, known by their tokens, and a sequence added later whose prompt
                             starts with the same tokens shares those blocks instead of computing
                             them again (kept blocks are taken back, least recently used first, when
                             the pool runs out). 0 (default): off. A sequence's logits are bitwise
                             those it gets without the cache: the kernels compute each position the
                             same way whatever the prompt chunk it is in (tested) */
  int64_t prefill_chunk; /* kiln_generator_start (and kiln_generate) run a prompt in model runs of at
                            most this many tokens, so that a long prompt's activations stay bounded
                            (a 4k-token prompt of a 1.1B model took 14.5 GB in one run); the logits
                            are the same bit for bit. 0: 512; -1: the whole prompt in one run */
} kiln_generator_options;
KILN_API void kiln_generator_options_init(kiln_generator_options *options);

/* Fails with KILN_ERROR_INVALID_ARGUMENT naming the input when the artifact is not a decoder or
 * has an input the generator cannot feed. Holds a reference to the model. */
KILN_API kiln_error *kiln_generator_create(kiln_model *model, const kiln_generator_options *options,
                                           kiln_generator **out_generator);
KILN_API void kiln_generator_destroy(kiln_generator *generator);
/* The vocabulary size (the logits' last dim) and the cache capacity in tokens. */
KILN_API int32_t kiln_generator_vocab_size(const kiln_generator *generator);
KILN_API int64_t kiln_generator_max_context(const kiln_generator *generator);
/* Tokens per block of a paged KV cache (kiln-compile --kv-block-size N); 0: not paged (one
   contiguous row of max_context tokens per sequence). */
KILN_API int64_t kiln_generator_kv_block_size(const kiln_generator *generator);

typedef struct kiln_sampling_params {
  float temperature;        /* 0: greedy (argmax, lowest id on ties) */
  int32_t top_k;            /* keep the k most likely tokens; 0: off */
  float top_p;              /* nucleus: smallest set with this much probability; 1: off */
  float min_p;              /* drop tokens below min_p * the top probability; 0: off */
  float repetition_penalty; /* > 1 discourages tokens already in the sequence; 1: off */
  uint64_t seed;            /* the same seed gives the same tokens */
} kiln_sampling_params;
KILN_API void kiln_sampling_params_init(kiln_sampling_params *params);

/* Step by step. start() runs the prompts (a batch of `batch` sequences, each in its own cache
 * row at its own length, each prefilled as it would be alone) through the model; each next() then writes one new token per sequence into
 * tokens[batch]: the first from the prompt's logits, later ones after one decode step that feeds
 * the previous tokens. Errors: a prompt that is empty or longer than the context, a token id
 * outside the vocabulary, a full cache (KILN_ERROR_OUT_OF_RANGE), bad sampling parameters. */
KILN_API kiln_error *kiln_generator_start(kiln_generator *generator, const int32_t *const *prompts,
                                          const size_t *prompt_lengths, size_t batch,
                                          const kiln_sampling_params *sampling);
KILN_API kiln_error *kiln_generator_next(kiln_generator *generator, int32_t *tokens);
/* Teacher forcing: runs one decode step on tokens[batch] (one per sequence) instead of on the
 * tokens next() last returned (those are dropped from the sequences if not yet fed). Afterwards
 * kiln_generator_logits() is the prediction that follows `tokens`, and a next() samples from it.
 * For scoring given text (perplexity) or comparing two artifacts position by position. Errors as
 * next(); a token outside the vocabulary is refused (KILN_ERROR_INVALID_ARGUMENT). */
KILN_API kiln_error *kiln_generator_feed(kiln_generator *generator, const int32_t *tokens);
/* Logits of the last position of every sequence from the last model run, [batch][vocab],
 * borrowed until the next call; NULL before start(). */
KILN_API const float *kiln_generator_logits(const kiln_generator *generator);
/* Tokens in the cache of start()'s longest sequence (prompt + fed tokens). */
KILN_API int64_t kiln_generator_position(const kiln_generator *generator);
/* Stops a running kiln_generate() after its current step. Safe from any thread. */
KILN_API void kiln_generator_cancel(kiln_generator *generator);

/* Continuous batching: sequences join and leave a generator between decode steps. Each holds one
 * of max_sequences cache rows and appends at its own length, so one decode step serves sequences
 * of any lengths, and a sequence's logits are bitwise those it gets decoded alone (same prompt
 * chunks), whatever else is in the step and whichever row it holds. Not to be mixed with start():
 * start() ends every sequence, and the first add_sequence() ends start()'s batch.
 *
 * add_sequence() checks the prompt (as start()) and takes a free row: KILN_ERROR_OUT_OF_RANGE when
 * all are held. Its sampler is seeded with sampling->seed. prefill() runs up to max_tokens more of
 * the prompt (0: all of it; chunks let a long prompt alternate with others' decode steps) and gives
 * the prompt tokens left. step() gives tokens[i], the next token of sequences[i], for sequences whose
 * prompt has run: the first from the prompt's logits, later ones after one decode run that feeds
 * every listed sequence's previous token at once. remove_sequence() frees the row. */
KILN_API kiln_error *kiln_generator_add_sequence(kiln_generator *generator, const int32_t *prompt,
                                                 size_t prompt_length, const kiln_sampling_params *sampling,
                                                 int64_t *out_sequence);
KILN_API kiln_error *kiln_generator_prefill(kiln_generator *generator, int64_t sequence, size_t max_tokens,
                                            size_t *out_remaining);
KILN_API kiln_error *kiln_generator_step(kiln_generator *generator, const int64_t *sequences, size_t count,
                                         int32_t *tokens);
KILN_API kiln_error *kiln_generator_remove_sequence(kiln_generator *generator, int64_t sequence);
/* Speculative decoding of one sequence whose prompt has run: `draft` holds draft_count tokens
 * proposed to follow the sequence's tokens so far (its prompt and every token step() and this
 * call gave). One model run verifies them all: each position is sampled as step() samples it
 * (the same sampler and draw, from the logits of that position), draft tokens are kept while they
 * equal what is sampled, and the first token that differs, or one more after a draft that matched
 * whole, ends the call. tokens[] (room for draft_count + 1) receives the new tokens and *out_count
 * their number; the cache keeps only what was fed before them. The tokens are those step() gives
 * one at a time, greedy or sampled, whatever the draft: only the speed differs. Right after the
 * prefill (no token given yet) it gives one token as step() does. A draft that does not fit the
 * context is cut. Needs an artifact with the kiln.logit_rows input (kiln-compile since
 * 2026-12-05): others fail with KILN_ERROR_INCOMPATIBLE. */
KILN_API kiln_error *kiln_generator_step_draft(kiln_generator *generator, int64_t sequence, const int32_t *draft,
                                               size_t draft_count, int32_t *tokens, size_t *out_count);
/* Makes tokens[0, count) the sequence's tokens (its prompt and what followed): the cache keeps its
 * entries for the longest common start of the old and new tokens (at most count - 1), the rest is
 * prompt to prefill again (kiln_generator_prefill), and step() then continues from the end. A draft
 * model's sequence follows the target's this way, each round from where they last agreed. */
KILN_API kiln_error *kiln_generator_set_sequence_tokens(kiln_generator *generator, int64_t sequence,
                                                        const int32_t *tokens, size_t count);
/* Prompt-lookup drafting, for kiln_generator_step_draft: for n from max_ngram down to 1, the last n
   of tokens[0, count) are searched for earlier in them (latest occurrence first); the first match
   gives the tokens that followed it. Writes up to k of them to draft[] and returns how many (0:
   no match). */
KILN_API size_t kiln_lookup_draft(const int32_t *tokens, size_t count, size_t k, size_t max_ngram, int32_t *draft);
/* Draft tokens verified by this generator (step_draft and kiln_generate's speculation) and how
   many were accepted. */
KILN_API void kiln_generator_speculation_stats(const kiln_generator *generator, int64_t *drafted, int64_t *accepted);
/* The last position's logits [vocab] of the sequence's last model run; borrowed until the next
 * call; NULL for an unknown sequence or before its prefill ran. */
KILN_API const float *kiln_generator_sequence_logits(const kiln_generator *generator, int64_t sequence);
/* Tokens in the sequence's cache; -1 for an unknown sequence. */
KILN_API int64_t kiln_generator_sequence_length(const kiln_generator *generator, int64_t sequence);

/* The KV cache's use. Bytes count the cache buffers only (keys and values of every layer). */
typedef struct kiln_generator_cache_stats {
  size_t struct_size;      /* set by the caller to sizeof(kiln_generator_cache_stats) */
  int64_t rows;            /* cache rows allocated */
  int64_t max_sequences;
  int64_t sequences;       /* rows held by a sequence */
  int64_t tokens_cached;   /* over those sequences */
  int64_t bytes_per_token; /* one token of one sequence, all layers */
  int64_t bytes_in_use;    /* the blocks the sequences hold: blocks_in_use * block_size * bytes_per_token */
  int64_t bytes_reserved;  /* what is allocated: blocks_total * block_size * bytes_per_token */
  int64_t block_size;      /* tokens per block (kiln-compile --kv-block-size; without paging, max_context) */
  int64_t blocks_total;    /* blocks in the pool (without paging: rows); paged, before the first
                              sequence: the pool the sequence API will allocate */
  int64_t blocks_in_use;   /* held by sequences; freed when a sequence is removed */
  /* Prefix caching (kiln_generator_options.prefix_caching); 0 without it. */
  int64_t blocks_cached;     /* blocks holding a prompt prefix, held by sequences or idle */
  int64_t blocks_idle;       /* cached blocks no sequence holds (not in blocks_in_use): reusable */
  int64_t prefix_lookups;    /* sequences added while prefix caching was on */
  int64_t prefix_lookup_tokens; /* their prompt tokens */
  int64_t prefix_hit_blocks; /* blocks those sequences shared instead of computing (x block_size tokens) */
  int64_t prefix_evictions;  /* idle cached blocks taken back for other use */
} kiln_generator_cache_stats;
KILN_API void kiln_generator_cache_stats_get(const kiln_generator *generator, kiln_generator_cache_stats *out_stats);

typedef enum kiln_finish_reason {
  KILN_FINISH_NONE = 0,      /* still running */
  KILN_FINISH_STOP_TOKEN = 1,
  KILN_FINISH_LENGTH = 2,    /* max_new_tokens reached */
  KILN_FINISH_CANCELLED = 3, /* kiln_generator_cancel or the callback asked to stop */
  KILN_FINISH_CONTEXT = 4    /* the cache is full */
} kiln_finish_reason;

/* Called for every new token of every live sequence, in order; return nonzero to stop. */
typedef int (*kiln_token_callback)(void *user_data, size_t sequence, int32_t token);

typedef struct kiln_generate_options {
  size_t struct_size;              /* set by kiln_generate_options_init */
  kiln_sampling_params sampling;
  int32_t max_new_tokens;          /* per sequence; default 64 */
  const int32_t *stop_tokens;      /* a sequence ends at the first of these (included) */
  size_t stop_token_count;
  kiln_token_callback on_token;    /* may be NULL */
  void *user_data;
  /* Prompt-lookup speculative decoding (batch 1; off for larger batches): each step proposes up
     to this many tokens that followed the latest earlier occurrence of the sequence's last
     lookup_ngram tokens (or fewer) and verifies them in one model run (kiln_generator_step_draft).
     The tokens are those of decoding without it; 0 (default): off. */
  int32_t speculate_lookup;
  int32_t lookup_ngram;            /* longest n-gram matched; default 3 */
  /* Draft-model speculative decoding (batch 1): a generator of a smaller decoder with the same
     vocabulary proposes draft_tokens tokens per step, greedily, for one verification run of this
     one; its sequence follows this one's tokens (kiln_generator_set_sequence_tokens). The tokens
     are those of decoding without it. Not with speculate_lookup. NULL: off. */
  kiln_generator *draft;
  int32_t draft_tokens;            /* default 4 */
} kiln_generate_options;
KILN_API void kiln_generate_options_init(kiln_generate_options *options);

typedef struct kiln_generation_stats {
  size_t prompt_tokens;            /* sum over sequences, padding excluded */
  size_t new_tokens;               /* sum over sequences */
  size_t steps;                    /* model runs after the prompt */
  double time_to_first_token_ms;   /* start() and the first sample */
  double decode_ms;                /* all later steps */
  double inter_token_median_ms;    /* per decode step */
  double inter_token_p99_ms;
  double tokens_per_second;        /* new tokens after the first / decode time */
} kiln_generation_stats;

typedef struct kiln_generation kiln_generation;
/* Runs start() and next() until every sequence has finished. On success *out_generation holds
 * the new tokens (kiln_generation_destroy it). A cancelled run is a success with finish reason
 * KILN_FINISH_CANCELLED. */
KILN_API kiln_error *kiln_generate(kiln_generator *generator, const int32_t *const *prompts,
                                   const size_t *prompt_lengths, size_t batch,
                                   const kiln_generate_options *options, kiln_generation **out_generation);
KILN_API size_t kiln_generation_batch(const kiln_generation *generation);
/* The new tokens of sequence `index` (stop token included); borrowed from the generation. */
KILN_API const int32_t *kiln_generation_tokens(const kiln_generation *generation, size_t index,
                                               size_t *out_count);
KILN_API kiln_finish_reason kiln_generation_finish_reason(const kiln_generation *generation, size_t index);
KILN_API void kiln_generation_stats_get(const kiln_generation *generation, kiln_generation_stats *out_stats);
KILN_API void kiln_generation_destroy(kiln_generation *generation);

/* --------------------------------------------------------------- profiling */

/* One kernel launch of a profiled run. Times are microseconds from the start of the run. */
typedef struct kiln_profile_event {
  int32_t kernel_id;   /* index into the model's kernel table */
  double start_us;
  double duration_us;
  int64_t work_items;  /* the launch's iteration count, split across threads */
  /* The compiler's estimates for this launch (0: unknown). flops counts each float op's vector
   * lanes times its loop trips (edge tiles count as full tiles: an upper bound by at most one
   * tile per dim); bytes is the compulsory traffic, every tensor read or written counted once
   * (a lower bound when tiles re-read data). See docs/runtime.md. */
  int64_t flops;
  int64_t bytes;
} kiln_profile_event;

/* Turns per-kernel timing on or off for later runs of this session (off by default; when on,
 * each launch is timed with a steady clock, which costs well under a microsecond; on a
 * --target=cuda model, with two CUDA events around each launch, read once the run is over). */
KILN_API void kiln_session_set_profiling(kiln_session *session, int enabled);
/* The launches of the session's last run, in order, borrowed until its next run or destroy.
 * Sets *out_count; returns NULL when the last run was not profiled. */
KILN_API const kiln_profile_event *kiln_session_profile(const kiln_session *session,
                                                        size_t *out_count);

#ifdef __cplusplus
}
#endif
#endif /* KILN_KILN_H */
