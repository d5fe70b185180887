// Model loading: map the artifact, check it can run here, load its code section from memory.
#include "model.h"

#include "error.h"
#include "format/weight_files.h"
#include "support/sha256/sha256.h"
#include "host_check.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using kiln::runtime::makeError;

kiln_model::~kiln_model() {
  if (device)
    device->deallocate(deviceWeights);
  device.reset(); // joins the workers before the code they might run goes away
  if (library)
    ::dlclose(library);
  if (codeFd >= 0)
    ::close(codeFd);
  if (mapping)
    ::munmap(mapping, mappingSize);
  for (auto &[p, n] : weightMappings)
    ::munmap(p, n);
}

namespace kiln::runtime {

void retainModel(kiln_model *model) { model->refs.fetch_add(1, std::memory_order_relaxed); }

void releaseModel(kiln_model *model) {
  if (model && model->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete model;
}

namespace {

kiln_error *mapFile(kiln_model &m) {
  int fd = ::open(m.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeError(KILN_ERROR_IO, "cannot open '" + m.path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(KILN_ERROR_IO, "'" + m.path + "' is not a regular file");
  }
  m.mappingSize = size_t(st.st_size);
  if (m.mappingSize > 0) {
    void *p = ::mmap(nullptr, m.mappingSize, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return makeError(KILN_ERROR_IO, "cannot map '" + m.path + "': " + std::strerror(err));
    }
    m.mapping = p;
  }
  ::close(fd); // the mapping keeps the file alive
  return nullptr;
}

// --weights=external: each file of the manifest opened inside its directory, checked against the
// recorded size and SHA-256 and mapped read-only; each weight then points into its file.
kiln_error *mapExternalWeights(kiln_model &m) {
  const artifact::ExternalWeights &x = m.view.meta.external;
  const size_t slash = m.path.find_last_of('/');
  const std::string artifactDir =
      slash == std::string::npos ? std::string(".") : slash == 0 ? std::string("/") : m.path.substr(0, slash);
  const std::string sourceDir = m.weightsDir.empty() ? artifactDir : m.weightsDir;
  std::vector<const uint8_t *> bases;
  for (const artifact::ExternalFile &f : x.files) {
    const bool kiln = f.origin == artifact::WeightFileOrigin::Kiln;
    const std::string &dir = kiln ? artifactDir : sourceDir;
    const std::string what = "'" + m.path + "': weight file '" + f.name + "' in '" + dir + "'";
    std::string error;
    int fd = artifact::openInside(dir, f.name, &error);
    if (fd < 0)
      return makeError(KILN_ERROR_IO, "'" + m.path + "': " + error +
                                          (kiln ? " (kiln-compile writes it beside the artifact; move them together)"
                                                : " (give the directory of the model's external data)"));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || uint64_t(st.st_size) != f.size) {
      ::close(fd);
      return makeError(KILN_ERROR_INVALID_ARTIFACT, what + " has " + std::to_string(uint64_t(st.st_size)) +
                                                        " bytes; the artifact was compiled against " +
                                                        std::to_string(f.size));
    }
    void *p = nullptr;
    if (f.size > 0) {
      p = ::mmap(nullptr, size_t(f.size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        return makeError(KILN_ERROR_IO, "cannot map " + what + ": " + std::strerror(err));
      }
      m.weightMappings.push_back({p, size_t(f.size)});
    }
    ::close(fd);
    const auto *bytes = static_cast<const uint8_t *>(p);
    ::madvise(p, size_t(f.size), MADV_SEQUENTIAL);
    const std::string digest = sha256::hex(sha256::hash(bytes, size_t(f.size)));
    ::madvise(p, size_t(f.size), MADV_NORMAL);
    if (digest != f.sha256)
      return makeError(KILN_ERROR_INVALID_ARTIFACT, what + " does not match the artifact: its sha256 is " + digest +
                                                        ", the artifact was compiled against " + f.sha256);
    if (kiln && !artifact::checkWeightsFile(bytes, f.size, /*checkDigest=*/false, &error))
      return makeError(KILN_ERROR_INVALID_ARTIFACT, what + ": " + error);
    bases.push_back(bytes);
  }
  for (const artifact::ExternalRef &r : x.refs)
    m.weightData.push_back(bases[r.file] + r.offset); // parseArtifact checked the ref inside the file
  return nullptr;
}

kiln_error *checkRunnable(const kiln_model &m) {
  const auto &meta = m.view.meta;
  std::string why = checkHostCompatibility(meta);
  if (!why.empty())
    return makeError(KILN_ERROR_INCOMPATIBLE, "'" + m.path + "': " + why);
  auto checkDtypes = [&](const std::vector<artifact::TensorSignature> &sigs, const char *kind) -> kiln_error * {
    for (const auto &t : sigs)
      if (artifact::dtypeSize(t.dtype) == 0)
        return makeError(KILN_ERROR_INCOMPATIBLE, "'" + m.path + "': " + kind + " '" + t.name + "' has dtype " +
                                                      artifact::dtypeName(t.dtype) + " (" +
                                                      std::to_string(t.dtype) + "), which this runtime cannot hold");
    return nullptr;
  };
  if (kiln_error *e = checkDtypes(meta.inputs, "input"))
    return e;
  if (kiln_error *e = checkDtypes(meta.outputs, "output"))
    return e;
  // A weight's bytes are mapped as they are; string elements would be pointers into nowhere.
  for (const auto &w : meta.weights)
    if (w.dtype == KILN_DTYPE_STRING)
      return makeError(KILN_ERROR_INCOMPATIBLE, "'" + m.path + "': weight '" + w.name + "' is a string tensor");
  const uint8_t *c = m.view.code;
  // ELF64 (class 2), little-endian (1), x86-64 (e_machine 62): what dlopen on this host accepts.
  if (m.view.codeSize < 20 || std::memcmp(c, "\x7f" "ELF", 4) != 0 || c[4] != 2 || c[5] != 1 ||
      (c[18] | (c[19] << 8)) != 62)
    return makeError(KILN_ERROR_INVALID_ARTIFACT,
                     "'" + m.path + "': code section is not an x86-64 ELF64 shared object");
  return nullptr;
}

kiln_error *loadCode(kiln_model &m) {
  std::string base = m.path.substr(m.path.find_last_of('/') + 1);
  m.codeFd = ::memfd_create(("kiln:" + base).substr(0, 200).c_str(), MFD_CLOEXEC);
  if (m.codeFd < 0)
    return makeError(KILN_ERROR_IO, std::string("memfd_create failed: ") + std::strerror(errno));
  const uint8_t *p = m.view.code;
  uint64_t left = m.view.codeSize;
  while (left > 0) {
    ssize_t n = ::write(m.codeFd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return makeError(KILN_ERROR_IO, std::string("writing code to memfd failed: ") + std::strerror(errno));
    p += n;
    left -= uint64_t(n);
  }
  const std::string fdPath = "/proc/self/fd/" + std::to_string(m.codeFd);
  m.library = ::dlopen(fdPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m.library) {
    const char *why = ::dlerror();
    return makeError(KILN_ERROR_INVALID_ARTIFACT,
                     "'" + m.path + "': cannot load code section: " + (why ? why : "dlopen failed"));
  }
  const std::string &symbol =
      m.view.meta.entrySymbol.empty() ? std::string(KILN_ABI_ENTRY_SYMBOL) : m.view.meta.entrySymbol;
  m.entry = reinterpret_cast<kiln_abi_entry_fn>(::dlsym(m.library, symbol.c_str()));
  if (!m.entry)
    return makeError(KILN_ERROR_INVALID_ARTIFACT,
                     "'" + m.path + "': code section does not export entry symbol '" + symbol + "'");
  return nullptr;
}

void buildViews(kiln_model &m) {
  auto build = [](const std::vector<artifact::TensorSignature> &sigs, std::vector<kiln_model::SignatureView> &out) {
    out.resize(sigs.size());
    for (size_t i = 0; i < sigs.size(); ++i)
      for (const artifact::Dim &d : sigs[i].dims) {
        out[i].dims.push_back(d.size);
        out[i].symbols.push_back(d.symbol.c_str());
      }
  };
  build(m.view.meta.inputs, m.inputViews);
  build(m.view.meta.outputs, m.outputViews);
  for (const std::string &f : m.view.meta.cpuFeatures)
    m.cpuFeatures.push_back(f.c_str());
  for (size_t i = 0; i < m.view.meta.weights.size(); ++i) {
    artifact::WeightInfo &w = m.view.meta.weights[i];
    kiln_abi_tensor t{};
    t.data = const_cast<uint8_t *>(m.weightData[i]); // read-only mapping: code must not write
    t.shape = w.dims.data();
    m.weightTensors.push_back(t);
  }
}

// The artifact's device, and its weights copied there once when its kernels cannot read host memory.
kiln_error *loadDevice(kiln_model &m, int32_t threads) {
  std::string error;
  m.device = createDevice(m.view.meta, threads, error);
  if (!m.device)
    return makeError(KILN_ERROR_INCOMPATIBLE, "'" + m.path + "' " + error);
  if (m.device->hostMemory())
    return nullptr;
  // Where each weight goes in one device allocation: the weights section's layout, or for external
  // weights each at the next multiple of the alignment.
  const auto &weights = m.view.meta.weights;
  std::vector<uint64_t> offsets(weights.size());
  uint64_t total = m.view.weightsSize;
  if (m.view.meta.external.present) {
    total = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      offsets[i] = (total + artifact::kWeightAlignment - 1) / artifact::kWeightAlignment * artifact::kWeightAlignment;
      total = offsets[i] + weights[i].size;
    }
  } else {
    for (size_t i = 0; i < weights.size(); ++i)
      offsets[i] = weights[i].offset;
  }
  if (total == 0)
    return nullptr;
  m.deviceWeights = m.device->allocate(total, kiln::artifact::kWeightAlignment);
  if (!m.deviceWeights && !m.device->allocationFailure().empty())
    return makeError(KILN_ERROR_INTERNAL, "'" + m.path + "': allocating the weights: " + m.device->allocationFailure());
  if (!m.deviceWeights)
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "'" + m.path + "': out of GPU memory for " +
                                                   std::to_string(total) + " bytes of weights");
  auto *base = static_cast<uint8_t *>(m.deviceWeights);
  if (!m.view.meta.external.present) {
    if (!m.device->upload(base, m.view.weights, total, error))
      return makeError(KILN_ERROR_INTERNAL, "'" + m.path + "': uploading the weights: " + error);
  } else {
    for (size_t i = 0; i < weights.size(); ++i)
      if (weights[i].size > 0 && !m.device->upload(base + offsets[i], m.weightData[i], weights[i].size, error))
        return makeError(KILN_ERROR_INTERNAL, "'" + m.path + "': uploading weight '" + weights[i].name + "': " + error);
    // The device has its copy: the files' pages need not stay in this process.
    for (auto &[p, n] : m.weightMappings)
      ::munmap(p, n);
    m.weightMappings.clear();
  }
  for (size_t i = 0; i < m.weightTensors.size(); ++i)
    m.weightTensors[i].data = base + offsets[i];
  return nullptr;
}

kiln_error *loadModel(kiln_model &m, int32_t threads) {
  if (kiln_error *e = mapFile(m))
    return e;
  std::string error;
  if (!artifact::parseArtifact(static_cast<const uint8_t *>(m.mapping), m.mappingSize, &m.view, &error))
    return makeError(KILN_ERROR_INVALID_ARTIFACT, "'" + m.path + "': " + error);
  for (const auto &k : m.view.meta.kernels) {
    std::string joined;
    for (const auto &n : k.sourceNodes)
      joined += (joined.empty() ? "" : ",") + n;
    m.kernelNodes.push_back(joined);
  }
  if (kiln_error *e = checkRunnable(m))
    return e;
  if (m.view.meta.external.present) {
    if (kiln_error *e = mapExternalWeights(m))
      return e;
  } else {
    for (const auto &w : m.view.meta.weights)
      m.weightData.push_back(m.view.weights + w.offset);
  }
  if (kiln_error *e = loadCode(m))
    return e;
  buildViews(m);
  return loadDevice(m, threads);
}

} // namespace
} // namespace kiln::runtime

extern "C" {

void kiln_model_options_init(kiln_model_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
}

kiln_error *kiln_model_load(const char *path, const kiln_model_options *options, kiln_model **out_model) {
  if (!out_model)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_model_load: out_model is NULL");
  *out_model = nullptr;
  if (!path)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_model_load: path is NULL");
  int32_t threads = 0;
  if (options && options->struct_size >= offsetof(kiln_model_options, num_threads) + sizeof(int32_t))
    threads = options->num_threads;
  if (threads < 0)
    return makeError(KILN_ERROR_INVALID_ARGUMENT,
                     "kiln_model_load: num_threads is " + std::to_string(threads) + " (0 = all cores)");
  const char *weightsDir = nullptr;
  if (options && options->struct_size >= offsetof(kiln_model_options, weights_dir) + sizeof(const char *))
    weightsDir = options->weights_dir;
  kiln_model *m = nullptr;
  try {
    m = new kiln_model;
    m->path = path;
    if (weightsDir)
      m->weightsDir = weightsDir;
    if (kiln_error *e = kiln::runtime::loadModel(*m, threads)) {
      delete m;
      return e;
    }
  } catch (const std::bad_alloc &) {
    delete m;
    return makeError(KILN_ERROR_OUT_OF_MEMORY, "out of memory loading model");
  } catch (const std::exception &ex) {
    delete m;
    return makeError(KILN_ERROR_INTERNAL, std::string("loading model: ") + ex.what());
  }
  *out_model = m;
  return nullptr;
}

void kiln_model_destroy(kiln_model *model) { kiln::runtime::releaseModel(model); }

size_t kiln_model_input_count(const kiln_model *m) { return m ? m->view.meta.inputs.size() : 0; }
size_t kiln_model_output_count(const kiln_model *m) { return m ? m->view.meta.outputs.size() : 0; }

static kiln_error *tensorInfo(const kiln::artifact::TensorSignature *sigs, const kiln_model::SignatureView *views,
                              size_t count, size_t index, const char *kind, kiln_tensor_info *out) {
  if (!out)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "out_info is NULL");
  if (index >= count)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, std::string(kind) + " index " + std::to_string(index) +
                                                      " out of range (model has " + std::to_string(count) + ")");
  out->name = sigs[index].name.c_str();
  out->dtype = kiln_dtype(sigs[index].dtype);
  out->rank = sigs[index].dims.size();
  out->dims = views[index].dims.data();
  out->dim_symbols = views[index].symbols.data();
  return nullptr;
}

