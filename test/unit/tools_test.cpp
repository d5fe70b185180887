// kiln-run and kiln-inspect end to end on an artifact built around the C fixture: outputs, exit codes, messages.
#include "kiln/abi.h"
#include "tensor_file.h"
#include "tensor_proto_writer.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sys/stat.h>
#include <sys/wait.h>

using kiln::test::TempDir;
using kiln::tools::HostTensor;

namespace {

struct Result {
  int status;
  std::string out, err;
};

Result runTool(const TempDir &dir, const std::string &exe, const std::string &args) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const int raw = std::system((exe + " " + args + " >" + out + " 2>" + err).c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : 128, kiln::test::readFile(out), kiln::test::readFile(err)};
}

Result kilnRun(const TempDir &dir, const std::string &args) { return runTool(dir, KILN_RUN_EXE, args); }

HostTensor floats(const std::vector<int64_t> &shape, const std::vector<float> &v) {
  return {1, shape, std::string(reinterpret_cast<const char *>(v.data()), v.size() * 4), ""};
}

void writeNpy(const std::string &path, const HostTensor &t) {
  std::string error;
  ASSERT_TRUE(kiln::tools::writeNpyFile(path, t, &error)) << error;
}

class KilnRun : public ::testing::Test {
protected:
  void SetUp() override {
    artifact = kiln::test::writeAddWeightArtifact(dir, "m.kiln");
    std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y(8);
    for (size_t i = 0; i < 8; ++i)
      y[i] = x[i] + kiln::test::kAddWeight[i % 4];
    writeNpy(dir.file("x.npy"), floats({2, 4}, x));
    writeNpy(dir.file("y.npy"), floats({2, 4}, y));
    y[5] += 0.5f;
    writeNpy(dir.file("y_wrong.npy"), floats({2, 4}, y));
    writeNpy(dir.file("y_shape.npy"), floats({1, 8}, x));
    std::vector<int64_t> ints(8);
    writeNpy(dir.file("x_int.npy"), HostTensor{7, {2, 4}, std::string(reinterpret_cast<char *>(ints.data()), 64), ""});
  }
  // Exactly one line, prefixed, on stderr.
  static void expectOneErrorLine(const Result &r, const std::string &fragment) {
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err.rfind("kiln-run: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  }
  TempDir dir;
  std::string artifact;
};

} // namespace

TEST_F(KilnRun, PrintsOutputs) {
  Result r = kilnRun(dir, artifact + " " + dir.file("x.npy"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "output 'y': float32[2,4] = [1.5, 1, 5, 104, 5.5, 5, 9, 108]\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(KilnRun, ComparesWithExpectedOutputs) {
  Result r = kilnRun(dir, artifact + " x=" + dir.file("x.npy") + " --expect " + dir.file("y.npy") + " --quiet");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "output 'y': ok (max abs err 0, max rel err 0)\n");

  r = kilnRun(dir, artifact + " " + dir.file("x.npy") + " --expect " + dir.file("y_wrong.npy") + " --quiet");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("output 'y': MISMATCH (1 of 8 elements differ; first at [1,1]: got 5, expected 5.5"),
            std::string::npos)
      << r.out;

  r = kilnRun(dir, artifact + " " + dir.file("x.npy") + " --expect " + dir.file("y_shape.npy") + " --quiet");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("shape mismatch: got [2,4], expected [1,8]"), std::string::npos) << r.out;

  // A loose tolerance accepts the wrong value.
  r = kilnRun(dir, artifact + " " + dir.file("x.npy") + " --expect " + dir.file("y_wrong.npy") + " --quiet --atol 0.6");
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(KilnRun, TestDataDirWithTensorProtos) {
  const std::string data = dir.file("test_data_set_0");
  ASSERT_EQ(::mkdir(data.c_str(), 0755), 0);
  HostTensor x, y;
  std::string error;
  ASSERT_TRUE(kiln::tools::readTensorFile(dir.file("x.npy"), &x, &error));
  ASSERT_TRUE(kiln::tools::readTensorFile(dir.file("y.npy"), &y, &error));
  kiln::test::writeFile(data + "/input_0.pb", kiln::test::tensorProto("x", 1, x.shape, x.bytes));
  kiln::test::writeFile(data + "/output_0.pb", kiln::test::tensorProto("y", 1, y.shape, y.bytes));
  Result r = kilnRun(dir, artifact + " --test-data-dir " + data + " --quiet");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "output 'y': ok (max abs err 0, max rel err 0)\n");
}

