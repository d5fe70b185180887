// graph ops whose result size depends on tensor data (NonZero, Compress, Unique, NonMaxSuppression) -> host loops.
//
// Each lowering counts in a first sequential pass (scf.for over tensors in @main, extracting scalars), allocates
// the result with that count (a dynamic tensor.empty), then fills it in a second pass in the order ONNX
// defines; element copies that do not depend on order are one parallel linalg.generic. See
// docs/dynamic-shapes.md.
#include "passes/conversion/LoweringUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

using utils::IteratorType;
using LoopBody = function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>;
using Predicate = function_ref<Value(OpBuilder &, Location, Value)>;

Value cst(OpBuilder &b, Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
Value i64Cst(OpBuilder &b, Location loc, int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 64); }
Value boolCst(OpBuilder &b, Location loc, bool v) { return arith::ConstantIntOp::create(b, loc, v, 1); }
Value toI64(OpBuilder &b, Location loc, Value v) { return arith::IndexCastOp::create(b, loc, b.getI64Type(), v); }
Value toIndex(OpBuilder &b, Location loc, Value v) { return arith::IndexCastOp::create(b, loc, b.getIndexType(), v); }
Value add(OpBuilder &b, Location loc, Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
Value eq(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
}
Value select(OpBuilder &b, Location loc, Value c, Value x, Value y) { return arith::SelectOp::create(b, loc, c, x, y); }
Value extract(OpBuilder &b, Location loc, Value t, ValueRange at) { return tensor::ExtractOp::create(b, loc, t, at); }
Value insert(OpBuilder &b, Location loc, Value v, Value t, ValueRange at) {
  return tensor::InsertOp::create(b, loc, v, t, at);
}


Value productOf(OpBuilder &b, Location loc, ArrayRef<Value> dims) {
  Value p = cst(b, loc, 1);
  for (Value d : dims)
    p = arith::MulIOp::create(b, loc, p, d);
  return p;
}

/// Row-major coordinates of the flat position `flat` in a tensor of `dims`.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value flat, ArrayRef<Value> dims) {
  SmallVector<Value> coords(dims.size());
  for (int64_t i = (int64_t)dims.size() - 1; i >= 0; --i) {
    coords[i] = arith::RemUIOp::create(b, loc, flat, dims[i]);
    flat = arith::DivUIOp::create(b, loc, flat, dims[i]);
  }
  return coords;
}

/// An scf.for over [lb, ub) carrying `init`; `body` returns the next values.
SmallVector<Value> forLoop(OpBuilder &b, Location loc, Value lb, Value ub, ValueRange init, LoopBody body) {
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, cst(b, loc, 1), init,
      [&](OpBuilder &nb, Location l, Value iv, ValueRange acc) { scf::YieldOp::create(nb, l, body(nb, l, iv, acc)); });
  return SmallVector<Value>(loop.getResults());
}

/// `then`'s values where `cond` holds, else `otherwise` unchanged.
SmallVector<Value> ifThen(OpBuilder &b, Location loc, Value cond, ValueRange otherwise,
                          function_ref<SmallVector<Value>(OpBuilder &, Location)> then) {
  auto op = scf::IfOp::create(
      b, loc, cond, [&](OpBuilder &tb, Location l) { scf::YieldOp::create(tb, l, then(tb, l)); },
      [&](OpBuilder &eb, Location l) { scf::YieldOp::create(eb, l, otherwise); });
  return SmallVector<Value>(op.getResults());
}

/// The first pass: how many j in [0, n) satisfy `pred`.
Value countWhere(OpBuilder &b, Location loc, Value n, Predicate pred) {
  return forLoop(b, loc, cst(b, loc, 0), n, {cst(b, loc, 0)},
                 [&](OpBuilder &nb, Location l, Value j, ValueRange acc) -> SmallVector<Value> {
                   Value one = select(nb, l, pred(nb, l, j), cst(nb, l, 1), cst(nb, l, 0));
                   return {add(nb, l, acc[0], one)};
                 })[0];
}

