// The ONNX ops the importer supports, for kiln-compile --list-ops and docs/ops.md.
#ifndef KILN_COMPILER_DRIVER_OPLIST_H
#define KILN_COMPILER_DRIVER_OPLIST_H

#include <string>
#include <vector>

namespace kiln::driver {

/// Every op name of the default and training domains, sorted.
std::vector<std::string> supportedOps();

} // namespace kiln::driver

#endif
