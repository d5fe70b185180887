// The runtime's cuBLASLt path without a GPU: how each kiln_abi_gemm is laid out for the library
// (planGemm), and, against the mock cuBLASLt (mock_cublaslt.c, which computes on host memory as
// the library documents), that the products it enqueues equal the product the generated code asked
// for, over random shapes, transposes, padded rows, broadcast and strided batches.
#include "runtime/src/cuda_blas.h"
#include "runtime/src/host_gemm.h"
#include "mock_cublaslt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <dlfcn.h>
#include <random>
#include <vector>

namespace {

using kiln::runtime::BlasPlan;
using kiln::runtime::CudaBlas;
using kiln::runtime::planGemm;

// A row-major [m, k] x [k, n] product of contiguous float matrices.
kiln_abi_gemm rowMajor(int64_t m, int64_t n, int64_t k) {
  kiln_abi_gemm g{};
  g.a_type = g.b_type = g.c_type = 1;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a_stride_m = k;
  g.a_stride_k = 1;
  g.b_stride_k = n;
  g.b_stride_n = 1;
  g.c_stride_m = n;
  g.c_stride_n = 1;
  g.alpha = 1;
  return g;
}

TEST(PlanGemm, RowMajorIsTheTransposedColumnMajorProduct) {
  BlasPlan p;
  std::string why;
  kiln_abi_gemm g = rowMajor(3, 5, 7);
  ASSERT_TRUE(planGemm(g, nullptr, p, why)) << why;
  // C^T (5 x 3, ld 5) = B^T (5 x 7, ld 5) A^T (7 x 3, ld 7), nothing transposed.
  EXPECT_EQ(p.d.rows, 5u);
  EXPECT_EQ(p.d.cols, 3u);
  EXPECT_EQ(p.d.ld, 5);
  EXPECT_FALSE(p.a.transposed);
  EXPECT_EQ(p.a.rows, 5u);
  EXPECT_EQ(p.a.cols, 7u);
  EXPECT_EQ(p.a.ld, 5);
  EXPECT_FALSE(p.b.transposed);
  EXPECT_EQ(p.b.rows, 7u);
  EXPECT_EQ(p.b.ld, 7);
  EXPECT_EQ(p.batch, 1);
  EXPECT_EQ(p.outerRank, 0);
}

TEST(PlanGemm, TransposedOperandsBecomeOpT) {
  BlasPlan p;
  std::string why;
  kiln_abi_gemm g = rowMajor(3, 5, 7);
  g.b_stride_k = 1; // B read as [n, k] (attention's K^T)
  g.b_stride_n = 7;
  g.a_stride_m = 1; // A read as [k, m] (Gemm transA)
  g.a_stride_k = 3;
  ASSERT_TRUE(planGemm(g, nullptr, p, why)) << why;
  EXPECT_TRUE(p.a.transposed);
  EXPECT_EQ(p.a.ld, 7);
  EXPECT_TRUE(p.b.transposed);
  EXPECT_EQ(p.b.ld, 3);
}

TEST(PlanGemm, ABatchThatBDoesNotHaveFoldsIntoRows) {
  // [2, 4, 8] x [8, 16]: one 8 x 8 x 16 product.
  BlasPlan p;
  std::string why;
  kiln_abi_gemm g = rowMajor(4, 16, 8);
  g.batch_rank = 1;
  g.batch[0] = 2;
  g.a_stride_batch[0] = 32;
  g.c_stride_batch[0] = 64;
  ASSERT_TRUE(planGemm(g, nullptr, p, why)) << why;
  EXPECT_EQ(p.batch, 1);
  EXPECT_EQ(p.d.cols, 8u); // C^T: n x (batch * m)
}

TEST(PlanGemm, BroadcastBatchesAreStridedBatchesAndOuterLoops) {
  // [2, 3, 4, 8] x [1, 3, 8, 5] with C [2, 3, 4, 5]: the contiguous batches merge into one strided
  // batch of 6 only where B's strides allow; B is broadcast over the outer one.
  BlasPlan p;
  std::string why;
  kiln_abi_gemm g = rowMajor(4, 5, 8);
  g.batch_rank = 2;
  g.batch[0] = 2;
  g.batch[1] = 3;
  g.a_stride_batch[0] = 96;
  g.a_stride_batch[1] = 32;
  g.b_stride_batch[0] = 0;
  g.b_stride_batch[1] = 40;
  g.c_stride_batch[0] = 60;
  g.c_stride_batch[1] = 20;
  ASSERT_TRUE(planGemm(g, nullptr, p, why)) << why;
  EXPECT_EQ(p.batch, 3);
  EXPECT_EQ(p.outerRank, 1);
  EXPECT_EQ(p.outer[0], 2);
  EXPECT_EQ(p.a.batchStride, 40); // cuBLAS's A is kiln's B
  EXPECT_EQ(p.a.outerStride[0], 0);
  EXPECT_EQ(p.b.outerStride[0], 96);
  // With B contiguous over both, they merge.
  g.b_stride_batch[0] = 120;
  ASSERT_TRUE(planGemm(g, nullptr, p, why)) << why;
  EXPECT_EQ(p.batch, 6);
  EXPECT_EQ(p.outerRank, 0);
}

TEST(PlanGemm, AlignmentIsWhatEveryColumnAndBatchShares) {
  alignas(256) static float buffer[4096];
  BlasPlan p;
  std::string why;
  kiln_abi_gemm g = rowMajor(4, 16, 8);
  g.a = buffer;
  g.b = buffer + 1024;
  g.c = buffer + 2049; // 4 bytes past a 256-byte boundary
  ASSERT_TRUE(planGemm(g, nullptr, p, why)) << why;
  EXPECT_EQ(p.d.alignment, 4u);
  EXPECT_EQ(p.a.alignment, 64u); // B's rows of 16 floats
  EXPECT_EQ(p.b.alignment, 32u); // A's rows of 8 floats
}

// A bias is one value per row of cuBLASLt's D: kiln's columns when C is row-major (D = C^T).
TEST(PlanGemm, ABiasIsAddedPerRowOfTheTransposedOutput) {
  std::vector<float> bias(4), residual(8);
  kiln_abi_gemm g = rowMajor(2, 4, 3);
  kiln_abi_epilogue e{residual.data(), bias.data(), 1, 1, 1};
  BlasPlan p;
  std::string why;
  ASSERT_TRUE(planGemm(g, &e, p, why)) << why;
  EXPECT_EQ(p.d.rows, 4u);
  EXPECT_EQ(p.bias, bias.data());
  EXPECT_EQ(p.cSource, residual.data());
  EXPECT_EQ(p.epilogue, kiln::runtime::cublaslt::kEpilogueBias | kiln::runtime::cublaslt::kEpilogueRelu);
  e.bias = nullptr;
  ASSERT_TRUE(planGemm(g, &e, p, why)) << why;
  EXPECT_EQ(p.epilogue, kiln::runtime::cublaslt::kEpilogueRelu);
  e.activation = 0;
  ASSERT_TRUE(planGemm(g, &e, p, why)) << why;
  EXPECT_EQ(p.epilogue, kiln::runtime::cublaslt::kEpilogueDefault);
  // A column-major C (D = C): the bias would be per column of D.
  e.bias = bias.data();
  g.c_stride_m = 1;
  g.c_stride_n = 2;
  EXPECT_FALSE(planGemm(g, &e, p, why));
  // A strided bias, another type, an unknown activation.
  g = rowMajor(2, 4, 3);
  e.bias_stride = 2;
  EXPECT_FALSE(planGemm(g, &e, p, why));
  e.bias_stride = 1;
  e.bias_type = 10;
  EXPECT_FALSE(planGemm(g, &e, p, why));
  e.bias_type = 1;
  e.activation = 2;
  EXPECT_FALSE(planGemm(g, &e, p, why));
  // A batch only B has folds into n when unbiased; with a bias it stays a batch.
  e.activation = 0;
  // (B is [3, 2 x 4]: each batch's columns follow the previous one's, as are C's.)
  g = rowMajor(1, 4, 3);
  g.b_stride_k = 8;
  g.batch_rank = 1;
  g.batch[0] = 2;
  g.a_stride_batch[0] = 0;
  g.b_stride_batch[0] = 4;
  g.c_stride_batch[0] = 4;
  ASSERT_TRUE(planGemm(g, nullptr, p, why)) << why;
  EXPECT_EQ(p.d.rows, 8u);
  ASSERT_TRUE(planGemm(g, &e, p, why)) << why;
  EXPECT_EQ(p.d.rows, 4u);
  EXPECT_EQ(p.batch, 2);
}

// The memory plan may put an epilogue's output over the product's operands (they die at the
// product); one library call would read them while writing it, so both gemm paths decline.
TEST(PlanGemm, AnOutputOverlappingAnOperandIsDeclined) {
  std::vector<float> mem(64), bias(4);
  kiln_abi_gemm g = rowMajor(2, 4, 3); // A: 6 floats, B: 12, C: 8
  g.a = mem.data();
  g.b = mem.data() + 8;
  g.c = mem.data() + 20;
  BlasPlan p;
  std::string why;
  ASSERT_TRUE(planGemm(g, nullptr, p, why)) << why;
  g.c = mem.data() + 5; // its first float is A's last
  EXPECT_FALSE(planGemm(g, nullptr, p, why));
  EXPECT_EQ(why, "the output overlaps an operand");
  EXPECT_NE(kiln::runtime::hostGemm(g, nullptr), 0);
  g.c = mem.data() + 19; // B is [8, 20): C's first float is B's last
  EXPECT_FALSE(planGemm(g, nullptr, p, why));
  g.c = mem.data() + 20;
  // The C source: in place (C itself) or apart, not half over C.
  kiln_abi_epilogue e{mem.data() + 20, bias.data(), 1, 1, 0};
  EXPECT_TRUE(planGemm(g, &e, p, why)) << why;
  e.c_source = mem.data() + 40;
  EXPECT_TRUE(planGemm(g, &e, p, why)) << why;
  e.c_source = mem.data() + 24;
  EXPECT_FALSE(planGemm(g, &e, p, why));
  EXPECT_NE(kiln::runtime::hostGemm(g, &e), 0);
  // The bias over C.
  e.c_source = nullptr;
  e.bias = mem.data() + 26;
  EXPECT_FALSE(planGemm(g, &e, p, why));
}

TEST(PlanGemm, DeclinesWhatCuBlasLtCannotTake) {
  BlasPlan p;
  std::string why;
  kiln_abi_gemm g = rowMajor(3, 5, 7);
  g.a_type = 6; // int32
  EXPECT_FALSE(planGemm(g, nullptr, p, why));
  EXPECT_NE(why.find("element types"), std::string::npos);
  g = rowMajor(3, 5, 7);
  g.a_stride_k = 2; // A strided both ways (a slice with a step)
  EXPECT_FALSE(planGemm(g, nullptr, p, why));
  EXPECT_NE(why.find("strided along both"), std::string::npos);
  g = rowMajor(3, 5, 7);
  g.c_stride_n = 2;
  EXPECT_FALSE(planGemm(g, nullptr, p, why));
  EXPECT_NE(why.find("output"), std::string::npos);
  g = rowMajor(3, 0, 7);
  EXPECT_FALSE(planGemm(g, nullptr, p, why));
  EXPECT_NE(why.find("empty"), std::string::npos);
  g = rowMajor(3, 5, 7);
  g.b_stride_k = -5;
  EXPECT_FALSE(planGemm(g, nullptr, p, why));
  EXPECT_NE(why.find("negative"), std::string::npos);
  g = rowMajor(3, 5, 7);
  g.m = int64_t(1) << 32;
  EXPECT_FALSE(planGemm(g, nullptr, p, why));
  g = rowMajor(3, 5, 7);
  g.a_type = g.b_type = 10;
  g.c_type = 16; // half x half -> bfloat16
  EXPECT_FALSE(planGemm(g, nullptr, p, why));
}

// Element `i` of a buffer of ONNX dtype `type` (1 float, 10 half, 16 bfloat16).
float get(const std::vector<uint16_t> &buf, int64_t type, int64_t i) {
  if (type == 1) {
    float f;
    std::memcpy(&f, &buf[size_t(2 * i)], 4);
    return f;
  }
  if (type == 10)
    return float(reinterpret_cast<const _Float16 *>(buf.data())[i]);
  uint32_t bits = uint32_t(buf[size_t(i)]) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void put(std::vector<uint16_t> &buf, int64_t type, int64_t i, float v) {
  if (type == 1) {
    std::memcpy(&buf[size_t(2 * i)], &v, 4);
  } else if (type == 10) {
    reinterpret_cast<_Float16 *>(buf.data())[i] = _Float16(v);
  } else {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    buf[size_t(i)] = uint16_t(bits >> 16); // truncation: these are inputs, exact either way
  }
}

// The runtime's CudaBlas over the mock cuBLASLt.
std::unique_ptr<CudaBlas> loadMockBlas(std::string &why) {
  setenv("KILN_CUBLASLT", KILN_MOCK_CUBLASLT, 1);
  std::unique_ptr<CudaBlas> blas = CudaBlas::load(why);
  unsetenv("KILN_CUBLASLT");
  return blas;
}

struct MockBlas {
  void *lib = dlopen(KILN_MOCK_CUBLASLT, RTLD_NOW | RTLD_LOCAL); // shares the runtime's instance
  kiln_mock_cublaslt_stats_t *stats() {
    auto fn = reinterpret_cast<kiln_mock_cublaslt_stats_t *(*)()>(dlsym(lib, "kiln_mock_cublaslt_stats"));
    return fn ? fn() : nullptr;
  }
};

TEST(CudaBlas, TurnedOffOrMissingIsAReason) {
  std::string why;
  setenv("KILN_CUBLASLT", "none", 1);
  EXPECT_EQ(CudaBlas::load(why), nullptr);
  EXPECT_NE(why.find("KILN_CUBLASLT=none"), std::string::npos);
  setenv("KILN_CUBLASLT", "/nonexistent/libcublasLt.so", 1);
  EXPECT_EQ(CudaBlas::load(why), nullptr);
  EXPECT_NE(why.find("no cuBLASLt: cannot load /nonexistent/libcublasLt.so"), std::string::npos) << why;
  unsetenv("KILN_CUBLASLT");
}

// The toolkit's real library, where installed: every entry point the runtime uses resolves (its
// handle needs a GPU, so creating one may fail here, with the library's status).
TEST(CudaBlas, TheToolkitsLibraryHasEveryEntryPoint) {
  const char *real = "/usr/local/cuda/lib64/libcublasLt.so";
  if (!dlopen(real, RTLD_LAZY | RTLD_LOCAL))
    GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda (" << dlerror() << ")";
  setenv("KILN_CUBLASLT", real, 1);
  std::string why;
  std::unique_ptr<CudaBlas> blas = CudaBlas::load(why);
  unsetenv("KILN_CUBLASLT");
  if (!blas)
    EXPECT_NE(why.find("cublasLtCreate failed"), std::string::npos) << why;
}

// kiln_abi_gemm's meaning with its epilogue (null: none), computed directly (double
// accumulation). `source` is the epilogue's C source when it has one.
std::vector<double> reference(const kiln_abi_gemm &g, const kiln_abi_epilogue *e, const std::vector<uint16_t> &a,
                              const std::vector<uint16_t> &b, const std::vector<uint16_t> &c0,
                              const std::vector<uint16_t> &source, const std::vector<uint16_t> &bias,
                              std::vector<int64_t> &where) {
  std::vector<double> out;
  int64_t total = 1;
  for (int64_t i = 0; i < g.batch_rank; ++i)
    total *= g.batch[i];
  for (int64_t t = 0; t < total; ++t) {
    int64_t oa = 0, ob = 0, oc = 0;
    for (int64_t i = g.batch_rank - 1, rest = t; i >= 0; --i) {
      int64_t at = rest % g.batch[i];
      rest /= g.batch[i];
      oa += at * g.a_stride_batch[i];
      ob += at * g.b_stride_batch[i];
      oc += at * g.c_stride_batch[i];
    }
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < g.k; ++l)
          acc += double(get(a, g.a_type, oa + i * g.a_stride_m + l * g.a_stride_k)) *
                 get(b, g.b_type, ob + l * g.b_stride_k + j * g.b_stride_n);
        int64_t ci = oc + i * g.c_stride_m + j * g.c_stride_n;
        const std::vector<uint16_t> &s = e && e->c_source ? source : c0;
        double v = g.alpha * acc + (g.beta != 0 ? g.beta * get(s, g.c_type, ci) : 0.0);
        if (e && e->bias)
          v += get(bias, e->bias_type, j * e->bias_stride);
        if (e && e->activation == 1 && !(v > 0))
          v = 0;
        out.push_back(v);
        where.push_back(ci);
      }
  }
  return out;
}

