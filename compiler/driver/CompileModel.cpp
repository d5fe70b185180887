// One compilation, callable more than once per process (each call has its own MLIRContext).
#include "compiler/driver/CompileModel.h"

#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/importer/ModelSource.h"
#include "compiler/importer/OnnxImporter.h"
#include "compiler/targets/TargetBackend.h"
#include "dialects/graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;

namespace kiln::driver {
namespace {

// Integer graph inputs that index a table through Gather, possibly via ops that keep the values
// (casts, reshapes): the accuracy check draws random ids below the table's rows, which is what
// keeps generated token ids inside an embedding. Read from the graph phase, where weights are
// @main arguments with static shapes.
std::vector<IndexBound> findIndexBounds(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return {};
  static const llvm::StringSet<> valuePreserving = {"graph.cast", "graph.reshape", "graph.unsqueeze",
                                                    "graph.squeeze", "graph.flatten", "graph.identity"};
  std::map<std::string, int64_t> rows;
  main.walk([&](Operation *op) {
    if (op->getName().getStringRef() != "graph.gather" || op->getNumOperands() < 2)
      return;
    auto table = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!table || table.getRank() == 0)
      return;
    int64_t axis = 0;
    if (auto a = op->getAttrOfType<IntegerAttr>("axis"))
      axis = a.getInt();
    if (axis < 0)
      axis += table.getRank();
    if (axis < 0 || axis >= table.getRank() || table.isDynamicDim(axis))
      return;
    Value v = op->getOperand(1);
    while (Operation *def = v.getDefiningOp()) {
      if (!valuePreserving.contains(def->getName().getStringRef()) || def->getNumOperands() == 0)
        return;
      v = def->getOperand(0);
    }
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner()->getParentOp() != main.getOperation() ||
        main.getArgAttr(arg.getArgNumber(), attrs::kWeight))
      return;
    auto name = main.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attrs::kName);
    if (!name)
      return;
    auto [it, fresh] = rows.emplace(name.str(), table.getDimSize(axis));
    if (!fresh)
      it->second = std::min(it->second, table.getDimSize(axis));
  });
  std::vector<IndexBound> bounds;
  for (const auto &[input, n] : rows)
    bounds.push_back({input, n});
  return bounds;
}

} // namespace

bool compileModel(const CompileRequest &request, CompileResult *result, std::string *error) {
  auto report = [&](const char *what) {
    if (request.progress)
      llvm::errs() << "\r\033[K[kiln-compile] " << what << "...";
  };
  auto done = [&] {
    if (request.progress)
      llvm::errs() << "\r\033[K";
  };
  auto fail = [&](const std::string &msg) {
    done();
    *error = msg;
    return false;
  };

  DialectRegistry registry;
  registerKilnDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string firstError;
  std::vector<std::string> remarks; // the quantization passes' reasons for keeping a product in f32
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    // "node 'n': message", naming the ONNX node the diagnostic's op came from.
    auto located = [&] {
      std::string node = graph::firstName(d.getLocation());
      return (node.empty() ? "" : "node '" + node + "': ") + d.str();
    };
    if (d.getSeverity() == DiagnosticSeverity::Remark)
      remarks.push_back(located());
    else if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
      firstError = located();
    return success();
  });

  report("importing");
  std::string message;
  ImportOptions importOptions;
  importOptions.symbolicInputDims = request.symbolicInputDims;
  ImportedModel imported = importOnnxFile(context, request.modelPath, message, importOptions);
  if (!imported.module)
    return fail(message);
  ModuleOp module = *imported.module;

  const Emit emit = request.emit;
  const Phase last = emit == Emit::Graph        ? Phase::Graph
                     : emit == Emit::Linalg     ? Phase::Linalg
                     : emit == Emit::Bufferized ? Phase::Bufferized
                                                : Phase::Llvm;
  const TargetBackend &target = *request.target;
  PipelineOptions options = request.options;
  if (!target.configure(options, request.targetCpu, message))
    return fail(message);
  std::vector<std::string> phases = {"import"};
  int64_t quantizedProducts = 0;
  options.afterPhase = [&](Phase p) {
    if (p != Phase::Graph)
      return;
    module.walk([&](Operation *op) {
      quantizedProducts += op->getName().getStringRef() == "graph.quantized_matmul";
    });
    recordSignature(module);
    if (result)
      result->indexBounds = findIndexBounds(module);
  };
  options.onPhase = [&](Phase p) {
    phases.push_back(phaseName(p));
    report(phaseName(p));
  };
  if (failed(runPipeline(module, last, options,
                         [&](Phase p, OpPassManager &pm) { target.buildPhase(p, pm, options); })))
    return fail(firstError.empty() ? "compilation failed" : firstError);
  if (request.notes && options.quantize != QuantizeMode::None) {
    done();
    llvm::errs() << "kiln-compile: --quantize=" << quantizeModeName(options.quantize) << ": " << quantizedProducts
                 << " matrix product" << (quantizedProducts == 1 ? "" : "s") << " quantized, " << remarks.size()
                 << " kept in f32\n";
    for (const std::string &r : remarks)
      llvm::errs() << "kiln-compile: note: " << r << "\n";
  }
  if (emit == Emit::Graph || emit == Emit::Linalg || emit == Emit::Bufferized || emit == Emit::MlirLlvm) {
    done();
    OpPrintingFlags flags;
    flags.elideLargeElementsAttrs(16);
    flags.elideLargeResourceString(64);
    module->print(request.irOut ? *request.irOut : llvm::outs(), flags);
    return true;
  }

  CodegenRequest codegen;
  codegen.output = emit == Emit::LlvmIr     ? CodeOutput::LlvmIr
                   : emit == Emit::Assembly ? CodeOutput::Assembly
                                            : CodeOutput::SharedObject;
  codegen.hostCpu = request.targetCpu;
  codegen.ptxas = request.ptxas;
  codegen.cubinOnly = request.cubinOnly;
  codegen.progress = report;
  CodegenResult code;
  if (failed(target.generateCode(module, options, codegen, code, message)))
    return fail(message);
  phases.insert(phases.end(), code.steps.begin(), code.steps.end());
  std::string &out = code.code;
  if (emit != Emit::Artifact) {
    done();
    (request.irOut ? *request.irOut : llvm::outs()) << out;
    return true;
  }
  report("writing the artifact");
  ArtifactInputs inputs;
  inputs.module = module;
  inputs.code = std::move(out);
  inputs.target = std::move(code.target);
  inputs.phases = phases;
  inputs.compilerVersion = request.compilerVersion;
  inputs.maxContext = request.maxContext;
  inputs.quantization = request.quantization;
  inputs.isFileBacked = [source = imported.source](const void *p, size_t n) { return source->isMapped(p, n); };
  inputs.externalWeights = request.externalWeights;
  inputs.modelDir = imported.source->modelDir;
  inputs.locateExternal = [source = imported.source](const void *p, size_t n, std::string &location,
                                                     uint64_t &offset) {
    return source->locateExternal(p, n, location, offset);
  };
  if (failed(writeModelArtifact(inputs, request.outPath, message)))
    return fail(message);
  done();
  return true;
}

} // namespace kiln::driver
