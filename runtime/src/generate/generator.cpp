// Autoregressive decoding over a decoder artifact: runtime-owned KV cache rows, prefill, ragged decode steps, sampling.
#include "generate/generator.h"
#include "generate/prompt_lookup.h"

#include "error.h"
#include "model.h"
#include "generate/sampling.h"
#include "tensor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using kiln::runtime::makeError;

namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

using kiln::runtime::CacheSlot;

// Owns a kiln_tensor for the duration of one run.
struct TensorPtr {
  kiln_tensor *t = nullptr;
  ~TensorPtr() { kiln_tensor_destroy(t); }
};

} // namespace

namespace {

long findInput(const kiln::artifact::Metadata &m, const char *name) {
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (m.inputs[i].name == name)
      return long(i);
  return -1;
}

kiln_error *invalid(const std::string &msg) { return makeError(KILN_ERROR_INVALID_ARGUMENT, msg); }

kiln_error *configure(kiln_generator &g, const kiln_generator_options *options) {
  const auto &m = g.model->view.meta;
  if (!m.decoder.present)
    return invalid("the artifact is not a decoder with a KV cache (compile a model with past_key_values "
                   "inputs with kiln-compile --kv-cache=true)");
  long ids = findInput(m, "input_ids"), mask = findInput(m, "attention_mask");
  if (ids < 0 || mask < 0)
    return invalid("a decoder artifact needs inputs 'input_ids' and 'attention_mask'");
  g.idsInput = size_t(ids);
  g.maskInput = size_t(mask);
  g.positionIdsInput = findInput(m, "position_ids");
  g.positionInput = m.decoder.positionInput;
  const auto &idsSig = m.inputs[g.idsInput];
  if (idsSig.dtype != 7 || idsSig.dims.size() != 2 || m.inputs[g.maskInput].dtype != 7 ||
      m.inputs[g.maskInput].dims.size() != 2)
    return invalid("input_ids and attention_mask must be int64 [batch, length]");
  if (g.positionIdsInput >= 0 && (m.inputs[g.positionIdsInput].dtype != 7 || m.inputs[g.positionIdsInput].dims.size() != 2))
    return invalid("position_ids must be int64 [batch, sequence_length]");
  const std::string batchSymbol = idsSig.dims[0].symbol;

  std::vector<bool> fed(m.inputs.size(), false);
  fed[g.idsInput] = fed[g.maskInput] = fed[g.positionInput] = true;
  if (g.positionIdsInput >= 0)
    fed[g.positionIdsInput] = true;
  g.rowPositionsInput = findInput(m, kiln::artifact::kRowPositionsInput);
  if (g.rowPositionsInput >= 0) {
    const auto &rs = m.inputs[g.rowPositionsInput];
    if (rs.dtype != 7 || rs.dims.size() != 1)
      return invalid(std::string(kiln::artifact::kRowPositionsInput) + " must be int64 [batch]");
    fed[g.rowPositionsInput] = true;
  }
  g.logitRowsInput = findInput(m, kiln::artifact::kLogitRowsInput);
  if (g.logitRowsInput >= 0) {
    const auto &ls = m.inputs[g.logitRowsInput];
    if (ls.dtype != 7 || !ls.dims.empty())
      return invalid(std::string(kiln::artifact::kLogitRowsInput) + " must be an int64 scalar");
    fed[g.logitRowsInput] = true;
  }
  g.blockTableInput = findInput(m, kiln::artifact::kBlockTableInput);
  if (g.blockTableInput >= 0) {
    const auto &ts = m.inputs[g.blockTableInput];
    if (ts.dtype != 7 || ts.dims.size() != 2 || g.rowPositionsInput < 0)
      return invalid("kiln.block_table must be int64 [batch, blocks], with kiln.row_positions");
    fed[g.blockTableInput] = true;
  }
  for (const auto &c : m.decoder.caches) {
    CacheSlot slot;
    slot.input = c.input;
    slot.axis = c.axis;
    const auto &sig = m.inputs[c.input];
    if (g.blockTableInput >= 0) {
      // A pool [blocks, .., block, ..]: every dim but the blocks static.
      if (c.axis == 0 || c.axis >= sig.dims.size() || sig.dims[c.axis].size <= 0)
        return invalid("paged cache input '" + sig.name + "' has no static block size");
      if (g.blockSize != 0 && g.blockSize != sig.dims[c.axis].size)
        return invalid("paged cache inputs differ in their block size");
      g.blockSize = sig.dims[c.axis].size;
      for (size_t d = 0; d < sig.dims.size(); ++d) {
        if (d == 0)
          slot.dims.push_back(-3);
        else if (sig.dims[d].size >= 0)
          slot.dims.push_back(sig.dims[d].size);
        else
          return invalid("paged cache input '" + sig.name + "' has symbolic dim " + std::to_string(d));
      }
      fed[c.input] = true;
      g.caches.push_back(std::move(slot));
      continue;
    }
    for (size_t d = 0; d < sig.dims.size(); ++d) {
      if (d == c.axis)
        slot.dims.push_back(-2);
      else if (sig.dims[d].size >= 0)
        slot.dims.push_back(sig.dims[d].size);
      else if (d == 0 || (!batchSymbol.empty() && sig.dims[d].symbol == batchSymbol))
        slot.dims.push_back(-1);
      else
        return invalid("cache input '" + sig.name + "' has symbolic dim " + std::to_string(d) + " ('" +
                       sig.dims[d].symbol + "') that is neither the batch nor the cache axis");
    }
    fed[c.input] = true;
    g.caches.push_back(std::move(slot));
  }
  for (size_t i = 0; i < fed.size(); ++i)
    if (!fed[i])
      return invalid("decoder input '" + m.inputs[i].name + "' is not one the generator can feed");

  long logits = -1;
  for (size_t i = 0; i < m.outputs.size(); ++i)
    if (m.outputs[i].name == "logits")
      logits = long(i);
  if (logits < 0)
    return invalid("a decoder artifact needs an output 'logits'");
  const auto &ls = m.outputs[logits];
  if (ls.dtype != 1 || ls.dims.size() != 3 || ls.dims[2].size <= 0)
    return invalid("logits must be float32 [batch, sequence_length, vocab] with a static vocab");
  g.logitsOutput = size_t(logits);
  g.vocab = int32_t(std::min<int64_t>(ls.dims[2].size, INT32_MAX));

  if (options && options->struct_size >= offsetof(kiln_generator_options, max_sequences) + sizeof(int32_t)) {
    if (options->max_sequences < 0 || options->max_sequences > 4096)
      return invalid("max_sequences " + std::to_string(options->max_sequences) + " is outside [0, 4096]");
    if (options->max_sequences > 0)
      g.maxSequences = options->max_sequences;
  }
  g.capacity = m.decoder.maxContext;
  if (options && options->struct_size >= offsetof(kiln_generator_options, max_context) + sizeof(int64_t) &&
      options->max_context != 0)
    g.capacity = options->max_context;
  // The artifact's context is a limit, not only a default: a model with a learned position
  // table has no positions beyond it (kiln-compile caps --max-context at the table's size).
  if (g.capacity < 1 || g.capacity > m.decoder.maxContext)
    return invalid("max_context " + std::to_string(g.capacity) + " is outside [1, " +
                   std::to_string(m.decoder.maxContext) + "], the context the artifact was compiled for");
  const int64_t blocksOption =
      options && options->struct_size >= offsetof(kiln_generator_options, kv_cache_blocks) + sizeof(int64_t)
          ? options->kv_cache_blocks
          : 0;
  if (blocksOption < 0 || blocksOption > (int64_t(1) << 32))
    return invalid("kv_cache_blocks " + std::to_string(blocksOption) + " is outside [0, 2^32]");
  const int32_t prefixOption =
      options && options->struct_size >= offsetof(kiln_generator_options, prefix_caching) + sizeof(int32_t)
          ? options->prefix_caching
          : 0;
  if (prefixOption != 0 && prefixOption != 1)
    return invalid("prefix_caching " + std::to_string(prefixOption) + " is not 0 or 1");
  const int64_t chunkOption =
      options && options->struct_size >= offsetof(kiln_generator_options, prefill_chunk) + sizeof(int64_t)
          ? options->prefill_chunk
          : 0;
  if (chunkOption < -1)
    return invalid("prefill_chunk " + std::to_string(chunkOption) + " is below -1 (-1: whole prompts, 0: 512)");
  if (chunkOption != 0)
    g.prefillChunk = chunkOption < 0 ? 0 : size_t(chunkOption);
  if (g.blockSize > 0) {
    g.blocksPerSequence = (g.capacity + g.blockSize - 1) / g.blockSize;
    g.poolBlocks = blocksOption;
    g.prefixCaching = prefixOption == 1;
  } else if (prefixOption != 0) {
    return invalid("prefix_caching needs a paged KV cache, and the artifact's is not (compile it with "
                   "kiln-compile --kv-block-size N)");
  } else if (blocksOption != 0) {
    // Silently ignoring it would leave the caller believing the memory is bounded.
    return invalid("kv_cache_blocks is set but the artifact's KV cache is not paged (compile it with "
                   "kiln-compile --kv-block-size N)");
  }
  return nullptr;
}

// A fresh, zeroed cache of `n` floats in the model's device memory. On a GPU it stays there for the
// whole decode: the kernels append to it in place, and only each step's tokens and logits cross the bus.
kiln_error *allocateCache(kiln_generator &g, CacheSlot &c, size_t n) {
  kiln::runtime::Device *device = g.model->device.get();
  c.data.reset();
  const std::string &name = g.model->view.meta.inputs[c.input].name;
  void *p = device->allocate(n * sizeof(float), 64);
  const char *memory = device->hostMemory() ? "memory" : "GPU memory";
  if (!p && !device->allocationFailure().empty())
    return makeError(KILN_ERROR_INTERNAL, "KV cache '" + name + "': " + device->allocationFailure());
  if (!p)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, std::string("out of ") + memory + " for the KV cache '" + name + "' (" +
                                                   std::to_string(n * sizeof(float)) + " bytes)");
  c.data = std::shared_ptr<void>(p, [device](void *q) { device->deallocate(q); });
  std::string error;
  if (!device->zero(p, n * sizeof(float), error))
    return makeError(KILN_ERROR_INTERNAL, "KV cache '" + name + "': " + error);
  return nullptr;
}