TEST(CudaBlas, RandomLayoutsComputeTheProductAskedFor) {
  std::string why;
  std::unique_ptr<CudaBlas> blas = loadMockBlas(why);
  ASSERT_NE(blas, nullptr) << why;
  MockBlas mock;
  ASSERT_NE(mock.stats(), nullptr);
  EXPECT_NE(blas->description().find("cuBLASLt 990000"), std::string::npos) << blas->description();
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  int planned = 0;
  for (int trial = 0; trial < 300; ++trial) {
    kiln_abi_gemm g{};
    const int64_t types[3][3] = {{1, 1, 1}, {10, 10, 1}, {16, 16, 16}};
    const int64_t *ty = types[pick(0, 2)];
    g.a_type = ty[0];
    g.b_type = ty[1];
    g.c_type = ty[2];
    g.m = pick(1, 6);
    g.n = pick(1, 6);
    g.k = pick(1, 9);
    // Each operand row-major or transposed, its rows padded by up to 2 elements.
    auto layout = [&](int64_t rows, int64_t cols, int64_t &sr, int64_t &sc, bool mayTranspose) {
      bool t = mayTranspose && pick(0, 1);
      int64_t pad = pick(0, 2);
      if (t) {
        sr = 1;
        sc = rows + pad;
        return cols * sc;
      }
      sc = 1;
      sr = cols + pad;
      return rows * sr;
    };
    int64_t spanA = layout(g.m, g.k, g.a_stride_m, g.a_stride_k, true);
    int64_t spanB = layout(g.k, g.n, g.b_stride_k, g.b_stride_n, true);
    int64_t spanC = layout(g.m, g.n, g.c_stride_m, g.c_stride_n, true);
    // Up to 3 batch dims, each broadcast in A or B (stride 0) now and then, C's contiguous or gapped.
    g.batch_rank = pick(0, 3);
    int64_t ea = spanA, eb = spanB, ec = spanC;
    for (int64_t i = g.batch_rank - 1; i >= 0; --i) {
      g.batch[i] = pick(1, 3);
      int r = int(pick(0, 3));
      g.a_stride_batch[i] = r == 1 ? 0 : ea;
      g.b_stride_batch[i] = r == 2 ? 0 : eb;
      g.c_stride_batch[i] = ec + (r == 3 ? 5 : 0);
      ea = g.a_stride_batch[i] ? ea * g.batch[i] : ea;
      eb = g.b_stride_batch[i] ? eb * g.batch[i] : eb;
      ec = g.c_stride_batch[i] * g.batch[i];
    }
    std::vector<uint16_t> a(size_t(2 * ea)), b(size_t(2 * eb)), c(size_t(2 * ec + 2));
    for (int64_t i = 0; i < ea; ++i)
      put(a, g.a_type, i, float(pick(-4, 4)) / 4);
    for (int64_t i = 0; i < eb; ++i)
      put(b, g.b_type, i, float(pick(-4, 4)) / 2);
    for (int64_t i = 0; i < ec; ++i)
      put(c, g.c_type, i, float(pick(-2, 2)));
    g.alpha = pick(0, 1) ? 1.0 : 0.5;
    g.beta = double(pick(0, 1));
    g.a = a.data();
    g.b = b.data();
    g.c = c.data();
    std::vector<int64_t> where;
    std::vector<double> want = reference(g, nullptr, a, b, c, {}, {}, where);
    BlasPlan plan;
    if (!planGemm(g, nullptr, plan, why)) {
      ADD_FAILURE() << "trial " << trial << " declined: " << why;
      continue;
    }
    ++planned;
    std::string error;
    ASSERT_EQ(blas->run(plan, nullptr, nullptr, 0, error), CudaBlas::Result::Done) << error;
    // Small integers and halves: exact in every type but bfloat16 outputs, which round.
    const double tolerance = g.c_type == 16 ? 0.02 : 1e-6;
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(get(c, g.c_type, where[i]), want[i], tolerance * (1 + std::fabs(want[i])))
          << "trial " << trial << " element " << i << " m=" << g.m << " n=" << g.n << " k=" << g.k
          << " batch rank " << g.batch_rank;
  }
  EXPECT_EQ(planned, 300);
  EXPECT_EQ(mock.stats()->live_descriptors, 0);
}

