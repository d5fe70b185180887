// The one table of element types (ONNX TensorProto.DataType codes) that the format, runtime and tools share.
#ifndef KILN_FORMAT_DTYPE_H
#define KILN_FORMAT_DTYPE_H

#include <cstdint>

namespace kiln::artifact {

// One element type kiln can hold. Codes are ONNX's (1 = float, 7 = int64, 8 = string, 9 = bool,
// 10 = float16, 16 = bfloat16, ...), which kiln_dtype (kiln.h) and the artifact use as they are.
struct DtypeInfo {
  uint32_t code;
  const char *name;    // "float32", "int64", ...: what kiln's messages and kiln-inspect say
  uint32_t size;       // bytes per element in a tensor; a string is a kiln_abi_string {data, size}
  const char *npy;     // numpy's type code without the byte order ("f4"), "" when .npy cannot hold it
  bool floating;       // compared with tolerances, printed with %g
};

// The entry for `code`, or null when kiln does not know it (sub-byte and newer ONNX types).
const DtypeInfo *findDtype(uint32_t code);
// The entry whose numpy code is `npy` ("f4", "i8", "b1", ...), or null.
const DtypeInfo *findNpyDtype(const char *npy);

uint32_t dtypeSize(uint32_t dtype);    // bytes per element, 0 if unknown
const char *dtypeName(uint32_t dtype); // "float32", "int64", ... or "unknown"

} // namespace kiln::artifact

#endif
