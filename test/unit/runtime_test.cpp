// The runtime through its C API: loading and refusing artifacts, signature queries, validation, runs, concurrency.
#include "device.h"
#include "host_check.h"
#include "kiln/kiln.h"
#include "kiln/kiln.hpp"
#include "test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

using kiln::test::TempDir;

namespace {

// The message of the error `fn` returns (and frees it); "" on success.
std::string messageOf(kiln_error *e) {
  if (!e)
    return "";
  std::string m = kiln_error_message(e);
  kiln_error_free(e);
  return m;
}

std::string loadError(const std::string &path, kiln_error_code *code = nullptr) {
  kiln_model *m = nullptr;
  kiln_error *e = kiln_model_load(path.c_str(), nullptr, &m);
  EXPECT_EQ(m, nullptr);
  if (code && e)
    *code = kiln_error_get_code(e);
  return messageOf(e);
}

std::vector<float> input(int64_t batch, float seed) {
  std::vector<float> x(size_t(batch) * 4);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = seed + float(i);
  return x;
}

void expectAdded(const std::vector<float> &x, const kiln::Tensor &y) {
  ASSERT_EQ(y.elementCount(), int64_t(x.size()));
  const float *out = y.data<float>();
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(out[i], x[i] + kiln::test::kAddWeight[i % 4]) << i;
}

} // namespace

TEST(Runtime, LoadsAndDescribesSignature) {
  TempDir dir;
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln"), 3);
  auto inputs = model.inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].name, "x");
  EXPECT_EQ(inputs[0].dtype, KILN_DTYPE_FLOAT32);
  EXPECT_EQ(inputs[0].dims, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(inputs[0].symbols, (std::vector<std::string>{"batch", ""}));
  auto outputs = model.outputs();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].name, "y");

  kiln_model_metadata md = model.metadata();
  EXPECT_EQ(md.format_version, 1u);
  EXPECT_EQ(md.abi_version, unsigned(KILN_ABI_VERSION));
  EXPECT_STREQ(md.compiler_version, "kiln-test 0.0");
  EXPECT_STREQ(md.producer, "unit-test 1.0");
  EXPECT_EQ(md.opset_version, 17);
  EXPECT_STREQ(md.target_triple, "x86_64-unknown-linux-gnu");
  ASSERT_EQ(md.cpu_feature_count, 1u);
  EXPECT_STREQ(md.cpu_features[0], "sse2");
  EXPECT_EQ(md.weight_count, 1u);
  EXPECT_EQ(md.weights_bytes, 16u);
  EXPECT_GT(md.code_bytes, 0u);
  EXPECT_EQ(md.kernel_count, 1u);
  EXPECT_EQ(md.num_threads, 3);
  EXPECT_STREQ(kiln_model_kernel_name(model.get(), 0), "add_rows");
  EXPECT_EQ(kiln_model_kernel_name(model.get(), 1), nullptr);

  kiln_tensor_info info;
  EXPECT_NE(messageOf(kiln_model_input_info(model.get(), 5, &info)).find("out of range"), std::string::npos);
}

// kiln_session_run_into writes each output into the caller's tensor; what does not fit is refused
// with the output's name, before the run (dtype, GPU memory on a CPU model, no tensor) or after it
// (the shape, once the symbolic dims are known), and the destination is left as it was.
TEST(Runtime, RunIntoWritesTheOutputsIntoCallerTensors) {
  TempDir dir;
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln"), 1);
  kiln::Session session(model);
  auto x = input(3, 0.25f);
  kiln::Tensor in = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, {3, 4}, x);
  std::vector<float> y(12, -1.0f);
  kiln::Tensor out = kiln::Tensor::wrap(KILN_DTYPE_FLOAT32, {3, 4}, y.data(), y.size() * 4);
  session.runInto({&in}, {&out});
  EXPECT_EQ(kiln_tensor_data(out.get()), y.data()) << "the caller's memory stays the tensor's";
  expectAdded(x, out);

  auto errorOf = [&](kiln_tensor *dest) {
    const kiln_tensor *inputs[] = {in.get()};
    kiln_error *e = kiln_session_run_into(session.get(), inputs, 1, &dest, 1);
    std::string message = e ? kiln_error_message(e) : "";
    if (e)
      EXPECT_EQ(kiln_error_get_code(e), KILN_ERROR_INVALID_ARGUMENT);
    kiln_error_free(e);
    return message;
  };
  std::vector<float> other(16, -1.0f);
  kiln::Tensor wrongShape = kiln::Tensor::wrap(KILN_DTYPE_FLOAT32, {4, 4}, other.data(), other.size() * 4);
  EXPECT_EQ(errorOf(wrongShape.get()), "output 'y' is [3, 4]; the tensor given for it is [4, 4]");
  EXPECT_EQ(other[0], -1.0f);
  std::vector<int32_t> ints(12);
  kiln::Tensor wrongType = kiln::Tensor::wrap(KILN_DTYPE_INT32, {3, 4}, ints.data(), ints.size() * 4);
  EXPECT_EQ(errorOf(wrongType.get()), "output 'y' is float32; the tensor given for it is int32");
  kiln_tensor *device = nullptr;
  const int64_t shape[] = {3, 4};
  ASSERT_EQ(kiln_tensor_wrap_device(KILN_DTYPE_FLOAT32, shape, 2, y.data(), y.size() * 4, &device), nullptr);
  EXPECT_EQ(errorOf(device), "the tensor given for output 'y' is in GPU memory, but the model was compiled for the CPU");
  kiln_tensor_destroy(device);
  EXPECT_EQ(errorOf(nullptr), "kiln_session_run_into: no tensor for output 'y'");
  // Still serving.
  std::fill(y.begin(), y.end(), 0.0f);
  session.runInto({&in}, {&out});
  expectAdded(x, out);
}

