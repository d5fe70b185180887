// Places @main's intermediate buffers in one arena by liveness; dynamic sizes and offsets become
// expressions evaluated when the function starts. The two sections of a banded chain
// (passes/host/BandSections.h) may run side by side, so their buffers never share bytes.
#include "passes/memory/Passes.h"
#include "dialects/graph/IR/GraphAttrNames.h"
#include "passes/host/BandSections.h"
#include "passes/host/GemmEpilogue.h"

#include "dialects/cpu/IR/Cpu.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>

namespace kiln {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/memory/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kAlign = 64;

int64_t roundUp(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/// One intermediate buffer and where it goes.
struct Buffer {
  memref::AllocOp alloc;
  int64_t start = 0, end = 0; // positions of the top-level ops that allocate and last touch it
  int64_t bytes = -1;         // rounded size when static
  int64_t orderKey = 0;       // size with dynamic dims counted as 64: the placement order
  Value size;                 // rounded size (index), created at the function's start
  std::string sizeText;
  bool placed = false;
  int64_t offset = -1; // when fixed at compile time
  Value offsetValue;   // index, at the function's start
  SmallVector<int64_t> above; // buffers a dynamic placement sits on
  std::optional<BandSection> band; // a banded chain's buffer, and its section
};

/// The top-level positions each banded chain's ops span.
using ChainSpans = llvm::DenseMap<int64_t, std::pair<int64_t, int64_t>>;

/// Whether two buffers may not share bytes. Beyond overlapping lifetimes: the two sections of
/// a banded chain may run side by side (kiln-run-band-sections), so their buffers never share,
/// and no buffer live at any point of a chain's span shares with that chain's buffers, since
/// within the span program order says nothing about which section runs first.
bool conflict(const Buffer &a, const Buffer &b, const ChainSpans &spans) {
  if (!(a.end < b.start || b.end < a.start))
    return true;
  if (a.band && b.band && a.band->chain == b.band->chain)
    return a.band->section != b.band->section;
  auto touchesSpan = [&](const Buffer &chained, const Buffer &other) {
    if (!chained.band)
      return false;
    auto [lo, hi] = spans.lookup(chained.band->chain);
    return !(other.end < lo || hi < other.start);
  };
  return touchesSpan(a, b) || touchesSpan(b, a);
}

int64_t elementBytes(Type t) {
  if (t.isIndex())
    return 8;
  if (t.isIntOrFloat())
    return (t.getIntOrFloatBitWidth() + 7) / 8;
  return -1;
}

/// The ONNX node(s) a buffer came from, for the printed plan.
std::string nameOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string out;
    for (Location l : fused.getLocations()) {
      std::string n = nameOf(l);
      if (!n.empty() && out.find(n) == std::string::npos)
        out += (out.empty() ? "" : "+") + n;
    }
    return out;
  }
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return nameOf(callSite.getCallee());
  return "";
}

/// A size value as text in terms of the model's symbolic dims (`batch*sequence_length*4`).
std::string exprText(Value v, int depth = 0) {
  if (depth > 8)
    return "?";
  if (auto c = getConstantIntValue(v))
    return std::to_string(*c);
  Operation *def = v.getDefiningOp();
  if (!def)
    return "?";
  if (auto dim = dyn_cast<memref::DimOp>(def)) {
    auto arg = dyn_cast<BlockArgument>(dim.getSource());
    auto index = dim.getConstantIndex();
    if (arg && index) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (auto dims = func ? func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), attrs::kDims) : nullptr)
        if (*index < int64_t(dims.size()))
          if (auto name = dyn_cast<StringAttr>(dims[*index]); name && !name.getValue().empty())
            return name.str();
      return "arg" + std::to_string(arg.getArgNumber()) + ".dim" + std::to_string(index ? *index : -1);
    }
    return "?";
  }
  auto binary = [&](const char *op) {
    return "(" + exprText(def->getOperand(0), depth + 1) + op + exprText(def->getOperand(1), depth + 1) + ")";
  };
  if (isa<arith::MulIOp>(def))
    return exprText(def->getOperand(0), depth + 1) + "*" + exprText(def->getOperand(1), depth + 1);
  if (isa<arith::AddIOp>(def))
    return binary("+");
  if (isa<arith::SubIOp>(def))
    return binary("-");
  if (isa<arith::DivUIOp, arith::DivSIOp>(def))
    return binary("/");
  if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(def))
    return "ceil" + binary("/");
  if (isa<arith::MaxSIOp, arith::MaxUIOp>(def))
    return "max" + binary(",");
  if (isa<arith::MinSIOp, arith::MinUIOp>(def))
    return "min" + binary(",");
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(def))
    return exprText(def->getOperand(0), depth + 1);
  return "?";
}

