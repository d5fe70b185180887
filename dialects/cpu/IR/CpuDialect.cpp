// Registers the kiln_cpu dialect and verifies its ops.
#include "dialects/cpu/IR/Cpu.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln::cpu;

#include "dialects/cpu/IR/CpuDialect.cpp.inc"

void CpuDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/cpu/IR/CpuOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/cpu/IR/CpuOps.cpp.inc"

LogicalResult LaunchOp::verify() {
  Block &entry = getBody().front();
  if (entry.getNumArguments() != 1 || !entry.getArgument(0).getType().isInteger(64))
    return emitOpError("body must take exactly one i64 work-item argument");
  return success();
}