kiln::SamplingParams toParams(const kiln_sampling_params &p) {
  kiln::SamplingParams s;
  s.temperature = p.temperature;
  s.top_k = p.top_k;
  s.top_p = p.top_p;
  s.min_p = p.min_p;
  s.repetition_penalty = p.repetition_penalty;
  s.seed = p.seed;
  return s;
}

using kiln::runtime::CacheRow;

// One model run over cache rows [first, first + count): `len` new tokens per row; `past`
// (kiln.past_length) is the read extent, the longest participating row; a row appends at its
// rowPositions entry, and one past `past` sits the run out (nothing is written to it).
struct RunInputs {
  size_t first = 0, count = 0;
  int64_t len = 0, past = 0;
  std::vector<int64_t> tokens, positionIds, rowPositions, mask; // [count][len] x2, [count], [count][past+len]
  std::vector<bool> sitsOut; // per row: its outputs are dropped (its logits stay those of its own last run)
  int64_t logitRows = 1;     // kiln.logit_rows: logits of each row's last N positions
  bool keepAllRows = false;  // one row's run: its logits of every returned position go to verifyLogits
};

kiln_error *runModel(kiln_generator &g, RunInputs &in) {
  const auto &m = g.model->view.meta;
  const int64_t total = in.past + in.len;
  if (total > g.capacity)
    return makeError(KILN_ERROR_OUT_OF_RANGE, "the KV cache is full: " + std::to_string(in.past) + " + " +
                                                  std::to_string(in.len) + " tokens exceed the context of " +
                                                  std::to_string(g.capacity));
  const int64_t b = int64_t(in.count);
  if (g.rowPositionsInput < 0)
    for (int64_t p : in.rowPositions)
      if (p != in.past)
        return makeError(KILN_ERROR_INCOMPATIBLE, "this decoder artifact has no kiln.row_positions input (an older "
                                                  "kiln-compile): sequences of different lengths cannot share a step; "
                                                  "recompile it");
  std::vector<TensorPtr> owned(m.inputs.size());
  auto wrap = [&](size_t input, kiln_dtype dtype, std::vector<int64_t> shape, void *data, size_t bytes) {
    return kiln_tensor_wrap(dtype, shape.data(), shape.size(), data, bytes, &owned[input].t);
  };
  int64_t past = in.past;
  kiln_error *e = wrap(g.idsInput, KILN_DTYPE_INT64, {b, in.len}, in.tokens.data(), in.tokens.size() * 8);
  if (!e)
    e = wrap(g.maskInput, KILN_DTYPE_INT64, {b, total}, in.mask.data(), in.mask.size() * 8);
  if (!e && g.positionIdsInput >= 0)
    e = wrap(size_t(g.positionIdsInput), KILN_DTYPE_INT64, {b, in.len}, in.positionIds.data(), in.positionIds.size() * 8);
  if (!e)
    e = wrap(g.positionInput, KILN_DTYPE_INT64, {}, &past, 8);
  if (!e && g.rowPositionsInput >= 0)
    e = wrap(size_t(g.rowPositionsInput), KILN_DTYPE_INT64, {b}, in.rowPositions.data(), in.rowPositions.size() * 8);
  int64_t logitRows = in.logitRows;
  if (!e && g.logitRowsInput >= 0)
    e = wrap(size_t(g.logitRowsInput), KILN_DTYPE_INT64, {}, &logitRows, 8);
  std::vector<int64_t> table;
  if (g.blockTableInput >= 0) {
    // Each row's blocks; -1 past them (a write there is skipped, a read clamped and masked).
    table.assign(size_t(b * g.blocksPerSequence), -1);
    for (int64_t s = 0; s < b; ++s) {
      const auto &blocks = g.rows[in.first + size_t(s)].blocks;
      std::copy(blocks.begin(), blocks.end(), table.begin() + s * g.blocksPerSequence);
    }
    if (!e)
      e = wrap(size_t(g.blockTableInput), KILN_DTYPE_INT64, {b, g.blocksPerSequence}, table.data(), table.size() * 8);
  }
  for (CacheSlot &c : g.caches) {
    if (g.blockTableInput >= 0) { // the whole pool: the table says where each row's entries are
      if (!e)
        e = wrap(c.input, KILN_DTYPE_FLOAT32, c.shape, c.data.get(), c.elements * sizeof(float));
      if (!e)
        owned[c.input].t->device = !g.model->device->hostMemory();
      continue;
    }
    // Rows [first, first + count) of the cache: contiguous, the batch being dim 0.
    std::vector<int64_t> shape = c.shape;
    shape[0] = b;
    float *rows = static_cast<float *>(c.data.get()) + in.first * c.rowElements;
    if (!e)
      e = wrap(c.input, KILN_DTYPE_FLOAT32, shape, rows, size_t(b) * c.rowElements * sizeof(float));
    if (!e)
      owned[c.input].t->device = !g.model->device->hostMemory();
  }
  if (e)
    return e;
  std::vector<const kiln_tensor *> inputs;
  for (auto &t : owned)
    inputs.push_back(t.t);
  std::vector<kiln_tensor *> outputs(m.outputs.size(), nullptr);
  e = kiln_session_run(g.session, inputs.data(), inputs.size(), outputs.data(), outputs.size());
  if (e)
    return e;
  std::vector<TensorPtr> results(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    results[i].t = outputs[i];
  const kiln_tensor *logits = outputs[g.logitsOutput];
  // Every position, or (kiln-last-position-logits) the last kiln.logit_rows, or the last only.
  const int64_t *shape = kiln_tensor_shape(logits);
  const int64_t rows = shape[1];
  if (shape[0] != b || (rows != in.len && rows != 1 && rows != std::min(in.logitRows, in.len)) || shape[2] != g.vocab)
    return makeError(KILN_ERROR_INTERNAL, "logits came back with shape [" + std::to_string(shape[0]) + ", " +
                                              std::to_string(rows) + ", " + std::to_string(shape[2]) + "], expected [" +
                                              std::to_string(b) + ", " + std::to_string(in.len) + " or 1, " +
                                              std::to_string(g.vocab) + "]");
  const float *data = static_cast<const float *>(kiln_tensor_data_const(logits));
  if (in.keepAllRows)
    g.verifyLogits.assign(data, data + rows * g.vocab);
  g.logits.resize(g.rows.size() * size_t(g.vocab));
  for (int64_t s = 0; s < b; ++s)
    if (in.sitsOut.empty() || !in.sitsOut[size_t(s)])
      std::memcpy(&g.logits[(in.first + size_t(s)) * g.vocab], data + (s * rows + rows - 1) * g.vocab,
                  sizeof(float) * g.vocab);
  return nullptr;
}

// Blocks in a paged pool for `rows` sequences.
int64_t poolBlocks(const kiln_generator &g, size_t rows) {
  return g.poolBlocks > 0 ? g.poolBlocks : int64_t(rows) * g.blocksPerSequence;
}

// Paged caches: gives row `r` the blocks for `length` entries from the pool, all or none.
kiln_error *reserveBlocks(kiln_generator &g, size_t r, int64_t length) {
  if (g.blockSize == 0)
    return nullptr;
  auto &blocks = g.rows[r].blocks;
  const size_t need = size_t((length + g.blockSize - 1) / g.blockSize);
  if (need <= blocks.size())
    return nullptr;
  if (!g.pool.take(need - blocks.size(), blocks))
    return makeError(KILN_ERROR_OUT_OF_RANGE, "the KV cache pool is full: sequence " + std::to_string(g.rows[r].id) +
                                                  " needs " + std::to_string(need - blocks.size()) +
                                                  " more blocks of " + std::to_string(g.blockSize) + " tokens, " +
                                                  std::to_string(g.pool.available()) + " of " +
                                                  std::to_string(g.pool.total()) + " are free");
  return nullptr;
}

void releaseBlocks(kiln_generator &g, kiln::runtime::CacheRow &row) {
  if (g.blockSize > 0)
    g.pool.release(row.blocks);
}

// Runs up to `maxTokens` more of row `r`'s prompt (0: all of it) as a batch of one on that row:
// the same computation as prefilling the sequence alone, wherever its row is.
kiln_error *prefillRow(kiln_generator &g, size_t r, size_t maxTokens) {
  CacheRow &row = g.rows[r];
  size_t n = row.prompt.size() - row.prefilled;
  if (maxTokens > 0)
    n = std::min(n, maxTokens);
  if (n == 0)
    return nullptr;
  RunInputs in;
  in.first = r;
  in.count = 1;
  in.len = int64_t(n);
  in.past = row.length;
  in.tokens.assign(row.prompt.begin() + row.prefilled, row.prompt.begin() + row.prefilled + n);
  for (size_t i = 0; i < n; ++i)
    in.positionIds.push_back(row.length + int64_t(i));
  in.rowPositions = {row.length};
  in.mask.assign(size_t(row.length) + n, 1);
  if (kiln_error *e = reserveBlocks(g, r, row.length + int64_t(n)))
    return e;
  if (kiln_error *e = runModel(g, in))
    return e;
  row.length += int64_t(n);
  row.prefilled += n;
  row.logitsFresh = row.prefilled == row.prompt.size();
  // Prefix caching: the prompt's blocks filled so far become shareable.
  if (g.blockSize > 0)
    g.pool.publish(row.blocks, row.prompt.data(), size_t(row.length / g.blockSize));
  return nullptr;
}

// One decode step feeding tokens[i] to row rowIdx[i], for all of them in one model run over rows
// [0, highest listed + 1). Each listed row appends at its own length and its mask covers exactly
// its own entries; the attention reads up to the longest, and what lies past a row's length is
// masked, so a row's logits are those it gets alone (the kernels reduce each row in the same order
// whatever the batch). Rows not listed sit the run out: row position past the read extent, nothing
// written, outputs dropped.
kiln_error *decodeRows(kiln_generator &g, const std::vector<size_t> &rowIdx, const std::vector<int32_t> &tokens) {
  int64_t past = 0;
  size_t count = 0;
  for (size_t r : rowIdx) {
    past = std::max(past, g.rows[r].length);
    count = std::max(count, r + 1);
    if (g.rows[r].length + 1 > g.capacity)
      return makeError(KILN_ERROR_OUT_OF_RANGE, "the KV cache is full: the context holds " +
                                                    std::to_string(g.capacity) + " tokens");
  }
  RunInputs in;
  in.count = count;
  in.len = 1;
  in.past = past;
  const int64_t total = past + 1;
  in.tokens.assign(count, 0);
  in.positionIds.assign(count, 0);
  in.rowPositions.assign(count, past + 1);
  in.sitsOut.assign(count, true);
  in.mask.assign(count * size_t(total), 0);
  for (size_t r = 0; r < count; ++r) {
    const int64_t own = std::min(g.rows[r].length, past);
    in.positionIds[r] = own;
    std::fill(in.mask.begin() + r * total, in.mask.begin() + r * total + own + 1, 1);
  }
  // Paged: the blocks for each listed row's new entry, all or none (a full pool fails the step).
  std::vector<size_t> held;
  for (size_t r : rowIdx)
    held.push_back(g.rows[r].blocks.size());
  for (size_t r : rowIdx)
    if (kiln_error *e = reserveBlocks(g, r, g.rows[r].length + 1)) {
      for (size_t i = 0; i < rowIdx.size(); ++i)
        g.pool.release(g.rows[rowIdx[i]].blocks, held[i]);
      return e;
    }
  for (size_t i = 0; i < rowIdx.size(); ++i) {
    size_t r = rowIdx[i];
    in.tokens[r] = tokens[i];
    in.rowPositions[r] = g.rows[r].length;
    in.sitsOut[r] = false;
  }
  if (kiln_error *e = runModel(g, in))
    return e;
  for (size_t r : rowIdx)
    ++g.rows[r].length;
  return nullptr;
}

// One token for each listed row: rows whose last token is not yet in the cache are fed it first,
// all in one decode run; then every row samples from its logits.
kiln_error *stepRows(kiln_generator &g, const std::vector<size_t> &rowIdx, int32_t *out) {
  std::vector<size_t> feedRows;
  std::vector<int32_t> feedTokens;
  for (size_t r : rowIdx) {
    const CacheRow &row = g.rows[r];
    if (row.logitsFresh)
      continue;
    if (row.last < 0)
      return invalid("sequence " + std::to_string(row.id) + " has not finished its prefill");
    feedRows.push_back(r);
    feedTokens.push_back(row.last);
  }
  if (!feedRows.empty())
    if (kiln_error *e = decodeRows(g, feedRows, feedTokens))
      return e;
  for (size_t i = 0; i < rowIdx.size(); ++i) {
    CacheRow &row = g.rows[rowIdx[i]];
    int32_t t = row.sampler->sample(&g.logits[rowIdx[i] * g.vocab], g.vocab, row.history.data(), row.history.size());
    if (t < 0)
      return makeError(KILN_ERROR_INTERNAL, "sampling sequence " + std::to_string(row.id) + ": " + row.sampler->error());
    row.last = t;
    row.logitsFresh = false;
    row.history.push_back(t);
    out[i] = t;
  }
  return nullptr;
}

// Speculative decoding of row `r`: feeds its pending token and the draft in one run, then samples
// position by position (as stepRows would, one sampler draw per token) while the samples equal the
// draft. Sampling from the target and comparing is the rejection rule for a draft that proposes
// one token with certainty: a draft token is kept with the target's probability for it, and a
// rejected position's sample follows the target's distribution without it. So the tokens are
// those of decoding one token at a time. Appends the new tokens to `out`.
kiln_error *speculateRow(kiln_generator &g, size_t r, const int32_t *draft, size_t k, std::vector<int32_t> &out) {
  CacheRow &row = g.rows[r];
  if (row.logitsFresh || row.last < 0 || k == 0) { // nothing pending to verify after: one ordinary step
    int32_t t = -1;
    if (kiln_error *e = stepRows(g, {r}, &t))
      return e;
    out.push_back(t);
    return nullptr;
  }
  if (g.logitRowsInput < 0)
    return makeError(KILN_ERROR_INCOMPATIBLE, "this decoder artifact has no kiln.logit_rows input (an older "
                                              "kiln-compile): it cannot verify speculated tokens; recompile it");
  for (size_t i = 0; i < k; ++i)
    if (draft[i] < 0 || draft[i] >= g.vocab)
      return invalid("draft token " + std::to_string(i) + " is id " + std::to_string(draft[i]) +
                     ", outside the vocabulary [0, " + std::to_string(g.vocab) + ")");
  if (row.length + 1 > g.capacity)
    return makeError(KILN_ERROR_OUT_OF_RANGE, "the KV cache is full: the context holds " + std::to_string(g.capacity) +
                                                  " tokens");
  k = std::min<size_t>(k, size_t(g.capacity - row.length - 1));
  const int64_t len = int64_t(k) + 1;
  RunInputs in;
  in.first = r;
  in.count = 1;
  in.len = len;
  in.past = row.length;
  in.tokens.push_back(row.last);
  in.tokens.insert(in.tokens.end(), draft, draft + k);
  for (int64_t i = 0; i < len; ++i)
    in.positionIds.push_back(row.length + i);
  in.rowPositions = {row.length};
  in.mask.assign(size_t(row.length + len), 1);
  in.logitRows = len;
  in.keepAllRows = true;
  const size_t heldBlocks = row.blocks.size();
  if (kiln_error *e = reserveBlocks(g, r, row.length + len))
    return e;
  if (kiln_error *e = runModel(g, in)) {
    if (g.blockSize > 0)
      g.pool.release(row.blocks, heldBlocks);
    return e;
  }
  size_t accepted = 0;
  for (size_t i = 0; i <= k; ++i) {
    const float *logits = &g.verifyLogits[i * size_t(g.vocab)];
    const int32_t t = row.sampler->sample(logits, g.vocab, row.history.data(), row.history.size());
    if (t < 0)
      return makeError(KILN_ERROR_INTERNAL, "sampling sequence " + std::to_string(row.id) + ": " + row.sampler->error());
    row.history.push_back(t);
    out.push_back(t);
    std::memcpy(&g.logits[r * size_t(g.vocab)], logits, sizeof(float) * size_t(g.vocab));
    if (i == k || t != draft[i])
      break;
    ++accepted;
  }
  // Kept: the pending token and the accepted draft tokens; the last sample is pending now.
  row.length += 1 + int64_t(accepted);
  row.last = out.back();
  row.logitsFresh = false;
  if (g.blockSize > 0)
    g.pool.release(row.blocks, size_t((row.length + g.blockSize - 1) / g.blockSize));
  g.draftedTokens += int64_t(k);
  g.acceptedTokens += int64_t(accepted);
  return nullptr;
}

// Makes tokens[0, n) row r's tokens: the cache keeps the entries of the longest common start of
// what it holds and the new tokens (at most n - 1, so the last token runs and gives logits); the
// rest becomes prompt still to prefill.
void setRowTokens(kiln_generator &g, size_t r, const int32_t *tokens, size_t n) {
  CacheRow &row = g.rows[r];
  size_t common = 0;
  const size_t cached = std::min(size_t(row.length), row.history.size());
  while (common < cached && common + 1 < n && row.history[common] == tokens[common])
    ++common;
  // A block shared with other sequences or kept for its prefix is never written: a rewind that
  // ends inside one computes that whole block again in a block of its own.
  if (g.blockSize > 0 && common % size_t(g.blockSize) != 0 && g.pool.pinned(row.blocks[common / size_t(g.blockSize)]))
    common -= common % size_t(g.blockSize);
  row.prompt.assign(tokens, tokens + n);
  row.history = row.prompt;
  row.prefilled = common;
  row.length = int64_t(common);
  row.last = -1;
  row.logitsFresh = false;
  if (g.blockSize > 0)
    g.pool.release(row.blocks, size_t((row.length + g.blockSize - 1) / g.blockSize));
}

// One draft-model round for the target's row 0 (batch 1): the draft sequence takes the target's
// tokens (its pending one included), prefills what it has not cached, and proposes `k` tokens
// greedily.
kiln_error *draftTokens(kiln_generator &target, kiln_generator &draft, int64_t sequence, size_t k,
                        std::vector<int32_t> &out) {
  long dr = -1;
  for (size_t r = 0; r < draft.rows.size(); ++r)
    if (draft.rows[r].used && draft.rows[r].id == sequence)
      dr = long(r);
  if (dr < 0)
    return invalid("the draft generator lost its sequence");
  const CacheRow &row = target.rows[0];
  out.clear();
  if (int64_t(row.history.size()) + 1 > draft.capacity)
    return nullptr; // past the draft's context: no draft, an ordinary step
  setRowTokens(draft, size_t(dr), row.history.data(), row.history.size());
  while (draft.rows[size_t(dr)].prefilled < draft.rows[size_t(dr)].prompt.size())
    if (kiln_error *e = prefillRow(draft, size_t(dr), draft.prefillChunk))
      return e;
  k = std::min<size_t>(k, size_t(std::max<int64_t>(0, draft.capacity - draft.rows[size_t(dr)].length - 1)));
  for (size_t i = 0; i < k; ++i) {
    int32_t t = -1;
    if (kiln_error *e = stepRows(draft, {size_t(dr)}, &t))
      return e;
    out.push_back(t);
  }
  return nullptr;
}

// Fresh caches with `n` rows (every sequence ends).
kiln_error *allocateRows(kiln_generator &g, size_t n) {
  g.rows.clear();
  g.batch = 0;
  for (CacheSlot &c : g.caches) {
    c.shape.clear();
    size_t elements = 1;
    for (int64_t d : c.dims) {
      int64_t v = d == -1 ? int64_t(n) : d == -2 ? g.capacity : d == -3 ? poolBlocks(g, n) : d;
      c.shape.push_back(v);
      elements *= size_t(v);
    }
    c.elements = elements;
    c.rowElements = n ? elements / n : 0;
    if (kiln_error *e = allocateCache(g, c, elements))
      return e;
  }
  g.rows.resize(n);
  g.logits.assign(n * size_t(g.vocab), 0.0f);
  g.pool.reset(g.blockSize > 0 ? poolBlocks(g, n) : 0, g.blockSize, g.prefixCaching);
  return nullptr;
}

kiln_error *checkPrompt(const kiln_generator &g, const int32_t *prompt, size_t length, const std::string &what) {
  if (length == 0 || !prompt)
    return invalid(what + " is empty");
  for (size_t i = 0; i < length; ++i)
    if (prompt[i] < 0 || prompt[i] >= g.vocab)
      return invalid(what + " token " + std::to_string(i) + " is id " + std::to_string(prompt[i]) +
                     ", outside the vocabulary [0, " + std::to_string(g.vocab) + ")");
  if (int64_t(length) >= g.capacity)
    return makeError(KILN_ERROR_OUT_OF_RANGE, "prompt of " + std::to_string(length) +
                                                  " tokens does not fit the context of " +
                                                  std::to_string(g.capacity) + " tokens (with one new token)");
  return nullptr;
}

int64_t longestRow(const kiln_generator &g) {
  int64_t n = 0;
  for (const CacheRow &r : g.rows)
    if (r.used)
      n = std::max(n, r.length);
  return n;
}

std::vector<size_t> batchRows(const kiln_generator &g) {
  std::vector<size_t> all(g.batch);
  for (size_t s = 0; s < g.batch; ++s)
    all[s] = s;
  return all;
}

/// The request's sampling parameters (the defaults when null), validated.
kiln_error *samplingParams(const kiln_sampling_params *sampling, kiln::SamplingParams &params) {
  kiln_sampling_params defaults;
  kiln_sampling_params_init(&defaults);
  params = toParams(sampling ? *sampling : defaults);
  std::string why = params.validate();
  return why.empty() ? nullptr : invalid("sampling: " + why);
}

kiln_error *start(kiln_generator &g, const int32_t *const *prompts, const size_t *lengths, size_t batch,
                  const kiln_sampling_params *sampling) {
  if (batch == 0 || !prompts || !lengths)
    return invalid("kiln_generator_start: no prompts");
  kiln::SamplingParams params;
  if (kiln_error *e = samplingParams(sampling, params))
    return e;
  for (size_t s = 0; s < batch; ++s)
    if (kiln_error *e = checkPrompt(g, prompts[s], lengths[s], "prompt " + std::to_string(s)))
      return e;
  if (kiln_error *e = allocateRows(g, batch))
    return e;
  // Each prompt in its own row at positions [0, length): no padding; each is prefilled on its own
  // (a batch of one), so its cache and logits are the ones it gets decoded alone.
  for (size_t s = 0; s < batch; ++s) {
    CacheRow &row = g.rows[s];
    row.used = true;
    row.id = int64_t(s);
    row.prompt.assign(prompts[s], prompts[s] + lengths[s]);
    row.history = row.prompt;
    kiln::SamplingParams p = params;
    p.seed = params.seed + s; // one stream per sequence
    row.sampler.emplace(p);
  }
  for (size_t s = 0; s < batch; ++s)
    do {
      if (kiln_error *e = prefillRow(g, s, g.prefillChunk)) {
        g.rows.clear();
        return e;
      }
    } while (g.rows[s].prefilled < g.rows[s].prompt.size());
  g.batch = batch;
  return nullptr;
}

kiln_error *next(kiln_generator &g, int32_t *tokens) {
  if (g.batch == 0)
    return invalid("kiln_generator_next: call kiln_generator_start first");
  return stepRows(g, batchRows(g), tokens);
}

// Teacher forcing: the given tokens replace the ones next() last returned, if not yet fed.
kiln_error *feed(kiln_generator &g, const int32_t *tokens) {
  if (g.batch == 0)
    return invalid("kiln_generator_feed: call kiln_generator_start first");
  std::vector<int32_t> ids(g.batch);
  for (size_t s = 0; s < g.batch; ++s) {
    if (tokens[s] < 0 || tokens[s] >= g.vocab)
      return invalid("kiln_generator_feed: sequence " + std::to_string(s) + " token is id " +
                     std::to_string(tokens[s]) + ", outside the vocabulary [0, " + std::to_string(g.vocab) + ")");
    ids[s] = tokens[s];
  }
  if (kiln_error *e = decodeRows(g, batchRows(g), ids))
    return e;
  // A token next() sampled but never fed is not part of the sequence: the fed one takes its place
  // in the history the repetition penalty reads.
  for (size_t s = 0; s < g.batch; ++s) {
    CacheRow &row = g.rows[s];
    if (!row.logitsFresh && row.last >= 0 && !row.history.empty())
      row.history.pop_back();
    row.history.push_back(tokens[s]);
    row.last = -1;
    row.logitsFresh = true;
  }
  return nullptr;
}

// The sequence API's row of `sequence`, or -1.
long rowOf(const kiln_generator &g, int64_t sequence) {
  for (size_t r = 0; r < g.rows.size(); ++r)
    if (g.rows[r].used && g.rows[r].id == sequence && g.batch == 0)
      return long(r);
  return -1;
}

kiln_error *addSequence(kiln_generator &g, const int32_t *prompt, size_t length, const kiln_sampling_params *sampling,
                        int64_t *out) {
  kiln::SamplingParams params;
  if (kiln_error *e = samplingParams(sampling, params))
    return e;
  if (kiln_error *e = checkPrompt(g, prompt, length, "the prompt"))
    return e;
  // start()'s batch and the sequence API do not mix: the first sequence ends that batch.
  if (g.batch > 0 || g.rows.size() != size_t(g.maxSequences))
    if (kiln_error *e = allocateRows(g, size_t(g.maxSequences)))
      return e;
  for (size_t r = 0; r < g.rows.size(); ++r) {
    CacheRow &row = g.rows[r];
    if (row.used)
      continue;
    row = CacheRow{};
    row.used = true;
    row.id = g.nextId++;
    row.prompt.assign(prompt, prompt + length);
    row.history = row.prompt;
    row.sampler.emplace(params);
    // Prefix caching: the cached blocks of the prompt's start are shared, not computed again. At
    // least the last prompt token runs, for the logits the first new token comes from.
    const size_t shared = g.pool.share(prompt, length, length - 1, row.blocks);
    row.length = int64_t(shared) * g.blockSize;
    row.prefilled = size_t(row.length);
    *out = row.id;
    return nullptr;
  }
  return makeError(KILN_ERROR_OUT_OF_RANGE, "every one of the generator's " + std::to_string(g.maxSequences) +
                                                " sequences (max_sequences) is in use");
}

kiln_error *stepSequences(kiln_generator &g, const int64_t *sequences, size_t count, int32_t *tokens) {
  std::vector<size_t> rowIdx;
  for (size_t i = 0; i < count; ++i) {
    long r = rowOf(g, sequences[i]);
    if (r < 0)
      return invalid("kiln_generator_step: sequence " + std::to_string(sequences[i]) + " is not one of this generator's");
    if (std::find(rowIdx.begin(), rowIdx.end(), size_t(r)) != rowIdx.end())
      return invalid("kiln_generator_step: sequence " + std::to_string(sequences[i]) + " is listed twice");
    if (g.rows[size_t(r)].prefilled < g.rows[size_t(r)].prompt.size())
      return invalid("kiln_generator_step: sequence " + std::to_string(sequences[i]) + " has " +
                     std::to_string(g.rows[size_t(r)].prompt.size() - g.rows[size_t(r)].prefilled) +
                     " prompt tokens left to prefill");
    rowIdx.push_back(size_t(r));
  }
  return stepRows(g, rowIdx, tokens);
}

} // namespace

