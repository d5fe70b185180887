// cuBLASLt through dlopen: the layout of each product as the library wants it, and the calls.
#include "cuda_blas.h"
#include "host_gemm.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <type_traits>

namespace kiln::runtime {

namespace {

using namespace cublaslt;

int32_t cudaType(int64_t onnxType) {
  switch (onnxType) {
  case 1: return kTypeF32;
  case 10: return kTypeF16;
  case 16: return kTypeBF16;
  default: return -1;
  }
}

int64_t elementBytes(int32_t type) { return type == kTypeF32 ? 4 : 2; }

// a * b == want, false when the product overflows (sizes come from tensors' shapes).
bool productIs(int64_t a, int64_t b, int64_t want) {
  int64_t p = 0;
  return !__builtin_mul_overflow(a, b, &p) && p == want;
}

// A stride that does not matter (a dim of one) or steps one element.
bool unit(int64_t size, int64_t stride) { return stride == 1 || size == 1; }

// An operand whose element (i, j) of a rows x cols view is at i * sr + j * sc: column-major as
// it is, or the transpose of a column-major matrix. The leading dimension must keep columns apart.
bool describe(BlasMatrix &x, int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool mayTranspose) {
  if (unit(rows, sr)) {
    x.transposed = false;
    x.rows = uint64_t(rows);
    x.cols = uint64_t(cols);
    x.ld = cols == 1 ? rows : sc;
    if (x.ld >= rows)
      return true;
  }
  if (mayTranspose && unit(cols, sc)) {
    x.transposed = true;
    x.rows = uint64_t(cols);
    x.cols = uint64_t(rows);
    x.ld = rows == 1 ? cols : sr;
    return x.ld >= cols;
  }
  return false;
}

// The largest power of two (up to 256) dividing `bits`.
uint32_t powerOfTwoDividing(uint64_t bits) {
  uint32_t a = 256;
  while (a > 1 && (bits & (a - 1)) != 0)
    a /= 2;
  return a;
}

// The largest power of two (up to 256) dividing every batch's and every column's start, the
// matrix starting at `data`.
uint32_t alignment(const BlasMatrix &x, const void *data, int32_t batch, const BlasPlan &plan) {
  const int64_t bytes = elementBytes(x.type);
  uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(data));
  if (x.cols > 1)
    bits |= uint64_t(x.ld) * uint64_t(bytes);
  if (batch > 1)
    bits |= uint64_t(x.batchStride) * uint64_t(bytes);
  for (int i = 0; i < plan.outerRank; ++i)
    bits |= uint64_t(x.outerStride[i]) * uint64_t(bytes);
  return powerOfTwoDividing(bits);
}

} // namespace

