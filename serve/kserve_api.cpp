// Open Inference Protocol routes over the per-model schedulers (one kiln_session per slot).
#include "kserve_api.h"

#include <condition_variable>
#include <cstring>
#include <limits>

#include "errors.h"
#include "http_client_watch.h"
#include "http_server.h"
#include "tensor_json.h"

namespace kiln::serve {
namespace {

using json = nlohmann::json;

// One forward pass as a scheduler job.
class ForwardJob : public Job {
public:
  ForwardJob(std::vector<OwnedTensor> inputs, size_t outputs, std::shared_ptr<RequestTrace> trace)
      : inputs_(std::move(inputs)), outputs_(outputs, nullptr), trace_(std::move(trace)) {}
  ~ForwardJob() override {
    for (kiln_tensor *t : outputs_)
      kiln_tensor_destroy(t);
  }
  void dequeued() override { trace_->begin("forward"); }
  void run(Slot &slot) override {
    std::string error;
    if (cancelled()) {
      error = cancelReason() == "shutdown" ? "the server is shutting down" : "cancelled";
    } else {
      std::vector<const kiln_tensor *> in;
      for (const OwnedTensor &t : inputs_)
        in.push_back(t.t);
      if (kiln_error *e = kiln_session_run(slot.session, in.data(), in.size(), outputs_.data(), outputs_.size())) {
        error = kiln_error_message(e);
        invalid_ = kiln_error_get_code(e) == KILN_ERROR_INVALID_ARGUMENT;
        kiln_error_free(e);
      }
    }
    complete(error);
  }
  void dropped(const std::string &reason) override {
    complete(reason == "shutdown" ? "the server is shutting down" : reason);
  }
  // Waits for the result until `until`; true when done.
  bool wait(Clock::time_point until) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_until(lock, until, [&] { return done_; });
  }
  const std::string &error() const { return error_; }
  bool invalid() const { return invalid_; }
  const std::vector<kiln_tensor *> &outputs() const { return outputs_; }

private:
  void complete(const std::string &error) {
    trace_->begin("return");
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = error;
    done_ = true;
    cv_.notify_all();
  }
  std::vector<OwnedTensor> inputs_;
  std::vector<kiln_tensor *> outputs_;
  std::shared_ptr<RequestTrace> trace_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  bool invalid_ = false;
  std::string error_;
};

ServedModel &modelOf(ServerState &st, const httplib::Request &req, Call &call) {
  std::string name = req.matches[1];
  ServedModel *m = st.models.find(name);
  if (!m)
    throw HttpError(404, "model_not_found", "model '" + name + "' is not served here");
  // Each model has one version, "1" (the protocol's optional /versions/{v} path segment).
  if (req.matches.size() > 2 && req.matches[2].matched && req.matches[2].str() != "1")
    throw HttpError(404, "model_not_found", "model '" + name + "' has no version '" + req.matches[2].str() + "' (only 1)");
  call.model = name;
  return *m;
}

json tensorMeta(const kiln_tensor_info &info) {
  json shape = json::array();
  for (size_t k = 0; k < info.rank; ++k)
    shape.push_back(info.dims[k]);
  return {{"name", info.name}, {"datatype", v2DtypeName(info.dtype)}, {"shape", shape}};
}

void infer(ServerState &st, const httplib::Request &req, httplib::Response &res, std::shared_ptr<Call> call) {
  ServedModel &m = modelOf(st, req, *call);
  if (m.decoder)
    throw badRequest("", "model '" + m.name() + "' is a decoder: use POST /v1/completions");
  json b = json::parse(req.body);
  if (!b.is_object())
    throw badRequest("", "the request body must be a JSON object");
  for (auto &[k, v] : b.items())
    if (k != "id" && k != "inputs" && k != "outputs" && k != "parameters")
      throw badRequest(k, k + ": unknown field");
  if (!b.contains("inputs") || !b["inputs"].is_array())
    throw badRequest("inputs", "inputs: expected an array");
  size_t nIn = kiln_model_input_count(m.model), nOut = kiln_model_output_count(m.model);
  std::vector<OwnedTensor> tensors(nIn);
  std::vector<bool> given(nIn, false);
  for (size_t i = 0; i < b["inputs"].size(); ++i) {
    const json &in = b["inputs"][i];
    if (!in.is_object() || !in.contains("name") || !in["name"].is_string())
      throw badRequest("inputs[" + std::to_string(i) + "]", "inputs[" + std::to_string(i) + "]: expected an object with a name");
    std::string name = in["name"].get<std::string>();
    size_t k = 0;
    kiln_tensor_info info{};
    for (; k < nIn; ++k) {
      kiln_model_input_info(m.model, k, &info);
      if (name == info.name)
        break;
    }
    if (k == nIn)
      throw badRequest(name, "input '" + name + "': the model has no such input");
    if (given[k])
      throw badRequest(name, "input '" + name + "': given twice");
    given[k] = true;
    tensorFromJson(in, info, tensors[k], "input '" + name + "'");
  }
  for (size_t k = 0; k < nIn; ++k)
    if (!given[k]) {
      kiln_tensor_info info{};
      kiln_model_input_info(m.model, k, &info);
      throw badRequest(info.name, std::string("input '") + info.name + "': missing");
    }
  std::vector<std::string> wanted;
  if (b.contains("outputs")) {
    if (!b["outputs"].is_array())
      throw badRequest("outputs", "outputs: expected an array");
    for (const json &o : b["outputs"]) {
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string())
        throw badRequest("outputs", "outputs: expected objects with a name");
      wanted.push_back(o["name"].get<std::string>());
    }
  }

