// Value formatting and tolerance comparison for kiln-run.
#include "tensor_compare.h"

#include "format/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace kiln::tools {
namespace {

float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(mant), -24); // zero or subnormal
    return sign ? -f : f;
  }
  if (exp == 31) {
    f = mant ? NAN : INFINITY;
    return sign ? -f : f;
  }
  uint32_t bits = sign | ((exp + 112) << 23) | (mant << 13);
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

bool isFloat(uint32_t dtype) {
  const artifact::DtypeInfo *d = artifact::findDtype(dtype);
  return d && d->floating;
}

template <typename T> T load(const HostTensor &t, size_t i) {
  T v;
  std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

double asDouble(const HostTensor &t, size_t i) {
  switch (t.dtype) {
  case 1: return load<float>(t, i);
  case 11: return load<double>(t, i);
  case 10: return halfToFloat(load<uint16_t>(t, i));
  case 16: return bf16ToFloat(load<uint16_t>(t, i));
  case 2: return load<uint8_t>(t, i);
  case 3: return load<int8_t>(t, i);
  case 4: return load<uint16_t>(t, i);
  case 5: return load<int16_t>(t, i);
  case 6: return load<int32_t>(t, i);
  case 7: return double(load<int64_t>(t, i));
  case 9: return load<uint8_t>(t, i) ? 1 : 0;
  case 12: return load<uint32_t>(t, i);
  case 13: return double(load<uint64_t>(t, i));
  default: return 0;
  }
}


// A string element in double quotes, with quotes, backslashes and control bytes escaped.
std::string quoted(const std::string &v) {
  std::string s = "\"";
  for (unsigned char c : v) {
    if (c == '"' || c == '\\') {
      s += '\\';
      s += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      s += buf;
    } else {
      s += char(c);
    }
  }
  return s + "\"";
}

std::string formatValue(const HostTensor &t, size_t i) {
  if (t.dtype == 8)
    return i < t.strings.size() ? quoted(t.strings[i]) : "?";
  char buf[64];
  if (t.dtype == 7)
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(load<int64_t>(t, i)));
  else if (t.dtype == 13)
    std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(load<uint64_t>(t, i)));
  else if (t.dtype == 9)
    return load<uint8_t>(t, i) ? "true" : "false";
  else if (isFloat(t.dtype))
    std::snprintf(buf, sizeof(buf), "%.7g", asDouble(t, i));
  else
    std::snprintf(buf, sizeof(buf), "%.0f", asDouble(t, i));
  return buf;
}

std::string indexString(const std::vector<int64_t> &shape, size_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? int64_t(flat % uint64_t(shape[d])) : 0;
    flat = shape[d] ? flat / uint64_t(shape[d]) : 0;
  }
  return shapeString(idx);
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

} // namespace

double valueAsDouble(const HostTensor &t, size_t i) { return asDouble(t, i); }
uint32_t dtypeElementSize(uint32_t dtype) { return elementSize(dtype); }

std::string dtypeName(uint32_t dtype) {
  return artifact::findDtype(dtype) ? artifact::dtypeName(dtype) : "dtype(" + std::to_string(dtype) + ")";
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string formatValues(const HostTensor &t, size_t limit) {
  const uint32_t size = elementSize(t.dtype);
  const size_t n = t.dtype == 8 ? t.strings.size() : size ? t.bytes.size() / size : 0;
  std::string s = "[";
  for (size_t i = 0; i < n && i < limit; ++i)
    s += (i ? ", " : "") + formatValue(t, i);
  if (n > limit)
    s += ", ...";
  return s + "]";
}

CompareResult compareTensors(const HostTensor &a, const HostTensor &e, double rtol, double atol) {
  if (a.dtype != e.dtype)
    return {false, "dtype mismatch: got " + dtypeName(a.dtype) + ", expected " + dtypeName(e.dtype)};
  if (a.shape != e.shape)
    return {false, "shape mismatch: got " + shapeString(a.shape) + ", expected " + shapeString(e.shape)};
  if (a.dtype == 8) { // strings compare exactly, byte for byte
    size_t bad = 0, firstBad = 0;
    for (size_t i = 0; i < a.strings.size() && i < e.strings.size(); ++i)
      if (a.strings[i] != e.strings[i] && bad++ == 0)
        firstBad = i;
    if (a.strings.size() != e.strings.size())
      return {false, "string count mismatch: got " + std::to_string(a.strings.size()) + ", expected " +
                         std::to_string(e.strings.size())};
    if (bad == 0)
      return {true, "exact"};
    return {false, std::to_string(bad) + " of " + std::to_string(a.strings.size()) + " strings differ; first at " +
                       indexString(a.shape, firstBad) + ": got " + formatValue(a, firstBad) + ", expected " +
                       formatValue(e, firstBad) + " (exact)"};
  }
  const uint32_t size = elementSize(a.dtype);
  if (!size || a.bytes.size() != e.bytes.size())
    return {false, "cannot compare dtype " + dtypeName(a.dtype)};
  const size_t n = a.bytes.size() / size;
  const bool floating = isFloat(a.dtype);
  double maxAbs = 0, maxRel = 0;
  size_t bad = 0, firstBad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = asDouble(a, i), y = asDouble(e, i);
    bool match;
    if (!floating) {
      match = std::memcmp(a.bytes.data() + i * size, e.bytes.data() + i * size, size) == 0;
    } else if (std::isnan(y) || std::isnan(x)) {
      match = std::isnan(x) && std::isnan(y);
    } else if (std::isinf(y) || std::isinf(x)) {
      match = x == y;
    } else {
      match = std::fabs(x - y) <= atol + rtol * std::fabs(y);
    }
    if (std::isfinite(x) && std::isfinite(y)) {
      const double abs = std::fabs(x - y);
      maxAbs = std::max(maxAbs, abs);
      if (y != 0)
        maxRel = std::max(maxRel, abs / std::fabs(y));
    }
    if (!match && bad++ == 0)
      firstBad = i;
  }
  const std::string errs = "max abs err " + sci(maxAbs) + ", max rel err " + sci(maxRel);
  if (bad == 0)
    return {true, errs};
  return {false, std::to_string(bad) + " of " + std::to_string(n) + " elements differ; first at " +
                     indexString(a.shape, firstBad) + ": got " + formatValue(a, firstBad) + ", expected " +
                     formatValue(e, firstBad) + " (" + errs +
                     (floating ? "; rtol " + sci(rtol) + ", atol " + sci(atol) : std::string("; exact")) + ")"};
}

} // namespace kiln::tools
