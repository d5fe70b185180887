// Fuzz target (d): requests against loaded artifacts. Each input picks one of the artifacts built
// with the fuzz targets (symbolic batch, run-time shapes, data-dependent output sizes) and carries
// its input tensors: as .npy or TensorProto bytes (kiln-run's request files, through its readers)
// or as a raw dtype, shape and byte string handed to kiln_tensor_wrap, so shapes, dtypes and byte
// sizes can disagree with each other and with the signature. The runtime must refuse or run; the
// outputs of a run must have the byte sizes their shapes say.
//
// Input layout: byte 0 picks the artifact; byte 1 the input count (mod 5); then per input a u16
// length (little-endian) and that many bytes: b[0] % 3 == 0 .npy, 1 TensorProto, 2 raw (b[1]
// dtype, b[2] % 6 rank, then one signed byte per dim, the rest is the data).
#include "kiln/kiln.h"
#include "tensor_file.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// A plain array, never destroyed: the models stay reachable (for LeakSanitizer) until the end.
constexpr size_t kModels = 5;
kiln_model *models[kModels];

kiln_tensor *makeTensor(const uint8_t *p, size_t n, std::string &keep) {
  if (n == 0)
    return nullptr;
  kiln_tensor *t = nullptr;
  kiln_error *e = nullptr;
  if (p[0] % 3 != 2) {
    kiln::tools::HostTensor host;
    std::string error;
    std::string contents(reinterpret_cast<const char *>(p + 1), n - 1);
    bool ok = p[0] % 3 == 0 ? kiln::tools::parseNpy(contents, &host, &error)
                            : kiln::tools::parseTensorProto(contents, &host, &error);
    if (!ok)
      return nullptr;
    e = kiln_tensor_create_copy(kiln_dtype(host.dtype), host.shape.data(), host.shape.size(),
                                host.bytes.data(), host.bytes.size(), &t);
  } else {
    if (n < 3)
      return nullptr;
    size_t rank = p[2] % 6;
    if (n < 3 + rank)
      return nullptr;
    std::vector<int64_t> shape;
    for (size_t i = 0; i < rank; ++i)
      shape.push_back(int8_t(p[3 + i]));
    keep.assign(reinterpret_cast<const char *>(p + 3 + rank), n - 3 - rank);
    e = kiln_tensor_wrap(kiln_dtype(p[1]), shape.data(), rank, keep.data(), keep.size(), &t);
  }
  if (e) {
    if (!kiln_error_message(e) || !*kiln_error_message(e))
      std::abort();
    kiln_error_free(e);
    return nullptr;
  }
  return t;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  static const char *const names[] = {"mlp", "dynamic_slice", "unique", "outer_sum", "nms"};
  kiln_model_options options;
  kiln_model_options_init(&options);
  options.num_threads = 1; // findings must reproduce from one input
  static_assert(sizeof(names) / sizeof(names[0]) == kModels);
  for (size_t i = 0; i < kModels; ++i) {
    const char *name = names[i];
    std::string path = std::string(KILN_FUZZ_ARTIFACT_DIR) + "/" + name + ".kiln";
    kiln_model *m = nullptr;
    if (kiln_error *e = kiln_model_load(path.c_str(), &options, &m)) {
      std::fprintf(stderr, "fuzz_request: %s\n", kiln_error_message(e));
      std::abort();
    }
    models[i] = m;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  kiln_model *model = models[data[0] % kModels];
  size_t count = data[1] % 5;
  const uint8_t *p = data + 2;
  size_t left = size - 2;
  std::vector<kiln_tensor *> inputs;
  std::vector<std::string> keep(count);
  for (size_t i = 0; i < count; ++i) {
    size_t n = 0;
    if (left >= 2) {
      n = std::min(size_t(p[0] | (p[1] << 8)), left - 2);
      p += 2;
      left -= 2;
    }
    inputs.push_back(makeTensor(p, n, keep[i])); // NULL entries are part of the test
    p += n;
    left -= n;
  }

  kiln_session *session = nullptr;
  if (kiln_error *e = kiln_session_create(model, &session)) {
    std::fprintf(stderr, "fuzz_request: %s\n", kiln_error_message(e));
    std::abort();
  }
  size_t outCount = kiln_model_output_count(model);
  std::vector<kiln_tensor *> outputs(outCount, nullptr);
  kiln_error *e = kiln_session_run(session, inputs.data(), inputs.size(), outputs.data(), outCount);
  if (e) {
    if (!kiln_error_message(e) || !*kiln_error_message(e))
      std::abort();
    for (kiln_tensor *o : outputs)
      if (o)
        std::abort(); // a failed run leaves every slot NULL
    kiln_error_free(e);
  } else {
    for (kiln_tensor *o : outputs) {
      if (!o)
        std::abort();
      size_t bytes = size_t(kiln_tensor_element_count(o)) * kiln_dtype_size(kiln_tensor_dtype(o));
      if (bytes != kiln_tensor_byte_size(o))
        std::abort();
      // Touch every byte, so that ASan sees an output shorter than its shape.
      volatile uint8_t sink = 0;
      const uint8_t *b = static_cast<const uint8_t *>(kiln_tensor_data_const(o));
      for (size_t i = 0; i < bytes; ++i)
        sink ^= b[i];
      kiln_tensor_destroy(o);
    }
  }
  kiln_session_destroy(session);
  for (kiln_tensor *t : inputs)
    kiln_tensor_destroy(t);
  return 0;
}
