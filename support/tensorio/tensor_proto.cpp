// A minimal, bounds-checked decoder of onnx.TensorProto: dims, data_type, name, raw_data and typed data fields.
#include "tensor_file.h"

#include <cstring>

namespace kiln::tools {
namespace {

// TensorProto field numbers (onnx.proto3).
enum : uint32_t {
  kDims = 1, kDataType = 2, kFloatData = 4, kInt32Data = 5, kStringData = 6, kInt64Data = 7,
  kName = 8, kRawData = 9, kDoubleData = 10, kUint64Data = 11, kExternalData = 13, kDataLocation = 14
};

class Reader {
public:
  Reader(const uint8_t *p, size_t n) : p(p), end(p + n) {}
  bool done() const { return p >= end; }
  bool varint(uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end)
        return false;
      uint8_t b = *p++;
      *v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return true;
    }
    return false;
  }
  bool fixed(void *out, size_t n) {
    if (size_t(end - p) < n)
      return false;
    std::memcpy(out, p, n);
    p += n;
    return true;
  }
  bool bytes(const uint8_t **data, size_t *n) {
    uint64_t len;
    if (!varint(&len) || len > uint64_t(end - p))
      return false;
    *data = p;
    *n = size_t(len);
    p += len;
    return true;
  }

private:
  const uint8_t *p, *end;
};

// Appends the values of a repeated scalar field, packed (wire type 2) or not.
template <typename F> bool repeated(Reader &r, uint32_t wire, uint32_t scalarWire, F &&readOne) {
  if (wire == scalarWire)
    return readOne(r);
  if (wire != 2)
    return false;
  const uint8_t *data;
  size_t n;
  if (!r.bytes(&data, &n))
    return false;
  Reader packed(data, n);
  while (!packed.done())
    if (!readOne(packed))
      return false;
  return true;
}

bool skip(Reader &r, uint32_t wire) {
  uint64_t v;
  uint8_t buf[8];
  const uint8_t *d;
  size_t n;
  switch (wire) {
  case 0: return r.varint(&v);
  case 1: return r.fixed(buf, 8);
  case 2: return r.bytes(&d, &n);
  case 5: return r.fixed(buf, 4);
  default: return false; // groups (3, 4) do not occur in TensorProto
  }
}


} // namespace

bool parseTensorProto(const std::string &contents, HostTensor *out, std::string *error) {
  Reader r(reinterpret_cast<const uint8_t *>(contents.data()), contents.size());
  std::vector<int64_t> dims;
  uint64_t dataType = 0;
  std::string raw, name;
  bool hasRaw = false;
  std::vector<float> floats;
  std::vector<double> doubles;
  std::vector<int64_t> ints; // int32_data and int64_data (sign-extended)
  std::vector<uint64_t> uints;
  std::vector<std::string> strings; // string_data
  auto malformed = [&] {
    *error = "malformed TensorProto";
    return false;
  };
  while (!r.done()) {
    uint64_t key;
    if (!r.varint(&key))
      return malformed();
    const uint32_t field = uint32_t(key >> 3), wire = uint32_t(key & 7);
    bool ok = true;
    const uint8_t *d;
    size_t n;
    switch (field) {
    case kDims:
      ok = repeated(r, wire, 0, [&](Reader &rr) {
        uint64_t v;
        if (!rr.varint(&v))
          return false;
        dims.push_back(int64_t(v));
        return true;
      });
      break;
    case kDataType:
      ok = wire == 0 && r.varint(&dataType);
      break;
    case kFloatData:
      ok = repeated(r, wire, 5, [&](Reader &rr) {
        float f;
        return rr.fixed(&f, 4) && (floats.push_back(f), true);
      });
      break;
    case kInt32Data:
    case kInt64Data:
      ok = repeated(r, wire, 0, [&](Reader &rr) {
        uint64_t v;
        return rr.varint(&v) && (ints.push_back(int64_t(v)), true);
      });
      break;
    case kDoubleData:
      ok = repeated(r, wire, 1, [&](Reader &rr) {
        double f;
        return rr.fixed(&f, 8) && (doubles.push_back(f), true);
      });
      break;
    case kUint64Data:
      ok = repeated(r, wire, 0, [&](Reader &rr) {
        uint64_t v;
        return rr.varint(&v) && (uints.push_back(v), true);
      });
      break;
    case kName:
      ok = wire == 2 && r.bytes(&d, &n);
      if (ok)
        name.assign(reinterpret_cast<const char *>(d), n);
      break;
    case kRawData:
      ok = wire == 2 && r.bytes(&d, &n);
      if (ok) {
        raw.assign(reinterpret_cast<const char *>(d), n);
        hasRaw = true;
      }
      break;
    case kStringData:
      ok = wire == 2 && r.bytes(&d, &n);
      if (ok)
        strings.emplace_back(reinterpret_cast<const char *>(d), n);
      break;
    case kExternalData:
      *error = "TensorProto with external data is not supported";
      return false;
    case kDataLocation: {
      uint64_t loc = 0;
      ok = wire == 0 && r.varint(&loc);
      if (ok && loc != 0) {
        *error = "TensorProto with external data is not supported";
        return false;
      }
      break;
    }
    default:
      ok = skip(r, wire);
    }
    if (!ok)
      return malformed();
  }

  const uint32_t dtype = uint32_t(dataType);
  if (dtype == 8) { // strings live in string_data only
    uint64_t count = 1;
    for (int64_t d : dims)
      count = d < 0 ? 0 : count * uint64_t(d);
    if (strings.size() != count || hasRaw) {
      *error = "string TensorProto has " + std::to_string(strings.size()) + " values in string_data; its shape needs " +
               std::to_string(count);
      return false;
    }
    out->dtype = dtype;
    out->shape = std::move(dims);
    out->bytes.clear();
    out->strings = std::move(strings);
    out->name = std::move(name);
    return true;
  }
  const uint32_t size = elementSize(dtype);
  if (size == 0) {
    *error = "TensorProto data_type " + std::to_string(dataType) + " is not supported";
    return false;
  }
  uint64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d != 0 && count > (uint64_t(1) << 62) / uint64_t(d))) {
      *error = "TensorProto has an invalid shape";
      return false;
    }
    count *= uint64_t(d);
  }
  std::string bytes;
  size_t typedCount = 0;
  if (hasRaw) {
    bytes = std::move(raw);
  } else {
    // Typed fields hold one value per element; narrow types live in int32_data (float16 and
    // bfloat16 as their bit patterns), unsigned 32/64-bit in uint64_data.
    auto put = [&](const void *v) { bytes.append(static_cast<const char *>(v), size); };
    if (dtype == 1) {
      for (float f : floats)
        put(&f);
      typedCount = floats.size();
    } else if (dtype == 11) {
      for (double f : doubles)
        put(&f);
      typedCount = doubles.size();
    } else if (dtype == 12 || dtype == 13) {
      for (uint64_t v : uints)
        put(&v); // little-endian: the low bytes come first
      typedCount = uints.size();
    } else {
      for (int64_t v : ints)
        put(&v);
      typedCount = ints.size();
    }
    if (typedCount != count) {
      *error = "TensorProto has " + std::to_string(typedCount) + " values; its shape needs " +
               std::to_string(count);
      return false;
    }
  }
  if (bytes.size() != count * size) {
    *error = "TensorProto raw_data has " + std::to_string(bytes.size()) + " bytes; its shape and dtype need " +
             std::to_string(count * size);
    return false;
  }
  out->dtype = dtype;
  out->shape = std::move(dims);
  out->bytes = std::move(bytes);
  out->name = std::move(name);
  return true;
}

} // namespace kiln::tools
