// Finds the graph-input dims that must be equal at run time and gives each group one symbol.
#include "passes/graph/Passes.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"

namespace kiln {
#define GEN_PASS_DEF_TIESYMBOLICDIMSPASS
#include "passes/graph/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// One dim of one value: (value, axis).
using DimKey = std::pair<void *, int64_t>;

struct TieSymbolicDimsPass : impl::TieSymbolicDimsPassBase<TieSymbolicDimsPass> {
  llvm::EquivalenceClasses<DimKey> classes;

  static DimKey key(Value v, int64_t axis) { return {v.getAsOpaquePointer(), axis}; }
  static bool isDynamic(Value v, int64_t axis) {
    auto t = cast<RankedTensorType>(v.getType());
    return axis >= 0 && axis < t.getRank() && t.isDynamicDim(axis);
  }
  void tie(Value a, int64_t i, Value b, int64_t j) {
    if (isDynamic(a, i) && isDynamic(b, j))
      classes.unionSets(key(a, i), key(b, j));
  }

  /// Numpy broadcasting: aligned dynamic dims meet; the result follows them.
  void tieBroadcast(Value result, ValueRange operands) {
    auto rt = cast<RankedTensorType>(result.getType());
    for (Value v : operands) {
      auto t = cast<RankedTensorType>(v.getType());
      for (int64_t j = 0; j < t.getRank(); ++j)
        tie(v, j, result, j + rt.getRank() - t.getRank());
    }
  }

  /// Ops whose result has the input's shape.
  void tieSameShape(Value result, Value input) {
    auto t = cast<RankedTensorType>(input.getType());
    if (t.getShape() != cast<RankedTensorType>(result.getType()).getShape())
      return;
    for (int64_t j = 0; j < t.getRank(); ++j)
      tie(input, j, result, j);
  }

