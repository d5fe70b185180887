// Shared helpers of the graph -> linalg lowering.
#include "passes/conversion/LoweringUtils.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

using namespace mlir;

namespace kiln {

Value dimValue(OpBuilder &b, Location loc, Value v, int64_t i) {
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.isDynamicDim(i))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(i));
  return tensor::DimOp::create(b, loc, v, i);
}

SmallVector<Value> dimsOf(OpBuilder &b, Location loc, Value v) {
  SmallVector<Value> dims;
  for (int64_t i = 0, e = cast<RankedTensorType>(v.getType()).getRank(); i < e; ++i)
    dims.push_back(dimValue(b, loc, v, i));
  return dims;
}

Value generate(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<Value> dims,
               const std::function<Value(OpBuilder &, Location, ArrayRef<Value>)> &element) {
  int64_t rank = type.getRank();
  Value init = emptyTensor(b, loc, type, dims);
  return linalg::GenericOp::create(b, loc, TypeRange{type}, ValueRange{}, ValueRange{init},
                                   ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(rank, b.getContext())},
                                   SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
                                   [&](OpBuilder &nb, Location l, ValueRange) {
                                     SmallVector<Value> coords;
                                     for (int64_t i = 0; i < rank; ++i)
                                       coords.push_back(linalg::IndexOp::create(nb, l, i));
                                     linalg::YieldOp::create(nb, l, element(nb, l, coords));
                                   })
      .getResult(0);
}

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                  ArrayRef<Value> dims) {
  SmallVector<Value> dynamic;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamic.push_back(dims[i]);
  return tensor::EmptyOp::create(b, loc, type, dynamic);
}

SmallVector<Value> broadcastDims(OpBuilder &b, Location loc,
                                 RankedTensorType resultType,
                                 ValueRange inputs) {
  int64_t rank = resultType.getRank();
  SmallVector<Value> dims(rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (!resultType.isDynamicDim(i)) {
      dims[i] = arith::ConstantIndexOp::create(b, loc, resultType.getDimSize(i));
      continue;
    }
    // Every input with a dynamic extent here must match (a dynamic dim is
    // assumed not to broadcast). Taking the smallest means that inputs which
    // break that promise give a wrong result, never a read out of bounds.
    for (Value in : inputs) {
      auto t = cast<RankedTensorType>(in.getType());
      int64_t j = i - (rank - t.getRank());
      if (j >= 0 && t.isDynamicDim(j)) {
        Value d = tensor::DimOp::create(b, loc, in, j);
        dims[i] = dims[i] ? (Value)arith::MinSIOp::create(b, loc, dims[i], d) : d;
      }
    }
    if (!dims[i])
      dims[i] = arith::ConstantIndexOp::create(b, loc, 1);
  }
  return dims;
}

