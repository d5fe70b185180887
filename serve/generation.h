// One text generation request as a step job of the decoders' engine (scheduler.h): the engine
// prefills and decodes it batched with others; the job detokenizes, apply stop tokens and stop strings, and hand the output to the HTTP thread that
// waits for it (plain response or SSE stream).
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/tokenizer.h"
#include "scheduler.h"
#include "trace.h"

namespace kiln::serve {

class Metrics;
struct ServedModel;

struct GenerationParams {
  std::vector<int32_t> prompt;
  int32_t maxTokens = 16;
  kiln_sampling_params sampling{};
  std::vector<std::string> stopStrings;
  bool ignoreEos = false;
  Clock::time_point deadline;
  Clock::duration minStep{0}; // --min-step-ms
};

// What the waiting HTTP thread gets: the output since its last call.
struct GenerationUpdate {
  // Per new token, in order: its id and the text it released (complete UTF-8, stop strings
  // removed; empty while a character or a possible stop string is held back). A stream sends
  // one event per token, as OpenAI's API does, even when several arrived since the last call.
  struct Token {
    int32_t id;
    std::string text;
  };
  std::vector<Token> tokens;
  bool done = false;
  std::string finishReason;     // stop, length (when done, no error)
  std::string error;            // when done with an error: its message
  std::string errorReason;      // timeout, cancelled, runtime_error
};

class GenerationJob : public StepJob {
public:
  GenerationJob(const ServedModel &model, GenerationParams params, std::shared_ptr<RequestTrace> trace,
                Metrics &metrics);
  ~GenerationJob() override;
  void dropped(const std::string &reason) override;
  void dequeued() override;

  // Waits until there is new output, the job is done, or `until`; returns what is new since the
  // previous call.
  GenerationUpdate wait(Clock::time_point until);
  size_t promptTokens() const { return params_.prompt.size(); }
  size_t completionTokens() const;
  double ttftSeconds() const; // -1 before the first token

  // The engine's side (StepJob): begin() before anything runs; prefilled() once the prompt has
  // run; per step, mayContinue() before the model run (cancellation, deadline, room in the cache:
  // `position`/`capacity` of this sequence) and acceptToken() with the token sampled for this
  // sequence. Each returns false once the sequence has finished (the job is then done).
  bool begin() override;
  const std::vector<int32_t> &prompt() const override { return params_.prompt; }
  const kiln_sampling_params &sampling() const override { return params_.sampling; }
  void prefilled() override;
  bool mayContinue(int64_t position, int64_t capacity, bool first) override;
  bool acceptToken(int32_t token, bool first) override;
  void fail(const std::string &message) override { finish("", message, "runtime_error"); }
  Clock::duration minStep() const override { return params_.minStep; }
  size_t maxCacheTokens() const override { return params_.prompt.size() + size_t(std::max(params_.maxTokens, 0)); }

private:
  void cancelledFinish();
  void finish(const std::string &reason, const std::string &error = "", const std::string &errorReason = "");
  void emit(const std::string &piece, int32_t id, bool final);

  const ServedModel &model_;
  GenerationParams params_;
  std::shared_ptr<RequestTrace> trace_;
  Metrics &metrics_;
  kiln_tokenizer_stream *stream_ = nullptr;
  std::string pending_; // decoded text held back: it may be the start of a stop string
  Clock::time_point lastToken_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<GenerationUpdate::Token> tokens_; // not yet taken by wait()
  size_t generated_ = 0;
  bool done_ = false;
  std::string finishReason_, error_, errorReason_;
  double ttft_ = -1;
};

} // namespace kiln::serve
