// The CPU device: host memory and a thread pool behind the Device interface.
#include "device.h"
#include "thread_pool.h"

#include <cstdlib>
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

std::unique_ptr<Device> createCpuDevice(int32_t threads) {
  if (threads <= 0)
    threads = availableCores();
  return std::make_unique<CpuDevice>(threads);
}

} // namespace kiln::runtime
