// The OpenAI-compatible API over the per-model schedulers.
#include "openai_api.h"

#include <cmath>
#include <random>
#include <set>
#include <thread>

#include "errors.h"
#include "generation.h"
#include "http_client_watch.h"
#include "http_server.h"

namespace kiln::serve {
namespace {

using json = nlohmann::json;

// How often a waiting HTTP thread looks at its client's socket: a client that goes away is
// noticed within this, and its sequence stops before the next step after that.
constexpr auto kPoll = std::chrono::milliseconds(20);

json parseBody(const httplib::Request &req) {
  json body = json::parse(req.body); // a parse error becomes a 400 in the route wrapper
  if (!body.is_object())
    throw badRequest("", "the request body must be a JSON object");
  return body;
}

double number(const json &b, const char *key, double lo, double hi, double def) {
  if (!b.contains(key) || b[key].is_null())
    return def;
  const json &v = b[key];
  if (!v.is_number())
    throw badRequest(key, std::string(key) + ": expected a number");
  double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    throw badRequest(key, std::string(key) + ": " + v.dump() + " is outside [" + json(lo).dump() + ", " +
                              json(hi).dump() + "]");
  return x;
}

int64_t integer(const json &b, const char *key, int64_t lo, int64_t hi, int64_t def) {
  if (!b.contains(key) || b[key].is_null())
    return def;
  const json &v = b[key];
  if (!v.is_number_integer())
    throw badRequest(key, std::string(key) + ": expected an integer");
  if (v.is_number_unsigned() ? (v.get<uint64_t>() > uint64_t(hi) || (lo > 0 && v.get<uint64_t>() < uint64_t(lo)))
                              : (v.get<int64_t>() < lo || v.get<int64_t>() > hi))
    throw badRequest(key, std::string(key) + ": " + v.dump() + " is outside [" + std::to_string(lo) + ", " +
                              std::to_string(hi) + "]");
  return v.get<int64_t>();
}

bool boolean(const json &b, const char *key, bool def) {
  if (!b.contains(key) || b[key].is_null())
    return def;
  if (!b[key].is_boolean())
    throw badRequest(key, std::string(key) + ": expected true or false");
  return b[key].get<bool>();
}

// Fields of the OpenAI API kiln-serve does not implement: accepted at their default (clients
// often send the defaults), refused with a 400 naming them otherwise. Any other unknown field is
// refused too: silently ignoring a parameter would return something the client did not ask for.
void checkFields(const json &b, const std::set<std::string> &supported) {
  for (auto &[k, v] : b.items()) {
    if (supported.count(k) || k == "user")
      continue;
    bool atDefault = v.is_null() || (k == "n" && v == 1) || (k == "best_of" && v == 1) || (k == "echo" && v == false) ||
                     (k == "logprobs" && v == false) || ((k == "presence_penalty" || k == "frequency_penalty") && v == 0) ||
                     (k == "logit_bias" && v.is_object() && v.empty()) || (k == "tools" && v.is_array() && v.empty()) ||
                     (k == "tool_choice" && v == "none") || (k == "parallel_tool_calls" && v.is_boolean()) ||
                     (k == "response_format" && v.is_object() && v.value("type", "") == "text");
    static const std::set<std::string> known = {"n", "best_of", "echo", "logprobs", "top_logprobs", "presence_penalty",
                                                "frequency_penalty", "logit_bias", "suffix", "tools", "tool_choice",
                                                "parallel_tool_calls", "response_format", "functions", "function_call"};
    if (known.count(k)) {
      if (!atDefault)
        throw badRequest(k, k + ": not supported by kiln-serve (only its default is accepted)");
    } else {
      throw badRequest(k, k + ": unknown or unsupported field");
    }
  }
}

struct Prepared {
  ServedModel *model = nullptr;
  GenerationParams params;
  bool stream = false;
  bool includeUsage = false;
  bool returnIds = false;
};

ServedModel &lookupModel(ServerState &st, const json &b, Call &call) {
  ServedModel *m = nullptr;
  if (!b.contains("model") || b["model"].is_null()) {
    if (st.models.all().size() != 1)
      throw badRequest("model", "model: required when the server serves several models");
    m = st.models.all()[0].get();
  } else {
    if (!b["model"].is_string())
      throw badRequest("model", "model: expected a string");
    m = st.models.find(b["model"].get<std::string>());
    if (!m)
      throw HttpError(404, "model_not_found", "model '" + b["model"].get<std::string>() + "' is not served here", "model");
  }
  call.model = m->name();
  if (!m->decoder)
    throw badRequest("model", "model '" + m->name() +
                                  "' is a forward model, not a decoder: use POST /v2/models/" + m->name() + "/infer");
  return *m;
}

std::vector<int32_t> encode(const ServedModel &m, const std::string &text, uint32_t flags, const char *field) {
  if (!m.tokenizer)
    throw badRequest(field, std::string(field) + ": model '" + m.name() +
                                "' was served without a tokenizer; send the prompt as token ids");
  int32_t *ids = nullptr;
  size_t count = 0;
  if (kiln_error *e = kiln_tokenizer_encode(m.tokenizer, text.data(), text.size(), flags, &ids, &count)) {
    std::string msg = kiln_error_message(e);
    kiln_error_free(e);
    throw badRequest(field, std::string(field) + ": " + msg);
  }
  std::vector<int32_t> out(ids, ids + count);
  kiln_tokenizer_ids_free(ids);
  return out;
}

// The sampling, length and stop fields both APIs share.
void parseCommon(ServerState &st, const json &b, Prepared &p, bool chat) {
  ServedModel &m = *p.model;
  GenerationParams &g = p.params;
  kiln_sampling_params_init(&g.sampling);
  // OpenAI's default temperature is 1 (sampling); 0 is greedy.
  g.sampling.temperature = float(number(b, "temperature", 0, 100, 1.0));
  g.sampling.top_p = float(number(b, "top_p", 0, 1, 1.0));
  if (b.contains("top_p") && b["top_p"].is_number() && b["top_p"].get<double>() <= 0)
    throw badRequest("top_p", "top_p: must be greater than 0");
  int64_t topK = integer(b, "top_k", -1, 1 << 30, 0);
  g.sampling.top_k = int32_t(topK < 0 ? 0 : topK); // -1 (vLLM's "off") and 0 both mean off
  g.sampling.min_p = float(number(b, "min_p", 0, 1, 0));
  g.sampling.repetition_penalty = float(number(b, "repetition_penalty", 1e-3, 100, 1.0));
  if (b.contains("seed") && !b["seed"].is_null()) {
    if (!b["seed"].is_number_integer())
      throw badRequest("seed", "seed: expected an integer");
    g.sampling.seed = b["seed"].is_number_unsigned() ? b["seed"].get<uint64_t>() : uint64_t(b["seed"].get<int64_t>());
  } else {
    static std::mutex mu;
    static std::mt19937_64 rng(std::random_device{}());
    std::lock_guard<std::mutex> lock(mu);
    g.sampling.seed = rng();
  }
  g.ignoreEos = boolean(b, "ignore_eos", false);
  if (b.contains("stop") && !b["stop"].is_null()) {
    const json &s = b["stop"];
    if (s.is_string())
      g.stopStrings.push_back(s.get<std::string>());
    else if (s.is_array() && s.size() <= 16) {
      for (const json &e : s) {
        if (!e.is_string())
          throw badRequest("stop", "stop: expected a string or an array of up to 16 strings");
        g.stopStrings.push_back(e.get<std::string>());
      }
    } else
      throw badRequest("stop", "stop: expected a string or an array of up to 16 strings");
    for (const std::string &s : g.stopStrings)
      if (s.empty())
        throw badRequest("stop", "stop: empty stop strings are not allowed");
    if (!g.stopStrings.empty() && !m.tokenizer)
      throw badRequest("stop", "stop: stop strings need a model served with a tokenizer");
  }
  p.stream = boolean(b, "stream", false);
  if (b.contains("stream_options") && !b["stream_options"].is_null()) {
    const json &so = b["stream_options"];
    if (!so.is_object())
      throw badRequest("stream_options", "stream_options: expected an object");
    for (auto &[k, v] : so.items())
      if (k != "include_usage" && k != "continuous_usage_stats")
        throw badRequest("stream_options." + k, "stream_options." + k + ": unsupported");
    p.includeUsage = boolean(so, "include_usage", false);
  }
  // Without a tokenizer the ids are the only output, so they are always returned.
  p.returnIds = boolean(b, "return_token_ids", !m.tokenizer);

  // Length: the prompt must leave room for one new token; an explicit max_tokens must fit too.
  int64_t promptLen = int64_t(g.prompt.size());
  const char *lenKey = chat && b.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  bool explicitMax = b.contains(lenKey) && !b[lenKey].is_null();
  int64_t maxTokens = integer(b, lenKey, 1, 1 << 30, chat ? m.maxContext : 16);
  if (promptLen >= m.maxContext)
    throw HttpError(400, "prompt_too_long",
                    "the prompt has " + std::to_string(promptLen) + " tokens, but the context of model '" + m.name() +
                        "' holds " + std::to_string(m.maxContext) + " tokens including at least one new token",
                    chat ? "messages" : "prompt");
  if (explicitMax && promptLen + maxTokens > m.maxContext)
    throw HttpError(400, "prompt_too_long",
                    "the model's context holds " + std::to_string(m.maxContext) + " tokens, but " +
                        std::to_string(promptLen + maxTokens) + " were requested (" + std::to_string(promptLen) +
                        " in the prompt, " + std::to_string(maxTokens) + " in " + lenKey + ")",
                    lenKey);
  g.maxTokens = int32_t(std::min<int64_t>(maxTokens, m.maxContext - promptLen));
  // A paged cache admits a sequence when the pool has the blocks it may take at most: one that
  // needs more than the whole pool could never run.
  if (m.kvBlockSize > 0) {
    const int64_t need = (promptLen + g.maxTokens + m.kvBlockSize - 1) / m.kvBlockSize;
    if (need > m.kvPoolBlocks)
      throw HttpError(400, "kv_cache_too_small",
                      "the request may take " + std::to_string(promptLen + g.maxTokens) + " tokens (" +
                          std::to_string(promptLen) + " in the prompt, " + std::to_string(g.maxTokens) + " new): " +
                          std::to_string(need) + " KV cache blocks of " + std::to_string(m.kvBlockSize) +
                          " tokens, more than the pool's " + std::to_string(m.kvPoolBlocks) +
                          " (kiln-serve --kv-cache-blocks)",
                      lenKey);
  }
  g.minStep = std::chrono::microseconds(int64_t(st.options.minStepMs * 1000));
  g.deadline = Clock::now() + std::chrono::milliseconds(int64_t(st.options.requestTimeoutSeconds * 1000));
}

void checkIds(const ServedModel &m, const std::vector<int32_t> &ids, const char *field) {
  if (ids.empty())
    throw badRequest(field, std::string(field) + ": the prompt is empty");
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= m.vocab)
      throw badRequest(field, std::string(field) + "[" + std::to_string(i) + "]: token id " + std::to_string(ids[i]) +
                                  " is outside the vocabulary [0, " + std::to_string(m.vocab) + ")");
}

std::shared_ptr<GenerationJob> admit(ServerState &st, Prepared &p, Call &call) {
  auto job = std::make_shared<GenerationJob>(*p.model, p.params, call.trace, st.metrics);
  call.trace->begin("queue");
  switch (p.model->scheduler->submit(job)) {
  case Scheduler::Admission::Admitted:
    return job;
  case Scheduler::Admission::Draining:
    throw HttpError(503, "draining", "the server is shutting down");
  case Scheduler::Admission::QueueFull: {
    HttpError e(429, "queue_full", "model '" + p.model->name() + "' has all " +
                                       std::to_string(p.model->scheduler->slots()) + " slots busy and its queue full");
    e.retryAfterSeconds = p.model->scheduler->retryAfterSeconds();
    throw e;
  }
  }
  return job;
}

// The state of one answer while it is produced, shared by the plain and the streaming path.
struct Answer {
  ServerState *st = nullptr;
  std::shared_ptr<Call> call;
  std::shared_ptr<GenerationJob> job;
  ServedModel *model = nullptr;
  Prepared prepared;
  bool chat = false;
  std::string objectId;
  int64_t created = 0;
  ClientWatch watch;
  std::string text;
  std::vector<int32_t> ids;
  std::string finishReason;
  bool timedOut = false;

