// kiln-run generate: autoregressive decoding with a decoder artifact, streaming text or ids to stdout.
#include "generate.h"

#include "kiln/kiln.h"
#include "kiln/tokenizer.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <vector>

namespace kiln::tools {
namespace {

const char kGenerateUsage[] =
    "usage: kiln-run generate ARTIFACT (--prompt TEXT --tokenizer FILE | --prompt-ids IDS) [options]\n"
    "\n"
    "Decodes with a decoder artifact (a model in the \"with past\" layout compiled with a KV cache)\n"
    "and streams the new text (or ids) to stdout.\n"
    "\n"
    "  --prompt TEXT          prompt text, encoded with --tokenizer (repeatable: one sequence each);\n"
    "                         special tokens written in it (<s>, <start_of_turn>...) become their ids\n"
    "  --prompt-ids IDS       prompt token ids, comma separated (repeatable: one sequence each)\n"
    "  --tokenizer FILE       a Hugging Face tokenizer.json (BPE: byte-level or SentencePiece-style)\n"
    "  --max-new-tokens N     per sequence (default 64)\n"
    "  --temperature X        0 = greedy (default)\n"
    "  --top-k N --top-p X --min-p X --repetition-penalty X --seed N\n"
    "  --no-parse-special     special tokens in --prompt stay text\n"
    "  --stop-id ID           end a sequence at this token (repeatable); the tokenizer's special\n"
    "                         end tokens (<|endoftext|>, </s>, <|eot_id|>, <|end_of_text|>,\n"
    "                         <|im_end|>, <eos>, <end_of_turn>) are added unless --no-eos\n"
    "  --max-context N        KV cache capacity in tokens (default: the artifact's)\n"
    "  --prefill-chunk N      prompt tokens per model run (default 512; 0: the whole prompt in one\n"
    "                         run); the same logits, less memory for long prompts\n"
    "  --speculate lookup[:K] prompt-lookup speculative decoding (one sequence): each step proposes up\n"
    "                         to K tokens (default 4) that followed an earlier occurrence of the last\n"
    "                         tokens and verifies them in one run; the same tokens, faster when the\n"
    "                         text repeats (--stats gives the acceptance rate)\n"
    "  --speculate draft:PATH[:K]  a smaller decoder artifact with the same tokenizer drafts K tokens\n"
    "                         per step (default 4), greedily; the same tokens\n"
    "  --threads N            kernel threads (default: all cores)\n"
    "  --weights-dir DIR      --weights=external artifacts: the ONNX external data's directory\n"
    "  --warmup W             decode W times untimed first (benchmarks; output only from the last)\n"
    "  --ids                  print token ids instead of text\n"
    "  --stats                print a JSON line of statistics to stderr at the end\n"
    "  --quiet                print nothing but --stats\n";

struct GenerateOptions {
  std::string artifact, tokenizer;
  std::vector<std::string> prompts;
  std::vector<std::vector<int32_t>> promptIds;
  int64_t maxNewTokens = 64, maxContext = 0, prefillChunk = -2; // -2: the runtime's default
  int32_t threads = 0;
  std::string weightsDir;
  int64_t warmup = 0;
  int32_t speculateLookup = 0; // draft tokens per step; 0: no speculation
  std::string draftModel;      // --speculate draft:PATH
  int32_t draftTokens = 4;
  kiln_sampling_params sampling{};
  std::vector<int32_t> stopIds;
  bool noEos = false, noParseSpecial = false, ids = false, stats = false, quiet = false;
};

[[noreturn]] void usage(const std::string &msg) { throw std::runtime_error(msg); }

int64_t toInt(const std::string &flag, const std::string &v, int64_t lo, int64_t hi) {
  errno = 0;
  char *end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo || x > hi)
    usage("invalid value for " + flag + ": '" + v + "'");
  return x;
}

double toDouble(const std::string &flag, const std::string &v) {
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || x != x)
    usage("invalid value for " + flag + ": '" + v + "'");
  return x;
}

std::vector<int32_t> parseIds(const std::string &v) {
  std::vector<int32_t> ids;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ','))
    ids.push_back(int32_t(toInt("--prompt-ids", item, INT32_MIN, INT32_MAX)));
  if (ids.empty())
    usage("--prompt-ids needs at least one id");
  return ids;
}

