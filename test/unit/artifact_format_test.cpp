// Artifact format: round trip, byte determinism, and safe rejection of truncated or corrupted files.
#include "format/artifact_format.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

using namespace kiln::artifact;
using kiln::test::TempDir;

namespace {

Metadata richMetadata() {
  Metadata m;
  m.abiVersion = 1;
  m.compilerVersion = "0.1.0";
  m.sourceModelSha256 = "0123456789abcdef";
  m.producer = "pytorch 2.3";
  m.opsetVersion = 21;
  m.targetTriple = "x86_64-unknown-linux-gnu";
  m.targetCpu = "znver4";
  m.cpuFeatures = {"avx2", "fma", "avx512f"};
  m.passes = {"import", "fuse", "codegen"};
  m.entrySymbol = "kiln_entry";
  m.inputs = {{"input_ids", 7, {{-1, "batch"}, {-1, "seq"}}}, {"scale", 1, {}}};
  m.outputs = {{"logits", 10, {{-1, "batch"}, {-1, "seq"}, {32000, ""}}}};
  WeightInfo a{"embed", 1, {3, 5}, 0, 0}, b{"bias", 3, {7}, 0, 0};
  m.weights = {a, b};
  m.kernels = {{"fused_matmul_0", {"MatMul_1", "Add_2"}}, {"softmax_1", {}}};
  return m;
}

struct Fixture {
  std::vector<float> embed = std::vector<float>(15, 1.5f);
  std::vector<int8_t> bias = {1, -2, 3, -4, 5, -6, 7};
  std::vector<WeightSource> sources() const {
    return {{embed.data(), embed.size() * 4}, {bias.data(), bias.size()}};
  }
};

std::string writeRich(const TempDir &dir, const std::string &name) {
  Fixture f;
  std::string error;
  EXPECT_TRUE(writeArtifact(dir.file(name), richMetadata(), "CODE-BYTES", f.sources(), &error)) << error;
  return kiln::test::readFile(dir.file(name));
}

bool parse(const std::string &bytes, ArtifactView *view, std::string *error) {
  return parseArtifact(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), view, error);
}

void putU32(std::string &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = char((v >> (8 * i)) & 0xff);
}
void putU64(std::string &b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    b[at + i] = char((v >> (8 * i)) & 0xff);
}

constexpr size_t kMetadataStart = 24 + 3 * 24; // header, then the metadata section

} // namespace

TEST(ArtifactFormat, RoundTrip) {
  TempDir dir;
  const std::string bytes = writeRich(dir, "a.kiln");
  ArtifactView v;
  std::string error;
  ASSERT_TRUE(parse(bytes, &v, &error)) << error;
  const Metadata want = richMetadata();
  EXPECT_EQ(v.meta.formatVersion, kFormatVersion);
  EXPECT_EQ(v.meta.abiVersion, want.abiVersion);
  EXPECT_EQ(v.meta.compilerVersion, want.compilerVersion);
  EXPECT_EQ(v.meta.sourceModelSha256, want.sourceModelSha256);
  EXPECT_EQ(v.meta.producer, want.producer);
  EXPECT_EQ(v.meta.opsetVersion, want.opsetVersion);
  EXPECT_EQ(v.meta.targetTriple, want.targetTriple);
  EXPECT_EQ(v.meta.targetCpu, want.targetCpu);
  EXPECT_EQ(v.meta.cpuFeatures, want.cpuFeatures);
  EXPECT_EQ(v.meta.passes, want.passes);
  EXPECT_EQ(v.meta.entrySymbol, want.entrySymbol);
  ASSERT_EQ(v.meta.inputs.size(), 2u);
  EXPECT_EQ(v.meta.inputs[0].name, "input_ids");
  EXPECT_EQ(v.meta.inputs[0].dtype, 7u);
  ASSERT_EQ(v.meta.inputs[0].dims.size(), 2u);
  EXPECT_EQ(v.meta.inputs[0].dims[1].size, -1);
  EXPECT_EQ(v.meta.inputs[0].dims[1].symbol, "seq");
  EXPECT_TRUE(v.meta.inputs[1].dims.empty());
  ASSERT_EQ(v.meta.outputs.size(), 1u);
  EXPECT_EQ(v.meta.outputs[0].dims[2].size, 32000);
  ASSERT_EQ(v.meta.kernels.size(), 2u);
  EXPECT_EQ(v.meta.kernels[0].sourceNodes, (std::vector<std::string>{"MatMul_1", "Add_2"}));
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(v.code), v.codeSize), "CODE-BYTES");

  const auto *base = reinterpret_cast<const uint8_t *>(bytes.data());
  EXPECT_EQ((v.weights - base) % 4096, 0);
  ASSERT_EQ(v.meta.weights.size(), 2u);
  Fixture f;
  EXPECT_EQ(v.meta.weights[0].offset, 0u);
  EXPECT_EQ(v.meta.weights[0].size, 60u);
  EXPECT_EQ(v.meta.weights[1].offset, 64u);
  EXPECT_EQ(v.meta.weights[1].size, 7u);
  EXPECT_EQ(std::memcmp(v.weights, f.embed.data(), 60), 0);
  EXPECT_EQ(std::memcmp(v.weights + 64, f.bias.data(), 7), 0);
  for (size_t i = 60; i < 64; ++i)
    EXPECT_EQ(v.weights[i], 0) << "padding must be zero";
}