// A data set with inputs but no reference outputs compared nothing: an error, not a pass.
TEST_F(KilnRun, TestDataDirWithoutOutputsIsAnError) {
  const std::string data = dir.file("test_data_set_0");
  ASSERT_EQ(::mkdir(data.c_str(), 0755), 0);
  HostTensor x;
  std::string error;
  ASSERT_TRUE(kiln::tools::readTensorFile(dir.file("x.npy"), &x, &error));
  kiln::test::writeFile(data + "/input_0.pb", kiln::test::tensorProto("x", 1, x.shape, x.bytes));
  expectOneErrorLine(kilnRun(dir, artifact + " --test-data-dir " + data + " --quiet"),
                     "has no output_0.pb: nothing to compare");
}

TEST_F(KilnRun, WritesOutputsAndTimes) {
  Result r = kilnRun(dir, artifact + " " + dir.file("x.npy") + " --output-dir " + dir.file("out") +
                              " --iterations 5 --warmup 2 --threads 2 --quiet");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("latency_ms median=", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" iterations=5 threads=2\n"), std::string::npos) << r.out;
  HostTensor written;
  std::string error;
  ASSERT_TRUE(kiln::tools::readTensorFile(dir.file("out/0_y.npy"), &written, &error)) << error;
  HostTensor y;
  ASSERT_TRUE(kiln::tools::readTensorFile(dir.file("y.npy"), &y, &error)) << error;
  EXPECT_EQ(written.bytes, y.bytes);
  EXPECT_EQ(written.shape, y.shape);
}

TEST_F(KilnRun, UserErrorsExitOneWithOneLine) {
  expectOneErrorLine(kilnRun(dir, ""), "no artifact given");
  expectOneErrorLine(kilnRun(dir, artifact), "no file for input 'x' (the model takes 1 input: x)");
  expectOneErrorLine(kilnRun(dir, artifact + " " + dir.file("x.npy") + " " + dir.file("x.npy")),
                     "too many input files");
  expectOneErrorLine(kilnRun(dir, artifact + " " + dir.file("x_int.npy")), "input 'x': expected dtype float32, got int64");
  expectOneErrorLine(kilnRun(dir, artifact + " " + dir.file("y_shape.npy")), "input 'x' dim 1: expected 4, got 8");
  expectOneErrorLine(kilnRun(dir, artifact + " " + dir.file("missing.npy")), "cannot open");
  expectOneErrorLine(kilnRun(dir, artifact + " " + dir.file("x.txt")), "unknown tensor file type");
  expectOneErrorLine(kilnRun(dir, dir.file("nothing.kiln") + " " + dir.file("x.npy")), "cannot open");
  expectOneErrorLine(kilnRun(dir, dir.file("x.npy") + " " + dir.file("x.npy")), "not a kiln artifact (bad magic)");
  expectOneErrorLine(kilnRun(dir, artifact + " --threads zero"), "invalid value for --threads");
  expectOneErrorLine(kilnRun(dir, artifact + " --bogus"), "unknown option '--bogus'");
  expectOneErrorLine(kilnRun(dir, artifact + " " + dir.file("x.npy") + " --expect " + dir.file("y.npy") + " --expect " +
                                     dir.file("y.npy")),
                     "2 expected outputs given; the model has 1");
  Result help = kilnRun(dir, "--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("usage: kiln-run"), std::string::npos);
}

TEST(KilnInspect, DescribesWithoutLoadingCode) {
  TempDir dir;
  auto meta = kiln::test::addWeightMetadata();
  meta.cpuFeatures = {"avx512f", "some-future-feature"}; // not runnable here; inspect must not care
  const std::string path = kiln::test::writeAddWeightArtifact(dir, "m.kiln", meta);
  Result r = runTool(dir, KILN_INSPECT_EXE, path);
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string version = "format version:   1 (abi " + std::to_string(KILN_ABI_VERSION) + ")";
  for (const char *want : {version.c_str(), "compiler version: kiln-test 0.0", "opset:            17",
                           "features=avx512f,some-future-feature", "  x: float32[batch,4]", "  y: float32[batch,4]",
                           "weights:          1 tensors, 16 bytes", "  0 add_rows <- Add_0", "passes:           import, codegen",
                           "intermediates live"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  r = runTool(dir, KILN_INSPECT_EXE, path + " --json");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("\"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"batch\", 4]}]"),
            std::string::npos)
      << r.out;
  kiln::test::writeFile(dir.file("junk"), "junk");
  r = runTool(dir, KILN_INSPECT_EXE, dir.file("junk"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("kiln-inspect: error:"), std::string::npos);
  EXPECT_NE(r.err.find("bad magic"), std::string::npos);
}
