// The kiln_tensor object behind the C API: shape, dtype, and bytes it owns or borrows.
#ifndef KILN_RUNTIME_TENSOR_H
#define KILN_RUNTIME_TENSOR_H

#include "kiln/kiln.h"

#include <memory>
#include <string>
#include <vector>

struct kiln_tensor {
  kiln_dtype dtype = KILN_DTYPE_FLOAT32;
  std::vector<int64_t> shape;
  void *data = nullptr;
  size_t bytes = 0;
  // Null for wrapped caller memory. Shared because generated code may return one allocation
  // for several outputs; the bytes are freed when the last tensor using them goes.
  std::shared_ptr<void> owner;
  // `data` is memory of the model's CUDA device (kiln_tensor_wrap_device, the generator's KV
  // caches), passed to a --target=cuda model as it is instead of being copied up.
  bool device = false;
  // The model whose device `data` is on, for tensors kiln_tensor_create_device made (it holds a
  // reference, given back with the memory by `owner`); null otherwise.
  kiln_model *deviceModel = nullptr;
};

namespace kiln::runtime {

// Element count of `shape` times the size of `dtype`; false with a message on a negative dim,
// an unsupported dtype or overflow.
bool tensorByteSize(kiln_dtype dtype, const int64_t *shape, size_t rank, size_t *bytes, std::string *error);

} // namespace kiln::runtime

#endif
