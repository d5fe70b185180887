// Signal-processing ops (windows, DFT, STFT, mel filters), composed from graph ops.
#include "compiler/importer/OpCreate.h"

#include "compiler/importer/ModelSource.h"

#include "mlir/IR/Matchers.h"

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

/// A constant [n, k] matrix of f(2 pi i j / n) * scale for rows i < n, columns j < k.
Value twiddles(NodeContext &c, Type ft, int64_t n, int64_t k, double scale, double (*f)(double)) {
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j)
      values.push_back(c.b.getFloatAttr(ft, scale * f(2 * M_PI * double((i * j) % n) / double(n))));
  return ConstantOp::create(c.b, c.loc, DenseElementsAttr::get(RankedTensorType::get({n, k}, ft), values));
}

/// Y = (re A + im B) + i (im A - re B) for signals along the last axis of
/// re/im (im null for a real signal) and [n, k] matrices A, B; returns Y's
/// real and imaginary parts.
FailureOr<std::pair<Value, Value>> complexProduct(NodeContext &c, Value re, Value im, Value a, Value bm) {
  auto outRe = create<MatMulOp>(c, re, a);
  auto reB = create<MatMulOp>(c, re, bm);
  if (failed(outRe) || failed(reB))
    return failure();
  auto outIm = create<NegOp>(c, *reB);
  if (failed(outIm))
    return failure();
  if (im) {
    auto imA = create<MatMulOp>(c, im, a), imB = create<MatMulOp>(c, im, bm);
    if (failed(imA) || failed(imB))
      return failure();
    outRe = create<AddOp>(c, *outRe, *imB);
    outIm = create<AddOp>(c, *imA, *outIm);
    if (failed(outRe) || failed(outIm))
      return failure();
  }
  return std::pair{*outRe, *outIm};
}

/// Component `which` (0 real, 1 imaginary) of a [..., 1|2] signal, that axis dropped.
FailureOr<Value> component(NodeContext &c, Value x, int64_t which) {
  Value index = ConstantOp::create(c.b, c.loc,
                                   DenseElementsAttr::get(RankedTensorType::get({}, c.b.getI64Type()), which));
  return create<GatherOp>(c, x, index, rankOf(x) - 1);
}

/// [..., re/im] from the two parts.
FailureOr<Value> stackComplex(NodeContext &c, Value re, Value im) {
  int64_t rank = rankOf(re);
  auto lre = create<UnsqueezeOp>(c, re, ArrayRef<int64_t>{rank});
  auto lim = create<UnsqueezeOp>(c, im, ArrayRef<int64_t>{rank});
  if (failed(lre) || failed(lim))
    return failure();
  return create<ConcatOp>(c, ValueRange{*lre, *lim}, rank);
}

FailureOr<std::pair<Value, Value>> runtimeTwiddles(NodeContext &c, Type resultType, Value n, Value k);

