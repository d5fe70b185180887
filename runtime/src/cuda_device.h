// The CUDA device: NVIDIA's driver API loaded at run time with dlopen (no link-time CUDA dependency),
// one context per process (the device's primary context), the artifact's module, device memory, launches.
#ifndef KILN_RUNTIME_CUDA_DEVICE_H
#define KILN_RUNTIME_CUDA_DEVICE_H

#include "format/artifact_format.h"
#include "cuda_blas.h"
#include "device.h"

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::runtime {

struct CudaDriver;      // the resolved driver entry points (cuda_device.cpp)
struct CudaDeviceState; // per process and device ordinal: the models using it, whether a fault broke it

// A launch parameter of a kernel as the artifact's table describes it (artifact::CudaInfo::kernelParams).
struct KernelParam {
  bool memref = false;  // a memref descriptor: 3 + 2 * rank launch parameters
  int32_t rank = 0;
  int32_t bytes = 0;    // element size of a memref, or the scalar's size
};

// Parses one kernel's entry ("m2:4 s8 m1:2"); false on a malformed entry.
bool parseKernelParams(const std::string &entry, std::vector<KernelParam> &params);

// CUDA errors that leave the context unusable ("any further CUDA work will return the same error",
// cuda.h): a kernel's illegal address, misaligned access, illegal instruction, trap, assert, timeout,
// hardware error, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_UNKNOWN and the like.
bool isStickyCudaError(int result);

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

  // Device memory (cuMemAlloc aligns to 256 bytes at least); null on failure, with the driver's
  // reason in allocationFailure() unless it was out of memory. Safe from any thread.
  void *allocate(size_t bytes, size_t alignment) override;
  std::string allocationFailure() const override;
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
  // With KILN_CUDA_CHECK_POINTERS=1 every memref argument is checked against the live device
  // allocations first (checkLaunchPointers); with KILN_CUDA_SYNC=1 the stream is synchronized after
  // the launch, so a faulting kernel is named exactly.
  bool launch(void *stream, int32_t id, const int64_t grid[3], const int64_t block[3], int32_t sharedBytes,
              void **params, std::string &error) override;
  // Each memref argument of kernel `id` (per the artifact's parameter table) spans device memory
  // inside one live allocation, and its allocated pointer is a device address; false with the
  // argument, its address and the kernel's ONNX nodes in `error`. True when the table is empty.
  bool checkLaunchPointers(int32_t id, void **params, std::string &error);
  // The operands of a product (A, B, C over all their batches, and the epilogue's source and bias)
  // each lie inside one live allocation.
  bool checkGemmPointers(const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue, std::string &error);
  bool checkingPointers() const { return checkPointers_; }
  // "kernel main_kernel_3 (ONNX nodes: /conv1/Conv, /Relu)".
  std::string describeKernel(int32_t id) const;

  // Enqueues one matrix product of the generated code on `stream` with cuBLASLt, loaded on the
  // first call. Declined (nothing enqueued) without the library or for a product it cannot take.
  // cuMemcpyDtoDAsync on the stream, then a wait for the stream.
  bool copyOnDevice(void *stream, void *to, const void *from, size_t bytes, std::string &error) override;
  GemmResult gemm(void *stream, const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue, void *workspace,
                  uint64_t workspaceBytes, std::string &error) override;
  uint64_t gemmWorkspaceBytes() const override { return CudaBlas::kWorkspaceBytes; }
  // What serves the products: "cuBLASLt 130100 (libcublasLt.so.13)", or why kiln's own kernels do.
  std::string blasDescription();

  // Timing events (the profiler): recorded on a stream, compared once the stream has finished.
  bool timesOnDevice() const override { return true; }
  void *createEvent(std::string &error) override;
  void destroyEvent(void *event) override;
  bool record(void *event, void *stream, std::string &error) override;
  double elapsedMs(void *from, void *to) override;

  // CUDA graphs by stream capture (CU_STREAM_CAPTURE_MODE_RELAXED: the pool may cuMemAlloc during
  // a capture, which the other modes refuse; the runtime itself makes no synchronizing call then).
  // While a thread captures, other threads' copies, clears, synchronizations and frees wait
  // (they would touch the legacy stream, which a blocking stream's capture forbids).
  bool capturesGraphs() const override { return graphs_; }
  bool beginCapture(void *stream, std::string &error) override;
  void *endCapture(void *stream, std::string &error) override;
  bool launchGraph(void *graph, void *stream, std::string &error) override;
  void destroyGraph(void *graph) override;
  // Decode steps' graphs: the parameter table's sizes, the node of the last captured launch
  // (cuStreamGetCaptureInfo), a kernel node set anew (cuGraphExecKernelNodeSetParams).
  bool setsGraphKernels() const override { return setsGraphKernels_ && !kernelParams_.empty(); }
  std::vector<int32_t> kernelParamSizes(int32_t id) const override;
  void *lastCapturedNode(void *stream) override;
  bool setGraphKernel(void *graph, void *node, int32_t id, const int64_t grid[3], const int64_t block[3],
                      int32_t sharedBytes, void **params, std::string &error) override;

private:
  CudaDevice() = default;
  // False with "<what> failed: <driver's text> (CUDA error N)" in `error`. A sticky error marks the
  // device's context broken and names the work that was last enqueued (where the fault happened,
  // launches being asynchronous) unless `nameLast` is false (the caller knows the culprit).
  bool check(int result, const char *what, std::string &error, bool nameLast = true) const;
  // Makes the context current; false when an earlier fault broke it (unless `evenIfBroken`:
  // releasing memory and handles is still done).
  bool makeCurrent(std::string &error, bool evenIfBroken = false) const;
  void markBroken(const std::string &error) const;
  std::string lastWork() const;
  // The byte range [begin, end) lies inside one live allocation; false with why in `error`
  // (`what` names the argument).
  bool checkRange(uint64_t begin, uint64_t end, const std::string &what, std::string &error) const;

  std::unique_ptr<CudaDriver> driver_;
  CudaDeviceState *state_ = nullptr; // never freed: shared by every CudaDevice of the ordinal
  bool retained_ = false;            // counted in state_->users
  int device_ = 0;
  bool checkSpans_ = true;     // KILN_CUDA_CHECK_POINTERS=addresses checks where buffers start only
  bool checkPointers_ = false; // KILN_CUDA_CHECK_POINTERS=1 and the artifact has the parameter table
  bool syncEachLaunch_ = false; // KILN_CUDA_SYNC=1
  bool graphs_ = false;         // the driver has graphs, no debug mode, KILN_CUDA_GRAPHS is not 0
  bool setsGraphKernels_ = false; // graphs_, and the driver can name captured nodes and set them
  std::vector<std::string> kernelNames_, kernelNodes_;
  std::vector<std::vector<KernelParam>> kernelParams_;
  // What was enqueued last: a kernel's index, kLastGemm, or -1 for nothing yet.
  static constexpr int32_t kLastGemm = -2;
  static constexpr int32_t kLastGraph = -3;
  mutable std::atomic<int32_t> lastWork_{-1};
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