namespace {
bool planWith(const kiln_abi_gemm &g, const kiln_abi_epilogue *epilogue, BlasPlan &plan, std::string &why,
              bool fold) {
  const int32_t at = cudaType(g.a_type), bt = cudaType(g.b_type), ct = cudaType(g.c_type);
  if (at < 0 || at != bt || (ct != at && ct != kTypeF32)) {
    why = "element types " + std::to_string(g.a_type) + " x " + std::to_string(g.b_type) + " -> " +
          std::to_string(g.c_type);
    return false;
  }
  if (g.batch_rank < 0 || g.batch_rank > KILN_ABI_GEMM_MAX_BATCH) {
    why = "batch rank " + std::to_string(g.batch_rank);
    return false;
  }
  int64_t m = g.m, n = g.n, k = g.k;
  int64_t sam = g.a_stride_m, sak = g.a_stride_k, sbk = g.b_stride_k, sbn = g.b_stride_n, scm = g.c_stride_m,
          scn = g.c_stride_n;
  struct Dim {
    int64_t size, sa, sb, sc;
  };
  std::vector<Dim> dims;
  bool negative = sam < 0 || sak < 0 || sbk < 0 || sbn < 0 || scm < 0 || scn < 0;
  bool empty = m <= 0 || n <= 0 || k <= 0;
  for (int64_t i = 0; i < g.batch_rank; ++i) {
    Dim d{g.batch[i], g.a_stride_batch[i], g.b_stride_batch[i], g.c_stride_batch[i]};
    negative |= d.sa < 0 || d.sb < 0 || d.sc < 0;
    empty |= d.size <= 0;
    if (d.size != 1)
      dims.push_back(d);
  }
  if (negative || empty) {
    why = negative ? "a negative stride" : "an empty product";
    return false;
  }
  if (gemmOutputOverlaps(g, epilogue)) {
    why = "the output overlaps an operand";
    return false;
  }
  // A batch dim only A has (B's stride 0) is more rows of A and C, one only B has more columns.
  auto grow = [](int64_t &size, int64_t by) { return !__builtin_mul_overflow(size, by, &size) && size <= INT32_MAX; };
  for (bool changed = fold; changed;) {
    changed = false;
    for (size_t i = 0; i < dims.size() && !changed; ++i) {
      Dim d = dims[i];
      if (d.sb == 0 && (m == 1 || (productIs(sam, m, d.sa) && productIs(scm, m, d.sc)))) {
        if (m == 1) {
          sam = d.sa;
          scm = d.sc;
        }
        changed = grow(m, d.size);
      } else if (d.sa == 0 && (n == 1 || (productIs(sbn, n, d.sb) && productIs(scn, n, d.sc)))) {
        if (n == 1) {
          sbn = d.sb;
          scn = d.sc;
        }
        changed = grow(n, d.size);
      } else {
        continue;
      }
      if (!changed) {
        why = "more than 2^31 rows or columns";
        return false;
      }
      dims.erase(dims.begin() + long(i));
    }
  }
  // Adjacent batch dims contiguous in all three operands are one.
  for (size_t i = dims.size(); i-- > 1;) {
    const Dim &o = dims[i - 1], &in = dims[i];
    int64_t merged = 0;
    if (productIs(in.sa, in.size, o.sa) && productIs(in.sb, in.size, o.sb) && productIs(in.sc, in.size, o.sc) &&
        !__builtin_mul_overflow(in.size, o.size, &merged)) {
      dims[i].size = merged;
      dims.erase(dims.begin() + long(i - 1));
    }
  }
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
    why = "more than 2^31 rows, columns or terms";
    return false;
  }
  for (const Dim &d : dims)
    if (d.sc == 0 || d.size > INT32_MAX) {
      why = d.sc == 0 ? "a batch that writes one output" : "more than 2^31 products";
      return false;
    }

