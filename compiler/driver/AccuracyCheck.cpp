// Float vs quantized artifact on the same inputs, through the runtime's C API (kiln.hpp).
#include "compiler/driver/AccuracyCheck.h"

#include "kiln/kiln.hpp"
#include "tensor_compare.h"
#include "tensor_file.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace kiln::driver {
using artifact::formatFigure;
namespace {

using tools::HostTensor;

// A failure with a message for the user (bad calibration data, a run that fails).
struct CheckError {
  std::string message;
};

// ---- Seeded random numbers: splitmix64, so the inputs are the same on every machine and
// standard library (std:: distributions are implementation-defined). ----
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; } // [0, 1)
  double normal() { // Box-Muller
    const double u = 1.0 - uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  int64_t below(int64_t n) { return n <= 1 ? 0 : int64_t(next() % uint64_t(n)); }
};

std::string lower(std::string s) {
  for (char &c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string &haystack, const char *needle) { return lower(haystack).find(needle) != std::string::npos; }

bool isFloatDtype(uint32_t d) { return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64; }

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

template <typename T> void put(std::string &bytes, size_t i, T v) { std::memcpy(&bytes[i * sizeof(T)], &v, sizeof(T)); }

// Stores `v` as element i of a tensor of `dtype` (the dtypes random inputs are made for).
bool store(std::string &bytes, uint32_t dtype, size_t i, double v) {
  switch (dtype) {
  case KILN_DTYPE_FLOAT32: put(bytes, i, float(v)); return true;
  case KILN_DTYPE_FLOAT64: put(bytes, i, v); return true;
  case KILN_DTYPE_INT64: put(bytes, i, int64_t(v)); return true;
  case KILN_DTYPE_INT32: put(bytes, i, int32_t(v)); return true;
  case KILN_DTYPE_INT16: put(bytes, i, int16_t(v)); return true;
  case KILN_DTYPE_INT8: put(bytes, i, int8_t(v)); return true;
  case KILN_DTYPE_UINT8: put(bytes, i, uint8_t(v)); return true;
  case KILN_DTYPE_BOOL: put(bytes, i, uint8_t(v != 0)); return true;
  default: return false;
  }
}

// ---- Random inputs from the signature. ----
HostTensor randomInput(const TensorInfo &info, size_t inputIndex, uint32_t sample, const AccuracyOptions &o,
                       const std::map<std::string, int64_t> &bounds) {
  HostTensor t;
  t.dtype = uint32_t(info.dtype);
  t.name = info.name;
  for (size_t a = 0; a < info.dims.size(); ++a) {
    if (info.dims[a] >= 0) {
      t.shape.push_back(info.dims[a]);
      continue;
    }
    auto it = o.dims.find(info.symbols[a]);
    t.shape.push_back(it != o.dims.end() ? it->second : defaultSymbolicDim(info.symbols[a], a));
  }
  const uint32_t size = tools::dtypeElementSize(t.dtype);
  if (size == 0)
    throw CheckError{"input '" + info.name + "' has dtype " + tools::dtypeName(t.dtype) +
                     ", for which no random values can be made: give --calibration"};
  const int64_t n = elementCount(t.shape);
  t.bytes.assign(size_t(n) * size, '\0');
  // One stream per (seed, sample, input), independent of the other inputs' sizes.
  Rng rng(o.seed * 0x100000001b3ull + uint64_t(sample) * 0x9e3779b1ull + inputIndex);
  const int64_t last = t.shape.empty() ? 1 : std::max<int64_t>(t.shape.back(), 1);
  auto bound = bounds.find(info.name);
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (isFloatDtype(t.dtype))
      v = rng.normal();
    else if (t.dtype == KILN_DTYPE_BOOL || contains(info.name, "mask"))
      v = 1; // masks keep everything
    else if (contains(info.name, "position"))
      v = double(i % last); // positions count along the last axis
    else if (bound != bounds.end())
      v = double(rng.below(bound->second)); // ids inside the table they index
    else
      v = 0; // an integer of unknown meaning: 0 is a valid index, count and position
    if (!store(t.bytes, t.dtype, size_t(i), v))
      throw CheckError{"input '" + info.name + "' has dtype " + tools::dtypeName(t.dtype) +
                       ", for which no random values can be made: give --calibration"};
  }
  return t;
}

