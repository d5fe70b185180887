// The tokenizer (tokenizer.h) and decoding (kiln_generator), step by step or a batch at once.
#ifndef KILN_PYTHON_GENERATION_H
#define KILN_PYTHON_GENERATION_H

#include "errors.h"
#include "kiln/kiln.h"
#include "kiln/tokenizer.h"
#include "model.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln_python {

namespace py = pybind11;

// A loaded tokenizer.json, shared by its Python object and the generators that stream text with it.
struct Tokenizer {
  std::shared_ptr<kiln_tokenizer> tok;

  static std::shared_ptr<Tokenizer> fromFile(const std::string &path) {
    kiln_tokenizer *t = nullptr;
    check(kiln_tokenizer_load(path.c_str(), &t));
    auto r = std::make_shared<Tokenizer>();
    r->tok = std::shared_ptr<kiln_tokenizer>(t, kiln_tokenizer_destroy);
    return r;
  }
  static std::shared_ptr<Tokenizer> fromStr(const std::string &json) {
    kiln_tokenizer *t = nullptr;
    check(kiln_tokenizer_load_from_memory(json.data(), json.size(), &t));
    auto r = std::make_shared<Tokenizer>();
    r->tok = std::shared_ptr<kiln_tokenizer>(t, kiln_tokenizer_destroy);
    return r;
  }
  std::vector<int32_t> encode(const std::string &text, bool addSpecial, bool parseSpecial) const {
    int32_t *ids = nullptr;
    size_t count = 0;
    uint32_t flags = (addSpecial ? KILN_TOKENIZER_ADD_SPECIAL : 0) | (parseSpecial ? KILN_TOKENIZER_PARSE_SPECIAL : 0);
    check(kiln_tokenizer_encode(tok.get(), text.data(), text.size(), flags, &ids, &count));
    std::vector<int32_t> r(ids, ids + count);
    kiln_tokenizer_ids_free(ids);
    return r;
  }
  py::str decode(const std::vector<int32_t> &ids, bool skipSpecial) const {
    char *text = nullptr;
    size_t len = 0;
    check(kiln_tokenizer_decode(tok.get(), ids.data(), ids.size(), skipSpecial ? KILN_TOKENIZER_SKIP_SPECIAL : 0, &text,
                                &len));
    py::str r(text, len);
    kiln_tokenizer_text_free(text);
    return r;
  }
  // The end-of-sequence id, found as kiln-run generate finds it; None if the vocabulary has none.
  std::optional<int32_t> eos() const {
    for (const char *n : {"<|endoftext|>", "</s>", "<|eot_id|>", "<|end_of_text|>", "<|im_end|>", "<eos>"}) {
      int32_t id = kiln_tokenizer_token_to_id(tok.get(), n);
      if (id >= 0)
        return id;
    }
    return std::nullopt;
  }
};

// One decoding run over a generator, stepped by Python's iterator protocol so that tokens stream
// as they are made. Mirrors kiln_generate's loop (stop tokens included, max_new_tokens, a full
// cache ends it) and measures the same statistics.
struct Generator {
  std::shared_ptr<Model> model;
  kiln_generator *gen = nullptr;
  std::shared_ptr<Tokenizer> tokenizer;
  std::atomic<bool> cancelled{false};
  std::mutex busy; // one call at a time: start/next release the GIL while the model runs

  // State of the current generation.
  bool active = false, first = true;
  int32_t maxNew = 0, produced = 0;
  std::vector<int32_t> stop;
  std::string finish = "none";
  kiln_tokenizer_stream *stream = nullptr;
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0;
  size_t promptTokens = 0;
  double ttftMs = 0;
  std::vector<double> stepMs;

  Generator(std::shared_ptr<Model> m, int64_t maxContext, std::shared_ptr<Tokenizer> t)
      : model(std::move(m)), tokenizer(std::move(t)) {
    kiln_generator_options o;
    kiln_generator_options_init(&o);
    o.max_context = maxContext;
    check(kiln_generator_create(model->model.get(), &o, &gen));
  }
  ~Generator() {
    kiln_tokenizer_stream_destroy(stream);
    kiln_generator_destroy(gen);
  }

