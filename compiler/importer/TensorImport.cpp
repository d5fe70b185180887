// TensorProto -> ElementsAttr, including safe resolution of external data files.
#include "compiler/importer/ModelSource.h"
#include "compiler/importer/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <sys/stat.h>

using namespace mlir;

namespace kiln {

Type onnxElementType(MLIRContext *ctx, int32_t dtype) {
  Builder b(ctx);
  switch (dtype) {
  case onnx::TensorProto::FLOAT: return b.getF32Type();
  case onnx::TensorProto::DOUBLE: return b.getF64Type();
  case onnx::TensorProto::FLOAT16: return b.getF16Type();
  case onnx::TensorProto::BFLOAT16: return b.getBF16Type();
  case onnx::TensorProto::BOOL: return b.getI1Type();
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8: return b.getIntegerType(8);
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16: return b.getIntegerType(16);
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32: return b.getIntegerType(32);
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64: return b.getIntegerType(64);
  // kiln_abi_string {data, size}: ONNX has no 128-bit integers, so i128 always means string.
  case onnx::TensorProto::STRING: return b.getIntegerType(128);
  default: return nullptr;
  }
}

namespace {

/// Byte size of one element as stored by ONNX (bool is one byte).
int64_t storedElementSize(int32_t dtype) {
  switch (dtype) {
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64: return 8;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32: return 4;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16: return 2;
  default: return 1;
  }
}

/// Resolves an external-data location to a file inside the model directory.
/// Refuses absolute paths, any `..` component and symlinks anywhere on the way.
FailureOr<std::string> resolveExternalPath(const std::string &modelDir,
                                           const std::string &location,
                                           std::string &error) {
  if (location.empty()) {
    error = "external data location is empty";
    return failure();
  }
  if (llvm::sys::path::is_absolute(location) || location[0] == '/' ||
      location[0] == '\\') {
    error = "external data location '" + location +
            "' is an absolute path; it must be relative to the model's directory";
    return failure();
  }
  std::string path = modelDir;
  for (auto it = llvm::sys::path::begin(location),
            end = llvm::sys::path::end(location);
       it != end; ++it) {
    llvm::StringRef part = *it;
    if (part == "." )
      continue;
    if (part == ".." || part.contains('\\')) {
      error = "external data location '" + location +
              "' leaves the model's directory";
      return failure();
    }
    path += "/" + part.str();
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      error = "external data file '" + location + "' not found next to the model";
      return failure();
    }
    if (S_ISLNK(st.st_mode)) {
      error = "external data location '" + location +
              "' goes through a symlink, which kiln refuses";
      return failure();
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "external data location '" + location + "' is not a regular file";
    return failure();
  }
  return path;
}

/// Maps the external bytes of `tensor`; `expected` is dims x element size.
FailureOr<ArrayRef<char>> mapExternalData(const onnx::TensorProto &tensor,
                                          ModelSource &source,
                                          uint64_t expected,
                                          std::string &error) {
  std::string location;
  uint64_t offset = 0, length = 0;
  bool hasLength = false;
  for (const auto &entry : tensor.external_data()) {
    const std::string &key = entry.key(), &value = entry.value();
    auto parseU64 = [&](uint64_t &out) {
      if (value.empty() || value.size() > 19 ||
          value.find_first_not_of("0123456789") != std::string::npos) {
        error = "external data " + key + " '" + value + "' is not a valid number";
        return false;
      }
      out = std::stoull(value);
      return true;
    };
    if (key == "location")
      location = value;
    else if (key == "offset") {
      if (!parseU64(offset))
        return failure();
    } else if (key == "length") {
      if (!parseU64(length))
        return failure();
      hasLength = true;
    }
  }
  auto path = resolveExternalPath(source.modelDir, location, error);
  if (failed(path))
    return failure();
  uint64_t fileSize = 0;
  if (llvm::sys::fs::file_size(*path, fileSize)) {
    error = "cannot read external data file '" + location + "'";
    return failure();
  }
  if (hasLength && length != expected) {
    error = "external data length " + std::to_string(length) +
            " does not match the tensor's " + std::to_string(expected) + " bytes";
    return failure();
  }
  if (offset > fileSize || expected > fileSize - offset) {
    error = "external data [" + std::to_string(offset) + ", +" +
            std::to_string(expected) + ") lies outside '" + location + "' (" +
            std::to_string(fileSize) + " bytes)";
    return failure();
  }
  if (expected == 0)
    return ArrayRef<char>();
  auto buffer = llvm::MemoryBuffer::getFileSlice(*path, expected, offset,
                                                 /*IsVolatile=*/false);
  if (!buffer) {
    error = "cannot map external data file '" + location + "'";
    return failure();
  }
  ArrayRef<char> bytes((*buffer)->getBufferStart(), expected);
  source.mappedFiles.push_back(std::move(*buffer));
  return bytes;
}

/// Copies typed-field values into a little-endian byte buffer of the tensor's
/// stored element type.
FailureOr<std::vector<char>> typedFieldBytes(const onnx::TensorProto &t,
                                             int64_t count, std::string &error) {
  int64_t size = storedElementSize(t.data_type());
  std::vector<char> bytes(count * size);
  auto fill = [&](auto field, auto convert) -> bool {
    if (field.size() != count) {
      error = "tensor '" + t.name() + "' has " + std::to_string(field.size()) +
              " values, its shape needs " + std::to_string(count);
      return false;
    }
    for (int64_t i = 0; i < count; ++i)
      convert(field.Get(i), bytes.data() + i * size);
    return true;
  };
  auto store = [size](auto v, char *dst) {
    std::memcpy(dst, &v, size);
  };
  bool ok = false;
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    ok = fill(t.float_data(), [&](float v, char *d) { store(v, d); });
    break;
  case onnx::TensorProto::DOUBLE:
    ok = fill(t.double_data(), [&](double v, char *d) { store(v, d); });
    break;
  case onnx::TensorProto::INT64:
    ok = fill(t.int64_data(), [&](int64_t v, char *d) { store(v, d); });
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    ok = fill(t.uint64_data(), [&](uint64_t v, char *d) { store(v, d); });
    break;
  default:
    // int32_data carries every narrower type, fp16/bf16 as bit patterns.
    ok = fill(t.int32_data(), [&](int32_t v, char *d) { store(v, d); });
    break;
  }
  if (!ok)
    return failure();
  return bytes;
}

std::string resourceName(const std::string &tensorName) {
  std::string name = "w_";
  for (char c : tensorName)
    name += (std::isalnum((unsigned char)c) || c == '_') ? c : '_';
  return name;
}

} // namespace

