// kiln-compile's flags (llvm::cl) read into CompileOptions: the one command-line front end.
#ifndef KILN_COMPILER_DRIVER_COMMANDLINE_H
#define KILN_COMPILER_DRIVER_COMMANDLINE_H

#include "compiler/driver/CompileOptions.h"

namespace kiln::driver {

/// Parses argv (exits on --help, --version and malformed flags, as llvm::cl does). `version` is
/// what --version prints and the artifact records after "kiln ". `batchMode`, when given, is set
/// to whether --batch was given (kiln-compile's own mode, not an option of one compilation).
CompileOptions parseCommandLine(int argc, char **argv, const char *version, bool *batchMode = nullptr);

} // namespace kiln::driver

#endif
