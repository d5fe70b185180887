// kiln's compiler as one call: options in, an artifact (or IR, or a report) out, or an error
// message. kiln-compile, Python and a server are front ends over it.
#ifndef KILN_COMPILER_DRIVER_DRIVER_H
#define KILN_COMPILER_DRIVER_DRIVER_H

#include "compiler/driver/CompileOptions.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace kiln::driver {

/// Validates `options` and does what they ask: lists the ops, prints the pipeline, prints a
/// phase's IR or the generated code, or writes the artifact (with --quantize and the accuracy
/// check: measured, reported to `out` and stored, or refused). What a request prints goes to
/// `out`. On failure returns false with a one-line reason in `error`; no artifact is left at the
/// output path by a failed accuracy check.
bool compile(const CompileOptions &options, llvm::raw_ostream &out, std::string *error);

} // namespace kiln::driver

#endif
