// The kiln_generator object behind the C API: a decoder session, its KV caches and the batch being decoded.
#ifndef KILN_RUNTIME_GENERATOR_H
#define KILN_RUNTIME_GENERATOR_H

#include "kiln/kiln.h"
#include "generate/sampling.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace kiln::runtime {

// One cache input: its signature dims resolved per batch, and the buffer the generator owns.
struct CacheSlot {
  size_t input = 0;
  size_t axis = 0;
  std::vector<int64_t> dims; // -1: the batch; -2: the capacity
  std::vector<int64_t> shape;
  size_t elements = 0;
  std::shared_ptr<void> data; // the cache in the model's device memory
};

} // namespace kiln::runtime

struct kiln_generator {
  kiln_model *model = nullptr;
  kiln_session *session = nullptr;
  int64_t capacity = 0;
  int32_t vocab = 0;
  size_t idsInput = 0, maskInput = 0, positionInput = 0;
  long positionIdsInput = -1; // optional
  size_t logitsOutput = 0;
  std::vector<kiln::runtime::CacheSlot> caches;
  std::atomic<bool> cancelled{false};

  // The batch being decoded.
  size_t batch = 0;
  int64_t position = 0;                   // entries in every cache (padding included)
  std::vector<std::vector<int64_t>> mask; // per sequence, one entry per cached position
  std::vector<int64_t> nextPositionId;    // per sequence
  std::vector<std::vector<int32_t>> history;
  std::vector<int32_t> lastTokens;
  std::vector<kiln::Sampler> samplers;
  std::vector<float> logits; // [batch][vocab], last position of the last run
  bool logitsFresh = false;  // the prompt's logits have not been sampled yet

  ~kiln_generator() {
    caches.clear(); // GPU caches go back to the model's device before the model goes
    kiln_session_destroy(session);
    kiln_model_destroy(model);
  }
};

#endif
