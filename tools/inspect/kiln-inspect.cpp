// kiln-inspect: print what an artifact contains (lineage, target, signature, weights, kernels) without loading its code.
#include "format/artifact_format.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using namespace kiln::artifact;

const char kUsage[] = "usage: kiln-inspect ARTIFACT [--json | --dump-ptx]\n"
                      "Prints an artifact's format version, lineage, target, signature, quantization recipe and\n"
                      "accuracy report, weights, code size, kernel table and memory needs. Reads the file only; never loads its code, so it works\n"
                      "for artifacts built for other CPUs.\n"
                      "  --json      the same as one JSON object\n"
                      "  --dump-ptx  the PTX of a --target=cuda artifact, as kiln-compile embedded it\n";

std::string dimsString(const std::vector<Dim> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += i ? "," : "";
    s += dims[i].size >= 0 ? std::to_string(dims[i].size) : dims[i].symbol.empty() ? "?" : dims[i].symbol;
  }
  return s + "]";
}

std::string join(const std::vector<std::string> &v, const char *sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? sep : "") + v[i];
  return s;
}

std::string json(const std::string &s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      o += buf;
    } else {
      o += char(c);
    }
  }
  return o + "\"";
}

std::string jsonList(const std::vector<std::string> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + json(v[i]);
  return s + "]";
}

std::string jsonSignature(const std::vector<TensorSignature> &sigs) {
  std::string s = "[";
  for (size_t i = 0; i < sigs.size(); ++i) {
    const auto &t = sigs[i];
    s += std::string(i ? ", " : "") + "{\"name\": " + json(t.name) + ", \"dtype\": " + json(dtypeName(t.dtype)) +
         ", \"shape\": [";
    for (size_t d = 0; d < t.dims.size(); ++d)
      s += (d ? ", " : "") + (t.dims[d].size >= 0 ? std::to_string(t.dims[d].size) : json(t.dims[d].symbol));
    s += "]}";
  }
  return s + "]";
}


// JSON has no NaN or infinity: a figure that is not a finite number is null.
std::string jsonNumber(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

std::string recipeString(const QuantizationInfo &q) {
  std::string s = q.mode;
  s += q.groupSize ? " (groups of " + std::to_string(q.groupSize) + " along K)" : " (per output channel)";
  s += ", scales " + q.scaleType;
  s += ", kept in float: " + (q.keep.empty() ? std::string("(none)") : join(q.keep, ", "));
  return s;
}

void printQuantization(const QuantizationInfo &q) {
  std::printf("quantization:     %s\n", recipeString(q).c_str());
  const AccuracyReport &a = q.accuracy;
  if (!a.present) {
    std::printf("  accuracy: not measured (kiln-compile --calibration / --max-error / --check-accuracy)\n");
    return;
  }
  std::printf("  accuracy vs float (%s, %u %s%s):\n", a.inputs.c_str(), a.samples,
              a.positions ? "sequence" : "sample", a.samples == 1 ? "" : "s");
  for (const OutputAccuracy &o : a.outputs)
    std::printf("    %s: max abs err %s, max rel err %s, cosine %s\n", o.name.c_str(), formatFigure(o.maxAbsError).c_str(),
                formatFigure(o.maxRelError).c_str(), formatFigure(o.cosine, "%.6f").c_str());
  if (a.positions)
    std::printf("    next token over %llu positions: top-1 agreement %s, perplexity float %s quantized %s\n",
                static_cast<unsigned long long>(a.positions), formatFigure(a.top1Agreement).c_str(),
                formatFigure(a.perplexityFloat).c_str(), formatFigure(a.perplexityQuantized).c_str());
}

std::string jsonQuantization(const QuantizationInfo &q) {
  std::string s = "{\"mode\": " + json(q.mode) + ", \"group_size\": " + std::to_string(q.groupSize) +
                  ", \"scale_type\": " + json(q.scaleType) + ", \"keep\": " + jsonList(q.keep) + ", \"accuracy\": ";
  const AccuracyReport &a = q.accuracy;
  if (!a.present)
    return s + "null}";
  s += "{\"inputs\": " + json(a.inputs) + ", \"samples\": " + std::to_string(a.samples) + ", \"outputs\": [";
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const OutputAccuracy &o = a.outputs[i];
    s += std::string(i ? ", " : "") + "{\"name\": " + json(o.name) + ", \"max_abs_error\": " +
         jsonNumber(o.maxAbsError) + ", \"max_rel_error\": " + jsonNumber(o.maxRelError) +
         ", \"cosine\": " + jsonNumber(o.cosine) + "}";
  }
  s += "]";
  if (a.positions)
    s += ", \"positions\": " + std::to_string(a.positions) + ", \"top1_agreement\": " + jsonNumber(a.top1Agreement) +
         ", \"perplexity_float\": " + jsonNumber(a.perplexityFloat) +
         ", \"perplexity_quantized\": " + jsonNumber(a.perplexityQuantized) + ", \"tokens\": " + json(a.tokens);
  return s + "}}";
}

