// kiln-run: load an artifact, bind input files, run it, print/compare/save outputs, optionally time it.
#include "generate.h"
#include "kiln/kiln.hpp"
#include "tensor_compare.h"
#include "tensor_file.h"

#include <algorithm>
#include <map>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace {

using kiln::tools::HostTensor;

const char kUsage[] =
    "usage: kiln-run ARTIFACT [INPUT...] [options]\n"
    "       kiln-run generate ARTIFACT ... (decoding; see kiln-run generate --help)\n"
    "  INPUT: FILE or NAME=FILE; FILE is .npy or .pb (ONNX TensorProto). Positional files bind in input order.\n"
    "  --test-data-dir DIR   inputs DIR/input_K.pb, expected outputs DIR/output_K.pb (K = 0,1,...)\n"
    "  --expect FILE         expected output (repeatable, in output order; .npy or .pb)\n"
    "  --rtol X --atol Y     comparison tolerances (defaults 1e-3 and 1e-5): |a-e| <= atol + rtol*|e|;\n"
    "                        exact for ints/bools; NaN matches NaN\n"
    "  --output-dir DIR      write each output as DIR/<output_index>_<sanitized name>.npy\n"
    "  --threads N           kernel threads, the caller included (default: all cores)\n"
    "  --weights-dir DIR     artifacts compiled with --weights=external: the directory of the ONNX\n"
    "                        external data files (default: the artifact's directory)\n"
    "  --iterations N --warmup W\n"
    "                        time N runs after W warm-up runs and print\n"
    "                        latency_ms median=.. p90=.. min=.. max=.. iterations=N threads=T\n"
    "  --quiet               do not print output values\n"
    "  --device-io           --target=cuda artifacts: inputs and outputs in GPU memory (device tensors made\n"
    "                        once; every run reads the inputs and writes the outputs there), so the\n"
    "                        timing has no copy between host and GPU; the outputs are copied back\n"
    "                        once, after the timed runs, to be printed and compared\n"
    "  --profile FILE        write a Chrome trace / Perfetto JSON of every kernel launch of the\n"
    "                        timed runs (name, source ONNX nodes, start, duration, work items,\n"
    "                        estimated FLOPs and bytes moved, achieved GFLOP/s and GB/s)\n"
    "  --profile-summary     print the kernels by total time (share, mean, launches, GB/s, GFLOP/s)\n"
    "  --help\n"
    "Exit status: 0 on success, 1 on an error or an output mismatch.\n";

// Any user-facing failure: reported as one "kiln-run: error:" line, exit status 1.
struct UsageError {
  std::string message;
};

struct Options {
  std::string artifact;
  std::vector<std::string> inputs;
  std::string testDataDir;
  std::vector<std::string> expect;
  double rtol = 1e-3, atol = 1e-5;
  std::string outputDir;
  std::string weightsDir;
  int32_t threads = 0;
  int64_t iterations = 0, warmup = 0;
  std::string profilePath;
  bool profileSummary = false;
  bool quiet = false;
  bool deviceIo = false;
};

int64_t parseInt(const std::string &flag, const std::string &v, int64_t min) {
  char *end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || x < min || x > INT32_MAX)
    throw UsageError{"invalid value for " + flag + ": '" + v + "'"};
  return x;
}

double parseDouble(const std::string &flag, const std::string &v) {
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(x >= 0))
    throw UsageError{"invalid value for " + flag + ": '" + v + "'"};
  return x;
}