TEST(ArtifactFormat, SameInputsGiveSameBytes) {
  TempDir dir;
  const std::string a = writeRich(dir, "a.kiln");
  const std::string b = writeRich(dir, "b.kiln");
  EXPECT_EQ(a, b);
  // The temporary file is renamed away: only the two artifacts remain.
  size_t files = 0;
  for (auto &e : std::filesystem::directory_iterator(dir.path()))
    files += e.is_regular_file();
  EXPECT_EQ(files, 2u);
}

TEST(ArtifactFormat, WriterRejectsInconsistentWeights) {
  TempDir dir;
  Metadata m = richMetadata();
  std::string error;
  EXPECT_FALSE(writeArtifact(dir.file("x.kiln"), m, "", {}, &error));
  EXPECT_NE(error.find("2 weights"), std::string::npos) << error;
  std::vector<float> wrong(3);
  std::vector<int8_t> bias(7);
  EXPECT_FALSE(writeArtifact(dir.file("x.kiln"), m, "", {{wrong.data(), 12}, {bias.data(), 7}}, &error));
  EXPECT_NE(error.find("weight 'embed' has 12 bytes"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.kiln")));
}

TEST(ArtifactFormat, BadMagic) {
  std::string error;
  ArtifactView v;
  EXPECT_FALSE(parse("", &v, &error));
  EXPECT_EQ(error, "not a kiln artifact (bad magic)");
  EXPECT_FALSE(parse(std::string(200, 'x'), &v, &error));
  EXPECT_EQ(error, "not a kiln artifact (bad magic)");
  EXPECT_FALSE(parseArtifact(nullptr, 0, &v, &error));
}

TEST(ArtifactFormat, WrongFormatVersion) {
  TempDir dir;
  std::string bytes = writeRich(dir, "a.kiln");
  putU32(bytes, 8, 2);
  std::string error;
  ArtifactView v;
  EXPECT_FALSE(parse(bytes, &v, &error));
  EXPECT_EQ(error, "artifact format version 2; this runtime reads 1");
}

TEST(ArtifactFormat, EveryTruncationIsRejected) {
  TempDir dir;
  const std::string bytes = writeRich(dir, "a.kiln");
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A fresh heap copy of exactly n bytes, so an overread would hit the allocation's end.
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + long(n));
    std::string error;
    ArtifactView v;
    ASSERT_FALSE(parseArtifact(prefix.data(), n, &v, &error)) << n;
    ASSERT_FALSE(error.empty());
  }
}

