// Graph op definitions: folders and the constant materializer (shape inference is in ShapeInference.cpp).
#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln::graph;

#define GET_OP_CLASSES
#include "dialects/graph/IR/GraphOps.cpp.inc"

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto inputType = llvm::cast<RankedTensorType>(getInput().getType());
  auto resultType = llvm::cast<RankedTensorType>(getType());
  int64_t rank = inputType.getRank();
  int64_t start = (int64_t)getStart() < 0 ? (int64_t)getStart() + rank : (int64_t)getStart();
  start = std::clamp<int64_t>(start, 0, rank);
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < resultType.getDimSize(0); ++i) {
    int64_t d = inputType.getDimSize(start + i);
    if (d == ShapedType::kDynamic)
      return {};
    dims.push_back(d);
  }
  return DenseIntElementsAttr::get(resultType, dims);
}

/// Same rank and element type, each dim equal or dynamic on either side.
static bool compatibleRefinement(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [a, b] : llvm::zip(inferred, actual)) {
    auto ta = llvm::dyn_cast<RankedTensorType>(a), tb = llvm::dyn_cast<RankedTensorType>(b);
    if (!ta || !tb || ta.getElementType() != tb.getElementType() || ta.getRank() != tb.getRank())
      return false;
    for (int64_t i = 0; i < ta.getRank(); ++i)
      if (!ta.isDynamicDim(i) && !tb.isDynamicDim(i) && ta.getDimSize(i) != tb.getDimSize(i))
        return false;
  }
  return true;
}

bool ReshapeOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) { return compatibleRefinement(l, r); }
bool ConstantOfShapeOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) { return compatibleRefinement(l, r); }
