// Result types of the KV cache graph ops (KvCacheOps.td): views of the valid prefix.
#include "dialects/graph/IR/ShapeInference.h"

using namespace mlir;
using namespace kiln::graph::detail;

namespace kiln::graph {

/// The cache's type with the cache axis dynamic (its length depends on the position).
static LogicalResult inferCacheView(std::optional<Location> loc, Value cache, int64_t axis,
                                    SmallVectorImpl<Type> &types) {
  auto t = rankedType(cache);
  if (axis < 0 || axis >= t.getRank())
    return fail(loc, "kv cache axis " + Twine(axis) + " is out of range for rank " + Twine(t.getRank()));
  SmallVector<int64_t> dims(t.getShape());
  dims[axis] = kDyn;
  types.push_back(t.clone(dims));
  return success();
}

LogicalResult KvCacheAppendOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto c = rankedType(adaptor.getCache()), u = rankedType(adaptor.getUpdate());
  int64_t axis = adaptor.getAxis();
  if (c.getRank() != u.getRank() || c.getElementType() != u.getElementType())
    return fail(loc, "kv cache update must have the cache's rank and element type");
  for (int64_t i = 0; i < c.getRank(); ++i)
    if (i != axis && c.getDimSize(i) != kDyn && u.getDimSize(i) != kDyn && c.getDimSize(i) != u.getDimSize(i))
      return fail(loc, "kv cache update differs from the cache in dimension " + Twine(i));
  // Per-row positions index dim 0, the batch: it cannot also be the appended axis.
  if (adaptor.getRowPositions() && (axis == 0 || c.getRank() < 2))
    return fail(loc, "kv cache row positions need a batch dimension 0 that is not the cache axis");
  return inferCacheView(loc, adaptor.getCache(), axis, types);
}

LogicalResult KvCachePrefixOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferCacheView(loc, adaptor.getCache(), adaptor.getAxis(), types);
}

LogicalResult KvCachePagedWriteOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                    SmallVectorImpl<Type> &types) {
  auto p = rankedType(adaptor.getPool()), u = rankedType(adaptor.getUpdate());
  int64_t axis = adaptor.getAxis();
  if (p.getRank() != u.getRank() || p.getElementType() != u.getElementType())
    return fail(loc, "paged kv cache update must have the pool's rank and element type");
  if (axis <= 0 || axis >= p.getRank() || p.isDynamicDim(axis))
    return fail(loc, "paged kv cache axis must be a static dim other than 0 (the blocks)");
  for (int64_t i = 1; i < p.getRank(); ++i)
    if (i != axis && p.getDimSize(i) != kDyn && u.getDimSize(i) != kDyn && p.getDimSize(i) != u.getDimSize(i))
      return fail(loc, "paged kv cache update differs from the pool in dimension " + Twine(i));
  types.push_back(p);
  return success();
}

LogicalResult KvCachePagedViewOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                                   SmallVectorImpl<Type> &types) {
  auto p = rankedType(adaptor.getPool()), t = rankedType(adaptor.getBlockTable());
  int64_t axis = adaptor.getAxis();
  if (axis <= 0 || axis >= p.getRank() || p.isDynamicDim(axis))
    return fail(loc, "paged kv cache axis must be a static dim other than 0 (the blocks)");
  if (adaptor.getUpdate()) {
    auto u = rankedType(adaptor.getUpdate());
    if (u.getRank() != p.getRank() || u.getElementType() != p.getElementType())
      return fail(loc, "paged kv cache update must have the pool's rank and element type");
  }
  SmallVector<int64_t> dims(p.getShape());
  dims[0] = t.getDimSize(0);
  dims[axis] = kDyn;
  types.push_back(p.clone(dims));
  return success();
}

} // namespace kiln::graph
