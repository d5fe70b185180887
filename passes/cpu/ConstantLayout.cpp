// Constants re-laid out at compile time: permuted, padded, viewed with another shape.
#include "passes/cpu/ConstantLayout.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;

namespace kiln {

SmallVector<int64_t> permuted(ArrayRef<int64_t> dims, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> out;
  for (int64_t p : perm)
    out.push_back(dims[p]);
  return out;
}

namespace {
/// Row-major elements of `bytes` (shape `dims`, `size`-byte elements)
/// permuted: result dim i is source dim perm[i].
std::vector<char> permuteBytes(ArrayRef<char> bytes, ArrayRef<int64_t> dims, ArrayRef<int64_t> perm, size_t size) {
  int64_t rank = dims.size(), count = 1;
  for (int64_t d : dims)
    count *= d;
  SmallVector<int64_t> srcStride(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    srcStride[i] = srcStride[i + 1] * dims[i + 1];
  SmallVector<int64_t> outDims = permuted(dims, perm), index(rank, 0);
  std::vector<char> out(bytes.size());
  for (int64_t e = 0; e < count; ++e) {
    int64_t src = 0;
    for (int64_t i = 0; i < rank; ++i)
      src += index[i] * srcStride[perm[i]];
    std::memcpy(out.data() + e * size, bytes.data() + src * size, size);
    for (int64_t i = rank - 1; i >= 0 && ++index[i] == outDims[i]; --i)
      index[i] = 0;
  }
  return out;
}

} // namespace

/// The constant `value` permuted by `perm` (a lower-rank one first gets
/// leading unit dims, as broadcasting gives it), with `padLast` zeros after
/// each innermost row, optionally viewed with the shape `viewAs`, or null
/// when `value` is not a readable constant.
Value permutedConstant(OpBuilder &b, Value value, ArrayRef<int64_t> perm, StringRef suffix, ArrayRef<int64_t> viewAs,
                       int64_t padLast) {
  auto constant = value.getDefiningOp<graph::ConstantOp>();
  if (!constant)
    return {};
  auto type = cast<RankedTensorType>(value.getType());
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat() || type.getElementTypeBitWidth() % 8)
    return {};
  std::vector<char> scratch;
  ArrayRef<char> bytes;
  if (!graph::constantBytes(constant.getValue(), scratch, bytes))
    return {};
  size_t size = type.getElementTypeBitWidth() / 8;
  if (bytes.size() != size * type.getNumElements())
    return {};
  if ((size_t)type.getRank() > perm.size())
    return {};
  SmallVector<int64_t> dims(perm.size() - type.getRank(), 1);
  dims.append(type.getShape().begin(), type.getShape().end());
  std::vector<char> data = permuteBytes(bytes, dims, perm, size);
  SmallVector<int64_t> outDims = permuted(dims, perm);
  if (padLast > 0) {
    // Zeros after every innermost row.
    int64_t row = outDims.back() * size, rows = data.size() / std::max<int64_t>(row, 1);
    std::vector<char> padded(rows * (row + padLast * size), 0);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(padded.data() + r * (row + padLast * size), data.data() + r * row, row);
    data = std::move(padded);
    outDims.back() += padLast;
  }
  // `viewAs`: the permuted elements under another shape of the same size.
  auto outType = RankedTensorType::get(viewAs.empty() ? outDims : SmallVector<int64_t>(viewAs),
                                       type.getElementType());
  return constantLike(b, constant, outType, data, suffix);
}

Value constantLike(OpBuilder &b, graph::ConstantOp like, RankedTensorType type, ArrayRef<char> data,
                   StringRef suffix) {
  Attribute attr;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(like.getValue())) {
    std::string key = (resource.getRawHandle().getKey() + suffix).str();
    attr = DenseResourceElementsAttr::get(
        type, key, HeapAsmResourceBlob::allocateAndCopyWithAlign(data, 64, /*dataIsMutable=*/false));
  } else {
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(type, data, splat))
      return {};
    attr = DenseElementsAttr::getFromRawBuffer(type, data);
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(like);
  return graph::ConstantOp::create(b, like.getLoc(), cast<ElementsAttr>(attr));
}

Value shapeConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get({(int64_t)shape.size()}, b.getI64Type());
  return graph::ConstantOp::create(b, loc, cast<ElementsAttr>(DenseIntElementsAttr::get(type, shape)));
}

} // namespace kiln
