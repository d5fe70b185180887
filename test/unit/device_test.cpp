// The device layer: the CPU device's entries, the defaults of optional ones, and the ABI context a Queue builds.
#include "device.h"
#include "device_queue.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using kiln::runtime::Device;
using kiln::runtime::Queue;
using kiln::runtime::RunState;

namespace {

// A device that keeps its memory apart from the host's (as a GPU does), and has none of the
// optional entries: what a new device gets before it fills them in.
class SeparateMemoryDevice final : public Device {
public:
  const char *name() const override { return "test-device"; }
  int32_t concurrency() const override { return 1; }
  bool hostMemory() const override { return false; }
  void *allocate(size_t bytes, size_t) override {
    ++allocations;
    return std::malloc(bytes ? bytes : 1);
  }
  void deallocate(void *ptr) override {
    if (ptr)
      ++deallocations;
    std::free(ptr);
  }
  bool upload(void *device, const void *host, size_t bytes, std::string &) override {
    std::memcpy(device, host, bytes);
    return true;
  }
  bool download(void *host, const void *device, size_t bytes, std::string &) override {
    if (failDownloads)
      return false;
    std::memcpy(host, device, bytes);
    return true;
  }
  bool zero(void *device, size_t bytes, std::string &) override {
    std::memset(device, 0, bytes);
    return true;
  }
  int allocations = 0, deallocations = 0;
  bool failDownloads = false;
};

void addOne(void *captures, int64_t begin, int64_t end) {
  auto *v = static_cast<std::vector<int> *>(captures);
  for (int64_t i = begin; i < end; ++i)
    ++(*v)[size_t(i)];
}

} // namespace

TEST(CpuDevice, CopiesAndClearsHostMemory) {
  auto device = kiln::runtime::createCpuDevice(2);
  EXPECT_TRUE(device->hostMemory());
  std::string error;
  void *p = device->allocate(16, 64);
  ASSERT_NE(p, nullptr);
  const char text[16] = "fifteen letters";
  char back[16] = {};
  EXPECT_TRUE(device->upload(p, text, sizeof text, error));
  EXPECT_TRUE(device->download(back, p, sizeof back, error));
  EXPECT_STREQ(back, text);
  EXPECT_TRUE(device->zero(p, sizeof text, error));
  EXPECT_TRUE(device->download(back, p, sizeof back, error));
  EXPECT_EQ(back[0], 0);
  device->deallocate(p);
}

TEST(CpuDevice, ComputesProductsAndHasNoModuleKernelsOrEvents) {
  auto device = kiln::runtime::createCpuDevice(1);
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {};
  kiln_abi_gemm g{};
  g.a = a, g.b = b, g.c = c;
  g.a_type = g.b_type = g.c_type = 1;
  g.m = g.n = g.k = 2;
  g.a_stride_m = 2, g.a_stride_k = 1, g.b_stride_k = 2, g.b_stride_n = 1, g.c_stride_m = 2, g.c_stride_n = 1;
  g.alpha = 1;
  std::string error;
  ASSERT_EQ(device->gemm(nullptr, g, nullptr, nullptr, 0, error), Device::GemmResult::Done);
  EXPECT_EQ(c[0], 19);
  EXPECT_EQ(c[3], 50);
  // With an epilogue: C = max(A B + S + bias, 0), S another buffer.
  float s[4] = {1, -100, 0, 0}, bias[2] = {-20, 1};
  kiln_abi_epilogue e{s, bias, 1, 1, 1};
  g.beta = 1;
  ASSERT_EQ(device->gemm(nullptr, g, &e, nullptr, 0, error), Device::GemmResult::Done);
  EXPECT_EQ(c[0], 0);  // 19 + 1 - 20
  EXPECT_EQ(c[1], 0);  // 22 - 100 + 1 < 0
  EXPECT_EQ(c[2], 23); // 43 + 0 - 20
  EXPECT_EQ(c[3], 51); // 50 + 0 + 1
  const int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  EXPECT_FALSE(device->launch(nullptr, 0, grid, block, 0, nullptr, error));
  EXPECT_NE(error.find("does not run"), std::string::npos) << error;
  EXPECT_FALSE(device->timesOnDevice());
  EXPECT_EQ(device->createEvent(error), nullptr);
  void *stream = &error;
  EXPECT_TRUE(device->createStream(&stream, error));
  EXPECT_EQ(stream, nullptr) << "the CPU runs work as it is issued: no stream";
  EXPECT_TRUE(device->synchronize(stream, error));
}

