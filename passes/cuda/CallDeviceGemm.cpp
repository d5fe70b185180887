// Hands @main's matrix products to the runtime's gemm (cuBLASLt), keeping kiln's kernels as the fallback.
//
// A tuned vendor GEMM runs on tensor cores (f16/bf16) and is an order of magnitude faster than
// the one-thread-per-output loops kiln-form-gpu-launches makes. The runtime loads the library at
// run time; where it is missing, or refuses a layout, `gemm` returns nonzero and the original
// loop nest (now inside an scf.if) runs instead, so the artifact is correct on every machine.
//
// The elementwise op right after a product that adds a bias row and/or a residual to it, and/or
// applies ReLU (a Linear layer's bias, a transformer's residual connection), goes into the same
// call (`gemm_epilogue`: cuBLASLt's BIAS/RELU epilogues, the residual as C), so it is no launch
// of its own and the product is never written to memory and read back. So does a bias row that
// C starts from (Gemm's C, broadcast into the accumulator by a launch before the product).
#include "passes/cuda/Passes.h"
#include "passes/host/GemmEpilogue.h"
#include "passes/host/Passes.h"
#include "passes/host/RuntimeContext.h"
#include "passes/cuda/DeviceTransfers.h"
#include "passes/cuda/LaunchUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "runtime/include/kiln/abi.h"

#include <cstddef>

namespace kiln {
#define GEN_PASS_DEF_CALLDEVICEGEMMPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The kiln_abi_gemm field at `offset` (offsetof), as an index into its 8-byte slots.
constexpr int64_t slotOf(size_t offset) { return int64_t(offset / 8); }
constexpr int64_t kSlots = int64_t(sizeof(kiln_abi_gemm) / 8);
static_assert(sizeof(kiln_abi_gemm) % 8 == 0, "every kiln_abi_gemm field is 8 bytes");
constexpr int64_t kEpilogueSlots = int64_t(sizeof(kiln_abi_epilogue) / 8);
static_assert(sizeof(kiln_abi_epilogue) % 8 == 0, "every kiln_abi_epilogue field is 8 bytes");

/// The ONNX dtype code of a float type the runtime's gemm takes (0 for others).
int64_t dtypeCode(Type t) {
  if (t.isF32())
    return 1;
  if (t.isF16())
    return 10;
  if (t.isBF16())
    return 16;
  return 0;
}

/// What a contraction's body computes: c + (a * b) [* scale], a and b possibly widened first.
struct Body {
  Value scale;               // defined outside the generic, or null
  std::optional<double> constantScale; // an arith.constant inside the body
};

/// `v` is block argument `index`, possibly through an arith.extf; records the op.
bool isArgument(Value v, unsigned index, SmallPtrSetImpl<Operation *> &seen) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>()) {
    seen.insert(ext);
    v = ext.getIn();
  }
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getArgNumber() == index;
}

std::optional<Body> matchBody(linalg::GenericOp g) {
  Block &block = g.getRegion().front();
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  if (yield.getNumOperands() != 1)
    return std::nullopt;
  SmallPtrSet<Operation *, 8> seen = {yield};
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  seen.insert(add);
  auto isAccumulator = [](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getArgNumber() == 2;
  };
  Value prod = isAccumulator(add.getLhs()) ? add.getRhs() : add.getLhs();
  if (!isAccumulator(add.getLhs()) && !isAccumulator(add.getRhs()))
    return std::nullopt;
  auto mul = prod.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return std::nullopt;
  seen.insert(mul);
  Body body;
  auto isProduct = [&](arith::MulFOp m) {
    return (isArgument(m.getLhs(), 0, seen) && isArgument(m.getRhs(), 1, seen)) ||
           (isArgument(m.getLhs(), 1, seen) && isArgument(m.getRhs(), 0, seen));
  };
  if (!isProduct(mul)) {
    // (a * b) * scale, either way round.
    for (auto [inner, scale] : {std::pair{mul.getLhs(), mul.getRhs()}, std::pair{mul.getRhs(), mul.getLhs()}}) {
      auto m = inner.getDefiningOp<arith::MulFOp>();
      if (!m || !isProduct(m))
        continue;
      seen.insert(m);
      if (auto c = scale.getDefiningOp<arith::ConstantOp>()) {
        auto f = dyn_cast<FloatAttr>(c.getValue());
        if (!f)
          return std::nullopt;
        seen.insert(c);
        body.constantScale = f.getValueAsDouble();
      } else if (!g.getRegion().isAncestor(scale.getParentRegion())) {
        body.scale = scale;
      } else {
        return std::nullopt;
      }
      break;
    }
    if (!body.scale && !body.constantScale)
      return std::nullopt;
  }
  // Nothing else in the body (an index, a select, a fused epilogue).
  for (Operation &op : block)
    if (!seen.contains(&op))
      return std::nullopt;
  return body;
}

