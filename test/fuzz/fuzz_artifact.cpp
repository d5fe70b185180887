// Fuzz target (c): arbitrary bytes as a kiln artifact, through the runtime's reader and the checks
// kiln_model_load makes before it loads the code section. The code section itself is not loaded:
// an artifact is code, and loading one is trusting it (docs/security.md); what must hold on any
// bytes is that the reader never reads out of bounds, never allocates what the file cannot back,
// and either accepts or says why not.
#include "format/artifact_format.h"
#include "host_check.h"

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::artifact::ArtifactView view;
  std::string error;
  if (!kiln::artifact::parseArtifact(data, size, &view, &error)) {
    if (error.empty())
      std::abort(); // a refusal must say why
    return 0;
  }
  (void)kiln::runtime::checkHostCompatibility(view.meta);
  // Everything the view points at lies inside the input.
  const uint8_t *end = data + size;
  auto inside = [&](const uint8_t *p, uint64_t n) {
    return n == 0 || (p >= data && p <= end && n <= uint64_t(end - p));
  };
  if (!inside(view.code, view.codeSize) || !inside(view.weights, view.weightsSize))
    std::abort();
  for (const auto &w : view.meta.weights)
    if (w.offset > view.weightsSize || w.size > view.weightsSize - w.offset)
      std::abort();
  return 0;
}