TEST(ArtifactFormat, SectionOffsetsOutsideTheFile) {
  TempDir dir;
  const std::string good = writeRich(dir, "a.kiln");
  std::string error;
  ArtifactView v;
  // Section entries start at 24: kind, reserved, offset (+8), size (+16).
  for (int section = 0; section < 3; ++section) {
    const size_t entry = 24 + size_t(section) * 24;
    for (uint64_t bad : {uint64_t(UINT64_MAX), uint64_t(UINT64_MAX - 7), uint64_t(good.size()) + 1}) {
      std::string b = good;
      putU64(b, entry + 8, bad);
      EXPECT_FALSE(parse(b, &v, &error));
      EXPECT_NE(error.find("outside the file"), std::string::npos) << error;
      b = good;
      putU64(b, entry + 16, bad);
      EXPECT_FALSE(parse(b, &v, &error));
      EXPECT_NE(error.find("outside the file"), std::string::npos) << error;
    }
  }
  std::string b = good;
  putU64(b, 24 + 24 + 8, kMetadataStart); // code section on top of the metadata
  EXPECT_FALSE(parse(b, &v, &error));
  EXPECT_NE(error.find("overlap"), std::string::npos) << error;
  b = good;
  putU32(b, 12, 1000000); // section count
  EXPECT_FALSE(parse(b, &v, &error));
  b = good;
  putU64(b, 16, good.size() + 10); // declared file size
  EXPECT_FALSE(parse(b, &v, &error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST(ArtifactFormat, HugeCountsAndLengthsInMetadata) {
  TempDir dir;
  const std::string good = writeRich(dir, "a.kiln");
  const Metadata m = richMetadata();
  std::string error;
  ArtifactView v;
  // compilerVersion's length prefix follows the u32 ABI version.
  std::string b = good;
  putU32(b, kMetadataStart + 4, 0xfffffff0u);
  EXPECT_FALSE(parse(b, &v, &error));
  EXPECT_NE(error.find("truncated while reading compiler version"), std::string::npos) << error;
  // cpuFeatures' count follows abi, 3 strings, opset, triple, cpu.
  const size_t features = kMetadataStart + 4 + (4 + m.compilerVersion.size()) + (4 + m.sourceModelSha256.size()) +
                          (4 + m.producer.size()) + 8 + (4 + m.targetTriple.size()) + (4 + m.targetCpu.size());
  b = good;
  putU32(b, features, 0xffffffffu);
  EXPECT_FALSE(parse(b, &v, &error));
  EXPECT_NE(error.find("cpu features count 4294967295 exceeds"), std::string::npos) << error;
}

TEST(ArtifactFormat, WeightOutsideItsSection) {
  TempDir dir;
  Metadata m = richMetadata();
  m.weights.resize(1);
  std::vector<float> embed(15);
  std::string error;
  ASSERT_TRUE(writeArtifact(dir.file("a.kiln"), m, "C", {{embed.data(), 60}}, &error)) << error;
  std::string b = kiln::test::readFile(dir.file("a.kiln"));
  // The weight's offset is the second-to-last u64 before the kernel table; find it by its size value 60.
  const std::string kernels = "fused_matmul_0";
  const size_t k = b.find(kernels);
  ASSERT_NE(k, std::string::npos);
  const size_t sizeField = k - 4 /*kernel name len*/ - 4 /*kernel count*/ - 8;
  putU64(b, sizeField, 1u << 20);
  ArtifactView v;
  EXPECT_FALSE(parse(b, &v, &error));
  EXPECT_NE(error.find("weight 'embed'"), std::string::npos) << error;
  EXPECT_NE(error.find("outside the weights section"), std::string::npos) << error;
}

TEST(ArtifactFormat, RandomAndMutatedBytesNeverCrash) {
  TempDir dir;
  const std::string good = writeRich(dir, "a.kiln");
  std::mt19937_64 rng(1234);
  size_t accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string b;
    if (iter % 3 == 0) {
      b.resize(rng() % 512);
      for (char &c : b)
        c = char(rng());
      if (b.size() >= 12 && iter % 2 == 0) {
        // Past the magic and version, so the deeper checks run too.
        std::memcpy(b.data(), good.data(), 12);
      }
    } else {
      b = good;
      const int flips = 1 + int(rng() % 8);
      for (int f = 0; f < flips; ++f) {
        // Bias mutations toward the header and metadata, where the structure is.
        const size_t at = rng() % std::min<size_t>(b.size(), iter % 2 ? 512 : b.size());
        b[at] = char(rng());
      }
    }
    std::vector<uint8_t> copy(b.begin(), b.end());
    std::string error;
    ArtifactView v;
    if (parseArtifact(copy.data(), copy.size(), &v, &error))
      ++accepted;
    else
      ASSERT_FALSE(error.empty());
  }
  SUCCEED() << accepted << " mutated files still parsed";
}

namespace {
Metadata decoderMetadata() {
  Metadata m = richMetadata();
  m.inputs = {{"input_ids", 7, {{-1, "batch"}, {-1, "seq"}}},
              {"past_key_values.0.key", 1, {{-1, "batch"}, {2, ""}, {-1, "kv_capacity"}, {16, ""}}},
              {"kiln.past_length", 7, {}}};
  m.decoder.present = true;
  m.decoder.positionInput = 2;
  m.decoder.maxContext = 256;
  m.decoder.caches = {{1, 2}};
  return m;
}
} // namespace

// The optional decoder section survives a round trip; an artifact without one has none.
TEST(ArtifactFormat, DecoderSectionRoundTrip) {
  TempDir dir;
  Fixture f;
  std::string error;
  ASSERT_TRUE(writeArtifact(dir.file("d.kiln"), decoderMetadata(), "CODE", f.sources(), &error)) << error;
  ArtifactView view;
  ASSERT_TRUE(parse(kiln::test::readFile(dir.file("d.kiln")), &view, &error)) << error;
  ASSERT_TRUE(view.meta.decoder.present);
  EXPECT_EQ(view.meta.decoder.positionInput, 2u);
  EXPECT_EQ(view.meta.decoder.maxContext, 256);
  ASSERT_EQ(view.meta.decoder.caches.size(), 1u);
  EXPECT_EQ(view.meta.decoder.caches[0].input, 1u);
  EXPECT_EQ(view.meta.decoder.caches[0].axis, 2u);
  ArtifactView plain;
  ASSERT_TRUE(parse(writeRich(dir, "plain.kiln"), &plain, &error)) << error;
  EXPECT_FALSE(plain.meta.decoder.present);
}

// Decoder sections that contradict the signature are refused by the writer (and so by the reader).
TEST(ArtifactFormat, DecoderSectionMustMatchTheSignature) {
  TempDir dir;
  Fixture f;
  std::string error;
  Metadata notScalar = decoderMetadata();
  notScalar.decoder.positionInput = 0; // int64 but not a scalar
  EXPECT_FALSE(writeArtifact(dir.file("a.kiln"), notScalar, "CODE", f.sources(), &error));
  EXPECT_NE(error.find("position input"), std::string::npos) << error;
  Metadata staticAxis = decoderMetadata();
  staticAxis.decoder.caches = {{1, 1}}; // dim 1 is static
  EXPECT_FALSE(writeArtifact(dir.file("b.kiln"), staticAxis, "CODE", f.sources(), &error));
  Metadata outOfRange = decoderMetadata();
  outOfRange.decoder.caches = {{9, 2}};
  EXPECT_FALSE(writeArtifact(dir.file("c.kiln"), outOfRange, "CODE", f.sources(), &error));
  Metadata noContext = decoderMetadata();
  noContext.decoder.maxContext = 0;
  EXPECT_FALSE(writeArtifact(dir.file("d.kiln"), noContext, "CODE", f.sources(), &error));
}

// A weight written as column panels: panel p holds columns [p*B, (p+1)*B) of every row.
TEST(ArtifactFormat, PackedWeightIsWrittenAsColumnPanels) {
  TempDir dir;
  Metadata m = richMetadata();
  std::vector<float> w(4 * 8); // [4 rows, 8 cols], value = row * 10 + col
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c)
      w[r * 8 + c] = float(r * 10 + c);
  m.weights = {WeightInfo{"w", 1, {2, 4, 4}, 0, 0}};
  WeightSource src{w.data(), w.size() * 4};
  src.rows = 4;
  src.cols = 8;
  src.panel = 4;
  src.elementSize = 4;
  std::string error;
  ASSERT_TRUE(writeArtifact(dir.file("p.kiln"), m, "CODE", {src}, &error)) << error;
  std::string bytes = kiln::test::readFile(dir.file("p.kiln"));
  ArtifactView view;
  ASSERT_TRUE(parse(bytes, &view, &error)) << error;
  const float *packed = reinterpret_cast<const float *>(view.weights + view.meta.weights[0].offset);
  for (int p = 0; p < 2; ++p)
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(packed[(p * 4 + r) * 4 + j], float(r * 10 + p * 4 + j)) << p << " " << r << " " << j;
  WeightSource bad = src;
  bad.cols = 6; // not a multiple of the panel
  EXPECT_FALSE(writeArtifact(dir.file("q.kiln"), m, "CODE", {bad}, &error));
}

// A transposed source (a convolution's [Cout, K] weight) gives the panels of its [K, Cout] transpose.
TEST(ArtifactFormat, TransposedWeightIsWrittenAsColumnPanelsOfItsTranspose) {
  TempDir dir;
  Metadata m = richMetadata();
  std::vector<float> w(8 * 4); // [8 cols, 4 rows] row-major: the transpose of [4, 8], value = row * 10 + col
  for (int c = 0; c < 8; ++c)
    for (int r = 0; r < 4; ++r)
      w[c * 4 + r] = float(r * 10 + c);
  m.weights = {WeightInfo{"w", 1, {2, 4, 4}, 0, 0}};
  WeightSource src{w.data(), w.size() * 4};
  src.rows = 4;
  src.cols = 8;
  src.panel = 4;
  src.elementSize = 4;
  src.transposed = true;
  std::string error;
  ASSERT_TRUE(writeArtifact(dir.file("t.kiln"), m, "CODE", {src}, &error)) << error;
  std::string bytes = kiln::test::readFile(dir.file("t.kiln"));
  ArtifactView view;
  ASSERT_TRUE(parse(bytes, &view, &error)) << error;
  const float *packed = reinterpret_cast<const float *>(view.weights + view.meta.weights[0].offset);
  for (int p = 0; p < 2; ++p)
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(packed[(p * 4 + r) * 4 + j], float(r * 10 + p * 4 + j)) << p << " " << r << " " << j;
}

namespace {
QuantizationInfo recipe() {
  QuantizationInfo q;
  q.present = true;
  q.mode = "int4";
  q.groupSize = 64;
  q.scaleType = "f16";
  q.keep = {"lm_head", "embed"};
  return q;
}

AccuracyReport report() {
  AccuracyReport a;
  a.present = true;
  a.inputs = "calibration dir data";
  a.samples = 3;
  a.outputs = {{"logits", 0.125, 0.0078125, 0.99990234375},
               {"diverged", INFINITY, INFINITY, NAN}}; // not-finite figures survive as bits
  a.positions = 62;
  a.top1Agreement = 0.96875;
  a.perplexityFloat = 511.5;
  a.perplexityQuantized = 512.25;
  a.tokens = "token file t.txt";
  return a;
}

// The section table entry of a section kind, or npos.
size_t sectionEntry(const std::string &bytes, uint32_t kind) {
  uint32_t count = 0;
  std::memcpy(&count, bytes.data() + 12, 4);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t k = 0;
    std::memcpy(&k, bytes.data() + 24 + 24 * i, 4);
    if (k == kind)
      return 24 + 24 * i;
  }
  return std::string::npos;
}
} // namespace

