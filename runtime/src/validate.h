// Checks a run request's inputs against the artifact's signature before any generated code runs.
#ifndef KILN_RUNTIME_VALIDATE_H
#define KILN_RUNTIME_VALIDATE_H

#include "format/artifact_format.h"
#include "kiln/kiln.h"

#include <string>
#include <vector>

namespace kiln::runtime {

// Empty if `inputs` (count, dtype, rank, static dims, symbolic dims bound consistently across
// inputs, no negative dims, data present) match `signature`; else one line naming the input.
std::string validateInputs(const std::vector<artifact::TensorSignature> &signature,
                           const kiln_tensor *const *inputs, size_t count);

} // namespace kiln::runtime

#endif
