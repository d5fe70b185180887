// The HTTP layer: httplib server with a thread pool sized for open streams, the route wrapper
// that turns exceptions into each API's error bodies, request ids, the JSON log line, traces,
// and the health and metrics routes.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "metrics.h"
#include "models.h"
#include "options.h"
#include "trace.h"

namespace kiln::serve {

struct ServerState {
  const ServerOptions &options;
  ModelRegistry &models;
  Metrics &metrics;
  std::atomic<bool> draining{false};
  std::atomic<int> active{0}; // model requests between arrival and their last byte
  std::atomic<uint64_t> nextId{1};
};

enum class ErrorStyle { OpenAI, KServe };

// One request on its way through a handler, finished exactly once (finishCall).
struct Call {
  std::string id;
  std::string route;
  std::string model;
  std::shared_ptr<RequestTrace> trace;
  nlohmann::json log = nlohmann::json::object(); // extra fields of the log line
  int status = 200;
  std::string failure; // failure reason, "" on success
  bool deferred = false; // a stream: finished by its content provider, not the wrapper
  bool finished = false;
  ServerState *state = nullptr;
};

using ApiHandler = std::function<void(const httplib::Request &, httplib::Response &, std::shared_ptr<Call>)>;

class HttpServer {
public:
  explicit HttpServer(ServerState &state);
  ~HttpServer();
  // A model route: request id, trace (validate stage open), errors in `style`, 503 while loading
  // or draining.
  void post(const std::string &pattern, ErrorStyle style, ApiHandler handler);
  void get(const std::string &pattern, ErrorStyle style, ApiHandler handler);
  // Binds; returns the port (the chosen one for port 0) or throws.
  int bind();
  void listen(); // blocks until stop()
  bool running() const;
  void stop();

private:
  void wrap(const std::string &method, const std::string &pattern, ErrorStyle style, ApiHandler handler);
  ServerState &state_;
  httplib::Server server_;
  int listenFd_ = -1;
};

// Writes the log line and trace, counts a failure; idempotent.
void finishCall(Call &call);
// The error body of an API.
std::string errorBody(ErrorStyle style, int status, const std::string &message, const std::string &param);
// A JSON response.
void sendJson(httplib::Response &res, int status, const nlohmann::json &body);

} // namespace kiln::serve