/// DFT as products with cosine and sine matrices (the axis moved last):
/// with X = re + i im and A, B the scaled cosines and signed sines,
/// Y = (re A + im B) + i (im A - re B). Forward: A = cos, B = sin; inverse:
/// A = cos / N, B = -sin / N. A real input (last dim 1) has no im terms. The
/// matrices are constants for a static axis, computed at run time from the
/// axis's size otherwise.
Results importDft(NodeContext &c) {
  if (failed(require(c, 1)))
    return failure();
  Value x = c.input(0);
  auto xt = cast<RankedTensorType>(x.getType());
  Type ft = xt.getElementType();
  int64_t rank = xt.getRank();
  if (!isa<FloatType>(ft))
    return c.fail("unsupported DFT input type (float expected)");
  if (rank < 2 || xt.isDynamicDim(rank - 1) || (xt.getDimSize(rank - 1) != 1 && xt.getDimSize(rank - 1) != 2))
    return c.fail("DFT input's last dim must be 1 (real) or 2 (complex)");
  bool complexIn = xt.getDimSize(rank - 1) == 2;
  // Opset 20 moved the axis (default -2) into input 2.
  int64_t axis = c.intAttr("axis", 1);
  if (c.opset >= 20) {
    axis = -2;
    if (c.input(2)) {
      auto given = c.constantInts(c.input(2), "axis");
      if (failed(given))
        return failure();
      if (given->size() != 1)
        return c.fail("axis must be a single value");
      axis = (*given)[0];
    }
  }
  int64_t requested = axis;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return c.fail("DFT axis " + Twine(requested) + " out of range (the last axis holds the components)");
  int64_t n = xt.getDimSize(axis);
  if (n == 0)
    return c.fail("DFT needs a non-empty signal axis");
  if (c.input(1) && n == ShapedType::kDynamic)
    return c.fail("unsupported: dft_length with a signal axis of dynamic size");
  if (c.input(1)) {
    auto length = c.constantInts(c.input(1), "dft_length");
    if (failed(length))
      return failure();
    if (length->size() != 1 || (*length)[0] != n)
      return c.fail("unsupported dft_length (only the signal's own length " + Twine(n) + ")");
  }
  bool inverse = c.intAttr("inverse", 0), onesided = c.intAttr("onesided", 0);
  Value a, bm;
  if (n != ShapedType::kDynamic) {
    int64_t k = onesided ? n / 2 + 1 : n;
    double scale = inverse ? 1.0 / n : 1.0;
    a = twiddles(c, ft, n, k, scale, [](double t) { return std::cos(t); });
    bm = twiddles(c, ft, n, k, inverse ? -scale : scale, [](double t) { return std::sin(t); });
  } else {
    Emitter e{c, ft};
    Type i64 = c.b.getI64Type();
    Value size = e.op<ShapeOp>(x, axis, c.b.getI64IntegerAttr(axis + 1));
    Value nv = e.op<ReshapeOp>(size, c.i64Constant({}), (int64_t)0);
    Value kv = onesided ? e.add(e.op<DivOp>(nv, scalarConstant(c, i64, 2)), scalarConstant(c, i64, 1)) : nv;
    if (!e.ok)
      return failure();
    auto tw = runtimeTwiddles(c, ft, nv, kv);
    if (failed(tw))
      return failure();
    a = tw->first;
    bm = tw->second;
    if (inverse) {
      Value invN = e.op<DivOp>(e.scalar(1.0), e.op<CastOp>(nv, ft));
      a = e.mul(a, invN);
      bm = e.mul(bm, e.op<NegOp>(invN));
      if (!e.ok)
        return failure();
    }
  }
  // Components as [..., signal axis last]; perm moves the axis to the end.
  SmallVector<int64_t> perm, back(rank - 1);
  for (int64_t i = 0; i < rank - 1; ++i)
    if (i != axis)
      perm.push_back(i);
  perm.push_back(axis);
  for (int64_t i = 0; i < rank - 1; ++i)
    back[perm[i]] = i;
  auto axisLast = [&](int64_t which) -> FailureOr<Value> {
    auto part = component(c, x, which);
    if (failed(part))
      return failure();
    return create<TransposeOp>(c, *part, perm);
  };
  auto re = axisLast(0);
  FailureOr<Value> im = complexIn ? axisLast(1) : FailureOr<Value>(Value());
  if (failed(re) || failed(im))
    return failure();
  auto y = complexProduct(c, *re, *im, a, bm);
  if (failed(y))
    return failure();
  auto yRe = create<TransposeOp>(c, y->first, back), yIm = create<TransposeOp>(c, y->second, back);
  if (failed(yRe) || failed(yIm))
    return failure();
  return single(stackComplex(c, *yRe, *yIm));
}

