// MaxUnpool, composed from graph ops: a scatter of the pooled values into a flat zero tensor.
#include "compiler/importer/ImportBuilders.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// MaxUnpool: zeros of the output shape with X[i] written at the flat
/// position I[i] (the Indices of MaxPool). The output shape is the
/// output_shape input when given (possibly a run-time value), otherwise
/// (in - 1) * stride + kernel - pads per spatial axis.
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
  Value shape;
  if (outputShape) {
    auto st = cast<RankedTensorType>(outputShape.getType());
    if (st.getRank() != 1 || st.getDimSize(0) != rank || !st.getElementType().isInteger(64))
      return c.fail("output_shape must be an int64 tensor of " + Twine(rank) + " values");
    shape = outputShape;
  } else {
    SmallVector<int64_t> dims(xt.getShape().take_front(2));
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t in = xt.getDimSize(2 + i);
      if (in == ShapedType::kDynamic)
        return c.fail("a dynamic spatial size needs output_shape");
      dims.push_back((in - 1) * strides[i] + (*kernel)[i] - pads[i] - pads[spatial + i]);
    }
    if (llvm::is_contained(dims, ShapedType::kDynamic))
      return c.fail("dynamic batch or channel sizes need output_shape");
    shape = c.i64Constant(dims);
  }
  auto count = create<ReduceProdOp>(c, shape, ArrayRef<int64_t>{}, (int64_t)1);
  if (failed(count))
    return failure();
  auto zero = DenseElementsAttr::get(RankedTensorType::get({1}, et), c.b.getZeroAttr(et));
  auto zeros = create<ConstantOfShapeOp>(c, *count, zero);
  auto flatIndices = create<ReshapeOp>(c, indices, c.i64Constant({-1}), (int64_t)0);
  auto flatX = create<ReshapeOp>(c, x, c.i64Constant({-1}), (int64_t)0);
  if (failed(zeros) || failed(flatIndices) || failed(flatX))
    return failure();
  auto scattered = create<ScatterElementsOp>(c, *zeros, *flatIndices, *flatX, (int64_t)0, StringRef("none"));
  if (failed(scattered))
    return failure();
  return single(create<ReshapeOp>(c, *scattered, shape, (int64_t)0));
}

} // namespace

void addPoolingImporters(llvm::StringMap<NodeImporter> &t) { t["MaxUnpool"] = importMaxUnpool; }

} // namespace kiln
