// The ONNX node names a kernel came from: the NameLocs inside an op's (possibly fused) location.
#ifndef KILN_PASSES_HOST_SOURCENODES_H
#define KILN_PASSES_HOST_SOURCENODES_H

#include "mlir/IR/Location.h"
#include "llvm/ADT/SetVector.h"

#include <string>

namespace kiln {

inline void collectNodeNames(mlir::Location loc, llvm::SetVector<llvm::StringRef> &names) {
  loc->walk([&](mlir::Location l) {
    if (auto nl = mlir::dyn_cast<mlir::NameLoc>(l))
      names.insert(nl.getName().getValue());
    return mlir::WalkResult::advance();
  });
}

/// The first ONNX node name in `loc`, or "(unnamed)": how a report names an op.
inline std::string nodeName(mlir::Location loc) {
  llvm::SetVector<llvm::StringRef> names;
  collectNodeNames(loc, names);
  return names.empty() ? std::string("(unnamed)") : names.front().str();
}

} // namespace kiln

#endif
