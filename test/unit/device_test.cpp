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

// A decoder step's buffers come from the step region: the same sizes in the same order get the
// same addresses step after step (a step graph's products need that), frees inside a step do
// nothing, a step that outgrows the region takes the rest from the pool and the next step gets a
// region that holds it; under a capture an allocation the region cannot hold fails instead.
TEST(DeviceQueue, StepRegionGivesTheSameAddressesStepAfterStep) {
  SeparateMemoryDevice device;
  {
    Queue queue(device);
    std::string error;
    ASSERT_TRUE(queue.open(error));
    auto step = [&](std::vector<size_t> sizes) {
      std::vector<void *> got;
      EXPECT_TRUE(queue.beginStep(error)) << error;
      for (size_t bytes : sizes) {
        got.push_back(queue.allocate(bytes));
        queue.release(got.back()); // does nothing to a region buffer: the next one is apart
      }
      queue.endStep();
      return got;
    };
    const std::vector<void *> first = step({1000, 300, 100}); // no region yet: the pool
    const std::vector<void *> second = step({1000, 300, 100});
    const std::vector<void *> third = step({1000, 300, 100});
    EXPECT_EQ(second, third);
    EXPECT_NE(second[0], second[1]);
    EXPECT_NE(second[1], second[2]);
    // Sizes round up as the pool's do (256 bytes at least, powers of two): one longer mask
    // (900 -> 1000 bytes) keeps every address.
    EXPECT_EQ(step({900, 300, 100}), second);
    // A step that needs more than the region: the rest from the pool, then a larger region.
    const std::vector<void *> big = step({1000, 300, 100, 1 << 20});
    ASSERT_NE(big[3], nullptr);
    const std::vector<void *> after = step({1000, 300, 100, 1 << 20});
    EXPECT_EQ(after, step({1000, 300, 100, 1 << 20})) << "the grown region serves the whole step";
    // Under a capture the pool is not used (it may give memory back to the driver): the
    // allocation fails and the capture is given up.
    ASSERT_TRUE(queue.beginStep(error));
    queue.setCapturing(true);
    EXPECT_NE(queue.allocate(1000), nullptr);
    EXPECT_EQ(queue.allocate(size_t(1) << 30), nullptr);
    queue.setCapturing(false);
    queue.endStep();
    (void)first;
  }
  EXPECT_EQ(device.allocations, device.deallocations) << "the region went with the queue";
}

namespace {

// A device whose graphs are a list of kernel nodes: what a step graph records and sets.
class GraphNodeDevice final : public Device {
public:
  const char *name() const override { return "graph-nodes"; }
  int32_t concurrency() const override { return 1; }
  bool hostMemory() const override { return false; }
  void *allocate(size_t bytes, size_t) override { return std::malloc(bytes ? bytes : 1); }
  void deallocate(void *ptr) override { std::free(ptr); }
  bool upload(void *, const void *, size_t, std::string &) override { return true; }
  bool download(void *, const void *, size_t, std::string &) override { return true; }
  bool zero(void *, size_t, std::string &) override { return true; }
  bool setsGraphKernels() const override { return true; }
  // Kernel 0 takes a memref of rank 1 (5 words) and a 4-byte scalar; kernel 1 one 8-byte scalar.
  std::vector<int32_t> kernelParamSizes(int32_t id) const override {
    return id == 0 ? std::vector<int32_t>{8, 8, 8, 8, 8, 4} : std::vector<int32_t>{8};
  }
  void *lastCapturedNode(void *) override { return &nodes[captured++]; }
  bool setGraphKernel(void *, void *node, int32_t id, const int64_t grid[3], const int64_t[3], int32_t,
                      void **params, std::string &) override {
    set.push_back({static_cast<int *>(node) - nodes, id, grid[0], *static_cast<int64_t *>(params[0])});
    return true;
  }
  struct Set {
    long node;
    int32_t kernel;
    int64_t grid, firstWord;
  };
  int nodes[16] = {};
  int captured = 0;
  std::vector<Set> set;
};

} // namespace

