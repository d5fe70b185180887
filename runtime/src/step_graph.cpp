// Recording a decode step's work and setting a graph's kernels to a later step's (step_graph.h).
#include "step_graph.h"

#include "device.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace kiln::runtime {

namespace {

// The bytes of a launch's parameters, one after the other; false when the device cannot say how
// many there are or how large each is (an artifact without the parameter table).
bool paramBytes(StepRun &step, int32_t kernel, void **params, std::vector<char> &out) {
  auto &sizes = step.recorded->paramSizes;
  if (kernel < 0)
    return false;
  if (size_t(kernel) >= sizes.size())
    sizes.resize(size_t(kernel) + 1);
  std::vector<int32_t> &mine = sizes[size_t(kernel)];
  if (mine.empty())
    mine = step.device->kernelParamSizes(kernel);
  if (mine.empty())
    return false;
  size_t total = 0;
  for (int32_t b : mine)
    total += size_t(b);
  out.resize(total);
  size_t at = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    std::memcpy(out.data() + at, params[i], size_t(mine[i]));
    at += size_t(mine[i]);
  }
  return true;
}

void productBytes(const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue, std::vector<char> &out) {
  // Every field of both is 8 bytes (abi.h): no padding to compare. The batch entries past
  // batch_rank, and a missing bias's type and stride, are whatever the caller's stack held (they
  // differed step after step in the sanitizer build): they are cleared first.
  kiln_abi_gemm p = product;
  const int64_t rank = std::clamp<int64_t>(p.batch_rank, 0, KILN_ABI_GEMM_MAX_BATCH);
  for (int64_t i = rank; i < KILN_ABI_GEMM_MAX_BATCH; ++i)
    p.batch[i] = p.a_stride_batch[i] = p.b_stride_batch[i] = p.c_stride_batch[i] = 0;
  out.resize(sizeof p + (epilogue ? sizeof *epilogue : 0));
  std::memcpy(out.data(), &p, sizeof p);
  if (epilogue) {
    kiln_abi_epilogue e = *epilogue;
    if (!e.bias)
      e.bias_type = e.bias_stride = 0;
    std::memcpy(out.data() + sizeof p, &e, sizeof e);
  }
}

bool sameDims(const StepWork &w, const int64_t grid[3], const int64_t block[3], int32_t sharedBytes) {
  return w.sharedBytes == sharedBytes && std::memcmp(w.grid, grid, sizeof w.grid) == 0 &&
         std::memcmp(w.block, block, sizeof w.block) == 0;
}

void setDims(StepWork &w, const int64_t grid[3], const int64_t block[3], int32_t sharedBytes) {
  std::memcpy(w.grid, grid, sizeof w.grid);
  std::memcpy(w.block, block, sizeof w.block);
  w.sharedBytes = sharedBytes;
}

} // namespace

void stepLaunch(StepRun &step, void *stream, int32_t kernel, const int64_t grid[3], const int64_t block[3],
                int32_t sharedBytes, void **params) {
  if (step.mode == StepRun::Mode::Capture) {
    StepWork w;
    w.kernel = kernel;
    setDims(w, grid, block, sharedBytes);
    w.node = step.device->lastCapturedNode(stream);
    if (!w.node || !paramBytes(step, kernel, params, w.bytes))
      step.untracked = true;
    step.recorded->work.push_back(std::move(w));
    return;
  }
  if (step.differs)
    return;
  auto &work = step.recorded->work;
  if (step.next >= work.size() || work[step.next].kernel != kernel) {
    step.differs = true;
    return;
  }
  StepWork &w = work[step.next++];
  std::vector<char> &bytes = step.recorded->scratch;
  if (!paramBytes(step, kernel, params, bytes)) {
    step.differs = true;
    return;
  }
  if (bytes == w.bytes && sameDims(w, grid, block, sharedBytes))
    return;
  // The node takes the new values now; should a later piece of work differ, the graph is captured
  // again and this one goes.
  std::string error;
  if (!step.device->setGraphKernel(step.graph, w.node, kernel, grid, block, sharedBytes, params, error)) {
    step.differs = true;
    return;
  }
  w.bytes.swap(bytes); // both keep their capacity
  setDims(w, grid, block, sharedBytes);
  ++step.nodesSet;
}

void stepRecordProduct(StepRun &step, const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue,
                       int32_t declined) {
  StepWork w;
  productBytes(product, epilogue, w.bytes);
  w.declined = declined;
  step.recorded->work.push_back(std::move(w));
}

int32_t stepCompareProduct(StepRun &step, const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue) {
  auto &work = step.recorded->work;
  if (step.differs || step.next >= work.size() || work[step.next].kernel != -1) {
    step.differs = true;
    return 1;
  }
  std::vector<char> &bytes = step.recorded->scratch;
  productBytes(product, epilogue, bytes);
  const StepWork &w = work[step.next++];
  if (bytes != w.bytes) {
    step.differs = true;
    return 1;
  }
  return w.declined;
}

bool stepMatched(const StepRun &step) { return !step.differs && step.next == step.recorded->work.size(); }

} // namespace kiln::runtime