AffineMap broadcastMap(RankedTensorType operand, RankedTensorType result, MLIRContext *ctx) {
  int64_t rank = result.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t j = 0; j < operand.getRank(); ++j) {
    int64_t i = j + rank - operand.getRank();
    bool broadcast = operand.getDimSize(j) == 1 && result.getDimSize(i) != 1;
    exprs.push_back(broadcast ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(i, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// True when input dim `j` of `t` is dynamic where the result's dim is a
/// static N != 1: ONNX lets it be 1 or N at run time, so it cannot be read
/// through an indexing map that assumes either.
static bool mayBroadcastAtRunTime(RankedTensorType t, int64_t j, RankedTensorType result) {
  int64_t i = j + result.getRank() - t.getRank();
  return t.isDynamicDim(j) && !result.isDynamicDim(i) && result.getDimSize(i) != 1;
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputsIn, const BodyFn &body) {
  int64_t rank = resultType.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> dims = broadcastDims(b, loc, resultType, inputsIn);
  Value init = emptyTensor(b, loc, resultType, dims);
  // Inputs with a dim that may broadcast at run time are read in the body
  // with tensor.extract at index min(i, d - 1) (0 when d is 1, i when it is
  // N): correct either way and never out of bounds. The others are operands.
  SmallVector<Value> mapped;
  SmallVector<int64_t> slot(inputsIn.size(), -1); // operand position of each mapped input
  struct Extracted {
    Value tensor;
    SmallVector<Value> lastIndex; // d - 1 per dynamic dim that may broadcast, else null
  };
  SmallVector<std::optional<Extracted>> extracted(inputsIn.size());
  for (auto [k, in] : llvm::enumerate(inputsIn)) {
    auto t = cast<RankedTensorType>(in.getType());
    bool runtime = false;
    for (int64_t j = 0; j < t.getRank(); ++j)
      runtime |= mayBroadcastAtRunTime(t, j, resultType);
    if (!runtime) {
      slot[k] = mapped.size();
      mapped.push_back(in);
      continue;
    }
    Extracted e{in, SmallVector<Value>(t.getRank())};
    for (int64_t j = 0; j < t.getRank(); ++j)
      if (mayBroadcastAtRunTime(t, j, resultType))
        e.lastIndex[j] = arith::SubIOp::create(b, loc, tensor::DimOp::create(b, loc, in, j),
                                               arith::ConstantIndexOp::create(b, loc, 1));
    extracted[k] = std::move(e);
  }
  // linalg takes loop bounds from the first operand that has each dim, so
  // cut every input's dynamic dims to the result's: an input larger than its
  // partner then cannot drive the loops past the end of the others.
  // Only needed when two inputs are dynamic in the same result dim; a slice
  // also stops elementwise fusion, so unary chains must not get one.
  SmallVector<int> dynamicInputs(rank, 0);
  for (Value in : mapped) {
    auto t = cast<RankedTensorType>(in.getType());
    for (int64_t j = 0; j < t.getRank(); ++j)
      if (t.isDynamicDim(j))
        ++dynamicInputs[j + rank - t.getRank()];
  }
  bool ambiguous = llvm::any_of(dynamicInputs, [](int n) { return n > 1; });
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (Value in : mapped) {
    auto t = cast<RankedTensorType>(in.getType());
    maps.push_back(broadcastMap(t, resultType, ctx));
    if (!ambiguous || t.hasStaticShape()) {
      inputs.push_back(in);
      continue;
    }
    SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)), sizes, strides(t.getRank(), b.getIndexAttr(1));
    for (int64_t j = 0; j < t.getRank(); ++j) {
      int64_t i = j + rank - t.getRank();
      if (t.isDynamicDim(j))
        sizes.push_back(dims[i]);
      else
        sizes.push_back(b.getIndexAttr(t.getDimSize(j)));
    }
    inputs.push_back(tensor::ExtractSliceOp::create(b, loc, t, in, offsets, sizes, strides));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, ValueRange(inputs), ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> scalars;
        for (size_t k = 0; k < inputsIn.size(); ++k) {
          if (slot[k] >= 0) {
            scalars.push_back(args[slot[k]]);
            continue;
          }
          const Extracted &e = *extracted[k];
          auto t = cast<RankedTensorType>(e.tensor.getType());
          SmallVector<Value> index;
          for (int64_t j = 0; j < t.getRank(); ++j) {
            int64_t i = j + rank - t.getRank();
            if (t.getDimSize(j) == 1)
              index.push_back(arith::ConstantIndexOp::create(nb, nloc, 0));
            else if (e.lastIndex[j])
              index.push_back(arith::MinSIOp::create(nb, nloc, linalg::IndexOp::create(nb, nloc, i), e.lastIndex[j]));
            else
              index.push_back(linalg::IndexOp::create(nb, nloc, i));
          }
          scalars.push_back(tensor::ExtractOp::create(nb, nloc, e.tensor, index));
        }
        Value v = body(nb, nloc, scalars);
        linalg::YieldOp::create(nb, nloc, v);
      });
  return generic.getResult(0);
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type,
                ArrayRef<Value> dims) {
  if (v.getType() == type && type.hasStaticShape())
    return v;
  SmallVector<Value> sizes;
  for (Value d : dims)
    sizes.push_back(arith::IndexCastOp::create(b, loc, b.getI64Type(), d));
  auto shapeType = RankedTensorType::get({(int64_t)dims.size()}, b.getI64Type());
  Value shape = tensor::FromElementsOp::create(b, loc, shapeType, sizes);
  return tensor::ReshapeOp::create(b, loc, type, v, shape);
}