FailureOr<ElementsAttr> importTensor(MLIRContext *ctx,
                                     const onnx::TensorProto &tensor,
                                     ModelSource &source, std::string &error) {
  Type elementType = onnxElementType(ctx, tensor.data_type());
  if (tensor.data_type() == onnx::TensorProto::STRING) {
    error = "unsupported: string constant or initializer '" + tensor.name() +
            "' (string tensors may be graph inputs and op results only)";
    return failure();
  }
  if (!elementType) {
    error = "tensor '" + tensor.name() + "' has unsupported data type " +
            std::to_string(tensor.data_type());
    return failure();
  }
  SmallVector<int64_t> dims;
  uint64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0) {
      error = "tensor '" + tensor.name() + "' has a negative dimension";
      return failure();
    }
    if (d != 0 && count > (uint64_t(1) << 40) / uint64_t(d)) {
      error = "tensor '" + tensor.name() + "' is too large (dims overflow)";
      return failure();
    }
    count *= d;
    dims.push_back(d);
  }
  int64_t elemSize = storedElementSize(tensor.data_type());
  uint64_t expected = count * elemSize;
  auto type = RankedTensorType::get(dims, elementType);

  // Find the bytes: raw_data, external file, or typed fields (copied).
  ArrayRef<char> bytes;
  std::vector<char> owned;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    auto mapped = mapExternalData(tensor, source, expected, error);
    if (failed(mapped)) {
      error = "initializer '" + tensor.name() + "': " + error;
      return failure();
    }
    bytes = *mapped;
  } else if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != expected) {
      error = "tensor '" + tensor.name() + "' has " +
              std::to_string(tensor.raw_data().size()) +
              " bytes of raw data, its shape needs " + std::to_string(expected);
      return failure();
    }
    bytes = ArrayRef<char>(tensor.raw_data().data(), expected);
  } else {
    auto copied = typedFieldBytes(tensor, count, error);
    if (failed(copied))
      return failure();
    owned = std::move(*copied);
    bytes = owned;
  }

  if (elementType.isInteger(1)) {
    SmallVector<bool> values;
    for (char c : bytes)
      values.push_back(c != 0);
    return ElementsAttr(DenseElementsAttr::get(type, values));
  }
  if ((int64_t)count <= kInlineConstantLimit)
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(type, bytes));

  // Large: a dense resource that references the bytes in place when they are
  // suitably aligned (raw_data strings and mapped files are), else one copy.
  AsmResourceBlob blob;
  bool aligned = reinterpret_cast<uintptr_t>(bytes.data()) % elemSize == 0;
  if (owned.empty() && aligned)
    blob = UnmanagedAsmResourceBlob::allocateWithAlign(bytes, elemSize);
  else
    blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, elemSize,
                                                         /*dataIsMutable=*/false);
  return ElementsAttr(DenseResourceElementsAttr::get(
      type, resourceName(tensor.name()), std::move(blob)));
}

} // namespace kiln
