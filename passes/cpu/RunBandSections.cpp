// Runs each banded convolution chain as one launch of two work items: the upper half of its
// bands (section 0) and the lower half (section 1), each item launching its bands' kernels in
// program order from the thread that takes it.
//
// kiln-band-conv-chains computes an expand -> depthwise -> project chain in row bands that fit
// L2. Launched kernel by kernel, every band's kernels split their rows between the threads, so
// on two threads each band had a boundary in its middle: the depthwise window's halo rows, the
// band's input rows and its output rows crossed between the cores' caches once per band, and a
// line last written by the other core costs about three times an own one on the Xeon
// (docs/performance.md). As two items, one core runs the bands of the map's upper half and the
// other those of its lower half: each reads the input rows that the previous kernel's same
// thread wrote, writes the output rows the next kernel's same thread reads, and the only rows
// that cross are the window halo between the two halves, which each section recomputes from
// the narrow input.
//
//   kiln_cpu.launch %ctx, %n0 ... {loc = section 0} { body0(%i) }
//   kiln_cpu.launch %ctx, %n1 ... {loc = section 1} { body1(%i) }   ...
// becomes
//   kiln_cpu.launch %ctx, 2 flops(sum) bytes(sum) {
//   ^bb0(%s: i64):
//     scf.if %s != 0 { kiln_cpu.launch %ctx, %n1 { body1 } ... } else { kiln_cpu.launch %ctx, %n0 { body0 } ... }
//   }
//
// The launches stay launches, nested in the item: the thread pool runs a loop started inside a
// loop that already has a part for every thread on its calling thread (two sections on two
// threads: nothing to publish), and publishes it when more threads than sections are there, so
// that the idle ones help. Each nested launch is in one section only, so only one thread at a
// time fills its captures (which kiln-outline-cpu-launches puts in @main's frame). The runtime
// profiles the merged launch as one event.
//
// The two sections run side by side only once merged, and kiln-plan-memory already kept their
// buffers apart (it reads the same tags). A chain is merged only when everything between its
// first and last launch is one of its launches or free of memory effects (views, sizes), and
// both sections are there; otherwise it stays as it was. Kernel ids are renumbered in program
// order afterwards, so the kernel table stays dense.
#include "passes/cpu/Passes.h"
#include "passes/host/BandSections.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_RUNBANDSECTIONSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct RunBandSectionsPass : impl::RunBandSectionsPassBase<RunBandSectionsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      llvm::MapVector<int64_t, SmallVector<cpu::LaunchOp>> chains;
      for (Operation &op : func.getBody().front())
        if (auto launch = dyn_cast<cpu::LaunchOp>(op)) {
          BandSectionOf band = bandSectionOf(launch.getLoc());
          if (band.tag && !band.mixed)
            chains[band.tag->chain].push_back(launch);
        }
      for (auto &[chain, launches] : chains)
        if (mergeable(launches))
          merge(launches);
    }
    // Dense kernel ids in program order, a merged launch before those nested in it (the
    // artifact's kernel table is indexed by them).
    int32_t next = 0;
    module.walk<WalkOrder::PreOrder>([&](cpu::LaunchOp launch) { launch.setKernelId(next++); });
  }

  /// Both sections present, single-block bodies, and nothing between the first and the last
  /// launch that touches memory but the chain's own launches.
  static bool mergeable(MutableArrayRef<cpu::LaunchOp> launches) {
    bool seen[2] = {false, false};
    llvm::SmallPtrSet<Operation *, 16> mine;
    for (cpu::LaunchOp launch : launches) {
      int64_t section = bandSectionOf(launch.getLoc()).tag->section;
      if (section < 0 || section > 1 || !launch.getBody().hasOneBlock())
        return false;
      seen[section] = true;
      mine.insert(launch);
    }
    if (!seen[0] || !seen[1])
      return false;
    for (Operation *op = launches.front(); op != launches.back().getOperation(); op = op->getNextNode())
      if (!mine.contains(op) && (op->getNumRegions() != 0 || !isMemoryEffectFree(op)))
        return false;
    return true;
  }

  static void merge(MutableArrayRef<cpu::LaunchOp> launches) {
    cpu::LaunchOp last = launches.back();
    OpBuilder b(last);
    Location loc = last.getLoc();
    MLIRContext *ctx = b.getContext();
    SmallVector<Location> locs;
    llvm::SetVector<Attribute> names;
    Value flops = launches.front().getFlops(), bytes = launches.front().getBytes();
    for (cpu::LaunchOp launch : launches) {
      locs.push_back(launch.getLoc());
      if (auto list = launch->getAttrOfType<ArrayAttr>(abi::kSourceNodes))
        names.insert(list.begin(), list.end());
      if (launch != launches.front()) {
        flops = arith::AddIOp::create(b, loc, flops, launch.getFlops());
        bytes = arith::AddIOp::create(b, loc, bytes, launch.getBytes());
      }
    }
    auto i64 = b.getI64Type();
    Value two = arith::ConstantIntOp::create(b, loc, i64, 2);
    auto merged = cpu::LaunchOp::create(b, FusedLoc::get(ctx, locs), launches.front().getContext(), two, flops,
                                        bytes, launches.front().getKernelIdAttr());
    merged->setAttr(abi::kSourceNodes, b.getArrayAttr(names.getArrayRef()));
    Block *body = b.createBlock(&merged.getBody(), merged.getBody().end(), {i64}, {loc});
    Value item = body->getArgument(0);
    Value zero = arith::ConstantIntOp::create(b, loc, i64, 0);
    Value lower = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, item, zero);
    auto ifOp = scf::IfOp::create(b, loc, lower, /*withElseRegion=*/true);
    for (int64_t section : {0, 1}) {
      OpBuilder sb = section == 1 ? ifOp.getThenBodyBuilder() : ifOp.getElseBodyBuilder();
      for (cpu::LaunchOp launch : launches) {
        if (bandSectionOf(launch.getLoc()).tag->section != section)
          continue;
        // Still a launch, nested: on two threads nobody else is free and the thread running the
        // section runs its items; with more threads the idle ones help.
        sb.clone(*launch.getOperation());
      }
    }
    b.setInsertionPointToEnd(body);
    cpu::YieldOp::create(b, loc);
    for (cpu::LaunchOp launch : launches)
      launch.erase();
  }
};

} // namespace
} // namespace kiln
