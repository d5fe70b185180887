// What an imported module's weights point into: the parsed model and its mapped external data.
#ifndef KILN_COMPILER_IMPORTER_MODELSOURCE_H
#define KILN_COMPILER_IMPORTER_MODELSOURCE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln {

class ModelSource {
public:
  std::string modelDir; // canonical directory of the model file
  onnx::ModelProto model;
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> mappedFiles;
  /// Where each external tensor's bytes came from (--weights=external): the bytes at `data` are
  /// those of `location` (relative to modelDir, '/'-separated) from `offset` on.
  struct ExternalRange {
    const char *data = nullptr;
    uint64_t size = 0;
    std::string location;
    uint64_t offset = 0;
  };
  std::vector<ExternalRange> externalRanges;

  /// When [data, data + size) is a contiguous range of an external data file, its location and
  /// offset in that file.
  bool locateExternal(const void *data, size_t size, std::string &location, uint64_t &offset) const {
    auto *p = static_cast<const char *>(data);
    for (const auto &r : externalRanges)
      if (p >= r.data && p <= r.data + r.size && size <= size_t(r.data + r.size - p)) {
        location = r.location;
        offset = r.offset + uint64_t(p - r.data);
        return true;
      }
    return false;
  }

  /// True when [data, data + size) lies in a memory-mapped external data file
  /// (its pages can be dropped from memory and read again from the file).
  bool isMapped(const void *data, size_t size) const {
    auto *p = static_cast<const char *>(data);
    for (const auto &f : mappedFiles)
      if (f->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap && p >= f->getBufferStart() &&
          size <= size_t(f->getBufferEnd() - p))
        return true;
    return false;
  }
};

/// ONNX TensorProto.DataType -> MLIR element type (unsigned ints map to
/// signless integers of the same width). Null for unsupported types.
mlir::Type onnxElementType(mlir::MLIRContext *ctx, int32_t dtype);

/// Converts a TensorProto (raw, typed fields or external data) into an
/// ElementsAttr. Large tensors reference the model's bytes without copying.
/// External data must resolve inside `source.modelDir`: absolute paths, `..`
/// and symlinks are refused, as are offsets/lengths outside the file.
mlir::FailureOr<mlir::ElementsAttr>
importTensor(mlir::MLIRContext *ctx, const onnx::TensorProto &tensor,
             ModelSource &source, std::string &error);

} // namespace kiln

#endif
