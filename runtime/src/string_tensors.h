// String tensors: the per-run byte storage and the string kernels generated code calls through the context.
#ifndef KILN_RUNTIME_STRINGS_H
#define KILN_RUNTIME_STRINGS_H

#include "kiln/abi.h"
#include "kiln/kiln.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime {

// Bytes of the strings one run makes (casts, case changes). Freed when the run is over: by then
// every string output has been copied into storage its tensor owns.
class StringArena {
public:
  // `bytes` bytes valid until the arena goes, or null when out of memory.
  char *allocate(int64_t bytes);

private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  char *next_ = nullptr;
  int64_t left_ = 0;
};

// What the string kernels of one run share: the arena and the first failure, which the session
// reports once the entry point has returned (the kernels themselves never fail the generated code).
struct StringRun {
  StringArena arena;
  bool outOfMemory = false;
  std::string error;
};

// The kernels behind the context's string functions (session.cpp's trampolines find the run).
// New bytes come from the run's arena; a failure is recorded in `run` and the kernel returns an
// empty string or 0, so the generated code runs to its end and the session reports it.
kiln_abi_string stringFromFloat(StringRun &run, double value, int32_t bits);
double stringToFloat(StringRun &run, const char *data, int64_t size, int32_t bits);
kiln_abi_string stringChangeCase(StringRun &run, const char *data, int64_t size, int32_t upper);
int32_t stringEqual(const char *a, int64_t aSize, const char *b, int64_t bSize, int32_t ignoreCase);

// ONNX's text of a float (numpy's str()): shortest round-trip digits, positional for
// 1e-4 <= |x| < 1e16, else d.ddde+XX; nan, inf, -inf.
std::string formatFloat(double value, bool single);
// Parses the whole of [data, data + size) (surrounding whitespace allowed) as a number the way
// numpy's float() does: decimal or exponent forms, nan, inf/infinity with any case and sign.
bool parseFloat(const char *data, int64_t size, bool single, double *out);

// Deep copy of `count` strings into one allocation the tensor owns.
kiln_error *makeStringTensor(const int64_t *shape, size_t rank, const kiln_string *elements, size_t count,
                             kiln_tensor **out);

} // namespace kiln::runtime

#endif