// The quantization recipe alone (no accuracy check ran) and with a full accuracy report, next to a
// decoder section: every field comes back, NaN and infinity included.
TEST(ArtifactFormat, QuantizationSectionRoundTrip) {
  TempDir dir;
  Fixture f;
  std::string error;
  Metadata m = richMetadata();
  m.quantization = recipe();
  ASSERT_TRUE(writeArtifact(dir.file("q.kiln"), m, "CODE", f.sources(), &error)) << error;
  ArtifactView view;
  ASSERT_TRUE(parse(kiln::test::readFile(dir.file("q.kiln")), &view, &error)) << error;
  const QuantizationInfo &q = view.meta.quantization;
  ASSERT_TRUE(q.present);
  EXPECT_EQ(q.mode, "int4");
  EXPECT_EQ(q.groupSize, 64u);
  EXPECT_EQ(q.scaleType, "f16");
  EXPECT_EQ(q.keep, (std::vector<std::string>{"lm_head", "embed"}));
  EXPECT_FALSE(q.accuracy.present);

  Metadata d = decoderMetadata();
  d.quantization = recipe();
  d.quantization.accuracy = report();
  ASSERT_TRUE(writeArtifact(dir.file("qd.kiln"), d, "CODE", f.sources(), &error)) << error;
  ArtifactView both;
  ASSERT_TRUE(parse(kiln::test::readFile(dir.file("qd.kiln")), &both, &error)) << error;
  EXPECT_TRUE(both.meta.decoder.present);
  EXPECT_EQ(both.meta.decoder.maxContext, 256);
  const AccuracyReport &a = both.meta.quantization.accuracy;
  ASSERT_TRUE(a.present);
  EXPECT_EQ(a.inputs, "calibration dir data");
  EXPECT_EQ(a.samples, 3u);
  ASSERT_EQ(a.outputs.size(), 2u);
  EXPECT_EQ(a.outputs[0].name, "logits");
  EXPECT_EQ(a.outputs[0].maxAbsError, 0.125);
  EXPECT_EQ(a.outputs[0].maxRelError, 0.0078125);
  EXPECT_EQ(a.outputs[0].cosine, 0.99990234375);
  EXPECT_EQ(a.outputs[1].name, "diverged");
  EXPECT_TRUE(std::isinf(a.outputs[1].maxRelError));
  EXPECT_TRUE(std::isnan(a.outputs[1].cosine));
  EXPECT_EQ(a.positions, 62u);
  EXPECT_EQ(a.top1Agreement, 0.96875);
  EXPECT_EQ(a.perplexityFloat, 511.5);
  EXPECT_EQ(a.perplexityQuantized, 512.25);
  EXPECT_EQ(a.tokens, "token file t.txt");
}

