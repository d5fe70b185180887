# One precompiled header of the LLVM/MLIR headers that kiln's compiler libraries include.
#
# Why: a pass's own code is a few hundred lines, but each translation unit used to re-parse about
# 300,000 lines of MLIR headers (dialect ops, pattern rewriting, the pass manager): 95% of a typical
# object's compile time was clang's front end, measured with -fsyntax-only. With this header
# precompiled once per build, FuseSilu.cpp compiles in 2.7 s instead of 10.5 s and
# VectorizeContractions.cpp in 4.2 s instead of 17.5 s (clang-22, -O3); with kiln's dialect headers
# in it too, FuseSilu.cpp takes 0.8 s. Every target reuses the one
# PCH (REUSE_FROM), so a build makes it once. Clang loads a PCH lazily, so a TU pays little for the
# headers in it that it does not use.
#
# ccache caches objects built with a PCH only when told the PCH's defines and timestamps are
# harmless (CCACHE_SLOPPINESS, set by scripts/build.sh and scripts/sanitize-build.sh).
# -DKILN_PCH=OFF builds without it (to check that every file includes what it uses).
option(KILN_PCH "Precompile the LLVM/MLIR headers the compiler libraries share" ON)

set(KILN_PCH_HEADERS
  <llvm/ADT/DenseMap.h>
  <llvm/ADT/SetVector.h>
  <llvm/ADT/SmallVector.h>
  <llvm/ADT/StringRef.h>
  <llvm/Support/raw_ostream.h>
  <mlir/IR/Builders.h>
  <mlir/IR/BuiltinOps.h>
  <mlir/IR/IRMapping.h>
  <mlir/IR/Matchers.h>
  <mlir/IR/PatternMatch.h>
  <mlir/Interfaces/SideEffectInterfaces.h>
  <mlir/Pass/Pass.h>
  <mlir/Pass/PassManager.h>
  <mlir/Transforms/DialectConversion.h>
  <mlir/Transforms/GreedyPatternRewriteDriver.h>
  <mlir/Dialect/Affine/IR/AffineOps.h>
  <mlir/Dialect/Arith/IR/Arith.h>
  <mlir/Dialect/ControlFlow/IR/ControlFlowOps.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/Dialect/GPU/IR/GPUDialect.h>
  <mlir/Dialect/Linalg/IR/Linalg.h>
  <mlir/Dialect/LLVMIR/LLVMDialect.h>
  <mlir/Dialect/Math/IR/Math.h>
  <mlir/Dialect/MemRef/IR/MemRef.h>
  <mlir/Dialect/SCF/IR/SCF.h>
  <mlir/Dialect/Tensor/IR/Tensor.h>
  <mlir/Dialect/Utils/StaticValueUtils.h>
  <mlir/Dialect/Vector/IR/VectorOps.h>
  # kiln's own dialects: GraphOps.h.inc alone declares some 250 op classes.
  ${PROJECT_SOURCE_DIR}/dialects/graph/IR/Graph.h
  ${PROJECT_SOURCE_DIR}/dialects/cpu/IR/Cpu.h
  ${PROJECT_SOURCE_DIR}/dialects/kernel/IR/Kernel.h
)

if(KILN_PCH)
  # The target that owns the PCH: an object library of one empty file, so that the PCH does not wait
  # on any kiln library (it depends on nothing but the installed headers).
  add_library(KilnMlirPch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_owner.cpp)
  target_precompile_headers(KilnMlirPch PRIVATE ${KILN_PCH_HEADERS})
  # Without this clang records every input header's modification time in the PCH, so a fresh clone
  # (new mtimes for the dialect headers and the generated .inc files) makes a PCH with other bytes,
  # and ccache misses every object that includes it: a warm cache would rebuild the whole compiler.
  target_compile_options(KilnMlirPch PRIVATE -Xclang -fno-pch-timestamp)
  # The dialect headers include what mlir-tblgen generates (targets defined in dialects/, later).
  add_dependencies(KilnMlirPch KilnGraphIncGen KilnCpuIncGen KilnKernelIncGen)
  message(STATUS "kiln: precompiled LLVM/MLIR headers for the compiler libraries (KILN_PCH)")
endif()

# Every static library and executable defined under the given source folders (recursively) reuses
# the PCH. Call after those folders were added.
function(kiln_use_mlir_pch)
  if(NOT KILN_PCH)
    return()
  endif()
  foreach(dir ${ARGN})
    _kiln_pch_folder(${PROJECT_SOURCE_DIR}/${dir})
  endforeach()
endfunction()

function(_kiln_pch_folder dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "EXECUTABLE")
      target_precompile_headers(${t} REUSE_FROM KilnMlirPch)
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    _kiln_pch_folder(${sub})
  endforeach()
endfunction()
