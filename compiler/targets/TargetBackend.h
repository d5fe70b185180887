// What a compilation target provides (its pipeline per phase, its codegen, what it records in the
// artifact) and the registry the driver looks targets up in by their --target name.
#ifndef KILN_COMPILER_TARGETS_TARGETBACKEND_H
#define KILN_COMPILER_TARGETS_TARGETBACKEND_H

#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/pipeline/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// What the code generator produces: the host program as LLVM IR or assembly (for --emit), or the
/// shared object that goes into the artifact.
enum class CodeOutput { LlvmIr, Assembly, SharedObject };

struct CodegenRequest {
  CodeOutput output = CodeOutput::SharedObject;
  std::string hostCpu = "host";         // the host program's CPU ("host" or an LLVM CPU name)
  std::string ptxas;                    // GPU targets: the ptxas to use ("" = search, "none" = PTX only)
  bool cubinOnly = false;               // GPU targets: drop the PTX once the cubin is made
  std::function<void(const char *)> progress; // names the step under way
};

struct CodegenResult {
  std::string code;                  // the output `CodegenRequest::output` asked for
  ArtifactTarget target;             // what the artifact records about the code
  std::vector<std::string> steps;    // codegen steps run, appended to the artifact's phases
};

class TargetBackend {
public:
  virtual ~TargetBackend();

  /// The --target name.
  virtual llvm::StringRef name() const = 0;
  /// Whether the kernels are GPU kernels (the options for GPUs then apply).
  virtual bool formsGpuKernels() const { return false; }
  /// Whether --gpu-arch names the code's architecture (checked before compiling).
  virtual bool needsGpuArch() const { return false; }
  /// The host program's CPU when --target-cpu is not given.
  virtual std::string defaultHostCpu() const { return "host"; }

  /// Completes `options` for this target before the pipeline is built (e.g. the vector width of
  /// `hostCpu`). Fails with a message for an unusable target configuration.
  virtual bool configure(PipelineOptions &options, const std::string &hostCpu, std::string &error) const = 0;

  /// Adds the passes of `phase` to `pm` (anchored on builtin.module).
  virtual void buildPhase(Phase phase, mlir::OpPassManager &pm, const PipelineOptions &options) const = 0;

  /// Turns the module after the last phase into code, and says what the artifact records about it.
  virtual mlir::LogicalResult generateCode(mlir::ModuleOp module, const PipelineOptions &options,
                                           const CodegenRequest &request, CodegenResult &result,
                                           std::string &error) const = 0;
};

/// Adds a target to the registry (compiler/targets/Targets.def lists the registration functions).
void registerTargetBackend(std::unique_ptr<TargetBackend> backend);
/// Registers every target kiln is built with (Targets.def), once; front ends call it before
/// looking a target up (compiler/targets/AllTargets.cpp, library KilnAllTargets).
void registerAllTargetBackends();
/// The target named `name`, or null.
const TargetBackend *lookupTargetBackend(llvm::StringRef name);
/// The registered targets' names, in registration order.
std::vector<std::string> targetBackendNames();

/// The pipeline `backend` runs for `options`, as text, one line per phase ("graph: ..."), for
/// kiln-compile --print-pipeline and docs/architecture.md.
std::string describePipeline(const TargetBackend &backend, const PipelineOptions &options);

} // namespace kiln

#endif
