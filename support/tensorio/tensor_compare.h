// Printing tensor values and comparing an output against an expected tensor with tolerances.
#ifndef KILN_TOOLS_TENSOR_COMPARE_H
#define KILN_TOOLS_TENSOR_COMPARE_H

#include "tensor_file.h"

#include <string>

namespace kiln::tools {

std::string dtypeName(uint32_t dtype);
std::string shapeString(const std::vector<int64_t> &shape); // "[2,4]"
// The first `limit` values, e.g. "[1, 2.5, 3, ...]".
std::string formatValues(const HostTensor &t, size_t limit);

// Element i as a double (any dtype these tools read; 0 for others), and the bytes per element
// (0 for dtypes they do not read): for callers that compute their own error figures.
double valueAsDouble(const HostTensor &t, size_t i);
uint32_t dtypeElementSize(uint32_t dtype);

struct CompareResult {
  bool ok = false;
  std::string detail; // "max abs err .., max rel err .." or why it failed
};

// Floats match when |a - e| <= atol + rtol * |e| (NaN matches NaN, infinities must be equal);
// integers and bools must be exactly equal. Dtype and shape must match.
CompareResult compareTensors(const HostTensor &actual, const HostTensor &expected, double rtol, double atol);

} // namespace kiln::tools

#endif
