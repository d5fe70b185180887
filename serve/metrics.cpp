// Prometheus text exposition of kiln-serve's counters, gauges and histograms.
#include "metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace kiln::serve {
namespace {

// Label values are quoted; backslash, quote and newline must be escaped (exposition format).
std::string escape(const std::string &v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  // The shortest form that reads back as the same double (0.0025, not 0.0025000000000000001).
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) { // counts and whole buckets: 80, not 8e+01
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

} // namespace

Metrics::Metrics() {
  // Latency buckets: decoding steps of tiny models take well under a millisecond, large ones
  // seconds; the same spread as vLLM's, extended down to 1 ms.
  const std::vector<double> latency = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                       0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
  auto def = [&](const std::string &name, const std::string &type, const std::string &help) {
    Family &f = families_[name];
    f.type = type;
    f.help = help;
    if (type == "histogram")
      f.buckets = latency;
  };
  def("kiln:num_requests_running", "gauge", "Requests holding a decode slot.");
  def("kiln:num_requests_waiting", "gauge", "Requests queued for a slot.");
  def("kiln:slots_in_use", "gauge", "Decode slots in use.");
  def("kiln:slots_total", "gauge", "Decode slots (--max-sequences).");
  def("kiln:kv_cache_tokens", "gauge", "Tokens held in the KV cache by running sequences.");
  def("kiln:kv_cache_bytes_in_use", "gauge", "KV cache bytes the running sequences' tokens take.");
  def("kiln:kv_cache_bytes_total", "gauge",
      "KV cache bytes allocated (one max-context row per slot; paged: the block pool).");
  def("kiln:kv_cache_blocks_total", "gauge", "Blocks of the paged KV cache pool (0: not paged).");
  def("kiln:kv_cache_blocks_in_use", "gauge", "Paged KV cache blocks held by running sequences.");
  def("kiln:kv_cache_blocks_reserved", "gauge",
      "Paged KV cache blocks the running sequences may take at most (admission reserves them).");
  def("kiln:kv_cache_blocks_cached", "gauge",
      "Paged KV cache blocks holding a prompt prefix for later requests (--prefix-cache), held or idle.");
  def("kiln:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.");
  def("kiln:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache (not computed again).");
  def("kiln:prefix_cache_evictions_total", "counter", "Idle prefix cache blocks taken back for other use.");
  def("kiln:spec_decode_num_draft_tokens_total", "counter",
      "Tokens drafted by prompt-lookup speculation (--speculate) and verified.");
  def("kiln:spec_decode_num_accepted_tokens_total", "counter", "Drafted tokens the model accepted.");
  def("kiln:kv_cache_usage_perc", "gauge", "KV cache bytes in use over bytes allocated (0 to 1).");
  def("kiln:decode_batch_size", "gauge", "Sequences in the last batched decode step.");
  def("kiln:prompt_tokens_total", "counter", "Prompt tokens prefilled.");
  def("kiln:generation_tokens_total", "counter", "Tokens generated.");
  def("kiln:request_success_total", "counter", "Requests finished, by finish reason.");
  def("kiln:request_failure_total", "counter", "Requests refused or failed, by reason.");
  def("kiln:time_to_first_token_seconds", "histogram", "Time from arrival to the first new token.");
  def("kiln:inter_token_latency_seconds", "histogram", "Time between consecutive new tokens of a sequence.");
  def("kiln:e2e_request_latency_seconds", "histogram", "Time from arrival to the last byte of the answer.");
  def("kiln:request_queue_time_seconds", "histogram", "Time spent waiting for a slot.");
  def("kiln:request_inference_time_seconds", "histogram", "Time holding a slot (prefill, decode or forward pass).");
}

std::string Metrics::modelLabel(const std::string &model) { return "model_name=\"" + escape(model) + "\""; }

void Metrics::add(const std::string &name, const std::string &labels, double n, bool rawLabels) {
  std::lock_guard<std::mutex> lock(mutex_);
  families_[name].values[rawLabels ? labels : modelLabel(labels)] += n;
}

void Metrics::requestSucceeded(const std::string &model, const std::string &finishReason) {
  add("kiln:request_success_total", modelLabel(model) + ",finished_reason=\"" + escape(finishReason) + "\"", 1, true);
}

void Metrics::requestFailed(const std::string &model, const std::string &reason) {
  add("kiln:request_failure_total", modelLabel(model) + ",reason=\"" + escape(reason) + "\"", 1, true);
}

void Metrics::setGauge(const std::string &name, const std::string &model, double v) {
  std::lock_guard<std::mutex> lock(mutex_);
  families_[name].values[modelLabel(model)] = v;
}

void Metrics::observe(const std::string &name, const std::string &model, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  Family &f = families_[name];
  Histogram &h = f.histograms[modelLabel(model)];
  if (h.counts.empty())
    h.counts.assign(f.buckets.size() + 1, 0);
  size_t b = 0;
  while (b < f.buckets.size() && seconds > f.buckets[b])
    ++b;
  h.counts[b] += 1;
  h.sum += seconds;
  h.count += 1;
}

std::string Metrics::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream out;
  for (const auto &[name, f] : families_) {
    out << "# HELP " << name << ' ' << f.help << "\n# TYPE " << name << ' ' << f.type << '\n';
    for (const auto &[labels, v] : f.values)
      out << name << '{' << labels << "} " << number(v) << '\n';
    for (const auto &[labels, h] : f.histograms) {
      double cumulative = 0;
      for (size_t b = 0; b <= f.buckets.size(); ++b) {
        cumulative += h.counts[b];
        std::string le = b < f.buckets.size() ? number(f.buckets[b]) : "+Inf";
        out << name << "_bucket{" << labels << ",le=\"" << le << "\"} " << number(cumulative) << '\n';
      }
      out << name << "_sum{" << labels << "} " << number(h.sum) << '\n';
      out << name << "_count{" << labels << "} " << number(h.count) << '\n';
    }
  }
  return out.str();
}

} // namespace kiln::serve
