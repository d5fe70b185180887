// Quantization arithmetic and panel packing shared by kiln-quantize-weights and kiln-fold-qdq.
#include "passes/quant/QuantUtils.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace kiln::quant {

int64_t panelWidthFor(int64_t n, int64_t widest) {
  if (widest == 1)
    return 1;
  for (int64_t b = widest; b >= 16; b /= 2)
    if (n % b == 0)
      return b;
  return 0;
}

int64_t paddedPanelWidthFor(int64_t n, int64_t widest) {
  if (int64_t b = panelWidthFor(n, widest))
    return b;
  return n >= 16 ? 16 : 0;
}

bool readInt8Constant(ElementsAttr attr, std::vector<int8_t> &out) {
  auto type = cast<ShapedType>(attr.getType());
  std::vector<char> scratch;
  ArrayRef<char> bytes;
  if (!type.getElementType().isInteger(8) || !graph::constantBytes(attr, scratch, bytes) ||
      bytes.size() != size_t(type.getNumElements()))
    return false;
  out.assign(bytes.begin(), bytes.end());
  return true;
}

uint16_t toHalfBits(float f, bool bfloat) {
  llvm::APFloat v(f);
  bool lost = false;
  v.convert(bfloat ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return uint16_t(v.bitcastToAPInt().getZExtValue());
}

namespace {

float fromHalfBits(uint16_t h) {
  llvm::APFloat v(llvm::APFloat::IEEEhalf(), llvm::APInt(16, h));
  bool lost = false;
  v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return v.convertToFloat();
}

/// Lays out q ([K, N] through `view`) in panels and the [K/group, N] scales
/// as [N/B, K/group, B].
PackedWeight pack(const int8_t *q, MatrixView view, const std::vector<float> &scales, int bits, int64_t group,
                  int64_t width, bool f16Scales, bool pairs) {
  PackedWeight p;
  p.bits = bits;
  p.k = view.k;
  p.n = view.n;
  p.width = width;
  p.group = group;
  p.f16Scales = f16Scales;
  p.pairs = pairs;
  // Columns past N (a padded last panel) hold zeros with scale 0.
  int64_t panels = (view.n + width - 1) / width, groups = view.k / group;
  int64_t rows = bits == 4 ? view.k / 2 : view.k;
  p.weight.assign(panels * rows * width, 0);
  for (int64_t pn = 0; pn < panels; ++pn)
    for (int64_t k = 0; k < view.k; ++k)
      for (int64_t c = 0; c < width && pn * width + c < view.n; ++c) {
        int8_t v = q[view.at(k, pn * width + c)];
        if (pairs) {
          p.weight[(pn * (view.k / 2) + k / 2) * 2 * width + 2 * c + k % 2] = v;
        } else if (bits == 8) {
          p.weight[(pn * rows + k) * width + c] = v;
        } else {
          // Two k per byte: even k in the low nibble, odd k in the high one.
          int8_t &byte = p.weight[(pn * rows + k / 2) * width + c];
          uint8_t nib = uint8_t(v) & 0xF;
          byte = int8_t(k % 2 ? (uint8_t(byte) & 0x0F) | (nib << 4) : (uint8_t(byte) & 0xF0) | nib);
        }
      }
  size_t elem = f16Scales ? 2 : 4;
  p.scales.assign(panels * groups * width * elem, 0);
  for (int64_t pn = 0; pn < panels; ++pn)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t c = 0; c < width && pn * width + c < view.n; ++c) {
        float s = scales[g * view.n + pn * width + c];
        char *dst = p.scales.data() + ((pn * groups + g) * width + c) * elem;
        if (f16Scales) {
          uint16_t h = toHalfBits(s);
          std::memcpy(dst, &h, 2);
        } else {
          std::memcpy(dst, &s, 4);
        }
      }
  return p;
}

} // namespace

