// JSON tensors of the Open Inference Protocol (KServe v2) and kiln tensors, both ways.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "kiln/kiln.h"

namespace kiln::serve {

// The protocol's datatype name of a kiln dtype ("FP32", "BYTES", ...); "UNKNOWN" if none.
const char *v2DtypeName(kiln_dtype dtype);

// IEEE binary16 and bfloat16 from and to float, rounding to nearest even (as numpy's astype).
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t b);

struct OwnedTensor {
  kiln_tensor *t = nullptr;
  OwnedTensor() = default;
  OwnedTensor(const OwnedTensor &) = delete;
  OwnedTensor(OwnedTensor &&o) noexcept : t(o.t) { o.t = nullptr; }
  ~OwnedTensor() { kiln_tensor_destroy(t); }
};

// The tensor of one request input {"name", "shape", "datatype", "data"}, checked against the
// model's input `info` (datatype, rank, static dims, element count, each value's range). Throws
// HttpError 400 whose message starts with `at` (e.g. "input 'x'").
void tensorFromJson(const nlohmann::json &in, const kiln_tensor_info &info, OwnedTensor &out, const std::string &at);

// A tensor's elements, row-major and flat, as JSON values (FP16/BF16 widened to float).
nlohmann::json tensorDataToJson(const kiln_tensor *tensor);

} // namespace kiln::serve