  void start(py::object prompt, int32_t maxNewTokens, float temperature, int32_t topK, float topP, float minP,
             float repetitionPenalty, uint64_t seed, std::optional<std::vector<int32_t>> stopIds, bool addSpecial) {
    std::vector<int32_t> ids;
    if (py::isinstance<py::str>(prompt)) {
      if (!tokenizer)
        invalid("a text prompt needs a tokenizer: model.generator(tokenizer=kiln.Tokenizer.from_file(...))");
      ids = tokenizer->encode(py::cast<std::string>(prompt), addSpecial, false);
    } else {
      try {
        ids = py::cast<std::vector<int32_t>>(prompt);
      } catch (const py::cast_error &) {
        invalid("the prompt must be text or a sequence of token ids (int32), got " +
                std::string(py::str(py::repr(prompt))).substr(0, 80));
      }
    }
    if (maxNewTokens < 1)
      invalid("max_new_tokens must be >= 1, got " + std::to_string(maxNewTokens));
    kiln_sampling_params sp;
    kiln_sampling_params_init(&sp);
    sp.temperature = temperature;
    sp.top_k = topK;
    sp.top_p = topP;
    sp.min_p = minP;
    sp.repetition_penalty = repetitionPenalty;
    sp.seed = seed;
    if (stopIds)
      stop = *stopIds;
    else if (tokenizer && tokenizer->eos())
      stop = {*tokenizer->eos()};
    else
      stop.clear();
    const int32_t *p = ids.data();
    const size_t len = ids.size();
    std::unique_lock<std::mutex> lock(busy, std::try_to_lock);
    if (!lock)
      throw KilnError{KILN_ERROR_BUSY, "the generator is in use by another thread"};
    cancelled = false;
    t0 = Clock::now();
    kiln_error *err = nullptr;
    {
      py::gil_scoped_release nogil;
      err = kiln_generator_start(gen, &p, &len, 1, &sp);
    }
    check(err);
    kiln_tokenizer_stream_destroy(stream);
    stream = nullptr;
    if (tokenizer)
      check(kiln_tokenizer_stream_create(tokenizer->tok.get(), KILN_TOKENIZER_SKIP_SPECIAL, &stream));
    active = true;
    first = true;
    maxNew = maxNewTokens;
    produced = 0;
    finish = "none";
    promptTokens = len;
    ttftMs = 0;
    stepMs.clear();
  }

