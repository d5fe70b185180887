// Starts a reduction from what the elementwise op after it adds to its result (a bias, a residual).
//
// The GPU's int8/int4 products are reductions (one per output element) that cuBLASLt's epilogues
// do not cover, so the bias add and the residual add after them would each be a launch of its own
// that reads and writes the whole output again. A reduction that sums from zero, read only by an
// elementwise op that adds terms to it, computes the same sum started from those terms: the terms
// move into an elementwise op that writes the reduction's initial value (kiln-form-block-reductions
// then takes it into the reduction's launch, whose first thread computes it for its output), and
// the elementwise op reads the sum instead, or disappears when that is all it did. The additions
// are reassociated ((sum + bias) + residual becomes sum + (bias + residual), started from), so the
// result can round differently in the last bit. Contractions are left alone: their bias and
// residual go into cuBLASLt's epilogue (kiln-mark-gemm-epilogues).
#include "passes/cuda/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FOLDREDUCTIONADDENDSPASS
#include "passes/cuda/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

bool isAdd(Operation *op) { return isa_and_nonnull<arith::AddFOp, arith::AddIOp>(op); }

/// Whether `op` is a sum reduction into its only output: reduction loops, a body that yields
/// add(output, value), and no contraction (those go to cuBLASLt).
bool isSumReduction(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0 || !op.hasPureTensorSemantics() ||
      linalg::isaContractionOpInterface(op))
    return false;
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  Operation *sum = yield.getValues()[0].getDefiningOp();
  Value acc = op.getBody()->getArguments().back();
  return isAdd(sum) && sum->getBlock() == op.getBody() && (sum->getOperand(0) == acc || sum->getOperand(1) == acc) &&
         acc.hasOneUse();
}

/// Whether `v` is a linalg.fill of zero.
bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Value value = fill.getInputs()[0];
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

struct FoldAddendsPattern : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp reduction, PatternRewriter &rewriter) const override {
    if (!isSumReduction(reduction) || !isZeroFill(reduction.getDpsInits()[0]) || !reduction->getResult(0).hasOneUse())
      return failure();
    OpOperand &use = *reduction->getResult(0).getUses().begin();
    auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
    // In the same block, so that what the addends read before the consumer is also there before
    // the reduction when it is defined before it in that block (checked below).
    if (!consumer || consumer->getBlock() != reduction->getBlock() || consumer.getNumDpsInits() != 1 ||
        !consumer.isDpsInput(&use) || consumer.getNumReductionLoops() != 0 || !consumer.hasPureTensorSemantics())
      return failure();
    // The consumer reads the sum at the element it writes, and writes a tensor shaped like it.
    AffineMap map = consumer.getMatchingIndexingMap(&use);
    if (!map.isIdentity() || consumer.getIndexingMapMatchingResult(consumer->getResult(0)) != map ||
        consumer->getResult(0).getType() != reduction->getResult(0).getType())
      return failure();
    // The sum's block argument starts a chain of adds, each the only reader of the one before.
    Block *body = consumer.getBody();
    Value sum = body->getArgument(use.getOperandNumber());
    if (!body->getArgument(body->getNumArguments() - 1).use_empty())
      return failure();
    SmallVector<Value> addends;
    SmallVector<Operation *> chain;
    Value end = sum;
    while (end.hasOneUse() && isAdd(*end.getUsers().begin()) && end.getType() == sum.getType()) {
      Operation *add = *end.getUsers().begin();
      addends.push_back(add->getOperand(0) == end ? add->getOperand(1) : add->getOperand(0));
      chain.push_back(add);
      end = add->getResult(0);
    }
    if (addends.empty())
      return failure();

    // The initial value: the addends' sum, computed by the consumer's own ops over the inputs they
    // read, which must be there before the reduction.
    Location loc = consumer.getLoc();
    SetVector<Operation *> slice;
    for (Value a : addends)
      if (Operation *def = a.getDefiningOp(); def && def->getBlock() == body) {
        BackwardSliceOptions options;
        options.inclusive = true;
        options.omitBlockArguments = true;
        options.filter = [&](Operation *op) { return op->getBlock() == body; };
        (void)getBackwardSlice(def, &slice, options);
      }
    llvm::SmallDenseSet<Value> read;
    for (Value a : addends)
      read.insert(a);
    for (Operation *op : slice)
      for (Value v : op->getOperands())
        read.insert(v);
    SmallVector<Value> inputs, reads;
    SmallVector<AffineMap> maps;
    for (OpOperand *input : consumer.getDpsInputOperands()) {
      Value arg = body->getArgument(input->getOperandNumber());
      if (input == &use || !read.contains(arg))
        continue;
      Operation *def = input->get().getDefiningOp();
      Operation *at = def ? reduction->getBlock()->findAncestorOpInBlock(*def) : nullptr;
      if (at && (at == reduction.getOperation() || reduction->isBeforeInBlock(at)))
        return rewriter.notifyMatchFailure(consumer, "an addend is computed after the reduction");
      inputs.push_back(input->get());
      reads.push_back(arg);
      maps.push_back(consumer.getMatchingIndexingMap(input));
    }
    maps.push_back(map);
    Value dest = reduction.getDpsInits()[0].getDefiningOp<linalg::FillOp>().getOutputs()[0];
    auto init = linalg::GenericOp::create(
        rewriter, loc, dest.getType(), inputs, ValueRange{dest}, maps, consumer.getIteratorTypesArray(),
        [&](OpBuilder &b, Location l, ValueRange args) {
          IRMapping mapping;
          mapping.map(reads, args.take_front(reads.size()));
          for (Operation &op : body->without_terminator())
            if (slice.contains(&op))
              b.clone(op, mapping);
          Value total = mapping.lookupOrDefault(addends.front());
          for (Value a : ArrayRef<Value>(addends).drop_front())
            total = isa<FloatType>(total.getType()) ? (Value)arith::AddFOp::create(b, l, total, mapping.lookupOrDefault(a))
                                                    : (Value)arith::AddIOp::create(b, l, total, mapping.lookupOrDefault(a));
          linalg::YieldOp::create(b, l, total);
        });
    rewriter.modifyOpInPlace(reduction, [&] { reduction.getDpsInitsMutable()[0].set(init->getResult(0)); });
    // The consumer now reads the started sum where it read the chain's end.
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    if (yield.getValues()[0] == end) {
      rewriter.replaceOp(consumer, reduction->getResult(0));
      return success();
    }
    rewriter.modifyOpInPlace(consumer, [&] {
      end.replaceAllUsesWith(sum);
      for (Operation *add : llvm::reverse(chain))
        add->erase();
    });
    return success();
  }
};

struct FoldReductionAddendsPass : impl::FoldReductionAddendsPassBase<FoldReductionAddendsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldAddendsPattern>(&getContext());
    // The consumer's inputs that only the addends read go.
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