// ---- Calibration data on disk. ----
HostTensor readTensor(const fs::path &path) {
  HostTensor t;
  std::string error;
  if (!tools::readTensorFile(path.string(), &t, &error))
    throw CheckError{"calibration: " + error};
  return t;
}

std::string inputNames(const std::vector<TensorInfo> &infos) {
  std::string s;
  for (const auto &i : infos)
    s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

std::vector<fs::path> sortedEntries(const fs::path &dir) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    entries.push_back(it->path());
  if (ec)
    throw CheckError{"calibration dir '" + dir.string() + "': " + ec.message()};
  std::sort(entries.begin(), entries.end());
  return entries;
}

// `input_<K>.pb` -> K, else -1.
long onnxInputIndex(const std::string &file) {
  if (file.rfind("input_", 0) != 0 || file.size() <= 9 || file.substr(file.size() - 3) != ".pb")
    return -1;
  const std::string digits = file.substr(6, file.size() - 9);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit) || digits.size() > 6)
    return -1;
  return std::stol(digits);
}

// One sample's tensors by name, from a folder of input_K.pb (ONNX layout: the TensorProto's name,
// or the K-th input) or of <input name>.pb files.
std::map<std::string, HostTensor> readSampleDir(const fs::path &dir, const std::vector<TensorInfo> &infos,
                                                bool strict = true) {
  std::map<std::string, HostTensor> byName;
  for (const fs::path &p : sortedEntries(dir)) {
    const std::string file = p.filename().string();
    if (p.extension() != ".pb" || !fs::is_regular_file(p))
      continue;
    HostTensor t = readTensor(p);
    std::string name = p.stem().string();
    const bool namesInput = std::any_of(infos.begin(), infos.end(), [&](const TensorInfo &i) { return i.name == name; });
    if (!namesInput) {
      const long k = onnxInputIndex(file);
      if (k < 0) {
        if (file.rfind("output_", 0) == 0 || !strict)
          continue; // expected outputs of the ONNX layout
        throw CheckError{"calibration file '" + p.string() + "' names no input of the model (inputs: " +
                         inputNames(infos) + ")"};
      }
      if (!t.name.empty())
        name = t.name;
      else if (size_t(k) < infos.size())
        name = infos[size_t(k)].name;
    }
    if (byName.count(name))
      throw CheckError{"calibration dir '" + dir.string() + "' gives input '" + name + "' twice"};
    byName[name] = std::move(t);
  }
  return byName;
}

// Sample folders: test_data_set_* subfolders, or the directory itself.
std::vector<fs::path> sampleDirs(const std::string &dirName) {
  const fs::path dir(dirName);
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw CheckError{"calibration dir '" + dirName + "' does not exist"};
  if (!fs::is_directory(dir, ec))
    throw CheckError{"calibration dir '" + dirName + "' is not a directory"};
  std::vector<fs::path> sets;
  for (const fs::path &p : sortedEntries(dir))
    if (p.filename().string().rfind("test_data_set_", 0) == 0 && fs::is_directory(p, ec))
      sets.push_back(p);
  if (sets.empty())
    sets.push_back(dir);
  return sets;
}

