// Host compatibility checks run before any generated code is loaded.
#include "host_check.h"

#include "kiln/abi.h"

#include <cstring>

namespace kiln::runtime {
namespace {

#if defined(__x86_64__)
constexpr const char *kHostArch = "x86_64";
#elif defined(__aarch64__)
constexpr const char *kHostArch = "aarch64";
#else
constexpr const char *kHostArch = "unknown";
#endif

// __builtin_cpu_supports needs a string literal, hence one probe function per feature.
struct FeatureProbe {
  const char *name;
  bool (*present)();
};

#if defined(__x86_64__)
#define KILN_FEATURE(NAME) {NAME, [] { return __builtin_cpu_supports(NAME) != 0; }}
const FeatureProbe kProbes[] = {
    KILN_FEATURE("cmov"),       KILN_FEATURE("popcnt"),     KILN_FEATURE("sse"),
    KILN_FEATURE("sse2"),       KILN_FEATURE("sse3"),       KILN_FEATURE("ssse3"),
    KILN_FEATURE("sse4.1"),     KILN_FEATURE("sse4.2"),     KILN_FEATURE("avx"),
    KILN_FEATURE("avx2"),       KILN_FEATURE("fma"),        KILN_FEATURE("f16c"),
    KILN_FEATURE("bmi"),        KILN_FEATURE("bmi2"),       KILN_FEATURE("lzcnt"),
    KILN_FEATURE("movbe"),      KILN_FEATURE("aes"),        KILN_FEATURE("pclmul"),
    KILN_FEATURE("avxvnni"),    KILN_FEATURE("avx512f"),    KILN_FEATURE("avx512bw"),
    KILN_FEATURE("avx512vl"),   KILN_FEATURE("avx512dq"),   KILN_FEATURE("avx512cd"),
    KILN_FEATURE("avx512vnni"), KILN_FEATURE("avx512bf16"), KILN_FEATURE("avx512fp16"),
    KILN_FEATURE("avx512vbmi"), KILN_FEATURE("avx512ifma"), KILN_FEATURE("avx512vbmi2"),
    KILN_FEATURE("avx512bitalg"), KILN_FEATURE("avx512vpopcntdq"), KILN_FEATURE("gfni"),
    KILN_FEATURE("vpclmulqdq"), KILN_FEATURE("amx-tile"),   KILN_FEATURE("amx-int8"),
    KILN_FEATURE("amx-bf16"),
};
#undef KILN_FEATURE
#else
const FeatureProbe kProbes[] = {{"", [] { return false; }}};
#endif

std::string archOf(const std::string &triple) { return triple.substr(0, triple.find('-')); }

} // namespace

std::vector<std::string> knownCpuFeatures() {
  std::vector<std::string> names;
  for (const auto &p : kProbes)
    if (*p.name)
      names.push_back(p.name);
  return names;
}

int hostHasCpuFeature(const std::string &feature) {
  const char *name = feature.c_str();
  if (*name == '+')
    ++name;
  for (const auto &p : kProbes)
    if (*p.name && std::strcmp(p.name, name) == 0)
      return p.present() ? 1 : 0;
  return -1;
}

std::string checkHostCompatibility(const artifact::Metadata &meta) {
  if (meta.abiVersion < KILN_ABI_MIN_VERSION || meta.abiVersion > KILN_ABI_VERSION)
    return "artifact ABI version " + std::to_string(meta.abiVersion) + "; this runtime supports " +
           std::to_string(KILN_ABI_MIN_VERSION) + " to " + std::to_string(KILN_ABI_VERSION) +
           " (recompile the model with a matching kiln-compile)";
  std::string arch = archOf(meta.targetTriple);
  if (arch == "amd64" || arch == "x86-64")
    arch = "x86_64";
  if (arch != kHostArch)
    return "artifact targets '" + meta.targetTriple + "' (" + (arch.empty() ? "no architecture" : arch) +
           "); this host is " + kHostArch;
  std::string missing;
  for (const std::string &f : meta.cpuFeatures) {
    if (!f.empty() && f[0] == '-')
      continue; // an explicitly disabled feature needs nothing from the host
    int has = hostHasCpuFeature(f);
    if (has < 0)
      return "artifact needs CPU feature '" + f + "', which this runtime does not know how to check";
    if (has == 0)
      missing += (missing.empty() ? "" : ", ") + f;
  }
  if (!missing.empty())
    return "artifact needs CPU features this host lacks: " + missing + " (compiled for cpu '" +
           meta.targetCpu + "')";
  return {};
}

} // namespace kiln::runtime