// Returns nullopt when --help was given.
std::optional<Options> parseArgs(int argc, char **argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw UsageError{a + " needs a value"};
      return argv[++i];
    };
    if (a == "--help" || a == "-h")
      return std::nullopt;
    else if (a == "--test-data-dir")
      o.testDataDir = value();
    else if (a == "--expect")
      o.expect.push_back(value());
    else if (a == "--rtol")
      o.rtol = parseDouble(a, value());
    else if (a == "--atol")
      o.atol = parseDouble(a, value());
    else if (a == "--output-dir")
      o.outputDir = value();
    else if (a == "--threads")
      o.threads = int32_t(parseInt(a, value(), 1));
    else if (a == "--weights-dir")
      o.weightsDir = value();
    else if (a == "--iterations")
      o.iterations = parseInt(a, value(), 1);
    else if (a == "--warmup")
      o.warmup = parseInt(a, value(), 0);
    else if (a == "--profile")
      o.profilePath = value();
    else if (a.rfind("--profile=", 0) == 0)
      o.profilePath = a.substr(10);
    else if (a == "--profile-summary")
      o.profileSummary = true;
    else if (a == "--quiet")
      o.quiet = true;
    else if (a == "--device-io")
      o.deviceIo = true;
    else if (a.size() > 1 && a[0] == '-')
      throw UsageError{"unknown option '" + a + "' (see --help)"};
    else
      positional.push_back(a);
  }
  if (positional.empty())
    throw UsageError{"no artifact given (see --help)"};
  o.artifact = positional[0];
  o.inputs.assign(positional.begin() + 1, positional.end());
  if (!o.testDataDir.empty() && !o.inputs.empty())
    throw UsageError{"give inputs either as files or with --test-data-dir, not both"};
  if (!o.testDataDir.empty() && !o.expect.empty())
    throw UsageError{"give expected outputs either with --expect or with --test-data-dir, not both"};
  return o;
}

HostTensor readTensor(const std::string &path) {
  HostTensor t;
  std::string error;
  if (!kiln::tools::readTensorFile(path, &t, &error))
    throw UsageError{error};
  return t;
}