/// The roles of a contraction's loops, from its indexing maps.
struct Roles {
  int64_t k = -1, m = -1, n = -1;
  SmallVector<int64_t> batch; // in the output's order, outermost first
};

/// Result position of loop `dim` in `map`, or -1.
int64_t positionOf(AffineMap map, int64_t dim) {
  for (unsigned i = 0; i < map.getNumResults(); ++i)
    if (auto d = dyn_cast<AffineDimExpr>(map.getResult(i)); d && d.getPosition() == dim)
      return i;
  return -1;
}

std::optional<Roles> matchMaps(linalg::GenericOp g) {
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
  Roles r;
  for (auto [i, it] : llvm::enumerate(iters)) {
    if (it != utils::IteratorType::reduction)
      continue;
    if (r.k >= 0)
      return std::nullopt;
    r.k = i;
  }
  if (r.k < 0)
    return std::nullopt;
  // Operand maps hold loops once each or constant 0 (a broadcast dim of size 1); the output's
  // hold every parallel loop once.
  for (auto [i, map] : llvm::enumerate(maps)) {
    llvm::SmallBitVector used(g.getNumLoops());
    for (AffineExpr e : map.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        if (used.test(d.getPosition()))
          return std::nullopt;
        used.set(d.getPosition());
        continue;
      }
      auto c = dyn_cast<AffineConstantExpr>(e);
      if (i == 2 || !c || c.getValue() != 0)
        return std::nullopt;
    }
    if (i == 2 && (used.count() != g.getNumLoops() - 1 || used.test(r.k)))
      return std::nullopt;
    if (i < 2 && !used.test(r.k))
      return std::nullopt;
  }
  // The innermost loop only A has is m, the innermost only B has n; the others are batch
  // loops (the runtime folds a broadcast batch into m or n where the strides allow).
  for (AffineExpr e : llvm::reverse(maps[2].getResults())) {
    int64_t d = cast<AffineDimExpr>(e).getPosition();
    bool inA = positionOf(maps[0], d) >= 0, inB = positionOf(maps[1], d) >= 0;
    if (inA && !inB && r.m < 0)
      r.m = d;
    else if (inB && !inA && r.n < 0)
      r.n = d;
    else
      r.batch.insert(r.batch.begin(), d);
  }
  if (r.batch.size() > KILN_ABI_GEMM_MAX_BATCH)
    return std::nullopt;
  return r;
}

/// The linalg.fill of 0 that initializes `g`'s output just before it (nothing that touches
/// memory in between), or null.
linalg::FillOp zeroFillBefore(linalg::GenericOp g) {
  Operation *prev = g->getPrevNode();
  while (prev && touchesNoMemory(prev))
    prev = prev->getPrevNode();
  auto fill = dyn_cast_or_null<linalg::FillOp>(prev);
  if (!fill || fill.getDpsInitOperand(0)->get() != g.getDpsInitOperand(0)->get())
    return {};
  auto c = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  return f && f.getValue().isZero() ? fill : linalg::FillOp();
}