Value windowCount(OpBuilder &b, Location loc, Value paddedSize, int64_t kernel,
                  int64_t stride, int64_t dilation) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value v = arith::SubIOp::create(b, loc, paddedSize, c(dilation * (kernel - 1) + 1));
  v = arith::DivSIOp::create(b, loc, v, c(stride));
  return arith::AddIOp::create(b, loc, v, c(1));
}

// dynconv: window pads known at run time only.
std::pair<Value, Value> samePads(OpBuilder &b, Location loc, Value in, Value reach, int64_t stride, bool upper) {
  auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  // total = max(0, (ceil(in / s) - 1) * s + reach - in), the odd one at the end for SAME_UPPER.
  Value out = arith::CeilDivSIOp::create(b, loc, in, c(stride));
  Value needed = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, out, c(1)), c(stride)), reach);
  Value total = arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, needed, in), c(0));
  Value small = arith::DivSIOp::create(b, loc, total, c(2));
  Value large = arith::SubIOp::create(b, loc, total, small);
  return upper ? std::pair{small, large} : std::pair{large, small};
}
// end dynconv

Value forallBlocks(OpBuilder &b, Location loc, Value init, ArrayRef<OpFoldResult> ubs,
                   ArrayRef<int64_t> blockShape,
                   const std::function<Value(OpBuilder &, ValueRange, Value)> &fill, bool keepUnitDims) {
  auto type = cast<RankedTensorType>(init.getType());
  auto forall = scf::ForallOp::create(b, loc, ubs, ValueRange{init}, std::nullopt);
  OpBuilder fb = OpBuilder::atBlockBegin(forall.getBody());
  SmallVector<OpFoldResult> offsets, sizes, unit(type.getRank(), fb.getIndexAttr(1));
  SmallVector<int64_t> blockDims;
  for (Value iv : forall.getInductionVars()) {
    offsets.push_back(iv);
    sizes.push_back(fb.getIndexAttr(1));
    if (keepUnitDims)
      blockDims.push_back(1);
  }
  for (int64_t d : blockShape) {
    offsets.push_back(fb.getIndexAttr(0));
    sizes.push_back(fb.getIndexAttr(d));
    blockDims.push_back(d);
  }
  Value out = forall.getRegionIterArgs()[0];
  Value slice = tensor::ExtractSliceOp::create(fb, loc, RankedTensorType::get(blockDims, type.getElementType()),
                                               out, offsets, sizes, unit);
  Value block = fill(fb, forall.getInductionVars(), slice);
  OpBuilder tb = OpBuilder::atBlockBegin(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(tb, loc, block, out, offsets, sizes, unit);
  return forall.getResult(0);
}

int64_t channelLanes(int64_t vectorBits, int64_t channels, Type elementType) {
  if (!elementType.isF32())
    return 8;
  int64_t lanes = vectorBits / 32;
  return lanes > 8 && channels % lanes == 0 ? lanes : 8;
}

/// Window inputs above this many bytes do not stay in L2 (2 MiB on the Xeon, 1 MiB on Zen 5).
constexpr int64_t kWindowStreamBytes = 2 << 20;

Value channelWindowKernel(OpBuilder &b, Location loc, Value padded, RankedTensorType rt, const ChannelWindow &w) {
  Type et = rt.getElementType();
  int64_t oh = rt.getDimSize(1), ow = rt.getDimSize(2), channels = rt.getDimSize(3);
  auto vecType = VectorType::get({w.width}, et);
  auto c = [&](OpBuilder &nb, int64_t v) -> Value { return arith::ConstantIndexOp::create(nb, loc, v); };
  Value init = emptyTensor(b, loc, rt, {dimValue(b, loc, padded, 0), c(b, oh), c(b, ow), c(b, channels)});
  SmallVector<OpFoldResult> ubs = {tensor::getMixedSize(b, loc, init, 0), b.getIndexAttr(oh)};
  bool exact = channels % w.width == 0;
  // Output positions per block: a tap's per-channel value (a depthwise
  // weight vector) is taken once for all of them, and their accumulators are
  // independent chains, where one position at a time waited on each FMA's
  // latency (9 in a row for a 3x3 window) and loaded a weight per FMA.
  int64_t positions = std::min<int64_t>(w.positions, ow);
  // An input larger than L2 comes from L3 or memory while the kernel runs.
  // Channel blocks outermost sweep each window row once per block, touching
  // one cache line in every C / width; measured on a Xeon (1 thread), that
  // sweep ran mobilenet_v2's 112x112x96 stride-2 depthwise convolution (5 MB
  // in) in 443 us and resnet18's 3x3 max pool (3.3 MB in) in 268 us, against
  // 287 and 172 with positions outermost. Inputs that stay in L2 keep the
  // channel blocks outermost (their taps in registers: 576-channel 14x14
  // maps took 53 us that way, 66 the other).
  auto pt = cast<RankedTensorType>(padded.getType());
  bool streamed = pt.hasStaticShape() &&
                  pt.getNumElements() * int64_t(pt.getElementTypeBitWidth() / 8) > kWindowStreamBytes;
  // An unpadded input (w.pads given): window rows and columns past the map's edges read the pad
  // value instead of a padded copy's border. No copy of the input and no border fills are then
  // written, and the producer's epilogue (the expansion's activation) can finish in its tiles.
  // Rows are checked per tap row (one branch, taken the same way for the whole output row),
  // columns only at the positions near the left and right edges: the positions in between,
  // [owLo, owHi), read every tap inside the map unchecked.
  bool unpadded = !w.pads.empty();
  int64_t top = unpadded ? w.pads[0] : 0, left = unpadded ? w.pads[1] : 0;
  int64_t inH = pt.getDimSize(1), inW = pt.getDimSize(2);
  int64_t s0 = w.strides[0], s1 = w.strides[1], d0 = w.dilations[0], d1 = w.dilations[1];
  int64_t reachW = (w.kernel[1] - 1) * d1;
  auto floorDiv = [](int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  int64_t owLo = unpadded ? std::min<int64_t>(ow, (left + s1 - 1) / s1) : 0;
  int64_t owHi = unpadded ? std::max(owLo, std::min<int64_t>(ow, floorDiv(inW - 1 + left - reachW, s1) + 1)) : ow;
  // Whether tap row kh can fall outside the map for some output row.
  auto rowMayLeave = [&](int64_t kh) {
    return unpadded && (kh * d0 - top < 0 || (oh - 1) * s0 - top + kh * d0 > inH - 1);
  };
  Value padVec = unpadded ? vector::BroadcastOp::create(b, loc, vecType, w.padValue).getResult() : Value();
  // Work items of one channel group each (groups outermost) instead of whole rows: see
  // ChannelWindow::channelGroup.
  int64_t group = w.channelGroup > 0 && !streamed && channels % w.channelGroup == 0 &&
                          w.channelGroup % w.width == 0 && channels / w.channelGroup > 1
                      ? w.channelGroup
                      : channels;
  // `ivs` (n, output row, first channel); `row` the [1, 1, OW, group] block it writes.
  auto fillRow = [&](OpBuilder &fb, Value n, Value ioh, Value chBase, Value row) -> Value {
    Value pad = arith::ConstantOp::create(fb, loc, fb.getZeroAttr(et));
    SmallVector<bool> inBounds = {exact};
    // One block of `count` positions at [ow0, ow0 + count) and channels [ch, ch + width);
    // `checked`: its columns may leave the map.
    auto emitBlock = [&](OpBuilder &ob, Value ow0, Value ch, int64_t count, Value written, bool checked) -> Value {
      SmallVector<Value> iows, accs;
      for (int64_t p = 0; p < count; ++p) {
        iows.push_back(arith::AddIOp::create(ob, loc, ow0, c(ob, p)));
        accs.push_back(w.start(ob, ch));
      }
      // The taps of window row kh, added to `acc` (row r of the input is inside the map).
      auto tapRow = [&](OpBuilder &tb, int64_t kh, Value r, SmallVector<Value> acc) {
        for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
          Value tap = w.tap ? w.tap(tb, kh, kw, ch) : Value();
          for (int64_t p = 0; p < count; ++p) {
            Value col = arith::AddIOp::create(tb, loc, arith::MulIOp::create(tb, loc, iows[p], c(tb, s1)),
                                              c(tb, kw * d1 - left));
            Value valid;
            if (checked) {
              // Read a clamped column, then take the pad value where the column is outside.
              Value ge = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::sge, col, c(tb, 0));
              Value lt = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::slt, col, c(tb, inW));
              valid = arith::AndIOp::create(tb, loc, ge, lt);
              col = arith::MinSIOp::create(tb, loc, arith::MaxSIOp::create(tb, loc, col, c(tb, 0)), c(tb, inW - 1));
            }
            Value x = vector::TransferReadOp::create(tb, loc, vecType, padded, ValueRange{n, r, col, ch}, pad,
                                                     inBounds);
            if (valid)
              x = arith::SelectOp::create(tb, loc, valid, x, padVec);
            acc[p] = w.step(tb, acc[p], x, tap);
          }
        }
        return acc;
      };
      for (int64_t kh = 0; kh < w.kernel[0]; ++kh) {
        Value r = arith::AddIOp::create(ob, loc, arith::MulIOp::create(ob, loc, ioh, c(ob, s0)),
                                        c(ob, kh * d0 - top));
        if (!rowMayLeave(kh)) {
          accs = tapRow(ob, kh, r, accs);
          continue;
        }
        // A row outside the map adds the pad value at every tap of the row: nothing for a
        // convolution's zero, but a max pool's -inf or an average's zero count too, so the pad
        // value goes through `step` as the padded copy's border would.
        Value ge = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::sge, r, c(ob, 0));
        Value lt = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::slt, r, c(ob, inH));
        Value inside = arith::AndIOp::create(ob, loc, ge, lt);
        SmallVector<Type> types(count, vecType);
        auto branch = scf::IfOp::create(ob, loc, types, inside, /*withElseRegion=*/true);
        OpBuilder tb = OpBuilder::atBlockBegin(branch.thenBlock());
        scf::YieldOp::create(tb, loc, tapRow(tb, kh, r, accs));
        OpBuilder eb = OpBuilder::atBlockBegin(branch.elseBlock());
        SmallVector<Value> outside = accs;
        for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
          Value tap = w.tap ? w.tap(eb, kh, kw, ch) : Value();
          for (int64_t p = 0; p < count; ++p)
            outside[p] = w.step(eb, outside[p], padVec, tap);
        }
        scf::YieldOp::create(eb, loc, outside);
        accs.assign(branch.getResults().begin(), branch.getResults().end());
      }
      for (int64_t p = 0; p < count; ++p) {
        Value acc = w.finish ? w.finish(ob, accs[p], ch) : accs[p];
        Value inBlock = group == channels ? ch : arith::SubIOp::create(ob, loc, ch, chBase).getResult();
        written = vector::TransferWriteOp::create(ob, loc, acc, written,
                                                  ValueRange{c(ob, 0), c(ob, 0), iows[p], inBlock}, inBounds)
                      .getResult();
      }
      return written;
    };
    // A loop over `range` in steps of `step` carrying the row, its body built by `body`.
    auto loopOver = [&](OpBuilder &at, Value lb, Value ub, int64_t step, Value carried,
                        llvm::function_ref<Value(OpBuilder &, Value, Value)> body) -> Value {
      auto loop = scf::ForOp::create(at, loc, lb, ub, c(at, step), ValueRange{carried});
      OpBuilder lb2 = OpBuilder::atBlockBegin(loop.getBody());
      scf::YieldOp::create(lb2, loc, body(lb2, loop.getInductionVar(), loop.getRegionIterArg(0)));
      return loop.getResult(0);
    };
    // The row's positions: the left edge one by one (checked), the inside in blocks and a tail
    // one by one, the right edge one by one (checked); `inner` runs what is inside a position
    // block (all channel blocks, or one).
    int64_t whole = owLo + (owHi - owLo) / positions * positions;
    auto positionsOf = [&](OpBuilder &at, Value carried,
                           llvm::function_ref<Value(OpBuilder &, Value, int64_t, bool, Value)> inner) -> Value {
      Value done = carried;
      auto run = [&](int64_t lo, int64_t hi, int64_t count, bool checked) {
        if (lo < hi)
          done = loopOver(at, c(at, lo), c(at, hi), count, done, [&](OpBuilder &pb, Value ow0, Value r) {
            return inner(pb, ow0, count, checked, r);
          });
      };
      run(0, owLo, 1, true);
      run(owLo, whole, positions, false);
      run(whole, owHi, 1, false);
      run(owHi, ow, 1, true);
      return done;
    };
    Value chEnd = group == channels ? c(fb, channels)
                                    : arith::AddIOp::create(fb, loc, chBase, c(fb, group)).getResult();
    if (streamed) {
      // Positions outermost, channel blocks inside: the window's input rows
      // are read in address order (every channel of a position before the
      // next position), which a map streamed from L3 needs.
      return positionsOf(fb, row, [&](OpBuilder &pb, Value ow0, int64_t count, bool checked, Value r0) {
        return loopOver(pb, chBase, chEnd, w.width, r0, [&](OpBuilder &cb, Value ch, Value r1) {
          return emitBlock(cb, ow0, ch, count, r1, checked);
        });
      });
    }
    // Channel blocks outermost: the block's per-tap values stay in registers
    // (or L1) while the row's positions run under them.
    return loopOver(fb, chBase, chEnd, w.width, row, [&](OpBuilder &cb, Value ch, Value r0) {
      return positionsOf(cb, r0, [&](OpBuilder &pb, Value ow0, int64_t count, bool checked, Value r1) {
        return emitBlock(pb, ow0, ch, count, r1, checked);
      });
    });
  };
  Value result;
  if (group == channels) {
    result = forallBlocks(b, loc, init, ubs, {ow, channels}, [&](OpBuilder &fb, ValueRange ivs, Value row) {
      return fillRow(fb, ivs[0], ivs[1], c(fb, 0), row);
    }, /*keepUnitDims=*/true);
  } else {
    // (n, group, output row): launches take work items in this order, so threads split the
    // groups (as the panels of the product before), each group's rows together.
    // With `halves`, (n, half of the rows, group, row in the half): each of two threads
    // takes the rows the ops around it give it, group by group (see channelGroupInHalves).
    bool halves = w.channelGroupInHalves && oh % 2 == 0;
    SmallVector<OpFoldResult> groupUbs = {ubs[0], b.getIndexAttr(channels / group), ubs[1]};
    if (halves)
      groupUbs = {ubs[0], b.getIndexAttr(2), b.getIndexAttr(channels / group), b.getIndexAttr(oh / 2)};
    auto forall = scf::ForallOp::create(b, loc, groupUbs, ValueRange{init}, std::nullopt);
    OpBuilder fb = OpBuilder::atBlockBegin(forall.getBody());
    SmallVector<Value> ivs(forall.getInductionVars());
    if (halves) // (n, group, output row), as without halves
      ivs = {ivs[0], ivs[2],
             arith::AddIOp::create(fb, loc, arith::MulIOp::create(fb, loc, ivs[1], c(fb, oh / 2)), ivs[3])};
    Value chBase = arith::MulIOp::create(fb, loc, ivs[1], c(fb, group));
    SmallVector<OpFoldResult> offsets = {ivs[0], ivs[2], fb.getIndexAttr(0), chBase};
    SmallVector<OpFoldResult> sizes = {fb.getIndexAttr(1), fb.getIndexAttr(1), fb.getIndexAttr(ow),
                                       fb.getIndexAttr(group)};
    SmallVector<OpFoldResult> unit(4, fb.getIndexAttr(1));
    Value out = forall.getRegionIterArgs()[0];
    Value slice = tensor::ExtractSliceOp::create(fb, loc, RankedTensorType::get({1, 1, ow, group}, et), out, offsets,
                                                 sizes, unit);
    Value block = fillRow(fb, ivs[0], ivs[2], chBase, slice);
    OpBuilder tb = OpBuilder::atBlockBegin(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(tb, loc, block, out, offsets, sizes, unit);
    result = forall.getResult(0);
  }
  // Its rows are tiles that an elementwise consumer (a depthwise
  // convolution's ReLU6) can finish while they are in cache: kiln-fuse-epilogues.
  // The consumer is tiled like the row's slice of the result, so the row is
  // a [1, 1, OW, C] block, not a rank-reduced [OW, C] one (the tiled
  // consumer would get a tile of the wrong rank).
  auto loop = result.getDefiningOp<scf::ForallOp>();
  loop->setAttr("kiln.epilogue_tiles", b.getUnitAttr());
  return result;
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   ArrayRef<Value> dims, Value value) {
  Value empty = emptyTensor(b, loc, type, dims);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, value));
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, (int64_t)value));
}