/// A one-element integer input as a rank-0 i64 tensor.
FailureOr<Value> i64Scalar(NodeContext &c, Value v, StringRef what) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!isa<IntegerType>(t.getElementType()) || !t.hasStaticShape() || t.getNumElements() != 1) {
    (void)c.fail(what + Twine(" must be a single integer"));
    return failure();
  }
  if (t.getRank() != 0) {
    auto scalar = create<ReshapeOp>(c, v, c.i64Constant({}), (int64_t)0);
    if (failed(scalar))
      return failure();
    v = *scalar;
  }
  if (t.getElementType().isInteger(64))
    return v;
  return create<CastOp>(c, v, c.b.getI64Type());
}

/// Cosines and sines [n, k] of 2 pi ((i * j) mod n) / n, with n and k run-time scalars.
/// Computed in f64: f32 sines of multiples of pi are off by ~1e-7 relative
/// to their argument, where ONNX expects the exact zeros of a real FFT.
FailureOr<std::pair<Value, Value>> runtimeTwiddles(NodeContext &c, Type resultType, Value n, Value k) {
  Type i64 = c.b.getI64Type(), ft = c.b.getF64Type();
  auto rows = create<RangeOp>(c, scalarConstant(c, i64, 0), n, scalarConstant(c, i64, 1));
  auto cols = create<RangeOp>(c, scalarConstant(c, i64, 0), k, scalarConstant(c, i64, 1));
  if (failed(rows) || failed(cols))
    return failure();
  auto r2 = create<UnsqueezeOp>(c, *rows, ArrayRef<int64_t>{1});
  auto c2 = create<UnsqueezeOp>(c, *cols, ArrayRef<int64_t>{0});
  if (failed(r2) || failed(c2))
    return failure();
  auto ij = create<MulOp>(c, *r2, *c2);
  if (failed(ij))
    return failure();
  auto wrapped = create<ModOp>(c, *ij, n, (int64_t)0); // exact phases for large i * j
  if (failed(wrapped))
    return failure();
  auto wf = create<CastOp>(c, *wrapped, ft), nf = create<CastOp>(c, n, ft);
  if (failed(wf) || failed(nf))
    return failure();
  auto turns = create<DivOp>(c, *wf, *nf);
  if (failed(turns))
    return failure();
  auto phase = create<MulOp>(c, *turns, scalarConstant(c, ft, 2 * M_PI));
  if (failed(phase))
    return failure();
  auto cosine = create<CosOp>(c, *phase), sine = create<SinOp>(c, *phase);
  if (failed(cosine) || failed(sine))
    return failure();
  if (resultType == ft)
    return std::pair{*cosine, *sine};
  cosine = create<CastOp>(c, *cosine, resultType);
  sine = create<CastOp>(c, *sine, resultType);
  if (failed(cosine) || failed(sine))
    return failure();
  return std::pair{*cosine, *sine};
}

