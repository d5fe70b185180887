// Decoding end to end: the tiny gpt2 and llama decoders (test/models/lm) compiled with kiln-compile
// and decoded with the generator API, against ONNX Runtime's greedy tokens and logits.
#include "generate/generator.h"
#include "generate/prompt_lookup.h"
#include "kiln/kiln.h"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

const std::string kModels = KILN_LM_MODELS;   // test/models/lm
const std::string kOut = KILN_DECODE_TEST_DIR; // artifacts go here

std::string artifactFor(const std::string &family) { return kOut + "/" + family + ".kiln"; }

struct Error {
  kiln_error *e;
  ~Error() { kiln_error_free(e); }
  explicit operator bool() const { return e != nullptr; }
  std::string message() const { return e ? kiln_error_message(e) : ""; }
  kiln_error_code code() const { return e ? kiln_error_get_code(e) : kiln_error_code(0); }
};

class Decoder {
public:
  explicit Decoder(const std::string &family, int64_t maxContext = 0) {
    kiln_model_options mo;
    kiln_model_options_init(&mo);
    mo.num_threads = 1;
    Error e{kiln_model_load(artifactFor(family).c_str(), &mo, &model)};
    if (e)
      ADD_FAILURE() << e.message();
    kiln_generator_options go;
    kiln_generator_options_init(&go);
    go.max_context = maxContext;
    Error g{kiln_generator_create(model, &go, &gen)};
    if (g)
      ADD_FAILURE() << g.message();
  }
  ~Decoder() {
    kiln_generator_destroy(gen);
    kiln_model_destroy(model);
  }
  kiln_model *model = nullptr;
  kiln_generator *gen = nullptr;
};

nlohmann::json readIndex(const std::string &family) {
  std::ifstream f(kModels + "/" + family + "/reference/index.json");
  return nlohmann::json::parse(f);
}

std::vector<float> readFloats(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

struct Prompts {
  std::vector<std::vector<int32_t>> ids;
  std::vector<const int32_t *> ptrs;
  std::vector<size_t> lens;
  void add(std::vector<int32_t> p) {
    ids.push_back(std::move(p));
    ptrs.clear();
    lens.clear();
    for (auto &x : ids) {
      ptrs.push_back(x.data());
      lens.push_back(x.size());
    }
  }
};

class DecodeTest : public ::testing::TestWithParam<std::string> {};

// Every reference run: tokens equal ORT's at every step, logits within tolerance at every step.
void checkAgainstOnnxRuntime(const std::string &family, const std::string &artifact) {
  nlohmann::json index = readIndex(family);
  const int vocab = index["vocab_size"];
  Decoder d(artifact);
  ASSERT_NE(d.gen, nullptr);
  ASSERT_EQ(kiln_generator_vocab_size(d.gen), vocab);
  for (const auto &run : index["runs"]) {
    SCOPED_TRACE(run["name"].get<std::string>());
    const size_t batch = run["batch"];
    Prompts p;
    for (const auto &prompt : run["prompts"])
      p.add(prompt.get<std::vector<int32_t>>());
    std::vector<float> ref = readFloats(kModels + "/" + family + "/reference/" + run["logits_file"].get<std::string>());
    const size_t steps = run["tokens"][0].size();
    ASSERT_EQ(ref.size(), steps * batch * vocab);
    kiln_sampling_params greedy;
    kiln_sampling_params_init(&greedy);
    Error e{kiln_generator_start(d.gen, p.ptrs.data(), p.lens.data(), batch, &greedy)};
    ASSERT_FALSE(e) << e.message();
    std::vector<int32_t> tokens(batch);
    double worst = 0;
    for (size_t s = 0; s < steps; ++s) {
      Error n{kiln_generator_next(d.gen, tokens.data())};
      ASSERT_FALSE(n) << n.message();
      const float *logits = kiln_generator_logits(d.gen);
      ASSERT_NE(logits, nullptr);
      for (size_t b = 0; b < batch; ++b) {
        ASSERT_EQ(tokens[b], run["tokens"][b][s].get<int32_t>()) << "step " << s << " row " << b;
        for (int v = 0; v < vocab; ++v) {
          float want = ref[(s * batch + b) * vocab + v], got = logits[b * vocab + v];
          double err = std::fabs(double(got) - want);
          worst = std::max(worst, err);
          ASSERT_LE(err, 1e-4 + 1e-3 * std::fabs(want)) << "step " << s << " row " << b << " id " << v;
        }
      }
    }
    ::testing::Test::RecordProperty(artifact + "_" + run["name"].get<std::string>() + "_max_abs_logit_error",
                                    std::to_string(worst));
  }
}

TEST_P(DecodeTest, GreedyTokensAndLogitsMatchOnnxRuntime) { checkAgainstOnnxRuntime(GetParam(), GetParam()); }

// The paged KV cache (kiln-compile --kv-block-size 16): ORT's greedy tokens and logits, in every
// reference run (batches of prompts of different lengths included).
TEST_P(DecodeTest, PagedCacheMatchesOnnxRuntime) {
  checkAgainstOnnxRuntime(GetParam(), GetParam() + "_paged16");
}

// A decode step writes the new entries into the generator's cache and leaves every cached entry
// where it was, bit for bit: nothing already there is copied.
TEST_P(DecodeTest, DecodeStepWritesOnlyNewCacheEntries) {
  Decoder d(GetParam(), 64);
  ASSERT_NE(d.gen, nullptr);
  Prompts p;
  p.add({5, 17, 300, 42, 99, 7, 256});
  Error e{kiln_generator_start(d.gen, p.ptrs.data(), p.lens.data(), 1, nullptr)};
  ASSERT_FALSE(e) << e.message();
  ASSERT_EQ(kiln_generator_position(d.gen), 7);
  int32_t token = 0;
  Error first{kiln_generator_next(d.gen, &token)}; // samples from the prompt's logits: no model run
  ASSERT_FALSE(first);
  ASSERT_FALSE(d.gen->caches.empty());
  for (int step = 0; step < 3; ++step) {
    const int64_t pos = kiln_generator_position(d.gen);
    std::vector<std::vector<float>> before;
    std::vector<const float *> where;
    for (const auto &c : d.gen->caches) {
      // CPU artifacts: the cache is host memory (the model's device memory).
      const float *data = static_cast<const float *>(c.data.get());
      before.emplace_back(data, data + c.elements);
      where.push_back(data);
    }
    Error n{kiln_generator_next(d.gen, &token)};
    ASSERT_FALSE(n) << n.message();
    ASSERT_EQ(kiln_generator_position(d.gen), pos + 1);
    for (size_t k = 0; k < d.gen->caches.size(); ++k) {
      const auto &c = d.gen->caches[k];
      const float *data = static_cast<const float *>(c.data.get());
      ASSERT_EQ(data, where[k]) << "the cache moved";
      // Shape [1, heads, capacity, head_dim], cache axis 2.
      ASSERT_EQ(c.axis, 2u);
      const int64_t heads = c.shape[1], cap = c.shape[2], dim = c.shape[3];
      size_t changedOld = 0, newWritten = 0, beyond = 0;
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t t = 0; t < cap; ++t)
          for (int64_t x = 0; x < dim; ++x) {
            size_t i = size_t((h * cap + t) * dim + x);
            if (t < pos)
              changedOld += std::memcmp(&data[i], &before[k][i], 4) != 0;
            else if (t == pos)
              newWritten += data[i] != 0.0f;
            else
              beyond += data[i] != 0.0f;
          }
      EXPECT_EQ(changedOld, 0u) << "cache " << k << " step " << step;
      EXPECT_GT(newWritten, size_t(heads * dim / 2)) << "cache " << k << " step " << step;
      EXPECT_EQ(beyond, 0u) << "cache " << k << " step " << step;
    }
  }
}

std::vector<int32_t> sampleRun(kiln_generator *gen, uint64_t seed) {
  kiln_generate_options o;
  kiln_generate_options_init(&o);
  o.sampling.temperature = 0.9f;
  o.sampling.top_k = 50;
  o.sampling.top_p = 0.95f;
  o.sampling.repetition_penalty = 1.1f;
  o.sampling.seed = seed;
  o.max_new_tokens = 32;
  Prompts p;
  p.add({72, 101, 108, 108, 111});
  kiln_generation *g = nullptr;
  Error e{kiln_generate(gen, p.ptrs.data(), p.lens.data(), 1, &o, &g)};
  EXPECT_FALSE(e) << e.message();
  size_t n = 0;
  const int32_t *t = kiln_generation_tokens(g, 0, &n);
  std::vector<int32_t> out(t, t + n);
  kiln_generation_destroy(g);
  return out;
}

