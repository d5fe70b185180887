// Open Inference Protocol routes over the per-model schedulers (one kiln_session per slot).
#include "kserve_api.h"

#include <condition_variable>
#include <cstring>
#include <limits>

#include "errors.h"
#include "http_client_watch.h"
#include "http_server.h"

namespace kiln::serve {
namespace {

using json = nlohmann::json;

struct DtypeName {
  kiln_dtype dtype;
  const char *name;
};
const DtypeName kDtypes[] = {
    {KILN_DTYPE_BOOL, "BOOL"},     {KILN_DTYPE_UINT8, "UINT8"},   {KILN_DTYPE_UINT16, "UINT16"},
    {KILN_DTYPE_UINT32, "UINT32"}, {KILN_DTYPE_UINT64, "UINT64"}, {KILN_DTYPE_INT8, "INT8"},
    {KILN_DTYPE_INT16, "INT16"},   {KILN_DTYPE_INT32, "INT32"},   {KILN_DTYPE_INT64, "INT64"},
    {KILN_DTYPE_FLOAT16, "FP16"},  {KILN_DTYPE_FLOAT32, "FP32"},  {KILN_DTYPE_FLOAT64, "FP64"},
    {KILN_DTYPE_BFLOAT16, "BF16"}, {KILN_DTYPE_STRING, "BYTES"}};

const char *v2Name(kiln_dtype d) {
  for (const auto &e : kDtypes)
    if (e.dtype == d)
      return e.name;
  return "UNKNOWN";
}

// IEEE half and bfloat16 from float, rounding to nearest even (as numpy's astype does).
uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
  if (exp == 0xff)
    return uint16_t(sign | 0x7c00 | (man ? 0x200 : 0));
  int e = int(exp) - 127 + 15;
  if (e >= 31)
    return uint16_t(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10)
      return uint16_t(sign);
    man |= 0x800000;
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = (uint32_t(e) << 10) | (man >> 13), rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent, which is the correct rounding
  return uint16_t(sign | half);
}
float fromHalf(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
  if (exp == 0) {
    if (man == 0)
      x = sign;
    else {
      int e = -1;
      do
        ++e, man <<= 1;
      while (!(man & 0x400));
      x = sign | (uint32_t(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31)
    x = sign | 0x7f800000 | (man << 13);
  else
    x = sign | ((exp + 127 - 15) << 23) | (man << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
uint16_t toBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return uint16_t((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}
float fromBf16(uint16_t b) {
  uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Row-major leaves of `data` (flat or nested arrays, as the protocol allows). The depth is
// bounded: a body of nested brackets must not exhaust the thread's stack.
void flatten(const json &data, std::vector<const json *> &out, const std::string &at, int depth = 0) {
  if (data.is_array()) {
    if (depth > 32)
      throw badRequest(at, at + ": data is nested deeper than 32 levels");
    for (const json &e : data)
      flatten(e, out, at, depth + 1);
  } else {
    out.push_back(&data);
  }
}

template <typename T> void put(std::vector<unsigned char> &buf, T v) {
  size_t n = buf.size();
  buf.resize(n + sizeof(T));
  std::memcpy(buf.data() + n, &v, sizeof(T));
}

template <typename T> T integerOf(const json &v, const std::string &at, size_t i) {
  bool ok = v.is_number_integer();
  if (ok && v.is_number_unsigned())
    ok = v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max());
  else if (ok)
    ok = v.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
         (std::numeric_limits<T>::max() > uint64_t(INT64_MAX) || v.get<int64_t>() <= int64_t(std::numeric_limits<T>::max()));
  if (!ok)
    throw badRequest(at, at + ": element " + std::to_string(i) + " (" + v.dump() + ") is not a value of its datatype");
  return v.is_number_unsigned() ? T(v.get<uint64_t>()) : T(v.get<int64_t>());
}

double floatOf(const json &v, const std::string &at, size_t i) {
  if (!v.is_number())
    throw badRequest(at, at + ": element " + std::to_string(i) + " (" + v.dump() + ") is not a number");
  return v.get<double>();
}

struct Tensor {
  kiln_tensor *t = nullptr;
  ~Tensor() { kiln_tensor_destroy(t); }
};

// Builds the kiln tensor of one request input, checked against the model's signature.
void makeInput(const json &in, const kiln_tensor_info &info, Tensor &out, const std::string &at) {
  if (!in.contains("datatype") || !in["datatype"].is_string())
    throw badRequest(at, at + ": datatype missing");
  std::string dt = in["datatype"].get<std::string>();
  if (dt != v2Name(info.dtype))
    throw badRequest(at, at + ": datatype " + dt + ", but the model's input '" + info.name + "' is " + v2Name(info.dtype));
  if (!in.contains("shape") || !in["shape"].is_array())
    throw badRequest(at, at + ": shape missing");
  std::vector<int64_t> shape;
  int64_t count = 1;
  for (const json &d : in["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t(1) << 40))
      throw badRequest(at, at + ": shape must hold non-negative integers");
    shape.push_back(d.get<int64_t>());
    if (count > 0 && shape.back() > (int64_t(1) << 40) / count)
      throw badRequest(at, at + ": shape too large");
    count *= shape.back();
  }
  if (shape.size() != info.rank)
    throw badRequest(at, at + ": shape has rank " + std::to_string(shape.size()) + ", the model's input '" + info.name +
                             "' rank " + std::to_string(info.rank));
  for (size_t k = 0; k < info.rank; ++k)
    if (info.dims[k] >= 0 && info.dims[k] != shape[k])
      throw badRequest(at, at + ": dim " + std::to_string(k) + " is " + std::to_string(shape[k]) + ", the model's input '" +
                               info.name + "' has " + std::to_string(info.dims[k]));
  if (!in.contains("data"))
    throw badRequest(at, at + ": data missing");
  std::vector<const json *> leaves;
  flatten(in["data"], leaves, at);
  if (int64_t(leaves.size()) != count)
    throw badRequest(at, at + ": data has " + std::to_string(leaves.size()) + " elements, shape needs " +
                             std::to_string(count));
  kiln_error *e = nullptr;
  if (info.dtype == KILN_DTYPE_STRING) {
    std::vector<std::string> strs;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (!leaves[i]->is_string())
        throw badRequest(at, at + ": element " + std::to_string(i) + " is not a string");
      strs.push_back(leaves[i]->get<std::string>());
    }
    std::vector<const char *> ptrs;
    std::vector<size_t> sizes;
    for (auto &s : strs)
      ptrs.push_back(s.data()), sizes.push_back(s.size());
    e = kiln_tensor_create_strings(shape.data(), shape.size(), ptrs.data(), sizes.data(), &out.t);
  } else {
    std::vector<unsigned char> buf;
    buf.reserve(leaves.size() * kiln_dtype_size(info.dtype));
    for (size_t i = 0; i < leaves.size(); ++i) {
      const json &v = *leaves[i];
      switch (info.dtype) {
      case KILN_DTYPE_BOOL:
        if (!v.is_boolean() && !(v.is_number_integer() && (v == 0 || v == 1)))
          throw badRequest(at, at + ": element " + std::to_string(i) + " is not a boolean");
        put<uint8_t>(buf, v.is_boolean() ? uint8_t(v.get<bool>()) : uint8_t(v.get<int>()));
        break;
      case KILN_DTYPE_UINT8: put(buf, integerOf<uint8_t>(v, at, i)); break;
      case KILN_DTYPE_UINT16: put(buf, integerOf<uint16_t>(v, at, i)); break;
      case KILN_DTYPE_UINT32: put(buf, integerOf<uint32_t>(v, at, i)); break;
      case KILN_DTYPE_UINT64: put(buf, integerOf<uint64_t>(v, at, i)); break;
      case KILN_DTYPE_INT8: put(buf, integerOf<int8_t>(v, at, i)); break;
      case KILN_DTYPE_INT16: put(buf, integerOf<int16_t>(v, at, i)); break;
      case KILN_DTYPE_INT32: put(buf, integerOf<int32_t>(v, at, i)); break;
      case KILN_DTYPE_INT64: put(buf, integerOf<int64_t>(v, at, i)); break;
      case KILN_DTYPE_FLOAT16: put(buf, toHalf(float(floatOf(v, at, i)))); break;
      case KILN_DTYPE_BFLOAT16: put(buf, toBf16(float(floatOf(v, at, i)))); break;
      case KILN_DTYPE_FLOAT32: put(buf, float(floatOf(v, at, i))); break;
      case KILN_DTYPE_FLOAT64: put(buf, floatOf(v, at, i)); break;
      default: throw badRequest(at, at + ": datatype not supported");
      }
    }
    e = kiln_tensor_create_copy(info.dtype, shape.data(), shape.size(), buf.data(), buf.size(), &out.t);
  }
  if (e) {
    std::string m = kiln_error_message(e);
    kiln_error_free(e);
    throw badRequest(at, at + ": " + m);
  }
}

json outputData(const kiln_tensor *t) {
  json data = json::array();
  int64_t n = kiln_tensor_element_count(t);
  const void *p = kiln_tensor_data_const(t);
  for (int64_t i = 0; i < n; ++i) {
    switch (kiln_tensor_dtype(t)) {
    case KILN_DTYPE_BOOL: data.push_back(static_cast<const uint8_t *>(p)[i] != 0); break;
    case KILN_DTYPE_UINT8: data.push_back(static_cast<const uint8_t *>(p)[i]); break;
    case KILN_DTYPE_UINT16: data.push_back(static_cast<const uint16_t *>(p)[i]); break;
    case KILN_DTYPE_UINT32: data.push_back(static_cast<const uint32_t *>(p)[i]); break;
    case KILN_DTYPE_UINT64: data.push_back(static_cast<const uint64_t *>(p)[i]); break;
    case KILN_DTYPE_INT8: data.push_back(static_cast<const int8_t *>(p)[i]); break;
    case KILN_DTYPE_INT16: data.push_back(static_cast<const int16_t *>(p)[i]); break;
    case KILN_DTYPE_INT32: data.push_back(static_cast<const int32_t *>(p)[i]); break;
    case KILN_DTYPE_INT64: data.push_back(static_cast<const int64_t *>(p)[i]); break;
    case KILN_DTYPE_FLOAT16: data.push_back(fromHalf(static_cast<const uint16_t *>(p)[i])); break;
    case KILN_DTYPE_BFLOAT16: data.push_back(fromBf16(static_cast<const uint16_t *>(p)[i])); break;
    case KILN_DTYPE_FLOAT32: data.push_back(static_cast<const float *>(p)[i]); break;
    case KILN_DTYPE_FLOAT64: data.push_back(static_cast<const double *>(p)[i]); break;
    case KILN_DTYPE_STRING: {
      size_t len = 0;
      const char *s = kiln_tensor_string(t, i, &len);
      data.push_back(std::string(s ? s : "", len));
      break;
    }
    default: data.push_back(nullptr);
    }
  }
  return data;
}

// One forward pass as a scheduler job.
class ForwardJob : public Job {
public:
  ForwardJob(std::vector<Tensor> inputs, size_t outputs, std::shared_ptr<RequestTrace> trace)
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
      for (const Tensor &t : inputs_)
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
  std::vector<Tensor> inputs_;
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
  call.model = name;
  return *m;
}

json tensorMeta(const kiln_tensor_info &info) {
  json shape = json::array();
  for (size_t k = 0; k < info.rank; ++k)
    shape.push_back(info.dims[k]);
  return {{"name", info.name}, {"datatype", v2Name(info.dtype)}, {"shape", shape}};
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
  std::vector<Tensor> tensors(nIn);
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
    makeInput(in, info, tensors[k], "input '" + name + "'");
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
    outputs.push_back({{"name", info.name}, {"datatype", v2Name(kiln_tensor_dtype(t))}, {"shape", shape},
                       {"data", outputData(t)}});
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
  server.get(R"(/v2/models/([A-Za-z0-9_.\-]+))", ErrorStyle::KServe,
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
  server.get(R"(/v2/models/([A-Za-z0-9_.\-]+)/ready)", ErrorStyle::KServe,
             [&state](const httplib::Request &req, httplib::Response &res, std::shared_ptr<Call> call) {
               modelOf(state, req, *call);
               sendJson(res, 200, {{"name", call->model}, {"ready", true}});
             });
  server.post(R"(/v2/models/([A-Za-z0-9_.\-]+)/infer)", ErrorStyle::KServe,
              [&state](const httplib::Request &req, httplib::Response &res, std::shared_ptr<Call> call) {
                infer(state, req, res, call);
              });
}

} // namespace kiln::serve
