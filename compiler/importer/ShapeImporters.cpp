// Ops that change a shape, not the values: Reshape, Flatten, Transpose, Squeeze/Unsqueeze, Expand, Tile, DepthToSpace/SpaceToDepth; Shape and Size.
#include "compiler/importer/ImporterHelpers.h"
#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

Results importReshape(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value shape = c.input(1);
  if (c.opset < 5) {
    auto s = c.intsAttr("shape");
    if (!s)
      return c.fail("shape attribute is required");
    shape = c.i64Constant(*s);
  }
  if (!shape)
    return c.fail("missing shape input");
  auto st = cast<RankedTensorType>(shape.getType());
  if (st.getRank() != 1 || !st.getElementType().isInteger(64) || st.isDynamicDim(0))
    return c.fail("shape must be a 1-D int64 tensor of static length");
  return single(create<ReshapeOp>(c, c.input(0), shape, c.intAttr("allowzero", 0)));
}

Results importFlatten(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  return single(create<FlattenOp>(c, c.input(0), c.intAttr("axis", 1)));
}

Results importTranspose(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  int64_t rank = rankOf(c.input(0));
  SmallVector<int64_t> perm;
  if (auto p = c.intsAttr("perm"))
    perm = *p;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  return single(create<TransposeOp>(c, c.input(0), perm));
}

/// Squeeze/Unsqueeze axes: attribute before opset 13, input from 13.
FailureOr<SmallVector<int64_t>> axesOf(NodeContext &c, bool required) {
  if (c.opset < 13) {
    if (auto a = c.intsAttr("axes"))
      return *a;
  } else if (c.input(1)) {
    return c.constantInts(c.input(1), "axes");
  }
  if (required) {
    (void)c.fail("axes are required");
    return failure();
  }
  return SmallVector<int64_t>{};
}

Results importSqueeze(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  if (c.opset >= 13 && isRuntime(c.input(1))) {
    if (failed(runtimeLength(c, c.input(1), "axes")))
      return failure();
    return single(create<DynamicSqueezeOp>(c, c.input(0), c.input(1)));
  }
  auto axes = axesOf(c, false);
  if (failed(axes))
    return failure();
  return single(create<SqueezeOp>(c, c.input(0), *axes));
}

Results importUnsqueeze(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  if (c.opset >= 13 && isRuntime(c.input(1))) {
    if (failed(runtimeLength(c, c.input(1), "axes")))
      return failure();
    return single(create<DynamicUnsqueezeOp>(c, c.input(0), c.input(1)));
  }
  auto axes = axesOf(c, true);
  if (failed(axes))
    return failure();
  return single(create<UnsqueezeOp>(c, c.input(0), *axes));
}

Results importExpand(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  DenseElementsAttr constant;
  if (!matchPattern(c.input(1), m_Constant(&constant)))
    return single(create<DynamicExpandOp>(c, c.input(0), c.input(1)));
  auto shape = c.constantInts(c.input(1), "shape");
  if (failed(shape))
    return failure();
  return single(create<ExpandOp>(c, c.input(0), *shape));
}

Results importTile(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  if (isRuntime(c.input(1))) {
    if (failed(runtimeLength(c, c.input(1), "repeats", /*needInt64=*/true)))
      return failure();
    return single(create<DynamicTileOp>(c, c.input(0), c.input(1)));
  }
  auto repeats = c.constantInts(c.input(1), "repeats");
  if (failed(repeats))
    return failure();
  return single(create<TileOp>(c, c.input(0), *repeats));
}