/// What kiln_abi_epilogue takes over from the elementwise op `op` after a product P:
/// out = act(P + bias[n] + residual), the adds in any order, act ReLU or nothing.
struct Epilogue {
  linalg::GenericOp op;      // null when the bias comes from the accumulator's initial value
  Value out, bias, residual; // the op's output; a row vector along the product's n; like P
  int64_t biasDim = 0;       // the bias's dim that runs along n (the others are 1)
  linalg::GenericOp biasInit; // the op that broadcast the bias into C before the product
  bool relu = false;
};

/// The position of `map`'s result that is loop `dim` when every other result is the constant 0
/// (a row vector along `dim`, maybe with leading unit dims), else -1.
int64_t rowVectorDim(AffineMap map, int64_t dim) {
  int64_t at = -1;
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == dim && at < 0) {
      at = int64_t(i);
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0)
      return -1;
  }
  return at;
}

/// The op right before product `g` (nothing that touches memory between) that fills its output
/// C with a row vector along n, broadcast (Gemm's C, the accumulator's initial value): the bias
/// of an epilogue with beta 0. Null otherwise.
linalg::GenericOp rowBroadcastBefore(linalg::GenericOp g, Value c, int64_t nPos, Value &bias, int64_t &biasDim) {
  Operation *prev = g->getPrevNode();
  while (prev && touchesNoMemory(prev))
    prev = prev->getPrevNode();
  auto init = dyn_cast_or_null<linalg::GenericOp>(prev);
  if (!init || !init.hasPureBufferSemantics() || init.getNumDpsInputs() != 1 || init.getNumDpsInits() != 1 ||
      init.getNumReductionLoops() != 0 || init.getDpsInitOperand(0)->get() != c ||
      !init.getMatchingIndexingMap(init.getDpsInitOperand(0)).isIdentity())
    return {};
  OpOperand *in = init.getDpsInputOperand(0);
  auto type = dyn_cast<MemRefType>(in->get().getType());
  int64_t dim = rowVectorDim(init.getMatchingIndexingMap(in), nPos);
  if (!type || type.getElementType() != cast<MemRefType>(c.getType()).getElementType() || dim < 0 ||
      cuda::isHostGlobal(in->get()))
    return {};
  // The body copies the input (no beta scaling, no cast).
  Block &body = init.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (body.getOperations().size() != 1 || yield.getOperand(0) != body.getArgument(0))
    return {};
  bias = in->get();
  biasDim = dim;
  return init;
}

/// `v` as max(x, 0) (kiln's Relu: select(x > 0, x, 0), or a maximum op): x, else null.
Value reluOperand(Value v, SmallPtrSetImpl<Operation *> &seen) {
  auto isZero = [](Value z) {
    auto c = z.getDefiningOp<arith::ConstantOp>();
    auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
    return f && f.getValue().isZero();
  };
  if (auto sel = v.getDefiningOp<arith::SelectOp>()) {
    auto cmp = sel.getCondition().getDefiningOp<arith::CmpFOp>();
    if (cmp && cmp.getPredicate() == arith::CmpFPredicate::OGT && cmp.getLhs() == sel.getTrueValue() &&
        isZero(cmp.getRhs()) && isZero(sel.getFalseValue())) {
      seen.insert(sel);
      seen.insert(cmp);
      seen.insert(cmp.getRhs().getDefiningOp());
      seen.insert(sel.getFalseValue().getDefiningOp());
      return sel.getTrueValue();
    }
    return {};
  }
  Operation *max = v.getDefiningOp();
  if (max && isa<arith::MaximumFOp, arith::MaxNumFOp>(max) && isZero(max->getOperand(1))) {
    seen.insert(max);
    seen.insert(max->getOperand(1).getDefiningOp());
    return max->getOperand(0);
  }
  return {};
}