  Answer(const httplib::Request &req) : watch(req) {}

  // One wait: new output, or the reason to give up (client gone, deadline). Returns the update.
  GenerationUpdate poll() {
    GenerationUpdate u = job->wait(Clock::now() + kPoll);
    if (u.done)
      return u;
    if (watch.gone()) {
      model->scheduler->cancel(job);
      call->log["client"] = "disconnected";
    } else if (Clock::now() > prepared.params.deadline && !timedOut) {
      timedOut = true;
      model->scheduler->cancel(job);
    }
    return u;
  }

  json usage() const {
    size_t pt = job->promptTokens(), ct = job->completionTokens();
    return {{"prompt_tokens", pt}, {"completion_tokens", ct}, {"total_tokens", pt + ct}};
  }

  // The outcome for metrics and the log; a failure reason or "".
  void record(const GenerationUpdate &u) {
    call->log["prompt_tokens"] = job->promptTokens();
    call->log["completion_tokens"] = job->completionTokens();
    if (job->ttftSeconds() >= 0)
      call->log["ttft_ms"] = job->ttftSeconds() * 1000;
    if (u.error.empty()) {
      call->log["finish_reason"] = u.finishReason;
      st->metrics.requestSucceeded(model->name(), u.finishReason);
      st->metrics.observe("kiln:e2e_request_latency_seconds", model->name(),
                          std::chrono::duration<double>(Clock::now() - call->trace->arrival()).count());
    } else {
      call->failure = timedOut ? "timeout" : u.errorReason.empty() ? "runtime_error" : u.errorReason;
      if (call->failure == "cancelled" && call->log.contains("client"))
        call->failure = "client_disconnected";
      call->log["error"] = timedOut ? "the request timed out" : u.error;
    }
  }

