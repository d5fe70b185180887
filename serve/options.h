// kiln-serve's settings: command line and JSON config file (docs/serving.md lists them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::serve {

struct ModelOptions {
  std::string name;
  std::string path;            // the .kiln artifact
  std::string tokenizer;       // tokenizer.json ("" = none: token-id prompts only)
  std::string tokenizerConfig; // tokenizer_config.json with chat_template ("" = beside the tokenizer, if any)
  std::string chatTemplate;    // force a known form: llama3, chatml, llama2, gemma ("" = recognize)
  int maxSequences = 4;        // decode slots: sequences batched in one decode step
  int maxQueue = 64;           // waiting requests beyond the slots
  int64_t maxContext = 0;      // KV cache per sequence; 0 = the artifact's
  int threads = 0;             // kernel threads of the model; 0 = the runtime's default
  int prefillChunk = 256;      // prompt tokens per prefill run between decode steps; 0 = whole prompts
  int64_t kvCacheBlocks = 0;   // paged artifacts (kiln-compile --kv-block-size): blocks in the KV pool;
                               // 0 = every sequence at full context
  bool prefixCache = true;     // paged artifacts: share cached prompt blocks between requests
  int speculateLookup = 0;     // prompt-lookup speculative decoding: tokens drafted per step; 0 = off
  std::string speculateDraft;  // draft-model speculative decoding: the draft decoder artifact ("" = off)
  int draftTokens = 4;         // tokens the draft model proposes per step
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;             // 0 = any free port (printed in the "listening" log line)
  std::vector<ModelOptions> models;
  double requestTimeoutSeconds = 600;
  double drainSeconds = 30;
  size_t maxBodyBytes = 16u << 20;
  int httpThreads = 0;         // 0 = enough for every slot and queue entry plus spares
  std::string traceDir;        // per-request Chrome trace JSON files ("" = none)
  bool logRequests = true;
  // Pads every decode step to at least this long: emulates a larger model's step time with the
  // tiny test models (load tests, the e2e tests' open streams). 0 in production.
  double minStepMs = 0;
};

// Parses argv; throws std::runtime_error with a one-line message on bad options. Exits 0 on --help.
ServerOptions parseOptions(int argc, char **argv);

} // namespace kiln::serve
