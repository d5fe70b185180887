// Fuzz target (a): arbitrary bytes as an ONNX ModelProto, through the importer, the whole pass
// pipeline and the translation to LLVM IR. Seeds: the ONNX suite's and kiln's own models.
#include "FuzzCompile.h"

#include <unistd.h>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  kiln::fuzz::initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // External data cannot resolve inside an empty directory of our own: this target is about the
  // graph; fuzz_model_dir covers external data.
  static const std::string emptyDir = [] {
    char tmpl[] = "/tmp/kiln-fuzz-model-XXXXXX";
    const char *d = ::mkdtemp(tmpl);
    return std::string(d ? d : "/nonexistent");
  }();
  kiln::fuzz::compileBytes(data, size, emptyDir, kiln::fuzz::Depth::LlvmIr);
  return 0;
}