/// The epilogue of product `g` (output `c`, its n loop at `nPos` of C), or nullopt: its marked
/// epilogue op (markedEpilogueOf: the only reader of the product), reading C where it writes
/// (identity maps) and nothing else but what it adds. (kiln-plan-memory kept the product's
/// operands live until that op; the runtime still declines an output that overlaps them.)
std::optional<Epilogue> matchEpilogue(linalg::GenericOp g, Value c, int64_t nPos) {
  linalg::GenericOp e = markedEpilogueOf(g);
  if (!e || !e.hasPureBufferSemantics() || e.getNumDpsInits() != 1 || e.getNumReductionLoops() != 0)
    return std::nullopt;
  Type et = cast<MemRefType>(c.getType()).getElementType();
  Epilogue ep;
  ep.op = e;
  ep.out = e.getDpsInitOperand(0)->get();
  auto outType = cast<MemRefType>(ep.out.getType());
  if (outType.getElementType() != et || outType.getRank() != cast<MemRefType>(c.getType()).getRank() ||
      !e.getMatchingIndexingMap(e.getDpsInitOperand(0)).isIdentity() || cuda::isHostGlobal(ep.out))
    return std::nullopt;
  // The inputs: C once (identity), at most one bias (the n loop only) and one residual (identity).
  int64_t productArg = -1, biasArg = -1, residualArg = -1;
  for (OpOperand *in : e.getDpsInputOperands()) {
    Value v = in->get();
    auto type = dyn_cast<MemRefType>(v.getType());
    AffineMap map = e.getMatchingIndexingMap(in);
    if (!type || type.getElementType() != et || cuda::isHostGlobal(v))
      return std::nullopt;
    int64_t index = in->getOperandNumber();
    if (v == c && map.isIdentity() && productArg < 0) {
      productArg = index;
    } else if (v != c && map.isIdentity() && residualArg < 0 && type.getLayout().isIdentity() &&
               outType.getLayout().isIdentity()) {
      // It is read with the output's strides: both dense, of one shape (the maps are identities).
      residualArg = index;
      ep.residual = v;
    } else if (v != c && rowVectorDim(map, nPos) >= 0 && biasArg < 0) {
      biasArg = index;
      ep.bias = v;
      ep.biasDim = rowVectorDim(map, nPos);
    } else {
      return std::nullopt;
    }
  }
  if (productArg < 0)
    return std::nullopt;
  // The body: an optional ReLU over a sum of the inputs, each exactly once.
  Block &body = e.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  SmallPtrSet<Operation *, 8> seen = {yield};
  Value sum = yield.getOperand(0);
  if (Value x = reluOperand(sum, seen)) {
    ep.relu = true;
    sum = x;
  }
  SmallVector<int64_t> leaves;
  SmallVector<Value> work = {sum};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == &body) {
      leaves.push_back(arg.getArgNumber());
      continue;
    }
    auto add = v.getDefiningOp<arith::AddFOp>();
    if (!add || add->getBlock() != &body || !seen.insert(add).second)
      return std::nullopt;
    work.push_back(add.getLhs());
    work.push_back(add.getRhs());
  }
  llvm::sort(leaves);
  SmallVector<int64_t> want = {productArg};
  for (int64_t i : {biasArg, residualArg})
    if (i >= 0)
      want.push_back(i);
  llvm::sort(want);
  if (leaves != want || int64_t(want.size()) != e.getNumDpsInputs())
    return std::nullopt;
  for (Operation &op : body)
    if (!seen.contains(&op))
      return std::nullopt;
  if (!ep.bias && !ep.residual && !ep.relu) // a copy: nothing for an epilogue to do
    return std::nullopt;
  return ep;
}

