// The runtime's device layer: the one interface the CPU and CUDA devices implement (docs/runtime.md).
#ifndef KILN_RUNTIME_DEVICE_H
#define KILN_RUNTIME_DEVICE_H

#include "kiln/abi.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::artifact {
struct Metadata;
}

namespace kiln::runtime {

// What the session, the generator and the ABI context (device_queue.cpp) need from a device, as a
// table of virtual functions. Entries marked optional have a default that says "not supported";
// a device overrides those it has. Every entry is safe to call from several threads, each with its
// own stream. Failures return false (or null) with the reason in `error`, never throw.
class Device {
public:
  virtual ~Device() = default;
  virtual const char *name() const = 0; // "cpu", "NVIDIA H200 (sm_90)"
  // Threads (or streams) the device runs work on; informational (kiln_model_metadata.num_threads).
  virtual int32_t concurrency() const = 0;
  // True when the device's kernels address host memory: a request's tensors are used in place and
  // the outputs the code allocates (with malloc, per the ABI) become the caller's tensors. False:
  // inputs are copied to device memory, outputs copied back, and the context's device_* entries are
  // set (abi.h).
  virtual bool hostMemory() const = 0;

  // Memory the kernels address; `alignment` is a power of two. Null when out of memory.
  virtual void *allocate(size_t bytes, size_t alignment) = 0;
  virtual void deallocate(void *ptr) = 0;
  // Why this thread's last allocate failed when it was not for want of memory (a GPU whose context a
  // fault broke); "" when it was out of memory, so callers report out of memory only then.
  virtual std::string allocationFailure() const { return {}; }
  // Synchronous copies between host memory and the device's, and clearing device memory.
  virtual bool upload(void *device, const void *host, size_t bytes, std::string &error) = 0;
  virtual bool download(void *host, const void *device, size_t bytes, std::string &error) = 0;
  virtual bool zero(void *device, size_t bytes, std::string &error) = 0;
  // A copy between two buffers of device memory on `stream`, finished when it returns (optional:
  // devices whose kernels address host memory never need it).
  virtual bool copyOnDevice(void *stream, void *to, const void *from, size_t bytes, std::string &error);

  // Streams: the work of one session, run in order. A device without streams (the CPU runs work
  // as it is issued) keeps the defaults: a null stream, and synchronize returns at once.
  virtual bool createStream(void **stream, std::string &error);
  virtual void destroyStream(void *stream);
  virtual bool synchronize(void *stream, std::string &error);

  // Host-code kernels (optional: devices that run the code's work items on host threads). Runs
  // fn(captures, b, e) over disjoint ranges covering [0, count) and returns when all are done;
  // `flops` and `bytes` are the compiler's estimate of the launch (0: unknown; abi.h). Safe to call
  // concurrently from several threads and from inside a running kernel.
  virtual bool parallelFor(int32_t kernelId, kiln_abi_kernel_fn fn, void *captures, int64_t count, int64_t flops,
                           int64_t bytes, std::string &error);
  // Module kernels (optional: devices that load the artifact's device code). Enqueues kernel `id`
  // (an index into the artifact's kernel table) on `stream`; does not wait.
  virtual bool launch(void *stream, int32_t id, const int64_t grid[3], const int64_t block[3], int32_t sharedBytes,
                      void **params, std::string &error);

  // Matrix products of the generated code (optional). Declined: nothing was done, the code's own
  // kernels compute it. `workspace` is gemmWorkspaceBytes() of scratch (or null, then 0 bytes).
  // `epilogue` (null: none) is the bias, residual and activation done with the product.
  enum class GemmResult { Done, Declined, Failed };
  virtual GemmResult gemm(void *stream, const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue,
                          void *workspace, uint64_t workspaceBytes, std::string &error);
  virtual uint64_t gemmWorkspaceBytes() const { return 0; }

  // Timing events recorded on a stream (optional: without them the profiler times launches with
  // the host's clock around each call, which is right only for devices that run work as it is issued).
  virtual bool timesOnDevice() const { return false; }
  virtual void *createEvent(std::string &error);
  virtual void destroyEvent(void *event);
  virtual bool record(void *event, void *stream, std::string &error);
  virtual double elapsedMs(void *from, void *to); // 0 when either has not completed

  // Graphs (optional): the work enqueued on a stream between beginCapture and endCapture is
  // recorded, not run, and becomes one executable graph that launchGraph replays on a stream with
  // the same addresses and parameters. capturesGraphs() is false when the device has none, or a
  // debug mode or KILN_CUDA_GRAPHS=0 wants every run eager. While a capture is open the caller
  // must not copy, clear or synchronize (they would not be recorded).
  virtual bool capturesGraphs() const { return false; }
  virtual bool beginCapture(void *stream, std::string &error);
  // Ends the capture opened on `stream` (always call it after a successful beginCapture) and
  // instantiates the graph; null with the reason when the capture was invalidated or failed.
  virtual void *endCapture(void *stream, std::string &error);
  virtual bool launchGraph(void *graph, void *stream, std::string &error);
  virtual void destroyGraph(void *graph);

  // Graphs whose kernels are set again between launches (a decoder's steps: step_graph.h), all
  // optional. The size in bytes of each of kernel `id`'s launch parameters, in order (empty when
  // the artifact does not describe them); while a capture is open on `stream`, the graph node of
  // the kernel launched on it last (null when the device cannot say); and setting such a node of
  // an executable graph (from endCapture) to new dimensions and parameters for its later launches.
  virtual bool setsGraphKernels() const { return false; }
  virtual std::vector<int32_t> kernelParamSizes(int32_t id) const;
  virtual void *lastCapturedNode(void *stream);
  virtual bool setGraphKernel(void *graph, void *node, int32_t id, const int64_t grid[3], const int64_t block[3],
                              int32_t sharedBytes, void **params, std::string &error);
};

// A CPU device running kernels on `threads` threads (the caller included); 0 = all usable cores.
std::unique_ptr<Device> createCpuDevice(int32_t threads);

// The device an artifact's code runs on: CUDA for --target=cuda artifacts, else the CPU (with
// `threads` threads). Null with the reason ("was compiled for CUDA (sm_90): no CUDA driver ...") when
// it cannot be had here. A new device is a new file (its class and a create function) plus one line
// in this function (devices.cpp).
std::unique_ptr<Device> createDevice(const artifact::Metadata &meta, int32_t threads, std::string &error);

// Cores this process may run on (its CPU affinity), at least 1.
int32_t availableCores();

} // namespace kiln::runtime

#endif