/// The second pass: `write(t, j, pos)` for the pos-th j in [0, n) that satisfies `pred`, in order.
Value fillWhere(OpBuilder &b, Location loc, Value n, Value init, Predicate pred,
                function_ref<Value(OpBuilder &, Location, Value, Value, Value)> write) {
  return forLoop(b, loc, cst(b, loc, 0), n, {init, cst(b, loc, 0)},
                 [&](OpBuilder &nb, Location l, Value j, ValueRange acc) {
                   return ifThen(nb, l, pred(nb, l, j), acc, [&](OpBuilder &tb, Location tl) -> SmallVector<Value> {
                     return {write(tb, tl, acc[0], j, acc[1]), add(tb, tl, acc[1], cst(tb, tl, 1))};
                   });
                 })[0];
}

/// The positions j in [0, n) that satisfy `pred`, ascending, as tensor<?xi64>.
Value selectedPositions(OpBuilder &b, Location loc, Value n, Predicate pred) {
  Value count = countWhere(b, loc, n, pred);
  Value init =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{ShapedType::kDynamic}, b.getI64Type(), ValueRange{count});
  return fillWhere(b, loc, n, init, pred, [](OpBuilder &nb, Location l, Value t, Value j, Value pos) {
    return insert(nb, l, toI64(nb, l, j), t, {pos});
  });
}


/// ONNX's truth of a value: non-zero (a NaN counts as non-zero, as in numpy).
Value isNonZero(OpBuilder &b, Location loc, Value v) {
  Type t = v.getType();
  if (isa<FloatType>(t))
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, scalarConstant(b, loc, t, 0));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, arith::ConstantIntOp::create(b, loc, t, 0));
}