/// The last top-level position that touches `root` or a view of it; false when
/// the buffer may outlive the function or alias something we cannot follow.
bool lastUse(Value root, Block &body, const DenseMap<Operation *, int64_t> &position, int64_t &end) {
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top || isa<func::ReturnOp>(user))
        return false; // returned: the runtime owns it
      end = std::max(end, position.lookup(top));
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      if ((view && view.getViewSource() == v) || isa<memref::CastOp>(user)) {
        for (Value r : user->getResults())
          work.push_back(r);
        continue;
      }
      // Anything else that yields a memref from this one (a branch's yield,
      // an op we do not know) might alias it beyond what we see.
      if (user->hasTrait<OpTrait::IsTerminator>())
        return false;
      for (Value r : user->getResults())
        if (isa<BaseMemRefType>(r.getType()))
          return false;
    }
  }
  return true;
}

/// Collects the pure computation of `v` (post-order) when it depends only on
/// @main's arguments and constants, so it can move to the function's start.
bool collectHoistable(Value v, Block &body, SetVector<Operation *> &slice, int depth = 0) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == &body;
  Operation *def = v.getDefiningOp();
  if (slice.contains(def))
    return true;
  if (depth > 64 || def->getBlock() != &body || def->getNumRegions() != 0)
    return false;
  // Free of memory effects, not necessarily speculatable: a size's arith.divsi (a reshape's -1
  // dim) moves up within the same block, where it ran unconditionally anyway.
  if (!isMemoryEffectFree(def) && !isa<memref::DimOp>(def))
    return false;
  for (Value operand : def->getOperands())
    if (!collectHoistable(operand, body, slice, depth + 1))
      return false;
  slice.insert(def);
  return true;
}

