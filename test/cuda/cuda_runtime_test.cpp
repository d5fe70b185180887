// The runtime's CUDA device on machines without a GPU: a missing driver or device is a clear error,
// and with the mock driver (mock_cuda_driver.c) a --target=cuda artifact loads, picks its cubin or
// PTX, uploads weights and inputs, launches every kernel with its parameters and returns its
// outputs, leaking no device memory. The kernels' results need a GPU (bench/gpu-check.sh).
#include "kiln/kiln.h"
#include "mock_cuda_driver.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace {

using MockStats = kiln_mock_cuda_stats_t;

// The mock's counters. The test holds its own reference to the mock, so the runtime's dlopen gets
// the same instance and the counters outlive each model.
MockStats *mockStats() {
  static void *lib = dlopen(KILN_MOCK_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return nullptr;
  auto fn = reinterpret_cast<kiln_mock_cuda_stats_fn>(dlsym(lib, "kiln_mock_cuda_stats"));
  return fn ? fn() : nullptr;
}

MockStats *resetMock() {
  MockStats *st = mockStats();
  if (st)
    *st = MockStats{};
  return st;
}

std::string loadError(const char *artifact) {
  kiln_model *m = nullptr;
  kiln_error *e = kiln_model_load(artifact, nullptr, &m);
  if (!e) {
    kiln_model_destroy(m);
    return "";
  }
  std::string msg = kiln_error_message(e);
  EXPECT_EQ(kiln_error_get_code(e), KILN_ERROR_INCOMPATIBLE) << msg;
  kiln_error_free(e);
  return msg;
}

TEST(CudaRuntime, NoDriverIsAClearError) {
  setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  std::string msg = loadError(KILN_CUDA_SOFTMAX_SM90);
  EXPECT_NE(msg.find("compiled for CUDA (sm_90): no CUDA driver"), std::string::npos) << msg;
}

TEST(CudaRuntime, NoDeviceIsAClearError) {
  setenv("KILN_CUDA_DRIVER", KILN_MOCK_CUDA_DRIVER, 1);
  setenv("KILN_MOCK_CUDA_DEVICES", "0", 1);
  std::string msg = loadError(KILN_CUDA_SOFTMAX_SM90);
  unsetenv("KILN_MOCK_CUDA_DEVICES");
  EXPECT_NE(msg.find("no CUDA device"), std::string::npos) << msg;
}

// Runs the softmax artifact (input x[3,4,5]) once; returns the output's shape.
std::vector<int64_t> runSoftmax(const char *artifact, std::string *error) {
  kiln_model *m = nullptr;
  if (kiln_error *e = kiln_model_load(artifact, nullptr, &m)) {
    *error = kiln_error_message(e);
    kiln_error_free(e);
    return {};
  }
  kiln_session *s = nullptr;
  EXPECT_EQ(kiln_session_create(m, &s), nullptr);
  std::vector<float> x(60, 1.0f);
  const int64_t shape[] = {3, 4, 5};
  kiln_tensor *in = nullptr, *out = nullptr;
  EXPECT_EQ(kiln_tensor_wrap(KILN_DTYPE_FLOAT32, shape, 3, x.data(), x.size() * 4, &in), nullptr);
  std::vector<int64_t> dims;
  if (kiln_error *e = kiln_session_run(s, &in, 1, &out, 1)) {
    *error = kiln_error_message(e);
    kiln_error_free(e);
  } else {
    const int64_t *d = kiln_tensor_shape(out);
    dims.assign(d, d + kiln_tensor_rank(out));
    kiln_tensor_destroy(out);
  }
  kiln_tensor_destroy(in);
  kiln_session_destroy(s);
  kiln_model_destroy(m);
  return dims;
}

TEST(CudaRuntime, MockDriverRunsTheHostProgram) {
  setenv("KILN_CUDA_DRIVER", KILN_MOCK_CUDA_DRIVER, 1);
  setenv("KILN_MOCK_CUDA_CC", "90", 1);
  MockStats *st = mockStats();
  ASSERT_NE(st, nullptr);
  kiln_model *m = nullptr;
  ASSERT_EQ(kiln_model_load(KILN_CUDA_SOFTMAX_SM90, nullptr, &m), nullptr);
  kiln_model_metadata md{};
  kiln_model_get_metadata(m, &md);
  const size_t kernels = md.kernel_count; // read before the model goes
  kiln_model_destroy(m);
  resetMock();
  std::string error;
  std::vector<int64_t> dims = runSoftmax(KILN_CUDA_SOFTMAX_SM90, &error);
  ASSERT_EQ(dims, (std::vector<int64_t>{3, 4, 5})) << error;
  // One launch per kernel of the table (softmax: max, exp-sum, normalize and their inits), each
  // with a function, parameters and a valid grid; the input went up, the output came back.
  EXPECT_EQ(st->launches, int64_t(kernels));
  EXPECT_GT(kernels, 0u);
  EXPECT_EQ(st->bad_launches, 0);
  EXPECT_GE(st->bytes_to_device, 60 * 4);
  EXPECT_EQ(st->bytes_to_host, 60 * 4);
  EXPECT_EQ(st->live_allocations, 0) << "device memory leaked";
  EXPECT_EQ(st->contexts, 0) << "primary context not released";
}

TEST(CudaRuntime, OlderArchitectureLoadsThePtx) {
  // An sm_80 artifact on an sm_90 device: its cubin cannot run there, the PTX is JIT-compiled.
  setenv("KILN_CUDA_DRIVER", KILN_MOCK_CUDA_DRIVER, 1);
  setenv("KILN_MOCK_CUDA_CC", "90", 1);
  MockStats *st = resetMock();
  ASSERT_NE(st, nullptr);
  st->module_is_cubin = -1;
  std::string error;
  EXPECT_EQ(runSoftmax(KILN_CUDA_SOFTMAX_SM80, &error), (std::vector<int64_t>{3, 4, 5})) << error;
  EXPECT_EQ(st->module_is_cubin, 0);
}

TEST(CudaRuntime, DecodingOnCudaIsRefused) {
  setenv("KILN_CUDA_DRIVER", KILN_MOCK_CUDA_DRIVER, 1);
  kiln_model *m = nullptr;
  ASSERT_EQ(kiln_model_load(KILN_CUDA_SOFTMAX_SM90, nullptr, &m), nullptr);
  kiln_generator *g = nullptr;
  kiln_error *e = kiln_generator_create(m, nullptr, &g);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(std::string(kiln_error_message(e)).find("not supported yet"), std::string::npos);
  kiln_error_free(e);
  kiln_model_destroy(m);
}

} // namespace
