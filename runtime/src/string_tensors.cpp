// String tensors: per-run byte storage, the string kernels (number <-> text, case change, comparison), deep copies.
#include "string_tensors.h"

#include "error.h"
#include "tensor.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

namespace kiln::runtime {

char *StringArena::allocate(int64_t bytes) {
  if (bytes < 0)
    return nullptr;
  if (bytes > left_) {
    // Small strings share 64 KiB blocks; a large one gets a block of its own.
    const int64_t block = std::max<int64_t>(bytes, int64_t(64) << 10);
    char *p = new (std::nothrow) char[size_t(block)];
    if (!p)
      return nullptr;
    try {
      blocks_.emplace_back(p);
    } catch (...) {
      delete[] p;
      return nullptr;
    }
    next_ = p;
    left_ = block;
  }
  char *p = next_;
  next_ += bytes;
  left_ -= bytes;
  return p;
}

namespace {

kiln_abi_string copyToArena(StringRun &run, const char *data, int64_t size) {
  char *p = run.arena.allocate(size);
  if (!p) {
    run.outOfMemory = true;
    return kiln_abi_string{nullptr, 0};
  }
  if (size > 0)
    std::memcpy(p, data, size_t(size));
  return kiln_abi_string{p, size};
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Simple (one-to-one, same UTF-8 length) case pairs beyond ASCII: Latin-1, basic Greek and
// Cyrillic. Other code points keep their case (see docs/runtime.md).
uint32_t mapCase(uint32_t c, bool upper) {
  if (c < 0x80)
    return upper ? (c >= 'a' && c <= 'z' ? c - 32 : c) : (c >= 'A' && c <= 'Z' ? c + 32 : c);
  if (upper) {
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) ||
        (c >= 0x430 && c <= 0x44F))
      return c - 32;
    if (c >= 0x450 && c <= 0x45F)
      return c - 80;
  } else {
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) ||
        (c >= 0x410 && c <= 0x42F))
      return c + 32;
    if (c >= 0x400 && c <= 0x40F)
      return c + 80;
  }
  return c;
}

// Rewrites s[0, size) in place; only two-byte sequences change, and they stay two bytes.
void changeCase(char *s, int64_t size, bool upper) {
  for (int64_t i = 0; i < size;) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      s[i] = char(mapCase(b, upper));
      ++i;
    } else if ((b & 0xE0) == 0xC0 && i + 1 < size && (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) {
      uint32_t c = (uint32_t(b & 0x1F) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F);
      uint32_t m = mapCase(c, upper);
      s[i] = char(0xC0 | (m >> 6));
      s[i + 1] = char(0x80 | (m & 0x3F));
      i += 2;
    } else {
      ++i; // longer sequences and stray bytes pass through
    }
  }
}

} // namespace