/// What product `g` (output `c`, its n loop at `nPos` of C) can do in its library call besides
/// the product: an epilogue op after it (when C holds the product alone, after its zero `fill`,
/// or a bias row broadcast into it, which then is the epilogue's bias), or that bias alone. The
/// beta term of a call with an epilogue op is its residual.
std::optional<Epilogue> chooseEpilogue(linalg::GenericOp g, Value c, int64_t nPos, linalg::FillOp fill) {
  Value initBias;
  int64_t initBiasDim = 0;
  linalg::GenericOp biasInit = fill ? linalg::GenericOp() : rowBroadcastBefore(g, c, nPos, initBias, initBiasDim);
  if (!fill && !biasInit)
    return std::nullopt;
  std::optional<Epilogue> epilogue = matchEpilogue(g, c, nPos);
  if (!biasInit)
    return epilogue;
  if (epilogue && epilogue->bias) // one bias per call: the op stays a kernel
    epilogue.reset();
  if (!epilogue) {
    epilogue = Epilogue{};
    epilogue->out = c;
  }
  epilogue->bias = initBias;
  epilogue->biasDim = initBiasDim;
  epilogue->biasInit = biasInit;
  return epilogue;
}

/// Stores `v` (an index as i64) into 8-byte slot `slot` of the host struct at `base`, on the host.
void storeSlot(OpBuilder &b, Location loc, Value base, int64_t slot, Value v) {
  auto i64 = b.getI64Type();
  if (v.getType().isIndex())
    v = arith::IndexCastOp::create(b, loc, i64, v);
  Value at = LLVM::GEPOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64, base,
                                 ArrayRef<LLVM::GEPArg>{int32_t(slot)});
  LLVM::StoreOp::create(b, loc, v, at)->setAttr(cuda::kHostOpAttr, b.getUnitAttr());
}

/// Fills a kiln_abi_epilogue at `epi` (before the call, at `b`) from `e`.
void storeEpilogue(OpBuilder &b, Location loc, Value epi, const Epilogue &e) {
  auto i64 = b.getI64Type();
  auto address = [&](Value buffer) -> Value {
    if (!buffer)
      return arith::ConstantIntOp::create(b, loc, i64, 0);
    return LLVM::PtrToIntOp::create(b, loc, i64, cuda::bufferAddress(b, loc, buffer));
  };
  storeSlot(b, loc, epi, slotOf(offsetof(kiln_abi_epilogue, c_source)), address(e.residual));
  storeSlot(b, loc, epi, slotOf(offsetof(kiln_abi_epilogue, bias)), address(e.bias));
  Value biasStride = arith::ConstantIndexOp::create(b, loc, 0);
  int64_t biasType = 0;
  if (e.bias) {
    biasStride = memref::ExtractStridedMetadataOp::create(b, loc, e.bias).getStrides()[e.biasDim];
    biasType = dtypeCode(cast<MemRefType>(e.bias.getType()).getElementType());
  }
  storeSlot(b, loc, epi, slotOf(offsetof(kiln_abi_epilogue, bias_type)), arith::ConstantIntOp::create(b, loc, i64, biasType));
  storeSlot(b, loc, epi, slotOf(offsetof(kiln_abi_epilogue, bias_stride)), biasStride);
  storeSlot(b, loc, epi, slotOf(offsetof(kiln_abi_epilogue, activation)),
            arith::ConstantIntOp::create(b, loc, i64, e.relu ? 1 : 0));
}