struct NonZeroPattern : OpConversionPattern<NonZeroOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(NonZeroOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    SmallVector<Value> dims = dimsOf(rewriter, loc, x);
    Value n = productOf(rewriter, loc, dims);
    auto pred = [&](OpBuilder &b, Location l, Value j) {
      return isNonZero(b, l, extract(b, l, x, delinearize(b, l, j, dims)));
    };
    Value count = countWhere(rewriter, loc, n, pred);
    auto rt = cast<RankedTensorType>(op.getType());
    Value init = emptyTensor(rewriter, loc, rt, {cst(rewriter, loc, dims.size()), count});
    Value result = fillWhere(rewriter, loc, n, init, pred, [&](OpBuilder &b, Location l, Value t, Value j, Value pos) {
      SmallVector<Value> coords = delinearize(b, l, j, dims);
      for (auto [d, c] : llvm::enumerate(coords))
        t = insert(b, l, toI64(b, l, c), t, {cst(b, l, d), pos});
      return t;
    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Compress as the ascending positions of the true conditions (host passes),
/// then one parallel gather of the selected slices (or flattened elements).
struct CompressPattern : OpConversionPattern<CompressOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CompressOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput(), cond = adaptor.getCondition();
    auto xt = cast<RankedTensorType>(x.getType());
    SmallVector<Value> dims = dimsOf(rewriter, loc, x);
    std::optional<int64_t> axis;
    if (op.getAxis())
      axis = wrapAxis(*op.getAxis(), xt.getRank());
    Value n = axis ? dims[*axis] : productOf(rewriter, loc, dims);
    // Entries beyond the condition's end select nothing, and (verified only
    // when static) a longer condition's tail is never read past the data.
    Value length = arith::MinSIOp::create(rewriter, loc, n, dimValue(rewriter, loc, cond, 0));
    Value positions = selectedPositions(rewriter, loc, length,
                                        [&](OpBuilder &b, Location l, Value j) { return extract(b, l, cond, {j}); });
    Value count = tensor::DimOp::create(rewriter, loc, positions, 0);
    SmallVector<Value> outDims = axis ? dims : SmallVector<Value>{};
    if (axis)
      outDims[*axis] = count;
    else
      outDims.push_back(count);
    auto rt = cast<RankedTensorType>(op.getType());
    Value result = generate(rewriter, loc, rt, outDims, [&](OpBuilder &b, Location l, ArrayRef<Value> at) {
      SmallVector<Value> coords(at);
      Value src = toIndex(b, l, extract(b, l, positions, {coords[axis.value_or(0)]}));
      if (axis)
        coords[*axis] = src;
      else
        coords = delinearize(b, l, src, dims);
      return extract(b, l, x, coords);
    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Unique in host passes over the n slices (elements when flattened), each
/// compared whole: first[i], the first slice equal to slice i; then each
/// first occurrence's rank (slices ordered before it, or first occurrences
/// before it when unsorted), which counts the distinct ones; then indices,
/// counts and inverse indices in one pass; then y as a parallel gather.
/// O(n^2) comparisons: meant for the small tensors Unique sees in models.
struct UniquePattern : OpConversionPattern<UniqueOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(UniqueOp op, OpAdaptor adaptor, ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto xt = cast<RankedTensorType>(x.getType());
    Type et = xt.getElementType();
    SmallVector<Value> dims = dimsOf(rewriter, loc, x);
    std::optional<int64_t> axis;
    if (op.getAxis())
      axis = wrapAxis(*op.getAxis(), xt.getRank());
    SmallVector<Value> sliceDims(dims);
    Value n;
    if (axis) {
      n = dims[*axis];
      sliceDims.erase(sliceDims.begin() + *axis);
    } else {
      n = productOf(rewriter, loc, dims);
    }
    Value s = productOf(rewriter, loc, sliceDims);
    Value zero = cst(rewriter, loc, 0), one = cst(rewriter, loc, 1);

    auto element = [&](OpBuilder &b, Location l, Value i, Value e) {
      if (!axis)
        return extract(b, l, x, delinearize(b, l, i, dims));
      SmallVector<Value> coords = delinearize(b, l, e, sliceDims);
      coords.insert(coords.begin() + *axis, i);
      return extract(b, l, x, coords);
    };
    auto notEqual = [&](OpBuilder &b, Location l, Value u, Value v) -> Value {
      if (isa<FloatType>(et))
        return arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, u, v);
      return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, u, v);
    };
    auto lessThan = [&](OpBuilder &b, Location l, Value u, Value v) -> Value {
      if (isa<FloatType>(et))
        return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, u, v);
      // false < true for bools, signed order for the other integers.
      return arith::CmpIOp::create(b, l, et.isInteger(1) ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt, u, v);
    };
    // Slice j against slice i: {j sorts before i, j equals i}, lexicographic
    // over the slice's row-major elements.
    auto compare = [&](OpBuilder &b, Location l, Value j, Value i) -> std::pair<Value, Value> {
      auto step = [&](OpBuilder &sb, Location sl, Value e, ValueRange acc) -> SmallVector<Value> {
        Value u = element(sb, sl, j, e), v = element(sb, sl, i, e);
        Value less = select(sb, sl, acc[0], acc[1], lessThan(sb, sl, u, v));
        return {arith::OrIOp::create(sb, sl, acc[0], notEqual(sb, sl, u, v)), less};
      };
      SmallVector<Value> init{boolCst(b, l, false), boolCst(b, l, false)};
      SmallVector<Value> r = axis ? forLoop(b, l, cst(b, l, 0), s, init, step) : step(b, l, cst(b, l, 0), init);
      return {r[1], arith::XOrIOp::create(b, l, r[0], boolCst(b, l, true))};
    };
    auto vectorOf = [&](Value size) {
      return tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{ShapedType::kDynamic}, rewriter.getI64Type(),
                                     ValueRange{size})
          .getResult();
    };
    auto isFirst = [&](OpBuilder &b, Location l, Value first, Value i) {
      return eq(b, l, toIndex(b, l, extract(b, l, first, {i})), i);
    };

    Value first = forLoop(rewriter, loc, zero, n, {vectorOf(n)},
                          [&](OpBuilder &b, Location l, Value i, ValueRange acc) -> SmallVector<Value> {
                            Value f =
                                forLoop(b, l, cst(b, l, 0), i, {i},
                                        [&](OpBuilder &jb, Location jl, Value j, ValueRange fa) -> SmallVector<Value> {
                                          Value take = arith::AndIOp::create(jb, jl, compare(jb, jl, j, i).second,
                                                                             eq(jb, jl, fa[0], i));
                                          return {select(jb, jl, take, j, fa[0])};
                                        })[0];
                            return {insert(b, l, toI64(b, l, f), acc[0], {i})};
                          })[0];

    bool sorted = op.getSorted() != 0;
    SmallVector<Value> ranked =
        forLoop(rewriter, loc, zero, n, {vectorOf(n), zero}, [&](OpBuilder &b, Location l, Value i, ValueRange acc) {
          return ifThen(b, l, isFirst(b, l, first, i), acc, [&](OpBuilder &tb, Location tl) -> SmallVector<Value> {
            Value r = acc[1];
            if (sorted)
              r = forLoop(tb, tl, cst(tb, tl, 0), n, {cst(tb, tl, 0)},
                          [&](OpBuilder &jb, Location jl, Value j, ValueRange c) -> SmallVector<Value> {
                            Value before =
                                arith::AndIOp::create(jb, jl, isFirst(jb, jl, first, j), compare(jb, jl, j, i).first);
                            return {add(jb, jl, c[0], select(jb, jl, before, cst(jb, jl, 1), cst(jb, jl, 0)))};
                          })[0];
            return {insert(tb, tl, toI64(tb, tl, r), acc[0], {i}), add(tb, tl, acc[1], cst(tb, tl, 1))};
          });
        });
    Value ranks = ranked[0], distinct = ranked[1];

    auto invType = cast<RankedTensorType>(op.getInverseIndices().getType());
    Value counts0 = filledTensor(rewriter, loc, cast<RankedTensorType>(op.getCounts().getType()), {distinct},
                                 i64Cst(rewriter, loc, 0));
    SmallVector<Value> outs =
        forLoop(rewriter, loc, zero, n, {vectorOf(distinct), counts0, emptyTensor(rewriter, loc, invType, {n})},
                [&](OpBuilder &b, Location l, Value i, ValueRange acc) -> SmallVector<Value> {
                  Value f = toIndex(b, l, extract(b, l, first, {i}));
                  Value r = extract(b, l, ranks, {f}), ri = toIndex(b, l, r);
                  Value inverse = insert(b, l, r, acc[2], {i});
                  Value c = add(b, l, extract(b, l, acc[1], {ri}), i64Cst(b, l, 1));
                  Value counts = insert(b, l, c, acc[1], {ri});
                  Value indices =
                      ifThen(b, l, eq(b, l, f, i), {acc[0]}, [&](OpBuilder &tb, Location tl) -> SmallVector<Value> {
                        return {insert(tb, tl, toI64(tb, tl, i), acc[0], {ri})};
                      })[0];
                  return {indices, counts, inverse};
                });

    SmallVector<Value> yDims = axis ? dims : SmallVector<Value>{};
    if (axis)
      yDims[*axis] = distinct;
    else
      yDims.push_back(distinct);
    Value indices = outs[0];
    Value y = generate(rewriter, loc, cast<RankedTensorType>(op.getY().getType()), yDims,
                       [&](OpBuilder &b, Location l, ArrayRef<Value> at) {
      SmallVector<Value> coords(at);
                         Value src = toIndex(b, l, extract(b, l, indices, {coords[axis.value_or(0)]}));
                         if (axis)
                           coords[*axis] = src;
                         else
                           coords = delinearize(b, l, src, dims);
                         return extract(b, l, x, coords);
                       });
    rewriter.replaceOp(op, ValueRange{y, indices, outs[2], outs[1]});
    return success();
  }
};

