// TensorProto -> ElementsAttr, including safe resolution of external data files.
#include "compiler/importer/ModelSource.h"
#include "compiler/importer/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

/// A file descriptor closed when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd &&o) : fd(o.fd) { o.fd = -1; }
  Fd(const Fd &) = delete;
  Fd &operator=(Fd &&o) {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Opens an external-data location as a file inside the model directory.
/// The location must be relative, without `..`; every component is opened
/// with O_NOFOLLOW relative to the one before (openat), so a symlink anywhere
/// on the way is refused and nothing can be swapped between the check and the
/// open. The file must be a regular file with one link: a hard link is how a
/// file from elsewhere would appear inside the directory.
FailureOr<Fd> openExternalFile(const std::string &modelDir,
                               const std::string &location,
                               std::string &error) {
  if (location.empty()) {
    error = "external data location is empty";
    return failure();
  }
  if (location.find('\0') != std::string::npos) {
    error = "external data location contains a NUL byte";
    return failure();
  }
  if (llvm::sys::path::is_absolute(location) || location[0] == '/' ||
      location[0] == '\\') {
    error = "external data location '" + location +
            "' is an absolute path; it must be relative to the model's directory";
    return failure();
  }
  SmallVector<llvm::StringRef> parts;
  for (auto it = llvm::sys::path::begin(location),
            end = llvm::sys::path::end(location);
       it != end; ++it) {
    llvm::StringRef part = *it;
    if (part == "." || part.empty())
      continue;
    if (part == ".." || part.contains('\\')) {
      error = "external data location '" + location +
              "' leaves the model's directory";
      return failure();
    }
    parts.push_back(part);
  }
  if (parts.empty()) {
    error = "external data location '" + location + "' names no file";
    return failure();
  }
  Fd dir(::open(modelDir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0) {
    error = "cannot open the model's directory '" + modelDir + "'";
    return failure();
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    bool last = i + 1 == parts.size();
    std::string part = parts[i].str();
    // O_NONBLOCK: a FIFO planted as the data file must not hang the compiler.
    int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY);
    Fd next(::openat(dir.fd, part.c_str(), flags));
    if (next.fd < 0) {
      int err = errno;
      struct stat st;
      bool isLink = ::fstatat(dir.fd, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISLNK(st.st_mode);
      if (isLink || err == ELOOP)
        error = "external data location '" + location +
                "' goes through a symlink, which kiln refuses";
      else if (err == ENOENT)
        error = "external data file '" + location + "' not found next to the model";
      else
        error = "cannot open external data file '" + location + "': " + std::strerror(err);
      return failure();
    }
    dir = std::move(next);
  }
  struct stat st;
  if (::fstat(dir.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "external data location '" + location + "' is not a regular file";
    return failure();
  }
  if (st.st_nlink != 1) {
    error = "external data file '" + location + "' has " + std::to_string(st.st_nlink) +
            " hard links, which kiln refuses (it may be a file from outside the model's directory)";
    return failure();
  }
  return std::move(dir);
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
  auto file = openExternalFile(source.modelDir, location, error);
  if (failed(file))
    return failure();
  struct stat st;
  if (::fstat(file->fd, &st) != 0) {
    error = "cannot read external data file '" + location + "'";
    return failure();
  }
  uint64_t fileSize = uint64_t(st.st_size);
  if (hasLength && length != expected) {
    error = "external data length " + std::to_string(length) +
            " does not match the tensor's " + std::to_string(expected) + " bytes";
    return failure();
  }
  // Written so that offset + expected cannot wrap.
  if (offset > fileSize || expected > fileSize - offset) {
    error = "external data [" + std::to_string(offset) + ", +" +
            std::to_string(expected) + ") lies outside '" + location + "' (" +
            std::to_string(fileSize) + " bytes)";
    return failure();
  }
  if (expected == 0)
    return ArrayRef<char>();
  auto buffer = llvm::MemoryBuffer::getOpenFileSlice(
      file->fd, location, expected, int64_t(offset), /*IsVolatile=*/false);
  if (!buffer) {
    error = "cannot map external data file '" + location + "'";
    return failure();
  }
  ArrayRef<char> bytes((*buffer)->getBufferStart(), expected);
  // The location as a clean relative path, for artifacts that keep weights in this file.
  std::string clean;
  for (auto it = llvm::sys::path::begin(location), end = llvm::sys::path::end(location); it != end; ++it)
    if (*it != "." && !it->empty())
      clean += (clean.empty() ? "" : "/") + it->str();
  source.externalRanges.push_back({bytes.data(), expected, clean, offset});
  source.mappedFiles.push_back(std::move(*buffer));
  return bytes;
}

/// The number of values a tensor's typed field holds (float_data, int32_data...).
int64_t typedFieldCount(const onnx::TensorProto &t) {
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT: return t.float_data_size();
  case onnx::TensorProto::DOUBLE: return t.double_data_size();
  case onnx::TensorProto::INT64: return t.int64_data_size();
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64: return t.uint64_data_size();
  default: return t.int32_data_size();
  }
}

/// Copies typed-field values into a little-endian byte buffer of the tensor's
/// stored element type.
FailureOr<std::vector<char>> typedFieldBytes(const onnx::TensorProto &t,
                                             int64_t count, std::string &error) {
  int64_t size = storedElementSize(t.data_type());
  // Checked before allocating: the dims alone must never size an allocation.
  if (typedFieldCount(t) != count) {
    error = "tensor '" + t.name() + "' has " + std::to_string(typedFieldCount(t)) +
            " values, its shape needs " + std::to_string(count);
    return failure();
  }
  std::vector<char> bytes(count * size);
  auto fill = [&](auto field, auto convert) {
    for (int64_t i = 0; i < count; ++i)
      convert(field.Get(i), bytes.data() + i * size);
  };
  auto store = [size](auto v, char *dst) {
    std::memcpy(dst, &v, size);
  };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    fill(t.float_data(), [&](float v, char *d) { store(v, d); });
    break;
  case onnx::TensorProto::DOUBLE:
    fill(t.double_data(), [&](double v, char *d) { store(v, d); });
    break;
  case onnx::TensorProto::INT64:
    fill(t.int64_data(), [&](int64_t v, char *d) { store(v, d); });
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    fill(t.uint64_data(), [&](uint64_t v, char *d) { store(v, d); });
    break;
  default:
    // int32_data carries every narrower type, fp16/bf16 as bit patterns.
    fill(t.int32_data(), [&](int32_t v, char *d) { store(v, d); });
    break;
  }
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
