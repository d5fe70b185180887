// LLVM dialect -> LLVM IR -> optimized x86-64 object code -> shared object, all in-process.
#ifndef KILN_COMPILER_TARGETS_X86_X86TARGET_H
#define KILN_COMPILER_TARGETS_X86_X86TARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace kiln {

struct X86TargetOptions {
  std::string cpu = "host"; // "host" or an LLVM CPU name (e.g. x86-64-v3)
  /// LLVM's loop and SLP vectorizers in the O3 pipeline (off for --target=x86-scalar).
  bool vectorize = true;
};

struct X86TargetInfo {
  std::string triple, cpu;
  std::vector<std::string> requiredFeatures; // the checkable ISA features the code may use
};

/// Vector register width (bits) the chosen CPU has: 512 with AVX-512, else 256.
/// Returns 0 and sets `error` for an unknown CPU.
int x86VectorBits(const X86TargetOptions &options, std::string &error);

enum class X86Output { LlvmIr, Assembly, SharedObject };

/// Translates `module` (LLVM dialect) and produces the requested output in
/// `out`. Deterministic for the same input and options.
mlir::LogicalResult emitX86(mlir::ModuleOp module, const X86TargetOptions &options,
                            X86Output kind, std::string &out, X86TargetInfo &info,
                            std::string &error);

struct PipelineOptions;
struct CodegenRequest;
struct CodegenResult;

/// Sets `options.vectorBits` for the host CPU `hostCpu`; false with a message for an unknown CPU.
/// The CPU targets' kernels after bufferization: string ops to runtime calls, each parallel loop
/// nest a launch on the runtime's threads, its cost counted, workspaces from the runtime context.
void addCpuKernelLaunches(mlir::OpPassManager &pm);

/// The CPU targets' end of the LLVM phase: the host program in the LLVM dialect (after the target's
/// own kernel passes), each launch outlined into its kernel function, the entry point emitted.
void addCpuHostToLlvm(mlir::OpPassManager &pm);

bool configureX86VectorBits(PipelineOptions &options, const std::string &hostCpu, std::string &error);

/// Code generation for an x86-64 host program (every target's host side): the output `request`
/// asks for, with the triple, CPU and features recorded in `result`.
mlir::LogicalResult generateX86HostCode(mlir::ModuleOp module, const CodegenRequest &request,
                                        const X86TargetOptions &target, CodegenResult &result,
                                        std::string &error);

} // namespace kiln

#endif