// Checks a calibration tensor against the model's input before any run, so the message names the
// sample and the input rather than coming back from the runtime.
void checkAgainstSignature(const HostTensor &t, const TensorInfo &info, const fs::path &where) {
  const std::string what = "calibration '" + where.string() + "' input '" + info.name + "'";
  if (t.dtype != uint32_t(info.dtype))
    throw CheckError{what + " is " + tools::dtypeName(t.dtype) + ", the model takes " +
                     tools::dtypeName(uint32_t(info.dtype))};
  if (t.shape.size() != info.dims.size())
    throw CheckError{what + " has shape " + tools::shapeString(t.shape) + ", the model takes rank " +
                     std::to_string(info.dims.size())};
  for (size_t a = 0; a < info.dims.size(); ++a)
    if (info.dims[a] >= 0 && t.shape[a] != info.dims[a])
      throw CheckError{what + " has shape " + tools::shapeString(t.shape) + "; dim " + std::to_string(a) +
                       " must be " + std::to_string(info.dims[a])};
}

std::vector<std::vector<HostTensor>> calibrationSamples(const std::string &dirName,
                                                        const std::vector<TensorInfo> &infos) {
  std::vector<std::vector<HostTensor>> samples;
  for (const fs::path &dir : sampleDirs(dirName)) {
    std::map<std::string, HostTensor> byName = readSampleDir(dir, infos);
    for (const auto &entry : byName) {
      const std::string &name = entry.first;
      if (std::none_of(infos.begin(), infos.end(), [&](const TensorInfo &i) { return i.name == name; }))
        throw CheckError{"calibration '" + dir.string() + "' has a tensor for '" + name +
                         "', which is not an input of the model (inputs: " + inputNames(infos) + ")"};
    }
    std::vector<HostTensor> sample;
    for (const TensorInfo &info : infos) {
      auto it = byName.find(info.name);
      if (it == byName.end())
        throw CheckError{"calibration '" + dir.string() + "' has no tensor for input '" + info.name +
                         "' (inputs: " + inputNames(infos) + ")"};
      checkAgainstSignature(it->second, info, dir);
      sample.push_back(std::move(it->second));
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

// ---- Error figures of one output, accumulated over samples. ----
struct Accumulator {
  double maxAbs = 0, maxRef = 0, dot = 0, normF = 0, normQ = 0;
  bool diverged = false; // a NaN or infinity where the other side has none

  void add(double f, double q) {
    if (std::isnan(f) && std::isnan(q))
      return;
    if (!std::isfinite(f) || !std::isfinite(q)) {
      if (f != q)
        diverged = true;
      return;
    }
    maxAbs = std::max(maxAbs, std::fabs(q - f));
    maxRef = std::max(maxRef, std::fabs(f));
    dot += f * q;
    normF += f * f;
    normQ += q * q;
  }
  artifact::OutputAccuracy result(const std::string &name) const {
    artifact::OutputAccuracy o;
    o.name = name;
    if (diverged) {
      o.maxAbsError = o.maxRelError = INFINITY;
      o.cosine = NAN;
      return o;
    }
    o.maxAbsError = maxAbs;
    // An all-zero reference: any difference is infinitely large relative to it.
    o.maxRelError = maxRef > 0 ? maxAbs / maxRef : maxAbs > 0 ? INFINITY : 0.0;
    o.cosine = normF > 0 && normQ > 0 ? dot / (std::sqrt(normF) * std::sqrt(normQ))
               : normF == normQ       ? 1.0 // both all zero: identical
                                      : 0.0;
    return o;
  }
};

Tensor toRuntime(const HostTensor &t) {
  return Tensor::copy(kiln_dtype(t.dtype), t.shape, t.bytes.data(), t.bytes.size());
}

HostTensor toHost(const Tensor &t) {
  HostTensor h;
  h.dtype = uint32_t(t.dtype());
  h.shape = t.shape();
  if (t.byteSize() > 0)
    h.bytes.assign(static_cast<const char *>(t.data()), t.byteSize());
  return h;
}

void checkSameSignature(const Model &f, const Model &q) {
  auto same = [](const std::vector<TensorInfo> &a, const std::vector<TensorInfo> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].dims != b[i].dims)
        return false;
    return true;
  };
  if (!same(f.inputs(), q.inputs()) || !same(f.outputs(), q.outputs()))
    throw CheckError{"internal: the quantized and float artifacts have different signatures"};
}

// Plain models: every output of every sample, float vs quantized.
void measureOutputs(Model &fm, Model &qm, const AccuracyOptions &o, artifact::AccuracyReport &report) {
  const std::vector<TensorInfo> inputs = fm.inputs(), outputs = fm.outputs();
  std::vector<std::vector<HostTensor>> samples;
  if (!o.calibrationDir.empty()) {
    samples = calibrationSamples(o.calibrationDir, inputs);
    report.inputs = "calibration dir " + o.calibrationDir;
  } else {
    std::map<std::string, int64_t> bounds;
    for (const IndexBound &b : o.indexBounds)
      bounds[b.input] = b.rows;
    for (uint32_t s = 0; s < o.samples; ++s) {
      std::vector<HostTensor> sample;
      for (size_t i = 0; i < inputs.size(); ++i)
        sample.push_back(randomInput(inputs[i], i, s, o, bounds));
      samples.push_back(std::move(sample));
    }
    report.inputs = "random inputs, seed " + std::to_string(o.seed);
  }
  Session floatSession(fm), quantSession(qm);
  std::vector<Accumulator> acc(outputs.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    std::vector<Tensor> in;
    for (const HostTensor &t : samples[s])
      in.push_back(toRuntime(t));
    std::vector<Tensor> fo, qo;
    try {
      fo = floatSession.run(in);
      qo = quantSession.run(in);
    } catch (const Error &e) {
      throw CheckError{"running calibration sample " + std::to_string(s) + ": " + e.what()};
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      const HostTensor f = toHost(fo[k]), q = toHost(qo[k]);
      if (f.shape != q.shape)
        throw CheckError{"output '" + outputs[k].name + "': the quantized artifact gives shape " +
                         tools::shapeString(q.shape) + ", the float one " + tools::shapeString(f.shape)};
      const size_t size = tools::dtypeElementSize(f.dtype);
      const size_t n = size ? f.bytes.size() / size : 0;
      for (size_t i = 0; i < n; ++i)
        acc[k].add(tools::valueAsDouble(f, i), tools::valueAsDouble(q, i));
    }
  }
  report.samples = uint32_t(samples.size());
  for (size_t k = 0; k < outputs.size(); ++k)
    report.outputs.push_back(acc[k].result(outputs[k].name));
}

// ---- Decoders: teacher-forced token sequences through the generator. ----
std::vector<int32_t> readTokenFile(const std::string &path, int32_t vocab) {
  std::ifstream in(path);
  if (!in)
    throw CheckError{"cannot read --calibration-tokens file '" + path + "'"};
  std::vector<int32_t> tokens;
  std::string word;
  while (in >> word) {
    char *end = nullptr;
    errno = 0;
    const long long v = std::strtoll(word.c_str(), &end, 10);
    if (*end != '\0' || errno != 0)
      throw CheckError{"--calibration-tokens file '" + path + "': token " + std::to_string(tokens.size()) + " '" +
                       word + "' is not an integer id"};
    if (v < 0 || v >= vocab)
      throw CheckError{"--calibration-tokens file '" + path + "': token " + std::to_string(tokens.size()) +
                       " is id " + word + ", outside the vocabulary [0, " + std::to_string(vocab) + ")"};
    tokens.push_back(int32_t(v));
  }
  if (tokens.size() < 2)
    throw CheckError{"--calibration-tokens file '" + path + "' has " + std::to_string(tokens.size()) +
                     " token" + (tokens.size() == 1 ? "" : "s") + "; perplexity needs at least 2"};
  return tokens;
}

// input_ids rows of the calibration samples (the decoder's other ONNX inputs, the past and the
// mask, are the generator's business).
std::vector<std::vector<int32_t>> calibrationTokenRows(const std::string &dirName, int32_t vocab) {
  std::vector<std::vector<int32_t>> rows;
  const std::vector<TensorInfo> idsOnly = {TensorInfo{"input_ids", KILN_DTYPE_INT64, {}, {}}};
  for (const fs::path &dir : sampleDirs(dirName)) {
    std::map<std::string, HostTensor> byName = readSampleDir(dir, idsOnly, /*strict=*/false);
    auto it = byName.find("input_ids");
    if (it == byName.end())
      throw CheckError{"calibration '" + dir.string() + "' has no input_ids tensor, which a decoder needs"};
    const HostTensor &t = it->second;
    if ((t.dtype != KILN_DTYPE_INT64 && t.dtype != KILN_DTYPE_INT32) || t.shape.empty())
      throw CheckError{"calibration '" + dir.string() + "' input_ids is " + tools::dtypeName(t.dtype) +
                       tools::shapeString(t.shape) + ", not an integer [batch, length] tensor"};
    const int64_t len = t.shape.back(), count = elementCount(t.shape);
    for (int64_t r = 0; len > 0 && r < count / len; ++r) {
      std::vector<int32_t> row;
      for (int64_t i = 0; i < len; ++i) {
        const double v = tools::valueAsDouble(t, size_t(r * len + i));
        if (v < 0 || v >= vocab)
          throw CheckError{"calibration '" + dir.string() + "' input_ids row " + std::to_string(r) + " token " +
                           std::to_string(i) + " is id " + std::to_string(int64_t(v)) +
                           ", outside the vocabulary [0, " + std::to_string(vocab) + ")"};
        row.push_back(int32_t(v));
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

// log p(target) under softmax(logits), in double.
double logProb(const float *logits, int32_t vocab, int32_t target) {
  double m = -INFINITY;
  for (int32_t i = 0; i < vocab; ++i)
    m = std::max(m, double(logits[i]));
  double sum = 0;
  for (int32_t i = 0; i < vocab; ++i)
    sum += std::exp(double(logits[i]) - m);
  return double(logits[target]) - m - std::log(sum);
}

int32_t argmax(const float *logits, int32_t vocab) {
  return int32_t(std::max_element(logits, logits + vocab) - logits); // lowest id on ties, as greedy decoding
}

void measureDecoder(Model &fm, Model &qm, const AccuracyOptions &o, artifact::AccuracyReport &report) {
  Generator fg(fm), qg(qm);
  const int32_t vocab = fg.vocabSize();
  if (qg.vocabSize() != vocab || vocab <= 0)
    throw CheckError{"internal: the quantized and float decoders have different vocabularies"};
  std::vector<std::vector<int32_t>> sequences;
  if (!o.tokensFile.empty()) {
    sequences.push_back(readTokenFile(o.tokensFile, vocab));
    report.tokens = "token file " + o.tokensFile;
  } else if (!o.calibrationDir.empty()) {
    sequences = calibrationTokenRows(o.calibrationDir, vocab);
    report.tokens = "input_ids of calibration dir " + o.calibrationDir;
  } else {
    int64_t rows = vocab;
    for (const IndexBound &b : o.indexBounds)
      if (b.input == "input_ids")
        rows = std::min<int64_t>(rows, b.rows);
    for (uint32_t s = 0; s < o.samples; ++s) {
      Rng rng(o.seed * 0x100000001b3ull + uint64_t(s) * 0x9e3779b1ull);
      std::vector<int32_t> seq;
      for (int64_t i = 0; i < o.randomTokens; ++i)
        seq.push_back(int32_t(rng.below(rows)));
      sequences.push_back(std::move(seq));
    }
    report.tokens = "random tokens, seed " + std::to_string(o.seed);
  }
  report.inputs = report.tokens;
  // A sequence longer than the cache is scored in windows that each start from an empty cache.
  const int64_t window = std::min(fg.maxContext(), qg.maxContext());
  Accumulator logits;
  uint64_t positions = 0, agree = 0;
  double nllF = 0, nllQ = 0;
  uint32_t windows = 0;
  for (const auto &seq : sequences) {
    for (size_t begin = 0; begin + 1 < seq.size(); begin += size_t(window)) {
      const size_t end = std::min(seq.size(), begin + size_t(window));
      if (end - begin < 2)
        break;
      try {
        fg.start({{seq[begin]}});
        qg.start({{seq[begin]}});
        for (size_t i = begin; i + 1 < end; ++i) {
          if (i > begin) {
            fg.feed({seq[i]});
            qg.feed({seq[i]});
          }
          const float *f = fg.logits(), *q = qg.logits();
          for (int32_t v = 0; v < vocab; ++v)
            logits.add(f[v], q[v]);
          agree += argmax(f, vocab) == argmax(q, vocab);
          nllF -= logProb(f, vocab, seq[i + 1]);
          nllQ -= logProb(q, vocab, seq[i + 1]);
          ++positions;
        }
      } catch (const Error &e) {
        throw CheckError{std::string("decoding calibration tokens: ") + e.what()};
      }
      ++windows;
    }
  }
  if (positions == 0)
    throw CheckError{"no token sequence of at least 2 tokens to score"};
  report.samples = windows;
  report.outputs.push_back(logits.result("logits"));
  report.positions = positions;
  report.top1Agreement = double(agree) / double(positions);
  report.perplexityFloat = std::exp(nllF / double(positions));
  report.perplexityQuantized = std::exp(nllQ / double(positions));
}


} // namespace

int64_t defaultSymbolicDim(const std::string &symbol, size_t axis) {
  if (contains(symbol, "batch") || symbol == "N" || symbol == "n" || (symbol.empty() && axis == 0))
    return 1;
  return 8;
}

bool checkAccuracyInputs(const AccuracyOptions &options, std::string *error) {
  try {
    if (!options.calibrationDir.empty())
      sampleDirs(options.calibrationDir);
    if (!options.tokensFile.empty() && !std::ifstream(options.tokensFile))
      throw CheckError{"cannot read --calibration-tokens file '" + options.tokensFile + "'"};
    return true;
  } catch (const CheckError &e) {
    *error = e.message;
    return false;
  }
}

bool measureAccuracy(const std::string &floatArtifact, const std::string &quantizedArtifact,
                     const AccuracyOptions &options, artifact::AccuracyReport *report, std::string *error) {
  try {
    Model fm = Model::load(floatArtifact), qm = Model::load(quantizedArtifact);
    checkSameSignature(fm, qm);
    artifact::AccuracyReport r;
    r.present = true;
    r.positions = 0;
    r.top1Agreement = r.perplexityFloat = r.perplexityQuantized = NAN;
    const bool decoder = kiln_model_is_decoder(fm.get()) != 0;
    if (!options.tokensFile.empty() && !decoder)
      throw CheckError{"--calibration-tokens needs a decoder (a model in the \"with past\" layout compiled with "
                       "its KV cache); this model is not one"};
    if (decoder)
      measureDecoder(fm, qm, options, r);
    else
      measureOutputs(fm, qm, options, r);
    *report = std::move(r);
    return true;
  } catch (const CheckError &e) {
    *error = e.message;
  } catch (const Error &e) {
    *error = std::string("accuracy check: ") + e.what();
  } catch (const std::bad_alloc &) {
    *error = "accuracy check: out of memory";
  }
  return false;
}

bool storeAccuracyReport(const std::string &quantizedArtifact, const std::string &outPath,
                         const artifact::AccuracyReport &report, std::string *error) {
  const int fd = ::open(quantizedArtifact.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size <= 0) {
    if (fd >= 0)
      ::close(fd);
    *error = "cannot read back '" + quantizedArtifact + "': " + std::strerror(errno);
    return false;
  }
  const size_t size = size_t(st.st_size);
  void *map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    *error = "cannot map '" + quantizedArtifact + "': " + std::strerror(errno);
    return false;
  }
  artifact::ArtifactView view;
  bool ok = artifact::parseArtifact(static_cast<const uint8_t *>(map), size, &view, error);
  if (ok) {
    artifact::Metadata meta = view.meta;
    meta.quantization.accuracy = report;
    ok = artifact::rewriteArtifact(outPath, view, std::move(meta), error);
  }
  ::munmap(map, size);
  return ok;
}

std::vector<std::string> thresholdViolations(const artifact::AccuracyReport &r, const AccuracyOptions &o) {
  std::vector<std::string> v;
  for (const artifact::OutputAccuracy &out : r.outputs) {
    // NaN figures (outputs that diverge) fail every threshold.
    if (!std::isnan(o.maxError) && !(out.maxRelError <= o.maxError))
      v.push_back("output '" + out.name + "' max relative error " + formatFigure(out.maxRelError) + " exceeds --max-error=" +
                  formatFigure(o.maxError, "%g"));
    if (!std::isnan(o.minCosine) && !(out.cosine >= o.minCosine))
      v.push_back("output '" + out.name + "' cosine similarity " + formatFigure(out.cosine, "%.6f") +
                  " is below --min-cosine=" + formatFigure(o.minCosine, "%.6g"));
  }
  const bool lm = r.positions > 0;
  if (!std::isnan(o.minTop1)) {
    if (!lm)
      v.push_back("--min-top1 applies to decoders only; this model is not one");
    else if (!(r.top1Agreement >= o.minTop1))
      v.push_back("output 'logits' top-1 agreement " + formatFigure(r.top1Agreement) + " is below --min-top1=" +
                  formatFigure(o.minTop1, "%g"));
  }
  if (!std::isnan(o.maxPerplexityRatio)) {
    const double ratio = r.perplexityQuantized / r.perplexityFloat;
    if (!lm)
      v.push_back("--max-perplexity-ratio applies to decoders only; this model is not one");
    else if (!(ratio <= o.maxPerplexityRatio))
      v.push_back("output 'logits' perplexity ratio " + formatFigure(ratio) + " (quantized " + formatFigure(r.perplexityQuantized) +
                  " / float " + formatFigure(r.perplexityFloat) + ") exceeds --max-perplexity-ratio=" +
                  formatFigure(o.maxPerplexityRatio, "%g"));
  }
  return v;
}

std::string formatReport(const artifact::AccuracyReport &r, const std::string &mode) {
  std::ostringstream s;
  s << "accuracy of " << mode << " against float (" << r.inputs << ", " << r.samples
    << (r.positions > 0 ? " sequence" : " sample") << (r.samples == 1 ? "" : "s") << "):\n";
  size_t width = 6;
  for (const auto &o : r.outputs)
    width = std::max(width, o.name.size());
  char line[512];
  std::snprintf(line, sizeof line, "  %-*s  %12s  %12s  %10s\n", int(width), "output", "max abs err", "max rel err",
                "cosine");
  s << line;
  for (const auto &o : r.outputs) {
    std::snprintf(line, sizeof line, "  %-*s  %12s  %12s  %10s\n", int(width), o.name.c_str(),
                  formatFigure(o.maxAbsError).c_str(), formatFigure(o.maxRelError).c_str(), formatFigure(o.cosine, "%.6f").c_str());
    s << line;
  }
  if (r.positions > 0)
    s << "  next token over " << r.positions << " positions: top-1 agreement " << formatFigure(r.top1Agreement)
      << ", perplexity float " << formatFigure(r.perplexityFloat) << " quantized " << formatFigure(r.perplexityQuantized) << "\n";
  return s.str();
}

} // namespace kiln::driver