std::string inputList(const std::vector<kiln::TensorInfo> &infos) {
  std::string s;
  for (const auto &i : infos)
    s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

// Binds NAME=FILE arguments by name and the others to the remaining inputs in signature order.
/// numpy has no bfloat16, so ONNX's test data stores bfloat16 tensors as
/// uint16 bit patterns; where the model says bfloat16, read the bits as such.
void bfloat16FromUint16(HostTensor &t, kiln_dtype wanted) {
  if (wanted == KILN_DTYPE_BFLOAT16 && t.dtype == KILN_DTYPE_UINT16)
    t.dtype = KILN_DTYPE_BFLOAT16;
}

std::vector<HostTensor> bindInputs(const Options &o, const std::vector<kiln::TensorInfo> &infos) {
  const size_t n = infos.size();
  std::vector<std::optional<HostTensor>> bound(n);
  if (!o.testDataDir.empty()) {
    for (size_t k = 0; k < n; ++k)
      bound[k] = readTensor(o.testDataDir + "/input_" + std::to_string(k) + ".pb");
  }
  size_t next = 0;
  for (const std::string &arg : o.inputs) {
    size_t eq = arg.find('=');
    auto named = eq == std::string::npos ? infos.end()
                                         : std::find_if(infos.begin(), infos.end(),
                                                        [&](const kiln::TensorInfo &i) { return i.name == arg.substr(0, eq); });
    size_t slot;
    std::string path = arg;
    if (named != infos.end()) {
      slot = size_t(named - infos.begin());
      path = arg.substr(eq + 1);
      if (bound[slot])
        throw UsageError{"input '" + named->name + "' is given twice"};
    } else {
      while (next < n && bound[next])
        ++next;
      if (next >= n)
        throw UsageError{"too many input files: the model takes " + std::to_string(n) + " input" +
                         (n == 1 ? "" : "s") + " (" + inputList(infos) + ")"};
      slot = next;
    }
    bound[slot] = readTensor(path);
  }
  std::vector<HostTensor> result;
  for (size_t k = 0; k < n; ++k) {
    if (!bound[k])
      throw UsageError{"no file for input '" + infos[k].name + "' (the model takes " + std::to_string(n) +
                       " input" + (n == 1 ? "" : "s") + ": " + inputList(infos) + ")"};
    result.push_back(std::move(*bound[k]));
    bfloat16FromUint16(result.back(), infos[k].dtype);
  }
  return result;
}

std::vector<std::string> expectedFiles(const Options &o, size_t outputs) {
  if (o.testDataDir.empty())
    return o.expect;
  std::vector<std::string> files;
  for (size_t k = 0; k < outputs; ++k) {
    std::string f = o.testDataDir + "/output_" + std::to_string(k) + ".pb";
    if (!std::filesystem::exists(f))
      break;
    files.push_back(f);
  }
  return files;
}

HostTensor toHost(const kiln::Tensor &t, const std::string &name) {
  HostTensor h;
  h.dtype = uint32_t(t.dtype());
  h.shape = t.shape();
  if (t.dtype() == KILN_DTYPE_STRING) {
    for (int64_t i = 0; i < t.elementCount(); ++i)
      h.strings.emplace_back(t.string(i));
  } else if (t.byteSize() > 0) { // an empty output may have no data pointer at all
    h.bytes.assign(static_cast<const char *>(t.data()), t.byteSize());
  }
  h.name = name;
  return h;
}

std::string sanitize(const std::string &name) {
  std::string s = name;
  for (char &c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      c = '_';
  return s.empty() ? "output" : s;
}

double percentile(std::vector<double> sorted, double p) {
  const size_t idx = std::min(sorted.size() - 1, size_t(p * double(sorted.size() - 1) + 0.5));
  return sorted[idx];
}

std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out;
}

// Operations (or bytes) per nanosecond, i.e. G/s, over a duration in microseconds; 0 when unknown.
double perNanosecond(double amount, double us) { return us > 0 ? amount / (us * 1e3) : 0.0; }

// Chrome trace event format: one complete ("X") event per run and per kernel launch.
void writeTrace(const std::string &path, const kiln::Model &model,
                const std::vector<std::vector<kiln_profile_event>> &profiles,
                const std::vector<double> &runStarts, const std::vector<double> &latencies) {
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    throw UsageError{"cannot write profile '" + path + "'"};
  std::fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  bool firstEvent = true;
  auto sep = [&] {
    if (!firstEvent)
      std::fprintf(f, ",\n");
    firstEvent = false;
  };
  for (size_t r = 0; r < profiles.size(); ++r) {
    const double base = runStarts[r] * 1000.0;
    sep();
    std::fprintf(f, "{\"name\": \"run %zu\", \"cat\": \"run\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, "
                 "\"ts\": %.3f, \"dur\": %.3f}", r, base, latencies[r] * 1000.0);
    for (const kiln_profile_event &e : profiles[r]) {
      sep();
      std::fprintf(f, "{\"name\": \"%s\", \"cat\": \"kernel\", \"ph\": \"X\", \"pid\": 1, \"tid\": 2, "
                   "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"onnx_nodes\": \"%s\", \"work_items\": %lld, "
                   "\"flops\": %lld, \"bytes\": %lld, \"gflop_per_s\": %.3f, \"gb_per_s\": %.3f}}",
                   jsonEscape(model.kernelName(e.kernel_id)).c_str(), base + e.start_us, e.duration_us,
                   jsonEscape(model.kernelNodes(e.kernel_id)).c_str(), static_cast<long long>(e.work_items),
                   static_cast<long long>(e.flops), static_cast<long long>(e.bytes),
                   perNanosecond(double(e.flops), e.duration_us), perNanosecond(double(e.bytes), e.duration_us));
    }
  }
  std::fprintf(f, "\n]}\n");
  if (std::fclose(f) != 0)
    throw UsageError{"cannot write profile '" + path + "'"};
}

// Kernels by total time over the timed runs.
void printProfileSummary(const kiln::Model &model, const std::vector<std::vector<kiln_profile_event>> &profiles,
                         const std::vector<double> &latencies) {
  struct Total {
    double us = 0;
    int64_t launches = 0;
    double flops = 0, bytes = 0;
  };
  std::map<int32_t, Total> totals;
  double kernelUs = 0;
  for (const auto &run : profiles)
    for (const kiln_profile_event &e : run) {
      totals[e.kernel_id].us += e.duration_us;
      totals[e.kernel_id].launches += 1;
      totals[e.kernel_id].flops += double(e.flops);
      totals[e.kernel_id].bytes += double(e.bytes);
      kernelUs += e.duration_us;
    }
  double runUs = 0;
  for (double ms : latencies)
    runUs += ms * 1000.0;
  std::vector<std::pair<int32_t, Total>> sorted(totals.begin(), totals.end());
  std::sort(sorted.begin(), sorted.end(), [](auto &a, auto &b) { return a.second.us > b.second.us; });
  std::printf("profile: %zu runs, kernels %.1f%% of run time\n", profiles.size(),
              runUs > 0 ? 100.0 * kernelUs / runUs : 0.0);
  // Achieved rates: the kernel's total estimated bytes (FLOPs) over its total time; "-" when
  // the compiler counted none.
  auto rate = [](double amount, double us) {
    char buf[32];
    if (amount <= 0 || us <= 0)
      return std::string("-");
    std::snprintf(buf, sizeof buf, "%.2f", perNanosecond(amount, us));
    return std::string(buf);
  };
  std::printf("  %6s %10s %8s %9s %9s  %-18s %s\n", "share", "us/run", "launches", "GB/s", "GFLOP/s", "kernel",
              "onnx nodes");
  for (const auto &[id, t] : sorted)
    std::printf("  %5.1f%% %10.2f %8lld %9s %9s  %-18s %s\n", kernelUs > 0 ? 100.0 * t.us / kernelUs : 0.0,
                t.us / double(std::max<size_t>(profiles.size(), 1)), static_cast<long long>(t.launches),
                rate(t.bytes, t.us).c_str(), rate(t.flops, t.us).c_str(), model.kernelName(id).c_str(),
                model.kernelNodes(id).c_str());
}

int runMain(const Options &o) {
  kiln::Model model = kiln::Model::load(o.artifact, o.threads, o.weightsDir);
  const auto inputInfos = model.inputs();
  const auto outputInfos = model.outputs();
  const std::vector<HostTensor> hostInputs = bindInputs(o, inputInfos);
  const std::vector<std::string> expectFiles = expectedFiles(o, outputInfos.size());
  // A test directory without reference outputs would "pass" having compared nothing.
  if (!o.testDataDir.empty() && expectFiles.empty())
    throw UsageError{o.testDataDir + " has no output_0.pb: nothing to compare"};
  if (expectFiles.size() > outputInfos.size())
    throw UsageError{std::to_string(expectFiles.size()) + " expected outputs given; the model has " +
                     std::to_string(outputInfos.size())};
  std::vector<HostTensor> expected;
  for (const auto &f : expectFiles) {
    expected.push_back(readTensor(f));
    bfloat16FromUint16(expected.back(), outputInfos[expected.size() - 1].dtype);
  }

  std::vector<kiln::Tensor> inputs;
  for (const HostTensor &h : hostInputs)
    inputs.push_back(h.dtype == KILN_DTYPE_STRING
                         ? kiln::Tensor::strings(h.shape, h.strings)
                         : kiln::Tensor::copy(kiln_dtype(h.dtype), h.shape, h.bytes.data(), h.bytes.size()));

  kiln::Session session(model);
  std::vector<kiln::Tensor> outputs;
  // --device-io: the inputs copied to the GPU once, the outputs' shapes from one untimed run.
  std::vector<kiln::Tensor> deviceInputs, deviceOutputs;
  std::vector<const kiln::Tensor *> deviceIn;
  std::vector<kiln::Tensor *> deviceOut;
  if (o.deviceIo) {
    for (size_t i = 0; i < hostInputs.size(); ++i) {
      const HostTensor &h = hostInputs[i];
      if (h.dtype == KILN_DTYPE_STRING)
        throw UsageError{"--device-io: input '" + inputInfos[i].name + "' holds strings, which stay in host memory"};
      deviceInputs.push_back(
          kiln::Tensor::onDevice(model.get(), kiln_dtype(h.dtype), h.shape, h.bytes.data(), h.bytes.size()));
    }
    for (const kiln::Tensor &t : session.run(deviceInputs))
      deviceOutputs.push_back(kiln::Tensor::onDevice(model.get(), t.dtype(), t.shape(), nullptr, t.byteSize()));
    for (const kiln::Tensor &t : deviceInputs)
      deviceIn.push_back(&t);
    for (kiln::Tensor &t : deviceOutputs)
      deviceOut.push_back(&t);
  }
  auto runOnce = [&] {
    if (o.deviceIo)
      session.runInto(deviceIn, deviceOut);
    else
      outputs = session.run(inputs);
  };
  for (int64_t i = 0; i < o.warmup; ++i)
    runOnce();
  std::vector<double> latencies;
  const int64_t runs = std::max<int64_t>(o.iterations, 1);
  const bool profiling = !o.profilePath.empty() || o.profileSummary;
  session.setProfiling(profiling);
  std::vector<std::vector<kiln_profile_event>> profiles;
  std::vector<double> runStarts; // ms since the first timed run, for the trace
  const auto first = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < runs; ++i) {
    outputs.clear(); // release the previous outputs outside the timed region
    auto start = std::chrono::steady_clock::now();
    runOnce();
    latencies.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (profiling) {
      profiles.push_back(session.profile());
      runStarts.push_back(std::chrono::duration<double, std::milli>(start - first).count());
    }
  }
  if (!o.profilePath.empty())
    writeTrace(o.profilePath, model, profiles, runStarts, latencies);
  if (o.profileSummary)
    printProfileSummary(model, profiles, latencies);
  for (const kiln::Tensor &t : deviceOutputs)
    outputs.push_back(t.toHost());

  bool allOk = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor out = toHost(outputs[i], outputInfos[i].name);
    const std::string label = "output '" + out.name + "'";
    if (!o.quiet)
      std::printf("%s: %s%s = %s\n", label.c_str(), kiln::tools::dtypeName(out.dtype).c_str(),
                  kiln::tools::shapeString(out.shape).c_str(), kiln::tools::formatValues(out, 8).c_str());
    if (i < expected.size()) {
      auto r = kiln::tools::compareTensors(out, expected[i], o.rtol, o.atol);
      std::printf("%s: %s (%s)\n", label.c_str(), r.ok ? "ok" : "MISMATCH", r.detail.c_str());
      allOk = allOk && r.ok;
    }
    if (!o.outputDir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.outputDir, ec);
      std::string error;
      const std::string path = o.outputDir + "/" + std::to_string(i) + "_" + sanitize(out.name) + ".npy";
      if (!kiln::tools::writeNpyFile(path, out, &error))
        throw UsageError{error};
    }
  }
  if (o.iterations > 0) {
    std::vector<double> sorted = latencies;
    std::sort(sorted.begin(), sorted.end());
    std::printf("latency_ms median=%.4f p90=%.4f min=%.4f max=%.4f iterations=%lld threads=%d\n",
                percentile(sorted, 0.5), percentile(sorted, 0.9), sorted.front(), sorted.back(),
                static_cast<long long>(o.iterations), model.metadata().num_threads);
  }
  std::fflush(stdout);
  return allOk ? 0 : 1;
}

int fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "kiln-run: error: %s\n", message.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  try {
    if (argc >= 2 && std::string(argv[1]) == "generate")
      return kiln::tools::runGenerate(argc - 2, argv + 2);
    std::optional<Options> options = parseArgs(argc, argv);
    if (!options) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    return runMain(*options);
  } catch (const UsageError &e) {
    return fail(e.message);
  } catch (const kiln::Error &e) {
    return fail(e.what());
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(e.what());
  }
}