Value lowestValue(OpBuilder &b, Location loc, Type type) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(ft, APFloat::getInf(ft.getFloatSemantics(), true)));
  auto it = cast<IntegerType>(type);
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, APInt::getSignedMinValue(it.getWidth())));
}

Value addValues(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(getElementTypeOrSelf(x.getType())))
    return arith::AddFOp::create(b, loc, x, y);
  return arith::AddIOp::create(b, loc, x, y);
}
Value subValues(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(getElementTypeOrSelf(x.getType())))
    return arith::SubFOp::create(b, loc, x, y);
  return arith::SubIOp::create(b, loc, x, y);
}
Value mulValues(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(getElementTypeOrSelf(x.getType())))
    return arith::MulFOp::create(b, loc, x, y);
  return arith::MulIOp::create(b, loc, x, y);
}
Value divValues(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(getElementTypeOrSelf(x.getType())))
    return arith::DivFOp::create(b, loc, x, y);
  // Integer division by zero is undefined in ONNX; avoid a SIGFPE by
  // dividing by 1 instead so that a hostile input cannot kill the process.
  Value zero = scalarConstant(b, loc, y.getType(), 0);
  Value one = scalarConstant(b, loc, y.getType(), 1);
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero);
  Value safe = arith::SelectOp::create(b, loc, isZero, one, y);
  return arith::DivSIOp::create(b, loc, x, safe);
}
Value maxValues(OpBuilder &b, Location loc, Value x, Value y) {
  // compare + select, not arith.maximumf: LLVM's NaN-propagating maximum
  // has no x86 instruction and expands to a slow, unvectorized sequence,
  // while this is a single vmaxps. A NaN in `x` leaves `y`.
  if (isa<FloatType>(getElementTypeOrSelf(x.getType()))) {
    Value greater = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, y);
    return arith::SelectOp::create(b, loc, greater, x, y);
  }
  return arith::MaxSIOp::create(b, loc, x, y);
}