// Without --quantize nothing changes: three sections, no quantization; and a reader that does not
// know section kind 5 (simulated by renumbering it to an unknown kind) still reads the artifact,
// which is why the section needs no format version bump.
TEST(ArtifactFormat, QuantizationSectionIsOptional) {
  TempDir dir;
  const std::string plain = writeRich(dir, "plain.kiln");
  EXPECT_EQ(sectionEntry(plain, 5), std::string::npos);
  ArtifactView view;
  std::string error;
  ASSERT_TRUE(parse(plain, &view, &error)) << error;
  EXPECT_FALSE(view.meta.quantization.present);

  Fixture f;
  Metadata m = richMetadata();
  m.quantization = recipe();
  m.quantization.accuracy = report();
  ASSERT_TRUE(writeArtifact(dir.file("q.kiln"), m, "CODE", f.sources(), &error)) << error;
  std::string bytes = kiln::test::readFile(dir.file("q.kiln"));
  const size_t entry = sectionEntry(bytes, 5);
  ASSERT_NE(entry, std::string::npos);
  putU32(bytes, entry, 77);
  ASSERT_TRUE(parse(bytes, &view, &error)) << error;
  EXPECT_FALSE(view.meta.quantization.present);
  EXPECT_EQ(view.meta.weights.size(), 2u);
}

