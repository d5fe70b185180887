// Splits the expand -> depthwise -> project chains of channels-last programs into row bands over
// maps larger than L2, so that each band's intermediate maps stay in L2 between the kernels.
//
// An inverted-residual block (MobileNet, EfficientNet; a PP-LCNet block without the expansion)
// widens a map with a 1x1 convolution, filters it with a depthwise convolution and narrows it
// with another 1x1 convolution. On a large map the widened one does not fit in L2
// (mobilenet_v2's 112x112x96: 4.8 MB against 2 MiB), so it goes to L3 or memory once written by
// the expansion and comes back once read by the depthwise kernel, which is then bound by that
// stream (docs/performance.md). Computed one band of output rows at a time, the chain's
// intermediates are a few hundred KB each and the next kernel reads them from L2:
//
//   %e = packed_conv 1x1 (%x) ; %a = act(%e) ; %d = nhwc_conv depthwise (%a) ; ... ; %y = ...
// becomes, for bands [r0, r1) of %y's rows,
//   %x_b = slice rows of %x ; %e_b = packed_conv 1x1 (%x_b) ; ... ; %y_b = ...
//   %y = concat(%y_0, %y_1, ...) along the rows
// each band reading the input rows its window needs (a depthwise convolution with a k-row
// window of stride s reads (r1 - r0 - 1) s + k rows, so k - s rows of the expansion are
// computed twice where bands meet: the price of independent bands), with the depthwise
// convolution's top and bottom padding only on the first and last band. Row slices of
// channels-last maps are views, and the concatenation's pieces are written in place
// (kiln-concat-in-place), so nothing is copied; the memory plan gives the bands' intermediates
// the same arena space, band after band. Every op of a band is the same graph op on fewer
// rows, lowered by the same kernels.
//
// A chain starts at a channels-last packed_conv (an expansion, or a stem with its own window)
// whose output map holds `min-map-bytes` or more, and takes the readers of its one escaping
// value while that value is such a large map and they are rowwise ops (activations, channel
// slices, a residual add), 1x1 packed_convs or depthwise nhwc_convs; past a small map only
// activations join (the kernel before finishes them in cache). Every value of the chain but its
// last is read only inside it, and only chains with a depthwise convolution are banded (without
// one, a ResNet's, there is no narrow window to gain by). Maps read from outside (the head's
// input, a residual) are sliced by rows; other operands (weights, biases, one-row scales) are
// read whole. The bands are as many as keep every intermediate map of a band within
// `band-bytes`, halo rows included, with the same rows each.
//
// Measured on the Xeon (docs/performance.md), with the depthwise windows reading their input
// unpadded: mobilenet_v2 4% faster on one thread and level on two (each core's L2 already
// holds half of a whole map there), efficientnet_b0 level, ocr_det 2% faster on one thread and
// 2.5% slower on two. Each band's ops are compiled as kernels of their own: ocr_det's 22-op chain
// in 8 bands took its compile from 11 to 17 s.
//
// Unless `sections=false`, the bands come in an even number, the upper half of them tagged
// section 0 and the lower half section 1 in their ops' locations (passes/host/BandSections.h):
// kiln-run-band-sections then runs each section on one thread, so that on two threads a band's
// rows no longer split between the cores at every kernel (its input rows came from the other
// core for half of the bands, and the depthwise window's halo rows crossed in the middle of
// every band). One thread runs both sections, each in buffers of its own, so bands of half the
// budget are taken where their halos cost at most 4% more rows: a band of each section then
// fits L2 together. Against the bands before sections, on the Xeon: mobilenet_v2 0.931x on two
// threads and 0.993x on one, efficientnet_b0 0.966x / 1.003x, ocr_det 0.967x / 0.991x.
#include "passes/cpu/Passes.h"
#include "passes/host/BandSections.h"
#include "passes/host/SourceNodes.h"

#include "dialects/graph/IR/Graph.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <map>