  // The next (id, text) or nullopt when the generation has finished.
  std::optional<std::pair<int32_t, std::optional<py::str>>> next() {
    std::unique_lock<std::mutex> lock(busy, std::try_to_lock);
    if (!lock)
      throw KilnError{KILN_ERROR_BUSY, "the generator is in use by another thread"};
    if (!active)
      return std::nullopt;
    if (cancelled.load()) {
      end("cancelled");
      return std::nullopt;
    }
    if (!first && kiln_generator_position(gen) + 1 > kiln_generator_max_context(gen)) {
      end("context");
      return std::nullopt;
    }
    int32_t token = 0;
    kiln_error *err = nullptr;
    auto ts = Clock::now();
    {
      py::gil_scoped_release nogil;
      err = kiln_generator_next(gen, &token);
    }
    if (err) {
      active = false;
      check(err);
    }
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - (first ? t0 : ts)).count();
    if (first)
      ttftMs = ms;
    else
      stepMs.push_back(ms);
    first = false;
    ++produced;
    std::optional<py::str> text;
    if (stream) {
      const char *s = nullptr;
      size_t n = 0;
      check(kiln_tokenizer_stream_push(stream, token, &s, &n));
      std::string piece(s, n);
      const bool stops = std::find(stop.begin(), stop.end(), token) != stop.end();
      if (stops || produced >= maxNew) {
        check(kiln_tokenizer_stream_flush(stream, &s, &n));
        piece.append(s, n);
      }
      text = py::str(piece);
    }
    if (std::find(stop.begin(), stop.end(), token) != stop.end())
      end("stop_token");
    else if (produced >= maxNew)
      end("length");
    return std::make_pair(token, text);
  }

  // A whole batch at once through kiln_generate (left-padded prompts, the C API's loop and
  // statistics), the GIL released throughout. Returns (tokens per sequence, finish reason per
  // sequence, stats).
  py::tuple generateBatch(const std::vector<std::vector<int32_t>> &prompts, int32_t maxNewTokens, float temperature,
                          int32_t topK, float topP, float minP, float repetitionPenalty, uint64_t seed,
                          std::optional<std::vector<int32_t>> stopIds, int32_t speculateLookup, int32_t lookupNgram,
                          Generator *draft, int32_t draftTokens) {
    if (prompts.empty())
      invalid("generate_batch needs at least one prompt");
    if (maxNewTokens < 1)
      invalid("max_new_tokens must be >= 1, got " + std::to_string(maxNewTokens));
    if (draft == this)
      invalid("a generator cannot be its own draft: load the draft model into a generator of its own");
    std::unique_lock<std::mutex> lock(busy, std::try_to_lock);
    if (!lock)
      throw KilnError{KILN_ERROR_BUSY, "the generator is in use by another thread"};
    std::unique_lock<std::mutex> draftLock;
    if (draft) {
      draftLock = std::unique_lock<std::mutex>(draft->busy, std::try_to_lock);
      if (!draftLock)
        throw KilnError{KILN_ERROR_BUSY, "the draft generator is in use by another thread"};
      draft->active = false;
    }
    kiln_generate_options o;
    kiln_generate_options_init(&o);
    kiln_sampling_params_init(&o.sampling);
    o.sampling.temperature = temperature;
    o.sampling.top_k = topK;
    o.sampling.top_p = topP;
    o.sampling.min_p = minP;
    o.sampling.repetition_penalty = repetitionPenalty;
    o.sampling.seed = seed;
    o.max_new_tokens = maxNewTokens;
    o.speculate_lookup = speculateLookup;
    if (lookupNgram > 0)
      o.lookup_ngram = lookupNgram;
    o.draft = draft ? draft->gen : nullptr;
    if (draftTokens > 0)
      o.draft_tokens = draftTokens;
    int64_t draftedBefore = 0, acceptedBefore = 0;
    kiln_generator_speculation_stats(gen, &draftedBefore, &acceptedBefore);
    std::vector<int32_t> stops;
    if (stopIds)
      stops = *stopIds;
    else if (tokenizer && tokenizer->eos())
      stops = {*tokenizer->eos()};
    o.stop_tokens = stops.data();
    o.stop_token_count = stops.size();
    std::vector<const int32_t *> ptrs;
    std::vector<size_t> lens;
    for (const auto &p : prompts) {
      ptrs.push_back(p.data());
      lens.push_back(p.size());
    }
    active = false; // a step-by-step generation in progress ends here
    kiln_generation *g = nullptr;
    kiln_error *err = nullptr;
    {
      py::gil_scoped_release nogil;
      err = kiln_generate(gen, ptrs.data(), lens.data(), prompts.size(), &o, &g);
    }
    check(err);
    std::unique_ptr<kiln_generation, void (*)(kiln_generation *)> owner(g, kiln_generation_destroy);
    static const char *reasons[] = {"none", "stop_token", "length", "cancelled", "context"};
    py::list tokens, finish;
    for (size_t i = 0; i < kiln_generation_batch(g); ++i) {
      size_t n = 0;
      const int32_t *ids = kiln_generation_tokens(g, i, &n);
      tokens.append(py::cast(std::vector<int32_t>(ids, ids + n)));
      const int r = int(kiln_generation_finish_reason(g, i));
      finish.append(r >= 0 && r <= 4 ? reasons[r] : "none");
    }
    kiln_generation_stats st;
    kiln_generation_stats_get(g, &st);
    py::dict d;
    d["prompt_tokens"] = st.prompt_tokens;
    d["new_tokens"] = st.new_tokens;
    d["steps"] = st.steps;
    d["time_to_first_token_ms"] = st.time_to_first_token_ms;
    d["decode_ms"] = st.decode_ms;
    d["inter_token_median_ms"] = st.inter_token_median_ms;
    d["inter_token_p99_ms"] = st.inter_token_p99_ms;
    d["tokens_per_second"] = st.tokens_per_second;
    if (speculateLookup > 0 || draft) {
      int64_t drafted = 0, accepted = 0;
      kiln_generator_speculation_stats(gen, &drafted, &accepted);
      d["draft_tokens"] = drafted - draftedBefore;
      d["accepted_tokens"] = accepted - acceptedBefore;
    }
    return py::make_tuple(tokens, finish, d);
  }

  void end(const char *reason) {
    active = false;
    finish = reason;
  }

  py::dict stats() const {
    py::dict d;
    double decode = 0;
    for (double ms : stepMs)
      decode += ms;
    std::vector<double> sorted = stepMs;
    std::sort(sorted.begin(), sorted.end());
    d["prompt_tokens"] = promptTokens;
    d["new_tokens"] = produced;
    d["steps"] = stepMs.size();
    d["time_to_first_token_ms"] = ttftMs;
    d["decode_ms"] = decode;
    d["inter_token_median_ms"] = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
    d["inter_token_p99_ms"] = sorted.empty() ? 0.0 : sorted[std::min(sorted.size() - 1, size_t(sorted.size() * 0.99))];
    d["tokens_per_second"] = decode > 0 ? (produced > 1 ? produced - 1 : 0) / (decode / 1000.0) : 0.0;
    d["finish_reason"] = finish;
    return d;
  }
};

} // namespace kiln_python

#endif