// A damaged quantization section is refused with a reason, never read past its end.
TEST(ArtifactFormat, DamagedQuantizationSection) {
  TempDir dir;
  Fixture f;
  std::string error;
  Metadata m = richMetadata();
  m.quantization = recipe();
  m.quantization.accuracy = report();
  ASSERT_TRUE(writeArtifact(dir.file("q.kiln"), m, "CODE", f.sources(), &error)) << error;
  const std::string good = kiln::test::readFile(dir.file("q.kiln"));
  const size_t entry = sectionEntry(good, 5);
  ASSERT_NE(entry, std::string::npos);
  uint64_t size = 0;
  std::memcpy(&size, good.data() + entry + 16, 8);
  // Every shorter size of the section is a truncated section.
  for (uint64_t n = 0; n < size; ++n) {
    std::string b = good;
    putU64(b, entry + 16, n);
    ArtifactView v;
    EXPECT_FALSE(parse(b, &v, &error)) << "size " << n;
    EXPECT_NE(error.find("quantization"), std::string::npos) << error;
  }
  // The accuracy flag is the u32 after mode, group, scale type and the kept list.
  uint64_t offset = 0;
  std::memcpy(&offset, good.data() + entry + 8, 8);
  const size_t flagAt = size_t(offset) + (4 + 4) + 4 + (4 + 3) + 4 + (4 + 7) + (4 + 5);
  std::string b = good;
  ASSERT_EQ(b[flagAt], 1);
  putU32(b, flagAt, 2);
  ArtifactView v;
  EXPECT_FALSE(parse(b, &v, &error));
  EXPECT_NE(error.find("accuracy flag 2"), std::string::npos) << error;
}

// rewriteArtifact (kiln-compile adding the accuracy report) gives the bytes a direct write would.
TEST(ArtifactFormat, RewriteWithReportEqualsDirectWrite) {
  TempDir dir;
  Fixture f;
  std::string error;
  Metadata m = richMetadata();
  m.quantization = recipe();
  ASSERT_TRUE(writeArtifact(dir.file("first.kiln"), m, "CODE-BYTES", f.sources(), &error)) << error;
  const std::string first = kiln::test::readFile(dir.file("first.kiln"));
  ArtifactView view;
  ASSERT_TRUE(parse(first, &view, &error)) << error;
  Metadata amended = view.meta;
  amended.quantization.accuracy = report();
  ASSERT_TRUE(rewriteArtifact(dir.file("rewritten.kiln"), view, amended, &error)) << error;

  Metadata direct = richMetadata();
  direct.quantization = recipe();
  direct.quantization.accuracy = report();
  ASSERT_TRUE(writeArtifact(dir.file("direct.kiln"), direct, "CODE-BYTES", f.sources(), &error)) << error;
  EXPECT_EQ(kiln::test::readFile(dir.file("rewritten.kiln")), kiln::test::readFile(dir.file("direct.kiln")));
}
