// Whether this host can run an artifact: ABI version, target architecture, CPU features.
#ifndef KILN_RUNTIME_HOST_CHECK_H
#define KILN_RUNTIME_HOST_CHECK_H

#include "format/artifact_format.h"

#include <string>
#include <vector>

namespace kiln::runtime {

// Empty if the host can run code built for `meta`, else the reason (one line).
std::string checkHostCompatibility(const artifact::Metadata &meta);

// The CPU feature names this runtime can check, in the spelling artifacts use ("avx2", "sse4.2").
std::vector<std::string> knownCpuFeatures();

// 1 if the host has `feature`, 0 if not, -1 if the name is unknown. A leading '+' is ignored.
int hostHasCpuFeature(const std::string &feature);

} // namespace kiln::runtime

#endif