// Step graphs (step_graph.h): a captured step's launches and products are recorded in order with
// their nodes; a later step's launches set just the nodes whose grid or parameters changed, and
// another kernel or another product is a difference (the step is then captured again).
TEST(StepGraph, LaterStepsSetTheNodesThatChanged) {
  using kiln::runtime::StepGraphWork;
  using kiln::runtime::StepRun;
  GraphNodeDevice device;
  StepGraphWork work;
  int64_t words[5] = {100, 100, 0, 7, 1};
  int32_t scalar = 3;
  int64_t one = 1;
  void *params0[6] = {&words[0], &words[1], &words[2], &words[3], &words[4], &scalar};
  void *params1[1] = {&one};
  const int64_t grid[3] = {4, 1, 1}, block[3] = {256, 1, 1};
  float a[4], b[4], c[4];
  kiln_abi_gemm product{};
  product.a = a, product.b = b, product.c = c, product.m = product.n = product.k = 2;

  StepRun capture{StepRun::Mode::Capture, &device, nullptr, &work};
  kiln::runtime::stepLaunch(capture, nullptr, 0, grid, block, 0, params0);
  kiln::runtime::stepRecordProduct(capture, product, nullptr, 0);
  kiln::runtime::stepLaunch(capture, nullptr, 1, grid, block, 0, params1);
  ASSERT_FALSE(capture.untracked);
  ASSERT_EQ(work.work.size(), 3u);

  // The next step: the first kernel reads one more element (its size word), the rest is the same.
  words[3] = 8;
  StepRun compare{StepRun::Mode::Compare, &device, &work, &work};
  kiln::runtime::stepLaunch(compare, nullptr, 0, grid, block, 0, params0);
  EXPECT_EQ(kiln::runtime::stepCompareProduct(compare, product, nullptr), 0) << "the recorded answer: done";
  kiln::runtime::stepLaunch(compare, nullptr, 1, grid, block, 0, params1);
  EXPECT_TRUE(kiln::runtime::stepMatched(compare));
  ASSERT_EQ(device.set.size(), 1u) << "only the node whose parameters changed is set";
  EXPECT_EQ(device.set[0].node, 0);
  EXPECT_EQ(device.set[0].kernel, 0);
  EXPECT_EQ(device.set[0].firstWord, 100);
  EXPECT_EQ(compare.nodesSet, 1u);

  // A grid that changed sets the node too (the second kernel, node 1).
  const int64_t wider[3] = {5, 1, 1};
  StepRun grown{StepRun::Mode::Compare, &device, &work, &work};
  kiln::runtime::stepLaunch(grown, nullptr, 0, grid, block, 0, params0);
  kiln::runtime::stepCompareProduct(grown, product, nullptr);
  kiln::runtime::stepLaunch(grown, nullptr, 1, wider, block, 0, params1);
  EXPECT_TRUE(kiln::runtime::stepMatched(grown));
  ASSERT_EQ(device.set.size(), 2u);
  EXPECT_EQ(device.set[1].node, 1);
  EXPECT_EQ(device.set[1].grid, 5);

  // Batch entries past batch_rank are the caller's stack garbage: not a difference.
  product.a_stride_batch[3] = 12345;
  product.batch[1] = -7;
  StepRun garbage{StepRun::Mode::Compare, &device, &work, &work};
  kiln::runtime::stepLaunch(garbage, nullptr, 0, grid, block, 0, params0);
  EXPECT_EQ(kiln::runtime::stepCompareProduct(garbage, product, nullptr), 0);
  kiln::runtime::stepLaunch(garbage, nullptr, 1, wider, block, 0, params1);
  EXPECT_TRUE(kiln::runtime::stepMatched(garbage));

  // A product at another address: not the graph's (its kernels cannot be set), declined.
  float elsewhere[4];
  product.c = elsewhere;
  StepRun moved{StepRun::Mode::Compare, &device, &work, &work};
  kiln::runtime::stepLaunch(moved, nullptr, 0, grid, block, 0, params0);
  EXPECT_EQ(kiln::runtime::stepCompareProduct(moved, product, nullptr), 1);
  EXPECT_FALSE(kiln::runtime::stepMatched(moved));

  // Another kernel where the graph has the product, and a step that stops early.
  product.c = c;
  StepRun other{StepRun::Mode::Compare, &device, &work, &work};
  kiln::runtime::stepLaunch(other, nullptr, 0, grid, block, 0, params0);
  kiln::runtime::stepLaunch(other, nullptr, 1, grid, block, 0, params1);
  EXPECT_FALSE(kiln::runtime::stepMatched(other));
  StepRun shorter{StepRun::Mode::Compare, &device, &work, &work};
  kiln::runtime::stepLaunch(shorter, nullptr, 0, grid, block, 0, params0);
  EXPECT_FALSE(kiln::runtime::stepMatched(shorter));
}