struct CallDeviceGemmPass : impl::CallDeviceGemmPassBase<CallDeviceGemmPass> {
  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.getNumArguments() == 0 || !main.getArgAttr(0, abi::kContextArg))
      return;
    // Top level of @main only: control flow around a product may become a kernel itself.
    SmallVector<linalg::GenericOp> products;
    for (Operation &op : main.getBody().front())
      if (auto g = dyn_cast<linalg::GenericOp>(op); g && g.hasPureBufferSemantics() && g.getNumDpsInputs() == 2 &&
                                                     g.getNumDpsInits() == 1)
        products.push_back(g);
    for (linalg::GenericOp g : products)
      rewrite(main, g);
  }

  void rewrite(func::FuncOp main, linalg::GenericOp g) {
    Value a = g.getDpsInputOperand(0)->get(), bv = g.getDpsInputOperand(1)->get(),
          c = g.getDpsInitOperand(0)->get();
    Type at = cast<MemRefType>(a.getType()).getElementType(), bt = cast<MemRefType>(bv.getType()).getElementType(),
         ct = cast<MemRefType>(c.getType()).getElementType();
    if (!dtypeCode(at) || at != bt || (ct != at && !ct.isF32()))
      return;
    // A constant of the host program lives in host memory, which cuBLASLt cannot read; such a
    // product (a small table times activations, e.g. rotary frequencies) stays a kernel, which
    // reads the constant from its own module.
    if (cuda::isHostGlobal(a) || cuda::isHostGlobal(bv) || cuda::isHostGlobal(c))
      return;
    std::optional<Body> body = matchBody(g);
    std::optional<Roles> roles = matchMaps(g);
    if (!body || !roles)
      return;
    linalg::FillOp fill = zeroFillBefore(g);
    std::optional<Epilogue> epilogue = chooseEpilogue(g, c, positionOf(g.getIndexingMapsArray()[2], roles->n), fill);
    linalg::GenericOp biasInit = epilogue ? epilogue->biasInit : linalg::GenericOp();
    Location loc = g.getLoc();
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);

    OpBuilder entry = OpBuilder::atBlockBegin(&main.getBody().front());
    Value count = LLVM::ConstantOp::create(entry, loc, i64, entry.getI64IntegerAttr(kSlots));
    Value args = LLVM::AllocaOp::create(entry, loc, ptr, i64, count, alignof(kiln_abi_gemm));

    // With an epilogue the call goes where the epilogue op was: what it uses (its output, a view
    // made after the product) is defined by then, and the ops passed over touch no memory.
    OpBuilder b(epilogue && epilogue->op ? epilogue->op.getOperation() : g.getOperation());
    auto host = [&](Operation *op) { op->setAttr(cuda::kHostOpAttr, b.getUnitAttr()); };
    auto store = [&](int64_t slot, Value v) { storeSlot(b, loc, args, slot, v); };
    auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
    auto bits = [&](Value f) { // a float as the bits of a double
      if (!f.getType().isF64())
        f = arith::ExtFOp::create(b, loc, b.getF64Type(), f);
      return arith::BitcastOp::create(b, loc, i64, f).getResult();
    };

    SmallVector<AffineMap> maps = g.getIndexingMapsArray();
    // With an epilogue the call writes its output, which has C's dims (identity maps).
    Value operands[3] = {a, bv, epilogue ? epilogue->out : c};
    SmallVector<memref::ExtractStridedMetadataOp> meta;
    for (Value v : operands)
      meta.push_back(memref::ExtractStridedMetadataOp::create(b, loc, v));
    // Operand i's stride along loop `dim` (0 when the loop does not index it), and a loop's size.
    auto stride = [&](int i, int64_t dim) -> Value {
      int64_t p = dim < 0 ? -1 : positionOf(maps[i], dim);
      return p < 0 ? constant(0) : meta[i].getStrides()[p];
    };
    auto size = [&](int64_t dim) -> Value {
      if (dim < 0)
        return constant(1);
      int64_t p = positionOf(maps[2], dim);
      if (p >= 0)
        return meta[2].getSizes()[p];
      return meta[0].getSizes()[positionOf(maps[0], dim)];
    };
    for (int i = 0; i < 3; ++i) {
      store(slotOf(offsetof(kiln_abi_gemm, a)) + i,
            LLVM::PtrToIntOp::create(b, loc, i64, cuda::bufferAddress(b, loc, operands[i])));
      store(slotOf(offsetof(kiln_abi_gemm, a_type)) + i,
            arith::ConstantIntOp::create(b, loc, i64, dtypeCode(cast<MemRefType>(operands[i].getType()).getElementType())));
    }
    store(slotOf(offsetof(kiln_abi_gemm, m)), size(roles->m));
    store(slotOf(offsetof(kiln_abi_gemm, n)), size(roles->n));
    store(slotOf(offsetof(kiln_abi_gemm, k)), size(roles->k));
    store(slotOf(offsetof(kiln_abi_gemm, a_stride_m)), stride(0, roles->m));
    store(slotOf(offsetof(kiln_abi_gemm, a_stride_k)), stride(0, roles->k));
    store(slotOf(offsetof(kiln_abi_gemm, b_stride_k)), stride(1, roles->k));
    store(slotOf(offsetof(kiln_abi_gemm, b_stride_n)), stride(1, roles->n));
    store(slotOf(offsetof(kiln_abi_gemm, c_stride_m)), stride(2, roles->m));
    store(slotOf(offsetof(kiln_abi_gemm, c_stride_n)), stride(2, roles->n));
    store(slotOf(offsetof(kiln_abi_gemm, batch_rank)), constant(int64_t(roles->batch.size())));
    for (auto [j, dim] : llvm::enumerate(roles->batch)) {
      store(slotOf(offsetof(kiln_abi_gemm, batch)) + j, size(dim));
      store(slotOf(offsetof(kiln_abi_gemm, a_stride_batch)) + j, stride(0, dim));
      store(slotOf(offsetof(kiln_abi_gemm, b_stride_batch)) + j, stride(1, dim));
      store(slotOf(offsetof(kiln_abi_gemm, c_stride_batch)) + j, stride(2, dim));
    }
    Value alpha = body->scale ? body->scale
                              : arith::ConstantFloatOp::create(b, loc, b.getF64Type(),
                                                               APFloat(body->constantScale.value_or(1.0)))
                                    .getResult();
    store(slotOf(offsetof(kiln_abi_gemm, alpha)), bits(alpha));
    const bool accumulates = (!fill && !biasInit) || (epilogue && epilogue->residual);
    store(slotOf(offsetof(kiln_abi_gemm, beta)),
          bits(arith::ConstantFloatOp::create(b, loc, b.getF64Type(), APFloat(accumulates ? 1.0 : 0.0))));

    Value context = main.getArgument(0);
    Value runtime = contextField(b, loc, context, ctxfield::kRuntime);
    host(runtime.getDefiningOp());
    LLVM::CallOp call;
    if (!epilogue) {
      Value fn = contextField(b, loc, context, ctxfield::kGemm);
      host(fn.getDefiningOp());
      auto type = LLVM::LLVMFunctionType::get(b.getI32Type(), {ptr, ptr});
      call = LLVM::CallOp::create(b, loc, type, ValueRange{fn, runtime, args});
    } else {
      Value epilogueCount = LLVM::ConstantOp::create(entry, loc, i64, entry.getI64IntegerAttr(kEpilogueSlots));
      Value epi = LLVM::AllocaOp::create(entry, loc, ptr, i64, epilogueCount, alignof(kiln_abi_epilogue));
      storeEpilogue(b, loc, epi, *epilogue);
      Value fn = contextField(b, loc, context, ctxfield::kGemmEpilogue);
      host(fn.getDefiningOp());
      auto type = LLVM::LLVMFunctionType::get(b.getI32Type(), {ptr, ptr, ptr});
      call = LLVM::CallOp::create(b, loc, type, ValueRange{fn, runtime, args, epi});
    }
    host(call);
    Value declined = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, call.getResult(),
                                           arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
    // Declined: kiln's own kernels compute the product (and the zero fill it needs).
    auto fallback = scf::IfOp::create(b, loc, declined, /*withElseRegion=*/false);
    Operation *end = fallback.thenBlock()->getTerminator();
    if (fill)
      fill->moveBefore(end);
    if (biasInit)
      biasInit->moveBefore(end);
    g->moveBefore(end);
    // The epilogue op follows.
    if (epilogue && epilogue->op)
      epilogue->op->moveBefore(end);
  }
};

} // namespace
} // namespace kiln
