// The CPU device: host memory and a thread pool behind the Device interface.
#include "device.h"
#include "host_gemm.h"
#include "thread_pool.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <mutex>
#include <sched.h>
#include <thread>

namespace kiln::runtime {

int32_t availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? int32_t(n) : 1;
}

namespace {

class CpuDevice final : public Device {
public:
  explicit CpuDevice(int32_t threads) : pool(threads) {}
  const char *name() const override { return "cpu"; }
  int32_t concurrency() const override { return pool.threads(); }
  bool hostMemory() const override { return true; }
  void *allocate(size_t bytes, size_t alignment) override {
    if (alignment < sizeof(void *))
      alignment = sizeof(void *);
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    return std::aligned_alloc(alignment, rounded ? rounded : alignment);
  }
  void deallocate(void *ptr) override { std::free(ptr); }
  // "Device" memory is host memory: only code compiled with --target=cuda-emulated (the CUDA
  // pipeline's kernels run on the CPU) copies between the two.
  bool upload(void *device, const void *host, size_t bytes, std::string &) override {
    if (bytes > 0)
      std::memcpy(device, host, bytes);
    return true;
  }
  bool download(void *host, const void *device, size_t bytes, std::string &) override {
    if (bytes > 0)
      std::memcpy(host, device, bytes);
    return true;
  }
  bool zero(void *device, size_t bytes, std::string &) override {
    if (bytes > 0)
      std::memset(device, 0, bytes);
    return true;
  }
  // A launch the compiler estimates at a few microseconds of work (up to 256 KiB moved and
  // 1 MFLOP, about 5-10 us on one core) runs on the calling thread: handing it to the pool costs
  // about as much as the work and moves its data to the other core's cache (two threads were
  // slower than one on small decoders, and on shufflenet's many small shuffles and concats with
  // a 64 KiB / 128 KFLOP limit). 0 means the compiler could not estimate; such launches go to
  // the pool.
  bool parallelFor(int32_t, kiln_abi_kernel_fn fn, void *captures, int64_t count, int64_t flops, int64_t bytes,
                   std::string &) override {
    constexpr int64_t kSmallBytes = 256 << 10, kSmallFlops = 1 << 20;
    if (count <= 0) // e.g. the attention's combination of key splits when there is one split
      return true;
    if (bytes <= 0 || bytes > kSmallBytes || flops > kSmallFlops)
      pool.parallelFor(fn, captures, count);
    else if (count > 0)
      fn(captures, 0, count);
    return true;
  }
  // The emulated CUDA code's matrix products, on the calling thread. KILN_HOST_GEMM=decline
  // declines them all, so the code's own kernels (its fallback when cuBLASLt is missing) run.
  GemmResult gemm(void *, const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue, void *, uint64_t,
                  std::string &) override {
    static const bool decline = [] {
      const char *v = std::getenv("KILN_HOST_GEMM");
      return v && std::strcmp(v, "decline") == 0;
    }();
    return decline || hostGemm(product, epilogue) != 0 ? GemmResult::Declined : GemmResult::Done;
  }

private:
  ThreadPool pool;
};

} // namespace

/// Generated code allocates its intermediates with malloc on every run (until
/// memory planning gives it one arena). glibc serves large blocks with fresh
/// mmaps and trims freed heap back to the OS, so each run would page-fault
/// its buffers in again (a third of the time of a small CNN; half of a
/// 512-token prefill, whose ~425 MB of freed buffers a 256 MiB threshold
/// trimmed after every run). Keeping up to 64 MiB blocks on the heap and
/// trimming only above 2 GiB lets runs reuse warm memory. Set KILN_KEEP_MALLOC_DEFAULTS=1 to leave the process's malloc
/// settings alone.
static void tuneMallocForRepeatedRuns() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("KILN_KEEP_MALLOC_DEFAULTS"))
      return;
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
  });
}

std::unique_ptr<Device> createCpuDevice(int32_t threads) {
  tuneMallocForRepeatedRuns();
  if (threads <= 0)
    threads = availableCores();
  return std::make_unique<CpuDevice>(threads);
}

} // namespace kiln::runtime
