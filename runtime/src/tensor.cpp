// Tensor creation, wrapping and accessors of the C API.
#include "tensor.h"

#include "error.h"
#include "model.h"
#include "string_tensors.h"

#include <cstdlib>
#include <cstring>

namespace kiln::runtime {

bool tensorByteSize(kiln_dtype dtype, const int64_t *shape, size_t rank, size_t *bytes, std::string *error) {
  size_t n = kiln_dtype_size(dtype);
  if (n == 0) {
    *error = "unsupported dtype " + std::to_string(int(dtype));
    return false;
  }
  if (rank > 0 && !shape) {
    *error = "shape is NULL for rank " + std::to_string(rank);
    return false;
  }
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) {
      *error = "dim " + std::to_string(i) + " is negative (" + std::to_string(shape[i]) + ")";
      return false;
    }
    if (shape[i] != 0 && n > SIZE_MAX / uint64_t(shape[i])) {
      *error = "shape is too large (byte size overflows)";
      return false;
    }
    n *= size_t(shape[i]);
  }
  *bytes = n;
  return true;
}

} // namespace kiln::runtime

using kiln::runtime::makeError;

namespace {

kiln_error *makeTensor(kiln_dtype dtype, const int64_t *shape, size_t rank, size_t dataBytes,
                       kiln_tensor **out, const char *what) {
  if (!out)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, std::string(what) + ": out_tensor is NULL");
  *out = nullptr;
  size_t bytes = 0;
  std::string error;
  if (!kiln::runtime::tensorByteSize(dtype, shape, rank, &bytes, &error))
    return makeError(KILN_ERROR_INVALID_ARGUMENT, std::string(what) + ": " + error);
  if (dataBytes != bytes)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, std::string(what) + ": data_bytes is " +
                                                      std::to_string(dataBytes) + ", shape and dtype need " +
                                                      std::to_string(bytes));
  try {
    auto *t = new kiln_tensor;
    t->dtype = dtype;
    t->shape.assign(shape, shape + rank);
    t->bytes = bytes;
    *out = t;
    return nullptr;
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory");
  }
}

} // namespace

extern "C" {

kiln_error *kiln_tensor_create_copy(kiln_dtype dtype, const int64_t *shape, size_t rank, const void *data,
                                    size_t data_bytes, kiln_tensor **out_tensor) {
  if (kiln_error *e = makeTensor(dtype, shape, rank, data_bytes, out_tensor, "kiln_tensor_create_copy"))
    return e;
  kiln_tensor *t = *out_tensor;
  if (dtype == KILN_DTYPE_STRING && data) {
    // The elements point at bytes the caller owns: copy those too.
    delete t;
    *out_tensor = nullptr;
    return kiln::runtime::makeStringTensor(shape, rank, static_cast<const kiln_string *>(data),
                                           data_bytes / sizeof(kiln_string), out_tensor);
  }
  // 64-byte alignment matches what generated vector code may assume for its operands.
  void *p = std::aligned_alloc(64, (data_bytes + 63) / 64 * 64 + 64);
  if (!p) {
    delete t;
    *out_tensor = nullptr;
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "kiln_tensor_create_copy: cannot allocate " +
                                                   std::to_string(data_bytes) + " bytes");
  }
  if (data)
    std::memcpy(p, data, data_bytes);
  else
    std::memset(p, 0, data_bytes);
  t->data = p;
  t->owner = std::shared_ptr<void>(p, std::free);
  return nullptr;
}

kiln_error *kiln_tensor_wrap(kiln_dtype dtype, const int64_t *shape, size_t rank, void *data, size_t data_bytes,
                             kiln_tensor **out_tensor) {
  if (data_bytes > 0 && !data) {
    if (out_tensor)
      *out_tensor = nullptr;
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_tensor_wrap: data is NULL");
  }
  if (kiln_error *e = makeTensor(dtype, shape, rank, data_bytes, out_tensor, "kiln_tensor_wrap"))
    return e;
  (*out_tensor)->data = data;
  return nullptr;
}

kiln_error *kiln_tensor_wrap_device(kiln_dtype dtype, const int64_t *shape, size_t rank, void *device_data,
                                    size_t data_bytes, kiln_tensor **out_tensor) {
  if (dtype == KILN_DTYPE_STRING) {
    if (out_tensor)
      *out_tensor = nullptr;
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_tensor_wrap_device: strings are host memory");
  }
  if (data_bytes > 0 && !device_data) {
    if (out_tensor)
      *out_tensor = nullptr;
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_tensor_wrap_device: data is NULL");
  }
  if (kiln_error *e = makeTensor(dtype, shape, rank, data_bytes, out_tensor, "kiln_tensor_wrap_device"))
    return e;
  (*out_tensor)->data = device_data;
  (*out_tensor)->device = true;
  return nullptr;
}