struct kiln_generation {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<kiln_finish_reason> reasons;
  kiln_generation_stats stats{};
};

extern "C" {

int kiln_model_is_decoder(const kiln_model *model) { return model && model->view.meta.decoder.present ? 1 : 0; }

void kiln_generator_options_init(kiln_generator_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

void kiln_sampling_params_init(kiln_sampling_params *params) {
  if (!params)
    return;
  std::memset(params, 0, sizeof *params);
  params->top_p = 1.0f;
  params->repetition_penalty = 1.0f;
}

void kiln_generate_options_init(kiln_generate_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  kiln_sampling_params_init(&options->sampling);
  options->max_new_tokens = 64;
}

kiln_error *kiln_generator_create(kiln_model *model, const kiln_generator_options *options,
                                  kiln_generator **out_generator) {
  if (!out_generator)
    return invalid("kiln_generator_create: out_generator is NULL");
  *out_generator = nullptr;
  if (!model)
    return invalid("kiln_generator_create: model is NULL");
  try {
    auto g = std::make_unique<kiln_generator>();
    kiln::runtime::retainModel(model);
    g->model = model;
    if (kiln_error *e = configure(*g, options))
      return e;
    if (kiln_error *e = kiln_session_create(model, &g->session))
      return e;
    *out_generator = g.release();
    return nullptr;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory creating the generator");
  }
}

void kiln_generator_destroy(kiln_generator *generator) { delete generator; }

int32_t kiln_generator_vocab_size(const kiln_generator *g) { return g ? g->vocab : 0; }
int64_t kiln_generator_max_context(const kiln_generator *g) { return g ? g->capacity : 0; }

int64_t kiln_generator_kv_block_size(const kiln_generator *g) { return g ? g->blockSize : 0; }
int64_t kiln_generator_position(const kiln_generator *g) { return g && g->batch > 0 ? longestRow(*g) : 0; }
const float *kiln_generator_logits(const kiln_generator *g) {
  return g && g->batch > 0 && !g->logits.empty() ? g->logits.data() : nullptr;
}
void kiln_generator_cancel(kiln_generator *g) {
  if (g)
    g->cancelled.store(true, std::memory_order_relaxed);
}

kiln_error *kiln_generator_start(kiln_generator *g, const int32_t *const *prompts, const size_t *lengths,
                                 size_t batch, const kiln_sampling_params *sampling) {
  if (!g)
    return invalid("kiln_generator_start: generator is NULL");
  try {
    return start(*g, prompts, lengths, batch, sampling);
  } catch (...) {
    g->batch = 0;
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory starting generation");
  }
}

kiln_error *kiln_generator_next(kiln_generator *g, int32_t *tokens) {
  if (!g || !tokens)
    return invalid("kiln_generator_next: generator or tokens is NULL");
  try {
    return next(*g, tokens);
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory generating");
  }
}

kiln_error *kiln_generator_feed(kiln_generator *g, const int32_t *tokens) {
  if (!g || !tokens)
    return invalid("kiln_generator_feed: generator or tokens is NULL");
  try {
    return feed(*g, tokens);
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory feeding tokens");
  }
}

kiln_error *kiln_generate(kiln_generator *g, const int32_t *const *prompts, const size_t *lengths, size_t batch,
                          const kiln_generate_options *options, kiln_generation **out_generation) {
  if (!out_generation)
    return invalid("kiln_generate: out_generation is NULL");
  *out_generation = nullptr;
  if (!g)
    return invalid("kiln_generate: generator is NULL");
  kiln_generate_options defaults;
  kiln_generate_options_init(&defaults);
  const kiln_generate_options &o = options ? *options : defaults;
  if (o.max_new_tokens < 1)
    return invalid("max_new_tokens must be at least 1");
  if (o.stop_token_count > 0 && !o.stop_tokens)
    return invalid("stop_tokens is NULL but stop_token_count is " + std::to_string(o.stop_token_count));
  try {
    auto gen = std::make_unique<kiln_generation>();
    g->cancelled.store(false, std::memory_order_relaxed);
    auto t0 = Clock::now();
    if (kiln_error *e = start(*g, prompts, lengths, batch, &o.sampling))
      return e;
    gen->tokens.assign(batch, {});
    gen->reasons.assign(batch, KILN_FINISH_NONE);
    for (size_t s = 0; s < batch; ++s)
      gen->stats.prompt_tokens += lengths[s];
    std::vector<int32_t> step(batch);
    std::vector<double> stepMs;
    // Prompt-lookup speculation: batch 1 only (a busy batch is better served by one step for all).
    const bool recent = o.struct_size >= offsetof(kiln_generate_options, lookup_ngram) + sizeof(int32_t);
    const int32_t lookup = recent ? o.speculate_lookup : 0, ngram = recent && o.lookup_ngram > 0 ? o.lookup_ngram : 3;
    if (lookup < 0)
      return invalid("speculate_lookup must be 0 (off) or positive, got " + std::to_string(lookup));
    const bool withDraft = o.struct_size >= offsetof(kiln_generate_options, draft_tokens) + sizeof(int32_t);
    kiln_generator *draftGen = withDraft ? o.draft : nullptr;
    const int32_t draftK = withDraft && o.draft_tokens > 0 ? o.draft_tokens : 4;
    int64_t draftSequence = 0;
    if (draftGen) {
      if (lookup > 0)
        return invalid("speculate_lookup and a draft generator exclude each other");
      if (draftGen == g)
        return invalid("the draft generator must be another generator than the one decoding");
      if (draftGen->vocab != g->vocab)
        return invalid("the draft model's vocabulary has " + std::to_string(draftGen->vocab) + " tokens, this one's " +
                       std::to_string(g->vocab) + ": they must share the tokenizer");
      if (batch == 1) { // the draft follows the one sequence, greedily
        kiln_sampling_params greedy;
        kiln_sampling_params_init(&greedy);
        greedy.temperature = 0.0f;
        if (kiln_error *e = addSequence(*draftGen, prompts[0], lengths[0], &greedy, &draftSequence))
          return e;
      }
    }
    struct DraftSequence { // ends with the generation, however it ends
      kiln_generator *gen;
      int64_t id;
      ~DraftSequence() {
        if (gen && id)
          kiln_error_free(kiln_generator_remove_sequence(gen, id));
      }
    } draftOwner{draftGen, draftSequence};
    std::vector<int32_t> draftProposal;
    std::vector<int32_t> produced;
    size_t live = batch;
    bool first = true;
    auto finishAll = [&](kiln_finish_reason r) {
      for (auto &reason : gen->reasons)
        if (reason == KILN_FINISH_NONE)
          reason = r;
      live = 0;
    };
    while (live > 0) {
      if (g->cancelled.load(std::memory_order_relaxed)) {
        finishAll(KILN_FINISH_CANCELLED);
        break;
      }
      if (!first && longestRow(*g) + 1 > g->capacity) {
        finishAll(KILN_FINISH_CONTEXT);
        break;
      }
      auto ts = Clock::now();
      produced.clear();
      if (lookup > 0 && batch == 1 && !first) {
        const CacheRow &row = g->rows[0];
        const std::vector<int32_t> draft =
            kiln::runtime::lookupDraft(row.history.data(), row.history.size(), size_t(lookup), size_t(ngram));
        if (kiln_error *e = speculateRow(*g, 0, draft.data(), draft.size(), produced))
          return e;
      } else if (draftSequence != 0 && !first) {
        if (kiln_error *e = draftTokens(*g, *draftGen, draftSequence, size_t(draftK), draftProposal))
          return e;
        if (kiln_error *e = speculateRow(*g, 0, draftProposal.data(), draftProposal.size(), produced))
          return e;
      } else {
        if (kiln_error *e = next(*g, step.data()))
          return e;
      }
      if (first)
        gen->stats.time_to_first_token_ms = msSince(t0);
      else
        stepMs.push_back(msSince(ts));
      first = false;
      // One token per sequence, or a speculative step's tokens of the one sequence.
      const size_t perSequence = produced.empty() ? 1 : produced.size();
      for (size_t k = 0; k < perSequence && live > 0; ++k)
        for (size_t s = 0; s < batch && live > 0; ++s) {
          if (gen->reasons[s] != KILN_FINISH_NONE)
            continue;
          const int32_t token = produced.empty() ? step[s] : produced[k];
          gen->tokens[s].push_back(token);
          ++gen->stats.new_tokens;
          bool stop = std::find(o.stop_tokens, o.stop_tokens + o.stop_token_count, token) !=
                      o.stop_tokens + o.stop_token_count;
          if (o.on_token && o.on_token(o.user_data, s, token) != 0) {
            finishAll(KILN_FINISH_CANCELLED);
            break;
          }
          if (stop || int32_t(gen->tokens[s].size()) >= o.max_new_tokens) {
            gen->reasons[s] = stop ? KILN_FINISH_STOP_TOKEN : KILN_FINISH_LENGTH;
            --live;
          }
        }
    }
    gen->stats.steps = stepMs.size();
    for (double ms : stepMs)
      gen->stats.decode_ms += ms;
    if (!stepMs.empty()) {
      std::vector<double> sorted = stepMs;
      std::sort(sorted.begin(), sorted.end());
      gen->stats.inter_token_median_ms = sorted[sorted.size() / 2];
      gen->stats.inter_token_p99_ms = sorted[std::min(sorted.size() - 1, size_t(sorted.size() * 0.99))];
      size_t later = gen->stats.new_tokens > batch ? gen->stats.new_tokens - batch : 0;
      gen->stats.tokens_per_second = gen->stats.decode_ms > 0 ? later / (gen->stats.decode_ms / 1000.0) : 0;
    }
    *out_generation = gen.release();
    return nullptr;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory generating");
  }
}

size_t kiln_generation_batch(const kiln_generation *gen) { return gen ? gen->tokens.size() : 0; }

const int32_t *kiln_generation_tokens(const kiln_generation *gen, size_t index, size_t *out_count) {
  if (out_count)
    *out_count = 0;
  if (!gen || index >= gen->tokens.size())
    return nullptr;
  if (out_count)
    *out_count = gen->tokens[index].size();
  return gen->tokens[index].data();
}

kiln_finish_reason kiln_generation_finish_reason(const kiln_generation *gen, size_t index) {
  return gen && index < gen->reasons.size() ? gen->reasons[index] : KILN_FINISH_NONE;
}

void kiln_generation_stats_get(const kiln_generation *gen, kiln_generation_stats *out) {
  if (out)
    *out = gen ? gen->stats : kiln_generation_stats{};
}

void kiln_generation_destroy(kiln_generation *gen) { delete gen; }


kiln_error *kiln_generator_add_sequence(kiln_generator *g, const int32_t *prompt, size_t prompt_length,
                                        const kiln_sampling_params *sampling, int64_t *out_sequence) {
  if (!out_sequence)
    return invalid("kiln_generator_add_sequence: out_sequence is NULL");
  *out_sequence = 0;
  if (!g)
    return invalid("kiln_generator_add_sequence: generator is NULL");
  try {
    return addSequence(*g, prompt, prompt_length, sampling, out_sequence);
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory adding a sequence");
  }
}

kiln_error *kiln_generator_prefill(kiln_generator *g, int64_t sequence, size_t max_tokens, size_t *out_remaining) {
  if (out_remaining)
    *out_remaining = 0;
  if (!g)
    return invalid("kiln_generator_prefill: generator is NULL");
  long r = rowOf(*g, sequence);
  if (r < 0)
    return invalid("kiln_generator_prefill: sequence " + std::to_string(sequence) + " is not one of this generator's");
  try {
    kiln_error *e = prefillRow(*g, size_t(r), max_tokens);
    if (out_remaining)
      *out_remaining = g->rows[size_t(r)].prompt.size() - g->rows[size_t(r)].prefilled;
    return e;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory prefilling");
  }
}

kiln_error *kiln_generator_step(kiln_generator *g, const int64_t *sequences, size_t count, int32_t *tokens) {
  if (!g || (count > 0 && (!sequences || !tokens)))
    return invalid("kiln_generator_step: generator, sequences or tokens is NULL");
  try {
    return stepSequences(*g, sequences, count, tokens);
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory in a decode step");
  }
}

kiln_error *kiln_generator_remove_sequence(kiln_generator *g, int64_t sequence) {
  if (!g)
    return invalid("kiln_generator_remove_sequence: generator is NULL");
  long r = rowOf(*g, sequence);
  if (r < 0)
    return invalid("kiln_generator_remove_sequence: sequence " + std::to_string(sequence) +
                   " is not one of this generator's");
  // The row's cache entries stay as they are: the next sequence in the row writes from 0 and
  // masks what lies past its own length. A paged cache's blocks go back to the pool.
  releaseBlocks(*g, g->rows[size_t(r)]);
  g->rows[size_t(r)] = kiln::runtime::CacheRow{};
  return nullptr;
}

kiln_error *kiln_generator_step_draft(kiln_generator *g, int64_t sequence, const int32_t *draft, size_t draft_count,
                                      int32_t *tokens, size_t *out_count) {
  if (out_count)
    *out_count = 0;
  if (!g || !tokens || !out_count || (draft_count > 0 && !draft))
    return invalid("kiln_generator_step_draft: generator, draft, tokens or out_count is NULL");
  long r = rowOf(*g, sequence);
  if (r < 0)
    return invalid("kiln_generator_step_draft: sequence " + std::to_string(sequence) + " is not one of this generator's");
  const CacheRow &row = g->rows[size_t(r)];
  if (row.prefilled < row.prompt.size())
    return invalid("kiln_generator_step_draft: sequence " + std::to_string(sequence) + " has " +
                   std::to_string(row.prompt.size() - row.prefilled) + " prompt tokens left to prefill");
  try {
    std::vector<int32_t> produced;
    if (kiln_error *e = speculateRow(*g, size_t(r), draft, draft_count, produced))
      return e;
    std::copy(produced.begin(), produced.end(), tokens);
    *out_count = produced.size();
    return nullptr;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory in a speculative step");
  }
}

kiln_error *kiln_generator_set_sequence_tokens(kiln_generator *g, int64_t sequence, const int32_t *tokens,
                                               size_t count) {
  if (!g)
    return invalid("kiln_generator_set_sequence_tokens: generator is NULL");
  long r = rowOf(*g, sequence);
  if (r < 0)
    return invalid("kiln_generator_set_sequence_tokens: sequence " + std::to_string(sequence) +
                   " is not one of this generator's");
  if (kiln_error *e = checkPrompt(*g, tokens, count, "the tokens"))
    return e;
  if (int64_t(count) + 1 > g->capacity)
    return makeError(KILN_ERROR_OUT_OF_RANGE, "the tokens (" + std::to_string(count) +
                                                  ") leave no room for a new token in the context of " +
                                                  std::to_string(g->capacity));
  try {
    setRowTokens(*g, size_t(r), tokens, count);
    return nullptr;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory setting a sequence's tokens");
  }
}

size_t kiln_lookup_draft(const int32_t *tokens, size_t count, size_t k, size_t max_ngram, int32_t *draft) {
  if (!tokens || !draft)
    return 0;
  try {
    const std::vector<int32_t> d = kiln::runtime::lookupDraft(tokens, count, k, max_ngram);
    std::copy(d.begin(), d.end(), draft);
    return d.size();
  } catch (...) {
    return 0;
  }
}

void kiln_generator_speculation_stats(const kiln_generator *g, int64_t *drafted, int64_t *accepted) {
  if (drafted)
    *drafted = g ? g->draftedTokens : 0;
  if (accepted)
    *accepted = g ? g->acceptedTokens : 0;
}

const float *kiln_generator_sequence_logits(const kiln_generator *g, int64_t sequence) {
  if (!g)
    return nullptr;
  long r = rowOf(*g, sequence);
  if (r < 0 || g->rows[size_t(r)].prefilled == 0)
    return nullptr;
  return &g->logits[size_t(r) * size_t(g->vocab)];
}

int64_t kiln_generator_sequence_length(const kiln_generator *g, int64_t sequence) {
  if (!g)
    return -1;
  long r = rowOf(*g, sequence);
  return r < 0 ? -1 : g->rows[size_t(r)].length;
}

void kiln_generator_cache_stats_get(const kiln_generator *g, kiln_generator_cache_stats *out) {
  if (!out || out->struct_size < sizeof(size_t))
    return;
  kiln_generator_cache_stats s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = std::min(out->struct_size, sizeof s);
  if (g) {
    int64_t perToken = 0;
    for (const auto &c : g->caches)
      perToken += g->blockSize > 0 ? int64_t(c.elements / std::max<size_t>(1, size_t(poolBlocks(*g, g->rows.size()))) *
                                             sizeof(float)) / g->blockSize
                  : g->capacity > 0 ? int64_t(c.rowElements * sizeof(float)) / g->capacity : 0;
    s.bytes_per_token = perToken;
    s.block_size = g->blockSize > 0 ? g->blockSize : g->capacity;
    s.rows = int64_t(g->rows.size());
    s.max_sequences = g->maxSequences;
    for (const auto &r : g->rows)
      if (r.used) {
        ++s.sequences;
        s.tokens_cached += r.length;
      }
    if (g->blockSize > 0) {
      // What the sequences hold: whole blocks, so a sequence's last block counts in full.
      // Before the first sequence: the pool the sequence API will allocate (max_sequences rows).
      s.blocks_total = poolBlocks(*g, g->rows.empty() ? size_t(g->maxSequences) : g->rows.size());
      s.blocks_in_use = g->rows.empty() ? 0 : g->pool.held();
      s.bytes_in_use = s.blocks_in_use * g->blockSize * perToken;
      s.bytes_reserved = g->rows.empty() ? 0 : s.blocks_total * g->blockSize * perToken;
      const kiln::runtime::BlockPool::Stats &p = g->pool.stats();
      s.blocks_cached = p.cached;
      s.blocks_idle = p.idle;
      s.prefix_lookups = p.lookups;
      s.prefix_lookup_tokens = p.lookupTokens;
      s.prefix_hit_blocks = p.hitBlocks;
      s.prefix_evictions = p.evictions;
    } else {
      // One block of the whole context per row: a row in use holds all of it.
      s.blocks_total = s.rows;
      s.blocks_in_use = s.sequences;
      s.bytes_in_use = s.sequences * g->capacity * perToken;
      s.bytes_reserved = s.rows * g->capacity * perToken;
    }
  }
  std::memcpy(out, &s, s.struct_size);
}

} // extern "C"