/// DepthToSpace/SpaceToDepth as reshape -> transpose -> reshape (constant shapes when static).
Results importDepthSpace(NodeContext &c, bool toSpace) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() != 4)
    return c.fail("needs a 4-D input");
  int64_t b = c.intAttr("blocksize", 0);
  if (b <= 0)
    return c.fail("blocksize must be positive");
  if (!xt.hasStaticShape()) {
    // Run-time sizes: the same reshapes with shapes computed from the
    // input's (0 copies N, and C for SpaceToDepth; -1 is the channels).
    Emitter e{c, c.b.getI64Type()};
    Value shape = e.op<ShapeOp>(x, (int64_t)0, IntegerAttr());
    Value h = e.slice(shape, 0, 2, 3), w = e.slice(shape, 0, 3, 4), block = c.i64Constant({b});
    SmallVector<Value> first, last;
    SmallVector<int64_t> perm;
    if (toSpace) {
      bool crd = c.stringAttr("mode", "DCR") == "CRD";
      first = {crd ? c.i64Constant({0, -1, b, b}) : c.i64Constant({0, b, b, -1}), h, w};
      perm = crd ? SmallVector<int64_t>{0, 1, 4, 2, 5, 3} : SmallVector<int64_t>{0, 3, 4, 1, 5, 2};
      last = {c.i64Constant({0, -1}), e.mul(h, block), e.mul(w, block)};
    } else {
      Value hb = e.op<DivOp>(h, block), wb = e.op<DivOp>(w, block);
      first = {c.i64Constant({0, 0}), hb, block, wb, block};
      perm = {0, 3, 5, 1, 2, 4};
      last = {c.i64Constant({0, -1}), hb, wb};
    }
    Value r1 = e.op<ReshapeOp>(x, e.concat(first, 0), (int64_t)0);
    Value t = e.transpose(r1, perm);
    Value y = e.op<ReshapeOp>(t, e.concat(last, 0), (int64_t)0);
    if (!e.ok)
      return failure();
    return single(y);
  }
  int64_t n = xt.getDimSize(0), ch = xt.getDimSize(1), h = xt.getDimSize(2), w = xt.getDimSize(3);
  SmallVector<int64_t> first, perm, last;
  if (toSpace) {
    if (ch % (b * b))
      return c.fail("channels not divisible by blocksize^2");
    bool crd = c.stringAttr("mode", "DCR") == "CRD";
    first = crd ? SmallVector<int64_t>{n, ch / (b * b), b, b, h, w} : SmallVector<int64_t>{n, b, b, ch / (b * b), h, w};
    perm = crd ? SmallVector<int64_t>{0, 1, 4, 2, 5, 3} : SmallVector<int64_t>{0, 3, 4, 1, 5, 2};
    last = {n, ch / (b * b), h * b, w * b};
  } else {
    if (h % b || w % b)
      return c.fail("spatial size not divisible by blocksize");
    first = {n, ch, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    last = {n, ch * b * b, h / b, w / b};
  }
  auto r1 = create<ReshapeOp>(c, x, c.i64Constant(first), (int64_t)0);
  if (failed(r1))
    return failure();
  auto t = create<TransposeOp>(c, *r1, perm);
  if (failed(t))
    return failure();
  return single(create<ReshapeOp>(c, *t, c.i64Constant(last), (int64_t)0));
}

Results importShape(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  IntegerAttr end;
  if (const auto *a = c.attr("end"))
    end = c.b.getI64IntegerAttr(a->i());
  return single(create<ShapeOp>(c, c.input(0), c.intAttr("start", 0), end));
}

/// Size: the element count as an i64 scalar (product of the shape).
Results importSize(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  auto shape = create<ShapeOp>(c, c.input(0), (int64_t)0, IntegerAttr());
  if (failed(shape))
    return failure();
  return single(create<ReduceProdOp>(c, *shape, SmallVector<int64_t>{0}, (int64_t)0));
}

} // namespace

void addShapeImporters(llvm::StringMap<NodeImporter> &t) {
  t["Reshape"] = importReshape;
  t["Flatten"] = importFlatten;
  t["Transpose"] = importTranspose;
  t["Squeeze"] = importSqueeze;
  t["Unsqueeze"] = importUnsqueeze;
  t["Expand"] = importExpand;
  t["Tile"] = importTile;
  t["DepthToSpace"] = [](NodeContext &c) { return importDepthSpace(c, true); };
  t["SpaceToDepth"] = [](NodeContext &c) { return importDepthSpace(c, false); };
  t["Shape"] = importShape;
  t["Size"] = importSize;
}

} // namespace kiln
