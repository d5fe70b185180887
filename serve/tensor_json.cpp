// JSON tensors of the Open Inference Protocol <-> kiln tensors, for every dtype of the C API.
#include "tensor_json.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "errors.h"

namespace kiln::serve {
namespace {

using json = nlohmann::json;

struct DtypeName {
  kiln_dtype dtype;
  const char *name;
};
const DtypeName kDtypes[] = {
    {KILN_DTYPE_BOOL, "BOOL"},     {KILN_DTYPE_UINT8, "UINT8"},   {KILN_DTYPE_UINT16, "UINT16"},
    {KILN_DTYPE_UINT32, "UINT32"}, {KILN_DTYPE_UINT64, "UINT64"}, {KILN_DTYPE_INT8, "INT8"},
    {KILN_DTYPE_INT16, "INT16"},   {KILN_DTYPE_INT32, "INT32"},   {KILN_DTYPE_INT64, "INT64"},
    {KILN_DTYPE_FLOAT16, "FP16"},  {KILN_DTYPE_FLOAT32, "FP32"},  {KILN_DTYPE_FLOAT64, "FP64"},
    {KILN_DTYPE_BFLOAT16, "BF16"}, {KILN_DTYPE_STRING, "BYTES"}};

// Row-major leaves of `data` (flat or nested arrays, as the protocol allows). The depth is
// bounded: a body of nested brackets must not exhaust the thread's stack.
void flatten(const json &data, std::vector<const json *> &out, const std::string &at, int depth = 0) {
  if (data.is_array()) {
    if (depth > 32)
      throw badRequest(at, at + ": data is nested deeper than 32 levels");
    for (const json &e : data)
      flatten(e, out, at, depth + 1);
  } else {
    out.push_back(&data);
  }
}

template <typename T> void put(std::vector<unsigned char> &buf, T v) {
  size_t n = buf.size();
  buf.resize(n + sizeof(T));
  std::memcpy(buf.data() + n, &v, sizeof(T));
}

template <typename T> T integerOf(const json &v, const std::string &at, size_t i) {
  bool ok = v.is_number_integer();
  if (ok && v.is_number_unsigned())
    ok = v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max());
  else if (ok)
    ok = v.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
         (std::numeric_limits<T>::max() > uint64_t(INT64_MAX) || v.get<int64_t>() <= int64_t(std::numeric_limits<T>::max()));
  if (!ok)
    throw badRequest(at, at + ": element " + std::to_string(i) + " (" + v.dump() + ") is not a value of its datatype");
  return v.is_number_unsigned() ? T(v.get<uint64_t>()) : T(v.get<int64_t>());
}

// JSON has no NaN or infinity: they travel as the strings "NaN", "Infinity", "-Infinity" (also
// "Inf", "-Inf" on input), both ways.
double floatOf(const json &v, const std::string &at, size_t i) {
  if (v.is_string()) {
    const std::string &s = v.get_ref<const std::string &>();
    if (s == "NaN" || s == "nan")
      return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity" || s == "Inf" || s == "inf")
      return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-Inf" || s == "-inf")
      return -std::numeric_limits<double>::infinity();
  }
  if (!v.is_number())
    throw badRequest(at, at + ": element " + std::to_string(i) + " (" + v.dump() + ") is not a number");
  return v.get<double>();
}

} // namespace

const char *v2DtypeName(kiln_dtype d) {
  for (const auto &e : kDtypes)
    if (e.dtype == d)
      return e.name;
  return "UNKNOWN";
}