/// A decoder's cache geometry: bytes per cached token (every cache; dims other than the batch or
/// pool and the token axis are static) and, when paged (kiln-compile --kv-block-size: a
/// kiln.block_table input maps sequences to blocks of a static size), the block size; 0 otherwise.
struct CacheGeometry {
  int64_t blockSize = 0, bytesPerToken = 0;
};

CacheGeometry cacheGeometry(const Metadata &m) {
  CacheGeometry g;
  bool paged = std::any_of(m.inputs.begin(), m.inputs.end(),
                           [](const auto &t) { return t.name == kiln::artifact::kBlockTableInput; });
  for (const auto &c : m.decoder.caches) {
    const auto &sig = m.inputs[c.input];
    if (c.axis == 0 || c.axis >= sig.dims.size())
      return {};
    int64_t perToken = dtypeSize(sig.dtype);
    for (size_t d = 1; d < sig.dims.size(); ++d)
      if (d != c.axis)
        perToken *= std::max<int64_t>(sig.dims[d].size, 0);
    g.bytesPerToken += perToken;
    if (paged)
      g.blockSize = std::max<int64_t>(sig.dims[c.axis].size, 0);
  }
  return g;
}

void printText(const ArtifactView &v, uint64_t fileSize) {
  const Metadata &m = v.meta;
  std::printf("format version:   %u (abi %u)\n", m.formatVersion, m.abiVersion);
  std::printf("compiler version: %s\n", m.compilerVersion.c_str());
  std::printf("source sha256:    %s\n", m.sourceModelSha256.c_str());
  std::printf("producer:         %s\n", m.producer.c_str());
  std::printf("opset:            %lld\n", static_cast<long long>(m.opsetVersion));
  std::printf("target:           %s cpu=%s features=%s\n", m.targetTriple.c_str(), m.targetCpu.c_str(),
              m.cpuFeatures.empty() ? "(none)" : join(m.cpuFeatures, ",").c_str());
  std::printf("passes:           %s\n", m.passes.empty() ? "(none)" : join(m.passes, ", ").c_str());
  std::printf("entry symbol:     %s\n", m.entrySymbol.c_str());
  std::printf("inputs:\n");
  for (const auto &t : m.inputs)
    std::printf("  %s: %s%s\n", t.name.c_str(), dtypeName(t.dtype), dimsString(t.dims).c_str());
  std::printf("outputs:\n");
  for (const auto &t : m.outputs)
    std::printf("  %s: %s%s\n", t.name.c_str(), dtypeName(t.dtype), dimsString(t.dims).c_str());
  if (m.decoder.present) {
    std::vector<std::string> caches;
    for (const auto &c : m.decoder.caches)
      caches.push_back(m.inputs[c.input].name);
    std::printf("decoder:          KV cache in place, context %lld tokens, position input %s\n",
                static_cast<long long>(m.decoder.maxContext), m.inputs[m.decoder.positionInput].name.c_str());
    std::printf("  caches: %s\n", join(caches, ", ").c_str());
    CacheGeometry geometry = cacheGeometry(m);
    std::printf("  %lld bytes per cached token", static_cast<long long>(geometry.bytesPerToken));
    if (geometry.blockSize > 0)
      std::printf("; paged: blocks of %lld tokens (%lld bytes) from one pool, the context a per-sequence limit\n",
                  static_cast<long long>(geometry.blockSize),
                  static_cast<long long>(geometry.bytesPerToken * geometry.blockSize));
    else
      std::printf("; contiguous: every sequence holds the whole context\n");
  }
  if (m.quantization.present)
    printQuantization(m.quantization);
  std::printf("weights:          %zu tensors, %llu bytes\n", m.weights.size(),
              static_cast<unsigned long long>(v.weightsSize));
  if (m.external.present) {
    const ExternalWeights &x = m.external;
    std::printf("external weights: %zu files (--weights=external; sources in the weights directory, the kiln\n"
                "                  weights file beside the artifact), every one checked by size and sha256 at load\n",
                x.files.size());
    for (size_t i = 0; i < x.files.size(); ++i) {
      const auto &f = x.files[i];
      std::printf("  [%zu] %s (%s) %llu bytes sha256 %s\n", i, f.name.c_str(),
                  f.origin == WeightFileOrigin::Kiln ? "kiln weights file" : "source",
                  static_cast<unsigned long long>(f.size), f.sha256.c_str());
    }
    for (size_t i = 0; i < x.refs.size(); ++i)
      std::printf("  %s: [%u] offset %llu, %llu bytes\n", m.weights[i].name.c_str(), x.refs[i].file,
                  static_cast<unsigned long long>(x.refs[i].offset), static_cast<unsigned long long>(x.refs[i].size));
  }
  std::printf("code:             %llu bytes\n", static_cast<unsigned long long>(v.codeSize));
  if (m.cuda.present)
    std::printf("cuda:             %s, PTX %zu bytes, cubin %s\n", m.cuda.arch.c_str(), m.cuda.ptx.size(),
                m.cuda.cubin.empty() ? "none (ptxas was not found; the driver JIT-compiles the PTX)"
                                     : (std::to_string(m.cuda.cubin.size()) + " bytes").c_str());
  std::printf("kernels:          %zu\n", m.kernels.size());
  for (size_t i = 0; i < m.kernels.size(); ++i)
    std::printf("  %zu %s <- %s\n", i, m.kernels[i].name.c_str(), join(m.kernels[i].sourceNodes, ", ").c_str());
  std::printf("memory:           %llu bytes mapped (weights %llu + code %llu; file %llu); intermediates live\n"
              "                  in one arena per run from the runtime (kiln-compile --print-memory-plan shows it)\n",
              static_cast<unsigned long long>(v.weightsSize + v.codeSize),
              static_cast<unsigned long long>(v.weightsSize), static_cast<unsigned long long>(v.codeSize),
              static_cast<unsigned long long>(fileSize));
}

