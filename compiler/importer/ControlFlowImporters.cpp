// ONNX control flow resolved while importing: If as a select between both branches, Scan unrolled over its static length.
//
// kiln's graphs have no regions. An If whose condition is a constant imports
// only the branch it takes; with a run-time condition both branches are
// imported (they have no side effects) and each output is a graph.where on
// the condition, which needs both branches to give the same static type. A
// Scan over a sequence of static length is unrolled: its body is imported once
// per step with the step's slices and the carried state bound to its inputs.
// Loop (a trip count and a condition read at run time) is not supported.
#include "compiler/importer/ControlFlowImporters.h"

#include "compiler/importer/OpCreate.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kiln::graph;

namespace kiln {
namespace {

const onnx::GraphProto *graphAttr(NodeContext &c, StringRef name) {
  const auto *a = c.attr(name);
  if (!a || !a->has_g()) {
    (void)c.fail("attribute '" + name + "' (a graph) is required");
    return nullptr;
  }
  return &a->g();
}

Results importIf(NodeContext &c, SubgraphImporter &sub) {
  if (failed(require(c, 1)))
    return failure();
  const onnx::GraphProto *thenGraph = graphAttr(c, "then_branch");
  const onnx::GraphProto *elseGraph = thenGraph ? graphAttr(c, "else_branch") : nullptr;
  if (!elseGraph)
    return failure();
  Value cond = c.input(0);
  auto ct = cast<RankedTensorType>(cond.getType());
  if (!ct.getElementType().isInteger(1) || !ct.hasStaticShape() || ct.getNumElements() != 1)
    return c.fail("cond must be a single bool");
  DenseIntElementsAttr known;
  if (matchPattern(cond, m_Constant(&known)))
    return sub.importSubgraph(known.getSplatValue<bool>() ? *thenGraph : *elseGraph, {});
  auto thenOut = sub.importSubgraph(*thenGraph, {});
  if (failed(thenOut))
    return failure();
  auto elseOut = sub.importSubgraph(*elseGraph, {});
  if (failed(elseOut))
    return failure();
  if (thenOut->size() != elseOut->size())
    return c.fail("then_branch gives " + Twine(thenOut->size()) + " outputs, else_branch " +
                  Twine(elseOut->size()));
  SmallVector<Value> results;
  for (auto [t, e] : llvm::zip(*thenOut, *elseOut)) {
    auto tt = cast<RankedTensorType>(t.getType());
    if (t.getType() != e.getType() || !tt.hasStaticShape())
      return c.fail("unsupported: a run-time condition needs both branches to give the same static types "
                    "(got " + llvm::formatv("{0} and {1}", t.getType(), e.getType()).str() + ")");
    auto picked = create<WhereOp>(c, cond, t, e);
    if (failed(picked))
      return failure();
    results.push_back(*picked);
  }
  return results;
}

/// Per-input attribute list (scan_input_axes, ...) with a default of 0, each in [-rank, rank).
FailureOr<SmallVector<int64_t>> perInput(NodeContext &c, StringRef name, ArrayRef<int64_t> ranks) {
  SmallVector<int64_t> values(ranks.size(), 0);
  if (auto given = c.intsAttr(name)) {
    if (given->size() != ranks.size()) {
      (void)c.fail(name + " has " + Twine(given->size()) + " entries for " + Twine(ranks.size()) + " tensors");
      return failure();
    }
    values = *given;
  }
  // A rank of -1: not known yet (an output's axis is normalized when stacked).
  for (auto [v, rank] : llvm::zip(values, ranks)) {
    if (rank < 0)
      continue;
    if (v < -rank || v >= rank) {
      (void)c.fail(name + " entry " + Twine(v) + " out of range");
      return failure();
    }
    if (v < 0)
      v += rank;
  }
  return values;
}

LogicalResult checkDirections(NodeContext &c, StringRef name, ArrayRef<int64_t> directions) {
  for (int64_t d : directions)
    if (d != 0 && d != 1)
      return c.fail(name + " entries must be 0 or 1, got " + Twine(d));
  return success();
}

/// Stacks per-step values along `axis` (each gets a unit axis there).
FailureOr<Value> stack(NodeContext &c, ArrayRef<Value> steps, int64_t axis) {
  SmallVector<Value> parts;
  if (axis < 0)
    axis += rankOf(steps[0]) + 1;
  for (Value s : steps) {
    auto u = create<UnsqueezeOp>(c, s, SmallVector<int64_t>{axis});
    if (failed(u))
      return failure();
    parts.push_back(*u);
  }
  if (parts.size() == 1)
    return parts[0];
  return create<ConcatOp>(c, parts, axis);
}

/// x[index] along `axis`, that axis removed.
FailureOr<Value> pick(NodeContext &c, Value x, int64_t axis, int64_t index) {
  auto part = create<SliceOp>(c, x, SmallVector<int64_t>{index}, SmallVector<int64_t>{index + 1},
                              SmallVector<int64_t>{axis}, SmallVector<int64_t>{1});
  if (failed(part))
    return failure();
  return create<SqueezeOp>(c, *part, SmallVector<int64_t>{axis});
}

/// One scan: `states` carried, `scans` sliced along their axes, the body run
/// once per step; returns the final states then the stacked scan outputs.
Results unrollScan(NodeContext &c, SubgraphImporter &sub, const onnx::GraphProto &body, SmallVector<Value> states,
                   ArrayRef<Value> scans, ArrayRef<int64_t> inAxes, ArrayRef<int64_t> inDirections,
                   ArrayRef<int64_t> outAxes, ArrayRef<int64_t> outDirections, int64_t length) {
  int64_t numOutputs = body.output_size() - (int64_t)states.size();
  if (numOutputs < 0)
    return c.fail("the body has fewer outputs than state variables");
  SmallVector<SmallVector<Value>> perStep(numOutputs);
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<Value> bound = states;
    for (auto [x, axis, dir] : llvm::zip(scans, inAxes, inDirections)) {
      auto slice = pick(c, x, axis, dir ? length - 1 - t : t);
      if (failed(slice))
        return failure();
      bound.push_back(*slice);
    }
    auto outs = sub.importSubgraph(body, bound);
    if (failed(outs))
      return failure();
    for (size_t i = 0; i < states.size(); ++i)
      states[i] = (*outs)[i];
    for (int64_t k = 0; k < numOutputs; ++k)
      perStep[k].push_back((*outs)[states.size() + k]);
  }
  SmallVector<Value> results = states;
  for (int64_t k = 0; k < numOutputs; ++k) {
    if (outDirections[k])
      std::reverse(perStep[k].begin(), perStep[k].end());
    auto stacked = stack(c, perStep[k], outAxes[k]);
    if (failed(stacked))
      return failure();
    results.push_back(*stacked);
  }
  return results;
}

Results importScan(NodeContext &c, SubgraphImporter &sub) {
  const onnx::GraphProto *body = graphAttr(c, "body");
  if (!body)
    return failure();
  int64_t numScans = c.intAttr("num_scan_inputs", 0);
  // Opset 8 puts an optional sequence_lens first and a batch axis in front of
  // everything; from 9 there is no batch axis and the scan axes are attributes.
  bool batched = c.opset < 9;
  size_t first = batched ? 1 : 0;
  if (batched && c.input(0))
    return c.fail("unsupported: sequence_lens (every sequence must have the full length)");
  int64_t numInputs = (int64_t)c.inputs.size() - (int64_t)first;
  if (numScans < 1 || numScans > numInputs)
    return c.fail("num_scan_inputs must be in [1, " + Twine(numInputs) + "]");
  int64_t numStates = numInputs - numScans;
  SmallVector<Value> states, scans;
  for (int64_t i = 0; i < numInputs; ++i) {
    Value v = c.input(first + i);
    if (!v)
      return c.fail("missing input " + Twine(first + i));
    (i < numStates ? states : scans).push_back(v);
  }
  int64_t numOutputs = body->output_size() - numStates;
  if (body->input_size() != numStates + numScans || numOutputs < 0)
    return c.fail("the body's inputs and outputs do not match the state and scan counts");
  SmallVector<int64_t> scanRanks, outRanks(numOutputs, -1);
  for (Value s : scans)
    scanRanks.push_back(rankOf(s) - (batched ? 1 : 0));
  SmallVector<int64_t> inAxes(numScans, 0), inDirections(numScans, 0), outAxes(numOutputs, 0),
      outDirections(numOutputs, 0);
  if (batched) {
    if (auto d = c.intsAttr("directions")) {
      if ((int64_t)d->size() != numScans)
        return c.fail("directions needs one entry per scan input");
      inDirections = *d;
      if (failed(checkDirections(c, "directions", inDirections)))
        return failure();
    }
  } else {
    auto a = perInput(c, "scan_input_axes", scanRanks);
    auto d = perInput(c, "scan_input_directions", SmallVector<int64_t>(numScans, -1));
    auto oa = perInput(c, "scan_output_axes", outRanks);
    auto od = perInput(c, "scan_output_directions", SmallVector<int64_t>(numOutputs, -1));
    if (failed(a) || failed(d) || failed(oa) || failed(od))
      return failure();
    if (failed(checkDirections(c, "scan_input_directions", *d)) ||
        failed(checkDirections(c, "scan_output_directions", *od)))
      return failure();
    inAxes = *a;
    inDirections = *d;
    outAxes = *oa;
    outDirections = *od;
  }
  // Every scan input's axis must have the same static length.
  int64_t length = -1;
  for (auto [s, axis] : llvm::zip(scans, inAxes)) {
    int64_t n = cast<RankedTensorType>(s.getType()).getDimSize(axis + (batched ? 1 : 0));
    if (n == ShapedType::kDynamic)
      return c.fail("unsupported: a scan over a sequence of dynamic length");
    if (length >= 0 && n != length)
      return c.fail("scan inputs have different lengths (" + Twine(length) + " and " + Twine(n) + ")");
    length = n;
  }
  if (!batched)
    return unrollScan(c, sub, *body, states, scans, inAxes, inDirections, outAxes, outDirections, length);

  // Opset 8: one unrolled scan per batch entry, the results stacked along the
  // batch axis (scan outputs then have the sequence axis at 1).
  SmallVector<Value> anchor = states.empty() ? scans : states;
  int64_t batch = cast<RankedTensorType>(anchor[0].getType()).getDimSize(0);
  if (batch == ShapedType::kDynamic)
    return c.fail("unsupported: a batched scan over a dynamic batch");
  SmallVector<SmallVector<Value>> perBatch(numStates + numOutputs);
  for (int64_t b = 0; b < batch; ++b) {
    SmallVector<Value> bStates, bScans;
    for (Value s : states) {
      auto v = pick(c, s, 0, b);
      if (failed(v))
        return failure();
      bStates.push_back(*v);
    }
    for (Value s : scans) {
      auto v = pick(c, s, 0, b);
      if (failed(v))
        return failure();
      bScans.push_back(*v);
    }
    auto outs = unrollScan(c, sub, *body, bStates, bScans, inAxes, inDirections, outAxes, outDirections, length);
    if (failed(outs))
      return failure();
    for (size_t i = 0; i < outs->size(); ++i)
      perBatch[i].push_back((*outs)[i]);
  }
  SmallVector<Value> results;
  for (auto &values : perBatch) {
    auto stacked = stack(c, values, 0);
    if (failed(stacked))
      return failure();
    results.push_back(*stacked);
  }
  return results;
}

} // namespace

const llvm::StringMap<ControlFlowImporter> &controlFlowImporters() {
  static const llvm::StringMap<ControlFlowImporter> table = {
      {"If", importIf},
      {"Scan", importScan},
  };
  return table;
}

} // namespace kiln
