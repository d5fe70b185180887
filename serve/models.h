// The models a kiln-serve process serves: artifact, tokenizer, chat format and scheduler each.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "chat_template.h"
#include "kiln/kiln.h"
#include "kiln/tokenizer.h"
#include "options.h"
#include "scheduler.h"

namespace kiln::serve {

class Metrics;

struct ServedModel {
  ModelOptions options;
  kiln_model *model = nullptr;
  kiln_tokenizer *tokenizer = nullptr; // null: token-id prompts only, no text
  bool decoder = false;
  int64_t maxContext = 0;              // decoders: KV cache tokens per sequence
  int64_t kvBlockSize = 0;             // paged KV cache: tokens per block (0: not paged)
  int64_t kvPoolBlocks = 0;            // paged KV cache: blocks shared by all sequences
  int32_t vocab = 0;
  std::vector<int32_t> stopIds;        // the tokenizer's special end tokens
  ChatTemplate chat;
  int64_t created = 0;                 // unix seconds (OpenAI's "created")
  std::unique_ptr<Scheduler> scheduler;
  kiln_model *draftModel = nullptr;         // --speculate draft:PATH: the draft decoder
  kiln_generator *draftGenerator = nullptr; // its one sequence, driven by the scheduler's engine

  const std::string &name() const { return options.name; }
  ~ServedModel();
};

class ModelRegistry {
public:
  // Loads one model (artifact, tokenizer, chat template, slots). Throws std::runtime_error with
  // the runtime's message (e.g. an artifact this host cannot run).
  void load(const ModelOptions &options, Metrics &metrics);
  ServedModel *find(const std::string &name) const;
  const std::vector<std::unique_ptr<ServedModel>> &all() const { return models_; }
  // Set once every model is loaded (/health, /v2/health/ready).
  std::atomic<bool> ready{false};

private:
  std::vector<std::unique_ptr<ServedModel>> models_;
};

} // namespace kiln::serve