/// The scalar pieces of NonMaxSuppression's first pass, for one batch `bi`.
/// `order[b, c, box]` is -2 while the box is a candidate (score above the
/// threshold), -1 once dropped, k once it is the k-th selected.
struct NmsBuilder {
  Value boxes, scores, count, maxBoxes, iouThreshold, scoreThreshold;
  bool center;

  Value fcmp(OpBuilder &b, Location l, arith::CmpFPredicate p, Value x, Value y) const {
    return arith::CmpFOp::create(b, l, p, x, y);
  }

  /// {ymin, xmin, ymax, xmax} of box `i`.
  SmallVector<Value> corners(OpBuilder &b, Location l, Value bi, Value i) const {
    SmallVector<Value> c;
    for (int64_t k = 0; k < 4; ++k)
      c.push_back(extract(b, l, boxes, {bi, i, cst(b, l, k)}));
    if (center) {
      Value half = scalarConstant(b, l, b.getF32Type(), 0.5);
      Value hw = arith::MulFOp::create(b, l, c[2], half), hh = arith::MulFOp::create(b, l, c[3], half);
      return {arith::SubFOp::create(b, l, c[1], hh), arith::SubFOp::create(b, l, c[0], hw),
              arith::AddFOp::create(b, l, c[1], hh), arith::AddFOp::create(b, l, c[0], hw)};
    }
    return {arith::MinimumFOp::create(b, l, c[0], c[2]), arith::MinimumFOp::create(b, l, c[1], c[3]),
            arith::MaximumFOp::create(b, l, c[0], c[2]), arith::MaximumFOp::create(b, l, c[1], c[3])};
  }