// Device tensors are for CUDA models: a CPU model refuses to make one. A host tensor's host copy
// is a copy.
TEST(Runtime, DeviceTensorsNeedACudaModel) {
  TempDir dir;
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln"), 1);
  const int64_t shape[] = {2};
  float data[2] = {1, 2};
  kiln_tensor *t = nullptr;
  kiln_error *e = kiln_tensor_create_device(model.get(), KILN_DTYPE_FLOAT32, shape, 1, data, 8, &t);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(kiln_error_get_code(e), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(kiln_error_message(e),
               "kiln_tensor_create_device: the model runs on the CPU; device tensors are for --target=cuda models");
  EXPECT_EQ(t, nullptr);
  kiln_error_free(e);
  kiln::Tensor host = kiln::Tensor::wrap(KILN_DTYPE_FLOAT32, {2}, data, 8);
  kiln::Tensor copy = host.toHost();
  EXPECT_NE(copy.data<float>(), data);
  EXPECT_EQ(copy.data<float>()[1], 2.0f);
}

// ABI 9 only appended `gemm_epilogue` to the context: code of ABI 8 still runs, unrecompiled.
TEST(Runtime, RunsArtifactsOfTheOldestAbiItSupports) {
  TempDir dir;
  auto meta = kiln::test::addWeightMetadata();
  meta.abiVersion = KILN_ABI_MIN_VERSION;
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "v8.kiln", meta), 1);
  EXPECT_EQ(model.metadata().abi_version, unsigned(KILN_ABI_MIN_VERSION));
  kiln::Session session(model);
  auto x = input(3, 0.5f);
  kiln::Tensor in = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, {3, 4}, x);
  std::vector<kiln::Tensor> out = session.run(std::vector<const kiln::Tensor *>{&in});
  ASSERT_EQ(out.size(), 1u);
  expectAdded(x, out[0]);
}

TEST(Runtime, RunsCorrectly) {
  TempDir dir;
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln"), 4);
  kiln::Session session(model);
  for (int64_t batch : {1, 3, 17, 1000, 0}) {
    auto x = input(batch, 0.25f);
    kiln::Tensor in = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, {batch, 4}, x);
    std::vector<kiln::Tensor> out = session.run(std::vector<const kiln::Tensor *>{&in});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype(), KILN_DTYPE_FLOAT32);
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{batch, 4}));
    expectAdded(x, out[0]);
  }
}

TEST(Runtime, ProfilesEachKernelLaunch) {
  TempDir dir;
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln"), 2);
  kiln::Session session(model);
  auto x = input(64, 0.5f);
  kiln::Tensor in = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, {64, 4}, x);
  session.run(std::vector<const kiln::Tensor *>{&in});
  EXPECT_TRUE(session.profile().empty()) << "profiling is off by default";

  session.setProfiling(true);
  session.run(std::vector<const kiln::Tensor *>{&in});
  std::vector<kiln_profile_event> events = session.profile();
  ASSERT_EQ(events.size(), 1u); // the fixture launches one kernel per run
  EXPECT_EQ(events[0].kernel_id, 0);
  EXPECT_EQ(events[0].work_items, 64);
  EXPECT_EQ(events[0].flops, 64 * 4) << "the fixture passes one add per element";
  EXPECT_EQ(events[0].bytes, (64 * 4 + 4 + 64 * 4) * 4) << "the fixture passes x, w and y once";
  EXPECT_GE(events[0].start_us, 0.0);
  EXPECT_GE(events[0].duration_us, 0.0);
  EXPECT_STREQ(kiln_model_kernel_nodes(model.get(), 5), nullptr);

  session.setProfiling(false);
  session.run(std::vector<const kiln::Tensor *>{&in});
  EXPECT_TRUE(session.profile().empty());
}

