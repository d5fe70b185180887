// String tensor ops: Cast/CastLike to and from STRING (graph.string_cast), StringNormalizer, and which ops take strings.
#include "compiler/importer/OpCreate.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {

bool isStringType(Type t) {
  if (auto shaped = dyn_cast<ShapedType>(t))
    t = shaped.getElementType();
  return t.isInteger(128);
}

bool acceptsStringInputs(StringRef opType) {
  // Ops that only move elements (their lowerings copy the 16-byte element as it is) or that are
  // string ops themselves. Anything else (Equal, Add, ...) would read the element's bits as a
  // number, so the importer refuses it.
  static const llvm::StringSet<> ops = {"Identity", "Reshape",  "Flatten", "Squeeze",          "Unsqueeze",
                                        "Transpose", "Concat",  "Gather",  "Slice",            "Shape",
                                        "Size",      "Cast",    "CastLike", "StringNormalizer"};
  return ops.contains(opType);
}

/// Cast to or from STRING: `to` is the target element type; one side at least is a string.
Results importStringCast(NodeContext &c, Value input, Type to) {
  if (isStringType(input.getType()) && isStringType(to))
    return SmallVector<Value>{input}; // STRING to STRING changes nothing
  return single(create<StringCastOp>(c, input, to));
}

namespace {

/// StringNormalizer (opset 10). Shape inference checks the input's shape, the action and the
/// locale; the output's length depends on the data.
Results importStringNormalizer(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  if (!isStringType(c.input(0).getType()))
    return c.fail("StringNormalizer needs a string input");
  SmallVector<Attribute> stopwords;
  if (const onnx::AttributeProto *a = c.attr("stopwords"))
    for (const std::string &w : a->strings())
      stopwords.push_back(c.b.getStringAttr(w));
  return single(create<StringNormalizerOp>(c, c.input(0), StringRef(c.stringAttr("case_change_action", "NONE")),
                                           c.intAttr("is_case_sensitive", 0) != 0, c.b.getArrayAttr(stopwords),
                                           StringRef(c.stringAttr("locale", ""))));
}

} // namespace

void addStringImporters(llvm::StringMap<NodeImporter> &t) { t["StringNormalizer"] = importStringNormalizer; }

} // namespace kiln
