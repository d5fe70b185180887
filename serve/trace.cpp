// Request stage spans and their Chrome trace JSON.
#include "trace.h"

#include <cstdio>
#include <fstream>

namespace kiln::serve {

RequestTrace::RequestTrace(std::string id)
    : id_(std::move(id)), arrival_(Clock::now()), arrivalWall_(std::chrono::system_clock::now()) {}

void RequestTrace::begin(const std::string &name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto now = Clock::now();
  for (Span &s : spans_)
    if (s.open)
      s.stop = now, s.open = false;
  spans_.push_back({name, now, now, true});
}

void RequestTrace::end() {
  std::lock_guard<std::mutex> lock(mutex_);
  auto now = Clock::now();
  for (Span &s : spans_)
    if (s.open)
      s.stop = now, s.open = false;
}

void RequestTrace::reject(const std::string &reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  rejection_ = reason;
}

void RequestTrace::note(const std::string &key, const nlohmann::json &value) {
  std::lock_guard<std::mutex> lock(mutex_);
  notes_[key] = value;
}

static double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string RequestTrace::header() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  auto now = Clock::now();
  for (const Span &s : spans_) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s=%.3f", out.empty() ? "" : ";", s.name.c_str(),
                  ms((s.open ? now : s.stop) - s.start));
    out += buf;
  }
  return out;
}

nlohmann::json RequestTrace::stagesJson() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json j = nlohmann::json::object();
  auto now = Clock::now();
  for (const Span &s : spans_)
    j[s.name + "_ms"] = ms((s.open ? now : s.stop) - s.start);
  return j;
}

bool RequestTrace::writeChrome(const std::string &dir, const std::string &model) const {
  nlohmann::json events = nlohmann::json::array();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Timestamps in microseconds of the wall clock, so traces of several requests line up.
    double base = std::chrono::duration<double, std::micro>(arrivalWall_.time_since_epoch()).count();
    auto now = Clock::now();
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "kiln-serve"}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1},
                      {"args", {{"name", "request " + id_}}}});
    for (size_t i = 0; i < spans_.size(); ++i) {
      const Span &s = spans_[i];
      nlohmann::json args = {{"request_id", id_}, {"model", model}};
      if (!rejection_.empty() && i + 1 == spans_.size())
        args["rejected"] = rejection_;
      events.push_back({{"name", s.name},
                        {"ph", "X"},
                        {"pid", 1},
                        {"tid", 1},
                        {"ts", base + std::chrono::duration<double, std::micro>(s.start - arrival_).count()},
                        {"dur", std::chrono::duration<double, std::micro>((s.open ? now : s.stop) - s.start).count()},
                        {"args", args}});
    }
    if (!notes_.empty())
      events.push_back({{"name", "request"}, {"ph", "i"}, {"s", "t"}, {"pid", 1}, {"tid", 1}, {"ts", base},
                        {"args", notes_}});
  }
  std::string path = dir + "/" + id_ + ".json";
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out)
      return false;
    out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump(
               -1, ' ', false, nlohmann::json::error_handler_t::replace)
        << '\n';
    if (!out)
      return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

} // namespace kiln::serve