TEST(Runtime, WrappedInputsAndOutputsOutliveTheModel) {
  TempDir dir;
  auto x = input(5, 1.0f);
  kiln::Tensor y;
  {
    kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln"), 2);
    kiln::Session session(model);
    kiln::Tensor in = kiln::Tensor::wrap(KILN_DTYPE_FLOAT32, {5, 4}, x.data(), x.size() * 4);
    EXPECT_EQ(in.data<float>(), x.data()); // no copy
    y = std::move(session.run(std::vector<const kiln::Tensor *>{&in})[0]);
  }
  expectAdded(x, y);
}

TEST(Runtime, SessionKeepsModelAlive) {
  TempDir dir;
  kiln_model *model = nullptr;
  ASSERT_EQ(messageOf(kiln_model_load(kiln::test::writeAddWeightArtifact(dir, "m.kiln").c_str(), nullptr, &model)),
            "");
  kiln_session *session = nullptr;
  ASSERT_EQ(messageOf(kiln_session_create(model, &session)), "");
  kiln_model_destroy(model);
  auto x = input(2, 3.0f);
  const int64_t shape[] = {2, 4};
  kiln_tensor *in = nullptr;
  ASSERT_EQ(messageOf(kiln_tensor_create_copy(KILN_DTYPE_FLOAT32, shape, 2, x.data(), 32, &in)), "");
  kiln_tensor *out = nullptr;
  ASSERT_EQ(messageOf(kiln_session_run(session, &in, 1, &out, 1)), "");
  kiln_session_destroy(session);
  const float *y = static_cast<const float *>(kiln_tensor_data_const(out));
  EXPECT_EQ(y[7], x[7] + kiln::test::kAddWeight[3]);
  kiln_tensor_destroy(out);
  kiln_tensor_destroy(in);
}

TEST(Runtime, ValidationErrorsNameTheInput) {
  TempDir dir;
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln"), 1);
  kiln::Session session(model);
  auto expectError = [&](const std::vector<const kiln::Tensor *> &in, const std::string &message) {
    try {
      session.run(in);
      ADD_FAILURE() << "expected: " << message;
    } catch (const kiln::Error &e) {
      EXPECT_EQ(e.what(), message);
      EXPECT_EQ(e.code(), KILN_ERROR_INVALID_ARGUMENT);
    }
  };
  std::vector<int64_t> ints(8);
  kiln::Tensor i64 = kiln::Tensor::fromVector(KILN_DTYPE_INT64, {2, 4}, ints);
  kiln::Tensor rank3 = kiln::Tensor::copy(KILN_DTYPE_FLOAT32, {2, 4, 1}, nullptr, 32);
  kiln::Tensor dim5 = kiln::Tensor::copy(KILN_DTYPE_FLOAT32, {2, 5}, nullptr, 40);
  kiln::Tensor good = kiln::Tensor::copy(KILN_DTYPE_FLOAT32, {2, 4}, nullptr, 32);
  expectError({}, "expected 1 input (x), got 0");
  expectError({&good, &good}, "expected 1 input (x), got 2");
  expectError({nullptr}, "input 'x' is NULL");
  expectError({&i64}, "input 'x': expected dtype float32, got int64");
  expectError({&rank3}, "input 'x': expected rank 2, got 3");
  expectError({&dim5}, "input 'x' dim 1: expected 4, got 5");
  EXPECT_NO_THROW(session.run({&good}));

  // Output slot count is checked too.
  const kiln_tensor *in = good.get();
  kiln_tensor *out[2] = {};
  EXPECT_EQ(messageOf(kiln_session_run(session.get(), &in, 1, out, 2)), "expected 1 output slots, got 2");
  EXPECT_EQ(messageOf(kiln_session_run(nullptr, &in, 1, out, 1)), "kiln_session_run: session is NULL");
}

