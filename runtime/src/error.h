// The kiln_error object behind the C API, and helpers to create one from C++.
#ifndef KILN_RUNTIME_ERROR_H
#define KILN_RUNTIME_ERROR_H

#include "kiln/kiln.h"

#include <string>

struct kiln_error {
  kiln_error_code code;
  std::string message;
};

namespace kiln::runtime {

// Never throws: if even the error cannot be allocated, returns a static out-of-memory error
// (kiln_error_free recognizes it and does not delete it).
kiln_error *makeError(kiln_error_code code, std::string message);

} // namespace kiln::runtime

#endif