  /// IoU(i, j) > threshold; boxes without area or overlap never suppress.
  Value suppresses(OpBuilder &b, Location l, Value bi, Value i, Value j) const {
    SmallVector<Value> p = corners(b, l, bi, i), q = corners(b, l, bi, j);
    Value zero = scalarConstant(b, l, b.getF32Type(), 0);
    auto side = [&](int64_t lo, int64_t hi) -> Value {
      Value d = arith::SubFOp::create(b, l, arith::MinimumFOp::create(b, l, p[hi], q[hi]),
                                      arith::MaximumFOp::create(b, l, p[lo], q[lo]));
      return arith::MaximumFOp::create(b, l, d, zero);
    };
    auto area = [&](ArrayRef<Value> c) -> Value {
      return arith::MulFOp::create(b, l, arith::SubFOp::create(b, l, c[2], c[0]),
                                   arith::SubFOp::create(b, l, c[3], c[1]));
    };
    Value inter = arith::MulFOp::create(b, l, side(0, 2), side(1, 3));
    Value ap = area(p), aq = area(q);
    Value uni = arith::SubFOp::create(b, l, arith::AddFOp::create(b, l, ap, aq), inter);
    Value valid = fcmp(b, l, arith::CmpFPredicate::OGT, ap, zero);
    for (Value v : {aq, inter, uni})
      valid = arith::AndIOp::create(b, l, valid, fcmp(b, l, arith::CmpFPredicate::OGT, v, zero));
    Value iou = arith::DivFOp::create(b, l, inter, uni);
    return arith::AndIOp::create(b, l, valid, fcmp(b, l, arith::CmpFPredicate::OGT, iou, iouThreshold));
  }