void printJson(const ArtifactView &v, uint64_t fileSize) {
  const Metadata &m = v.meta;
  std::printf("{\n  \"format_version\": %u,\n  \"abi_version\": %u,\n", m.formatVersion, m.abiVersion);
  std::printf("  \"compiler_version\": %s,\n  \"source_sha256\": %s,\n  \"producer\": %s,\n",
              json(m.compilerVersion).c_str(), json(m.sourceModelSha256).c_str(), json(m.producer).c_str());
  std::printf("  \"opset\": %lld,\n  \"target_triple\": %s,\n  \"target_cpu\": %s,\n  \"cpu_features\": %s,\n",
              static_cast<long long>(m.opsetVersion), json(m.targetTriple).c_str(), json(m.targetCpu).c_str(),
              jsonList(m.cpuFeatures).c_str());
  std::printf("  \"passes\": %s,\n  \"entry_symbol\": %s,\n", jsonList(m.passes).c_str(), json(m.entrySymbol).c_str());
  std::printf("  \"inputs\": %s,\n  \"outputs\": %s,\n", jsonSignature(m.inputs).c_str(),
              jsonSignature(m.outputs).c_str());
  if (m.decoder.present) {
    std::vector<std::string> caches;
    for (const auto &c : m.decoder.caches)
      caches.push_back(m.inputs[c.input].name);
    CacheGeometry geometry = cacheGeometry(m);
    std::printf("  \"decoder\": {\"max_context\": %lld, \"position_input\": %s, \"caches\": %s, "
                "\"kv_block_size\": %lld, \"kv_bytes_per_token\": %lld},\n",
                static_cast<long long>(m.decoder.maxContext), json(m.inputs[m.decoder.positionInput].name).c_str(),
                jsonList(caches).c_str(), static_cast<long long>(geometry.blockSize),
                static_cast<long long>(geometry.bytesPerToken));
  }
  if (m.quantization.present)
    std::printf("  \"quantization\": %s,\n", jsonQuantization(m.quantization).c_str());
  std::printf("  \"weights\": [");
  for (size_t i = 0; i < m.weights.size(); ++i) {
    const auto &w = m.weights[i];
    std::string dims;
    for (size_t d = 0; d < w.dims.size(); ++d)
      dims += (d ? ", " : "") + std::to_string(w.dims[d]);
    std::printf("%s{\"name\": %s, \"dtype\": %s, \"shape\": [%s], \"offset\": %llu, \"bytes\": %llu}", i ? ", " : "",
                json(w.name).c_str(), json(dtypeName(w.dtype)).c_str(), dims.c_str(),
                static_cast<unsigned long long>(w.offset), static_cast<unsigned long long>(w.size));
  }
  if (m.cuda.present)
    std::printf("],\n  \"cuda\": {\"arch\": %s, \"ptx_bytes\": %zu, \"cubin_bytes\": %zu", json(m.cuda.arch).c_str(),
                m.cuda.ptx.size(), m.cuda.cubin.size());
  std::printf("%s", m.cuda.present ? "}" : "]");
  if (m.external.present) {
    const ExternalWeights &x = m.external;
    std::printf(",\n  \"external_weights\": {\"files\": [");
    for (size_t i = 0; i < x.files.size(); ++i)
      std::printf("%s{\"name\": %s, \"origin\": %s, \"bytes\": %llu, \"sha256\": %s}", i ? ", " : "",
                  json(x.files[i].name).c_str(),
                  x.files[i].origin == WeightFileOrigin::Kiln ? "\"kiln\"" : "\"source\"",
                  static_cast<unsigned long long>(x.files[i].size), json(x.files[i].sha256).c_str());
    std::printf("], \"refs\": [");
    for (size_t i = 0; i < x.refs.size(); ++i)
      std::printf("%s{\"file\": %u, \"offset\": %llu, \"bytes\": %llu}", i ? ", " : "", x.refs[i].file,
                  static_cast<unsigned long long>(x.refs[i].offset), static_cast<unsigned long long>(x.refs[i].size));
    std::printf("]}");
  }
  std::printf(",\n  \"weights_bytes\": %llu,\n  \"code_bytes\": %llu,\n  \"kernels\": [",
              static_cast<unsigned long long>(v.weightsSize), static_cast<unsigned long long>(v.codeSize));
  for (size_t i = 0; i < m.kernels.size(); ++i)
    std::printf("%s{\"name\": %s, \"source_nodes\": %s}", i ? ", " : "", json(m.kernels[i].name).c_str(),
                jsonList(m.kernels[i].sourceNodes).c_str());
  std::printf("],\n  \"memory\": {\"mapped_bytes\": %llu, \"file_bytes\": %llu, \"intermediates\": "
              "\"one arena per run from the runtime\"}\n}\n",
              static_cast<unsigned long long>(v.weightsSize + v.codeSize), static_cast<unsigned long long>(fileSize));
}