/// STFT: frames f of length W (frame_length, else the window's length) start
/// at f * frame_step, F = (L - W) / frame_step + 1 of them; each is
/// multiplied by the window and transformed (first W / 2 + 1 bins when
/// onesided). Frame gathers and the DFT matrices follow run-time steps and
/// lengths; a static window length gives constant matrices.
Results importStft(NodeContext &c) {
  if (failed(require(c, 2)))
    return failure();
  Value signal = c.input(0), window = c.input(2), frameLength = c.input(3);
  auto st = cast<RankedTensorType>(signal.getType());
  Type ft = st.getElementType();
  Type i64 = c.b.getI64Type();
  if (!isa<FloatType>(ft))
    return c.fail("unsupported STFT signal type (float expected)");
  if (st.getRank() != 3 || st.isDynamicDim(2) || (st.getDimSize(2) != 1 && st.getDimSize(2) != 2))
    return c.fail("STFT signal must be [batch, length, 1 or 2]");
  bool onesided = c.intAttr("onesided", 1);
  auto step = i64Scalar(c, c.input(1), "frame_step");
  if (failed(step))
    return failure();
  // frame_step must be positive; a zero from the data must not trap the division.
  step = create<MaxOp>(c, *step, scalarConstant(c, i64, 1));
  if (failed(step))
    return failure();
  if (window) {
    auto wt = cast<RankedTensorType>(window.getType());
    if (wt.getRank() != 1 || wt.getElementType() != ft)
      return c.fail("window must be 1-D of the signal's type");
  }
  // The frame length: static from the window when possible.
  int64_t staticW = ShapedType::kDynamic;
  Value w;
  if (frameLength) {
    auto fl = i64Scalar(c, frameLength, "frame_length");
    if (failed(fl))
      return failure();
    w = *fl;
    DenseIntElementsAttr flAttr;
    if (matchPattern(w, m_Constant(&flAttr)))
      staticW = (*flAttr.getValues<APInt>().begin()).getSExtValue();
  } else if (window) {
    auto wt = cast<RankedTensorType>(window.getType());
    staticW = wt.getDimSize(0);
    if (staticW == ShapedType::kDynamic) {
      auto shape = create<ShapeOp>(c, window, (int64_t)0, IntegerAttr());
      if (failed(shape))
        return failure();
      auto scalar = i64Scalar(c, *shape, "window length");
      if (failed(scalar))
        return failure();
      w = *scalar;
    }
  } else {
    return c.fail("STFT needs a window or frame_length");
  }
  if (staticW != ShapedType::kDynamic) {
    if (staticW <= 0)
      return c.fail("frame length must be positive");
    w = scalarConstant(c, i64, (double)staticW);
  }
  Value length;
  if (!st.isDynamicDim(1)) {
    length = scalarConstant(c, i64, (double)st.getDimSize(1));
  } else {
    auto shape = create<ShapeOp>(c, signal, (int64_t)1, c.b.getI64IntegerAttr(2));
    if (failed(shape))
      return failure();
    auto scalar = i64Scalar(c, *shape, "signal length");
    if (failed(scalar))
      return failure();
    length = *scalar;
  }
  auto span = create<SubOp>(c, length, w);
  if (failed(span))
    return failure();
  auto frames = create<DivOp>(c, *span, *step);
  if (failed(frames))
    return failure();
  frames = create<AddOp>(c, *frames, scalarConstant(c, i64, 1));
  if (failed(frames))
    return failure();
  // Sample indices [F, W]: f * step + n.
  auto f = create<RangeOp>(c, scalarConstant(c, i64, 0), *frames, scalarConstant(c, i64, 1));
  auto n = create<RangeOp>(c, scalarConstant(c, i64, 0), w, scalarConstant(c, i64, 1));
  if (failed(f) || failed(n))
    return failure();
  auto starts = create<MulOp>(c, *f, *step);
  if (failed(starts))
    return failure();
  auto s2 = create<UnsqueezeOp>(c, *starts, ArrayRef<int64_t>{1});
  auto n2 = create<UnsqueezeOp>(c, *n, ArrayRef<int64_t>{0});
  if (failed(s2) || failed(n2))
    return failure();
  auto indices = create<AddOp>(c, *s2, *n2);
  if (failed(indices))
    return failure();
  auto framed = [&](int64_t which) -> FailureOr<Value> {
    auto part = component(c, signal, which);
    if (failed(part))
      return failure();
    auto g = create<GatherOp>(c, *part, *indices, (int64_t)1); // [B, F, W]
    if (failed(g) || !window)
      return g;
    return create<MulOp>(c, *g, window);
  };
  auto re = framed(0);
  FailureOr<Value> im = st.getDimSize(2) == 2 ? framed(1) : FailureOr<Value>(Value());
  if (failed(re) || failed(im))
    return failure();
  Value a, bm;
  if (staticW != ShapedType::kDynamic) {
    int64_t k = onesided ? staticW / 2 + 1 : staticW;
    a = twiddles(c, ft, staticW, k, 1.0, [](double t) { return std::cos(t); });
    bm = twiddles(c, ft, staticW, k, 1.0, [](double t) { return std::sin(t); });
  } else {
    Value k = w;
    if (onesided) {
      auto half = create<DivOp>(c, w, scalarConstant(c, i64, 2));
      if (failed(half))
        return failure();
      auto bins = create<AddOp>(c, *half, scalarConstant(c, i64, 1));
      if (failed(bins))
        return failure();
      k = *bins;
    }
    auto tw = runtimeTwiddles(c, ft, w, k);
    if (failed(tw))
      return failure();
    a = tw->first;
    bm = tw->second;
  }
  auto y = complexProduct(c, *re, *im, a, bm);
  if (failed(y))
    return failure();
  return single(stackComplex(c, y->first, y->second));
}