struct ErrorOwner {
  kiln_error *e;
  ~ErrorOwner() { kiln_error_free(e); }
};
void check(kiln_error *e) {
  if (!e)
    return;
  ErrorOwner owner{e};
  throw std::runtime_error(kiln_error_message(e));
}

// Streams each new token of sequence 0..n-1 to stdout (text through the tokenizer's stream decoder).
struct Printer {
  kiln_tokenizer *tokenizer = nullptr;
  std::vector<kiln_tokenizer_stream *> streams;
  bool ids = false, quiet = false, multi = false;
  std::string error;

  static int onToken(void *self, size_t seq, int32_t token) {
    auto *p = static_cast<Printer *>(self);
    if (p->quiet)
      return 0;
    if (p->ids || !p->tokenizer) {
      if (p->multi)
        std::printf("[%zu] %d\n", seq, token);
      else
        std::printf("%d ", token);
    } else {
      const char *text = nullptr;
      size_t len = 0;
      if (kiln_error *e = kiln_tokenizer_stream_push(p->streams[seq], token, &text, &len)) {
        p->error = kiln_error_message(e);
        kiln_error_free(e);
        return 1;
      }
      if (p->multi && len)
        std::printf("[%zu] ", seq);
      std::fwrite(text, 1, len, stdout);
      if (p->multi && len)
        std::printf("\n");
    }
    std::fflush(stdout);
    return 0;
  }
};

// The ids of those of `names` that are special tokens of `t`. Special only: Gemma's vocabulary has
// "</s>" as ordinary text (a non-special added token), and chat models end a turn with a second
// token (<|eot_id|>, <|im_end|>, <end_of_turn>) besides the end of text.
std::vector<int32_t> specialIds(kiln_tokenizer *t, std::initializer_list<const char *> names) {
  std::vector<int32_t> ids;
  for (const char *n : names) {
    int32_t id = kiln_tokenizer_token_to_id(t, n);
    if (id >= 0 && kiln_tokenizer_is_special(t, id))
      ids.push_back(id);
  }
  return ids;
}

} // namespace

