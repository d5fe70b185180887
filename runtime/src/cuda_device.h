// The CUDA device: NVIDIA's driver API loaded at run time with dlopen (no link-time CUDA dependency),
// one context per process (the device's primary context), the artifact's module, device memory, launches.
#ifndef KILN_RUNTIME_CUDA_DEVICE_H
#define KILN_RUNTIME_CUDA_DEVICE_H

#include "format/artifact_format.h"
#include "cuda_blas.h"
#include "device.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::runtime {

struct CudaDriver; // the resolved driver entry points (cuda_device.cpp)

class CudaDevice final : public Device {
public:
  // Loads the driver ("libcuda.so.1", or $KILN_CUDA_DRIVER), picks device $KILN_CUDA_DEVICE (default
  // 0), retains its primary context and loads the artifact's module: the cubin when it was assembled
  // for this device's architecture, else the PTX (JIT-compiled by the driver), then resolves each
  // kernel by name. On failure returns null with the reason in `error` ("no CUDA driver", "no CUDA
  // device", a PTX newer than the driver, a kernel missing from the module).
  static std::unique_ptr<CudaDevice> create(const artifact::CudaInfo &info,
                                            const std::vector<artifact::KernelInfo> &kernels, std::string &error);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  const char *name() const override { return name_.c_str(); } // "NVIDIA H200 (sm_90)"
  // The host program of a CUDA artifact only computes sizes and launches: one host thread.
  int32_t concurrency() const override { return 1; }
  bool hostMemory() const override { return false; }

  // Device memory (cuMemAlloc aligns to 256 bytes at least); null on failure. Safe from any thread.
  void *allocate(size_t bytes, size_t alignment) override;
  void deallocate(void *ptr) override;
  // Synchronous copies; false with the driver's message in `error`.
  bool upload(void *device, const void *host, size_t bytes, std::string &error) override;
  bool download(void *host, const void *device, size_t bytes, std::string &error) override;
  bool zero(void *device, size_t bytes, std::string &error) override;

  // A stream per session, so sessions on several threads run independently.
  bool createStream(void **stream, std::string &error) override;
  void destroyStream(void *stream) override;
  bool synchronize(void *stream, std::string &error) override;

  // The host program must not run kernels on host threads: a CUDA artifact that does is broken.
  bool parallelFor(int32_t kernelId, kiln_abi_kernel_fn, void *, int64_t, int64_t, int64_t,
                   std::string &error) override;
  bool launch(void *stream, int32_t id, const int64_t grid[3], const int64_t block[3], int32_t sharedBytes,
              void **params, std::string &error) override;

  // Enqueues one matrix product of the generated code on `stream` with cuBLASLt, loaded on the
  // first call. Declined (nothing enqueued) without the library or for a product it cannot take.
  GemmResult gemm(void *stream, const kiln_abi_gemm &product, void *workspace, uint64_t workspaceBytes,
                  std::string &error) override;
  uint64_t gemmWorkspaceBytes() const override { return CudaBlas::kWorkspaceBytes; }
  // What serves the products: "cuBLASLt 130100 (libcublasLt.so.13)", or why kiln's own kernels do.
  std::string blasDescription();

  // Timing events (the profiler): recorded on a stream, compared once the stream has finished.
  bool timesOnDevice() const override { return true; }
  void *createEvent(std::string &error) override;
  void destroyEvent(void *event) override;
  bool record(void *event, void *stream, std::string &error) override;
  double elapsedMs(void *from, void *to) override;

private:
  CudaDevice() = default;
  bool check(int result, const char *what, std::string &error) const;
  bool makeCurrent(std::string &error) const;

  std::unique_ptr<CudaDriver> driver_;
  int device_ = 0;
  void *context_ = nullptr;
  void *module_ = nullptr;
  std::vector<void *> functions_;
  std::string name_;
  std::once_flag blasLoaded_;
  std::unique_ptr<CudaBlas> blas_;
  std::string blasWhy_; // why blas_ is null
};

} // namespace kiln::runtime

#endif