Value minValues(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(getElementTypeOrSelf(x.getType()))) {
    Value less = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, y);
    return arith::SelectOp::create(b, loc, less, x, y);
  }
  return arith::MinSIOp::create(b, loc, x, y);
}

Value castScalar(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  auto fromF = dyn_cast<FloatType>(from), toF = dyn_cast<FloatType>(to);
  if (fromF && toF)
    return fromF.getWidth() < toF.getWidth()
               ? (Value)arith::ExtFOp::create(b, loc, to, x)
               : (Value)arith::TruncFOp::create(b, loc, to, x);
  if (fromF) {
    if (to.isInteger(1))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   scalarConstant(b, loc, from, 0));
    return arith::FPToSIOp::create(b, loc, to, x);
  }
  if (toF)
    return from.isInteger(1) ? (Value)arith::UIToFPOp::create(b, loc, to, x)
                             : (Value)arith::SIToFPOp::create(b, loc, to, x);
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (to.isInteger(1))
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x,
                                 scalarConstant(b, loc, from, 0));
  if (fw < tw)
    return from.isInteger(1) ? (Value)arith::ExtUIOp::create(b, loc, to, x)
                             : (Value)arith::ExtSIOp::create(b, loc, to, x);
  return arith::TruncIOp::create(b, loc, to, x);
}

