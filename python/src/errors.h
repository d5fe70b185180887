// Errors of the C API on their way to Python (runtime_module.cpp translates them to kiln.errors).
#ifndef KILN_PYTHON_ERRORS_H
#define KILN_PYTHON_ERRORS_H

#include "kiln/kiln.h"

#include <string>

namespace kiln_python {

// A C API error on its way to Python; translated to the kiln.errors class of its code.
struct KilnError {
  int code;
  std::string message;
};

inline void check(kiln_error *error) {
  if (!error)
    return;
  KilnError e{int(kiln_error_get_code(error)), kiln_error_message(error)};
  kiln_error_free(error);
  throw e;
}

[[noreturn]] inline void invalid(const std::string &message) { throw KilnError{KILN_ERROR_INVALID_ARGUMENT, message}; }

} // namespace kiln_python

#endif