TEST_P(DecodeTest, SeededSamplingIsReproducible) {
  Decoder d(GetParam());
  ASSERT_NE(d.gen, nullptr);
  std::vector<int32_t> a = sampleRun(d.gen, 7), b = sampleRun(d.gen, 7), c = sampleRun(d.gen, 8);
  ASSERT_EQ(a.size(), 32u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

struct CancelState {
  kiln_generator *gen;
  std::atomic<int> seen{0};
  std::atomic<bool> cancelled{false};
  std::vector<int32_t> streamed;
};

TEST_P(DecodeTest, CancelFromAnotherThreadStopsAfterTheCurrentStep) {
  Decoder d(GetParam());
  ASSERT_NE(d.gen, nullptr);
  CancelState st;
  st.gen = d.gen;
  std::thread canceller([&] {
    while (st.seen.load() < 5)
      std::this_thread::yield();
    kiln_generator_cancel(st.gen);
    st.cancelled = true;
  });
  kiln_generate_options o;
  kiln_generate_options_init(&o);
  o.max_new_tokens = 200;
  o.user_data = &st;
  o.on_token = [](void *user, size_t, int32_t token) {
    auto *s = static_cast<CancelState *>(user);
    s->streamed.push_back(token);
    if (++s->seen == 5)
      while (!s->cancelled.load()) // hold the loop until the other thread has cancelled
        std::this_thread::yield();
    return 0;
  };
  Prompts p;
  p.add({1, 2, 3});
  kiln_generation *g = nullptr;
  Error e{kiln_generate(d.gen, p.ptrs.data(), p.lens.data(), 1, &o, &g)};
  canceller.join();
  ASSERT_FALSE(e) << e.message();
  size_t n = 0;
  const int32_t *t = kiln_generation_tokens(g, 0, &n);
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(kiln_generation_finish_reason(g, 0), KILN_FINISH_CANCELLED);
  EXPECT_EQ(std::vector<int32_t>(t, t + n), st.streamed); // the callback saw every token, in order
  kiln_generation_destroy(g);
}

TEST_P(DecodeTest, StopTokenEndsTheSequenceAndIsIncluded) {
  const std::string family = GetParam();
  nlohmann::json run = readIndex(family)["runs"][0];
  std::vector<int32_t> greedy = run["tokens"][0];
  Decoder d(family);
  ASSERT_NE(d.gen, nullptr);
  int32_t stop = greedy[9];
  size_t firstStop = std::find(greedy.begin(), greedy.end(), stop) - greedy.begin();
  kiln_generate_options o;
  kiln_generate_options_init(&o);
  o.stop_tokens = &stop;
  o.stop_token_count = 1;
  Prompts p;
  p.add(run["prompts"][0].get<std::vector<int32_t>>());
  kiln_generation *g = nullptr;
  Error e{kiln_generate(d.gen, p.ptrs.data(), p.lens.data(), 1, &o, &g)};
  ASSERT_FALSE(e) << e.message();
  size_t n = 0;
  const int32_t *t = kiln_generation_tokens(g, 0, &n);
  EXPECT_EQ(std::vector<int32_t>(t, t + n), std::vector<int32_t>(greedy.begin(), greedy.begin() + firstStop + 1));
  EXPECT_EQ(kiln_generation_finish_reason(g, 0), KILN_FINISH_STOP_TOKEN);
  kiln_generation_stats st;
  kiln_generation_stats_get(g, &st);
  EXPECT_EQ(st.new_tokens, n);
  EXPECT_EQ(st.prompt_tokens, 1u);
  kiln_generation_destroy(g);
}

TEST_P(DecodeTest, BadRequestsAreErrorsNotCrashes) {
  Decoder d(GetParam(), 16);
  ASSERT_NE(d.gen, nullptr);
  std::vector<int32_t> longPrompt(20, 3);
  Prompts tooLong;
  tooLong.add(longPrompt);
  Error e1{kiln_generator_start(d.gen, tooLong.ptrs.data(), tooLong.lens.data(), 1, nullptr)};
  EXPECT_EQ(e1.code(), KILN_ERROR_OUT_OF_RANGE);
  EXPECT_NE(e1.message().find("does not fit the context of 16"), std::string::npos) << e1.message();

  Prompts badId;
  badId.add({1, 2, 512});
  Error e2{kiln_generator_start(d.gen, badId.ptrs.data(), badId.lens.data(), 1, nullptr)};
  EXPECT_EQ(e2.code(), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(e2.message().find("token 2 is id 512, outside the vocabulary"), std::string::npos) << e2.message();

  Prompts ok;
  ok.add({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  kiln_sampling_params bad;
  kiln_sampling_params_init(&bad);
  bad.temperature = -1;
  Error e3{kiln_generator_start(d.gen, ok.ptrs.data(), ok.lens.data(), 1, &bad)};
  EXPECT_EQ(e3.code(), KILN_ERROR_INVALID_ARGUMENT);

  int32_t token = 0;
  Error early{kiln_generator_next(d.gen, &token)}; // the failed starts left nothing to decode
  EXPECT_EQ(early.code(), KILN_ERROR_INVALID_ARGUMENT);

  // The cache holds 16 tokens: 10 prompt tokens, then 6 decode steps fill it.
  Error s{kiln_generator_start(d.gen, ok.ptrs.data(), ok.lens.data(), 1, nullptr)};
  ASSERT_FALSE(s) << s.message();
  int produced = 0;
  kiln_error_code last = kiln_error_code(0);
  for (int i = 0; i < 20; ++i) {
    Error n{kiln_generator_next(d.gen, &token)};
    if (n) {
      last = n.code();
      break;
    }
    ++produced;
  }
  EXPECT_EQ(produced, 7); // the prompt's token, then one per free slot
  EXPECT_EQ(last, KILN_ERROR_OUT_OF_RANGE);

  // kiln_generate ends such a sequence with KILN_FINISH_CONTEXT instead.
  kiln_generate_options o;
  kiln_generate_options_init(&o);
  o.max_new_tokens = 100;
  kiln_generation *g = nullptr;
  Error gen{kiln_generate(d.gen, ok.ptrs.data(), ok.lens.data(), 1, &o, &g)};
  ASSERT_FALSE(gen) << gen.message();
  size_t n = 0;
  kiln_generation_tokens(g, 0, &n);
  EXPECT_EQ(n, 7u);
  EXPECT_EQ(kiln_generation_finish_reason(g, 0), KILN_FINISH_CONTEXT);
  kiln_generation_destroy(g);
}

// The C++ wrapper: the same greedy tokens, streamed through a lambda, and errors as exceptions.
TEST_P(DecodeTest, CppWrapperGeneratesAndThrows) {
  const std::string family = GetParam();
  nlohmann::json run = readIndex(family)["runs"][3]; // batch 4
  kiln::Model model = kiln::Model::load(artifactFor(family), 1);
  kiln::Generator gen(model);
  std::vector<std::vector<int32_t>> prompts;
  for (const auto &p : run["prompts"])
    prompts.push_back(p.get<std::vector<int32_t>>());
  kiln_generate_options o = kiln::Generator::defaultOptions();
  o.max_new_tokens = 16;
  std::vector<std::vector<int32_t>> streamed(prompts.size());
  kiln::Generation g = gen.generate(prompts, o, [&](size_t s, int32_t t) {
    streamed[s].push_back(t);
    return true;
  });
  ASSERT_EQ(g.tokens.size(), prompts.size());
  for (size_t s = 0; s < prompts.size(); ++s) {
    std::vector<int32_t> want = run["tokens"][s];
    want.resize(16);
    EXPECT_EQ(g.tokens[s], want) << "row " << s;
    EXPECT_EQ(streamed[s], want) << "row " << s;
    EXPECT_EQ(g.finish[s], KILN_FINISH_LENGTH);
  }
  EXPECT_EQ(g.stats.new_tokens, 16 * prompts.size());
  try {
    gen.start({{1, 2, 100000}});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), KILN_ERROR_INVALID_ARGUMENT);
  }
}

// Teacher forcing (kiln_generator_feed): feeding the tokens greedy decoding picks gives the same
// logits and tokens as next(); feeding a prompt token by token ends at the prompt's prefill logits;
// bad tokens and a feed before start are errors.
TEST_P(DecodeTest, FeedIsTeacherForcedDecoding) {
  const std::string family = GetParam();
  kiln::Model model = kiln::Model::load(artifactFor(family), 1);
  kiln::Generator greedy(model), forced(model);
  const std::vector<int32_t> prompt = {5, 17, 42};
  greedy.start({prompt});
  forced.start({prompt});
  const int32_t vocab = forced.vocabSize();
  for (int step = 0; step < 6; ++step) {
    // Both sides now hold the logits after the same tokens: greedy fed its previous pick itself.
    const int32_t t = greedy.next()[0];
    EXPECT_TRUE(std::equal(forced.logits(), forced.logits() + vocab, greedy.logits())) << "step " << step;
    EXPECT_EQ(int32_t(std::max_element(forced.logits(), forced.logits() + vocab) - forced.logits()), t)
        << "step " << step;
    forced.feed({t});
  }

  kiln::Generator prefill(model), stepwise(model);
  prefill.start({prompt});
  stepwise.start({{prompt[0]}});
  for (size_t i = 1; i < prompt.size(); ++i)
    stepwise.feed({prompt[i]});
  EXPECT_EQ(kiln_generator_position(stepwise.get()), int64_t(prompt.size()));
  const int32_t v = prefill.vocabSize();
  for (int32_t i = 0; i < v; ++i)
    EXPECT_NEAR(stepwise.logits()[i], prefill.logits()[i], 1e-3f * (1 + std::fabs(prefill.logits()[i])))
        << "logit " << i;

  int32_t bad = v;
  Error e{kiln_generator_feed(stepwise.get(), &bad)};
  EXPECT_EQ(e.code(), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(e.message().find("outside the vocabulary"), std::string::npos) << e.message();
  kiln::Generator fresh(model);
  int32_t ok = 1;
  Error before{kiln_generator_feed(fresh.get(), &ok)};
  EXPECT_EQ(before.code(), KILN_ERROR_INVALID_ARGUMENT);
}

// kiln_session_run on a decoder artifact: a past length outside the caches is refused, naming it;
// so is a row position outside them and a logit row count below 1.
TEST_P(DecodeTest, SessionRefusesAPastLengthOutsideTheCache) {
  kiln_model *model = nullptr;
  Error e{kiln_model_load(artifactFor(GetParam()).c_str(), nullptr, &model)};
  ASSERT_FALSE(e) << e.message();
  kiln_session *session = nullptr;
  Error se{kiln_session_create(model, &session)};
  ASSERT_FALSE(se) << se.message();
  const int64_t capacity = 8;
  std::vector<std::vector<char>> storage;
  std::vector<kiln_tensor *> owned;
  int64_t *pastLength = nullptr, *rowPositions = nullptr, *logitRows = nullptr;
  for (size_t i = 0; i < kiln_model_input_count(model); ++i) {
    kiln_tensor_info info;
    Error ie{kiln_model_input_info(model, i, &info)};
    ASSERT_FALSE(ie);
    std::vector<int64_t> shape;
    std::string name = info.name;
    for (size_t d = 0; d < info.rank; ++d)
      shape.push_back(info.dims[d] >= 0 ? info.dims[d] : name == "attention_mask" && d == 1 ? 2 : d == 2 ? capacity : 1);
    size_t count = 1;
    for (int64_t x : shape)
      count *= size_t(x);
    storage.emplace_back(count * kiln_dtype_size(info.dtype), 0);
    kiln_tensor *t = nullptr;
    Error we{kiln_tensor_wrap(info.dtype, shape.data(), shape.size(), storage.back().data(), storage.back().size(), &t)};
    ASSERT_FALSE(we) << we.message();
    owned.push_back(t);
    if (name == "kiln.past_length")
      pastLength = reinterpret_cast<int64_t *>(storage.back().data());
    if (name == "kiln.row_positions")
      rowPositions = reinterpret_cast<int64_t *>(storage.back().data());
    if (name == "kiln.logit_rows")
      logitRows = reinterpret_cast<int64_t *>(storage.back().data());
  }
  ASSERT_NE(pastLength, nullptr);
  std::vector<const kiln_tensor *> inputs(owned.begin(), owned.end());
  std::vector<kiln_tensor *> outputs(kiln_model_output_count(model), nullptr);
  for (int64_t bad : {int64_t(-1), capacity + 1}) {
    *pastLength = bad;
    Error re{kiln_session_run(session, inputs.data(), inputs.size(), outputs.data(), outputs.size())};
    EXPECT_EQ(re.code(), KILN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(re.message().find("input 'kiln.past_length' is " + std::to_string(bad)), std::string::npos)
        << re.message();
  }
  *pastLength = 1; // 1 cached + 1 new token = the mask's 2 columns
  ASSERT_NE(rowPositions, nullptr);
  *rowPositions = capacity + 1;
  {
    Error re{kiln_session_run(session, inputs.data(), inputs.size(), outputs.data(), outputs.size())};
    EXPECT_EQ(re.code(), KILN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(re.message().find("input 'kiln.row_positions' row 0 is 9"), std::string::npos) << re.message();
  }
  *rowPositions = 1;
  ASSERT_NE(logitRows, nullptr);
  *logitRows = 0;
  {
    Error re{kiln_session_run(session, inputs.data(), inputs.size(), outputs.data(), outputs.size())};
    EXPECT_EQ(re.code(), KILN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(re.message().find("input 'kiln.logit_rows' is 0: it must be at least 1"), std::string::npos)
        << re.message();
  }
  *logitRows = 1;
  Error ok{kiln_session_run(session, inputs.data(), inputs.size(), outputs.data(), outputs.size())};
  EXPECT_FALSE(ok) << ok.message();
  for (kiln_tensor *t : outputs)
    kiln_tensor_destroy(t);
  for (kiln_tensor *t : owned)
    kiln_tensor_destroy(t);
  kiln_session_destroy(session);
  kiln_model_destroy(model);
}

// kiln_session_run on a paged artifact: the caller's block table says where each row's entries
// go (a write lands in the named block only), and a block id past the pool is refused, naming it.
TEST_P(DecodeTest, SessionWritesThroughTheBlockTable) {
  kiln_model *model = nullptr;
  Error e{kiln_model_load(artifactFor(GetParam() + "_paged16").c_str(), nullptr, &model)};
  ASSERT_FALSE(e) << e.message();
  kiln_session *session = nullptr;
  Error se{kiln_session_create(model, &session)};
  ASSERT_FALSE(se) << se.message();
  std::vector<std::vector<char>> storage;
  std::vector<kiln_tensor *> owned;
  int64_t *pastLength = nullptr, *rowPositions = nullptr, *table = nullptr;
  std::vector<float *> pools;
  size_t poolFloats = 0, heads = 0, dim = 0;
  for (size_t i = 0; i < kiln_model_input_count(model); ++i) {
    kiln_tensor_info info;
    Error ie{kiln_model_input_info(model, i, &info)};
    ASSERT_FALSE(ie);
    std::string name = info.name;
    const bool pool = name.rfind("past_key_values", 0) == 0;
    std::vector<int64_t> shape;
    for (size_t d = 0; d < info.rank; ++d) // batch 1, 1 new token after 1 cached, pools of 2 blocks
      shape.push_back(info.dims[d] >= 0 ? info.dims[d] : name == "attention_mask" && d == 1 ? 2 : pool ? 2 : 1);
    size_t count = 1;
    for (int64_t x : shape)
      count *= size_t(x);
    storage.emplace_back(count * kiln_dtype_size(info.dtype), 0);
    kiln_tensor *t = nullptr;
    Error we{kiln_tensor_wrap(info.dtype, shape.data(), shape.size(), storage.back().data(), storage.back().size(), &t)};
    ASSERT_FALSE(we) << we.message();
    owned.push_back(t);
    char *data = storage.back().data();
    if (name == "kiln.past_length")
      pastLength = reinterpret_cast<int64_t *>(data);
    if (name == "kiln.row_positions")
      rowPositions = reinterpret_cast<int64_t *>(data);
    if (name == "kiln.block_table")
      table = reinterpret_cast<int64_t *>(data);
    if (name == "kiln.logit_rows")
      *reinterpret_cast<int64_t *>(data) = 1;
    if (pool) {
      pools.push_back(reinterpret_cast<float *>(data));
      poolFloats = count;
      ASSERT_EQ(shape.size(), 4u);
      ASSERT_EQ(shape[2], 16);
      heads = size_t(shape[1]);
      dim = size_t(shape[3]);
    }
  }
  ASSERT_TRUE(pastLength && rowPositions && table);
  ASSERT_EQ(pools.size(), 4u);
  std::vector<const kiln_tensor *> inputs(owned.begin(), owned.end());
  std::vector<kiln_tensor *> outputs(kiln_model_output_count(model), nullptr);
  *pastLength = 1;
  *rowPositions = 1;
  *table = 2; // the pool has blocks 0 and 1
  {
    Error re{kiln_session_run(session, inputs.data(), inputs.size(), outputs.data(), outputs.size())};
    EXPECT_EQ(re.code(), KILN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(re.message().find("input 'kiln.block_table' names block 2"), std::string::npos) << re.message();
  }
  *table = 1;
  Error ok{kiln_session_run(session, inputs.data(), inputs.size(), outputs.data(), outputs.size())};
  ASSERT_FALSE(ok) << ok.message();
  // Pools [2 blocks, heads, 16, dim]: the new entry is position 1 of block 1; block 0 stays zero.
  ASSERT_EQ(poolFloats, 2 * heads * 16 * dim);
  for (float *p : pools) {
    size_t inBlock0 = 0, atEntry = 0, elsewhere = 0;
    for (size_t k = 0; k < poolFloats; ++k) {
      const bool nonzero = p[k] != 0.0f;
      const size_t blk = k / (heads * 16 * dim), pos = (k / dim) % 16;
      if (blk == 0)
        inBlock0 += nonzero;
      else if (pos == 1)
        atEntry += nonzero;
      else
        elsewhere += nonzero;
    }
    EXPECT_EQ(inBlock0, 0u);
    EXPECT_GT(atEntry, heads * dim / 2); // every head's new entry, mostly nonzero
    EXPECT_EQ(elsewhere, 0u);
  }
  for (kiln_tensor *t : outputs)
    kiln_tensor_destroy(t);
  for (kiln_tensor *t : owned)
    kiln_tensor_destroy(t);
  kiln_session_destroy(session);
  kiln_model_destroy(model);
}

// The sequence API: one generator, sequences joining and leaving between steps.
struct SequenceDecoder {
  SequenceDecoder(const std::string &family, int32_t maxSequences, int64_t maxContext = 0, int64_t poolBlocks = 0,
                  bool prefixCaching = false) {
    kiln_model_options mo;
    kiln_model_options_init(&mo);
    mo.num_threads = 2; // the kernels' parallel split must not change a row's bits either
    Error e{kiln_model_load(artifactFor(family).c_str(), &mo, &model)};
    if (e)
      ADD_FAILURE() << e.message();
    kiln_generator_options go;
    kiln_generator_options_init(&go);
    go.max_sequences = maxSequences;
    go.max_context = maxContext;
    go.kv_cache_blocks = poolBlocks;
    go.prefix_caching = prefixCaching ? 1 : 0;
    Error g{kiln_generator_create(model, &go, &gen)};
    if (g)
      ADD_FAILURE() << g.message();
  }
  ~SequenceDecoder() {
    kiln_generator_destroy(gen);
    kiln_model_destroy(model);
  }
  kiln_model *model = nullptr;
  kiln_generator *gen = nullptr;
};

// What one sequence saw: its tokens and the logits they were sampled from, step by step.
struct Trace {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
};

constexpr size_t kChunk = 5; // prompt chunk of the tests' prefills

void prefillAll(kiln_generator *gen, int64_t id, size_t chunk = kChunk) {
  size_t left = 1;
  while (left > 0) {
    Error e{kiln_generator_prefill(gen, id, chunk, &left)};
    ASSERT_FALSE(e) << e.message();
  }
}

// Adds `prompt`, prefills it (runs of `chunk` tokens), decodes `steps` tokens: the tokens and each
// step's logits.
Trace decodeIn(SequenceDecoder &d, const std::vector<int32_t> &prompt, size_t steps,
               const kiln_sampling_params &sampling, int64_t *idOut = nullptr, size_t chunk = kChunk) {
  Trace t;
  int64_t id = 0;
  Error a{kiln_generator_add_sequence(d.gen, prompt.data(), prompt.size(), &sampling, &id)};
  EXPECT_FALSE(a) << a.message();
  if (a)
    return t;
  prefillAll(d.gen, id, chunk);
  const int32_t vocab = kiln_generator_vocab_size(d.gen);
  for (size_t s = 0; s < steps; ++s) {
    int32_t token = -1;
    Error e{kiln_generator_step(d.gen, &id, 1, &token)};
    EXPECT_FALSE(e) << e.message();
    const float *l = kiln_generator_sequence_logits(d.gen, id);
    t.logits.emplace_back(l, l + vocab);
    t.tokens.push_back(token);
  }
  if (idOut)
    *idOut = id;
  else
    kiln_error_free(kiln_generator_remove_sequence(d.gen, id));
  return t;
}

// The same in a generator of its own, sequence alone.
Trace decodeAlone(const std::string &family, const std::vector<int32_t> &prompt, size_t steps,
                  const kiln_sampling_params &sampling, size_t chunk = kChunk) {
  SequenceDecoder d(family, 1);
  return decodeIn(d, prompt, steps, sampling, nullptr, chunk);
}

std::vector<std::vector<int32_t>> raggedPrompts() {
  return {{5, 17, 300, 42, 99, 7, 256, 11, 3, 64, 9, 120, 33},
          {72},
          {101, 108, 108, 111, 44, 32},
          {200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221},
          {50, 60, 70}};
}

// Continuous batching: sequences of different lengths join at different steps, one leaves and
// another takes its row (over the first's stale entries), and every step's logits of every
// sequence equal bit for bit those of decoding it alone (on the same artifact).
// The traces of that batch, per sequence (sequence 1 leaves after 4 tokens).
std::vector<Trace> raggedContinuousBatch(const std::string &family, const kiln_sampling_params &sampling,
                                         int64_t poolBlocks = 0);
kiln_sampling_params raggedSampling();

void checkRaggedContinuousBatch(const std::string &family) {
  auto prompts = raggedPrompts();
  const size_t steps = 10;
  const kiln_sampling_params sampling = raggedSampling();
  std::vector<Trace> alone;
  for (auto &p : prompts)
    alone.push_back(decodeAlone(family, p, steps, sampling));
  std::vector<Trace> batched = raggedContinuousBatch(family, sampling);
  ASSERT_EQ(batched.size(), prompts.size());
  const size_t vocab = alone[0].logits.empty() ? 0 : alone[0].logits[0].size();
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("sequence " + std::to_string(i));
    size_t n = batched[i].tokens.size();
    ASSERT_EQ(n, i == 1 ? 4u : steps);
    for (size_t s = 0; s < n; ++s) {
      ASSERT_EQ(batched[i].tokens[s], alone[i].tokens[s]) << "step " << s;
      ASSERT_EQ(std::memcmp(batched[i].logits[s].data(), alone[i].logits[s].data(), sizeof(float) * vocab), 0)
          << "step " << s << ": logits differ from decoding alone";
    }
  }
}

std::vector<Trace> raggedContinuousBatch(const std::string &family, const kiln_sampling_params &sampling,
                                         int64_t poolBlocks) {
  auto prompts = raggedPrompts();
  const size_t steps = 10;
  SequenceDecoder d(family, 4, 0, poolBlocks);
  EXPECT_NE(d.gen, nullptr);
  if (!d.gen)
    return {};
  const int32_t vocab = kiln_generator_vocab_size(d.gen);
  // Sequence i joins before step join[i] of the batch; sequence 1 leaves early (after 4 of its
  // tokens) and sequence 4 takes its row.
  const std::vector<size_t> join = {0, 0, 2, 3, 6};
  std::vector<int64_t> ids(prompts.size(), 0);
  std::vector<Trace> batched(prompts.size());
  std::vector<bool> done(prompts.size(), false);
  for (size_t step = 0; step < 40; ++step) {
    for (size_t i = 0; i < prompts.size(); ++i)
      if (join[i] == step) {
        Error a{kiln_generator_add_sequence(d.gen, prompts[i].data(), prompts[i].size(), &sampling, &ids[i])};
        EXPECT_FALSE(a) << "sequence " << i << ": " << a.message();
        if (a)
          return {};
        prefillAll(d.gen, ids[i]);
      }
    std::vector<int64_t> live;
    std::vector<size_t> which;
    for (size_t i = 0; i < prompts.size(); ++i)
      if (ids[i] != 0 && !done[i]) {
        live.push_back(ids[i]);
        which.push_back(i);
      }
    if (live.empty())
      break;
    std::vector<int32_t> tokens(live.size());
    Error e{kiln_generator_step(d.gen, live.data(), live.size(), tokens.data())};
    EXPECT_FALSE(e) << e.message();
    if (e)
      return {};
    for (size_t k = 0; k < live.size(); ++k) {
      size_t i = which[k];
      const float *l = kiln_generator_sequence_logits(d.gen, ids[i]);
      EXPECT_NE(l, nullptr);
      if (!l)
        return {};
      batched[i].logits.emplace_back(l, l + vocab);
      batched[i].tokens.push_back(tokens[k]);
      size_t want = i == 1 ? 4 : steps;
      if (batched[i].tokens.size() == want) {
        done[i] = true;
        Error r{kiln_generator_remove_sequence(d.gen, ids[i])};
        EXPECT_FALSE(r) << r.message();
      }
    }
  }
  return batched;
}

kiln_sampling_params raggedSampling() {
  kiln_sampling_params sampling;
  kiln_sampling_params_init(&sampling);
  sampling.temperature = 0.8f; // seeded sampling: the tokens depend on the logits' bits too
  sampling.seed = 3;
  return sampling;
}

TEST_P(DecodeTest, RaggedContinuousBatchIsBitwiseEqualToDecodingAlone) { checkRaggedContinuousBatch(GetParam()); }

// The same with paged caches: a sequence's blocks lie anywhere in the pool (the leaving
// sequence's blocks go to the one that takes its row, and others), and its logits are still
// bitwise those of decoding it alone on the same artifact.
TEST_P(DecodeTest, PagedRaggedContinuousBatchIsBitwiseEqualToDecodingAlone) {
  checkRaggedContinuousBatch(GetParam() + "_paged16");
  checkRaggedContinuousBatch(GetParam() + "_paged64");
}

// The attention reads keys in tiles of 64 from blocks of 64 (a slice of one block) or of 16 (four
// blocks gathered into one tile): the same tiles as the contiguous cache, so the paged cache
// computes what the contiguous one does, bit for bit, whichever blocks the pool hands out.
TEST_P(DecodeTest, PagedDecodeIsBitwiseEqualToContiguousDecode) {
  const kiln_sampling_params sampling = raggedSampling();
  std::vector<Trace> contiguous = raggedContinuousBatch(GetParam(), sampling);
  // A pool of 20 blocks of 64 (the default would be 4 x 4): ids handed out differ from row order.
  std::vector<Trace> paged64 = raggedContinuousBatch(GetParam() + "_paged64", sampling, 20);
  std::vector<Trace> paged16 = raggedContinuousBatch(GetParam() + "_paged16", sampling);
  ASSERT_EQ(contiguous.size(), raggedPrompts().size());
  ASSERT_EQ(paged64.size(), contiguous.size());
  ASSERT_EQ(paged16.size(), contiguous.size());
  for (size_t i = 0; i < contiguous.size(); ++i) {
    SCOPED_TRACE("sequence " + std::to_string(i));
    ASSERT_EQ(paged64[i].tokens, contiguous[i].tokens);
    ASSERT_EQ(paged16[i].tokens, contiguous[i].tokens);
    for (size_t s = 0; s < contiguous[i].logits.size(); ++s) {
      const auto &want = contiguous[i].logits[s];
      ASSERT_EQ(std::memcmp(paged64[i].logits[s].data(), want.data(), want.size() * sizeof(float)), 0)
          << "step " << s << ": paged (64) logits differ from the contiguous cache's";
      ASSERT_EQ(std::memcmp(paged16[i].logits[s].data(), want.data(), want.size() * sizeof(float)), 0)
          << "step " << s << ": paged (16) logits differ from the contiguous cache's";
    }
  }
}

// The same on the CUDA pipeline's kernels (run on the CPU, --target=cuda-emulated): the GPU
// attention kernel reads each sequence's keys through the block table in the contiguous cache's
// tiles and order, so a paged sequence's logits are bitwise those of the contiguous cache, and of
// decoding it alone, wherever its blocks lie.
TEST_P(DecodeTest, EmulatedGpuPagedDecodeIsBitwiseEqualToContiguousDecode) {
  const kiln_sampling_params sampling = raggedSampling();
  std::vector<Trace> contiguous = raggedContinuousBatch(GetParam() + "_emulated", sampling);
  std::vector<Trace> paged = raggedContinuousBatch(GetParam() + "_emulated_paged16", sampling, 40);
  ASSERT_EQ(contiguous.size(), raggedPrompts().size());
  ASSERT_EQ(paged.size(), contiguous.size());
  for (size_t i = 0; i < contiguous.size(); ++i) {
    SCOPED_TRACE("sequence " + std::to_string(i));
    ASSERT_EQ(paged[i].tokens, contiguous[i].tokens);
    for (size_t s = 0; s < contiguous[i].logits.size(); ++s) {
      const auto &want = contiguous[i].logits[s];
      ASSERT_EQ(std::memcmp(paged[i].logits[s].data(), want.data(), want.size() * sizeof(float)), 0)
          << "step " << s << ": paged logits differ from the contiguous cache's";
    }
  }
  checkRaggedContinuousBatch(GetParam() + "_emulated_paged16");
}

// A pool smaller than every sequence at full context: blocks are taken as sequences grow, a
// sequence that needs a block when none is free gets KILN_ERROR_OUT_OF_RANGE (its state
// unchanged, nothing crashes), and removing a sequence returns its blocks.
TEST_P(DecodeTest, PagedPoolExhaustionIsAClearError) {
  SequenceDecoder d(GetParam() + "_paged16", 3, 0, 4); // 4 blocks of 16 tokens for 3 sequences
  ASSERT_NE(d.gen, nullptr);
  EXPECT_EQ(kiln_generator_kv_block_size(d.gen), 16);
  auto stats = [&] {
    kiln_generator_cache_stats st;
    st.struct_size = sizeof st;
    kiln_generator_cache_stats_get(d.gen, &st);
    return st;
  };
  std::vector<int32_t> p20(20), p12(12);
  for (size_t i = 0; i < p20.size(); ++i)
    p20[i] = int32_t(7 + 3 * i);
  for (size_t i = 0; i < p12.size(); ++i)
    p12[i] = int32_t(100 + i);
  int64_t a = 0, b = 0, c = 0;
  Error ea{kiln_generator_add_sequence(d.gen, p20.data(), p20.size(), nullptr, &a)};
  ASSERT_FALSE(ea) << ea.message();
  prefillAll(d.gen, a); // 20 tokens: 2 blocks
  EXPECT_EQ(stats().blocks_total, 4);
  EXPECT_EQ(stats().blocks_in_use, 2);
  Error eb{kiln_generator_add_sequence(d.gen, p12.data(), p12.size(), nullptr, &b)};
  ASSERT_FALSE(eb) << eb.message();
  prefillAll(d.gen, b); // 12 tokens: 1 block
  EXPECT_EQ(stats().blocks_in_use, 3);
  Error ec{kiln_generator_add_sequence(d.gen, p20.data(), p20.size(), nullptr, &c)};
  ASSERT_FALSE(ec) << ec.message();
  size_t left = 0;
  Error full{kiln_generator_prefill(d.gen, c, 0, &left)}; // needs 2 blocks, 1 is free
  EXPECT_EQ(full.code(), KILN_ERROR_OUT_OF_RANGE);
  EXPECT_NE(full.message().find("the KV cache pool is full"), std::string::npos) << full.message();
  EXPECT_EQ(kiln_generator_sequence_length(d.gen, c), 0);
  EXPECT_EQ(stats().blocks_in_use, 3); // nothing taken by the failed prefill
  // b decodes into its first block until it holds 16 tokens, then takes the last free block.
  int32_t token = 0;
  for (int i = 0; i < 6; ++i) {
    Error s{kiln_generator_step(d.gen, &b, 1, &token)};
    ASSERT_FALSE(s) << s.message();
  }
  EXPECT_EQ(kiln_generator_sequence_length(d.gen, b), 17);
  EXPECT_EQ(stats().blocks_in_use, 4);
  // a (20 tokens) fills its second block up to 32 tokens; the step for its 33rd entry fails.
  kiln_error *last = nullptr;
  int steps = 0;
  for (; steps < 20 && !last; ++steps)
    last = kiln_generator_step(d.gen, &a, 1, &token);
  Error exhausted{last};
  EXPECT_EQ(exhausted.code(), KILN_ERROR_OUT_OF_RANGE);
  EXPECT_NE(exhausted.message().find("the KV cache pool is full"), std::string::npos) << exhausted.message();
  EXPECT_EQ(kiln_generator_sequence_length(d.gen, a), 32);
  // A step of a and b together fails as a whole, taking no block.
  int64_t both[2] = {a, b};
  int32_t two[2];
  Error together{kiln_generator_step(d.gen, both, 2, two)};
  EXPECT_EQ(together.code(), KILN_ERROR_OUT_OF_RANGE);
  EXPECT_EQ(kiln_generator_sequence_length(d.gen, b), 17);
  EXPECT_EQ(stats().blocks_in_use, 4);
  // Removing b frees its 2 blocks: c's prompt fits now, and a can go on.
  Error rb{kiln_generator_remove_sequence(d.gen, b)};
  ASSERT_FALSE(rb) << rb.message();
  EXPECT_EQ(stats().blocks_in_use, 2);
  prefillAll(d.gen, c);
  EXPECT_EQ(kiln_generator_sequence_length(d.gen, c), 20);
  EXPECT_EQ(stats().blocks_in_use, 4);
  Error ra{kiln_generator_remove_sequence(d.gen, a)};
  ASSERT_FALSE(ra);
  Error again{kiln_generator_step(d.gen, &c, 1, &token)};
  EXPECT_FALSE(again) << again.message();
  EXPECT_EQ(stats().blocks_in_use, 2);
}

kiln_generator_cache_stats cacheStats(kiln_generator *gen) {
  kiln_generator_cache_stats st;
  st.struct_size = sizeof st;
  kiln_generator_cache_stats_get(gen, &st);
  return st;
}

// Prompts that share a 37-token start (two full blocks of 16 and 5 tokens more).
std::vector<std::vector<int32_t>> sharedPrefixPrompts() {
  std::vector<int32_t> system;
  for (int i = 0; i < 37; ++i)
    system.push_back(int32_t((i * 37 + 11) % 400));
  std::vector<std::vector<int32_t>> prompts;
  for (size_t extra : {4, 11, 20}) {
    std::vector<int32_t> p = system;
    for (size_t i = 0; i < extra; ++i)
      p.push_back(int32_t(300 + 7 * i + extra));
    prompts.push_back(p);
  }
  return prompts;
}

// Prefix caching: later sequences share the first sequence's two full prompt blocks (held by two
// at once, then idle, then shared again) and decode what they decode without the cache, bit for
// bit: their prefill starts at entry 32 instead of 0, in other chunks, and the shared entries are
// the first sequence's, but the kernels compute each position the same way whatever the chunk.
TEST_P(DecodeTest, PrefixCachingSharesPromptBlocksWithTheSameTokens) {
  const auto prompts = sharedPrefixPrompts();
  const size_t steps = 8;
  for (bool greedy : {true, false}) {
    SCOPED_TRACE(greedy ? "greedy" : "sampled");
    kiln_sampling_params sampling = raggedSampling();
    if (greedy)
      sampling.temperature = 0.0f;
    std::vector<Trace> alone;
    for (const auto &p : prompts)
      alone.push_back(decodeAlone(GetParam() + "_paged16", p, steps, sampling));
    SequenceDecoder d(GetParam() + "_paged16", 3, 0, 0, true);
    ASSERT_NE(d.gen, nullptr);
    std::vector<Trace> cached;
    cached.push_back(decodeIn(d, prompts[0], steps, sampling)); // computes and publishes 2 blocks
    EXPECT_EQ(cacheStats(d.gen).prefix_hit_blocks, 0);
    EXPECT_EQ(cacheStats(d.gen).blocks_cached, 2);
    EXPECT_EQ(cacheStats(d.gen).blocks_idle, 2);
    EXPECT_EQ(cacheStats(d.gen).blocks_in_use, 0);
    int64_t b = 0, c = 0;
    cached.push_back(decodeIn(d, prompts[1], steps, sampling, &b)); // shares 2 blocks and keeps them
    EXPECT_EQ(kiln_generator_sequence_length(d.gen, b), int64_t(prompts[1].size() + steps - 1));
    cached.push_back(decodeIn(d, prompts[2], steps, sampling, &c)); // shares the same 2 blocks
    kiln_generator_cache_stats st = cacheStats(d.gen);
    EXPECT_EQ(st.prefix_lookups, 3);
    EXPECT_EQ(st.prefix_hit_blocks, 4);
    EXPECT_EQ(st.blocks_idle, 0);
    // b: 48 prompt + 7 fed = 55 entries, 4 blocks, 2 of them shared; c: 64 entries, 4 blocks, the same 2 shared.
    EXPECT_EQ(st.blocks_in_use, 2 + 2 + 2);
    kiln_error_free(kiln_generator_remove_sequence(d.gen, b));
    kiln_error_free(kiln_generator_remove_sequence(d.gen, c));
    st = cacheStats(d.gen);
    EXPECT_EQ(st.blocks_in_use, 0);
    EXPECT_GE(st.blocks_idle, 2);
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("sequence " + std::to_string(i));
      ASSERT_EQ(cached[i].tokens, alone[i].tokens);
      for (size_t s = 0; s < steps; ++s)
        ASSERT_EQ(std::memcmp(cached[i].logits[s].data(), alone[i].logits[s].data(), alone[i].logits[s].size() * sizeof(float)), 0)
            << "step " << s << ": logits differ from decoding without the cache";
    }
  }
}

// A small pool: idle cached blocks are taken back when a sequence needs them (least recently
// released first), and a prompt whose blocks were taken back is computed again, correctly.
TEST_P(DecodeTest, PrefixCacheGivesIdleBlocksBackWhenThePoolRunsOut) {
  const auto prompts = sharedPrefixPrompts();
  kiln_sampling_params greedy = raggedSampling();
  greedy.temperature = 0.0f;
  SequenceDecoder d(GetParam() + "_paged16", 2, 0, 5, true); // 5 blocks of 16
  ASSERT_NE(d.gen, nullptr);
  Trace first = decodeIn(d, prompts[0], 4, greedy); // 44 entries: 3 blocks, 2 published
  EXPECT_EQ(cacheStats(d.gen).blocks_idle, 2);
  std::vector<int32_t> other(70);
  for (size_t i = 0; i < other.size(); ++i)
    other[i] = int32_t(500 - 3 * i);
  decodeIn(d, other, 2, greedy); // 71 entries: 5 blocks, so both idle ones are taken back
  kiln_generator_cache_stats st = cacheStats(d.gen);
  EXPECT_EQ(st.prefix_evictions, 2);
  EXPECT_EQ(st.prefix_hit_blocks, 0);
  Trace again = decodeIn(d, prompts[0], 4, greedy); // its blocks are gone: computed again
  st = cacheStats(d.gen);
  EXPECT_EQ(st.prefix_hit_blocks, 0);
  EXPECT_EQ(again.tokens, first.tokens);
  for (size_t s = 0; s < again.logits.size(); ++s)
    ASSERT_EQ(std::memcmp(again.logits[s].data(), first.logits[s].data(), again.logits[s].size() * sizeof(float)), 0);
  // A prompt that fits in whole cached blocks still runs its last token (for its logits).
  std::vector<int32_t> exact(prompts[0].begin(), prompts[0].begin() + 32);
  int64_t id = 0;
  Error a{kiln_generator_add_sequence(d.gen, exact.data(), exact.size(), &greedy, &id)};
  ASSERT_FALSE(a) << a.message();
  EXPECT_EQ(kiln_generator_sequence_length(d.gen, id), 16); // one block shared, 16 tokens to run
  EXPECT_EQ(cacheStats(d.gen).prefix_hit_blocks, 1);
  prefillAll(d.gen, id);
  EXPECT_NE(kiln_generator_sequence_logits(d.gen, id), nullptr);
}

// Speculative decoding (kiln_generator_step_draft): whatever the draft, a sequence gets the tokens
// of plain decoding (greedy and seeded sampling: one sampler draw per token, from the same logits),
// and the logits behind each token are bitwise those of plain decoding. A draft that is the plain
// tokens themselves is accepted whole; a wrong one is cut at its first wrong token; the paged cache
// gives back the blocks of rejected entries.
TEST_P(DecodeTest, SpeculativeStepsGiveTheTokensOfPlainDecoding) {
  const std::vector<int32_t> prompt = {5, 17, 300, 42, 99, 7, 256, 11, 3, 64, 9, 120, 33, 5, 17, 300};
  const size_t steps = 30;
  for (const std::string artifact : {GetParam(), GetParam() + "_paged16"})
    for (bool greedy : {true, false}) {
      SCOPED_TRACE(artifact + (greedy ? " greedy" : " sampled"));
      kiln_sampling_params sampling = raggedSampling();
      if (greedy)
        sampling.temperature = 0.0f;
      const Trace plain = decodeAlone(artifact, prompt, steps, sampling);
      for (int mode = 0; mode < 3; ++mode) { // drafts: the plain tokens, wrong from their 2nd token, lookup
        SCOPED_TRACE("draft mode " + std::to_string(mode));
        SequenceDecoder d(artifact, 1);
        ASSERT_NE(d.gen, nullptr);
        int64_t id = 0;
        Error a{kiln_generator_add_sequence(d.gen, prompt.data(), prompt.size(), &sampling, &id)};
        ASSERT_FALSE(a) << a.message();
        prefillAll(d.gen, id);
        const int32_t vocab = kiln_generator_vocab_size(d.gen);
        std::vector<int32_t> got;
        while (got.size() < steps) {
          std::vector<int32_t> draft;
          if (mode == 0)
            draft.assign(plain.tokens.begin() + std::min(got.size(), steps),
                         plain.tokens.begin() + std::min(got.size() + 4, steps));
          else if (mode == 1 && got.size() < steps) {
            draft = {plain.tokens[got.size()], (plain.tokens[got.size()] + 1) % vocab, 7};
          } else {
            std::vector<int32_t> history = prompt;
            history.insert(history.end(), got.begin(), got.end());
            draft = kiln::runtime::lookupDraft(history.data(), history.size(), 4, 3);
          }
          std::vector<int32_t> out(draft.size() + 1);
          size_t n = 0;
          Error e{kiln_generator_step_draft(d.gen, id, draft.data(), draft.size(), out.data(), &n)};
          ASSERT_FALSE(e) << e.message();
          ASSERT_GE(n, 1u);
          ASSERT_LE(n, draft.size() + 1);
          if (got.empty())
            ASSERT_EQ(n, 1u); // right after the prefill: one ordinary step
          // The logits the last of them came from are plain decoding's, bit for bit.
          const size_t last = got.size() + n - 1;
          const float *l = kiln_generator_sequence_logits(d.gen, id);
          if (last < steps)
            ASSERT_EQ(std::memcmp(l, plain.logits[last].data(), sizeof(float) * size_t(vocab)), 0) << "token " << last;
          got.insert(got.end(), out.begin(), out.begin() + long(n));
          // Cached: the prompt and every new token but the last (not fed yet).
          ASSERT_EQ(kiln_generator_sequence_length(d.gen, id), int64_t(prompt.size() + got.size() - 1));
          if (kiln_generator_kv_block_size(d.gen) > 0)
            ASSERT_EQ(cacheStats(d.gen).blocks_in_use, (kiln_generator_sequence_length(d.gen, id) + 15) / 16);
        }
        got.resize(steps);
        ASSERT_EQ(got, plain.tokens);
        int64_t drafted = 0, accepted = 0;
        kiln_generator_speculation_stats(d.gen, &drafted, &accepted);
        EXPECT_GT(drafted, 0);
        if (mode == 0)
          EXPECT_EQ(accepted, drafted); // the plain tokens are always right
        if (mode == 1)
          EXPECT_LE(accepted, drafted / 3);
      }
    }
}

// kiln_generate with prompt-lookup speculation: the tokens of kiln_generate without it; a batch of
// two decodes as without it (speculation is for batch 1); a draft token outside the vocabulary is
// refused, naming it.
TEST_P(DecodeTest, LookupSpeculationInGenerateKeepsTheTokens) {
  const std::vector<int32_t> prompt = {5, 17, 300, 42, 99, 7, 256, 11, 3, 64, 9, 120, 33, 5, 17, 300};
  auto generate = [&](int32_t lookup, size_t batch, int64_t *accepted) {
    SequenceDecoder d(GetParam(), 1);
    kiln_generate_options o;
    kiln_generate_options_init(&o);
    o.max_new_tokens = 40;
    o.speculate_lookup = lookup;
    std::vector<const int32_t *> ptrs(batch, prompt.data());
    std::vector<size_t> lens(batch, prompt.size());
    kiln_generation *gen = nullptr;
    Error e{kiln_generate(d.gen, ptrs.data(), lens.data(), batch, &o, &gen)};
    EXPECT_FALSE(e) << e.message();
    std::vector<std::vector<int32_t>> tokens;
    for (size_t s = 0; gen && s < batch; ++s) {
      size_t n = 0;
      const int32_t *t = kiln_generation_tokens(gen, s, &n);
      tokens.emplace_back(t, t + n);
    }
    kiln_generation_destroy(gen);
    int64_t drafted = 0;
    kiln_generator_speculation_stats(d.gen, &drafted, accepted);
    return tokens;
  };
  int64_t accepted = 0;
  const auto plain = generate(0, 1, &accepted);
  EXPECT_EQ(accepted, 0);
  const auto speculated = generate(4, 1, &accepted);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(speculated, plain);
  EXPECT_EQ(plain[0].size(), 40u);
  EXPECT_EQ(generate(4, 2, &accepted), generate(0, 2, &accepted));
  EXPECT_EQ(accepted, 0);

  SequenceDecoder d(GetParam(), 1);
  int64_t id = 0;
  Error a{kiln_generator_add_sequence(d.gen, prompt.data(), prompt.size(), nullptr, &id)};
  ASSERT_FALSE(a) << a.message();
  prefillAll(d.gen, id);
  int32_t out[4];
  size_t n = 0;
  Error first{kiln_generator_step_draft(d.gen, id, nullptr, 0, out, &n)};
  ASSERT_FALSE(first) << first.message();
  const int32_t bad[2] = {3, 1 << 20};
  Error e{kiln_generator_step_draft(d.gen, id, bad, 2, out, &n)};
  EXPECT_EQ(e.code(), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(e.message().find("draft token 1 is id 1048576, outside the vocabulary"), std::string::npos) << e.message();
  EXPECT_EQ(n, 0u);
}

// Draft-model speculation in kiln_generate: with the model itself as the draft every drafted token
// is accepted (greedy), with the other test family few are; the tokens are those of plain decoding
// either way, greedy and sampled. The draft's sequence follows through set_sequence_tokens.
TEST_P(DecodeTest, DraftModelSpeculationKeepsTheTokens) {
  const std::vector<int32_t> prompt = {5, 17, 300, 42, 99, 7, 256, 11, 3, 64, 9, 120, 33};
  const std::string other = GetParam() == "llama" ? "gpt2" : "llama";
  for (bool greedy : {true, false}) {
    SCOPED_TRACE(greedy ? "greedy" : "sampled");
    auto generate = [&](const std::string *draftFamily, int64_t *drafted, int64_t *accepted, size_t *steps) {
      SequenceDecoder d(GetParam(), 1);
      std::unique_ptr<SequenceDecoder> draft;
      kiln_generate_options o;
      kiln_generate_options_init(&o);
      o.max_new_tokens = 30;
      if (!greedy) {
        o.sampling.temperature = 0.8f;
        o.sampling.seed = 11;
      }
      if (draftFamily) {
        draft = std::make_unique<SequenceDecoder>(*draftFamily, 1);
        o.draft = draft->gen;
        o.draft_tokens = 4;
      }
      const int32_t *p = prompt.data();
      size_t n = prompt.size();
      kiln_generation *gen = nullptr;
      Error e{kiln_generate(d.gen, &p, &n, 1, &o, &gen)};
      EXPECT_FALSE(e) << e.message();
      std::vector<int32_t> tokens;
      if (gen) {
        size_t count = 0;
        const int32_t *t = kiln_generation_tokens(gen, 0, &count);
        tokens.assign(t, t + count);
        kiln_generation_stats st;
        kiln_generation_stats_get(gen, &st);
        *steps = st.steps;
      }
      kiln_generation_destroy(gen);
      kiln_generator_speculation_stats(d.gen, drafted, accepted);
      return tokens;
    };
    int64_t drafted = 0, accepted = 0;
    size_t steps = 0;
    const auto plain = generate(nullptr, &drafted, &accepted, &steps);
    ASSERT_EQ(plain.size(), 30u);
    EXPECT_EQ(steps, 29u);
    const std::string self = GetParam();
    EXPECT_EQ(generate(&self, &drafted, &accepted, &steps), plain);
    EXPECT_GT(drafted, 0);
    if (greedy) {
      EXPECT_EQ(accepted, drafted); // its own greedy tokens
      EXPECT_LE(steps, 8u);         // 5 tokens a run (4 drafted + 1) for 29 tokens after the first
    }
    EXPECT_EQ(generate(&other, &drafted, &accepted, &steps), plain);
    EXPECT_GT(drafted, 0);
    EXPECT_LT(accepted, drafted);
  }
}

// set_sequence_tokens: the cache keeps the common start, the rest runs again, and step() continues
// from the new end as if that had been the prompt.
TEST_P(DecodeTest, SetSequenceTokensKeepsTheCommonStart) {
  const std::vector<int32_t> a = {5, 17, 300, 42, 99, 7, 256, 11}, b = {5, 17, 300, 42, 1, 2, 3};
  kiln_sampling_params greedy;
  kiln_sampling_params_init(&greedy);
  const Trace alone = decodeAlone(GetParam(), b, 3, greedy);
  SequenceDecoder d(GetParam(), 1);
  int64_t id = 0;
  Error ad{kiln_generator_add_sequence(d.gen, a.data(), a.size(), &greedy, &id)};
  ASSERT_FALSE(ad) << ad.message();
  prefillAll(d.gen, id);
  Error set{kiln_generator_set_sequence_tokens(d.gen, id, b.data(), b.size())};
  ASSERT_FALSE(set) << set.message();
  EXPECT_EQ(kiln_generator_sequence_length(d.gen, id), 4); // 5 17 300 42 kept
  size_t left = 0;
  Error pf{kiln_generator_prefill(d.gen, id, 0, &left)};
  ASSERT_FALSE(pf) << pf.message();
  std::vector<int32_t> got(3);
  for (int32_t &t : got) {
    Error e{kiln_generator_step(d.gen, &id, 1, &t)};
    ASSERT_FALSE(e) << e.message();
  }
  EXPECT_EQ(got, alone.tokens);
  Error empty{kiln_generator_set_sequence_tokens(d.gen, id, b.data(), 0)};
  EXPECT_EQ(empty.code(), KILN_ERROR_INVALID_ARGUMENT);
}

// A sequence rewound (set_sequence_tokens) into a block kept for its prefix computes that block
// again elsewhere: a later sequence that shares the kept block still decodes as alone.
TEST_P(DecodeTest, RewindIntoACachedBlockLeavesItIntact) {
  std::vector<int32_t> a;
  for (int i = 0; i < 20; ++i)
    a.push_back(int32_t(30 + 7 * i));
  kiln_sampling_params greedy;
  kiln_sampling_params_init(&greedy);
  const Trace alone = decodeAlone(GetParam() + "_paged16", a, 4, greedy);
  SequenceDecoder d(GetParam() + "_paged16", 2, 0, 0, true);
  ASSERT_NE(d.gen, nullptr);
  int64_t id = 0;
  Error ad{kiln_generator_add_sequence(d.gen, a.data(), a.size(), &greedy, &id)};
  ASSERT_FALSE(ad) << ad.message();
  prefillAll(d.gen, id); // block 0 (tokens 0-15) is published
  std::vector<int32_t> b(a.begin(), a.begin() + 10);
  b.insert(b.end(), {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Error set{kiln_generator_set_sequence_tokens(d.gen, id, b.data(), b.size())};
  ASSERT_FALSE(set) << set.message();
  EXPECT_EQ(kiln_generator_sequence_length(d.gen, id), 0); // 10 in common, inside the kept block
  prefillAll(d.gen, id);
  const Trace shared = decodeIn(d, a, 4, greedy); // shares block 0, which must be untouched
  EXPECT_EQ(cacheStats(d.gen).prefix_hit_blocks, 1);
  ASSERT_EQ(shared.tokens, alone.tokens);
  for (size_t s = 0; s < shared.logits.size(); ++s)
    ASSERT_EQ(std::memcmp(shared.logits[s].data(), alone.logits[s].data(), alone.logits[s].size() * sizeof(float)), 0);
}

// prefix_caching is for paged artifacts, and 0 or 1.
TEST_P(DecodeTest, PrefixCachingNeedsAPagedArtifact) {
  for (const auto &[artifact, value, words] :
       std::vector<std::tuple<std::string, int32_t, std::string>>{{GetParam(), 1, "needs a paged KV cache"},
                                                                  {GetParam() + "_paged16", 2, "is not 0 or 1"}}) {
    kiln_model *model = nullptr;
    Error e{kiln_model_load(artifactFor(artifact).c_str(), nullptr, &model)};
    ASSERT_FALSE(e) << e.message();
    kiln_generator_options go;
    kiln_generator_options_init(&go);
    go.prefix_caching = value;
    kiln_generator *gen = nullptr;
    Error g{kiln_generator_create(model, &go, &gen)};
    EXPECT_EQ(g.code(), KILN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(g.message().find(words), std::string::npos) << g.message();
    EXPECT_EQ(gen, nullptr);
    kiln_model_destroy(model);
  }
}

// kv_cache_blocks is for paged artifacts; on a contiguous one it is refused, not ignored.
TEST_P(DecodeTest, PoolSizeNeedsAPagedArtifact) {
  kiln_model *model = nullptr;
  Error e{kiln_model_load(artifactFor(GetParam()).c_str(), nullptr, &model)};
  ASSERT_FALSE(e) << e.message();
  kiln_generator_options go;
  kiln_generator_options_init(&go);
  go.kv_cache_blocks = 8;
  kiln_generator *gen = nullptr;
  Error g{kiln_generator_create(model, &go, &gen)};
  EXPECT_EQ(g.code(), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(g.message().find("not paged"), std::string::npos) << g.message();
  EXPECT_EQ(gen, nullptr);
  EXPECT_EQ(kiln_generator_kv_block_size(gen), 0);
  kiln_model_destroy(model);
}

// start() runs long prompts in chunks of prefill_chunk tokens (bounded activations); the logits of
// the prompt and of the steps after it are bitwise those of one whole-prompt run, contiguous and
// paged. Bad values are refused.
TEST_P(DecodeTest, ChunkedPrefillGivesTheLogitsOfOneRun) {
  for (const std::string artifact : {GetParam(), GetParam() + "_paged16"}) {
    kiln_model *model = nullptr;
    Error e{kiln_model_load(artifactFor(artifact).c_str(), nullptr, &model)};
    ASSERT_FALSE(e) << e.message();
    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < 150; ++i)
      prompt.push_back((7 + 13 * i) % 400);
    const int32_t *ptr = prompt.data();
    size_t len = prompt.size();
    std::vector<std::vector<float>> runs[2];
    for (int chunked = 0; chunked < 2; ++chunked) {
      kiln_generator_options go;
      kiln_generator_options_init(&go);
      go.prefill_chunk = chunked ? 40 : -1; // 150 = 40 + 40 + 40 + 30
      kiln_generator *gen = nullptr;
      Error g{kiln_generator_create(model, &go, &gen)};
      ASSERT_FALSE(g) << g.message();
      Error st{kiln_generator_start(gen, &ptr, &len, 1, nullptr)};
      ASSERT_FALSE(st) << st.message();
      const int32_t vocab = kiln_generator_vocab_size(gen);
      for (int step = 0; step < 6; ++step) {
        const float *l = kiln_generator_logits(gen);
        runs[chunked].emplace_back(l, l + vocab);
        int32_t t = -1;
        Error n{kiln_generator_next(gen, &t)};
        ASSERT_FALSE(n) << n.message();
      }
      EXPECT_EQ(kiln_generator_position(gen), 150 + 5);
      kiln_generator_destroy(gen);
    }
    ASSERT_EQ(runs[0].size(), runs[1].size());
    for (size_t i = 0; i < runs[0].size(); ++i)
      EXPECT_EQ(0, std::memcmp(runs[0][i].data(), runs[1][i].data(), runs[0][i].size() * sizeof(float)))
          << artifact << ": logits " << i << " differ between whole and chunked prefill";
    kiln_generator_options go;
    kiln_generator_options_init(&go);
    go.prefill_chunk = -2;
    kiln_generator *gen = nullptr;
    Error bad{kiln_generator_create(model, &go, &gen)};
    EXPECT_EQ(bad.code(), KILN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(bad.message().find("prefill_chunk"), std::string::npos) << bad.message();
    EXPECT_EQ(gen, nullptr);
    kiln_model_destroy(model);
  }
}

// start()'s batch of prompts of different lengths: each row's logits are bitwise those of the
// prompt decoded alone (start() prefills each prompt on its own, so no chunking here).
TEST_P(DecodeTest, RaggedStartBatchIsBitwiseEqualToDecodingAlone) {
  const std::string family = GetParam();
  auto prompts = raggedPrompts();
  const size_t steps = 6;
  auto run = [&](const std::vector<size_t> &which) {
    Decoder d(family);
    Prompts p;
    for (size_t i : which)
      p.add(prompts[i]);
    kiln_sampling_params greedy;
    kiln_sampling_params_init(&greedy);
    Error e{kiln_generator_start(d.gen, p.ptrs.data(), p.lens.data(), which.size(), &greedy)};
    EXPECT_FALSE(e) << e.message();
    const int32_t vocab = kiln_generator_vocab_size(d.gen);
    std::vector<std::vector<float>> out(which.size());
    std::vector<int32_t> tokens(which.size());
    for (size_t s = 0; s < steps; ++s) {
      Error n{kiln_generator_next(d.gen, tokens.data())};
      EXPECT_FALSE(n) << n.message();
      const float *l = kiln_generator_logits(d.gen);
      for (size_t b = 0; b < which.size(); ++b)
        out[b].insert(out[b].end(), l + b * vocab, l + (b + 1) * vocab);
    }
    return out;
  };
  std::vector<size_t> all = {0, 1, 2, 3, 4};
  auto together = run(all);
  for (size_t i : all) {
    auto alone = run({i});
    ASSERT_EQ(together[i].size(), alone[0].size());
    EXPECT_EQ(std::memcmp(together[i].data(), alone[0].data(), alone[0].size() * sizeof(float)), 0)
        << "prompt " << i << ": batched logits differ from decoding alone";
  }
}

TEST_P(DecodeTest, SequenceApiRefusesBadRequests) {
  SequenceDecoder d(GetParam(), 2, 16);
  ASSERT_NE(d.gen, nullptr);
  std::vector<int32_t> p = {1, 2, 3};
  int64_t a = 0, b = 0, c = 0;
  Error ea{kiln_generator_add_sequence(d.gen, p.data(), p.size(), nullptr, &a)};
  ASSERT_FALSE(ea) << ea.message();
  int32_t token = 0;
  Error early{kiln_generator_step(d.gen, &a, 1, &token)};
  EXPECT_EQ(early.code(), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(early.message().find("prompt tokens left to prefill"), std::string::npos) << early.message();
  Error eb{kiln_generator_add_sequence(d.gen, p.data(), p.size(), nullptr, &b)};
  ASSERT_FALSE(eb) << eb.message();
  Error full{kiln_generator_add_sequence(d.gen, p.data(), p.size(), nullptr, &c)};
  EXPECT_EQ(full.code(), KILN_ERROR_OUT_OF_RANGE);
  EXPECT_NE(full.message().find("max_sequences"), std::string::npos) << full.message();
  prefillAll(d.gen, a);
  int64_t twice[2] = {a, a};
  int32_t two[2];
  Error dup{kiln_generator_step(d.gen, twice, 2, two)};
  EXPECT_NE(dup.message().find("listed twice"), std::string::npos) << dup.message();
  int64_t unknown = 999;
  Error unk{kiln_generator_step(d.gen, &unknown, 1, &token)};
  EXPECT_NE(unk.message().find("not one of this generator's"), std::string::npos) << unk.message();
  std::vector<int32_t> tooLong(16, 1);
  Error tl{kiln_generator_remove_sequence(d.gen, b)};
  ASSERT_FALSE(tl);
  Error lng{kiln_generator_add_sequence(d.gen, tooLong.data(), tooLong.size(), nullptr, &c)};
  EXPECT_EQ(lng.code(), KILN_ERROR_OUT_OF_RANGE);
  std::vector<int32_t> badId = {1, -4};
  Error bad{kiln_generator_add_sequence(d.gen, badId.data(), badId.size(), nullptr, &c)};
  EXPECT_EQ(bad.code(), KILN_ERROR_INVALID_ARGUMENT);
  // The context fills: 3 prompt tokens, then steps until 16 entries; then a clear error.
  kiln_generator_cache_stats st;
  st.struct_size = sizeof st;
  kiln_generator_cache_stats_get(d.gen, &st);
  EXPECT_EQ(st.rows, 2);
  EXPECT_EQ(st.sequences, 1);
  EXPECT_EQ(st.tokens_cached, 3);
  EXPECT_GT(st.bytes_per_token, 0);
  EXPECT_EQ(st.bytes_reserved, 2 * 16 * st.bytes_per_token);
  kiln_error *last = nullptr;
  for (int i = 0; i < 20 && !last; ++i)
    last = kiln_generator_step(d.gen, &a, 1, &token);
  Error fullCache{last};
  EXPECT_EQ(fullCache.code(), KILN_ERROR_OUT_OF_RANGE);
  EXPECT_EQ(kiln_generator_sequence_length(d.gen, a), 16);
}

INSTANTIATE_TEST_SUITE_P(Families, DecodeTest, ::testing::Values("gpt2", "llama"));

// Past 512 keys the attention splits its keys over work items and combines the splits. A row's
// splits start at fixed key offsets, so the logits stay bitwise equal whether the prompt was
// prefilled in chunks of 5 or in one run, cached in 16-token blocks or contiguously, and whether a
// token was decoded alone or verified among speculated ones; and they agree with the unfused graph
// (scores and Softmax materialized: an independent computation).
TEST(DecodeLongContext, SplitKeysAgreeOnEveryPathAndWithTheUnfusedGraph) {
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 1100; ++i) // 1100 + 8 keys: three splits
    prompt.push_back((7 + 13 * i) % 500);
  const size_t steps = 8;
  kiln_sampling_params greedy = raggedSampling();
  greedy.temperature = 0.0f;
  const Trace chunked = decodeAlone("llama_long", prompt, steps, greedy);
  ASSERT_EQ(chunked.tokens.size(), steps);
  const size_t vocab = chunked.logits[0].size();
  auto bitwise = [&](const Trace &t, const std::string &what) {
    ASSERT_EQ(t.tokens, chunked.tokens) << what;
    for (size_t s = 0; s < steps; ++s)
      ASSERT_EQ(std::memcmp(t.logits[s].data(), chunked.logits[s].data(), sizeof(float) * vocab), 0)
          << what << ": logits of step " << s << " differ";
  };
  bitwise(decodeAlone("llama_long_paged16", prompt, steps, greedy), "paged cache");
  bitwise(decodeAlone("llama_long", prompt, steps, greedy, prompt.size()), "prompt in one run");
  {
    // Verification of speculated tokens: the plain tokens as drafts, 3 at a time.
    SequenceDecoder d("llama_long", 1);
    int64_t id = 0;
    Error a{kiln_generator_add_sequence(d.gen, prompt.data(), prompt.size(), &greedy, &id)};
    ASSERT_FALSE(a) << a.message();
    prefillAll(d.gen, id);
    size_t done = 0;
    while (done < steps) {
      std::vector<int32_t> draft(chunked.tokens.begin() + long(done),
                                 chunked.tokens.begin() + long(std::min(done + 3, steps)));
      std::vector<int32_t> out(draft.size() + 1);
      size_t n = 0;
      Error e{kiln_generator_step_draft(d.gen, id, draft.data(), done ? draft.size() : 0, out.data(), &n)};
      ASSERT_FALSE(e) << e.message();
      done += n;
      const float *l = kiln_generator_sequence_logits(d.gen, id);
      if (done <= steps)
        ASSERT_EQ(std::memcmp(l, chunked.logits[done - 1].data(), sizeof(float) * vocab), 0)
            << "verified token " << done - 1;
    }
  }
  // The unfused graph: the same greedy tokens, logits within float rounding.
  const Trace unfused = decodeAlone("llama_long_unfused", prompt, steps, greedy);
  ASSERT_EQ(unfused.tokens, chunked.tokens);
  for (size_t s = 0; s < steps; ++s) {
    float worst = 0, scale = 0;
    for (size_t v = 0; v < vocab; ++v) {
      worst = std::max(worst, std::fabs(unfused.logits[s][v] - chunked.logits[s][v]));
      scale = std::max(scale, std::fabs(unfused.logits[s][v]));
    }
    EXPECT_LE(worst, 1e-4f * scale) << "step " << s;
  }
}

TEST(DecodeSetup, ModelWithoutCacheIsRefused) {
  kiln_model *model = nullptr;
  Error e{kiln_model_load((kOut + "/mlp.kiln").c_str(), nullptr, &model)};
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(kiln_model_is_decoder(model), 0);
  kiln_generator *gen = nullptr;
  Error g{kiln_generator_create(model, nullptr, &gen)};
  EXPECT_EQ(g.code(), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(g.message().find("not a decoder"), std::string::npos) << g.message();
  EXPECT_EQ(gen, nullptr);
  kiln_model_destroy(model);
}

} // namespace
