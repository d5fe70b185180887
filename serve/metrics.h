// Prometheus metrics (text exposition format 0.0.4), named after vLLM's with the prefix "kiln:".
// Every series carries a model_name label; failures also a reason. Thread safe.
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::serve {

class Metrics {
public:
  Metrics();
  // Counters.
  void addPromptTokens(const std::string &model, double n) { add("kiln:prompt_tokens_total", model, n); }
  void addGenerationTokens(const std::string &model, double n) { add("kiln:generation_tokens_total", model, n); }
  void requestSucceeded(const std::string &model, const std::string &finishReason);
  void requestFailed(const std::string &model, const std::string &reason);
  // A counter the runtime keeps (its cumulative stats): set to its current total.
  void setCounter(const std::string &name, const std::string &model, double total) { setGauge(name, model, total); }
  // Gauges.
  void setGauge(const std::string &name, const std::string &model, double v);
  // Histograms (seconds).
  void observe(const std::string &name, const std::string &model, double seconds);

  // The whole exposition.
  std::string render() const;

private:
  struct Histogram {
    std::vector<double> counts; // per bucket, not cumulative
    double sum = 0;
    double count = 0;
  };
  struct Family {
    std::string type; // counter, gauge, histogram
    std::string help;
    std::vector<double> buckets;
    std::map<std::string, double> values;        // labels -> value (counter, gauge)
    std::map<std::string, Histogram> histograms; // labels -> histogram
  };
  void add(const std::string &name, const std::string &labels, double n, bool rawLabels = false);
  static std::string modelLabel(const std::string &model);

  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
};

} // namespace kiln::serve