/// MelWeightMatrix [dft_length / 2 + 1, num_mel_bins]: triangular filters
/// whose edges are num_mel_bins + 2 points equally spaced on the mel scale
/// from lower_edge_hertz to upper_edge_hertz (step: range / (bins + 2), as
/// ONNX's reference), mapped to spectrogram bins floor((dft_length + 1) *
/// hz / sample_rate) in f64. Filter i rises from its left edge l to its
/// centre c ((j - l) / (c - l); 1 at c when l == c) and falls to its right
/// edge h ((h - j) / (h - c), for c <= j < h), the fall taking precedence.
Results importMelWeightMatrix(NodeContext &c) {
  if (failed(require(c, 5)))
    return failure();
  Type i64 = c.b.getI64Type(), f64 = c.b.getF64Type(), f32 = c.b.getF32Type();
  auto bins = i64Scalar(c, c.input(0), "num_mel_bins");
  auto dft = i64Scalar(c, c.input(1), "dft_length");
  auto rate = i64Scalar(c, c.input(2), "sample_rate");
  if (failed(bins) || failed(dft) || failed(rate))
    return failure();
  SmallVector<Value> edges;
  for (int i = 3; i < 5; ++i) {
    auto t = cast<RankedTensorType>(c.input(i).getType());
    if (!isa<FloatType>(t.getElementType()) || !t.hasStaticShape() || t.getNumElements() != 1)
      return c.fail("lower_edge_hertz and upper_edge_hertz must be single floats");
    Value v = c.input(i);
    if (t.getRank() != 0) {
      auto scalar = create<ReshapeOp>(c, v, c.i64Constant({}), (int64_t)0);
      if (failed(scalar))
        return failure();
      v = *scalar;
    }
    auto wide = create<CastOp>(c, v, f64);
    if (failed(wide))
      return failure();
    edges.push_back(*wide);
  }
  int64_t dtype = c.intAttr("output_datatype", onnx::TensorProto::FLOAT);
  Type outType = onnxElementType(c.b.getContext(), dtype);
  if (!outType || outType.isInteger(1))
    return c.fail("unsupported output_datatype " + Twine(dtype));
  // Chains of graph ops, stopping at the first failure.
  bool ok = true;
  auto check = [&](FailureOr<Value> v) -> Value {
    if (failed(v)) {
      ok = false;
      return scalarConstant(c, f64, 0);
    }
    return *v;
  };
  auto k = [&](Type t, double v) { return scalarConstant(c, t, v); };
  auto toMel = [&](Value hz) {
    Value ratio = check(create<AddOp>(c, check(create<DivOp>(c, hz, k(f64, 700))), k(f64, 1)));
    return check(create<MulOp>(c, check(create<LogOp>(c, ratio)), k(f64, 2595 / std::log(10.0))));
  };
  Value lowMel = toMel(edges[0]), highMel = toMel(edges[1]);
  Value points = check(create<AddOp>(c, *bins, k(i64, 2)));
  Value melStep = check(create<DivOp>(c, check(create<SubOp>(c, highMel, lowMel)),
                                      check(create<CastOp>(c, points, f64))));
  Value index = check(create<RangeOp>(c, k(i64, 0), points, k(i64, 1)));
  Value mel = check(create<AddOp>(c, check(create<MulOp>(c, check(create<CastOp>(c, index, f64)), melStep)),
                                  lowMel));
  Value hz = check(create<MulOp>(c, check(create<SubOp>(c, check(create<PowOp>(c, k(f64, 10),
                                                                              check(create<DivOp>(c, mel, k(f64, 2595))))),
                                                        k(f64, 1))),
                                 k(f64, 700)));
  Value dftPlus = check(create<CastOp>(c, check(create<AddOp>(c, *dft, k(i64, 1))), f64));
  Value binF = check(create<FloorOp>(c, check(create<DivOp>(c, check(create<MulOp>(c, hz, dftPlus)),
                                                            check(create<CastOp>(c, *rate, f64))))));
  if (!ok)
    return failure();
  // Edges l, c, h of filter i are points i, i + 1, i + 2, as [1, bins] rows
  // (f32, exact for bin numbers).
  Value edgeF = check(create<CastOp>(c, binF, f32));
  auto edgeRow = [&](int64_t offset) {
    Value from = check(create<RangeOp>(c, k(i64, (double)offset),
                                       check(create<AddOp>(c, *bins, k(i64, (double)offset))), k(i64, 1)));
    return check(create<UnsqueezeOp>(c, check(create<GatherOp>(c, edgeF, from, (int64_t)0)), ArrayRef<int64_t>{0}));
  };
  Value l = edgeRow(0), ctr = edgeRow(1), h = edgeRow(2);
  Value spectrum = check(create<AddOp>(c, check(create<DivOp>(c, *dft, k(i64, 2))), k(i64, 1)));
  Value j = check(create<UnsqueezeOp>(c, check(create<CastOp>(c, check(create<RangeOp>(c, k(i64, 0), spectrum, k(i64, 1))), f32)),
                                      ArrayRef<int64_t>{1})); // [K, 1]
  if (!ok)
    return failure();
  Value one = k(f32, 1), zero = k(f32, 0);
  Value rising = check(create<AndOp>(c, check(create<LessOrEqualOp>(c, l, j)), check(create<LessOrEqualOp>(c, j, ctr))));
  Value riseVal = check(create<DivOp>(c, check(create<SubOp>(c, j, l)), check(create<SubOp>(c, ctr, l))));
  riseVal = check(create<WhereOp>(c, check(create<EqualOp>(c, ctr, l)), one, riseVal));
  Value falling = check(create<AndOp>(c, check(create<LessOrEqualOp>(c, ctr, j)), check(create<LessOp>(c, j, h))));
  Value fallVal = check(create<DivOp>(c, check(create<SubOp>(c, h, j)), check(create<SubOp>(c, h, ctr))));
  if (!ok)
    return failure();
  auto out = create<WhereOp>(c, rising, riseVal, zero);
  if (failed(out))
    return failure();
  out = create<WhereOp>(c, falling, fallVal, *out);
  if (failed(out) || outType == f32)
    return single(out);
  return single(create<CastOp>(c, *out, outType));
}

} // namespace

void addSignalImporters(llvm::StringMap<NodeImporter> &t) {
  t["HannWindow"] = [](NodeContext &c) { return importCosineWindow(c, {0.5, -0.5}); };
  t["HammingWindow"] = [](NodeContext &c) {
    return importCosineWindow(c, {25.0 / 46.0, -(1.0 - 25.0 / 46.0)});
  };
  t["BlackmanWindow"] = [](NodeContext &c) { return importCosineWindow(c, {0.42, -0.5, 0.08}); };
  t["DFT"] = importDft;
  t["STFT"] = importStft;
  t["MelWeightMatrix"] = importMelWeightMatrix;
}

} // namespace kiln