TEST(Runtime, SymbolicDimsMustAgreeAcrossInputs) {
  TempDir dir;
  auto meta = kiln::test::addWeightMetadata();
  meta.inputs = {{"a", 1, {{-1, "batch"}, {4, ""}}}, {"b", 1, {{-1, "batch"}, {-1, ""}}}};
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln", meta), 1);
  kiln::Session session(model);
  kiln::Tensor a = kiln::Tensor::copy(KILN_DTYPE_FLOAT32, {7, 4}, nullptr, 7 * 16);
  kiln::Tensor b = kiln::Tensor::copy(KILN_DTYPE_FLOAT32, {3, 9}, nullptr, 3 * 36);
  try {
    session.run({&a, &b});
    ADD_FAILURE();
  } catch (const kiln::Error &e) {
    EXPECT_STREQ(e.what(), "input 'b' dim 0 ('batch'): 3 conflicts with 7 from input 'a'");
  }
}

TEST(Runtime, TensorCreationChecksItsArguments) {
  const int64_t negative[] = {2, -1};
  const int64_t shape[] = {2, 3};
  kiln_tensor *t = nullptr;
  EXPECT_EQ(messageOf(kiln_tensor_create_copy(KILN_DTYPE_FLOAT32, negative, 2, nullptr, 0, &t)),
            "kiln_tensor_create_copy: dim 1 is negative (-1)");
  EXPECT_EQ(messageOf(kiln_tensor_create_copy(KILN_DTYPE_FLOAT32, shape, 2, nullptr, 20, &t)),
            "kiln_tensor_create_copy: data_bytes is 20, shape and dtype need 24");
  EXPECT_EQ(messageOf(kiln_tensor_wrap(KILN_DTYPE_INT8, shape, 2, nullptr, 6, &t)), "kiln_tensor_wrap: data is NULL");
  EXPECT_EQ(messageOf(kiln_tensor_create_copy(kiln_dtype(14), shape, 2, nullptr, 6, &t)),
            "kiln_tensor_create_copy: unsupported dtype 14");
  // Codes beyond the enum's listed values (found by fuzz_request: undefined behaviour, reported by
  // UBSan, before kiln_dtype had a 32-bit range).
  EXPECT_EQ(messageOf(kiln_tensor_wrap(kiln_dtype(176), shape, 2, nullptr, 0, &t)),
            "kiln_tensor_wrap: unsupported dtype 176");
  EXPECT_EQ(messageOf(kiln_tensor_create_copy(kiln_dtype(-5), shape, 2, nullptr, 0, &t)),
            "kiln_tensor_create_copy: unsupported dtype -5");
  EXPECT_EQ(t, nullptr);
  ASSERT_EQ(messageOf(kiln_tensor_create_copy(KILN_DTYPE_INT16, shape, 2, nullptr, 12, &t)), "");
  EXPECT_EQ(kiln_tensor_element_count(t), 6);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kiln_tensor_data(t)) % 64, 0u);
  kiln_tensor_destroy(t);
}

TEST(Runtime, RefusesArtifactsItCannotRun) {
  TempDir dir;
  kiln_error_code code{};
  EXPECT_NE(loadError(dir.file("missing.kiln"), &code).find("cannot open"), std::string::npos);
  EXPECT_EQ(code, KILN_ERROR_IO);

  kiln::test::writeFile(dir.file("junk.kiln"), "hello world, not an artifact");
  EXPECT_EQ(loadError(dir.file("junk.kiln"), &code), "'" + dir.file("junk.kiln") + "': not a kiln artifact (bad magic)");
  EXPECT_EQ(code, KILN_ERROR_INVALID_ARTIFACT);

  std::string bytes = kiln::test::readFile(kiln::test::writeAddWeightArtifact(dir, "v2.kiln"));
  bytes[8] = 2;
  kiln::test::writeFile(dir.file("v2.kiln"), bytes);
  EXPECT_NE(loadError(dir.file("v2.kiln")).find("artifact format version 2; this runtime reads 1"), std::string::npos);

  auto meta = kiln::test::addWeightMetadata();
  const std::string supported = "this runtime supports " + std::to_string(KILN_ABI_MIN_VERSION) + " to " +
                                std::to_string(KILN_ABI_VERSION);
  meta.abiVersion = KILN_ABI_VERSION + 1;
  EXPECT_NE(loadError(kiln::test::writeAddWeightArtifact(dir, "abi.kiln", meta), &code)
                .find("artifact ABI version " + std::to_string(KILN_ABI_VERSION + 1) + "; " + supported),
            std::string::npos);
  EXPECT_EQ(code, KILN_ERROR_INCOMPATIBLE);
  meta.abiVersion = KILN_ABI_MIN_VERSION - 1;
  EXPECT_NE(loadError(kiln::test::writeAddWeightArtifact(dir, "abi_old.kiln", meta), &code)
                .find("artifact ABI version " + std::to_string(KILN_ABI_MIN_VERSION - 1) + "; " + supported),
            std::string::npos);
  EXPECT_EQ(code, KILN_ERROR_INCOMPATIBLE);

  meta = kiln::test::addWeightMetadata();
  meta.targetTriple = "aarch64-unknown-linux-gnu";
  EXPECT_NE(loadError(kiln::test::writeAddWeightArtifact(dir, "arm.kiln", meta))
                .find("artifact targets 'aarch64-unknown-linux-gnu' (aarch64); this host is x86_64"),
            std::string::npos);

  meta = kiln::test::addWeightMetadata();
  meta.cpuFeatures = {"sse2", "+warp-drive"};
  EXPECT_NE(loadError(kiln::test::writeAddWeightArtifact(dir, "feat.kiln", meta))
                .find("needs CPU feature '+warp-drive', which this runtime does not know how to check"),
            std::string::npos);

  meta = kiln::test::addWeightMetadata();
  meta.entrySymbol = "not_there";
  EXPECT_NE(loadError(kiln::test::writeAddWeightArtifact(dir, "sym.kiln", meta))
                .find("does not export entry symbol 'not_there'"),
            std::string::npos);

  meta = kiln::test::addWeightMetadata();
  EXPECT_NE(loadError(kiln::test::writeAddWeightArtifact(dir, "elf.kiln", meta, "not an elf file at all, sorry"))
                .find("code section is not an x86-64 ELF64 shared object"),
            std::string::npos);
}

