// The kiln_generator object behind the C API: a decoder session, its KV cache rows and the sequences in them.
#ifndef KILN_RUNTIME_GENERATOR_H
#define KILN_RUNTIME_GENERATOR_H

#include "kiln/kiln.h"
#include "generate/block_pool.h"
#include "generate/sampling.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace kiln::runtime {

// One cache input: its signature dims resolved per batch, and the buffer the generator owns.
struct CacheSlot {
  size_t input = 0;
  size_t axis = 0;
  std::vector<int64_t> dims; // -1: the batch; -2: the capacity; -3: the pool's blocks (paged)
  std::vector<int64_t> shape;
  size_t elements = 0;
  size_t rowElements = 0;      // one row of the batch (dim 0): one sequence's cache
  std::shared_ptr<void> data; // the cache in the model's device memory
};

// One row of the caches and the sequence that holds it. A sequence appends at its own length
// (the artifact's kiln.row_positions), so rows of different lengths share a decode step and
// each row is computed as it would be alone.
struct CacheRow {
  bool used = false;
  int64_t id = 0;                 // the sequence id given to the caller
  int64_t length = 0;             // entries cached
  std::vector<int32_t> prompt;    // the prompt ...
  size_t prefilled = 0;           // ... and how much of it has run
  std::vector<int32_t> history;   // prompt + tokens, for the repetition penalty
  std::vector<int64_t> blocks;    // paged caches: the pool blocks holding entries [block * i, block * (i + 1))
  std::optional<kiln::Sampler> sampler;
  int32_t last = -1;              // the last token sampled, fed by the next step
  bool logitsFresh = false;       // logits not yet sampled (after a prefill or a feed)
};

} // namespace kiln::runtime

struct kiln_generator {
  kiln_model *model = nullptr;
  kiln_session *session = nullptr;
  int64_t capacity = 0;
  int32_t vocab = 0;
  int32_t maxSequences = 1; // rows of the sequence API
  size_t idsInput = 0, maskInput = 0, positionInput = 0;
  long positionIdsInput = -1; // optional
  long rowPositionsInput = -1; // kiln.row_positions; absent in artifacts of older compilers
  long logitRowsInput = -1;    // kiln.logit_rows (logits of each row's last N positions); absent in older ones
  // Paged caches (kiln.block_table present): pools of blocks of `blockSize` entries, handed to
  // sequences as they grow and back when they end.
  long blockTableInput = -1;
  int64_t blockSize = 0;
  int64_t blocksPerSequence = 0; // the table's width: ceil(capacity / blockSize)
  int64_t poolBlocks = 0;        // option kv_cache_blocks; 0: every sequence at full context
  bool prefixCaching = false;    // option prefix_caching: sequences share their prompts' cached blocks
  size_t prefillChunk = 512;     // option prefill_chunk: start()'s prompt tokens per model run; 0: all
  kiln::runtime::BlockPool pool;
  size_t logitsOutput = 0;
  std::vector<kiln::runtime::CacheSlot> caches;
  std::atomic<bool> cancelled{false};

  std::vector<kiln::runtime::CacheRow> rows; // as many as the caches have
  int64_t nextId = 1;
  size_t batch = 0;          // start()'s batch: rows [0, batch)
  std::vector<float> logits; // [rows][vocab], each row's last position of its last run
  std::vector<float> verifyLogits; // [positions][vocab] of the last speculative verification
  int64_t draftedTokens = 0, acceptedTokens = 0; // speculative decoding

  ~kiln_generator() {
    caches.clear(); // GPU caches go back to the model's device before the model goes
    kiln_session_destroy(session);
    kiln_model_destroy(model);
  }
};

#endif
