// What fuzz targets (a) and (b) share: one compilation of model bytes, in a fresh context, with
// every diagnostic swallowed (a rejected model is the expected outcome, not a finding).
#ifndef KILN_TEST_FUZZ_FUZZCOMPILE_H
#define KILN_TEST_FUZZ_FUZZCOMPILE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace kiln {
class ModelSource;
}

namespace kiln::fuzz {

// How far a model that imports goes.
enum class Depth { Import, LlvmIr };

// Imports `size` bytes as a ModelProto whose external data lives in `modelDir`, then, for
// Depth::LlvmIr, runs the whole pipeline and translates the result to LLVM IR. Returns whether
// every step succeeded; errors are fine, crashes and sanitizer reports are the findings.
// `inspect`, when given, sees what an imported model's weights point into.
bool compileBytes(const uint8_t *data, size_t size, const std::string &modelDir, Depth depth,
                  const std::function<void(const ModelSource &)> &inspect = {});

// Once per process: registers kiln's passes.
void initialize();

} // namespace kiln::fuzz

#endif
