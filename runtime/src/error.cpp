// Error objects, version and dtype helpers of the C API.
#include "error.h"

#include "format/artifact_format.h"

#include <new>

#ifndef KILN_VERSION_STRING
#define KILN_VERSION_STRING "unknown"
#endif

namespace {
kiln_error gOutOfMemory{KILN_ERROR_OUT_OF_MEMORY, "out of memory"};
}

namespace kiln::runtime {
kiln_error *makeError(kiln_error_code code, std::string message) {
  try {
    return new kiln_error{code, std::move(message)};
  } catch (...) {
    return &gOutOfMemory;
  }
}
} // namespace kiln::runtime

extern "C" {

const char *kiln_runtime_version(void) { return KILN_VERSION_STRING; }

const char *kiln_error_message(const kiln_error *error) { return error ? error->message.c_str() : ""; }

kiln_error_code kiln_error_get_code(const kiln_error *error) {
  return error ? error->code : KILN_ERROR_INTERNAL;
}

void kiln_error_free(kiln_error *error) {
  if (error != &gOutOfMemory)
    delete error;
}

const char *kiln_dtype_name(kiln_dtype dtype) { return kiln::artifact::dtypeName(uint32_t(dtype)); }

size_t kiln_dtype_size(kiln_dtype dtype) { return kiln::artifact::dtypeSize(uint32_t(dtype)); }

} // extern "C"
