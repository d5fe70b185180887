// The small interface every execution device implements (CPU thread pool now; CUDA can slot in later).
#ifndef KILN_RUNTIME_DEVICE_H
#define KILN_RUNTIME_DEVICE_H

#include "kiln/abi.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace kiln::runtime {

// Kept deliberately small, in the spirit of a per-backend function table: what the generated
// host code needs from a device. A CUDA device would add copies and streams as optional methods.
class Device {
public:
  virtual ~Device() = default;
  virtual const char *name() const = 0;
  // Threads (or streams) the device runs work on; informational.
  virtual int32_t concurrency() const = 0;
  // Memory the device's kernels can address; `alignment` is a power of two.
  virtual void *allocate(size_t bytes, size_t alignment) = 0;
  virtual void deallocate(void *ptr) = 0;
  // Runs fn(captures, b, e) over disjoint ranges covering [0, count); returns when all are done.
  // Safe to call concurrently from several threads and from inside a running kernel.
  virtual void parallelFor(int32_t kernelId, kiln_abi_kernel_fn fn, void *captures, int64_t count) = 0;
};

// A CPU device running kernels on `threads` threads (the caller included); 0 = all usable cores.
std::unique_ptr<Device> createCpuDevice(int32_t threads);

// Cores this process may run on (its CPU affinity), at least 1.
int32_t availableCores();

} // namespace kiln::runtime

#endif
