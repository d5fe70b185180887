// Owns the precompiled LLVM/MLIR header that the compiler libraries reuse (cmake/KilnPch.cmake).