struct PlanMemoryPass : impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func || func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    ChainSpans spans;
    for (auto [i, op] : llvm::enumerate(body)) {
      position[&op] = int64_t(i);
      if (std::optional<BandSection> tag = bandSectionOf(op.getLoc()).tag)
        spans.try_emplace(tag->chain, int64_t(i), int64_t(i)).first->second.second = int64_t(i);
    }
    // A product with a marked epilogue op (GemmEpilogue.h) runs where that op does: on the GPU
    // the two are one library call, which reads the product's operands while it writes the op's
    // output, so those operands must stay live (and apart from the output) until then.
    for (Operation &op : body)
      if (auto g = dyn_cast<linalg::GenericOp>(op))
        if (linalg::GenericOp e = markedEpilogueOf(g))
          position[&op] = position.lookup(e);

    // Intermediates and the heap allocations left alone.
    std::vector<Buffer> buffers;
    SmallVector<std::pair<memref::AllocOp, const char *>> heap;
    SetVector<Operation *> slice;
    func.walk([&](memref::AllocOp alloc) {
      MemRefType type = alloc.getType();
      if (alloc->getBlock() != &body)
        return heap.push_back({alloc, "inside a loop or branch"});
      int64_t elem = elementBytes(type.getElementType());
      if (!type.getLayout().isIdentity() || type.getMemorySpace() || elem < 0)
        return heap.push_back({alloc, "layout or element type"});
      Buffer b;
      b.alloc = alloc;
      b.start = b.end = position.lookup(alloc);
      BandSectionOf band = bandSectionOf(alloc.getLoc());
      if (!band.mixed)
        b.band = band.tag;
      if (!lastUse(alloc.getResult(), body, position, b.end))
        return heap.push_back({alloc, "returned"});
      SetVector<Operation *> mine = slice;
      for (Value size : alloc.getDynamicSizes())
        if (!collectHoistable(size, body, mine))
          return heap.push_back({alloc, "size depends on tensor data"});
      slice = std::move(mine);
      int64_t staticBytes = elem, key = elem;
      for (int64_t d : type.getShape()) {
        key *= ShapedType::isDynamic(d) ? 64 : d;
        staticBytes *= ShapedType::isDynamic(d) ? 1 : d;
      }
      b.orderKey = key;
      if (type.hasStaticShape())
        b.bytes = roundUp(staticBytes);
      buffers.push_back(b);
    });
    if (buffers.empty())
      return;

    // Move the size computations to the function's start, in program order.
    SmallVector<Operation *> hoisted(slice.begin(), slice.end());
    llvm::sort(hoisted, [&](Operation *a, Operation *b) { return position.lookup(a) < position.lookup(b); });
    Operation *last = nullptr;
    for (Operation *op : hoisted) {
      if (last)
        op->moveAfter(last);
      else
        op->moveBefore(&body.front());
      last = op;
    }
    OpBuilder b(&getContext());
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPointToStart(&body);
    Location loc = func.getLoc();
    auto constant = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
    for (Buffer &buf : buffers) {
      MemRefType type = buf.alloc.getType();
      int64_t elem = elementBytes(type.getElementType());
      if (buf.bytes >= 0) {
        buf.size = constant(buf.bytes);
        buf.sizeText = std::to_string(buf.bytes);
        continue;
      }
      int64_t staticPart = elem;
      for (int64_t d : type.getShape())
        staticPart *= ShapedType::isDynamic(d) ? 1 : d;
      Value n = constant(staticPart);
      std::string text;
      for (Value size : buf.alloc.getDynamicSizes()) {
        n = arith::MulIOp::create(b, loc, n, size);
        text += (text.empty() ? "" : "*") + exprText(size);
      }
      Value align = constant(kAlign);
      Value up = arith::AddIOp::create(b, loc, n, constant(kAlign - 1));
      buf.size = arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, up, align), align);
      buf.sizeText = text + "*" + std::to_string(staticPart);
    }

    // Largest first; offsets fixed at compile time where every neighbour's is.
    SmallVector<int64_t> order(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i)
      order[i] = int64_t(i);
    llvm::sort(order, [&](int64_t x, int64_t y) {
      return buffers[x].orderKey != buffers[y].orderKey ? buffers[x].orderKey > buffers[y].orderKey : x < y;
    });
    // Within a banded chain, section 0's buffers take their turns first (the chain's slots in
    // the order stay where they are), so they get the lower offsets: thread 0 writes a section
    // 0 buffer whole and the lower half of the full maps placed over those bytes later.
    std::map<int64_t, SmallVector<size_t>> chainSlots;
    for (size_t k = 0; k < order.size(); ++k)
      if (buffers[order[k]].band)
        chainSlots[buffers[order[k]].band->chain].push_back(k);
    for (auto &[chain, slots] : chainSlots) {
      SmallVector<int64_t> members;
      for (int64_t section : {0, 1})
        for (size_t k : slots)
          if (buffers[order[k]].band->section == section)
            members.push_back(order[k]);
      for (auto [k, member] : llvm::zip(slots, members))
        order[k] = member;
    }
    for (int64_t i : order) {
      Buffer &buf = buffers[i];
      SmallVector<int64_t> live;
      bool allStatic = buf.bytes >= 0;
      for (int64_t j : order) {
        const Buffer &other = buffers[j];
        if (!other.placed || !conflict(buf, other, spans))
          continue;
        live.push_back(j);
        allStatic = allStatic && other.offset >= 0;
      }
      if (allStatic) {
        llvm::sort(live, [&](int64_t x, int64_t y) { return buffers[x].offset < buffers[y].offset; });
        int64_t at = 0;
        for (int64_t j : live) {
          if (buffers[j].offset - at >= buf.bytes)
            break;
          at = std::max(at, buffers[j].offset + buffers[j].bytes);
        }
        buf.offset = at;
        buf.offsetValue = constant(at);
      } else {
        // Above everything it overlaps: a gap between dynamic neighbours is not known here.
        Value at = constant(0);
        for (int64_t j : live) {
          Value top = arith::AddIOp::create(b, loc, buffers[j].offsetValue, buffers[j].size);
          at = arith::MaxUIOp::create(b, loc, at, top);
        }
        buf.offsetValue = at;
        buf.above = live;
      }
      buf.placed = true;
    }

    // The arena and the views into it.
    int64_t staticPeak = 0, staticSum = 0;
    bool dynamic = false;
    Value peak = constant(0);
    for (Buffer &buf : buffers) {
      if (buf.offset >= 0 && buf.bytes >= 0) {
        staticPeak = std::max(staticPeak, buf.offset + buf.bytes);
        staticSum += buf.bytes;
      } else {
        dynamic = true;
      }
      peak = arith::MaxUIOp::create(b, loc, peak, arith::AddIOp::create(b, loc, buf.offsetValue, buf.size));
    }
    Value arena = cpu::WorkspaceOp::create(b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type()), peak);
    for (Buffer &buf : buffers) {
      OpBuilder vb(buf.alloc);
      auto view = memref::ViewOp::create(vb, buf.alloc.getLoc(), buf.alloc.getType(), arena, buf.offsetValue,
                                         buf.alloc.getDynamicSizes());
      // Which views may share bytes, for passes that run two ops at once (kiln-fuse-sibling-loops).
      if (markLiveSpans)
        view->setAttr(attrs::kPlanLive, vb.getDenseI64ArrayAttr({buf.start, buf.end}));
      buf.alloc.getResult().replaceAllUsesWith(view.getResult());
    }
    if (!dynamic)
      module->setAttr("kiln.arena_bytes", b.getI64IntegerAttr(staticPeak));
    if (print)
      printPlan(buffers, heap, dynamic, staticPeak, staticSum);
    for (Buffer &buf : buffers)
      buf.alloc.erase();
  }

  void printPlan(std::vector<Buffer> &buffers, ArrayRef<std::pair<memref::AllocOp, const char *>> heap,
                 bool dynamic, int64_t staticPeak, int64_t staticSum) {
    llvm::raw_ostream &os = llvm::outs();
    os << "memory plan: " << buffers.size() << " intermediates in one arena, " << heap.size()
       << " buffers on the heap\n";
    os << llvm::format("%5s %12s %14s %11s  %-28s %s\n", "#", "bytes", "offset", "lifetime", "type", "source");
    for (size_t i = 0; i < buffers.size(); ++i) {
      Buffer &buf = buffers[i];
      std::string type;
      llvm::raw_string_ostream ts(type);
      ts << buf.alloc.getType();
      std::string offset = buf.offset >= 0 ? std::to_string(buf.offset) : "above";
      if (buf.offset < 0)
        for (int64_t j : buf.above)
          offset += " #" + std::to_string(j);
      std::string lifetime = std::to_string(buf.start) + "-" + std::to_string(buf.end);
      std::string source = nameOf(buf.alloc.getLoc());
      if (buf.band)
        source += " (band chain " + std::to_string(buf.band->chain) + ", section " +
                  std::to_string(buf.band->section) + ")";
      os << llvm::format("%5zu %12s %14s %11s  %-28s %s\n", i, buf.sizeText.c_str(), offset.c_str(),
                         lifetime.c_str(), type.c_str(), source.c_str());
    }
    for (auto [alloc, why] : heap) {
      memref::AllocOp op = alloc;
      std::string type;
      llvm::raw_string_ostream ts(type);
      ts << op.getType();
      os << llvm::format("%5s %12s %14s %11s  %-28s %s\n", "heap", "", why, "", type.c_str(),
                         nameOf(op.getLoc()).c_str());
    }
    if (dynamic) {
      os << "arena peak: depends on the input shapes (static part " << staticPeak << " bytes); sum without reuse: "
         << staticSum << " bytes + the dynamic buffers\n";
      return;
    }
    os << "arena peak: " << staticPeak << " bytes; sum of intermediates without reuse: " << staticSum << " bytes ("
       << llvm::format("%.1f", staticSum ? 100.0 * double(staticPeak) / double(staticSum) : 100.0) << "%)\n";
  }
};

} // namespace
} // namespace kiln
