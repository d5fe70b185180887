// The one way a request handler refuses a request: throw HttpError; the route wrapper
// (http_server.cpp) turns it into the API's error body, the metrics' failure reason and the log.
#pragma once
#include <stdexcept>
#include <string>

namespace kiln::serve {

struct HttpError : std::runtime_error {
  int status;
  std::string param;  // the request field at fault ("" when none)
  std::string reason; // a short failure label for metrics ("bad_request", "queue_full", ...)
  int retryAfterSeconds = 0;
  HttpError(int status, std::string reason, std::string message, std::string param = "")
      : std::runtime_error(std::move(message)), status(status), param(std::move(param)), reason(std::move(reason)) {}
};

inline HttpError badRequest(const std::string &param, const std::string &message) {
  return HttpError(400, "bad_request", message, param);
}

} // namespace kiln::serve
