// Signal-processing ops: the Hann, Hamming and Blackman windows, composed from graph ops.
#include "compiler/importer/ImportBuilders.h"

#include "compiler/importer/ModelSource.h"

#include <cmath>

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

/// A generalized cosine window of run-time length `size` (input 0):
/// w[n] = sum_k a_k cos(2 pi k n / N), N = size when periodic, else size - 1.
/// The length is a value of the model, so the result is 1-D of dynamic size
/// (graph.range carries the run-time bound).
Results importCosineWindow(NodeContext &c, ArrayRef<double> coefficients) {
  if (failed(require(c, 1)))
    return failure();
  Value size = c.input(0);
  auto st = cast<RankedTensorType>(size.getType());
  Type it = st.getElementType();
  if (!it.isInteger(32) && !it.isInteger(64))
    return c.fail("unsupported window size type (int32 or int64 expected)");
  if (st.getRank() > 1 || (st.getRank() == 1 && st.getDimSize(0) != 1))
    return c.fail("size must be a scalar");
  if (st.getRank() == 1) {
    auto scalar = create<ReshapeOp>(c, size, c.i64Constant({}), (int64_t)0);
    if (failed(scalar))
      return failure();
    size = *scalar;
  }
  int64_t dtype = c.intAttr("output_datatype", onnx::TensorProto::FLOAT);
  Type outType = onnxElementType(c.b.getContext(), dtype);
  if (!outType || outType.isInteger(1))
    return c.fail("unsupported output_datatype " + Twine(dtype));
  // f64 output is computed in f64, everything else in f32 then converted.
  Type ft = outType.isF64() ? (Type)c.b.getF64Type() : (Type)c.b.getF32Type();
  auto n = create<RangeOp>(c, scalarConstant(c, it, 0), size, scalarConstant(c, it, 1));
  if (failed(n))
    return failure();
  auto nf = create<CastOp>(c, *n, ft);
  if (failed(nf))
    return failure();
  Value period = size;
  if (!c.intAttr("periodic", 1)) {
    auto shorter = create<SubOp>(c, size, scalarConstant(c, it, 1));
    if (failed(shorter))
      return failure();
    period = *shorter;
  }
  auto periodF = create<CastOp>(c, period, ft);
  if (failed(periodF))
    return failure();
  auto turns = create<DivOp>(c, *nf, *periodF); // n / N
  if (failed(turns))
    return failure();
  Value w = scalarConstant(c, ft, coefficients[0]);
  for (size_t k = 1; k < coefficients.size(); ++k) {
    auto phase = create<MulOp>(c, *turns, scalarConstant(c, ft, 2 * M_PI * k));
    if (failed(phase))
      return failure();
    auto cosine = create<CosOp>(c, *phase);
    if (failed(cosine))
      return failure();
    auto term = create<MulOp>(c, *cosine, scalarConstant(c, ft, coefficients[k]));
    if (failed(term))
      return failure();
    auto sum = create<AddOp>(c, w, *term);
    if (failed(sum))
      return failure();
    w = *sum;
  }
  if (outType == ft)
    return SmallVector<Value>{w};
  return single(create<CastOp>(c, w, outType));
}

} // namespace

void addSignalImporters(llvm::StringMap<NodeImporter> &t) {
  t["HannWindow"] = [](NodeContext &c) { return importCosineWindow(c, {0.5, -0.5}); };
  t["HammingWindow"] = [](NodeContext &c) {
    return importCosineWindow(c, {25.0 / 46.0, -(1.0 - 25.0 / 46.0)});
  };
  t["BlackmanWindow"] = [](NodeContext &c) { return importCosineWindow(c, {0.42, -0.5, 0.08}); };
}

} // namespace kiln