kiln_error *kiln_model_input_info(const kiln_model *m, size_t index, kiln_tensor_info *out_info) {
  if (!m)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_model_input_info: model is NULL");
  return tensorInfo(m->view.meta.inputs.data(), m->inputViews.data(), m->inputViews.size(), index, "input",
                    out_info);
}

kiln_error *kiln_model_output_info(const kiln_model *m, size_t index, kiln_tensor_info *out_info) {
  if (!m)
    return makeError(KILN_ERROR_INVALID_ARGUMENT, "kiln_model_output_info: model is NULL");
  return tensorInfo(m->view.meta.outputs.data(), m->outputViews.data(), m->outputViews.size(), index, "output",
                    out_info);
}

void kiln_model_get_metadata(const kiln_model *m, kiln_model_metadata *out) {
  if (!m || !out)
    return;
  const auto &meta = m->view.meta;
  out->format_version = meta.formatVersion;
  out->abi_version = meta.abiVersion;
  out->compiler_version = meta.compilerVersion.c_str();
  out->source_sha256 = meta.sourceModelSha256.c_str();
  out->producer = meta.producer.c_str();
  out->opset_version = meta.opsetVersion;
  out->target_triple = meta.targetTriple.c_str();
  out->target_cpu = meta.targetCpu.c_str();
  out->cpu_feature_count = m->cpuFeatures.size();
  out->cpu_features = m->cpuFeatures.data();
  out->weight_count = meta.weights.size();
  out->weights_bytes = m->view.weightsSize;
  out->code_bytes = m->view.codeSize;
  out->kernel_count = meta.kernels.size();
  out->num_threads = m->device->concurrency();
}

const char *kiln_model_kernel_nodes(const kiln_model *m, size_t index) {
  if (!m || index >= m->kernelNodes.size())
    return nullptr;
  return m->kernelNodes[index].c_str();
}

const char *kiln_model_kernel_name(const kiln_model *m, size_t index) {
  return m && index < m->view.meta.kernels.size() ? m->view.meta.kernels[index].name.c_str() : nullptr;
}

} // extern "C"
