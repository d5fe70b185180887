// The element type table (dtype.h).
#include "format/dtype.h"

#include <cstring>

namespace kiln::artifact {
namespace {

constexpr DtypeInfo kDtypes[] = {
    {1, "float32", 4, "f4", true},  {2, "uint8", 1, "u1", false},    {3, "int8", 1, "i1", false},
    {4, "uint16", 2, "u2", false},  {5, "int16", 2, "i2", false},    {6, "int32", 4, "i4", false},
    {7, "int64", 8, "i8", false},   {8, "string", 16, "", false},    {9, "bool", 1, "b1", false},
    {10, "float16", 2, "f2", true}, {11, "float64", 8, "f8", true},  {12, "uint32", 4, "u4", false},
    {13, "uint64", 8, "u8", false}, {16, "bfloat16", 2, "", true},
};

} // namespace

const DtypeInfo *findDtype(uint32_t code) {
  for (const DtypeInfo &d : kDtypes)
    if (d.code == code)
      return &d;
  return nullptr;
}

const DtypeInfo *findNpyDtype(const char *npy) {
  for (const DtypeInfo &d : kDtypes)
    if (*d.npy && std::strcmp(d.npy, npy) == 0)
      return &d;
  return nullptr;
}

uint32_t dtypeSize(uint32_t dtype) {
  const DtypeInfo *d = findDtype(dtype);
  return d ? d->size : 0;
}

const char *dtypeName(uint32_t dtype) {
  const DtypeInfo *d = findDtype(dtype);
  return d ? d->name : "unknown";
}

} // namespace kiln::artifact
