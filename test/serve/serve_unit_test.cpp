// Unit tests of kiln-serve's parts that need no HTTP or model: the scheduler's admission, order,
// cancellation and drain; the Prometheus exposition; chat template recognition and rendering;
// option parsing. (test/serve/serve_test.py drives the whole server.)
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "chat_template.h"
#include "errors.h"
#include "metrics.h"
#include "options.h"
#include "scheduler.h"
#include "tensor_json.h"

#include <cmath>

using namespace kiln::serve;

namespace {

// A job that runs until released (or cancelled), recording what happened to it.
class FakeJob : public Job {
public:
  explicit FakeJob(std::vector<int> *order = nullptr, int id = 0) : order_(order), id_(id) {}
  void run(Slot &) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      started_ = true;
      if (order_)
        order_->push_back(id_);
    }
    cv_.notify_all();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return released_ || cancelled(); });
    outcome_ = cancelled() ? "cancelled:" + cancelReason() : "done";
    cv_.notify_all();
  }
  void dropped(const std::string &reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    outcome_ = "dropped:" + reason;
    cv_.notify_all();
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // After cancel(): wake run(). Under the mutex, so the wake-up cannot fall between run()'s check
  // of cancelled() and its wait.
  void nudge() {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  bool waitStarted() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return started_; });
  }
  std::string waitOutcome() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return !outcome_.empty(); });
    return outcome_;
  }
  bool started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }

private:
  std::vector<int> *order_;
  int id_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false, released_ = false;
  std::string outcome_;
};

std::unique_ptr<Scheduler> makeScheduler(Metrics &m, int slots, int queue) {
  return std::make_unique<Scheduler>(
      "m", slots, queue, [](int i) { Slot s; s.index = i; return s; }, [](Slot &) {}, m);
}

double gauge(const Metrics &m, const std::string &name) {
  std::istringstream in(m.render());
  std::string line, key = name + "{model_name=\"m\"} ";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0)
      return std::stod(line.substr(key.size()));
  return -1;
}

} // namespace

TEST(Scheduler, AdmitsSlotsPlusQueueThenRefuses) {
  Metrics metrics;
  auto s = makeScheduler(metrics, 2, 3);
  std::vector<std::shared_ptr<FakeJob>> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back(std::make_shared<FakeJob>());
    ASSERT_EQ(s->submit(jobs.back()), Scheduler::Admission::Admitted) << i;
  }
  ASSERT_TRUE(jobs[0]->waitStarted());
  ASSERT_TRUE(jobs[1]->waitStarted());
  EXPECT_EQ(s->submit(std::make_shared<FakeJob>()), Scheduler::Admission::QueueFull);
  EXPECT_EQ(s->running(), 2u);
  EXPECT_EQ(s->waiting(), 3u);
  EXPECT_EQ(gauge(metrics, "kiln:num_requests_waiting"), 3);
  EXPECT_EQ(gauge(metrics, "kiln:slots_in_use"), 2);
  EXPECT_GE(s->retryAfterSeconds(), 1);
  for (auto &j : jobs)
    j->release();
  for (auto &j : jobs)
    EXPECT_EQ(j->waitOutcome(), "done");
}