// IEEE half and bfloat16 from float, rounding to nearest even (as numpy's astype does).
uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
  if (exp == 0xff)
    return uint16_t(sign | 0x7c00 | (man ? 0x200 : 0));
  int e = int(exp) - 127 + 15;
  if (e >= 31)
    return uint16_t(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10)
      return uint16_t(sign);
    man |= 0x800000;
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = (uint32_t(e) << 10) | (man >> 13), rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent, which is the correct rounding
  return uint16_t(sign | half);
}
float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
  if (exp == 0) {
    if (man == 0)
      x = sign;
    else {
      int e = -1;
      do
        ++e, man <<= 1;
      while (!(man & 0x400));
      x = sign | (uint32_t(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31)
    x = sign | 0x7f800000 | (man << 13);
  else
    x = sign | ((exp + 127 - 15) << 23) | (man << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return uint16_t((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}
float bf16ToFloat(uint16_t b) {
  uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}







// Builds the kiln tensor of one request input, checked against the model's signature.
void tensorFromJson(const json &in, const kiln_tensor_info &info, OwnedTensor &out, const std::string &at) {
  if (!in.contains("datatype") || !in["datatype"].is_string())
    throw badRequest(at, at + ": datatype missing");
  std::string dt = in["datatype"].get<std::string>();
  if (dt != v2DtypeName(info.dtype))
    throw badRequest(at, at + ": datatype " + dt + ", but the model's input '" + info.name + "' is " + v2DtypeName(info.dtype));
  if (!in.contains("shape") || !in["shape"].is_array())
    throw badRequest(at, at + ": shape missing");
  std::vector<int64_t> shape;
  int64_t count = 1;
  for (const json &d : in["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t(1) << 40))
      throw badRequest(at, at + ": shape must hold non-negative integers");
    shape.push_back(d.get<int64_t>());
    if (count > 0 && shape.back() > (int64_t(1) << 40) / count)
      throw badRequest(at, at + ": shape too large");
    count *= shape.back();
  }
  if (shape.size() != info.rank)
    throw badRequest(at, at + ": shape has rank " + std::to_string(shape.size()) + ", the model's input '" + info.name +
                             "' rank " + std::to_string(info.rank));
  for (size_t k = 0; k < info.rank; ++k)
    if (info.dims[k] >= 0 && info.dims[k] != shape[k])
      throw badRequest(at, at + ": dim " + std::to_string(k) + " is " + std::to_string(shape[k]) + ", the model's input '" +
                               info.name + "' has " + std::to_string(info.dims[k]));
  if (!in.contains("data"))
    throw badRequest(at, at + ": data missing");
  std::vector<const json *> leaves;
  flatten(in["data"], leaves, at);
  if (int64_t(leaves.size()) != count)
    throw badRequest(at, at + ": data has " + std::to_string(leaves.size()) + " elements, shape needs " +
                             std::to_string(count));
  kiln_error *e = nullptr;
  if (info.dtype == KILN_DTYPE_STRING) {
    std::vector<std::string> strs;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (!leaves[i]->is_string())
        throw badRequest(at, at + ": element " + std::to_string(i) + " is not a string");
      strs.push_back(leaves[i]->get<std::string>());
    }
    std::vector<const char *> ptrs;
    std::vector<size_t> sizes;
    for (auto &s : strs)
      ptrs.push_back(s.data()), sizes.push_back(s.size());
    e = kiln_tensor_create_strings(shape.data(), shape.size(), ptrs.data(), sizes.data(), &out.t);
  } else {
    std::vector<unsigned char> buf;
    buf.reserve(leaves.size() * kiln_dtype_size(info.dtype));
    for (size_t i = 0; i < leaves.size(); ++i) {
      const json &v = *leaves[i];
      switch (info.dtype) {
      case KILN_DTYPE_BOOL:
        if (!v.is_boolean() && !(v.is_number_integer() && (v == 0 || v == 1)))
          throw badRequest(at, at + ": element " + std::to_string(i) + " is not a boolean");
        put<uint8_t>(buf, v.is_boolean() ? uint8_t(v.get<bool>()) : uint8_t(v.get<int>()));
        break;
      case KILN_DTYPE_UINT8: put(buf, integerOf<uint8_t>(v, at, i)); break;
      case KILN_DTYPE_UINT16: put(buf, integerOf<uint16_t>(v, at, i)); break;
      case KILN_DTYPE_UINT32: put(buf, integerOf<uint32_t>(v, at, i)); break;
      case KILN_DTYPE_UINT64: put(buf, integerOf<uint64_t>(v, at, i)); break;
      case KILN_DTYPE_INT8: put(buf, integerOf<int8_t>(v, at, i)); break;
      case KILN_DTYPE_INT16: put(buf, integerOf<int16_t>(v, at, i)); break;
      case KILN_DTYPE_INT32: put(buf, integerOf<int32_t>(v, at, i)); break;
      case KILN_DTYPE_INT64: put(buf, integerOf<int64_t>(v, at, i)); break;
      case KILN_DTYPE_FLOAT16: put(buf, floatToHalf(float(floatOf(v, at, i)))); break;
      case KILN_DTYPE_BFLOAT16: put(buf, floatToBf16(float(floatOf(v, at, i)))); break;
      case KILN_DTYPE_FLOAT32: put(buf, float(floatOf(v, at, i))); break;
      case KILN_DTYPE_FLOAT64: put(buf, floatOf(v, at, i)); break;
      default: throw badRequest(at, at + ": datatype not supported");
      }
    }
    e = kiln_tensor_create_copy(info.dtype, shape.data(), shape.size(), buf.data(), buf.size(), &out.t);
  }
  if (e) {
    std::string m = kiln_error_message(e);
    kiln_error_free(e);
    throw badRequest(at, at + ": " + m);
  }
}

namespace {
json floatJson(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "Infinity" : "-Infinity";
  return v;
}
} // namespace

json tensorDataToJson(const kiln_tensor *t) {
  json data = json::array();
  int64_t n = kiln_tensor_element_count(t);
  const void *p = kiln_tensor_data_const(t);
  for (int64_t i = 0; i < n; ++i) {
    switch (kiln_tensor_dtype(t)) {
    case KILN_DTYPE_BOOL: data.push_back(static_cast<const uint8_t *>(p)[i] != 0); break;
    case KILN_DTYPE_UINT8: data.push_back(static_cast<const uint8_t *>(p)[i]); break;
    case KILN_DTYPE_UINT16: data.push_back(static_cast<const uint16_t *>(p)[i]); break;
    case KILN_DTYPE_UINT32: data.push_back(static_cast<const uint32_t *>(p)[i]); break;
    case KILN_DTYPE_UINT64: data.push_back(static_cast<const uint64_t *>(p)[i]); break;
    case KILN_DTYPE_INT8: data.push_back(static_cast<const int8_t *>(p)[i]); break;
    case KILN_DTYPE_INT16: data.push_back(static_cast<const int16_t *>(p)[i]); break;
    case KILN_DTYPE_INT32: data.push_back(static_cast<const int32_t *>(p)[i]); break;
    case KILN_DTYPE_INT64: data.push_back(static_cast<const int64_t *>(p)[i]); break;
    case KILN_DTYPE_FLOAT16: data.push_back(floatJson(halfToFloat(static_cast<const uint16_t *>(p)[i]))); break;
    case KILN_DTYPE_BFLOAT16: data.push_back(floatJson(bf16ToFloat(static_cast<const uint16_t *>(p)[i]))); break;
    case KILN_DTYPE_FLOAT32: data.push_back(floatJson(static_cast<const float *>(p)[i])); break;
    case KILN_DTYPE_FLOAT64: data.push_back(floatJson(static_cast<const double *>(p)[i])); break;
    case KILN_DTYPE_STRING: {
      size_t len = 0;
      const char *s = kiln_tensor_string(t, i, &len);
      data.push_back(std::string(s ? s : "", len));
      break;
    }
    default: data.push_back(nullptr);
    }
  }
  return data;
}

} // namespace kiln::serve