namespace kiln {
#define GEN_PASS_DEF_BANDCONVCHAINSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// A static f32 rank-4 map (N may be dynamic: rows are per sample).
bool isMap(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 4 && t.getElementType().isF32() && !t.isDynamicDim(1) && !t.isDynamicDim(2) &&
         !t.isDynamicDim(3);
}

int64_t mapRows(Value v) { return cast<RankedTensorType>(v.getType()).getDimSize(1); }

int64_t mapBytes(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getDimSize(1) * t.getDimSize(2) * t.getDimSize(3) * 4;
}

/// Ops that read their operands element for element (broadcasting), and channel slices: each
/// output row needs the same row of its map operands.
bool rowwise(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0 || !isMap(op->getResult(0)))
    return false;
  if (auto slice = dyn_cast<graph::SliceOp>(op))
    return llvm::all_of(slice.getAxes(), [](int64_t a) { return a == 3 || a == -1; }) &&
           llvm::all_of(slice.getSteps(), [](int64_t s) { return s == 1; });
  if (op->getNumOperands() == 1 && op->hasTrait<OpTrait::SameOperandsAndResultType>() && op->getDialect() &&
      op->getDialect()->getNamespace() == "graph")
    return true;
  return isa<graph::ClipOp, graph::AddOp, graph::SubOp, graph::MulOp, graph::DivOp, graph::MaxOp, graph::MinOp>(op);
}

/// The row geometry of a convolution's window: k rows, stride s, dilation d, `top` rows of
/// padding above and `bottom` below.
struct Window {
  int64_t k = 1, s = 1, d = 1, top = 0, bottom = 0;
};

/// A channels-last convolution a band can run on fewer rows: a packed_conv (any window; 1x1
/// ones are the expansions and projections) or a depthwise nhwc_conv. Sets its row window.
bool bandableConv(Operation *op, Window &w) {
  ArrayRef<int64_t> pads, strides, dilations;
  int64_t k = 0;
  if (auto conv = dyn_cast<graph::PackedConvOp>(op)) {
    if (!conv.getChannelsLast() || conv.getKernelShape().size() != 2)
      return false;
    k = conv.getKernelShape()[0];
    pads = conv.getPads(), strides = conv.getStrides(), dilations = conv.getDilations();
  } else if (auto conv = dyn_cast<graph::NhwcConvOp>(op)) {
    auto wt = dyn_cast<RankedTensorType>(conv.getWeight().getType());
    if (!isMap(conv.getInput()) || !wt || !wt.hasStaticShape() || wt.getRank() != 4 || wt.getDimSize(2) != 1 ||
        conv.getGroup() != cast<RankedTensorType>(conv.getInput().getType()).getDimSize(3))
      return false;
    k = wt.getDimSize(0);
    pads = conv.getPads(), strides = conv.getStrides(), dilations = conv.getDilations();
  } else {
    return false;
  }
  if (pads.size() != 4 || strides.size() != 2 || dilations.size() != 2 || !isMap(op->getOperand(0)) ||
      !isMap(op->getResult(0)))
    return false;
  w = {k, strides[0], dilations[0], pads[0], pads[2]};
  return true;
}

bool windowed(Operation *op) {
  Window w;
  return bandableConv(op, w) && (w.k != 1 || w.s != 1 || w.top != 0 || w.bottom != 0);
}

/// The rows of the maps `op` reads: its result's, but for a convolution.
int64_t rowsRead(Operation *op) {
  Window w;
  if (bandableConv(op, w))
    return mapRows(op->getOperand(0));
  return mapRows(op->getResult(0));
}

/// Rows [lo, hi) of a map.
struct Rows {
  int64_t lo = 0, hi = 0;
  bool operator==(const Rows &o) const { return lo == o.lo && hi == o.hi; }
  int64_t size() const { return hi - lo; }
};

/// The window rows of output rows `out`, before clamping to the input's rows [0, inRows).
Rows windowRows(const Window &w, Rows out) {
  return {out.lo * w.s - w.top, (out.hi - 1) * w.s - w.top + (w.k - 1) * w.d + 1};
}

struct Chain {
  SmallVector<Operation *> ops; // in program order; ops.front() is the head
  Value last;                   // the one value read outside the chain
};

struct BandConvChainsPass : impl::BandConvChainsPassBase<BandConvChainsPass> {
  using Base::Base;

