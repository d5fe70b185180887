// kiln-compile: ONNX model -> kiln artifact (or the IR of one phase with --emit); with --quantize
// and an accuracy flag, also the float reference, both run and compared before the artifact is
// written. The work is compiler/driver's; this is its command line.
#include "compiler/driver/CommandLine.h"
#include "compiler/driver/Driver.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

#ifndef KILN_VERSION
#define KILN_VERSION "dev"
#endif

int main(int argc, char **argv) {
  const kiln::driver::CompileOptions options = kiln::driver::parseCommandLine(argc, argv, KILN_VERSION);
  std::string error;
  if (kiln::driver::compile(options, llvm::outs(), &error))
    return 0;
  for (char &c : error)
    if (c == '\n')
      c = ' ';
  llvm::errs() << "kiln-compile: error: " << error << "\n";
  return 1;
}
