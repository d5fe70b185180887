// Reading and writing tensors in .npy and ONNX TensorProto (.pb) files, for kiln-run and the tests.
#ifndef KILN_TOOLS_TENSOR_FILE_H
#define KILN_TOOLS_TENSOR_FILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::tools {

// A tensor read from a file: ONNX dtype code, shape, little-endian row-major bytes.
struct HostTensor {
  uint32_t dtype = 0;
  std::vector<int64_t> shape;
  std::string bytes; // empty for strings (dtype 8)
  std::string name;  // TensorProto name; empty for .npy
  std::vector<std::string> strings; // the elements of a string tensor (dtype 8)
};

// Parses the contents of a .npy file (format versions 1-3, little-endian, C order).
bool parseNpy(const std::string &contents, HostTensor *out, std::string *error);
// Encodes a tensor as a version 1.0 .npy file.
bool encodeNpy(const HostTensor &t, std::string *out, std::string *error);
// Parses a serialized onnx.TensorProto (raw_data or the typed *_data fields).
bool parseTensorProto(const std::string &contents, HostTensor *out, std::string *error);

// Reads `path`, choosing the format by extension (.npy or .pb); errors name the file.
bool readTensorFile(const std::string &path, HostTensor *out, std::string *error);
bool writeNpyFile(const std::string &path, const HostTensor &t, std::string *error);

bool readWholeFile(const std::string &path, std::string *out, std::string *error);

// Bytes per element of a tensor's `bytes` (format/dtype.h's table), 0 for strings, whose elements
// are held in `strings`, and for dtypes kiln does not know.
uint32_t elementSize(uint32_t dtype);

} // namespace kiln::tools

#endif