  plan = BlasPlan{};
  // cuBLASLt has no transposed D: when C is contiguous along n, compute C^T = B^T A^T, whose
  // column-major D is C's row-major layout; when along m, C = A B as it is.
  const bool rowMajor = unit(n, scn);
  if (!rowMajor && !unit(m, scm)) {
    why = "an output strided along both dims";
    return false;
  }
  struct Operand {
    const void *data;
    int32_t type;
    int64_t rows, cols, sr, sc;
    int64_t Dim::*batch;
  };
  Operand a{g.a, at, m, k, sam, sak, &Dim::sa}, b{g.b, bt, k, n, sbk, sbn, &Dim::sb}, c{g.c, ct, m, n, scm, scn, &Dim::sc};
  if (rowMajor) {
    Operand bt2{b.data, b.type, n, k, sbn, sbk, b.batch}, at2{a.data, a.type, k, m, sak, sam, a.batch};
    a = bt2;
    b = at2;
    c = Operand{c.data, c.type, n, m, scn, scm, c.batch};
  }
  for (auto [x, from, mayTranspose] : {std::tuple{&plan.a, &a, true}, std::tuple{&plan.b, &b, true},
                                       std::tuple{&plan.d, &c, false}}) {
    x->data = from->data;
    x->type = from->type;
    if (!describe(*x, from->rows, from->cols, from->sr, from->sc, mayTranspose)) {
      why = std::string(x == &plan.d ? "the output" : "an operand") + " is strided along both dims";
      return false;
    }
  }
  plan.batch = 1;
  if (!dims.empty()) {
    const Dim &inner = dims.back();
    plan.batch = int32_t(inner.size);
    plan.a.batchStride = inner.*(a.batch);
    plan.b.batchStride = inner.*(b.batch);
    plan.d.batchStride = inner.sc;
    plan.outerRank = int(dims.size() - 1);
    for (int i = 0; i < plan.outerRank; ++i) {
      plan.outer[i] = dims[size_t(i)].size;
      plan.a.outerStride[i] = dims[size_t(i)].*(a.batch);
      plan.b.outerStride[i] = dims[size_t(i)].*(b.batch);
      plan.d.outerStride[i] = dims[size_t(i)].sc;
    }
  }
  for (BlasMatrix *x : {&plan.a, &plan.b, &plan.d})
    x->alignment = alignment(*x, x->data, plan.batch, plan);
  plan.alpha = float(g.alpha);
  plan.beta = float(g.beta);
  if (!epilogue)
    return true;
  const kiln_abi_epilogue &e = *epilogue;
  if (e.activation != 0 && e.activation != 1) {
    why = "activation " + std::to_string(e.activation);
    return false;
  }
  if (e.c_source) {
    plan.cSource = e.c_source;
    plan.cAlignment = alignment(plan.d, e.c_source, plan.batch, plan);
  }
  if (e.bias) {
    // cuBLASLt adds one packed value per row of D, which is kiln's n only when D is C^T, and only
    // when no batch was folded into n (the bias would have to repeat).
    if (!rowMajor || n != g.n || cudaType(e.bias_type) != ct || (g.n > 1 && e.bias_stride != 1)) {
      why = "a bias cuBLASLt cannot add (one packed value per column of a row-major output, C's type)";
      return false;
    }
    plan.bias = e.bias;
    plan.biasAlignment = powerOfTwoDividing(uint64_t(reinterpret_cast<uintptr_t>(e.bias)));
  }
  plan.epilogue = (e.bias ? kEpilogueBias : 0) | (e.activation == 1 ? kEpilogueRelu : 0);
  if (plan.epilogue == 0)
    plan.epilogue = kEpilogueDefault;
  return true;
}
} // namespace

bool planGemm(const kiln_abi_gemm &g, const kiln_abi_epilogue *epilogue, BlasPlan &plan, std::string &why) {
  // A fold can leave an operand strided both ways (rows of one element gathered from batches
  // apart) where the batch as a batch was fine.
  return planWith(g, epilogue, plan, why, true) || planWith(g, epilogue, plan, why, false);
}

struct CudaBlas::Library {
  void *so = nullptr;
  int (*create)(void **);
  int (*destroy)(void *);
  size_t (*version)();
  int (*descCreate)(void **, int32_t, int32_t);
  int (*descDestroy)(void *);
  int (*descSet)(void *, int, const void *, size_t);
  int (*layoutCreate)(void **, int32_t, uint64_t, uint64_t, int64_t);
  int (*layoutDestroy)(void *);
  int (*layoutSet)(void *, int, const void *, size_t);
  int (*prefCreate)(void **);
  int (*prefDestroy)(void *);
  int (*prefSet)(void *, int, const void *, size_t);
  // The results array is void *, as in the mock: a function called through a pointer of another
  // type is undefined behaviour (and UBSan's -fsanitize=function reports it for the C mock).
  int (*heuristic)(void *, void *, void *, void *, void *, void *, void *, int, void *, int *);
  int (*matmul)(void *, void *, const void *, const void *, void *, const void *, void *, const void *, const void *,
                void *, void *, void *, const void *, void *, size_t, void *);
  ~Library() {
    if (so)
      ::dlclose(so);
  }
};