  void visit(Operation *op) {
    using namespace graph;
    if (op->getNumResults() == 0)
      return;
    Value r = op->getResult(0);
    if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, PReluOp, AndOp, OrOp, XorOp, ModOp,
            EqualOp, LessOp, LessOrEqualOp, GreaterOp, GreaterOrEqualOp, WhereOp>(op)) {
      tieBroadcast(r, op->getOperands());
      return;
    }
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      auto a = cast<RankedTensorType>(mm.getLhs().getType());
      auto b = cast<RankedTensorType>(mm.getRhs().getType());
      int64_t ka = a.getRank() - 1, kb = b.getRank() == 1 ? 0 : b.getRank() - 2;
      tie(mm.getLhs(), ka, mm.getRhs(), kb);
      if (a.getRank() >= 2)
        tie(mm.getLhs(), a.getRank() - 2, r, cast<RankedTensorType>(r.getType()).getRank() - (b.getRank() == 1 ? 1 : 2));
      return;
    }
    if (auto at = dyn_cast<AttentionOp>(op)) {
      Value q = at.getQuery(), k = at.getKey(), v = at.getValue();
      int64_t rank = cast<RankedTensorType>(q.getType()).getRank();
      tie(q, rank - 1, k, rank - 1);
      tie(k, rank - 2, v, rank - 2);
      tie(v, rank - 1, r, rank - 1);
      for (int64_t i = 0; i < rank - 1; ++i)
        tie(q, i, r, i);
      for (int64_t i = 0; i + 2 < rank; ++i) {
        tie(q, i, k, i);
        tie(q, i, v, i);
      }
      // The mask meets the scores [batch..., Sq, Sk].
      if (Value m = at.getMask()) {
        int64_t mrank = cast<RankedTensorType>(m.getType()).getRank();
        for (int64_t j = 0; j < mrank; ++j) {
          int64_t i = j + rank - mrank;
          if (i == rank - 1)
            tie(m, j, k, rank - 2);
          else
            tie(m, j, q, i);
        }
      }
      return;
    }
    if (auto g = dyn_cast<GemmOp>(op)) {
      tie(g.getA(), g.getTransA() ? 0 : 1, g.getB(), g.getTransB() ? 1 : 0);
      tie(g.getA(), g.getTransA() ? 1 : 0, r, 0);
      tie(g.getB(), g.getTransB() ? 0 : 1, r, 1);
      // The bias C is added with broadcasting: a dynamic dim of it is read as
      // the result's.
      if (Value cv = g.getC())
        tieBroadcast(r, cv);
      return;
    }
    if (auto conv = dyn_cast<ConvOp>(op)) {
      tie(conv.getInput(), 0, r, 0);
      tie(conv.getWeight(), 0, r, 1);
      if (conv.getGroup() == 1)
        tie(conv.getInput(), 1, conv.getWeight(), 1);
      if (Value bias = conv.getBias())
        tie(bias, 0, r, 1);
      return;
    }
    // Per-channel parameters meet the input's channel axis.
    if (isa<BatchNormOp, InstanceNormOp>(op)) {
      tieSameShape(r, op->getOperand(0));
      for (Value param : op->getOperands().drop_front())
        tie(param, 0, op->getOperand(0), 1);
      return;
    }
    if (isa<ConvTransposeOp, MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp>(op)) {
      tie(op->getOperand(0), 0, r, 0);
      return;
    }
    // Elementwise-shaped ops: the result has the input's dims.
    if (op->getNumOperands() >= 1 && op->hasTrait<OpTrait::SameOperandsAndResultType>()) {
      tieSameShape(r, op->getOperand(0));
      return;
    }
    // Norms: the scale (and bias) broadcast against the input's trailing dims.
    if (isa<LayerNormOp, RmsNormOp>(op)) {
      tieSameShape(r, op->getOperand(0));
      for (Value param : op->getOperands().drop_front())
        tieBroadcast(r, param);
      return;
    }
    if (isa<SoftmaxOp, LogSoftmaxOp, GeluOp, CastOp, ClipOp>(op))
      tieSameShape(r, op->getOperand(0));
  }

  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main)
      return;
    main.walk([&](Operation *op) { visit(op); });

    // Group the graph inputs' dynamic dims by class.
    Builder b(&getContext());
    llvm::DenseMap<DimKey, std::string> nameOf; // class leader -> symbol
    int64_t fresh = 0;
    SmallVector<SmallVector<Attribute>> dims(main.getNumArguments());
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto names = main.getArgAttrOfType<ArrayAttr>(i, attrs::kDims);
      if (names)
        dims[i].assign(names.begin(), names.end());
    }
    // The class of every tied, dynamic input dim; how many input dims each
    // class holds; and the first name the model gave it.
    auto leaderOf = [&](unsigned i, int64_t axis) -> std::optional<DimKey> {
      Value arg = main.getArgument(i);
      if (!isDynamic(arg, axis) || !classes.contains(key(arg, axis)))
        return std::nullopt;
      return classes.getLeaderValue(key(arg, axis));
    };
    llvm::DenseMap<DimKey, int> inputDims;
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      for (auto [axis, name] : llvm::enumerate(dims[i]))
        if (auto leader = leaderOf(i, axis)) {
          ++inputDims[*leader];
          StringRef given = cast<StringAttr>(name).getValue();
          if (!given.empty() && !nameOf.count(*leader))
            nameOf[*leader] = given.str();
        }
    // Rewrite every input dim of a class that ties at least two of them (a
    // lone dim keeps its own name) to the class's symbol.
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      bool changed = false;
      for (int64_t axis = 0; axis < (int64_t)dims[i].size(); ++axis) {
        auto leader = leaderOf(i, axis);
        if (!leader || inputDims[*leader] < 2)
          continue;
        if (!nameOf.count(*leader))
          nameOf[*leader] = "dim_" + std::to_string(fresh++);
        if (cast<StringAttr>(dims[i][axis]).getValue() != nameOf[*leader]) {
          dims[i][axis] = b.getStringAttr(nameOf[*leader]);
          changed = true;
        }
      }
      if (changed)
        main.setArgAttr(i, attrs::kDims, b.getArrayAttr(dims[i]));
    }
  }
};
} // namespace
} // namespace kiln