  /// Values made by `ops` and read by an op outside them.
  static SmallVector<Value> escaping(const llvm::SetVector<Operation *> &ops) {
    SmallVector<Value> out;
    for (Operation *op : ops)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *u) { return !ops.contains(u); }))
          out.push_back(r);
    return out;
  }

  /// The chain that starts at `head` (a channels-last packed_conv whose map is large): its
  /// readers, their readers, ... taken while one value of the chain is read outside it, that
  /// value is a large map (reading it from L2 is the gain) and its readers are rowwise ops,
  /// 1x1 or depthwise convolutions. Only chains with a depthwise convolution are kept: without
  /// one (a ResNet's convolutions) there is no narrow window to gain by.
  std::optional<Chain> findChain(Operation *head) {
    Window hw;
    if (!isa<graph::PackedConvOp>(head) || !bandableConv(head, hw) || mapBytes(head->getResult(0)) < minMapBytes)
      return std::nullopt;
    llvm::SetVector<Operation *> ops;
    ops.insert(head);
    Value last = head->getResult(0);
    while (true) {
      SmallVector<Operation *> readers(last.getUsers().begin(), last.getUsers().end());
      if (readers.empty())
        break;
      // Past a small map only its activation (which the kernel before finishes in cache) joins.
      bool large = mapBytes(last) >= minMapBytes;
      bool takeAll = llvm::all_of(readers, [&](Operation *u) {
        Window w;
        if (u->getBlock() != head->getBlock())
          return false;
        if (large && (isa<graph::NhwcConvOp>(u) || (isa<graph::PackedConvOp>(u) && !windowed(u))))
          return bandableConv(u, w);
        return rowwise(u) && (large || !isa<graph::SliceOp>(u));
      });
      if (!takeAll)
        break;
      llvm::SetVector<Operation *> grown = ops;
      for (Operation *u : readers)
        grown.insert(u);
      SmallVector<Value> next = escaping(grown);
      if (next.size() != 1)
        break;
      ops = std::move(grown);
      last = next[0];
    }
    // A channel slice at the end (the padded columns of a projection cut off) stays after the
    // concatenation, a view of it: as a piece of it, each band's slice would be copied.
    while (auto slice = last.getDefiningOp<graph::SliceOp>()) {
      if (!slice.getInput().hasOneUse() || !ops.contains(slice))
        break;
      ops.remove(slice);
      last = slice.getInput();
    }
    if (!llvm::any_of(ops, [](Operation *op) { return isa<graph::NhwcConvOp>(op); }))
      return std::nullopt;
    Chain chain{{}, last};
    chain.ops.assign(ops.begin(), ops.end());
    llvm::sort(chain.ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    // Each rowwise op reads maps of its rows or of one row (a broadcast scale).
    for (Operation *op : chain.ops)
      for (Value v : op->getOperands())
        if (!isa<graph::NhwcConvOp, graph::PackedConvOp>(op) && isMap(v) && mapRows(v) != rowsRead(op) &&
            mapRows(v) != 1)
          return std::nullopt;
    return chain;
  }

  /// Rows of each value made in the chain that its readers in the chain need for rows `last`
  /// of the chain's last value. False when two readers need different rows (a value read by
  /// a window and by a rowwise op: the chains above never have one).
  static bool neededRows(const Chain &chain, Rows last, llvm::DenseMap<Value, Rows> &rows) {
    rows.clear();
    rows[chain.last] = last;
    for (Operation *op : llvm::reverse(chain.ops)) {
      auto it = rows.find(op->getResult(0));
      if (it == rows.end())
        return false;
      Rows in = inputRows(op, it->second);
      for (Value v : mapOperands(op)) {
        Operation *def = v.getDefiningOp();
        if (!def || !llvm::is_contained(chain.ops, def))
          continue;
        auto [slot, inserted] = rows.try_emplace(v, in);
        if (!inserted && !(slot->second == in))
          return false;
      }
    }
    return true;
  }

  /// The operands of `op` that are maps of the rows it reads (not one-row broadcasts).
  static SmallVector<Value> mapOperands(Operation *op) {
    if (isa<graph::NhwcConvOp, graph::PackedConvOp>(op))
      return {op->getOperand(0)};
    SmallVector<Value> out;
    for (Value v : op->getOperands())
      if (isMap(v) && mapRows(v) == rowsRead(op))
        out.push_back(v);
    return out;
  }

  /// The input rows an op reads for its output rows `out`: the same rows, or a convolution's
  /// window rows clamped to its input (the cut-off ones are its padding).
  static Rows inputRows(Operation *op, Rows out) {
    Window w;
    if (!bandableConv(op, w))
      return out;
    Rows r = windowRows(w, out);
    return {std::max<int64_t>(r.lo, 0), std::min(r.hi, mapRows(op->getOperand(0)))};
  }

  static RankedTensorType withRows(Type t, int64_t rows) {
    auto rt = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(rt.getShape());
    shape[1] = rows;
    return RankedTensorType::get(shape, rt.getElementType());
  }

  /// One band of the chain: its ops on rows of their maps; returns the band's last value.
  Value buildBand(OpBuilder &b, const Chain &chain, const llvm::DenseMap<Value, Rows> &rows,
                  std::optional<BandSection> tag) {
    IRMapping map;
    std::map<std::tuple<void *, int64_t, int64_t>, Value> slices;
    auto sliced = [&](Value v, Rows r) -> Value {
      if (r.lo == 0 && r.hi == mapRows(v))
        return v;
      auto key = std::make_tuple(v.getAsOpaquePointer(), r.lo, r.hi);
      Value &s = slices[key];
      if (!s)
        s = graph::SliceOp::create(b, v.getLoc(), withRows(v.getType(), r.size()), v, ArrayRef<int64_t>{r.lo},
                                   ArrayRef<int64_t>{r.hi}, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1});
      return s;
    };
    for (Operation *op : chain.ops) {
      Rows out = rows.lookup(op->getResult(0));
      SmallVector<Value> mapped = mapOperands(op), operands;
      for (Value v : op->getOperands()) {
        if (Value m = map.lookupOrNull(v))
          operands.push_back(m);
        else if (llvm::is_contained(mapped, v))
          operands.push_back(sliced(v, inputRows(op, out)));
        else
          operands.push_back(v);
      }
      OperationState state(tag ? tagBandSection(op->getLoc(), *tag) : op->getLoc(), op->getName(), operands,
                           TypeRange{withRows(op->getResult(0).getType(), out.size())}, op->getAttrs());
      Operation *clone = b.create(state);
      Window w;
      if (bandableConv(op, w)) {
        // The window's rows past the map's edge are padding; those inside are read.
        Rows r = windowRows(w, out);
        auto pads = cast<DenseI64ArrayAttr>(op->getAttr("pads")).asArrayRef();
        int64_t top = std::max<int64_t>(0, -r.lo), bottom = std::max<int64_t>(0, r.hi - mapRows(op->getOperand(0)));
        clone->setAttr("pads", b.getDenseI64ArrayAttr({top, pads[1], bottom, pads[3]}));
      }
      map.map(op->getResult(0), clone->getResult(0));
    }
    return map.lookup(chain.last);
  }

  /// Rows per band of the chain's last value: the most whose bands keep every intermediate map
  /// within `bandBytes` (the halo rows of the windows included); 0 when one band would do.
  int64_t bandRows(const Chain &chain, int64_t budget) {
    int64_t total = mapRows(chain.last);
    llvm::DenseMap<Value, Rows> rows;
    for (int64_t per = total; per >= 1; --per) {
      int64_t largest = 0;
      for (int64_t lo = 0; lo < total; lo += per) {
        if (!neededRows(chain, {lo, std::min(total, lo + per)}, rows))
          return 0;
        for (Operation *op : chain.ops)
          if (op->getResult(0) != chain.last)
            largest = std::max(largest, mapBytes(op->getResult(0)) / mapRows(op->getResult(0)) *
                                            rows.lookup(op->getResult(0)).size());
      }
      // The same rows in every band (the last one may have fewer): as many bands as `per`
      // rows need, shared evenly, so that no band is a small remainder.
      if (largest <= budget) {
        int64_t bands = ceilDiv(total, per);
        return bands == 1 ? 0 : ceilDiv(total, bands);
      }
    }
    return 1;
  }

  /// Rows of the chain's maps computed by bands of `per` rows of its last value (halos included).
  static int64_t rowsComputed(const Chain &chain, int64_t per) {
    int64_t total = mapRows(chain.last), rows = 0;
    llvm::DenseMap<Value, Rows> band;
    for (int64_t lo = 0; lo < total; lo += per) {
      if (!neededRows(chain, {lo, std::min(total, lo + per)}, band))
        return std::numeric_limits<int64_t>::max() / 128;
      for (Operation *op : chain.ops)
        rows += band.lookup(op->getResult(0)).size();
    }
    return rows;
  }

  /// Rows per band for an even number of bands (two sections of as many), the fewest more bands
  /// than `per` rows give; `per` itself when its count is even or no even count works.
  static int64_t evenBandRows(const Chain &chain, int64_t per) {
    int64_t total = mapRows(chain.last);
    llvm::DenseMap<Value, Rows> rows;
    for (int64_t bands = ceilDiv(total, per); bands <= total; ++bands) {
      int64_t rowsPer = ceilDiv(total, bands);
      if (ceilDiv(total, rowsPer) % 2 != 0)
        continue;
      for (int64_t lo = 0; lo < total; lo += rowsPer)
        if (!neededRows(chain, {lo, std::min(total, lo + rowsPer)}, rows))
          return per;
      return rowsPer;
    }
    return per;
  }

  /// Rows per band for two sections: an even number of bands; of half the budget where their
  /// halo rows cost at most 4% more rows, since one thread runs both sections, each in its own
  /// buffers, and bands of half the budget keep the two in L2 together.
  int64_t sectionBandRows(const Chain &chain, int64_t per) {
    int64_t total = mapRows(chain.last);
    per = evenBandRows(chain, per);
    int64_t half = bandRows(chain, bandBytes / 2);
    if (half == 0)
      return per;
    half = evenBandRows(chain, half);
    auto even = [&](int64_t rows) { return ceilDiv(total, rows) % 2 == 0; };
    if (even(half) && even(per) && rowsComputed(chain, half) * 100 <= rowsComputed(chain, per) * 104)
      return half;
    return per;
  }

  void runOnOperation() override {
    SmallVector<Operation *> heads;
    getOperation().walk([&](graph::PackedConvOp conv) { heads.push_back(conv); });
    std::vector<std::string> report;
    // Heads already inside an earlier chain were erased with it (the list keeps their addresses).
    llvm::DenseSet<Operation *> taken;
    int64_t chains = 0;
    for (Operation *head : heads) {
      if (taken.contains(head))
        continue;
      std::optional<Chain> chain = findChain(head);
      if (!chain)
        continue;
      int64_t per = bandRows(*chain, bandBytes);
      int64_t total = mapRows(chain->last);
      if (per == 0)
        continue;
      if (sections)
        per = sectionBandRows(*chain, per);
      SmallVector<llvm::DenseMap<Value, Rows>> bands;
      for (int64_t lo = 0; lo < total; lo += per) {
        bands.emplace_back();
        neededRows(*chain, {lo, std::min(total, lo + per)}, bands.back());
      }
      int64_t banded = rowsComputed(*chain, per), whole = 0;
      for (Operation *op : chain->ops)
        whole += mapRows(op->getResult(0));
      Operation *lastOp = chain->last.getDefiningOp();
      // Named now: the chain's ops are erased below.
      std::string name = nodeName(head->getLoc()) + " -> " + nodeName(lastOp->getLoc());
      OpBuilder b(lastOp);
      SmallVector<Value> pieces;
      // Two sections of as many bands each: the upper and the lower half of the map.
      const bool twoSections = sections && bands.size() % 2 == 0;
      for (auto [i, rows] : llvm::enumerate(bands)) {
        std::optional<BandSection> tag;
        if (twoSections)
          tag = BandSection{chains, int64_t(2 * i / bands.size())};
        pieces.push_back(buildBand(b, *chain, rows, tag));
      }
      ++chains;
      Value joined =
          graph::ConcatOp::create(b, lastOp->getLoc(), chain->last.getType(), pieces, b.getI64IntegerAttr(1));
      chain->last.replaceAllUsesWith(joined);
      for (Operation *op : llvm::reverse(chain->ops)) {
        taken.insert(op);
        op->erase();
      }
      report.push_back(name + ": " + std::to_string(bands.size()) +
                       " bands of " + std::to_string(per) + " rows, " + std::to_string(chain->ops.size()) +
                       " ops, " + std::to_string(banded) + " rows computed for " + std::to_string(whole) +
                       (twoSections ? ", two sections" : ""));
    }
    if (!print)
      return;
    llvm::outs() << "convolution chains in row bands:\n";
    for (const std::string &line : report)
      llvm::outs() << "  " << line << "\n";
  }
};

} // namespace
} // namespace kiln