  /// Runs the greedy selection of class `ci` into `order`; returns the new
  /// order and how many boxes were selected.
  SmallVector<Value> selectClass(OpBuilder &b, Location l, Value bi, Value ci, Value order) const {
    auto at = [&](Value box) { return SmallVector<Value>{bi, ci, box}; };
    auto isCandidate = [&](OpBuilder &nb, Location nl, Value o, Value i) {
      return eq(nb, nl, extract(nb, nl, o, at(i)), i64Cst(nb, nl, -2));
    };
    order = forLoop(b, l, cst(b, l, 0), count, {order},
                    [&](OpBuilder &nb, Location nl, Value i, ValueRange o) -> SmallVector<Value> {
                      Value keep =
                          fcmp(nb, nl, arith::CmpFPredicate::OGT, extract(nb, nl, scores, at(i)), scoreThreshold);
                      Value v = select(nb, nl, keep, i64Cst(nb, nl, -2), i64Cst(nb, nl, -1));
                      return {insert(nb, nl, v, o[0], at(i))};
                    })[0];
    // The best candidate of `o` (ties to the lower index), or `count` when none is left.
    auto best = [&](OpBuilder &nb, Location nl, Value o) {
      return forLoop(nb, nl, cst(nb, nl, 0), count, {count, scalarConstant(nb, nl, nb.getF32Type(), 0)},
                     [&](OpBuilder &ib, Location il, Value i, ValueRange bs) -> SmallVector<Value> {
                       Value s = extract(ib, il, scores, at(i));
                       Value better = arith::OrIOp::create(ib, il, eq(ib, il, bs[0], count),
                                                           fcmp(ib, il, arith::CmpFPredicate::OGT, s, bs[1]));
                       better = arith::AndIOp::create(ib, il, better, isCandidate(ib, il, o, i));
                       return {select(ib, il, better, i, bs[0]), select(ib, il, better, s, bs[1])};
                     })[0];
    };
    // Selects `pick` as the k-th box and drops the candidates it overlaps.
    auto take = [&](OpBuilder &nb, Location nl, Value o, Value pick, Value k) {
      o = insert(nb, nl, toI64(nb, nl, k), o, at(pick));
      return forLoop(nb, nl, cst(nb, nl, 0), count, {o}, [&](OpBuilder &ib, Location il, Value i, ValueRange oo) {
        Value drop = arith::AndIOp::create(ib, il, isCandidate(ib, il, oo[0], i), suppresses(ib, il, bi, pick, i));
        return ifThen(ib, il, drop, oo, [&](OpBuilder &db, Location dl) -> SmallVector<Value> {
          return {insert(db, dl, i64Cst(db, dl, -1), oo[0], at(i))};
        });
      })[0];
    };
    // Steps carry (order, no candidate left, selected so far).
    SmallVector<Value> steps =
        forLoop(b, l, cst(b, l, 0), maxBoxes, {order, boolCst(b, l, false), cst(b, l, 0)},
                [&](OpBuilder &sb, Location sl, Value k, ValueRange st) {
                  Value live = arith::XOrIOp::create(sb, sl, st[1], boolCst(sb, sl, true));
                  return ifThen(sb, sl, live, st, [&](OpBuilder &tb, Location tl) {
                    Value pick = best(tb, tl, st[0]);
                    Value found = arith::CmpIOp::create(tb, tl, arith::CmpIPredicate::ne, pick, count);
                    SmallVector<Value> exhausted{st[0], boolCst(tb, tl, true), st[2]};
                    return ifThen(tb, tl, found, exhausted, [&](OpBuilder &fb, Location fl) -> SmallVector<Value> {
                      return {take(fb, fl, st[0], pick, k), st[1], add(fb, fl, st[2], cst(fb, fl, 1))};
                    });
                  });
                });
    return {steps[0], steps[2]};
  }
};