  json choiceChunk(const std::string &piece, const std::vector<int32_t> &newIds, const json &finish) const {
    json c = {{"index", 0}, {"finish_reason", finish}};
    if (chat)
      c["delta"] = piece.empty() && finish.is_null() ? json::object() : json{{"content", piece}};
    else
      c["text"] = piece, c["logprobs"] = nullptr;
    if (prepared.returnIds)
      c["token_ids"] = newIds;
    return c;
  }
};

std::string sse(const json &j) {
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

void handleGeneration(ServerState &st, const httplib::Request &req, httplib::Response &res,
                      std::shared_ptr<Call> call, bool chat) {
  json b = parseBody(req);
  Prepared p;
  p.model = &lookupModel(st, b, *call);
  ServedModel &m = *p.model;
  std::set<std::string> common = {"model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop",
                                  "repetition_penalty", "stream", "stream_options", "return_token_ids", "ignore_eos"};
  if (chat) {
    common.insert({"messages", "max_completion_tokens"});
    checkFields(b, common);
    if (!b.contains("messages") || !b["messages"].is_array())
      throw badRequest("messages", "messages: expected an array of {role, content}");
    std::vector<ChatMessage> msgs;
    for (size_t i = 0; i < b["messages"].size(); ++i) {
      const json &e = b["messages"][i];
      std::string at = "messages[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("role") || !e["role"].is_string())
        throw badRequest(at, at + ": expected an object with a string role");
      ChatMessage msg{e["role"].get<std::string>(), ""};
      if (e.contains("content") && e["content"].is_string())
        msg.content = e["content"].get<std::string>();
      else if (e.contains("content") && e["content"].is_array()) {
        // The content-parts form: text parts only.
        for (const json &part : e["content"]) {
          if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
            throw badRequest(at + ".content", at + ".content: only text parts are supported");
          msg.content += part["text"].get<std::string>();
        }
      } else if (!(e.contains("content") && e["content"].is_null()))
        throw badRequest(at + ".content", at + ".content: expected a string");
      msgs.push_back(msg);
    }
    if (!m.tokenizer)
      throw badRequest("messages", "model '" + m.name() + "' was served without a tokenizer; chat needs one");
    std::string text = renderChat(m.chat, msgs);
    // The template writes the BOS and special markers itself: parse them, add nothing.
    p.params.prompt = encode(m, text, KILN_TOKENIZER_PARSE_SPECIAL, "messages");
    checkIds(m, p.params.prompt, "messages");
  } else {
    common.insert("prompt");
    checkFields(b, common);
    if (!b.contains("prompt"))
      throw badRequest("prompt", "prompt: required");
    json prompt = b["prompt"];
    if (prompt.is_array() && prompt.size() == 1 && (prompt[0].is_string() || prompt[0].is_array()))
      prompt = prompt[0]; // a batch of one
    if (prompt.is_string()) {
      // As Hugging Face's encode by default (and kiln-run generate): BOS added, special tokens parsed.
      p.params.prompt = encode(m, prompt.get<std::string>(), KILN_TOKENIZER_ADD_SPECIAL | KILN_TOKENIZER_PARSE_SPECIAL,
                               "prompt");
    } else if (prompt.is_array() && !prompt.empty() && prompt[0].is_number()) {
      for (size_t i = 0; i < prompt.size(); ++i) {
        if (!prompt[i].is_number_integer())
          throw badRequest("prompt", "prompt[" + std::to_string(i) + "]: expected a token id");
        int64_t id = prompt[i].get<int64_t>();
        if (id < 0 || id >= m.vocab)
          throw badRequest("prompt", "prompt[" + std::to_string(i) + "]: token id " + std::to_string(id) +
                                         " is outside the vocabulary [0, " + std::to_string(m.vocab) + ")");
        p.params.prompt.push_back(int32_t(id));
      }
    } else if (prompt.is_array() && prompt.size() > 1) {
      throw badRequest("prompt", "prompt: batches of several prompts are not supported; send one request each");
    } else {
      throw badRequest("prompt", "prompt: expected a string or an array of token ids");
    }
    checkIds(m, p.params.prompt, "prompt");
  }
  parseCommon(st, b, p, chat);

  auto a = std::make_shared<Answer>(req);
  a->st = &st;
  a->call = call;
  a->model = &m;
  a->prepared = p;
  a->chat = chat;
  a->objectId = (chat ? "chatcmpl-" : "cmpl-") + call->id;
  a->created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  a->job = admit(st, a->prepared, *call);
  call->log["stream"] = p.stream;
  const char *object = chat ? "chat.completion" : "text_completion";

  if (!p.stream) {
    GenerationUpdate u;
    for (;;) {
      u = a->poll();
      for (const auto &t : u.tokens) {
        a->text += t.text;
        a->ids.push_back(t.id);
      }
      if (u.done)
        break;
    }
    a->record(u);
    if (!u.error.empty()) {
      if (call->failure == "timeout")
        throw HttpError(504, "timeout", "the request timed out after " + json(st.options.requestTimeoutSeconds).dump() + " s");
      if (call->failure == "client_disconnected")
        throw HttpError(499, "client_disconnected", "the client closed the connection");
      if (call->failure == "shutdown")
        throw HttpError(503, "shutdown", u.error);
      throw HttpError(500, call->failure, u.error);
    }
    json choice = {{"index", 0}, {"finish_reason", u.finishReason}};
    if (chat)
      choice["message"] = {{"role", "assistant"}, {"content", a->text}};
    else
      choice["text"] = a->text, choice["logprobs"] = nullptr;
    if (p.returnIds) {
      choice["token_ids"] = a->ids;
      choice["prompt_token_ids"] = p.params.prompt;
    }
    json out = {{"id", a->objectId}, {"object", object}, {"created", a->created}, {"model", m.name()},
                {"choices", json::array({choice})}, {"usage", a->usage()}};
    res.set_header("x-kiln-timing", call->trace->header());
    res.status = 200;
    res.set_content(out.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    return;
  }

  // SSE: the content provider runs on this connection's thread after the handler returns and
  // writes events as tokens arrive; the releaser finishes the call however the stream ended.
  call->deferred = true;
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("x-kiln-timing", call->trace->header());
  res.set_chunked_content_provider(
      "text/event-stream",
      [a, object](size_t, httplib::DataSink &sink) -> bool {
        std::string chunkObject = std::string(object) + (a->chat ? ".chunk" : "");
        auto event = [&](const json &choices, const json *usage) {
          json j = {{"id", a->objectId}, {"object", chunkObject}, {"created", a->created},
                    {"model", a->model->name()}, {"choices", choices}};
          if (usage)
            j["usage"] = *usage;
          std::string s = sse(j);
          return sink.write(s.data(), s.size());
        };
        if (a->chat && !event(json::array({{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                                            {"finish_reason", nullptr}}}),
                              nullptr)) {
          a->model->scheduler->cancel(a->job);
          a->call->log["client"] = "disconnected";
        }
        GenerationUpdate u;
        for (;;) {
          u = a->poll();
          for (const auto &t : u.tokens) {
            // A token whose text is held back has nothing to say unless the client wants ids.
            if (t.text.empty() && !a->prepared.returnIds)
              continue;
            if (!event(json::array({a->choiceChunk(t.text, {t.id}, nullptr)}), nullptr)) {
              // The write failed: the client is gone. Stop its sequence, then collect the end.
              a->model->scheduler->cancel(a->job);
              a->call->log["client"] = "disconnected";
              break;
            }
          }
          if (u.done)
            break;
        }
        a->record(u);
        if (u.error.empty()) {
          event(json::array({a->choiceChunk("", {}, u.finishReason)}), nullptr);
          if (a->prepared.includeUsage) {
            json usage = a->usage();
            event(json::array(), &usage);
          }
        } else if (a->call->failure != "client_disconnected") {
          bool timeout = a->call->failure == "timeout";
          int code = timeout ? 504 : a->call->failure == "shutdown" ? 503 : 500;
          std::string s = "data: " + errorBody(ErrorStyle::OpenAI, code,
                                               timeout ? "the request timed out" : u.error, "") + "\n\n";
          sink.write(s.data(), s.size());
        }
        if (a->call->failure != "client_disconnected") {
          static const std::string done = "data: [DONE]\n\n";
          sink.write(done.data(), done.size());
        }
        sink.done();
        return true;
      },
      [a](bool) {
        // However the stream ended (also when httplib never called the provider), the sequence
        // must not keep its slot.
        GenerationUpdate u = a->job->wait(Clock::now());
        if (!u.done) {
          a->model->scheduler->cancel(a->job);
          a->call->log["client"] = "disconnected";
          if (a->call->failure.empty())
            a->call->failure = "client_disconnected";
        }
        finishCall(*a->call);
      });
}

} // namespace

void registerOpenAiRoutes(HttpServer &server, ServerState &state) {
  server.post("/v1/completions", ErrorStyle::OpenAI,
              [&state](const httplib::Request &req, httplib::Response &res, std::shared_ptr<Call> call) {
                handleGeneration(state, req, res, call, false);
              });
  server.post("/v1/chat/completions", ErrorStyle::OpenAI,
              [&state](const httplib::Request &req, httplib::Response &res, std::shared_ptr<Call> call) {
                handleGeneration(state, req, res, call, true);
              });
  server.get("/v1/models", ErrorStyle::OpenAI,
             [&state](const httplib::Request &, httplib::Response &res, std::shared_ptr<Call>) {
               json data = json::array();
               for (const auto &m : state.models.all()) {
                 json e = {{"id", m->name()}, {"object", "model"}, {"created", m->created}, {"owned_by", "kiln"}};
                 if (m->decoder)
                   e["max_model_len"] = m->maxContext;
                 data.push_back(e);
               }
               sendJson(res, 200, {{"object", "list"}, {"data", data}});
             });
}

} // namespace kiln::serve