TEST(Scheduler, RunsInArrivalOrder) {
  Metrics metrics;
  auto s = makeScheduler(metrics, 1, 10);
  std::vector<int> order;
  std::vector<std::shared_ptr<FakeJob>> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back(std::make_shared<FakeJob>(&order, i));
    s->submit(jobs.back());
  }
  for (auto &j : jobs) {
    ASSERT_TRUE(j->waitStarted());
    j->release();
    j->waitOutcome();
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Scheduler, CancelRemovesQueuedAndStopsRunning) {
  Metrics metrics;
  auto s = makeScheduler(metrics, 1, 5);
  auto running = std::make_shared<FakeJob>(), queued = std::make_shared<FakeJob>(), next = std::make_shared<FakeJob>();
  s->submit(running);
  ASSERT_TRUE(running->waitStarted());
  s->submit(queued);
  s->submit(next);
  s->cancel(queued);
  EXPECT_EQ(queued->waitOutcome(), "dropped:cancelled");
  EXPECT_EQ(s->waiting(), 1u);
  s->cancel(running);
  running->nudge();
  EXPECT_EQ(running->waitOutcome(), "cancelled:cancelled");
  // The freed slot takes the next job, not the cancelled one.
  ASSERT_TRUE(next->waitStarted());
  EXPECT_FALSE(queued->started());
  next->release();
  next->waitOutcome();
  // The slot is freed just after run() returns.
  for (int i = 0; i < 500 && !s->idle(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_TRUE(s->idle());
}

TEST(Scheduler, DrainRefusesThenCancelAllSaysShutdown) {
  Metrics metrics;
  auto s = makeScheduler(metrics, 1, 5);
  auto running = std::make_shared<FakeJob>(), queued = std::make_shared<FakeJob>();
  s->submit(running);
  ASSERT_TRUE(running->waitStarted());
  s->submit(queued);
  s->stopAdmitting();
  EXPECT_EQ(s->submit(std::make_shared<FakeJob>()), Scheduler::Admission::Draining);
  s->cancelAll();
  running->nudge();
  EXPECT_EQ(running->waitOutcome(), "cancelled:shutdown");
  EXPECT_EQ(queued->waitOutcome(), "dropped:shutdown");
}

TEST(Metrics, ExpositionFormat) {
  Metrics m;
  m.addPromptTokens("a\"b", 3);
  m.requestFailed("x", "queue_full");
  m.requestFailed("x", "queue_full");
  m.observe("kiln:time_to_first_token_seconds", "x", 0.003);
  m.observe("kiln:time_to_first_token_seconds", "x", 100);
  std::string t = m.render();
  EXPECT_NE(t.find("# TYPE kiln:prompt_tokens_total counter\n"), std::string::npos);
  EXPECT_NE(t.find("kiln:prompt_tokens_total{model_name=\"a\\\"b\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("kiln:request_failure_total{model_name=\"x\",reason=\"queue_full\"} 2\n"), std::string::npos);
  // Buckets are cumulative; +Inf equals the count.
  EXPECT_NE(t.find("kiln:time_to_first_token_seconds_bucket{model_name=\"x\",le=\"0.0025\"} 0\n"), std::string::npos);
  EXPECT_NE(t.find("kiln:time_to_first_token_seconds_bucket{model_name=\"x\",le=\"0.005\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("kiln:time_to_first_token_seconds_bucket{model_name=\"x\",le=\"80\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("kiln:time_to_first_token_seconds_bucket{model_name=\"x\",le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(t.find("kiln:time_to_first_token_seconds_count{model_name=\"x\"} 2\n"), std::string::npos);
}

TEST(ChatTemplate, RecognizesFamilies) {
  EXPECT_EQ(recognizeChatTemplate("{{ '<|start_header_id|>' }}x{{ '<|eot_id|>' }}"), ChatForm::Llama3);
  EXPECT_EQ(recognizeChatTemplate("<|im_start|>{{ m }}<|im_end|>"), ChatForm::ChatML);
  EXPECT_EQ(recognizeChatTemplate("<start_of_turn>{{ m }}<end_of_turn>"), ChatForm::Gemma);
  EXPECT_EQ(recognizeChatTemplate("[INST] <<SYS>> {{ m }} [/INST]"), ChatForm::Llama2);
  EXPECT_EQ(recognizeChatTemplate("[INST] {{ m }} [/INST]"), ChatForm::None); // Mistral's: not Llama 2's
  EXPECT_EQ(recognizeChatTemplate("{{ messages }}"), ChatForm::None);
}

TEST(ChatTemplate, Llama2MultiTurnAndGemmaSystem) {
  ChatTemplate l2;
  l2.form = ChatForm::Llama2;
  l2.bos = "<s>";
  l2.eos = "</s>";
  EXPECT_EQ(renderChat(l2, {{"system", "S"}, {"user", " a "}, {"assistant", "b"}, {"user", "c"}}),
            "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\na [/INST] b </s><s>[INST] c [/INST]");
  EXPECT_THROW(renderChat(l2, {{"user", "a"}, {"user", "b"}}), HttpError);
  EXPECT_THROW(renderChat(l2, {{"user", "a"}, {"assistant", "b"}}), HttpError);
  ChatTemplate g;
  g.form = ChatForm::Gemma;
  g.bos = "<bos>";
  EXPECT_EQ(renderChat(g, {{"system", "S"}, {"user", "u"}, {"assistant", "m"}}),
            "<bos><start_of_turn>user\nS\n\nu<end_of_turn>\n<start_of_turn>model\nm<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_THROW(renderChat(g, {{"tool", "x"}}), HttpError);
  ChatTemplate none;
  none.problem = "no template";
  try {
    renderChat(none, {{"user", "x"}});
    FAIL();
  } catch (const HttpError &e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_STREQ(e.what(), "no template");
  }
}

TEST(ChatTemplate, LoadsConfigForms) {
  std::string path = ::testing::TempDir() + "/serve_unit_tokenizer_config.json";
  {
    std::ofstream out(path);
    out << R"({"bos_token": {"content": "<B>"}, "chat_template": [{"name": "tool_use", "template": "x"},
              {"name": "default", "template": "{{ bos_token }}<|start_header_id|><|eot_id|>"}]})";
  }
  ChatTemplate t = loadChatTemplate(path, "");
  EXPECT_EQ(t.form, ChatForm::Llama3);
  EXPECT_EQ(t.bos, "<B>");
  EXPECT_EQ(renderChat(t, {{"user", "hi"}}),
            "<B><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(loadChatTemplate(path, "gemma").form, ChatForm::Gemma);
  EXPECT_THROW(loadChatTemplate(path, "jinja"), std::runtime_error);
  EXPECT_THROW(loadChatTemplate(path + ".absent", ""), std::runtime_error);
  std::remove(path.c_str());
}

namespace {
ServerOptions parse(std::vector<std::string> args) {
  std::vector<char *> argv{const_cast<char *>("kiln-serve")};
  for (auto &a : args)
    argv.push_back(a.data());
  return parseOptions(int(argv.size()), argv.data());
}
} // namespace

TEST(Options, ModelOptionsFollowTheirModel) {
  ServerOptions o = parse({"--model", "a=x.kiln", "--max-sequences", "3", "--model", "b=y.kiln", "--tokenizer", "t.json",
                           "--port", "0", "--request-timeout", "1.5"});
  ASSERT_EQ(o.models.size(), 2u);
  EXPECT_EQ(o.models[0].maxSequences, 3);
  EXPECT_EQ(o.models[1].maxSequences, 4);
  EXPECT_EQ(o.models[1].tokenizer, "t.json");
  EXPECT_EQ(o.port, 0);
  EXPECT_DOUBLE_EQ(o.requestTimeoutSeconds, 1.5);
}

TEST(Options, SpeculationForms) {
  ServerOptions o = parse({"--model", "a=x.kiln", "--speculate", "lookup", "--model", "b=y.kiln", "--speculate",
                           "lookup:6", "--model", "c=z.kiln", "--speculate", "draft:/m/small.kiln", "--model", "d=w.kiln",
                           "--speculate", "draft:/m/v:2/small.kiln:5"});
  ASSERT_EQ(o.models.size(), 4u);
  EXPECT_EQ(o.models[0].speculateLookup, 4);
  EXPECT_EQ(o.models[1].speculateLookup, 6);
  EXPECT_EQ(o.models[2].speculateLookup, 0);
  EXPECT_EQ(o.models[2].speculateDraft, "/m/small.kiln");
  EXPECT_EQ(o.models[2].draftTokens, 4);
  EXPECT_EQ(o.models[3].speculateDraft, "/m/v:2/small.kiln"); // a colon inside the path stays
  EXPECT_EQ(o.models[3].draftTokens, 5);
  for (const char *bad : {"draft", "draft:", "draft:x.kiln:0", "draft:x.kiln:65", "lookup:0", "ngram"})
    EXPECT_THROW(parse({"--model", "a=x", "--speculate", bad}), std::runtime_error) << bad;
}

TEST(Options, RefusesBadInput) {
  EXPECT_THROW(parse({}), std::runtime_error);
  EXPECT_THROW(parse({"--model", "nopath"}), std::runtime_error);
  EXPECT_THROW(parse({"--tokenizer", "t.json"}), std::runtime_error);
  EXPECT_THROW(parse({"--model", "a=x", "--max-sequences", "0"}), std::runtime_error);
  EXPECT_THROW(parse({"--model", "a=x", "--port", "70000"}), std::runtime_error);
  EXPECT_THROW(parse({"--model", "a=x", "--model", "a=y"}), std::runtime_error);
  EXPECT_THROW(parse({"--model", "a b=x"}), std::runtime_error);
  EXPECT_THROW(parse({"--model", "a=x", "--bogus"}), std::runtime_error);
  std::string path = ::testing::TempDir() + "/serve_unit_config.json";
  {
    std::ofstream out(path);
    out << R"({"port": 1, "models": [{"name": "a", "path": "x", "max_sequence": 2}]})";
  }
  try {
    parse({"--config", path});
    FAIL();
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("max_sequence"), std::string::npos);
  }
  std::remove(path.c_str());
}

TEST(TensorJson, HalfAndBfloat16RoundTripAndRound) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (!nan)
      ASSERT_EQ(floatToHalf(halfToFloat(uint16_t(h))), h) << std::hex << h;
    else
      ASSERT_TRUE(std::isnan(halfToFloat(uint16_t(h))));
    bool bnan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    if (!bnan)
      ASSERT_EQ(floatToBf16(bf16ToFloat(uint16_t(h))), h) << std::hex << h;
  }
  // Nearest even at ties, overflow to infinity, subnormals.
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00);     // tie: down to even
  EXPECT_EQ(floatToHalf(1.0f + 3.0f / 2048), 0x3c02);     // tie: up to even
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie: to even (zero)
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToBf16(1.0f + 1.0f / 256), 0x3f80);       // tie: down to even
  EXPECT_EQ(floatToBf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  EXPECT_STREQ(v2DtypeName(KILN_DTYPE_BFLOAT16), "BF16");
  EXPECT_STREQ(v2DtypeName(KILN_DTYPE_STRING), "BYTES");
}

TEST(TensorJson, ChecksShapeTypeAndRange) {
  int64_t dims[2] = {-1, 2};
  const char *syms[2] = {"n", ""};
  kiln_tensor_info info{"x", KILN_DTYPE_INT8, 2, dims, syms};
  auto in = [](const char *text) { return nlohmann::json::parse(text); };
  OwnedTensor t;
  tensorFromJson(in(R"({"name":"x","datatype":"INT8","shape":[2,2],"data":[[1,-128],[127,0]]})"), info, t, "input 'x'");
  ASSERT_NE(t.t, nullptr);
  EXPECT_EQ(tensorDataToJson(t.t), in("[1,-128,127,0]"));
  auto refused = [&](const char *text, const char *needle) {
    OwnedTensor u;
    try {
      tensorFromJson(in(text), info, u, "input 'x'");
      ADD_FAILURE() << text;
    } catch (const HttpError &e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("input 'x'", 0), 0u) << e.what();
    }
  };
  refused(R"({"datatype":"INT8","shape":[1,2],"data":[1,128]})", "element 1");
  refused(R"({"datatype":"INT8","shape":[1,2],"data":[1,1.5]})", "element 1");
  refused(R"({"datatype":"FP32","shape":[1,2],"data":[1,1]})", "INT8");
  refused(R"({"datatype":"INT8","shape":[1,3],"data":[1,1,1]})", "dim 1");
  refused(R"({"datatype":"INT8","shape":[2],"data":[1,1]})", "rank");
  refused(R"({"datatype":"INT8","shape":[2,2],"data":[1,1]})", "elements");
  refused(R"({"datatype":"INT8","shape":[-1,2],"data":[]})", "non-negative");
}