/// NonMaxSuppression in two host passes. The first runs the greedy selection
/// of every (batch, class) into order[b, c, box] (NmsBuilder), each step
/// taking the best candidate and dropping those it overlaps, and sums the
/// selected counts. The second writes the rows [b, c, box] of the selected
/// boxes at their batch/class offset plus their selection index.
struct NonMaxSuppressionPattern : OpConversionPattern<NonMaxSuppressionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(NonMaxSuppressionOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value boxes = adaptor.getBoxes(), scores = adaptor.getScores();
    Value batches = dimValue(rewriter, loc, boxes, 0), count = dimValue(rewriter, loc, boxes, 1);
    Value classes = dimValue(rewriter, loc, scores, 1);
    auto first = [&](Value t) {
      SmallVector<Value> at(cast<RankedTensorType>(t.getType()).getRank(), cst(rewriter, loc, 0));
      return extract(rewriter, loc, t, at);
    };
    Value maxBoxes = toIndex(rewriter, loc, first(adaptor.getMaxOutputBoxesPerClass()));
    maxBoxes = arith::MinSIOp::create(rewriter, loc,
                                      arith::MaxSIOp::create(rewriter, loc, maxBoxes, cst(rewriter, loc, 0)), count);
    NmsBuilder nms{boxes,
                   scores,
                   count,
                   maxBoxes,
                   first(adaptor.getIouThreshold()),
                   first(adaptor.getScoreThreshold()),
                   op.getCenterPointBox() == 1};

    // Every (batch, class) in order, carrying `init` through `body`.
    auto eachClass = [&](ValueRange init,
                         function_ref<SmallVector<Value>(OpBuilder &, Location, Value, Value, ValueRange)> body) {
      return forLoop(rewriter, loc, cst(rewriter, loc, 0), batches, init,
                     [&](OpBuilder &b, Location l, Value bi, ValueRange acc) {
                       return forLoop(b, l, cst(b, l, 0), classes, acc,
                                      [&](OpBuilder &cb, Location cl, Value ci, ValueRange acc2) {
                                        return body(cb, cl, bi, ci, acc2);
                                      });
                     });
    };
    auto orderType = RankedTensorType::get(cast<RankedTensorType>(scores.getType()).getShape(), rewriter.getI64Type());
    Value order0 = emptyTensor(rewriter, loc, orderType, {batches, classes, count});
    SmallVector<Value> pass1 =
        eachClass({order0, cst(rewriter, loc, 0)}, [&](OpBuilder &b, Location l, Value bi, Value ci, ValueRange acc) {
          SmallVector<Value> r = nms.selectClass(b, l, bi, ci, acc[0]);
          return SmallVector<Value>{r[0], add(b, l, acc[1], r[1])};
        });
    Value order = pass1[0], total = pass1[1];

    auto rt = cast<RankedTensorType>(op.getType());
    Value out0 = emptyTensor(rewriter, loc, rt, {total, cst(rewriter, loc, 3)});
    Value result =
        eachClass({out0, cst(rewriter, loc, 0)}, [&](OpBuilder &b, Location l, Value bi, Value ci, ValueRange acc) {
          SmallVector<Value> row =
              forLoop(b, l, cst(b, l, 0), count, {acc[0], cst(b, l, 0)},
                      [&](OpBuilder &nb, Location nl, Value i, ValueRange st) {
                        Value k = extract(nb, nl, order, {bi, ci, i});
                        Value selected = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, k, i64Cst(nb, nl, 0));
                        return ifThen(nb, nl, selected, st, [&](OpBuilder &tb, Location tl) -> SmallVector<Value> {
                          Value r = add(tb, tl, acc[1], toIndex(tb, tl, k));
                          Value t = st[0];
                          SmallVector<Value> where{bi, ci, i};
                          for (auto [d, v] : llvm::enumerate(where))
                            t = insert(tb, tl, toI64(tb, tl, v), t, {r, cst(tb, tl, d)});
                          return {t, add(tb, tl, st[1], cst(tb, tl, 1))};
                        });
                      });
          return SmallVector<Value>{row[0], add(b, l, acc[1], row[1])};
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateDataDependentLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<NonZeroPattern, CompressPattern, UniquePattern, NonMaxSuppressionPattern>(patterns.getContext());
}

} // namespace kiln
