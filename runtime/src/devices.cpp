// The device layer's defaults for optional entries, and the one place that picks an artifact's device.
#include "device.h"

#include "format/artifact_format.h"
#include "cuda_device.h"

namespace kiln::runtime {

bool Device::createStream(void **stream, std::string &) {
  *stream = nullptr;
  return true;
}
void Device::destroyStream(void *) {}
bool Device::synchronize(void *, std::string &) { return true; }

bool Device::parallelFor(int32_t kernelId, kiln_abi_kernel_fn, void *, int64_t, int64_t, int64_t, std::string &error) {
  error = "generated code called parallel_for (kernel " + std::to_string(kernelId) + "), which device '" + name() +
          "' does not run";
  return false;
}

bool Device::launch(void *, int32_t id, const int64_t *, const int64_t *, int32_t, void **, std::string &error) {
  error = "generated code launched device kernel " + std::to_string(id) + ", which device '" + name() +
          "' does not run";
  return false;
}

bool Device::copyOnDevice(void *, void *, const void *, size_t, std::string &error) {
  error = "device '" + std::string(name()) + "' has no device-to-device copies";
  return false;
}

Device::GemmResult Device::gemm(void *, const kiln_abi_gemm &, const kiln_abi_epilogue *, void *, uint64_t,
                                std::string &) {
  return GemmResult::Declined;
}

bool Device::beginCapture(void *, std::string &error) {
  error = "this device has no graphs";
  return false;
}
void *Device::endCapture(void *, std::string &error) {
  error = "this device has no graphs";
  return nullptr;
}
bool Device::launchGraph(void *, void *, std::string &error) {
  error = "this device has no graphs";
  return false;
}
void Device::destroyGraph(void *) {}
std::vector<int32_t> Device::kernelParamSizes(int32_t) const { return {}; }
void *Device::lastCapturedNode(void *) { return nullptr; }
bool Device::setGraphKernel(void *, void *, int32_t, const int64_t *, const int64_t *, int32_t, void **,
                            std::string &error) {
  error = "this device cannot set a graph's kernels";
  return false;
}

void *Device::createEvent(std::string &error) {
  error = std::string("device '") + name() + "' has no timing events";
  return nullptr;
}
void Device::destroyEvent(void *) {}
bool Device::record(void *, void *, std::string &error) {
  error = std::string("device '") + name() + "' has no timing events";
  return false;
}
double Device::elapsedMs(void *, void *) { return 0; }

std::unique_ptr<Device> createDevice(const artifact::Metadata &meta, int32_t threads, std::string &error) {
  if (meta.cuda.present) {
    std::unique_ptr<Device> device = CudaDevice::create(meta.cuda, meta.kernels, error);
    if (!device)
      error = "was compiled for CUDA (" + meta.cuda.arch + "): " + error;
    return device;
  }
  return createCpuDevice(threads);
}

} // namespace kiln::runtime
