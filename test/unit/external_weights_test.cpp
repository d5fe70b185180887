// Weights outside the artifact (--weights=external): SHA-256 against known vectors, the manifest's
// encoding and checks, the kiln weights file, and the runtime's loading and refusals, with the C
// fixture (test/unit/fixtures/add_weight.c) as the code.
#include "format/weight_files.h"
#include "kiln/kiln.h"
#include "kiln/kiln.hpp"
#include "support/sha256/sha256.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln::artifact;
using kiln::test::TempDir;

namespace {

std::string messageOf(kiln_error *e) {
  if (!e)
    return "";
  std::string m = kiln_error_message(e);
  kiln_error_free(e);
  return m;
}

std::string hexOf(const std::string &s) { return kiln::sha256::hex(kiln::sha256::hash(s.data(), s.size())); }

// Runs `fn` with the portable code and, where the CPU has them, the SHA extensions.
template <typename F> void forEachImplementation(F fn) {
  for (int which : {0, 1}) {
    kiln::sha256::detail::forceImplementation(which);
    fn(which);
  }
  kiln::sha256::detail::forceImplementation(-1);
}

TEST(Sha256, KnownVectors) {
  forEachImplementation([](int which) {
    SCOPED_TRACE(which ? "sha extensions" : "portable");
    EXPECT_EQ(hexOf(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hexOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hexOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(hexOf("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                    "mnopqrstnopqrstu"),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    // One million 'a', fed in uneven pieces so every buffering path runs.
    kiln::sha256::Hasher h;
    std::string a(1000000, 'a');
    size_t done = 0, step = 1;
    while (done < a.size()) {
      size_t n = std::min(step, a.size() - done);
      h.update(a.data() + done, n);
      done += n;
      step = step * 3 % 997 + 1;
    }
    EXPECT_EQ(kiln::sha256::hex(h.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  });
}

// Every length around the block and padding boundaries gives the same digest both ways.
TEST(Sha256, ImplementationsAgree) {
  std::string s;
  for (int i = 0; i < 300; ++i)
    s.push_back(char(i * 37 + 11));
  std::vector<std::string> portable;
  kiln::sha256::detail::forceImplementation(0);
  for (size_t n = 0; n <= s.size(); ++n)
    portable.push_back(hexOf(s.substr(0, n)));
  kiln::sha256::detail::forceImplementation(1);
  for (size_t n = 0; n <= s.size(); ++n)
    ASSERT_EQ(hexOf(s.substr(0, n)), portable[n]) << n;
  kiln::sha256::detail::forceImplementation(-1);
}

TEST(WeightFiles, NameRules) {
  std::string why;
  for (const char *ok : {"w.bin", "data/w.bin", "./w.bin", "a/./b", "a//b"})
    EXPECT_TRUE(checkWeightFileName(ok, &why)) << ok << ": " << why;
  for (const char *bad : {"", "/etc/passwd", "../w.bin", "a/../../w.bin", "a/..", "a\\b", ".", "./"})
    EXPECT_FALSE(checkWeightFileName(bad, &why)) << bad;
  EXPECT_FALSE(checkWeightFileName(std::string("a\0b", 3), &why));
}

// The artifact's external weights: `w` at `offset` of `file` in `dir` (made here), refs to it.
struct ExternalArtifact {
  std::string artifact, weights;
  Metadata meta;
};

ExternalArtifact writeExternal(const TempDir &dir, const std::string &file = "data/w.bin", uint64_t offset = 128) {
  ::mkdir(dir.file("data").c_str(), 0755);
  std::string bytes(offset + 100, '\x5a');
  std::memcpy(&bytes[offset], kiln::test::kAddWeight, sizeof(kiln::test::kAddWeight));
  kiln::test::writeFile(dir.file(file), bytes);
  ExternalArtifact a;
  a.weights = dir.file(file);
  a.meta = kiln::test::addWeightMetadata();
  a.meta.external.present = true;
  a.meta.external.files = {{file, WeightFileOrigin::Source, bytes.size(), hexOf(bytes)}};
  a.meta.external.refs = {{0, offset, sizeof(kiln::test::kAddWeight)}};
  a.artifact = dir.file("m.kiln");
  std::string error;
  EXPECT_TRUE(writeArtifact(a.artifact, a.meta, kiln::test::addWeightCode(), {}, &error)) << error;
  return a;
}

std::string loadError(const std::string &path, const char *weightsDir) {
  kiln_model_options o;
  kiln_model_options_init(&o);
  o.weights_dir = weightsDir;
  kiln_model *m = nullptr;
  std::string msg = messageOf(kiln_model_load(path.c_str(), &o, &m));
  EXPECT_EQ(m, nullptr);
  kiln_model_destroy(m);
  return msg;
}

void expectRuns(const std::string &artifact, const std::string &weightsDir) {
  kiln::Model model = kiln::Model::load(artifact, 1, weightsDir);
  kiln::Session session(model);
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  kiln::Tensor in = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, {2, 4}, x);
  std::vector<kiln::Tensor> out = session.run(std::vector<const kiln::Tensor *>{&in});
  ASSERT_EQ(out.size(), 1u);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(out[0].data<float>()[i], x[i] + kiln::test::kAddWeight[i % 4]);
}

TEST(ExternalWeights, ManifestRoundTrips) {
  TempDir dir;
  ExternalArtifact a = writeExternal(dir);
  std::string bytes = kiln::test::readFile(a.artifact), error;
  ArtifactView view;
  ASSERT_TRUE(parseArtifact(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), &view, &error)) << error;
  EXPECT_EQ(view.weightsSize, 0u);
  ASSERT_TRUE(view.meta.external.present);
  ASSERT_EQ(view.meta.external.files.size(), 1u);
  EXPECT_EQ(view.meta.external.files[0].name, "data/w.bin");
  EXPECT_EQ(view.meta.external.files[0].sha256, a.meta.external.files[0].sha256);
  EXPECT_EQ(view.meta.external.files[0].size, 228u);
  ASSERT_EQ(view.meta.external.refs.size(), 1u);
  EXPECT_EQ(view.meta.external.refs[0].offset, 128u);
  EXPECT_EQ(view.meta.weights[0].size, 16u);
  // Written again (rewriteArtifact, as the accuracy report does), the bytes are the same.
  ASSERT_TRUE(rewriteArtifact(dir.file("again.kiln"), view, view.meta, &error)) << error;
  EXPECT_EQ(kiln::test::readFile(dir.file("again.kiln")), bytes);
}

TEST(ExternalWeights, WriterRefusesBadManifests) {
  TempDir dir;
  Metadata good = writeExternal(dir).meta;
  std::string error;
  auto refuses = [&](Metadata m, const std::string &needle) {
    EXPECT_FALSE(writeArtifact(dir.file("bad.kiln"), m, kiln::test::addWeightCode(), {}, &error));
    EXPECT_NE(error.find(needle), std::string::npos) << error;
  };
  Metadata m = good;
  m.external.files[0].name = "../w.bin";
  refuses(m, "leaves the weights directory");
  m = good;
  m.external.files[0].name = "/abs/w.bin";
  refuses(m, "absolute path");
  m = good;
  m.external.refs[0].offset = 100;
  refuses(m, "unaligned or lies outside");
  m = good;
  m.external.refs[0].offset = 256;
  refuses(m, "unaligned or lies outside");
  m = good;
  m.external.refs[0].file = 3;
  refuses(m, "names external file 3");
  m = good;
  m.external.files[0].sha256 = "abc";
  refuses(m, "no valid sha256");
  m = good;
  m.external.refs.clear();
  refuses(m, "0 refs for 1 weights");
  m = good;
  m.external.refs[0].size = 12;
  refuses(m, "need 16");
}

TEST(ExternalWeights, LoadsFromTheWeightsDirectory) {
  TempDir dir, other;
  ExternalArtifact a = writeExternal(dir);
  expectRuns(a.artifact, "");       // default: the artifact's directory
  expectRuns(a.artifact, dir.path()); // given
  // The artifact elsewhere, the weights directory given.
  kiln::test::writeFile(other.file("m.kiln"), kiln::test::readFile(a.artifact));
  expectRuns(other.file("m.kiln"), dir.path());
  std::string msg = loadError(other.file("m.kiln"), nullptr);
  EXPECT_NE(msg.find("weight file 'data/w.bin' not found in '" + other.path() + "'"), std::string::npos) << msg;
}

TEST(ExternalWeights, RefusesMissingChangedAndTruncatedFiles) {
  TempDir dir, empty;
  ExternalArtifact a = writeExternal(dir);
  std::string msg = loadError(a.artifact, empty.path().c_str());
  EXPECT_NE(msg.find("'data/w.bin' not found"), std::string::npos) << msg;
  msg = loadError(a.artifact, dir.file("nowhere").c_str());
  EXPECT_NE(msg.find("cannot open the weights directory"), std::string::npos) << msg;

  const std::string original = kiln::test::readFile(a.weights);
  std::string changed = original;
  changed[5] ^= 1; // a byte no weight uses: the whole file is checked
  kiln::test::writeFile(a.weights, changed);
  msg = loadError(a.artifact, nullptr);
  EXPECT_NE(msg.find("'data/w.bin'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not match the artifact: its sha256 is " + hexOf(changed)), std::string::npos) << msg;

  kiln::test::writeFile(a.weights, original + "x");
  msg = loadError(a.artifact, nullptr);
  EXPECT_NE(msg.find("has 229 bytes; the artifact was compiled against 228"), std::string::npos) << msg;

  kiln::test::writeFile(a.weights, original);
  expectRuns(a.artifact, "");
}

TEST(ExternalWeights, RefusesPathsLeavingTheDirectory) {
  TempDir dir, outside;
  ExternalArtifact a = writeExternal(dir);
  const std::string original = kiln::test::readFile(a.weights);
  // A symlink to a file outside (with the right bytes), and a symlinked directory on the way.
  kiln::test::writeFile(outside.file("w.bin"), original);
  ::unlink(a.weights.c_str());
  ASSERT_EQ(::symlink(outside.file("w.bin").c_str(), a.weights.c_str()), 0);
  std::string msg = loadError(a.artifact, nullptr);
  EXPECT_NE(msg.find("goes through a symlink, which kiln refuses"), std::string::npos) << msg;
  ::unlink(a.weights.c_str());
  ::rmdir(dir.file("data").c_str());
  ASSERT_EQ(::symlink(outside.path().c_str(), dir.file("data").c_str()), 0);
  msg = loadError(a.artifact, nullptr);
  EXPECT_NE(msg.find("goes through a symlink"), std::string::npos) << msg;
  ::unlink(dir.file("data").c_str());
  // A hard link: a file from elsewhere appearing inside.
  ::mkdir(dir.file("data").c_str(), 0755);
  ASSERT_EQ(::link(outside.file("w.bin").c_str(), a.weights.c_str()), 0);
  msg = loadError(a.artifact, nullptr);
  EXPECT_NE(msg.find("hard links"), std::string::npos) << msg;
  // Names that escape never get as far as the file system: the reader refuses the manifest.
  for (const char *name : {"../w.bin", "/etc/passwd"}) {
    Metadata m = a.meta;
    m.external.files[0].name = name;
    std::string error;
    EXPECT_FALSE(writeArtifact(dir.file("x.kiln"), m, kiln::test::addWeightCode(), {}, &error));
  }
  // Hand-made artifacts: the name patched in a valid artifact's bytes to escaping ones of the same length.
  std::string bytes = kiln::test::readFile(a.artifact);
  size_t at = bytes.find("data/w.bin");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 10, "../../w.bi");
  kiln::test::writeFile(dir.file("escape.kiln"), bytes);
  msg = loadError(dir.file("escape.kiln"), nullptr);
  EXPECT_NE(msg.find("leaves the weights directory"), std::string::npos) << msg;
  bytes.replace(at, 10, "/etc/passw");
  kiln::test::writeFile(dir.file("absolute.kiln"), bytes);
  msg = loadError(dir.file("absolute.kiln"), nullptr);
  EXPECT_NE(msg.find("absolute path"), std::string::npos) << msg;
}

TEST(ExternalWeights, KilnWeightsFileBesideTheArtifact) {
  TempDir dir, other;
  std::vector<WeightSource> sources = {{kiln::test::kAddWeight, sizeof(kiln::test::kAddWeight)}};
  std::vector<uint64_t> offsets;
  ExternalFile f{"m.kiln.weights", WeightFileOrigin::Kiln, 0, ""};
  std::string error;
  ASSERT_TRUE(writeWeightsFile(dir.file("m.kiln.weights"), sources, &offsets, &f, &error)) << error;
  const std::string bytes = kiln::test::readFile(dir.file("m.kiln.weights"));
  EXPECT_EQ(f.size, bytes.size());
  EXPECT_EQ(f.sha256, hexOf(bytes));
  ASSERT_EQ(offsets, std::vector<uint64_t>{kWeightsFileHeaderSize});
  EXPECT_TRUE(checkWeightsFile(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), true, &error)) << error;
  std::string corrupt = bytes;
  corrupt[kWeightsFileHeaderSize] ^= 1;
  EXPECT_FALSE(checkWeightsFile(reinterpret_cast<const uint8_t *>(corrupt.data()), corrupt.size(), true, &error));

  Metadata meta = kiln::test::addWeightMetadata();
  meta.external.present = true;
  meta.external.files = {f};
  meta.external.refs = {{0, offsets[0], sizeof(kiln::test::kAddWeight)}};
  ASSERT_TRUE(writeArtifact(dir.file("m.kiln"), meta, kiln::test::addWeightCode(), {}, &error)) << error;
  // Found beside the artifact whatever the weights directory says.
  expectRuns(dir.file("m.kiln"), other.path());
  kiln::test::writeFile(other.file("m.kiln"), kiln::test::readFile(dir.file("m.kiln")));
  std::string msg = loadError(other.file("m.kiln"), dir.path().c_str());
  EXPECT_NE(msg.find("'m.kiln.weights' not found in '" + other.path() + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("move them together"), std::string::npos) << msg;
}

// Not a check: how fast load-time verification is (docs/artifact.md quotes it).
TEST(Sha256, ThroughputReport) {
  std::string big(size_t(256) << 20, '\x42');
  forEachImplementation([&](int which) {
    auto t0 = std::chrono::steady_clock::now();
    kiln::sha256::hash(big.data(), big.size());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("sha256 %s: %.0f MB/s\n",
                which && kiln::sha256::usesShaExtensions() ? "sha extensions" : "portable", big.size() / s / 1e6);
  });
}

} // namespace