TEST(Runtime, RefusesCpuFeaturesTheHostLacks) {
  std::string lacking;
  for (const std::string &f : kiln::runtime::knownCpuFeatures())
    if (kiln::runtime::hostHasCpuFeature(f) == 0) {
      lacking = f;
      break;
    }
  if (lacking.empty())
    GTEST_SKIP() << "this host has every CPU feature the runtime knows";
  TempDir dir;
  auto meta = kiln::test::addWeightMetadata();
  meta.cpuFeatures = {"sse2", lacking};
  EXPECT_NE(loadError(kiln::test::writeAddWeightArtifact(dir, "m.kiln", meta))
                .find("needs CPU features this host lacks: " + lacking),
            std::string::npos);
}

TEST(Runtime, ManyModelsLoadedTogetherAndInTurn) {
  TempDir dir;
  const std::string path = kiln::test::writeAddWeightArtifact(dir, "m.kiln");
  std::vector<kiln::Model> models;
  for (int i = 0; i < 4; ++i)
    models.push_back(kiln::Model::load(path, 1));
  for (int round = 0; round < 10; ++round) {
    models.erase(models.begin());
    models.push_back(kiln::Model::load(path, 2));
    for (auto &m : models) {
      kiln::Session s(m);
      auto x = input(3, float(round));
      kiln::Tensor in = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, {3, 4}, x);
      expectAdded(x, s.run(std::vector<const kiln::Tensor *>{&in})[0]);
    }
  }
}

TEST(Runtime, ConcurrentSessionsShareOnePool) {
  TempDir dir;
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln"), 4);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      kiln::Session session(model);
      for (int iter = 0; iter < 100; ++iter) {
        const int64_t batch = 1 + (t * 37 + iter * 11) % 300;
        auto x = input(batch, float(t * 1000 + iter));
        kiln::Tensor in = kiln::Tensor::fromVector(KILN_DTYPE_FLOAT32, {batch, 4}, x);
        auto out = session.run(std::vector<const kiln::Tensor *>{&in});
        const float *y = out[0].data<float>();
        for (size_t i = 0; i < x.size(); ++i)
          if (y[i] != x[i] + kiln::test::kAddWeight[i % 4]) {
            ++failures;
            break;
          }
      }
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Runtime, DefaultsToAllCores) {
  TempDir dir;
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln"));
  EXPECT_EQ(model.metadata().num_threads, kiln::runtime::availableCores());
}

TEST(Runtime, OutputsBreakingTheSignatureAreReportedAndFreed) {
  TempDir dir;
  auto meta = kiln::test::addWeightMetadata();
  meta.outputs[0].dims[1].size = 5; // the fixture returns [batch, 4]
  kiln::Model model = kiln::Model::load(kiln::test::writeAddWeightArtifact(dir, "m.kiln", meta), 2);
  kiln::Session session(model);
  kiln::Tensor in = kiln::Tensor::copy(KILN_DTYPE_FLOAT32, {3, 4}, nullptr, 48);
  try {
    session.run({&in});
    ADD_FAILURE();
  } catch (const kiln::Error &e) {
    EXPECT_STREQ(e.what(), "generated code returned output 'y' with dim 1 = 4, signature says 5");
    EXPECT_EQ(e.code(), KILN_ERROR_INTERNAL);
  }
}
