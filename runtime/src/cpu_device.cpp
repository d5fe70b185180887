// The CPU device: host memory and a thread pool behind the Device interface.
#include "device.h"
#include "thread_pool.h"

#include <cstdlib>
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
  void *allocate(size_t bytes, size_t alignment) override {
    if (alignment < sizeof(void *))
      alignment = sizeof(void *);
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    return std::aligned_alloc(alignment, rounded ? rounded : alignment);
  }
  void deallocate(void *ptr) override { std::free(ptr); }
  void parallelFor(int32_t, kiln_abi_kernel_fn fn, void *captures, int64_t count) override {
    pool.parallelFor(fn, captures, count);
  }

private:
  ThreadPool pool;
};

} // namespace

/// Generated code allocates its intermediates with malloc on every run (until
/// memory planning gives it one arena). glibc serves large blocks with fresh
/// mmaps and trims freed heap back to the OS, so each run would page-fault
/// its buffers in again (a third of the time of a small CNN). Keeping up to
/// 64 MiB blocks on the heap and trimming only above 256 MiB lets runs reuse
/// warm memory. Set KILN_KEEP_MALLOC_DEFAULTS=1 to leave the process's malloc
/// settings alone.
static void tuneMallocForRepeatedRuns() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("KILN_KEEP_MALLOC_DEFAULTS"))
      return;
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  });
}

std::unique_ptr<Device> createCpuDevice(int32_t threads) {
  tuneMallocForRepeatedRuns();
  if (threads <= 0)
    threads = availableCores();
  return std::make_unique<CpuDevice>(threads);
}

} // namespace kiln::runtime
