// The kiln_kernel dialect's C++ declarations.
#ifndef KILN_DIALECTS_KERNEL_KERNEL_H
#define KILN_DIALECTS_KERNEL_KERNEL_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/kernel/IR/KernelDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/kernel/IR/KernelOps.h.inc"

#endif
