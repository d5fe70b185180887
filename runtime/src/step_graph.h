// A decoder's steps as CUDA graphs: one graph per shape class, its kernels set anew every step.
//
// A decode step's sizes change every step (the attention reads one more key), so a graph captured
// once cannot be replayed as it is, and capturing every step would cost what launching costs.
// Instead each step runs the host program without launching anything (Compare): every launch it
// would make is compared, in order, with the graph's kernel nodes, and a node whose dimensions or
// parameters differ is set to the new ones (cuGraphExecKernelNodeSetParams); then the graph is
// launched once. Matrix products go to cuBLASLt, whose kernels cannot be set from outside: a
// product must be the same as the captured one (operands at the same addresses, the same sizes),
// which the step region (Queue::beginStep) makes the rule. Any other difference (another kernel,
// another product, a wait for the GPU) and the step is captured again (Capture). docs/cuda.md.
#ifndef KILN_RUNTIME_STEP_GRAPH_H
#define KILN_RUNTIME_STEP_GRAPH_H

#include "kiln/abi.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::runtime {

class Device;

// One piece of work a step's host program issued: a kernel launch or a matrix product.
struct StepWork {
  int32_t kernel = -1; // the kernel's index; -1: a matrix product
  int64_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int32_t sharedBytes = 0;
  std::vector<char> bytes; // the launch's parameters one after the other; a product: its descriptor and epilogue
  int32_t declined = 0;    // a product: the device declined it (the code's kernels computed it)
  void *node = nullptr;    // a kernel's node in the graph
};

// A step graph's work, in the order the host program issued it.
struct StepGraphWork {
  std::vector<StepWork> work;
  std::vector<std::vector<int32_t>> paramSizes; // per kernel index, filled from the device on first use
  std::vector<char> scratch; // a step's parameters while compared: kept, so steps allocate nothing
};

// What a run does with the work it issues (RunState::step): Capture records each piece (the stream
// captures the launches themselves); Compare launches nothing and sets the graph's nodes that differ.
struct StepRun {
  enum class Mode { Capture, Compare } mode = Mode::Capture;
  Device *device = nullptr;
  void *graph = nullptr;         // Compare: the executable graph whose nodes are set
  StepGraphWork *recorded = nullptr;
  size_t next = 0;               // Compare: the next piece of recorded work
  bool differs = false;          // Compare: the run issued other work than the graph holds
  bool untracked = false;        // Capture: a launch's node could not be had (no step graphs then)
  size_t nodesSet = 0;           // Compare: kernel nodes set anew
};

// A kernel launch of a step run (on the stream first when capturing).
void stepLaunch(StepRun &step, void *stream, int32_t kernel, const int64_t grid[3], const int64_t block[3],
                int32_t sharedBytes, void **params);
// A matrix product of a step run: Capture records what the device answered (`declined`); Compare
// returns the recorded answer (1, declined, when it is not the recorded product).
void stepRecordProduct(StepRun &step, const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue,
                       int32_t declined);
int32_t stepCompareProduct(StepRun &step, const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue);
// Compare: the run issued all of the recorded work and nothing else.
bool stepMatched(const StepRun &step);

} // namespace kiln::runtime

#endif