PackedWeight quantizeWeight(const float *w, MatrixView view, int bits, int64_t group, int64_t width,
                            bool f16Scales, bool pairs) {
  if (group <= 0)
    group = view.k;
  int64_t groups = view.k / group;
  float qmax = bits == 8 ? 127.0f : 7.0f, qmin = bits == 8 ? -127.0f : -8.0f;
  std::vector<float> scales(groups * view.n);
  std::vector<int8_t> q(view.k * view.n);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t col = 0; col < view.n; ++col) {
      float amax = 0;
      for (int64_t k = g * group; k < (g + 1) * group; ++k)
        amax = std::max(amax, std::fabs(w[view.at(k, col)]));
      float s = amax / qmax;
      // Quantize with the scale as stored, so that f16 rounding is part of
      // the measured error rather than a hidden second one.
      if (f16Scales)
        s = fromHalfBits(toHalfBits(s));
      scales[g * view.n + col] = s;
      for (int64_t k = g * group; k < (g + 1) * group; ++k) {
        float v = s > 0 ? std::nearbyint(w[view.at(k, col)] / s) : 0.0f;
        q[view.at(k, col)] = int8_t(std::min(qmax, std::max(qmin, v)));
      }
    }
  return pack(q.data(), view, scales, bits, group, width, f16Scales, pairs);
}

PackedWeight packQuantized(const int8_t *q, MatrixView view, const float *scales, int64_t group, int64_t width,
                           bool pairs) {
  std::vector<float> s(scales, scales + (view.k / group) * view.n);
  return pack(q, view, s, 8, group, width, false, pairs);
}

Value createResourceConstant(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<char> bytes, StringRef name) {
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, 64, /*dataIsMutable=*/false);
  auto attr = DenseResourceElementsAttr::get(type, name, std::move(blob));
  return graph::ConstantOp::create(b, NameLoc::get(StringAttr::get(b.getContext(), name), loc), attr);
}

Value createPackedWeightConstant(OpBuilder &b, Location loc, const PackedWeight &w, StringRef name) {
  int64_t panels = (w.n + w.width - 1) / w.width, rows = w.bits == 4 || w.pairs ? w.k / 2 : w.k;
  auto type = RankedTensorType::get({panels, rows, w.pairs ? 2 * w.width : w.width}, b.getIntegerType(8));
  std::string wname = (name + (w.bits == 4 ? ".q4" : ".q8")).str();
  ArrayRef<char> bytes(reinterpret_cast<const char *>(w.weight.data()), w.weight.size());
  return createResourceConstant(b, loc, type, bytes, wname);
}

Value createQuantizedMatMul(OpBuilder &b, Location loc, Value lhs, const PackedWeight &w, StringRef name) {
  int64_t panels = (w.n + w.width - 1) / w.width, groups = w.k / w.group;
  Type scaleElem = w.f16Scales ? Type(b.getF16Type()) : Type(b.getF32Type());
  auto scaleType = RankedTensorType::get({panels, groups, w.width}, scaleElem);
  std::string sname = (name + ".scales").str();
  Value weight = createPackedWeightConstant(b, loc, w, name);
  Value scales = createResourceConstant(b, loc, scaleType, w.scales, sname);
  IntegerAttr columns = w.n % w.width ? b.getI64IntegerAttr(w.n) : IntegerAttr();
  return graph::QuantizedMatMulOp::create(b, loc, lhs, weight, scales, b.getI64IntegerAttr(w.bits),
                                          b.getI64IntegerAttr(w.group), columns,
                                          w.pairs ? b.getUnitAttr() : UnitAttr());
}

void eraseDeadGraphOps(Operation *root) {
  bool erased = true;
  while (erased) {
    erased = false;
    root->walk([&](Operation *op) {
      if (op->getDialect() && isa<graph::GraphDialect>(op->getDialect()) && op->use_empty() &&
          op->getNumResults() > 0) {
        op->erase();
        erased = true;
      }
    });
  }
}

} // namespace kiln::quant
