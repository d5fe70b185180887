// Helpers shared by the runtime unit tests.
#include "test_util.h"

#include "kiln/abi.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kiln::test {

const float kAddWeight[4] = {0.5f, -1.0f, 2.0f, 100.0f};

TempDir::TempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/kiln-test-XXXXXX";
  if (!::mkdtemp(templ.data()))
    throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

std::string addWeightCode() {
  static const std::string code = readFile(KILN_TEST_ADD_WEIGHT_SO);
  return code;
}

artifact::Metadata addWeightMetadata() {
  artifact::Metadata m;
  m.abiVersion = KILN_ABI_VERSION;
  m.compilerVersion = "kiln-test 0.0";
  m.sourceModelSha256 = std::string(64, 'a');
  m.producer = "unit-test 1.0";
  m.opsetVersion = 17;
  m.targetTriple = "x86_64-unknown-linux-gnu";
  m.targetCpu = "x86-64";
  m.cpuFeatures = {"sse2"};
  m.passes = {"import", "codegen"};
  m.entrySymbol = "kiln_entry";
  m.inputs = {{"x", 1, {{-1, "batch"}, {4, ""}}}};
  m.outputs = {{"y", 1, {{-1, "batch"}, {4, ""}}}};
  artifact::WeightInfo w;
  w.name = "w";
  w.dtype = 1;
  w.dims = {4};
  m.weights = {w};
  m.kernels = {{"add_rows", {"Add_0"}}};
  return m;
}

std::string writeAddWeightArtifact(const TempDir &dir, const std::string &name, const artifact::Metadata &meta,
                                   const std::string &code) {
  const std::string path = dir.file(name);
  std::vector<artifact::WeightSource> weights;
  for (size_t i = 0; i < meta.weights.size(); ++i)
    weights.push_back({kAddWeight, sizeof(kAddWeight)});
  std::string error;
  if (!artifact::writeArtifact(path, meta, code, weights, &error))
    throw std::runtime_error("writeArtifact: " + error);
  return path;
}

} // namespace kiln::test