TEST(DeviceQueue, HostMemoryContextHasNoDeviceAllocationsOrLaunches) {
  auto device = kiln::runtime::createCpuDevice(2);
  Queue queue(*device);
  std::string error;
  ASSERT_TRUE(queue.open(error)) << error;
  RunState run;
  std::vector<kiln_profile_event> profile;
  run.profile = &profile;
  kiln_abi_context ctx = queue.begin(run);
  EXPECT_EQ(ctx.runtime, &run);
  EXPECT_EQ(ctx.gpu_launch, nullptr);
  EXPECT_EQ(ctx.device_alloc, nullptr);
  EXPECT_EQ(ctx.device_free, nullptr);
  ASSERT_NE(ctx.device_read, nullptr);
  ASSERT_NE(ctx.gemm, nullptr);

  // The arena: 64-byte aligned, kept while requests fit, grown when they do not.
  void *w = ctx.workspace(ctx.runtime, 100);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w) % 64, 0u);
  EXPECT_EQ(ctx.workspace(ctx.runtime, 50), w);
  EXPECT_NE(ctx.workspace(ctx.runtime, 0), nullptr) << "an empty plan still gets a valid pointer";
  EXPECT_NE(ctx.workspace(ctx.runtime, 1 << 20), nullptr);
  EXPECT_EQ(ctx.workspace(ctx.runtime, int64_t(1) << 50), nullptr) << "past any machine's memory";
  EXPECT_EQ(run.workspaceFailed, int64_t(1) << 50);

  std::vector<int> hits(1000);
  ctx.parallel_for(ctx.runtime, 3, addOne, &hits, int64_t(hits.size()), 0, 0);
  for (int h : hits)
    ASSERT_EQ(h, 1);
  EXPECT_TRUE(run.error.empty()) << run.error;

  int64_t from = 42, to = 0;
  ctx.device_read(ctx.runtime, &to, &from, sizeof to);
  EXPECT_EQ(to, 42);
}

TEST(DeviceQueue, HostClockProfilesHostKernels) {
  auto device = kiln::runtime::createCpuDevice(1);
  Queue queue(*device);
  std::string error;
  ASSERT_TRUE(queue.open(error));
  RunState run;
  std::vector<kiln_profile_event> profile;
  run.profile = &profile;
  run.profiling = true;
  kiln_abi_context ctx = queue.begin(run);
  EXPECT_FALSE(run.deviceTimed);
  std::vector<int> hits(10);
  ctx.parallel_for(ctx.runtime, 7, addOne, &hits, 10, 123, 456);
  ASSERT_EQ(profile.size(), 1u);
  EXPECT_EQ(profile[0].kernel_id, 7);
  EXPECT_EQ(profile[0].flops, 123);
  EXPECT_EQ(profile[0].bytes, 456);
}

TEST(DeviceQueue, SeparateMemoryContextStagesThroughTheDevice) {
  SeparateMemoryDevice device;
  {
    Queue queue(device);
    std::string error;
    ASSERT_TRUE(queue.open(error));
    RunState run;
    std::vector<kiln_profile_event> profile;
    run.profile = &profile;
    kiln_abi_context ctx = queue.begin(run);
    ASSERT_NE(ctx.gpu_launch, nullptr);
    ASSERT_NE(ctx.device_alloc, nullptr);
    ASSERT_NE(ctx.device_free, nullptr);

    // Buffers come from the queue's cache: a freed block serves the next request of its size.
    void *a = ctx.device_alloc(ctx.runtime, 1000);
    ASSERT_NE(a, nullptr);
    ctx.device_free(ctx.runtime, a);
    EXPECT_EQ(ctx.device_alloc(ctx.runtime, 900), a);
    EXPECT_EQ(ctx.device_alloc(ctx.runtime, -1), nullptr);

    // Optional entries the device lacks fail the run with a message, never crash.
    std::vector<int> hits(4);
    ctx.parallel_for(ctx.runtime, 5, addOne, &hits, 4, 0, 0);
    EXPECT_EQ(hits[0], 0);
    EXPECT_NE(run.error.find("parallel_for (kernel 5)"), std::string::npos) << run.error;
    EXPECT_NE(run.error.find("test-device"), std::string::npos) << run.error;
    // After a failure the rest of the run is skipped, and reads give zeros.
    int64_t from = 42, to = 7;
    ctx.device_read(ctx.runtime, &to, &from, sizeof to);
    EXPECT_EQ(to, 0);
    EXPECT_EQ(ctx.gemm(ctx.runtime, nullptr), 0) << "a failed run takes (and skips) every product";
  }
  EXPECT_EQ(device.allocations, device.deallocations) << "the queue gives back everything it took";
}

TEST(DeviceQueue, MissingLaunchesAndFailedReadsFailTheRun) {
  SeparateMemoryDevice device;
  Queue queue(device);
  std::string error;
  ASSERT_TRUE(queue.open(error));
  RunState run;
  std::vector<kiln_profile_event> profile;
  run.profile = &profile;
  kiln_abi_context ctx = queue.begin(run);
  ctx.gpu_launch(ctx.runtime, 2, 1, 1, 1, 32, 1, 1, 0, nullptr);
  EXPECT_NE(run.error.find("device kernel 2"), std::string::npos) << run.error;

  RunState second;
  second.profile = &profile;
  ctx = queue.begin(second);
  device.failDownloads = true;
  int64_t from = 42, to = 7;
  ctx.device_read(ctx.runtime, &to, &from, sizeof to);
  EXPECT_EQ(to, 0);
  EXPECT_NE(second.error.find("reading sizes back"), std::string::npos) << second.error;
}