std::string formatFloat(double value, bool single) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  if (value == 0)
    return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits of the value's own precision, as d.ddde[+-]XX.
  char buf[64];
  std::to_chars_result r = single ? std::to_chars(buf, buf + sizeof buf, float(value), std::chars_format::scientific)
                                  : std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exponent = std::atoi(sci.c_str() + e + 1);
  const double magnitude = std::fabs(value);
  std::string out = sign;
  if (magnitude >= 1e-4 && magnitude < 1e16) {
    if (exponent >= 0) {
      const size_t whole = size_t(exponent) + 1;
      if (digits.size() <= whole) {
        out += digits + std::string(whole - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, whole) + "." + digits.substr(whole);
      }
    } else {
      out += "0." + std::string(size_t(-exponent - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1)
    out += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp;
}

bool parseFloat(const char *data, int64_t size, bool single, double *out) {
  const char *begin = data, *end = data + size;
  while (begin < end && isSpace(*begin))
    ++begin;
  while (end > begin && isSpace(end[-1]))
    --end;
  bool negative = false;
  if (begin < end && (*begin == '+' || *begin == '-')) {
    negative = *begin == '-';
    ++begin;
  }
  if (begin == end || *begin == '+' || *begin == '-')
    return false;
  // from_chars reads nan/inf/infinity in any case and is locale-independent, unlike strtod. Out
  // of range it leaves the value alone: a float beyond float's range goes through double, and
  // beyond double's it is infinity or zero by the sign of its exponent, as numpy rounds.
  double d = 0;
  std::from_chars_result r = std::from_chars(begin, end, d);
  if (r.ptr != end || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
    return false;
  if (r.ec == std::errc::result_out_of_range) {
    const char *e = std::find_if(begin, end, [](char c) { return c == 'e' || c == 'E'; });
    d = e + 1 < end && e[1] == '-' ? 0.0 : INFINITY;
  } else if (single) {
    float f = 0;
    std::from_chars_result rf = std::from_chars(begin, end, f);
    d = rf.ec == std::errc() ? double(f) : double(float(d)); // float(d) only when beyond float's range
  }
  *out = negative ? -d : d;
  return true;
}

kiln_abi_string stringFromFloat(StringRun &run, double value, int32_t bits) {
  std::string text;
  try {
    text = formatFloat(value, bits == 32);
  } catch (...) {
    run.outOfMemory = true;
    return kiln_abi_string{nullptr, 0};
  }
  return copyToArena(run, text.data(), int64_t(text.size()));
}

double stringToFloat(StringRun &run, const char *data, int64_t size, int32_t bits) {
  double v = 0;
  if (parseFloat(data, size, bits == 32, &v))
    return v;
  if (run.error.empty()) {
    try {
      std::string shown(data ? data : "", data ? size_t(std::min<int64_t>(size, 64)) : 0);
      run.error = "cannot cast the string '" + shown + (size > 64 ? "...'" : "'") + " to a number";
    } catch (...) {
      run.outOfMemory = true;
    }
  }
  return std::nan("");
}

kiln_abi_string stringChangeCase(StringRun &run, const char *data, int64_t size, int32_t upper) {
  kiln_abi_string s = copyToArena(run, data, size);
  if (s.data)
    changeCase(const_cast<char *>(s.data), s.size, upper != 0);
  return s;
}

int32_t stringEqual(const char *a, int64_t aSize, const char *b, int64_t bSize, int32_t ignoreCase) {
  if (aSize != bSize)
    return 0; // case pairs keep their UTF-8 length, so unequal sizes never match
  if (aSize == 0)
    return 1;
  if (!ignoreCase)
    return std::memcmp(a, b, size_t(aSize)) == 0;
  // Compare the lower-case forms, 4 KiB at a time on the stack.
  char x[4096], y[4096];
  for (int64_t at = 0; at < aSize;) {
    // A chunk boundary may split a two-byte sequence: end the chunk before it.
    int64_t n = std::min<int64_t>(aSize - at, int64_t(sizeof x));
    if (at + n < aSize && (static_cast<unsigned char>(a[at + n]) & 0xC0) == 0x80)
      --n;
    std::memcpy(x, a + at, size_t(n));
    std::memcpy(y, b + at, size_t(n));
    changeCase(x, n, false);
    changeCase(y, n, false);
    if (std::memcmp(x, y, size_t(n)) != 0)
      return 0;
    at += n;
  }
  return 1;
}

kiln_error *makeStringTensor(const int64_t *shape, size_t rank, const kiln_string *elements, size_t count,
                             kiln_tensor **out) {
  *out = nullptr;
  size_t bytes = 0;
  std::string error;
  if (!tensorByteSize(KILN_DTYPE_STRING, shape, rank, &bytes, &error))
    return makeError(KILN_ERROR_INVALID_ARGUMENT, error);
  if (bytes / sizeof(kiln_string) != count)
    return makeError(KILN_ERROR_INTERNAL, "string tensor: element count does not match its shape");
  size_t text = 0;
  for (size_t i = 0; i < count; ++i) {
    if (elements[i].size < 0 || (elements[i].size > 0 && !elements[i].data))
      return makeError(KILN_ERROR_INVALID_ARGUMENT, "string element " + std::to_string(i) + " has size " +
                                                        std::to_string(elements[i].size) +
                                                        (elements[i].data ? "" : " and no data"));
    if (size_t(elements[i].size) > SIZE_MAX / 2 - text)
      return makeError(KILN_ERROR_INVALID_ARGUMENT, "string tensor is too large");
    text += size_t(elements[i].size);
  }
  // One allocation: the elements (64-byte aligned, as every tensor's data), then their bytes.
  const size_t total = (bytes + text + 63) / 64 * 64 + 64;
  char *p = static_cast<char *>(std::aligned_alloc(64, total));
  if (!p)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory: a string tensor of " + std::to_string(total) +
                                                   " bytes");
  auto *elems = reinterpret_cast<kiln_string *>(p);
  char *at = p + bytes;
  for (size_t i = 0; i < count; ++i) {
    const int64_t n = elements[i].size;
    if (n > 0)
      std::memcpy(at, elements[i].data, size_t(n));
    elems[i] = kiln_string{at, n};
    at += n;
  }
  try {
    auto *t = new kiln_tensor;
    t->dtype = KILN_DTYPE_STRING;
    t->shape.assign(shape, shape + rank);
    t->bytes = bytes;
    t->data = p;
    t->owner = std::shared_ptr<void>(p, std::free);
    *out = t;
  } catch (...) {
    std::free(p);
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  return nullptr;
}

} // namespace kiln::runtime

extern "C" {

kiln_error *kiln_tensor_create_strings(const int64_t *shape, size_t rank, const char *const *strings,
                                       const size_t *sizes, kiln_tensor **out_tensor) {
  using kiln::runtime::makeError;
  if (!out_tensor)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_tensor_create_strings: out_tensor is NULL");
  *out_tensor = nullptr;
  size_t bytes = 0;
  std::string error;
  if (!kiln::runtime::tensorByteSize(KILN_DTYPE_STRING, shape, rank, &bytes, &error))
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_tensor_create_strings: " + error);
  const size_t count = bytes / sizeof(kiln_string);
  if (count > 0 && !strings)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_tensor_create_strings: strings is NULL");
  try {
    std::vector<kiln_string> elements(count);
    for (size_t i = 0; i < count; ++i) {
      if (!strings[i] && (!sizes || sizes[i] > 0))
        return makeError(KILN_ERROR_INVALID_ARGUMENT,
                         "kiln_tensor_create_strings: string " + std::to_string(i) + " is NULL");
      elements[i] = kiln_string{strings[i], int64_t(sizes ? sizes[i] : std::strlen(strings[i]))};
    }
    return kiln::runtime::makeStringTensor(shape, rank, elements.data(), count, out_tensor);
  } catch (...) {
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "kiln_tensor_create_strings: out of memory");
  }
}

const char *kiln_tensor_string(const kiln_tensor *tensor, int64_t index, size_t *out_size) {
  if (out_size)
    *out_size = 0;
  if (!tensor || tensor->dtype != KILN_DTYPE_STRING || index < 0 || index >= kiln_tensor_element_count(tensor))
    return nullptr;
  const kiln_string &s = static_cast<const kiln_string *>(tensor->data)[index];
  if (out_size)
    *out_size = size_t(s.size);
  return s.data ? s.data : "";
}

} // extern "C"
