// Request validation: every mismatch is reported with the input's name so callers can fix it.
#include "validate.h"

#include "tensor.h"

#include <map>

namespace kiln::runtime {
namespace {

std::string names(const std::vector<artifact::TensorSignature> &sig) {
  std::string s;
  for (const auto &t : sig)
    s += (s.empty() ? "" : ", ") + t.name;
  return s;
}

} // namespace

std::string validateInputs(const std::vector<artifact::TensorSignature> &signature,
                           const kiln_tensor *const *inputs, size_t count) {
  if (count != signature.size())
    return "expected " + std::to_string(signature.size()) + " input" + (signature.size() == 1 ? "" : "s") +
           " (" + names(signature) + "), got " + std::to_string(count);
  if (count > 0 && !inputs)
    return "inputs array is NULL";
  struct Binding {
    int64_t value;
    size_t input;
  };
  std::map<std::string, Binding> symbols; // symbol name -> first value seen and where
  for (size_t i = 0; i < count; ++i) {
    const artifact::TensorSignature &sig = signature[i];
    const std::string where = "input '" + sig.name + "'";
    const kiln_tensor *t = inputs[i];
    if (!t)
      return where + " is NULL";
    if (uint32_t(t->dtype) != sig.dtype)
      return where + ": expected dtype " + artifact::dtypeName(sig.dtype) + ", got " +
             artifact::dtypeName(uint32_t(t->dtype));
    if (t->shape.size() != sig.dims.size())
      return where + ": expected rank " + std::to_string(sig.dims.size()) + ", got " +
             std::to_string(t->shape.size());
    for (size_t d = 0; d < sig.dims.size(); ++d) {
      const int64_t got = t->shape[d];
      const artifact::Dim &dim = sig.dims[d];
      const std::string whereDim = where + " dim " + std::to_string(d);
      if (got < 0)
        return whereDim + ": negative size " + std::to_string(got);
      if (dim.size >= 0) {
        if (got != dim.size)
          return whereDim + ": expected " + std::to_string(dim.size) + ", got " + std::to_string(got);
        continue;
      }
      if (dim.symbol.empty())
        continue; // an unnamed symbolic dim constrains nothing
      auto [it, inserted] = symbols.emplace(dim.symbol, Binding{got, i});
      if (!inserted && it->second.value != got)
        return whereDim + " ('" + dim.symbol + "'): " + std::to_string(got) + " conflicts with " +
               std::to_string(it->second.value) + " from input '" + signature[it->second.input].name + "'";
    }
    size_t bytes = 0;
    std::string error;
    if (!tensorByteSize(t->dtype, t->shape.data(), t->shape.size(), &bytes, &error))
      return where + ": " + error;
    if (bytes > 0 && !t->data)
      return where + " has no data";
    if (t->dtype == KILN_DTYPE_STRING && bytes > 0) {
      // Generated code moves each element as one 16-byte integer, with 16-byte alignment.
      if (reinterpret_cast<uintptr_t>(t->data) % 16 != 0)
        return where + ": string elements must be 16-byte aligned (kiln_tensor_create_strings gives that)";
      const auto *elements = static_cast<const kiln_string *>(t->data);
      for (size_t k = 0; k < bytes / sizeof(kiln_string); ++k)
        if (elements[k].size < 0 || (elements[k].size > 0 && !elements[k].data))
          return where + ": string element " + std::to_string(k) + " has size " + std::to_string(elements[k].size) +
                 (elements[k].data ? "" : " and no data");
    }
  }
  return {};
}

} // namespace kiln::runtime
