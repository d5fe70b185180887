// kiln-compile: ONNX model -> kiln artifact (or the IR of one phase with --emit); with --quantize
// and an accuracy flag, also the float reference, both run and compared before the artifact is
// written. The work is compiler/driver's; this is its command line, and --batch (many models per
// process, for test runners).
#include "compiler/driver/CommandLine.h"
#include "compiler/driver/Driver.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <iostream>
#include <string>

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

namespace {

/// One compilation; its error, if any, as one line on stderr. Returns the exit status.
int compileOne(const kiln::driver::CompileOptions &options) {
  std::string error;
  if (kiln::driver::compile(options, llvm::outs(), &error))
    return 0;
  for (char &c : error)
    if (c == '\n')
      c = ' ';
  llvm::errs() << "kiln-compile: error: " << error << "\n";
  return 1;
}

/// --batch: "MODEL<tab>ARTIFACT" per stdin line, each compiled as `kiln-compile MODEL -o ARTIFACT`
/// with the other flags would be, in this process. After each, everything it printed is flushed and
/// "kiln-compile: batch done RC" ends its output on stderr: a runner reads up to that line. A crash
/// ends the process; the runner sees no line and starts another. Each compile has its own MLIR
/// context, so models do not see each other (check_compile_determinism.py compares the bytes with
/// one process per model).
int runBatch(const kiln::driver::CompileOptions &base) {
  int worst = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty())
      continue;
    const size_t tab = line.find('\t');
    int rc = 1;
    if (tab == std::string::npos || tab == 0 || tab + 1 == line.size()) {
      llvm::errs() << "kiln-compile: error: --batch: expected 'MODEL<tab>ARTIFACT', got '" << line << "'\n";
    } else {
      kiln::driver::CompileOptions options = base;
      options.modelPath = line.substr(0, tab);
      options.outPath = line.substr(tab + 1);
      rc = compileOne(options);
    }
    llvm::outs().flush();
    std::fflush(stdout);
    llvm::errs() << "kiln-compile: batch done " << rc << "\n";
    llvm::errs().flush();
    worst = rc > worst ? rc : worst;
  }
  return worst;
}

} // namespace

int main(int argc, char **argv) {
  bool batch = false;
  const kiln::driver::CompileOptions options =
      kiln::driver::parseCommandLine(argc, argv, KILN_VERSION, &batch);
  if (!batch)
    return compileOne(options);
  if (!options.modelPath.empty() || !options.outPath.empty() || !options.emit.empty()) {
    llvm::errs() << "kiln-compile: error: --batch reads the models and artifacts from stdin: give no model, -o "
                    "or --emit\n";
    return 1;
  }
  return runBatch(options);
}
