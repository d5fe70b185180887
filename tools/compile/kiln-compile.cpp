// kiln-compile: ONNX model -> kiln artifact (or the IR of one phase with --emit).
#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/importer/NodeContext.h"
#include "compiler/importer/OnnxImporter.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/targets/x86/X86Target.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

static cl::OptionCategory category("kiln-compile options");
static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"), cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output artifact path"), cl::value_desc("file"),
                                       cl::cat(category));
static cl::opt<std::string> emit("emit",
                                 cl::desc("Print the IR after a phase instead of writing an artifact: "
                                          "graph | linalg | bufferized | mlir-llvm | llvm | asm"),
                                 cl::cat(category));
static cl::opt<std::string> targetCpu("target-cpu", cl::desc("x86-64 CPU to compile for (default: host)"),
                                      cl::init("host"), cl::cat(category));
static cl::opt<bool> printAll("mlir-print-ir-after-all", cl::desc("Print the IR after every pass to stderr"),
                              cl::cat(category));
static cl::alias printAllShort("print-ir-after-all", cl::desc("Same as --mlir-print-ir-after-all"),
                               cl::aliasopt(printAll), cl::cat(category));
static cl::opt<std::string> printAfter("print-ir-after", cl::desc("Print the IR after the named pass"),
                                       cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Do not show progress"), cl::cat(category));
static cl::opt<std::string> dumpIrDir("dump-ir-dir",
                                      cl::desc("Write the IR after every pass to DIR/NNN_<pass>.mlir"),
                                      cl::value_desc("dir"), cl::cat(category));
static cl::opt<bool> kvCache("kv-cache",
                             cl::desc("Give decoders with past key/values a runtime-owned KV cache written in "
                                      "place (default true; false keeps the present outputs)"),
                             cl::init(true), cl::cat(category));
static cl::opt<int64_t> maxContext("max-context",
                                   cl::desc("Default KV cache capacity in tokens, stored in the artifact "
                                            "(the runtime may choose another; default 2048)"),
                                   cl::init(2048), cl::cat(category));
static cl::opt<bool> fuse("fusion",
                          cl::desc("Fuse composite patterns (norms, GELU, SiLU, attention) and elementwise chains "
                                   "(default true; false: one kernel per op, to compare or bisect)"),
                          cl::init(true), cl::cat(category));
static cl::opt<bool> planMemory("memory-plan",
                                cl::desc("Place intermediates in one arena by liveness (default true; false: "
                                         "malloc each, to bisect)"),
                                cl::init(true), cl::cat(category));
static cl::opt<bool> printMemoryPlan("print-memory-plan",
                                     cl::desc("Print each intermediate buffer's size, lifetime and arena offset, "
                                              "the arena's peak and the sum without reuse"),
                                     cl::cat(category));
static cl::opt<bool> listOps("list-ops", cl::desc("List the ONNX ops the importer supports and exit"),
                             cl::cat(category));

static int fail(const std::string &msg) {
  std::string line = msg;
  for (char &c : line)
    if (c == '\n')
      c = ' ';
  llvm::errs() << "kiln-compile: error: " << line << "\n";
  return 1;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << "kiln-compile " KILN_VERSION "\n"; });
  cl::ParseCommandLineOptions(argc, argv,
                              "kiln-compile: compile an ONNX model into a kiln artifact\n\n"
                              "  kiln-compile model.onnx -o model.kiln\n"
                              "  kiln-compile model.onnx --emit=linalg\n");
  // Copy the options now: parsing pass pipelines later resets LLVM's
  // command-line option values.
  const std::string modelPath = inputPath, outPath = outputPath, emitWhat = emit,
                    cpuName = targetCpu, printAfterName = printAfter, dumpDir = dumpIrDir;
  const bool printAllIr = printAll, beQuiet = quiet, useKvCache = kvCache, useFusion = fuse,
             usePlan = planMemory, printPlan = printMemoryPlan;
  const int64_t contextTokens = maxContext;
  if (contextTokens < 1 || contextTokens > (int64_t(1) << 24))
    return fail("--max-context must be between 1 and 16777216");
  if (listOps) {
    std::vector<std::string> names;
    for (const auto &entry : kiln::nodeImporters())
      names.push_back(entry.getKey().str());
    std::sort(names.begin(), names.end());
    for (const auto &n : names)
      llvm::outs() << n << "\n";
    return 0;
  }
  if (modelPath.empty())
    return fail("no input model given (see --help)");
  std::map<std::string, int> emits = {{"", 0}, {"graph", 1}, {"linalg", 2}, {"bufferized", 3},
                                      {"mlir-llvm", 4}, {"llvm", 5}, {"asm", 6}};
  if (!emits.count(emitWhat))
    return fail("unknown --emit value '" + emitWhat + "'");
  if (emitWhat.empty() && outPath.empty())
    return fail("no output given: use -o <file> or --emit=<phase>");

  bool progress = !beQuiet && isatty(STDERR_FILENO);
  auto report = [&](const char *what) {
    if (progress)
      llvm::errs() << "\r\033[K[kiln-compile] " << what << "...";
  };
  auto done = [&] {
    if (progress)
      llvm::errs() << "\r\033[K";
  };

  DialectRegistry registry;
  kiln::registerKilnDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string firstError;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      std::string where;
      d.getLocation()->walk([&](Location l) {
        if (auto nl = dyn_cast<NameLoc>(l); nl && where.empty())
          where = "node '" + nl.getName().str() + "': ";
        return WalkResult::advance();
      });
      firstError = where + d.str();
    }
    return success();
  });

  report("importing");
  std::string error;
  kiln::ImportedModel imported = kiln::importOnnxFile(context, modelPath, error);
  if (!imported.module) {
    done();
    return fail(error);
  }
  ModuleOp module = *imported.module;

  int stop = emits[emitWhat];
  kiln::Phase last = stop == 1 ? kiln::Phase::Graph
                   : stop == 2 ? kiln::Phase::Linalg
                   : stop == 3 ? kiln::Phase::Bufferized
                               : kiln::Phase::Llvm;
  kiln::X86TargetOptions target;
  target.cpu = cpuName;
  kiln::PipelineOptions options;
  options.vectorBits = kiln::x86VectorBits(target, error);
  if (options.vectorBits == 0) {
    done();
    return fail(error);
  }
  options.printIrAfterAll = printAllIr;
  options.printIrAfter = printAfterName;
  options.dumpIrDir = dumpDir;
  options.kvCache = useKvCache;
  options.fuse = useFusion;
  options.planMemory = usePlan;
  options.printMemoryPlan = printPlan;
  std::vector<std::string> phases = {"import"};
  options.afterPhase = [&](kiln::Phase p) {
    if (p == kiln::Phase::Graph)
      kiln::recordSignature(module);
  };
  options.onPhase = [&](kiln::Phase p) {
    phases.push_back(kiln::phaseName(p));
    report(kiln::phaseName(p));
  };
  if (failed(kiln::runPipeline(module, last, options))) {
    done();
    return fail(firstError.empty() ? "compilation failed" : firstError);
  }
  if (stop >= 1 && stop <= 4) {
    done();
    OpPrintingFlags flags;
    flags.elideLargeElementsAttrs(16);
    flags.elideLargeResourceString(64);
    module->print(llvm::outs(), flags);
    return 0;
  }

  report("generating x86-64 code");
  kiln::X86TargetInfo info;
  std::string out;
  kiln::X86Output kind = stop == 5   ? kiln::X86Output::LlvmIr
                         : stop == 6 ? kiln::X86Output::Assembly
                                     : kiln::X86Output::SharedObject;
  if (failed(kiln::emitX86(module, target, kind, out, info, error))) {
    done();
    return fail(error);
  }
  phases.push_back("x86-64");
  if (stop >= 5) {
    done();
    llvm::outs() << out;
    return 0;
  }
  report("writing the artifact");
  kiln::ArtifactInputs inputs{module, out, info, phases, "kiln " KILN_VERSION, contextTokens};
  inputs.isFileBacked = [source = imported.source](const void *p, size_t n) { return source->isMapped(p, n); };
  if (failed(kiln::writeModelArtifact(inputs, outPath, error))) {
    done();
    return fail(error);
  }
  done();
  return 0;
}