  auto job = std::make_shared<ForwardJob>(std::move(tensors), nOut, call->trace);
  call->trace->begin("queue");
  switch (m.scheduler->submit(job)) {
  case Scheduler::Admission::Admitted: break;
  case Scheduler::Admission::Draining: throw HttpError(503, "draining", "the server is shutting down");
  case Scheduler::Admission::QueueFull: {
    HttpError e(429, "queue_full", "model '" + m.name() + "' has all slots busy and its queue full");
    e.retryAfterSeconds = m.scheduler->retryAfterSeconds();
    throw e;
  }
  }
  ClientWatch watch(req);
  auto deadline = call->trace->arrival() + std::chrono::milliseconds(int64_t(st.options.requestTimeoutSeconds * 1000));
  bool timedOut = false, gone = false;
  while (!job->wait(Clock::now() + std::chrono::milliseconds(20))) {
    if (!gone && watch.gone()) {
      gone = true;
      m.scheduler->cancel(job);
    } else if (!timedOut && Clock::now() > deadline) {
      timedOut = true;
      m.scheduler->cancel(job);
    }
  }
  if (gone)
    throw HttpError(499, "client_disconnected", "the client closed the connection");
  if (timedOut && !job->error().empty())
    throw HttpError(504, "timeout", "the request timed out");
  if (job->error() == "the server is shutting down")
    throw HttpError(503, "shutdown", job->error());
  if (!job->error().empty())
    throw HttpError(job->invalid() ? 400 : 500, job->invalid() ? "bad_request" : "runtime_error", job->error());

  json outputs = json::array();
  for (size_t k = 0; k < nOut; ++k) {
    kiln_tensor_info info{};
    kiln_model_output_info(m.model, k, &info);
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), std::string(info.name)) == wanted.end())
      continue;
    const kiln_tensor *t = job->outputs()[k];
    json shape = json::array();
    for (size_t d = 0; d < kiln_tensor_rank(t); ++d)
      shape.push_back(kiln_tensor_shape(t)[d]);
    outputs.push_back({{"name", info.name}, {"datatype", v2DtypeName(kiln_tensor_dtype(t))}, {"shape", shape},
                       {"data", tensorDataToJson(t)}});
  }
  for (const std::string &w : wanted) {
    bool found = false;
    for (const json &o : outputs)
      found |= o["name"] == w;
    if (!found)
      throw badRequest("outputs", "outputs: the model has no output '" + w + "'");
  }
  json out = {{"model_name", m.name()}, {"outputs", outputs}};
  if (b.contains("id"))
    out["id"] = b["id"];
  st.metrics.requestSucceeded(m.name(), "forward");
  st.metrics.observe("kiln:e2e_request_latency_seconds", m.name(),
                     std::chrono::duration<double>(Clock::now() - call->trace->arrival()).count());
  res.set_header("x-kiln-timing", call->trace->header());
  res.status = 200;
  res.set_content(out.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

} // namespace

void registerKServeRoutes(HttpServer &server, ServerState &state) {
  server.get("/v2", ErrorStyle::KServe, [](const httplib::Request &, httplib::Response &res, std::shared_ptr<Call>) {
    sendJson(res, 200, {{"name", "kiln-serve"}, {"version", kiln_runtime_version()}, {"extensions", json::array()}});
  });
  server.get(R"(/v2/models/([A-Za-z0-9_.\-]+)(?:/versions/([A-Za-z0-9_.\-]+))?)", ErrorStyle::KServe,
             [&state](const httplib::Request &req, httplib::Response &res, std::shared_ptr<Call> call) {
               ServedModel &m = modelOf(state, req, *call);
               json inputs = json::array(), outputs = json::array();
               for (size_t k = 0; k < kiln_model_input_count(m.model); ++k) {
                 kiln_tensor_info info{};
                 kiln_model_input_info(m.model, k, &info);
                 inputs.push_back(tensorMeta(info));
               }
               for (size_t k = 0; k < kiln_model_output_count(m.model); ++k) {
                 kiln_tensor_info info{};
                 kiln_model_output_info(m.model, k, &info);
                 outputs.push_back(tensorMeta(info));
               }
               sendJson(res, 200, {{"name", m.name()}, {"versions", json::array({"1"})}, {"platform", "kiln"},
                                   {"inputs", inputs}, {"outputs", outputs}});
             });
  server.get(R"(/v2/models/([A-Za-z0-9_.\-]+)(?:/versions/([A-Za-z0-9_.\-]+))?/ready)", ErrorStyle::KServe,
             [&state](const httplib::Request &req, httplib::Response &res, std::shared_ptr<Call> call) {
               modelOf(state, req, *call);
               sendJson(res, 200, {{"name", call->model}, {"ready", true}});
             });
  server.post(R"(/v2/models/([A-Za-z0-9_.\-]+)(?:/versions/([A-Za-z0-9_.\-]+))?/infer)", ErrorStyle::KServe,
              [&state](const httplib::Request &req, httplib::Response &res, std::shared_ptr<Call> call) {
                infer(state, req, res, call);
              });
}

} // namespace kiln::serve
