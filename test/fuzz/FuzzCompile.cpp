// One fuzzed compilation: importer, pass pipeline and LLVM IR translation, as kiln-compile runs them.
#include "FuzzCompile.h"

#include "compiler/importer/ModelSource.h"
#include "compiler/importer/OnnxImporter.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/targets/TargetBackend.h"
#include "compiler/targets/x86/X86Target.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"

namespace kiln::fuzz {

void initialize() {
  registerKilnPasses();
  registerAllTargetBackends();
}

bool compileBytes(const uint8_t *data, size_t size, const std::string &modelDir, Depth depth,
                  const std::function<void(const ModelSource &)> &inspect) {
  mlir::DialectRegistry registry;
  registerKilnDialects(registry);
  // No thread pool: findings must reproduce from one input, and threads cost start-up per run.
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) { return mlir::success(); });

  std::string error;
  ImportedModel imported =
      importOnnxBytes(context, llvm::StringRef(reinterpret_cast<const char *>(data), size), modelDir,
                      "fuzz.onnx", error);
  if (!imported.module)
    return false;
  if (inspect)
    inspect(*imported.source);
  if (depth == Depth::Import)
    return true;
  PipelineOptions options;
  options.vectorBits = 256;
  registerAllTargetBackends();
  const TargetBackend &x86 = *lookupTargetBackend("x86");
  if (mlir::failed(runPipeline(*imported.module, Phase::Llvm, options,
                               [&](Phase p, mlir::OpPassManager &pm) { x86.buildPhase(p, pm, options); })))
    return false;
  X86TargetOptions target;
  target.cpu = "x86-64-v3"; // fixed, so findings do not depend on the fuzzing machine
  X86TargetInfo info;
  std::string ir;
  return mlir::succeeded(emitX86(*imported.module, target, X86Output::LlvmIr, ir, info, error));
}

} // namespace kiln::fuzz