int runGenerate(int argc, char **argv) {
  GenerateOptions o;
  kiln_sampling_params_init(&o.sampling);
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kGenerateUsage, stdout);
      return 0;
    } else if (a == "--prompt")
      o.prompts.push_back(value());
    else if (a == "--prompt-ids")
      o.promptIds.push_back(parseIds(value()));
    else if (a == "--tokenizer")
      o.tokenizer = value();
    else if (a == "--max-new-tokens")
      o.maxNewTokens = toInt(a, value(), 1, INT32_MAX);
    else if (a == "--max-context")
      o.maxContext = toInt(a, value(), 1, int64_t(1) << 24);
    else if (a == "--prefill-chunk")
      o.prefillChunk = toInt(a, value(), 0, int64_t(1) << 24);
    else if (a == "--warmup")
      o.warmup = toInt(a, value(), 0, 1000);
    else if (a == "--threads")
      o.threads = int32_t(toInt(a, value(), 0, 4096));
    else if (a == "--weights-dir")
      o.weightsDir = value();
    else if (a == "--temperature")
      o.sampling.temperature = float(toDouble(a, value()));
    else if (a == "--top-k")
      o.sampling.top_k = int32_t(toInt(a, value(), 0, INT32_MAX));
    else if (a == "--top-p")
      o.sampling.top_p = float(toDouble(a, value()));
    else if (a == "--min-p")
      o.sampling.min_p = float(toDouble(a, value()));
    else if (a == "--repetition-penalty")
      o.sampling.repetition_penalty = float(toDouble(a, value()));
    else if (a == "--seed")
      o.sampling.seed = uint64_t(toInt(a, value(), 0, INT64_MAX));
    else if (a == "--speculate") {
      const std::string v = value();
      if (v == "lookup")
        o.speculateLookup = 4;
      else if (v.rfind("lookup:", 0) == 0)
        o.speculateLookup = int32_t(toInt(a, v.substr(7), 1, 64));
      else if (v.rfind("draft:", 0) == 0 && v.size() > 6) {
        o.draftModel = v.substr(6);
        const size_t colon = o.draftModel.rfind(':');
        if (colon != std::string::npos && colon + 1 < o.draftModel.size() &&
            o.draftModel.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
          o.draftTokens = int32_t(toInt(a, o.draftModel.substr(colon + 1), 1, 64));
          o.draftModel.resize(colon);
        }
      } else
        usage("--speculate: expected lookup, lookup:K or draft:PATH[:K], got '" + v + "'");
    } else if (a == "--stop-id")
      o.stopIds.push_back(int32_t(toInt(a, value(), 0, INT32_MAX)));
    else if (a == "--no-eos")
      o.noEos = true;
    else if (a == "--no-parse-special")
      o.noParseSpecial = true;
    else if (a == "--ids")
      o.ids = true;
    else if (a == "--stats")
      o.stats = true;
    else if (a == "--quiet")
      o.quiet = true;
    else if (!a.empty() && a[0] == '-')
      usage("unknown option '" + a + "' (see kiln-run generate --help)");
    else if (o.artifact.empty())
      o.artifact = a;
    else
      usage("unexpected argument '" + a + "'");
  }
  if (o.artifact.empty())
    usage("no artifact given (see kiln-run generate --help)");
  if (o.prompts.empty() == o.promptIds.empty())
    usage("give the prompts either as --prompt (with --tokenizer) or as --prompt-ids");
  if (!o.prompts.empty() && o.tokenizer.empty())
    usage("--prompt needs --tokenizer");

  std::unique_ptr<kiln_tokenizer, void (*)(kiln_tokenizer *)> tokenizer(nullptr, kiln_tokenizer_destroy);
  if (!o.tokenizer.empty()) {
    kiln_tokenizer *t = nullptr;
    check(kiln_tokenizer_load(o.tokenizer.c_str(), &t));
    tokenizer.reset(t);
    if (!o.noEos)
      for (int32_t id : specialIds(t, {"<|endoftext|>", "</s>", "<|eot_id|>", "<|end_of_text|>", "<|im_end|>", "<eos>",
                                       "<end_of_turn>"}))
        o.stopIds.push_back(id);
  }
  std::vector<std::vector<int32_t>> prompts = o.promptIds;
  for (const std::string &text : o.prompts) {
    int32_t *ids = nullptr;
    size_t count = 0;
    // As Hugging Face's encode by default: the BOS added, special tokens in the text parsed.
    uint32_t flags = KILN_TOKENIZER_ADD_SPECIAL | (o.noParseSpecial ? 0 : KILN_TOKENIZER_PARSE_SPECIAL);
    check(kiln_tokenizer_encode(tokenizer.get(), text.data(), text.size(), flags, &ids, &count));
    prompts.emplace_back(ids, ids + count);
    kiln_tokenizer_ids_free(ids);
  }

  kiln_model_options mo;
  kiln_model_options_init(&mo);
  mo.num_threads = o.threads;
  mo.weights_dir = o.weightsDir.empty() ? nullptr : o.weightsDir.c_str();
  kiln_model *model = nullptr;
  check(kiln_model_load(o.artifact.c_str(), &mo, &model));
  std::unique_ptr<kiln_model, void (*)(kiln_model *)> modelOwner(model, kiln_model_destroy);
  kiln_generator_options go;
  kiln_generator_options_init(&go);
  go.max_context = o.maxContext;
  if (o.prefillChunk != -2)
    go.prefill_chunk = o.prefillChunk == 0 ? -1 : o.prefillChunk;
  kiln_generator *gen = nullptr;
  check(kiln_generator_create(model, &go, &gen));
  std::unique_ptr<kiln_generator, void (*)(kiln_generator *)> genOwner(gen, kiln_generator_destroy);

  // The draft model: the same threads, its own context.
  std::unique_ptr<kiln_model, void (*)(kiln_model *)> draftModelOwner(nullptr, kiln_model_destroy);
  std::unique_ptr<kiln_generator, void (*)(kiln_generator *)> draftOwner(nullptr, kiln_generator_destroy);
  if (!o.draftModel.empty()) {
    kiln_model *dm = nullptr;
    check(kiln_model_load(o.draftModel.c_str(), &mo, &dm));
    draftModelOwner.reset(dm);
    kiln_generator_options dgo;
    kiln_generator_options_init(&dgo);
    dgo.prefill_chunk = go.prefill_chunk;
    kiln_generator *dg = nullptr;
    check(kiln_generator_create(dm, &dgo, &dg));
    draftOwner.reset(dg);
  }

  Printer printer;
  printer.tokenizer = tokenizer.get();
  printer.ids = o.ids;
  printer.quiet = o.quiet;
  printer.multi = prompts.size() > 1;
  for (size_t s = 0; tokenizer && s < prompts.size(); ++s) {
    kiln_tokenizer_stream *st = nullptr;
    check(kiln_tokenizer_stream_create(tokenizer.get(), KILN_TOKENIZER_SKIP_SPECIAL, &st));
    printer.streams.push_back(st);
  }
  struct StreamsOwner {
    std::vector<kiln_tokenizer_stream *> &s;
    ~StreamsOwner() {
      for (auto *p : s)
        kiln_tokenizer_stream_destroy(p);
    }
  } streamsOwner{printer.streams};

  kiln_generate_options opts;
  kiln_generate_options_init(&opts);
  opts.sampling = o.sampling;
  opts.max_new_tokens = int32_t(o.maxNewTokens);
  opts.stop_tokens = o.stopIds.data();
  opts.stop_token_count = o.stopIds.size();
  opts.on_token = &Printer::onToken;
  opts.user_data = &printer;
  opts.speculate_lookup = o.speculateLookup;
  opts.draft = draftOwner.get();
  opts.draft_tokens = o.draftTokens;
  std::vector<const int32_t *> ptrs;
  std::vector<size_t> lens;
  for (const auto &p : prompts) {
    ptrs.push_back(p.data());
    lens.push_back(p.size());
  }
  for (int64_t w = 0; w < o.warmup; ++w) {
    kiln_generate_options quiet = opts;
    quiet.on_token = nullptr;
    kiln_generation *warm = nullptr;
    check(kiln_generate(gen, ptrs.data(), lens.data(), prompts.size(), &quiet, &warm));
    kiln_generation_destroy(warm);
  }
  int64_t draftedBefore = 0, acceptedBefore = 0;
  kiln_generator_speculation_stats(gen, &draftedBefore, &acceptedBefore);
  kiln_generation *result = nullptr;
  check(kiln_generate(gen, ptrs.data(), lens.data(), prompts.size(), &opts, &result));
  std::unique_ptr<kiln_generation, void (*)(kiln_generation *)> resultOwner(result, kiln_generation_destroy);
  if (!printer.error.empty())
    throw std::runtime_error("decoding tokens: " + printer.error);
  if (!o.quiet) {
    for (size_t s = 0; s < printer.streams.size(); ++s) {
      const char *text = nullptr;
      size_t len = 0;
      check(kiln_tokenizer_stream_flush(printer.streams[s], &text, &len));
      std::fwrite(text, 1, len, stdout);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  if (o.stats) {
    kiln_generation_stats st;
    kiln_generation_stats_get(result, &st);
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    static const char *reasons[] = {"none", "stop_token", "length", "cancelled", "context"};
    std::string finish = "[";
    for (size_t s = 0; s < prompts.size(); ++s)
      finish += std::string(s ? "," : "") + "\"" + reasons[kiln_generation_finish_reason(result, s)] + "\"";
    finish += "]";
    int64_t drafted = 0, accepted = 0;
    kiln_generator_speculation_stats(gen, &drafted, &accepted);
    drafted -= draftedBefore;
    accepted -= acceptedBefore;
    std::string speculation;
    if (o.speculateLookup > 0 || !o.draftModel.empty())
      speculation = ", \"draft_tokens\": " + std::to_string(drafted) + ", \"accepted_tokens\": " +
                    std::to_string(accepted) + ", \"acceptance\": " +
                    std::to_string(drafted > 0 ? double(accepted) / double(drafted) : 0.0);
    std::fprintf(stderr,
                 "{\"batch\": %zu, \"prompt_tokens\": %zu, \"new_tokens\": %zu, \"time_to_first_token_ms\": %.3f, "
                 "\"steps\": %zu, \"inter_token_median_ms\": %.3f, \"inter_token_p99_ms\": %.3f, "
                 "\"tokens_per_second\": %.2f, \"peak_memory_mb\": %.1f, \"finish\": %s%s}\n",
                 prompts.size(), st.prompt_tokens, st.new_tokens, st.time_to_first_token_ms, st.steps,
                 st.inter_token_median_ms, st.inter_token_p99_ms, st.tokens_per_second, ru.ru_maxrss / 1024.0,
                 finish.c_str(), speculation.c_str());
  }
  return 0;
}

} // namespace kiln::tools
