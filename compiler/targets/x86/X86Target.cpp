// x86-64 code generation: TargetMachine for the chosen CPU, O3, object emission, lld to a .so.
#include "compiler/targets/x86/X86Target.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include "lld/Common/Driver.h"

LLD_HAS_DRIVER(elf)

using namespace mlir;

namespace kiln {
namespace {

/// ISA features the runtime can check on the host before running code.
const char *kCheckableFeatures[] = {"sse4.2", "avx", "avx2", "fma", "f16c", "bmi2",
                                    "avx512f", "avx512bw", "avx512vl", "avx512vnni"};

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const X86TargetOptions &options,
                                                       X86TargetInfo &info,
                                                       std::string &error) {
  static bool initialized = [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeX86AsmParser();
    return true;
  }();
  (void)initialized;
  llvm::Triple triple("x86_64-unknown-linux-gnu");
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string cpu = options.cpu == "host" ? llvm::sys::getHostCPUName().str() : options.cpu;
  std::string features;
  if (options.cpu == "host") {
    // The host's own feature list, so that e.g. a CPU without AVX-512 support
    // enabled by the OS is not targeted.
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") + std::string(f.getValue() ? "+" : "-") +
                  f.getKey().str();
  }
  // Scatters are tuning, not ISA: LLVM's AVX-512 cost model takes them as
  // cheap and vectorized the outer loop of plain fills and copies with them
  // (16 scalar stores each, microcoded on AMD: resnet18's 3 MB -inf fill
  // before its max pool took 1.1 ms instead of 0.1), so never prefer them.
  features += std::string(features.empty() ? "" : ",") + "+prefer-no-scatter";
  llvm::TargetOptions to;
  auto tm = std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, features, to, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm) {
    error = "cannot create a target machine for CPU '" + cpu + "'";
    return nullptr;
  }
  const llvm::MCSubtargetInfo *sti = tm->getMCSubtargetInfo();
  if (!sti->isCPUStringValid(cpu)) {
    error = "unknown target CPU '" + cpu + "'";
    return nullptr;
  }
  info.triple = triple.str();
  info.cpu = cpu;
  info.requiredFeatures.clear();
  for (const char *f : kCheckableFeatures)
    if (sti->checkFeatures(std::string("+") + f))
      info.requiredFeatures.push_back(f);
  return tm;
}

void optimize(llvm::Module &module, llvm::TargetMachine &tm, bool vectorize) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = vectorize;
  tuning.SLPVectorization = vectorize;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, mam);
}

/// Links one relocatable object into a shared object with lld, in-process.
LogicalResult linkSharedObject(llvm::StringRef object, std::string &out, std::string &error) {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("kiln-link", dir)) {
    error = "cannot create a temporary directory for linking";
    return failure();
  }
  std::string objPath = (dir + "/kernels.o").str(), soPath = (dir + "/kernels.so").str();
  auto cleanup = [&] {
    llvm::sys::fs::remove(objPath);
    llvm::sys::fs::remove(soPath);
    llvm::sys::fs::remove(dir);
  };
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objPath, ec);
    if (ec) {
      error = "cannot write " + objPath;
      cleanup();
      return failure();
    }
    os << object;
  }
  std::string linkLog;
  llvm::raw_string_ostream linkOut(linkLog);
  std::vector<const char *> args = {"ld.lld", "-shared", "--hash-style=gnu", "--build-id=none",
                                    "-z", "noexecstack", "-O1", "-o", soPath.c_str(), objPath.c_str()};
  lld::Result result = lld::lldMain(args, linkOut, linkOut, {{lld::Gnu, &lld::elf::link}});
  if (result.retCode != 0 || !result.canRunAgain) {
    error = "linking the kernels failed: " + linkLog;
    cleanup();
    return failure();
  }
  auto buffer = llvm::MemoryBuffer::getFile(soPath);
  if (!buffer) {
    error = "cannot read the linked kernels";
    cleanup();
    return failure();
  }
  out = (*buffer)->getBuffer().str();
  cleanup();
  return success();
}

} // namespace

int x86VectorBits(const X86TargetOptions &options, std::string &error) {
  X86TargetInfo info;
  if (!makeTargetMachine(options, info, error))
    return 0;
  return llvm::is_contained(info.requiredFeatures, "avx512f") ? 512 : 256;
}

LogicalResult emitX86(ModuleOp module, const X86TargetOptions &options, X86Output kind,
                      std::string &out, X86TargetInfo &info, std::string &error) {
  auto tm = makeTargetMachine(options, info, error);
  if (!tm)
    return failure();
  llvm::LLVMContext llvmContext;
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext, "kiln");
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  llvmModule->setTargetTriple(tm->getTargetTriple());
  llvmModule->setDataLayout(tm->createDataLayout());
  for (llvm::Function &f : *llvmModule) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", info.cpu);
    f.addFnAttr("target-features", tm->getTargetFeatureString());
  }
  optimize(*llvmModule, *tm, options.vectorize);

  if (kind == X86Output::LlvmIr) {
    llvm::raw_string_ostream os(out);
    llvmModule->print(os, nullptr);
    return success();
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  auto fileType = kind == X86Output::Assembly ? llvm::CodeGenFileType::AssemblyFile
                                              : llvm::CodeGenFileType::ObjectFile;
  if (tm->addPassesToEmitFile(pm, os, nullptr, fileType)) {
    error = "the target cannot emit this file type";
    return failure();
  }
  pm.run(*llvmModule);
  if (kind == X86Output::Assembly) {
    out.assign(buffer.begin(), buffer.end());
    return success();
  }
  return linkSharedObject(llvm::StringRef(buffer.data(), buffer.size()), out, error);
}

} // namespace kiln