int fail(const std::string &msg) {
  std::fprintf(stderr, "kiln-inspect: error: %s\n", msg.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  std::string path;
  bool asJson = false, dumpPtx = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--json")
      asJson = true;
    else if (a == "--dump-ptx")
      dumpPtx = true;
    else if (a.size() > 1 && a[0] == '-')
      return fail("unknown option '" + a + "' (see --help)");
    else if (path.empty())
      path = a;
    else
      return fail("more than one artifact given");
  }
  if (path.empty())
    return fail("no artifact given (see --help)");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("'" + path + "' is not a regular file");
  }
  const uint64_t size = uint64_t(st.st_size);
  void *map = nullptr;
  if (size > 0) {
    map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      ::close(fd);
      return fail("cannot map '" + path + "': " + std::strerror(errno));
    }
  }
  ::close(fd);
  ArtifactView view;
  std::string error;
  if (!parseArtifact(static_cast<const uint8_t *>(map), size, &view, &error))
    return fail("'" + path + "': " + error);
  if (dumpPtx) {
    // Lets a check without ptxas read the device code itself (test/e2e/check_cuda_compile.py).
    if (!view.meta.cuda.present)
      return fail("'" + path + "' has no CUDA section (compiled for " + view.meta.targetTriple + ")");
    std::fwrite(view.meta.cuda.ptx.data(), 1, view.meta.cuda.ptx.size(), stdout);
  } else if (asJson)
    printJson(view, size);
  else
    printText(view, size);
  return 0;
}
