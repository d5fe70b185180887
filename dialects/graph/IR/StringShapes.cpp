// Result types of the string graph ops (StringOps.td).
#include "dialects/graph/IR/ShapeInference.h"

using namespace mlir;
using namespace kiln::graph::detail;

namespace kiln::graph {

// Strings family: string tensors have i128 elements (kiln_abi_string). A cast
// has exactly one string side and one f32/f64 side; StringNormalizer takes
// [C] or [1, C] and gives a data-dependent length.
LogicalResult StringCastOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  Type from = x.getElementType(), to = adaptor.getTo();
  const bool fromString = from.isInteger(128), toString = to.isInteger(128);
  if (fromString == toString)
    return fail(loc, "string_cast needs exactly one string side");
  Type number = fromString ? to : from;
  if (!number.isF32() && !number.isF64())
    return fail(loc, "unsupported string cast " + Twine(fromString ? "from string to " : "to string from ") +
                         "a non-float type (float and double only)");
  types.push_back(RankedTensorType::get(x.getShape(), to));
  return success();
}

LogicalResult StringNormalizerOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
                                                   SmallVectorImpl<Type> &types) {
  auto x = rankedType(adaptor.getInput());
  if (!x.getElementType().isInteger(128))
    return fail(loc, "string_normalizer needs a string input");
  if (x.getRank() != 1 && !(x.getRank() == 2 && (x.getDimSize(0) == 1 || x.getDimSize(0) == kDyn)))
    return fail(loc, "string_normalizer input must be [C] or [1, C]");
  StringRef action = adaptor.getCaseChangeAction();
  if (action != "LOWER" && action != "UPPER" && action != "NONE")
    return fail(loc, "unsupported case_change_action '" + action + "' (LOWER, UPPER or NONE)");
  StringRef locale = adaptor.getLocale();
  if (!locale.empty() && locale != "C" && locale != "en_US" && !locale.starts_with("en_US.") &&
      !locale.starts_with("C."))
    return fail(loc, "unsupported locale '" + locale + "' (kiln's case mapping is that of en_US)");
  for (Attribute w : adaptor.getStopwords())
    if (!isa<StringAttr>(w))
      return fail(loc, "string_normalizer stopwords must be strings");
  SmallVector<int64_t> shape = {kDyn};
  if (x.getRank() == 2)
    shape.insert(shape.begin(), 1);
  types.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}
// end strings family

} // namespace kiln::graph
