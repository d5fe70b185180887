// The runtime's cuBLASLt path without a GPU: how each kiln_abi_gemm is laid out for the library
// (planGemm), and, against the mock cuBLASLt (mock_cublaslt.c, which computes on host memory as
// the library documents), that the products it enqueues equal the product the generated code asked
// for, over random shapes, transposes, padded rows, broadcast and strided batches.
#include "runtime/src/cuda_blas.h"
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
  ASSERT_TRUE(planGemm(g, p, why)) << why;
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
  ASSERT_TRUE(planGemm(g, p, why)) << why;
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
  ASSERT_TRUE(planGemm(g, p, why)) << why;
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
  ASSERT_TRUE(planGemm(g, p, why)) << why;
  EXPECT_EQ(p.batch, 3);
  EXPECT_EQ(p.outerRank, 1);
  EXPECT_EQ(p.outer[0], 2);
  EXPECT_EQ(p.a.batchStride, 40); // cuBLAS's A is kiln's B
  EXPECT_EQ(p.a.outerStride[0], 0);
  EXPECT_EQ(p.b.outerStride[0], 96);
  // With B contiguous over both, they merge.
  g.b_stride_batch[0] = 120;
  ASSERT_TRUE(planGemm(g, p, why)) << why;
  EXPECT_EQ(p.batch, 6);
  EXPECT_EQ(p.outerRank, 0);
}

TEST(PlanGemm, AlignmentIsWhatEveryColumnAndBatchShares) {
  alignas(256) static float buffer[4096];
  BlasPlan p;
  std::string why;
  kiln_abi_gemm g = rowMajor(4, 16, 8);
  g.a = buffer;
  g.b = buffer;
  g.c = buffer + 1; // 4 bytes past a 256-byte boundary
  ASSERT_TRUE(planGemm(g, p, why)) << why;
  EXPECT_EQ(p.d.alignment, 4u);
  EXPECT_EQ(p.a.alignment, 64u); // B's rows of 16 floats
  EXPECT_EQ(p.b.alignment, 32u); // A's rows of 8 floats
}

TEST(PlanGemm, DeclinesWhatCuBlasLtCannotTake) {
  BlasPlan p;
  std::string why;
  kiln_abi_gemm g = rowMajor(3, 5, 7);
  g.a_type = 6; // int32
  EXPECT_FALSE(planGemm(g, p, why));
  EXPECT_NE(why.find("element types"), std::string::npos);
  g = rowMajor(3, 5, 7);
  g.a_stride_k = 2; // A strided both ways (a slice with a step)
  EXPECT_FALSE(planGemm(g, p, why));
  EXPECT_NE(why.find("strided along both"), std::string::npos);
  g = rowMajor(3, 5, 7);
  g.c_stride_n = 2;
  EXPECT_FALSE(planGemm(g, p, why));
  EXPECT_NE(why.find("output"), std::string::npos);
  g = rowMajor(3, 0, 7);
  EXPECT_FALSE(planGemm(g, p, why));
  EXPECT_NE(why.find("empty"), std::string::npos);
  g = rowMajor(3, 5, 7);
  g.b_stride_k = -5;
  EXPECT_FALSE(planGemm(g, p, why));
  EXPECT_NE(why.find("negative"), std::string::npos);
  g = rowMajor(3, 5, 7);
  g.m = int64_t(1) << 32;
  EXPECT_FALSE(planGemm(g, p, why));
  g = rowMajor(3, 5, 7);
  g.a_type = g.b_type = 10;
  g.c_type = 16; // half x half -> bfloat16
  EXPECT_FALSE(planGemm(g, p, why));
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

// kiln_abi_gemm's meaning, computed directly (double accumulation).
std::vector<double> reference(const kiln_abi_gemm &g, const std::vector<uint16_t> &a, const std::vector<uint16_t> &b,
                              const std::vector<uint16_t> &c0, std::vector<int64_t> &where) {
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
        out.push_back(g.alpha * acc + (g.beta != 0 ? g.beta * get(c0, g.c_type, ci) : 0.0));
        where.push_back(ci);
      }
  }
  return out;
}

TEST(CudaBlas, RandomLayoutsComputeTheProductAskedFor) {
  setenv("KILN_CUBLASLT", KILN_MOCK_CUBLASLT, 1);
  std::string why;
  std::unique_ptr<CudaBlas> blas = CudaBlas::load(why);
  unsetenv("KILN_CUBLASLT");
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
    std::vector<double> want = reference(g, a, b, c, where);
    BlasPlan plan;
    if (!planGemm(g, plan, why)) {
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

TEST(CudaBlas, NoAlgorithmIsDeclined) {
  setenv("KILN_CUBLASLT", KILN_MOCK_CUBLASLT, 1);
  std::string why;
  std::unique_ptr<CudaBlas> blas = CudaBlas::load(why);
  unsetenv("KILN_CUBLASLT");
  ASSERT_NE(blas, nullptr) << why;
  setenv("KILN_MOCK_CUBLASLT_NO_ALGO", "1", 1);
  std::vector<float> a(6), b(6), c(4);
  kiln_abi_gemm g = rowMajor(2, 2, 3);
  g.a = a.data();
  g.b = b.data();
  g.c = c.data();
  BlasPlan plan;
  ASSERT_TRUE(planGemm(g, plan, why)) << why;
  std::string error;
  EXPECT_EQ(blas->run(plan, nullptr, nullptr, 0, error), CudaBlas::Result::Declined);
  unsetenv("KILN_MOCK_CUBLASLT_NO_ALGO");
}

} // namespace
