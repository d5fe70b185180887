// A per-request trace of its stages (validate, queue, prefill or forward, decode, return), kept
// as wall-clock spans. It yields the x-kiln-timing header, the stage fields of the JSON log line,
// and, with --trace-dir, one Chrome/Perfetto trace file (chrome://tracing, ui.perfetto.dev).
#pragma once
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::serve {

using Clock = std::chrono::steady_clock;

class RequestTrace {
public:
  explicit RequestTrace(std::string id);
  const std::string &id() const { return id_; }
  Clock::time_point arrival() const { return arrival_; }

  // Opens stage `name` now, closing the open one (stages are consecutive).
  void begin(const std::string &name);
  // Closes the open stage, if any.
  void end();
  // Why the request was refused or failed (shown on the stage it happened in).
  void reject(const std::string &reason);
  void note(const std::string &key, const nlohmann::json &value);

  // "validate=0.12;queue=3.40;prefill=1.05;decode=20.3" in milliseconds, stages so far.
  std::string header() const;
  // {"validate_ms": .., ...}
  nlohmann::json stagesJson() const;
  // Writes <dir>/<id>.json; returns false (and leaves nothing half written) on failure.
  bool writeChrome(const std::string &dir, const std::string &model) const;

private:
  struct Span {
    std::string name;
    Clock::time_point start, stop;
    bool open = true;
  };
  std::string id_;
  Clock::time_point arrival_;
  std::chrono::system_clock::time_point arrivalWall_;
  mutable std::mutex mutex_;
  std::vector<Span> spans_;
  std::string rejection_;
  nlohmann::json notes_ = nlohmann::json::object();
};

} // namespace kiln::serve