// Products with random epilogues (a C source other than C, a bias, ReLU) through the mock
// cuBLASLt and through the host's gemm (the emulated target's), both against the reference. A
// bias is declined by the plan exactly when C is column-major (and not a row or a column); the
// host's gemm takes every one.
TEST(CudaBlas, RandomEpiloguesComputeWhatTheAbiSays) {
  std::string why;
  std::unique_ptr<CudaBlas> blas = loadMockBlas(why);
  ASSERT_NE(blas, nullptr) << why;
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  int viaBlas = 0, declined = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t type = pick(0, 1) ? 1 : 16; // float, or bfloat16 throughout
    kiln_abi_gemm g = rowMajor(pick(1, 5), pick(1, 6), pick(1, 7));
    g.a_type = g.b_type = g.c_type = type;
    const bool columnMajorC = pick(0, 4) == 0;
    if (columnMajorC) {
      g.c_stride_m = 1;
      g.c_stride_n = g.m;
    }
    g.batch_rank = pick(0, 1);
    int64_t spanA = g.m * g.k, spanB = g.k * g.n, spanC = g.m * g.n;
    if (g.batch_rank) {
      g.batch[0] = pick(1, 3);
      g.a_stride_batch[0] = spanA;
      g.b_stride_batch[0] = pick(0, 1) ? spanB : 0; // a shared weight or one per batch
      g.c_stride_batch[0] = spanC;
      spanA *= g.batch[0];
      spanB *= g.batch[0];
      spanC *= g.batch[0];
    }
    std::vector<uint16_t> a(size_t(2 * spanA)), b(size_t(2 * spanB)), c(size_t(2 * spanC)), s(size_t(2 * spanC)),
        bias(size_t(2 * g.n));
    for (int64_t i = 0; i < spanA; ++i)
      put(a, type, i, float(pick(-4, 4)) / 4);
    for (int64_t i = 0; i < spanB; ++i)
      put(b, type, i, float(pick(-4, 4)) / 2);
    for (int64_t i = 0; i < spanC; ++i) {
      put(c, type, i, float(pick(-2, 2)));
      put(s, type, i, float(pick(-2, 2)));
    }
    for (int64_t i = 0; i < g.n; ++i)
      put(bias, type, i, float(pick(-4, 4)) / 2);
    g.a = a.data();
    g.b = b.data();
    g.c = c.data();
    g.beta = double(pick(0, 1));
    kiln_abi_epilogue e{};
    if (pick(0, 1))
      e.c_source = s.data();
    if (pick(0, 2)) {
      e.bias = bias.data();
      e.bias_type = type;
      e.bias_stride = 1;
    }
    e.activation = pick(0, 1);
    std::vector<int64_t> where;
    std::vector<double> want = reference(g, &e, a, b, c, s, bias, where);
    const double tolerance = type == 16 ? 0.02 : 1e-6;
    auto expectWant = [&](const std::vector<uint16_t> &out, const char *path) {
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(get(out, type, where[i]), want[i], tolerance * (1 + std::fabs(want[i])))
            << path << " trial " << trial << " element " << i << " m=" << g.m << " n=" << g.n << " k=" << g.k;
    };
    std::vector<uint16_t> c0 = c;
    ASSERT_EQ(kiln::runtime::hostGemm(g, &e), 0);
    expectWant(c, "host gemm");
    c = c0;
    BlasPlan plan;
    const bool planned = planGemm(g, &e, plan, why);
    ASSERT_EQ(planned, !(e.bias && columnMajorC && g.m > 1 && g.n > 1)) << "trial " << trial << ": " << why;
    if (!planned) {
      ++declined;
      continue;
    }
    ++viaBlas;
    std::string error;
    ASSERT_EQ(blas->run(plan, nullptr, nullptr, 0, error), CudaBlas::Result::Done) << error;
    expectWant(c, "cuBLASLt");
  }
  EXPECT_GT(viaBlas, 100);
  EXPECT_GT(declined, 5);
}

TEST(CudaBlas, NoAlgorithmIsDeclined) {
  std::string why;
  std::unique_ptr<CudaBlas> blas = loadMockBlas(why);
  ASSERT_NE(blas, nullptr) << why;
  setenv("KILN_MOCK_CUBLASLT_NO_ALGO", "1", 1);
  std::vector<float> a(6), b(6), c(4);
  kiln_abi_gemm g = rowMajor(2, 2, 3);
  g.a = a.data();
  g.b = b.data();
  g.c = c.data();
  BlasPlan plan;
  ASSERT_TRUE(planGemm(g, nullptr, plan, why)) << why;
  std::string error;
  EXPECT_EQ(blas->run(plan, nullptr, nullptr, 0, error), CudaBlas::Result::Declined);
  unsetenv("KILN_MOCK_CUBLASLT_NO_ALGO");
}

} // namespace
