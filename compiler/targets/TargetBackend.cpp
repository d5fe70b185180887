// The registry of target backends (filled by registerAllTargetBackends, AllTargets.cpp).
#include "compiler/targets/TargetBackend.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {

TargetBackend::~TargetBackend() = default;

namespace {
std::vector<std::unique_ptr<TargetBackend>> &registry() {
  static std::vector<std::unique_ptr<TargetBackend>> backends;
  return backends;
}
} // namespace

void registerTargetBackend(std::unique_ptr<TargetBackend> backend) { registry().push_back(std::move(backend)); }

const TargetBackend *lookupTargetBackend(llvm::StringRef name) {
  for (const auto &b : registry())
    if (b->name() == name)
      return b.get();
  return nullptr;
}

std::vector<std::string> targetBackendNames() {
  std::vector<std::string> names;
  for (const auto &b : registry())
    names.push_back(b->name().str());
  return names;
}

std::string describePipeline(const TargetBackend &backend, const PipelineOptions &options) {
  registerKilnPasses();
  mlir::DialectRegistry dialects;
  registerKilnDialects(dialects);
  mlir::MLIRContext context(dialects);
  std::string text;
  llvm::raw_string_ostream os(text);
  for (Phase phase : kAllPhases) {
    mlir::PassManager pm(&context);
    backend.buildPhase(phase, pm, options);
    os << phaseName(phase) << ": ";
    pm.printAsTextualPipeline(os);
    os << "\n";
  }
  return text;
}

} // namespace kiln
