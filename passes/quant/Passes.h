// Quantization passes (generated declarations).
#ifndef KILN_PASSES_QUANT_PASSES_H
#define KILN_PASSES_QUANT_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {
#define GEN_PASS_DECL
#include "passes/quant/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/quant/Passes.h.inc"
} // namespace kiln

#endif