/// exp(-x) for the logistic function 1 / (1 + exp(-x)) (Sigmoid, SiLU). For f32, a lean
/// version of math.exp's approximation: x clamped to [-87.3, 87.3], m = round(x log2(e)),
/// s = x - m ln2 in two steps (ln2's high part has few bits, so m * high is exact), then
/// exp(-x) = 2^-m e^-s with 2^-m built in the exponent bits (m in [-126, 126]: a normal
/// float) and e^-s by a degree-5 polynomial on |s| <= ln2/2, fitted for relative error: at
/// most 2.3e-7 over the clamped range, measured in float over 2M points. Beyond the clamp
/// the logistic is saturated: 1 + exp(-x) is 1, or 2^126 (the logistic then 1.2e-38 instead
/// of less, SiLU x * 1.2e-38). math.exp's general form costs ~24 vector ops where this takes
/// 16: SiLU after every convolution was 17% of efficientnet_b0 (1 thread, AVX-512: 7.65 ->
/// 6.32 ms with it replaced by ReLU, 6.89 with this). Other types keep math.exp.
Value expOfNegated(OpBuilder &b, Location l, Value x, bool nonNegative) {
  Type t = x.getType();
  if (!getElementTypeOrSelf(t).isF32())
    return math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
  // Constants of x's type (a vector's splat), and the i32 type of the same shape.
  auto vt = dyn_cast<VectorType>(t);
  Type i32 = vt ? Type(VectorType::get(vt.getShape(), b.getI32Type())) : Type(b.getI32Type());
  auto constant = [&](Type type, Attribute value) -> Value {
    if (auto shaped = dyn_cast<VectorType>(type))
      return arith::ConstantOp::create(b, l, shaped, DenseElementsAttr::get(shaped, value));
    return arith::ConstantOp::create(b, l, cast<TypedAttr>(value));
  };
  auto c = [&](double v) { return constant(t, b.getF32FloatAttr(float(v))); };
  auto ci = [&](int32_t v) { return constant(i32, b.getI32IntegerAttr(v)); };
  Value xc;
  if (nonNegative) {
    // Only the upper clamp, as select(87.3 < x, 87.3, x): one vminps on x86 that keeps a NaN
    // (arith.minimumf's NaN rule costs a compare and a blend more, and its lower bound would
    // be a no-op here).
    Value big = c(87.3);
    xc = arith::SelectOp::create(b, l, arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, big, x), big, x);
  } else {
    xc = arith::MinimumFOp::create(b, l, arith::MaximumFOp::create(b, l, x, c(-87.3)), c(87.3));
  }
  Value m = math::RoundEvenOp::create(b, l, arith::MulFOp::create(b, l, xc, c(1.4426950408889634)));
  Value s = math::FmaOp::create(b, l, m, c(-0.693145751953125), xc);
  s = math::FmaOp::create(b, l, m, c(-1.4286068202862268e-06), s);
  // e^-s = sum coefficient[k] (-s)^k, by Horner in s with the odd terms negated.
  static const double coefficient[] = {1.000000072e+00, -9.999996919e-01, 4.999889484e-01,
                                       -1.666757487e-01, 4.191538369e-02, -8.297646588e-03};
  Value p = c(coefficient[5]);
  for (int k = 4; k >= 0; --k)
    p = math::FmaOp::create(b, l, p, s, c(coefficient[k]));
  // 2^-m: 127 - m in the exponent field.
  Value bits = arith::SubIOp::create(b, l, ci(127), arith::FPToSIOp::create(b, l, i32, m));
  bits = arith::ShLIOp::create(b, l, bits, ci(23));
  return arith::MulFOp::create(b, l, p, arith::BitcastOp::create(b, l, t, bits));
}

/// exp(d) for d <= 0 (a softmax's shifted scores): expOfNegated(-d), and 0 below -87.3 (where
/// the clamp would give 1.2e-38; a masked -inf gives exactly 0, as math.exp does). NaN stays NaN.
Value expOfNonPositive(OpBuilder &b, Location l, Value d) {
  Type t = d.getType();
  if (!getElementTypeOrSelf(t).isF32())
    return math::ExpOp::create(b, l, d);
  auto c = [&](float v) -> Value {
    if (auto vt = dyn_cast<VectorType>(t))
      return arith::ConstantOp::create(b, l, vt, DenseElementsAttr::get(vt, b.getF32FloatAttr(v)));
    return arith::ConstantOp::create(b, l, b.getF32FloatAttr(v));
  };
  Value e = expOfNegated(b, l, arith::NegFOp::create(b, l, d), /*nonNegative=*/true);
  Value below = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, d, c(-87.3f));
  return arith::SelectOp::create(b, l, below, c(0.0f), e);
}

} // namespace kiln