std::unique_ptr<CudaBlas> CudaBlas::load(std::string &why) {
  const char *env = std::getenv("KILN_CUBLASLT");
  // The loader path first, then the toolkit's default install, which is often not on it.
  std::vector<std::string> candidates = {"libcublasLt.so.13", "libcublasLt.so.12",
                                         "/usr/local/cuda/lib64/libcublasLt.so.13",
                                         "/usr/local/cuda/lib64/libcublasLt.so.12", "libcublasLt.so"};
  if (env && *env) {
    if (!std::strcmp(env, "none")) {
      why = "turned off (KILN_CUBLASLT=none)";
      return nullptr;
    }
    candidates = {env};
  }
  std::unique_ptr<CudaBlas> blas(new CudaBlas);
  blas->lib_ = std::make_unique<Library>();
  Library &lib = *blas->lib_;
  std::string used;
  for (const std::string &c : candidates)
    if ((lib.so = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      used = c;
      break;
    }
  if (!lib.so) {
    const char *e = ::dlerror();
    why = "no cuBLASLt: cannot load " + candidates.front() + (e ? std::string(" (") + e + ")" : "");
    return nullptr;
  }
  bool ok = true;
  auto get = [&](auto &fn, const char *symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib.so, symbol));
    if (!fn && ok) {
      ok = false;
      why = used + " has no " + symbol;
    }
  };
  get(lib.create, "cublasLtCreate");
  get(lib.destroy, "cublasLtDestroy");
  get(lib.version, "cublasLtGetVersion");
  get(lib.descCreate, "cublasLtMatmulDescCreate");
  get(lib.descDestroy, "cublasLtMatmulDescDestroy");
  get(lib.descSet, "cublasLtMatmulDescSetAttribute");
  get(lib.layoutCreate, "cublasLtMatrixLayoutCreate");
  get(lib.layoutDestroy, "cublasLtMatrixLayoutDestroy");
  get(lib.layoutSet, "cublasLtMatrixLayoutSetAttribute");
  get(lib.prefCreate, "cublasLtMatmulPreferenceCreate");
  get(lib.prefDestroy, "cublasLtMatmulPreferenceDestroy");
  get(lib.prefSet, "cublasLtMatmulPreferenceSetAttribute");
  get(lib.heuristic, "cublasLtMatmulAlgoGetHeuristic");
  get(lib.matmul, "cublasLtMatmul");
  if (!ok)
    return nullptr;
  if (int status = lib.create(&blas->handle_); status != 0) {
    why = "cublasLtCreate failed (status " + std::to_string(status) + ")";
    return nullptr;
  }
  blas->description_ = "cuBLASLt " + std::to_string(lib.version()) + " (" + used + ")";
  return blas;
}

CudaBlas::~CudaBlas() {
  if (handle_)
    lib_->destroy(handle_);
}

