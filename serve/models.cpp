// Loading the served models.
#include "models.h"

#include <chrono>
#include <stdexcept>
#include <sys/stat.h>

#include "metrics.h"

namespace kiln::serve {
namespace {

// Turns a runtime error into an exception with its message (and frees it).
void check(kiln_error *e, const std::string &what) {
  if (!e)
    return;
  std::string msg = what + ": " + kiln_error_message(e);
  kiln_error_free(e);
  throw std::runtime_error(msg);
}

bool fileExists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

} // namespace

ServedModel::~ServedModel() {
  scheduler.reset(); // workers joined, generators and sessions destroyed before the model
  kiln_generator_destroy(draftGenerator);
  kiln_model_destroy(draftModel);
  kiln_tokenizer_destroy(tokenizer);
  kiln_model_destroy(model);
}

void ModelRegistry::load(const ModelOptions &o, Metrics &metrics) {
  auto m = std::make_unique<ServedModel>();
  m->options = o;
  m->created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  kiln_model_options mo;
  kiln_model_options_init(&mo);
  mo.num_threads = o.threads;
  check(kiln_model_load(o.path.c_str(), &mo, &m->model), "model '" + o.name + "' (" + o.path + ")");
  m->decoder = kiln_model_is_decoder(m->model) != 0;
  if (!o.tokenizer.empty()) {
    check(kiln_tokenizer_load(o.tokenizer.c_str(), &m->tokenizer), "model '" + o.name + "' tokenizer");
    // The end tokens kiln-run generate stops at: the special ones among these (Gemma's "</s>" is
    // ordinary text; chat models end a turn with a second token).
    for (const char *n : {"<|endoftext|>", "</s>", "<|eot_id|>", "<|end_of_text|>", "<|im_end|>", "<eos>",
                          "<end_of_turn>"}) {
      int32_t id = kiln_tokenizer_token_to_id(m->tokenizer, n);
      if (id >= 0 && kiln_tokenizer_is_special(m->tokenizer, id))
        m->stopIds.push_back(id);
    }
    std::string cfg = o.tokenizerConfig;
    if (cfg.empty()) {
      std::string dir = o.tokenizer.substr(0, o.tokenizer.find_last_of('/') + 1);
      if (fileExists(dir + "tokenizer_config.json"))
        cfg = dir + "tokenizer_config.json";
    }
    try {
      m->chat = loadChatTemplate(cfg, o.chatTemplate);
    } catch (const std::exception &e) {
      throw std::runtime_error("model '" + o.name + "': " + e.what());
    }
  } else {
    m->chat.problem = "the model was served without --tokenizer, so it takes token-id prompts only";
    if (!o.chatTemplate.empty() || !o.tokenizerConfig.empty())
      throw std::runtime_error("model '" + o.name + "': a chat template needs --tokenizer");
  }

  kiln_model *model = m->model;
  bool decoder = m->decoder;
  int64_t maxContext = o.maxContext;
  int sequences = o.maxSequences;
  int64_t blocks = o.kvCacheBlocks;
  bool prefixCache = o.prefixCache;
  auto make = [model, decoder, maxContext, sequences, blocks, prefixCache, name = o.name](int index) {
    Slot s;
    s.index = index;
    if (decoder) {
      kiln_generator_options go;
      kiln_generator_options_init(&go);
      go.max_context = maxContext;
      go.max_sequences = sequences; // one generator decodes all of them, batched
      go.kv_cache_blocks = blocks;  // paged artifacts only (the generator refuses it otherwise)
      check(kiln_generator_create(model, &go, &s.generator), "model '" + name + "' generator");
      // A paged cache shares cached prompt blocks between requests (a contiguous one has none).
      if (prefixCache && kiln_generator_kv_block_size(s.generator) > 0) {
        kiln_generator_destroy(s.generator);
        s.generator = nullptr;
        go.prefix_caching = 1;
        check(kiln_generator_create(model, &go, &s.generator), "model '" + name + "' generator");
      }
    } else {
      check(kiln_session_create(model, &s.session), "model '" + name + "' session");
    }
    return s;
  };
  auto destroy = [](Slot &s) {
    kiln_generator_destroy(s.generator);
    kiln_session_destroy(s.session);
    s.generator = nullptr;
    s.session = nullptr;
  };
  m->scheduler = std::make_unique<Scheduler>(o.name, o.maxSequences, o.maxQueue, make, destroy, metrics, decoder,
                                             size_t(o.prefillChunk));
  if (decoder)
    m->scheduler->speculate(o.speculateLookup);
  if (!o.speculateDraft.empty()) {
    if (!decoder)
      throw std::runtime_error("model '" + o.name + "': --speculate draft: needs a decoder artifact");
    const std::string what = "model '" + o.name + "' draft (" + o.speculateDraft + ")";
    check(kiln_model_load(o.speculateDraft.c_str(), &mo, &m->draftModel), what);
    if (!kiln_model_is_decoder(m->draftModel))
      throw std::runtime_error(what + ": not a decoder artifact (compile it with a KV cache)");
    kiln_generator_options go;
    kiln_generator_options_init(&go);
    check(kiln_generator_create(m->draftModel, &go, &m->draftGenerator), what);
    const int32_t draftVocab = kiln_generator_vocab_size(m->draftGenerator);
    const int32_t vocab = kiln_generator_vocab_size(m->scheduler->slot(0).generator);
    if (draftVocab != vocab)
      throw std::runtime_error(what + ": its vocabulary has " + std::to_string(draftVocab) + " tokens, the model's " +
                               std::to_string(vocab) + ": a draft must share the model's tokenizer");
    m->scheduler->speculateWithDraft(m->draftGenerator, o.draftTokens);
  }
  if (decoder) {
    m->maxContext = kiln_generator_max_context(m->scheduler->slot(0).generator);
    m->vocab = kiln_generator_vocab_size(m->scheduler->slot(0).generator);
    m->kvBlockSize = kiln_generator_kv_block_size(m->scheduler->slot(0).generator);
    if (m->kvBlockSize > 0) {
      kiln_generator_cache_stats cs;
      cs.struct_size = sizeof cs;
      kiln_generator_cache_stats_get(m->scheduler->slot(0).generator, &cs);
      m->kvPoolBlocks = cs.blocks_total;
    }
  }
  models_.push_back(std::move(m));
}

ServedModel *ModelRegistry::find(const std::string &name) const {
  for (const auto &m : models_)
    if (m->name() == name)
      return m.get();
  return nullptr;
}

} // namespace kiln::serve
