// Pooling: MaxPool (and its Indices), AveragePool, GlobalMaxPool, GlobalAveragePool, MaxUnpool.
#include "compiler/importer/ImporterHelpers.h"
#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// MaxUnpool: zeros of the output shape with X[i] written at the flat
/// position I[i] (the Indices of MaxPool) of the unpooled shape, (in - 1) *
/// stride + kernel - pads per spatial axis. The output shape is that, or the
/// output_shape input (possibly a run-time value) whose extra elements are
/// zeros at the end of each axis.
Results importMaxUnpool(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  Value x = c.input(0), indices = c.input(1), outputShape = c.input(2);
  auto xt = cast<RankedTensorType>(x.getType());
  auto it = cast<RankedTensorType>(indices.getType());
  int64_t rank = xt.getRank(), spatial = rank - 2;
  if (rank < 3)
    return c.fail("input must have rank >= 3");
  if (!it.getElementType().isInteger(64) || it.getRank() != rank)
    return c.fail("I must be an int64 tensor of the input's rank");
  auto kernel = c.intsAttr("kernel_shape");
  if (!kernel || (int64_t)kernel->size() != spatial)
    return c.fail("kernel_shape must have one value per spatial axis");
  auto strides = c.intsAttr("strides").value_or(SmallVector<int64_t>(spatial, 1));
  auto pads = c.intsAttr("pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if ((int64_t)strides.size() != spatial || (int64_t)pads.size() != 2 * spatial)
    return c.fail("strides/pads do not match " + Twine(spatial) + " spatial axes");
  Type et = xt.getElementType();
  // The unpooled shape the indices count in: (in - 1) * stride + kernel - pads.
  SmallVector<int64_t> dims(xt.getShape().take_front(2));
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = xt.getDimSize(2 + i);
    dims.push_back(in == ShapedType::kDynamic
                       ? in
                       : (in - 1) * strides[i] + (*kernel)[i] - pads[i] - pads[spatial + i]);
  }
  for (int64_t d : dims)
    if (d != ShapedType::kDynamic && d <= 0)
      return c.fail("the unpooled shape must be positive, got " + Twine(d));
  Value shape, flatIndices;
  auto flat = create<ReshapeOp>(c, indices, c.i64Constant({-1}), (int64_t)0);
  if (failed(flat))
    return failure();
  flatIndices = *flat;
  if (!outputShape) {
    if (llvm::is_contained(dims, ShapedType::kDynamic))
      return c.fail("dynamic input sizes need output_shape");
    shape = c.i64Constant(dims);
  } else {
    // A larger output_shape extends the unpooled tensor at the end of each
    // axis: an index keeps its coordinates, renumbered in output_shape.
    auto st = cast<RankedTensorType>(outputShape.getType());
    if (st.getRank() != 1 || st.getDimSize(0) != rank || !st.getElementType().isInteger(64))
      return c.fail("output_shape must be an int64 tensor of " + Twine(rank) + " values");
    if (llvm::is_contained(dims, ShapedType::kDynamic))
      return c.fail("output_shape with dynamic input sizes is not supported");
    shape = outputShape;
    Type i64 = c.b.getI64Type();
    SmallVector<Value> coords(rank);
    Value rest = flatIndices;
    for (int64_t i = rank - 1; i > 0; --i) {
      auto coord = create<ModOp>(c, rest, scalarConstant(c, i64, (double)dims[i]), (int64_t)0);
      auto above = create<DivOp>(c, rest, scalarConstant(c, i64, (double)dims[i]));
      if (failed(coord) || failed(above))
        return failure();
      coords[i] = *coord;
      rest = *above;
    }
    coords[0] = rest;
    Value renumbered = coords[0];
    for (int64_t i = 1; i < rank; ++i) {
      Value axis = ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(RankedTensorType::get({}, i64), i));
      auto size = create<GatherOp>(c, shape, axis, (int64_t)0);
      if (failed(size))
        return failure();
      auto scaled = create<MulOp>(c, renumbered, *size);
      if (failed(scaled))
        return failure();
      auto sum = create<AddOp>(c, *scaled, coords[i]);
      if (failed(sum))
        return failure();
      renumbered = *sum;
    }
    flatIndices = renumbered;
  }
  auto flatX = create<ReshapeOp>(c, x, c.i64Constant({-1}), (int64_t)0);
  if (failed(flatX))
    return failure();
  return single(create<MaxUnpoolOp>(c, *flatX, flatIndices, shape));
}

template <typename OpTy> Results importPool(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  auto kernel = c.intsAttr("kernel_shape");
  if (!kernel)
    return c.fail("kernel_shape is required");
  auto w = windowAttrs(c, c.input(0), *kernel);
  if (failed(w))
    return failure();
  // MaxPool's Indices output (storage_order says how they are numbered).
  if (c.node.output_size() > 1 && !c.node.output(1).empty()) {
    if (w->runTimeAutoPad)
      return c.fail("Indices with auto_pad " + w->runTimeAutoPad.getValue() + " need static spatial sizes");
    if constexpr (std::is_same_v<OpTy, MaxPoolOp>) {
      auto op = createOperation<MaxPoolWithIndicesOp, 2>(c, c.input(0), w->kernel, w->pads, w->strides,
                                                         w->dilations, c.intAttr("ceil_mode", 0),
                                                         c.intAttr("storage_order", 0));
      if (failed(op))
        return failure();
      return SmallVector<Value>((*op)->getResults());
    }
  }
  if constexpr (std::is_same_v<OpTy, MaxPoolOp>)
    return single(create<MaxPoolOp>(c, c.input(0), w->kernel, w->pads,
                                    w->strides, w->dilations,
                                    c.intAttr("ceil_mode", 0), w->runTimeAutoPad));
  else
    return single(create<AveragePoolOp>(c, c.input(0), w->kernel, w->pads,
                                        w->strides, w->dilations,
                                        c.intAttr("ceil_mode", 0),
                                        c.intAttr("count_include_pad", 0), w->runTimeAutoPad));
}

// GlobalMaxPool is ReduceMax over the spatial axes, kept as size 1: the
// reduction's lowering (compare+select, dynamic dims) serves it unchanged.
Results importGlobalMaxPool(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t rank = rankOf(c.input(0));
  if (rank < 3)
    return c.fail("input must be N x C x spatial dims (rank >= 3)");
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < rank; ++i)
    axes.push_back(i);
  return single(create<ReduceMaxOp>(c, c.input(0), axes, (int64_t)1));
}

Results importGlobalAveragePool(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  return single(create<GlobalAveragePoolOp>(c, c.input(0)));
}

} // namespace

void addPoolingImporters(llvm::StringMap<NodeImporter> &t) {
  t["MaxPool"] = importPool<MaxPoolOp>;
  t["AveragePool"] = importPool<AveragePoolOp>;
  t["GlobalAveragePool"] = importGlobalAveragePool;
  t["GlobalMaxPool"] = importGlobalMaxPool;
  t["MaxUnpool"] = importMaxUnpool;
}

} // namespace kiln