CudaBlas::Result CudaBlas::run(const BlasPlan &plan, void *stream, void *workspace, uint64_t workspaceBytes,
                               std::string &error) {
  Library &lib = *lib_;
  // Descriptors are host objects, cheap to make; they are released however this returns.
  void *desc = nullptr, *layouts[3] = {nullptr, nullptr, nullptr};
  struct Release {
    Library &lib;
    void *&desc;
    void *(&layouts)[3];
    ~Release() {
      if (desc)
        lib.descDestroy(desc);
      for (void *l : layouts)
        if (l)
          lib.layoutDestroy(l);
    }
  } release{lib, desc, layouts};
  auto failed = [&](const char *what, int status) {
    error = std::string(what) + " failed (cuBLAS status " + std::to_string(status) + ")";
    return Result::Failed;
  };
  int status = lib.descCreate(&desc, kComputeF32, kTypeF32);
  if (status != 0)
    return failed("cublasLtMatmulDescCreate", status);
  const int32_t opA = plan.a.transposed ? kOpT : kOpN, opB = plan.b.transposed ? kOpT : kOpN;
  if ((status = lib.descSet(desc, kDescTransA, &opA, sizeof opA)) != 0 ||
      (status = lib.descSet(desc, kDescTransB, &opB, sizeof opB)) != 0)
    return failed("cublasLtMatmulDescSetAttribute", status);
  // The bias pointer before the heuristic, which picks kernels by its alignment.
  if (plan.epilogue != kEpilogueDefault &&
      ((status = lib.descSet(desc, kDescEpilogue, &plan.epilogue, sizeof plan.epilogue)) != 0 ||
       (plan.bias && (status = lib.descSet(desc, kDescBiasPointer, &plan.bias, sizeof plan.bias)) != 0)))
    return failed("cublasLtMatmulDescSetAttribute", status);
  const BlasMatrix *matrices[3] = {&plan.a, &plan.b, &plan.d};
  for (int i = 0; i < 3; ++i) {
    const BlasMatrix &x = *matrices[i];
    if ((status = lib.layoutCreate(&layouts[i], x.type, x.rows, x.cols, x.ld)) != 0)
      return failed("cublasLtMatrixLayoutCreate", status);
    if (plan.batch > 1 &&
        ((status = lib.layoutSet(layouts[i], kLayoutBatchCount, &plan.batch, sizeof plan.batch)) != 0 ||
         (status = lib.layoutSet(layouts[i], kLayoutBatchStride, &x.batchStride, sizeof x.batchStride)) != 0))
      return failed("cublasLtMatrixLayoutSetAttribute", status);
  }

  // The heuristic's choice, once per shape, layout and alignment.
  const std::vector<int64_t> key = {plan.a.type, plan.b.type, plan.d.type, plan.a.transposed, plan.b.transposed,
                                    int64_t(plan.a.rows), int64_t(plan.a.cols), plan.a.ld, int64_t(plan.b.rows),
                                    int64_t(plan.b.cols), plan.b.ld, int64_t(plan.d.rows), int64_t(plan.d.cols),
                                    plan.d.ld, plan.batch, plan.a.batchStride, plan.b.batchStride,
                                    plan.d.batchStride, plan.a.alignment, plan.b.alignment, plan.d.alignment,
                                    int64_t(workspaceBytes), plan.epilogue, plan.cSource != nullptr,
                                    plan.cAlignment, plan.biasAlignment};
  Algorithm algorithm;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = algorithms_.find(key);
    if (it != algorithms_.end()) {
      algorithm = it->second;
    } else {
      void *pref = nullptr;
      if (lib.prefCreate(&pref) == 0) {
        const uint32_t align[4] = {plan.a.alignment, plan.b.alignment,
                                   plan.cSource ? plan.cAlignment : plan.d.alignment, plan.d.alignment};
        bool set = lib.prefSet(pref, kPrefMaxWorkspace, &workspaceBytes, sizeof workspaceBytes) == 0;
        for (int i = 0; i < 4 && set; ++i)
          set = lib.prefSet(pref, kPrefMinAlignmentA + i, &align[i], sizeof align[i]) == 0;
        HeuristicResult result{};
        int count = 0;
        if (set && lib.heuristic(handle_, desc, layouts[0], layouts[1], layouts[2], layouts[2], pref, 1, &result,
                                 &count) == 0 &&
            count > 0 && result.state == 0) {
          algorithm.found = true;
          std::memcpy(algorithm.data, result.algo, sizeof algorithm.data);
        }
        lib.prefDestroy(pref);
      }
      algorithms_.emplace(key, algorithm);
    }
  }
  if (!algorithm.found)
    return Result::Declined;

  // One strided-batch call per index of the outer batch dims.
  int64_t calls = 1;
  for (int i = 0; i < plan.outerRank; ++i)
    calls *= plan.outer[i];
  for (int64_t call = 0; call < calls; ++call) {
    int64_t offset[3] = {0, 0, 0};
    for (int64_t i = plan.outerRank - 1, rest = call; i >= 0; --i) {
      const int64_t at = rest % plan.outer[i];
      rest /= plan.outer[i];
      for (int j = 0; j < 3; ++j)
        offset[j] += at * matrices[j]->outerStride[i] * elementBytes(matrices[j]->type);
    }
    const char *a = static_cast<const char *>(plan.a.data) + offset[0];
    const char *b = static_cast<const char *>(plan.b.data) + offset[1];
    char *d = const_cast<char *>(static_cast<const char *>(plan.d.data)) + offset[2];
    // C has D's layout: out of place it is another buffer at the same offsets.
    const char *c = plan.cSource ? static_cast<const char *>(plan.cSource) + offset[2] : d;
    if ((status = lib.matmul(handle_, desc, &plan.alpha, a, layouts[0], b, layouts[1], &plan.beta, c, layouts[2], d,
                             layouts[2], algorithm.data, workspace, workspaceBytes, stream)) != 0)
      return failed("cublasLtMatmul", status);
  }
  return Result::Done;
}

} // namespace kiln::runtime
