// httplib setup, the route wrapper, health and metrics routes.
#include "http_server.h"

#include <cstdio>
#include <ctime>
#include <sys/socket.h>

#include "errors.h"

namespace kiln::serve {
namespace {

std::mutex logMutex;

const char *statusType(int status) {
  switch (status) {
  case 400: return "invalid_request_error";
  case 404: return "not_found_error";
  case 413: return "invalid_request_error";
  case 429: return "rate_limit_error";
  case 503: return "service_unavailable";
  case 504: return "timeout_error";
  default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

} // namespace

std::string errorBody(ErrorStyle style, int status, const std::string &message, const std::string &param) {
  // Messages may quote what the client sent (a JSON parse error quotes its bytes): invalid UTF-8
  // is replaced, never an exception.
  auto dump = [](const nlohmann::json &j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); };
  if (style == ErrorStyle::KServe)
    return dump(nlohmann::json{{"error", message}});
  nlohmann::json e = {{"message", message}, {"type", statusType(status)}, {"code", status}};
  e["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  return dump(nlohmann::json{{"error", e}});
}

void sendJson(httplib::Response &res, int status, const nlohmann::json &body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void finishCall(Call &call) {
  if (call.finished)
    return;
  call.finished = true;
  ServerState &st = *call.state;
  // `active` drops however this ends: the drain waits for it.
  struct Done {
    ServerState &st;
    ~Done() { st.active.fetch_sub(1); }
  } done{st};
  call.trace->end();
  if (!call.failure.empty()) {
    call.trace->reject(call.failure);
    st.metrics.requestFailed(call.model.empty() ? "-" : call.model, call.failure);
  }
  if (!st.options.traceDir.empty() && !call.trace->writeChrome(st.options.traceDir, call.model))
    std::fprintf(stderr, "{\"event\":\"warning\",\"message\":\"cannot write trace to %s\"}\n", st.options.traceDir.c_str());
  if (st.options.logRequests) {
    nlohmann::json line = {{"event", "request"}, {"time", std::time(nullptr)}, {"id", call.id},
                           {"route", call.route}, {"model", call.model}, {"status", call.status}};
    if (!call.failure.empty())
      line["failure"] = call.failure;
    line["total_ms"] = std::chrono::duration<double, std::milli>(Clock::now() - call.trace->arrival()).count();
    line["stages"] = call.trace->stagesJson();
    for (auto &[k, v] : call.log.items())
      line[k] = v;
    std::lock_guard<std::mutex> lock(logMutex);
    std::fprintf(stderr, "%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
}

HttpServer::HttpServer(ServerState &state) : state_(state) {
  const ServerOptions &o = state.options;
  // httplib serves each connection on one pool thread for as long as it is open, streams
  // included; the pool holds every slot and queue entry of every model plus spares, so that
  // with all of them busy /health and /metrics still get a thread at once.
  int threads = o.httpThreads;
  if (threads == 0) {
    threads = 16;
    for (const ModelOptions &m : o.models)
      threads += m.maxSequences + m.maxQueue;
    // Beyond this, give --http-threads: a thread per queued request stops being cheap.
    if (threads > 2048) {
      std::fprintf(stderr, "{\"event\":\"warning\",\"message\":\"%d connection threads needed for every slot and queue "
                           "entry; using 2048 (set --http-threads)\"}\n", threads);
      threads = 2048;
    }
  }
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  server_.set_payload_max_length(o.maxBodyBytes);
  server_.set_keep_alive_timeout(2);
  server_.set_read_timeout(30);
  server_.set_write_timeout(30);
  server_.set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listenFd_ = int(sock);
  });
  server_.set_error_handler([](const httplib::Request &req, httplib::Response &res) {
    if (!res.body.empty())
      return;
    std::string msg = res.status == 413 ? "the request body exceeds --max-body-bytes"
                      : res.status == 404 ? "no route " + req.method + " " + req.path
                                          : "HTTP error " + std::to_string(res.status);
    res.set_content(errorBody(ErrorStyle::OpenAI, res.status, msg, ""), "application/json");
  });

  // Health and metrics: never queued behind model work, no model lookups, always answered.
  server_.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    bool ok = state_.models.ready && !state_.draining;
    sendJson(res, ok ? 200 : 503,
             {{"status", state_.draining ? "draining" : state_.models.ready ? "ok" : "loading"}});
  });
  server_.Get("/v2/health/live", [](const httplib::Request &, httplib::Response &res) {
    sendJson(res, 200, {{"live", true}});
  });
  server_.Get("/v2/health/ready", [this](const httplib::Request &, httplib::Response &res) {
    bool ok = state_.models.ready && !state_.draining;
    sendJson(res, ok ? 200 : 503, {{"ready", ok}});
  });
  server_.Get("/metrics", [this](const httplib::Request &, httplib::Response &res) {
    res.set_content(state_.metrics.render(), "text/plain; version=0.0.4");
  });
}

HttpServer::~HttpServer() = default;

void HttpServer::post(const std::string &pattern, ErrorStyle style, ApiHandler handler) {
  wrap("POST", pattern, style, std::move(handler));
}
void HttpServer::get(const std::string &pattern, ErrorStyle style, ApiHandler handler) {
  wrap("GET", pattern, style, std::move(handler));
}

void HttpServer::wrap(const std::string &method, const std::string &pattern, ErrorStyle style, ApiHandler handler) {
  auto fn = [this, style, handler, method](const httplib::Request &req, httplib::Response &res) {
    auto call = std::make_shared<Call>();
    call->state = &state_;
    call->id = "req-" + std::to_string(state_.nextId.fetch_add(1));
    call->route = method + " " + req.path;
    call->trace = std::make_shared<RequestTrace>(call->id);
    call->trace->begin("validate");
    state_.active.fetch_add(1);
    res.set_header("x-request-id", call->id);
    // The error, if any; the response is built after the catch blocks so that nothing the
    // client sent (quoted in a message) can make the error path itself throw.
    int status = 0, retryAfter = 0;
    std::string reason, message, param;
    try {
      if (!state_.models.ready)
        throw HttpError(503, "loading", "the server is still loading its models");
      if (state_.draining)
        throw HttpError(503, "draining", "the server is shutting down");
      handler(req, res, call);
      call->status = res.status == -1 ? 200 : res.status;
    } catch (const HttpError &e) {
      status = e.status, reason = e.reason, message = e.what(), param = e.param, retryAfter = e.retryAfterSeconds;
    } catch (const nlohmann::json::exception &e) {
      status = 400, reason = "bad_request", message = std::string("invalid JSON: ") + e.what();
    } catch (const std::exception &e) {
      status = 500, reason = "internal", message = std::string("internal error: ") + e.what();
    } catch (...) {
      status = 500, reason = "internal", message = "internal error";
    }
    if (status != 0) {
      call->deferred = false; // a stream that failed before it started is answered here
      call->status = status;
      call->failure = reason;
      call->log["error"] = message;
      res.status = status;
      if (retryAfter > 0)
        res.set_header("Retry-After", std::to_string(retryAfter));
      res.set_content(errorBody(style, status, message, param), "application/json");
    }
    if (!res.has_header("x-kiln-timing")) // the handlers set it just before their answer
      res.set_header("x-kiln-timing", call->trace->header());
    if (!call->deferred)
      finishCall(*call);
  };
  if (method == "POST")
    server_.Post(pattern, fn);
  else
    server_.Get(pattern, fn);
}

int HttpServer::bind() {
  int port = state_.options.port;
  if (port == 0)
    port = server_.bind_to_any_port(state_.options.host);
  else if (!server_.bind_to_port(state_.options.host, port))
    port = -1;
  if (port < 0)
    throw std::runtime_error("cannot listen on " + state_.options.host + ":" + std::to_string(state_.options.port));
  // httplib listens with a backlog of 5, too few for a burst of clients connecting at once
  // (their SYNs would be dropped and retried a second later); listen() again raises it.
  if (listenFd_ >= 0)
    ::listen(listenFd_, 1024);
  return port;
}

void HttpServer::listen() { server_.listen_after_bind(); }

bool HttpServer::running() const { return server_.is_running(); }

void HttpServer::stop() { server_.stop(); }

} // namespace kiln::serve
