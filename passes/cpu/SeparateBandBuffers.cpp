// Gives each op of a band section its own tensor.empty, so that bufferization cannot put two
// sections of a banded chain in one buffer.
//
// CSE merges identical tensor.empty ops, and one-shot bufferization then reuses that one
// buffer for every destination whose previous contents are dead in program order: the bands
// of a chain, all of the same shape, end up writing one buffer in turn. Once
// kiln-run-band-sections runs a chain's two sections side by side, that reuse would be a race.
// With an empty of its own per tagged user (carrying the user's location, and so its band
// tag), every band buffer reaches kiln-plan-memory as an allocation of its own, and the plan
// decides the reuse: freely within a section, never between the two.
#include "passes/cpu/Passes.h"
#include "passes/host/BandSections.h"

namespace kiln {
#define GEN_PASS_DEF_SEPARATEBANDBUFFERSPASS
#include "passes/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct SeparateBandBuffersPass : impl::SeparateBandBuffersPassBase<SeparateBandBuffersPass> {
  void runOnOperation() override {
    SmallVector<tensor::EmptyOp> empties;
    getOperation().walk([&](tensor::EmptyOp op) { empties.push_back(op); });
    for (tensor::EmptyOp empty : empties) {
      SmallVector<OpOperand *> tagged;
      for (OpOperand &use : empty->getUses())
        if (bandSectionOf(use.getOwner()->getLoc()).tag)
          tagged.push_back(&use);
      for (OpOperand *use : tagged) {
        // Right before the user (its ancestor in the empty's block): the buffer's lifetime then
        // starts where the band does, so bands of one section can reuse each other's bytes.
        Operation *at = empty->getBlock()->findAncestorOpInBlock(*use->getOwner());
        // The sizes are defined before the empty, so in its block or one around it; those in
        // its block must come before the user too.
        bool sizesDominate = at && llvm::all_of(empty.getDynamicSizes(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def || def->getBlock() != at->getBlock() || def->isBeforeInBlock(at);
        });
        OpBuilder b(sizesDominate ? at : empty.getOperation());
        auto own = tensor::EmptyOp::create(b, use->getOwner()->getLoc(), empty.getType(), empty.getDynamicSizes());
        use->set(own);
      }
      if (empty->use_empty())
        empty->erase();
    }
  }
};

} // namespace
} // namespace kiln
