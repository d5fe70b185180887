// Hand-encodes onnx.TensorProto messages for tests, independently of the decoder under test.
#ifndef KILN_TEST_UNIT_TENSOR_PROTO_WRITER_H
#define KILN_TEST_UNIT_TENSOR_PROTO_WRITER_H

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kiln::test {

inline void varint(std::string &o, uint64_t v) {
  while (v >= 0x80) {
    o.push_back(char((v & 0x7f) | 0x80));
    v >>= 7;
  }
  o.push_back(char(v));
}
inline void key(std::string &o, uint32_t field, uint32_t wire) { varint(o, (uint64_t(field) << 3) | wire); }
inline void lengthDelimited(std::string &o, uint32_t field, const std::string &bytes) {
  key(o, field, 2);
  varint(o, bytes.size());
  o += bytes;
}
inline std::string header(const std::string &name, uint32_t dtype, const std::vector<int64_t> &dims) {
  std::string o;
  for (int64_t d : dims) {
    key(o, 1, 0);
    varint(o, uint64_t(d));
  }
  key(o, 2, 0);
  varint(o, dtype);
  if (!name.empty())
    lengthDelimited(o, 8, name);
  return o;
}

// raw_data form.
inline std::string tensorProto(const std::string &name, uint32_t dtype, const std::vector<int64_t> &dims,
                               const std::string &raw) {
  std::string o = header(name, dtype, dims);
  lengthDelimited(o, 9, raw);
  return o;
}

// float_data (field 4), packed or one fixed32 per value.
inline std::string tensorProtoFloats(const std::string &name, const std::vector<int64_t> &dims,
                                     const std::vector<float> &values, bool packed) {
  std::string o = header(name, 1, dims), data;
  for (float f : values) {
    char b[4];
    std::memcpy(b, &f, 4);
    if (!packed)
      key(o, 4, 5), o.append(b, 4);
    else
      data.append(b, 4);
  }
  if (packed)
    lengthDelimited(o, 4, data);
  return o;
}

// A varint field (int32_data = 5, int64_data = 7, uint64_data = 11), packed.
inline std::string tensorProtoInts(uint32_t dtype, uint32_t field, const std::vector<int64_t> &dims,
                                   const std::vector<int64_t> &values) {
  std::string o = header("", dtype, dims), data;
  for (int64_t v : values)
    varint(data, uint64_t(v));
  lengthDelimited(o, field, data);
  return o;
}

} // namespace kiln::test

#endif