kiln_error *kiln_tensor_create_device(kiln_model *model, kiln_dtype dtype, const int64_t *shape, size_t rank,
                                      const void *data, size_t data_bytes, kiln_tensor **out_tensor) {
  const char *what = "kiln_tensor_create_device";
  auto refuse = [&](kiln_error_code code, const std::string &message) {
    if (out_tensor)
      *out_tensor = nullptr;
    return makeError(code, std::string(what) + ": " + message);
  };
  if (!model)
    return refuse(KILN_ERROR_INVALID_ARGUMENT, "model is NULL");
  if (model->device->hostMemory())
    return refuse(KILN_ERROR_INVALID_ARGUMENT, "the model runs on the CPU; device tensors are for --target=cuda models");
  if (dtype == KILN_DTYPE_STRING)
    return refuse(KILN_ERROR_INVALID_ARGUMENT, "strings are host memory");
  if (kiln_error *e = makeTensor(dtype, shape, rank, data_bytes, out_tensor, what))
    return e;
  std::unique_ptr<kiln_tensor> t(*out_tensor);
  *out_tensor = nullptr;
  kiln::runtime::Device &device = *model->device;
  void *p = nullptr;
  if (data_bytes > 0) {
    p = device.allocate(data_bytes, 256);
    if (!p) {
      const std::string failure = device.allocationFailure();
      return failure.empty() ? refuse(KILN_ERROR_OUT_OF_MEMORY,
                                      "out of GPU memory (" + std::to_string(data_bytes) + " bytes)")
                             : refuse(KILN_ERROR_INTERNAL, failure);
    }
    std::string error;
    if (!(data ? device.upload(p, data, data_bytes, error) : device.zero(p, data_bytes, error))) {
      device.deallocate(p);
      return refuse(KILN_ERROR_INTERNAL, error);
    }
  }
  try {
    kiln::runtime::retainModel(model);
    t->owner = std::shared_ptr<void>(p, [model](void *q) {
      model->device->deallocate(q);
      kiln::runtime::releaseModel(model);
    });
  } catch (...) {
    device.deallocate(p);
    return refuse(KILN_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  t->data = p;
  t->device = true;
  t->deviceModel = model;
  *out_tensor = t.release();
  return nullptr;
}

kiln_error *kiln_tensor_copy_to_host(const kiln_tensor *tensor, kiln_tensor **out_tensor) {
  if (!tensor) {
    if (out_tensor)
      *out_tensor = nullptr;
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_tensor_copy_to_host: tensor is NULL");
  }
  if (!tensor->device)
    return kiln_tensor_create_copy(tensor->dtype, tensor->shape.data(), tensor->shape.size(), tensor->data,
                                   tensor->bytes, out_tensor);
  if (!tensor->deviceModel) {
    if (out_tensor)
      *out_tensor = nullptr;
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_tensor_copy_to_host: the tensor wraps GPU memory of the "
                                                  "caller (kiln_tensor_wrap_device), whose device kiln does not "
                                                  "know; copy it with CUDA");
  }
  if (kiln_error *e = kiln_tensor_create_copy(tensor->dtype, tensor->shape.data(), tensor->shape.size(), nullptr,
                                              tensor->bytes, out_tensor))
    return e;
  std::string error;
  if (!tensor->deviceModel->device->download((*out_tensor)->data, tensor->data, tensor->bytes, error)) {
    kiln_tensor_destroy(*out_tensor);
    *out_tensor = nullptr;
    return makeError(KILN_ERROR_INTERNAL, "kiln_tensor_copy_to_host: " + error);
  }
  return nullptr;
}

void kiln_tensor_destroy(kiln_tensor *tensor) { delete tensor; }

// Accessors tolerate NULL (returning empty values) so a caller's bug does not become a crash here.
kiln_dtype kiln_tensor_dtype(const kiln_tensor *t) { return t ? t->dtype : kiln_dtype(0); }
size_t kiln_tensor_rank(const kiln_tensor *t) { return t ? t->shape.size() : 0; }
const int64_t *kiln_tensor_shape(const kiln_tensor *t) { return t ? t->shape.data() : nullptr; }
size_t kiln_tensor_byte_size(const kiln_tensor *t) { return t ? t->bytes : 0; }
void *kiln_tensor_data(kiln_tensor *t) { return t ? t->data : nullptr; }
const void *kiln_tensor_data_const(const kiln_tensor *t) { return t ? t->data : nullptr; }

int64_t kiln_tensor_element_count(const kiln_tensor *t) {
  if (!t)
    return 0;
  int64_t n = 1;
  for (int64_t d : t->shape)
    n *= d;
  return n;
}

} // extern "C"
