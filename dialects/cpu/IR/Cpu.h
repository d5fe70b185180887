// The kiln_cpu dialect's C++ declarations.
#ifndef KILN_DIALECTS_CPU_CPU_H
#define KILN_DIALECTS_CPU_CPU_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/cpu/IR/CpuDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/cpu/IR/CpuOps.h.inc"

#endif
