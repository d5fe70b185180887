// GenerationJob: one sequence as the decoders' engine decodes it: stop rules, detokenizing, streaming.
#include "generation.h"

#include <algorithm>

#include "metrics.h"
#include "models.h"

namespace kiln::serve {
namespace {

std::string takeError(kiln_error *e) {
  std::string m = kiln_error_message(e);
  kiln_error_free(e);
  return m;
}

} // namespace

GenerationJob::GenerationJob(const ServedModel &model, GenerationParams params, std::shared_ptr<RequestTrace> trace,
                             Metrics &metrics)
    : model_(model), params_(std::move(params)), trace_(std::move(trace)), metrics_(metrics) {}

GenerationJob::~GenerationJob() { kiln_tokenizer_stream_destroy(stream_); }

void GenerationJob::cancelledFinish() {
  if (cancelReason() == "shutdown")
    finish("", "the server is shutting down", "shutdown");
  else
    finish("", "cancelled", "cancelled");
}

void GenerationJob::dequeued() { trace_->begin("prefill"); }

void GenerationJob::dropped(const std::string &reason) {
  finish("", reason == "cancelled" ? "cancelled before it started" : "the server is shutting down", reason);
}

bool GenerationJob::begin() {
  if (cancelled()) {
    cancelledFinish();
    return false;
  }
  if (model_.tokenizer)
    if (kiln_error *e = kiln_tokenizer_stream_create(model_.tokenizer, KILN_TOKENIZER_SKIP_SPECIAL, &stream_)) {
      finish("", takeError(e), "runtime_error");
      return false;
    }
  return true;
}

void GenerationJob::prefilled() { metrics_.addPromptTokens(model_.name(), double(params_.prompt.size())); }

bool GenerationJob::mayContinue(int64_t position, int64_t capacity, bool first) {
  // Checked before every model run, so a cancelled or late sequence frees its slot within a step.
  if (cancelled()) {
    cancelledFinish();
    return false;
  }
  if (Clock::now() > params_.deadline) {
    finish("", "the request timed out", "timeout");
    return false;
  }
  // As kiln_generate: after the first token, a full cache ends the sequence ("length").
  if (!first && position + 1 > capacity) {
    finish("length");
    return false;
  }
  return true;
}

bool GenerationJob::acceptToken(int32_t token, bool first) {
  auto now = Clock::now();
  if (first) {
    trace_->begin("decode");
    std::lock_guard<std::mutex> lock(mutex_);
    ttft_ = std::chrono::duration<double>(now - trace_->arrival()).count();
    metrics_.observe("kiln:time_to_first_token_seconds", model_.name(), ttft_);
  } else {
    metrics_.observe("kiln:inter_token_latency_seconds", model_.name(),
                     std::chrono::duration<double>(now - lastToken_).count());
  }
  lastToken_ = now;
  metrics_.addGenerationTokens(model_.name(), 1);

  std::string piece;
  if (stream_) {
    const char *text = nullptr;
    size_t len = 0;
    if (kiln_error *e = kiln_tokenizer_stream_push(stream_, token, &text, &len)) {
      finish("", takeError(e), "runtime_error");
      return false;
    }
    piece.assign(text, len);
  }
  bool stopToken = !params_.ignoreEos &&
                   std::find(model_.stopIds.begin(), model_.stopIds.end(), token) != model_.stopIds.end();
  size_t count;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    count = ++generated_;
  }
  bool last = stopToken || int32_t(count) >= params_.maxTokens;
  if (last && stream_) {
    const char *text = nullptr;
    size_t len = 0;
    if (kiln_error *e = kiln_tokenizer_stream_flush(stream_, &text, &len)) {
      finish("", takeError(e), "runtime_error");
      return false;
    }
    piece.append(text, len);
  }
  emit(piece, token, last);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) // a stop string ended it
      return false;
  }
  if (last) {
    finish(stopToken ? "stop" : "length");
    return false;
  }
  return true;
}

// Releases text up to any stop string (then finishes with "stop"), holding back a tail that could
// be the start of one, so a client never sees part of a stop string.
void GenerationJob::emit(const std::string &piece, int32_t id, bool final) {
  pending_ += piece;
  size_t cut = std::string::npos;
  for (const std::string &s : params_.stopStrings) {
    size_t p = pending_.find(s);
    if (p != std::string::npos)
      cut = std::min(cut, p);
  }
  std::string release;
  bool stopped = cut != std::string::npos;
  if (stopped) {
    release = pending_.substr(0, cut);
    pending_.clear();
  } else {
    size_t hold = 0;
    if (!final)
      for (const std::string &s : params_.stopStrings)
        for (size_t k = std::min(s.size() - 1, pending_.size()); k > hold; --k)
          if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
            hold = k;
            break;
          }
    // Never split a UTF-8 character when holding back.
    while (hold < pending_.size() && hold > 0 && (pending_[pending_.size() - hold] & 0xC0) == 0x80)
      ++hold;
    release = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tokens_.push_back({id, release});
  }
  changed_.notify_all();
  if (stopped)
    finish("stop");
}

void GenerationJob::finish(const std::string &reason, const std::string &error, const std::string &errorReason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_)
      return;
    done_ = true;
    finishReason_ = reason;
    error_ = error;
    errorReason_ = errorReason;
  }
  trace_->begin("return");
  changed_.notify_all();
}

GenerationUpdate GenerationJob::wait(Clock::time_point until) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, until, [&] { return done_ || !tokens_.empty(); });
  GenerationUpdate u;
  u.tokens.swap(tokens_);
  u.done = done_;
  u.finishReason = finishReason_;
  u.error = error_;
  u.errorReason = errorReason_;
  return u;
}

size_t GenerationJob::completionTokens() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generated_;
}

double GenerationJob::ttftSeconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ttft_;
}

} // namespace kiln::serve
