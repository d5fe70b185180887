// The kiln_model object behind the C API: the mapped artifact, its loaded code and its device.
#ifndef KILN_RUNTIME_MODEL_H
#define KILN_RUNTIME_MODEL_H

#include "format/artifact_format.h"
#include "device.h"
#include "kiln/abi.h"
#include "kiln/kiln.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

struct kiln_model {
  // The caller holds one reference, each session another, so a model outlives its sessions.
  std::atomic<int> refs{1};
  std::string path;
  void *mapping = nullptr; // the whole file, read-only; weights are used from here in place
  size_t mappingSize = 0;
  kiln::artifact::ArtifactView view;
  int codeFd = -1; // kept open while loaded so each live model's /proc/self/fd path is unique
  void *library = nullptr;
  kiln_abi_entry_fn entry = nullptr;
  // Where the code's kernels run (the CPU, or the GPU of a --target=cuda artifact).
  std::unique_ptr<kiln::runtime::Device> device;
  // The weights section copied once to a device that does not address host memory.
  void *deviceWeights = nullptr;
  // --weights=external: the directory the manifest's source files are looked up in, the files'
  // read-only mappings, and each weight's bytes (in the artifact or in a mapping).
  std::string weightsDir;
  std::vector<std::pair<void *, size_t>> weightMappings;
  std::vector<const uint8_t *> weightData;

  // Views handed out through kiln_model_input_info and friends.
  struct SignatureView {
    std::vector<int64_t> dims;
    std::vector<const char *> symbols;
  };
  std::vector<SignatureView> inputViews, outputViews;
  std::vector<const char *> cpuFeatures;
  // The weights as the entry receives them (after the graph inputs); shapes point into view.meta.
  std::vector<kiln_abi_tensor> weightTensors;
  // Each kernel's source ONNX nodes joined with commas (kiln_model_kernel_nodes).
  std::vector<std::string> kernelNodes;

  ~kiln_model();
};

namespace kiln::runtime {
void retainModel(kiln_model *model);
void releaseModel(kiln_model *model);
} // namespace kiln::runtime

#endif
