// Command line and config file parsing for kiln-serve.
#include "options.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace kiln::serve {
namespace {

const char *kUsage =
    "usage: kiln-serve --model NAME=PATH.kiln [model options] [--model ...] [server options]\n"
    "       kiln-serve --config FILE.json [server options]\n"
    "model options (apply to the --model before them):\n"
    "  --tokenizer FILE         tokenizer.json (text prompts, chat, stop strings)\n"
    "  --tokenizer-config FILE  tokenizer_config.json holding chat_template (default: beside the tokenizer)\n"
    "  --chat-template FORM     llama3, chatml, llama2 or gemma instead of recognizing the config's\n"
    "  --max-sequences N        decode slots: sequences batched in one decode step (default 4)\n"
    "  --prefill-chunk N        prompt tokens per prefill run between decode steps; 0: whole (default 256)\n"
    "  --max-queue N            requests waiting for a slot before 429 (default 64)\n"
    "  --max-context N          KV cache tokens per sequence (default: the artifact's)\n"
    "  --kv-cache-blocks N      paged artifacts: KV cache blocks shared by all sequences (default: enough\n"
    "                           for every slot at full context); sequences are admitted by free blocks\n"
    "  --speculate lookup[:K]   prompt-lookup speculative decoding while one request decodes alone:\n"
    "                           up to K drafted tokens per step (default 4), the same tokens\n"
    "  --speculate draft:PATH[:K]  a smaller decoder artifact with the same vocabulary drafts K tokens\n"
    "                           per step (default 4) while one request decodes alone; the same tokens\n"
    "  --no-prefix-cache        paged artifacts: do not keep prompt blocks for later requests (the prefix\n"
    "                           cache is on by default: a prompt starting with cached blocks shares them)\n"
    "  --threads N              kernel threads of the model (default: all cores)\n"
    "server options:\n"
    "  --host ADDR              listen address (default 127.0.0.1)\n"
    "  --port N                 listen port (default 8080; 0: any free port, logged)\n"
    "  --request-timeout S      per-request limit, queue included (default 600)\n"
    "  --drain-timeout S        SIGTERM grace period before in-flight work is cancelled (default 30)\n"
    "  --max-body-bytes N       request body limit (default 16 MiB)\n"
    "  --http-threads N         connection threads (default: slots + queues of all models + 16)\n"
    "  --trace-dir DIR          write one Chrome/Perfetto trace JSON per request\n"
    "  --no-request-log         no JSON log line per request\n"
    "  --min-step-ms X          pad each decode step to X ms (testing: emulates a slower model)\n";

long long toInt(const std::string &opt, const std::string &v, long long lo, long long hi);

// "lookup[:K]" (tokens drafted per step) or "draft:PATH[:K]" (a draft decoder artifact).
void speculation(const std::string &v, const std::string &what, ModelOptions &mo) {
  mo.speculateLookup = 0;
  mo.speculateDraft.clear();
  if (v == "lookup") {
    mo.speculateLookup = 4;
  } else if (v.rfind("lookup:", 0) == 0) {
    mo.speculateLookup = int(toInt(what, v.substr(7), 1, 64));
  } else if (v.rfind("draft:", 0) == 0 && v.size() > 6) {
    std::string rest = v.substr(6);
    size_t colon = rest.find_last_of(':');
    // PATH:K when what follows the last colon is a number (paths may hold colons themselves).
    if (colon != std::string::npos && colon + 1 < rest.size() &&
        rest.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
      mo.draftTokens = int(toInt(what, rest.substr(colon + 1), 1, 64));
      rest = rest.substr(0, colon);
    }
    if (rest.empty())
      throw std::runtime_error(what + ": draft: needs the draft decoder artifact's path");
    mo.speculateDraft = rest;
  } else {
    throw std::runtime_error(what + ": expected lookup[:K] or draft:PATH[:K], got '" + v + "'");
  }
}

long long toInt(const std::string &opt, const std::string &v, long long lo, long long hi) {
  char *end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo || x > hi)
    throw std::runtime_error(opt + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             "], got '" + v + "'");
  return x;
}

double toSeconds(const std::string &opt, const std::string &v) {
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(x > 0) || x > 1e7)
    throw std::runtime_error(opt + ": expected a positive number of seconds, got '" + v + "'");
  return x;
}

// Config file: {"host", "port", "request_timeout", "drain_timeout", "max_body_bytes", "http_threads",
// "trace_dir", "models": [{"name", "path", "tokenizer", "tokenizer_config", "chat_template",
// "max_sequences", "max_queue", "max_context", "threads"}]}. Unknown keys are errors (a typo
// silently ignored would serve with the wrong limits).
void readConfig(const std::string &file, ServerOptions &o) {
  std::ifstream in(file);
  if (!in)
    throw std::runtime_error("--config: cannot read " + file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception &e) {
    throw std::runtime_error("--config " + file + ": " + e.what());
  }
  if (!j.is_object())
    throw std::runtime_error("--config " + file + ": expected a JSON object");
  auto str = [&](const nlohmann::json &v, const std::string &key) {
    if (!v.is_string())
      throw std::runtime_error("--config " + file + ": '" + key + "' must be a string");
    return v.get<std::string>();
  };
  auto num = [&](const nlohmann::json &v, const std::string &key, long long lo, long long hi) {
    if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
      throw std::runtime_error("--config " + file + ": '" + key + "' must be an integer in [" + std::to_string(lo) +
                               ", " + std::to_string(hi) + "]");
    return v.get<long long>();
  };
  auto secs = [&](const nlohmann::json &v, const std::string &key) {
    if (!v.is_number() || !(v.get<double>() > 0))
      throw std::runtime_error("--config " + file + ": '" + key + "' must be a positive number");
    return v.get<double>();
  };
  for (auto &[k, v] : j.items()) {
    if (k == "host") o.host = str(v, k);
    else if (k == "port") o.port = int(num(v, k, 0, 65535));
    else if (k == "request_timeout") o.requestTimeoutSeconds = secs(v, k);
    else if (k == "drain_timeout") o.drainSeconds = secs(v, k);
    else if (k == "max_body_bytes") o.maxBodyBytes = size_t(num(v, k, 1024, 1ll << 32));
    else if (k == "http_threads") o.httpThreads = int(num(v, k, 4, 4096));
    else if (k == "trace_dir") o.traceDir = str(v, k);
    else if (k == "models") {
      if (!v.is_array())
        throw std::runtime_error("--config " + file + ": 'models' must be an array");
      for (auto &m : v) {
        if (!m.is_object())
          throw std::runtime_error("--config " + file + ": each model must be an object");
        ModelOptions mo;
        for (auto &[mk, mv] : m.items()) {
          if (mk == "name") mo.name = str(mv, mk);
          else if (mk == "path") mo.path = str(mv, mk);
          else if (mk == "tokenizer") mo.tokenizer = str(mv, mk);
          else if (mk == "tokenizer_config") mo.tokenizerConfig = str(mv, mk);
          else if (mk == "chat_template") mo.chatTemplate = str(mv, mk);
          else if (mk == "max_sequences") mo.maxSequences = int(num(mv, mk, 1, 1024));
          else if (mk == "max_queue") mo.maxQueue = int(num(mv, mk, 0, 100000));
          else if (mk == "max_context") mo.maxContext = num(mv, mk, 1, 1ll << 24);
          else if (mk == "threads") mo.threads = int(num(mv, mk, 0, 1024));
          else if (mk == "prefill_chunk") mo.prefillChunk = int(num(mv, mk, 0, 1 << 20));
          else if (mk == "kv_cache_blocks") mo.kvCacheBlocks = num(mv, mk, 0, 1ll << 32);
          else if (mk == "speculate") speculation(str(mv, mk), "--config " + file + ": speculate", mo);
          else if (mk == "prefix_cache") {
            if (!mv.is_boolean())
              throw std::runtime_error("--config " + file + ": prefix_cache must be true or false");
            mo.prefixCache = mv.get<bool>();
          }
          else throw std::runtime_error("--config " + file + ": unknown model key '" + mk + "'");
        }
        // Relative paths are the config file's neighbours, so a directory holding the config, the
        // artifacts and the tokenizers can be mounted anywhere (KServe mounts it at /mnt/models).
        std::string dir = file.find('/') == std::string::npos ? "" : file.substr(0, file.find_last_of('/') + 1);
        for (std::string *p : {&mo.path, &mo.tokenizer, &mo.tokenizerConfig, &mo.speculateDraft})
          if (!p->empty() && (*p)[0] != '/')
            *p = dir + *p;
        o.models.push_back(mo);
      }
    } else {
      throw std::runtime_error("--config " + file + ": unknown key '" + k + "'");
    }
  }
}

} // namespace

ServerOptions parseOptions(int argc, char **argv) {
  ServerOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    auto model = [&]() -> ModelOptions & {
      if (o.models.empty())
        throw std::runtime_error(a + " must follow a --model");
      return o.models.back();
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--model") {
      std::string v = value();
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        throw std::runtime_error("--model: expected NAME=PATH.kiln, got '" + v + "'");
      ModelOptions m;
      m.name = v.substr(0, eq);
      m.path = v.substr(eq + 1);
      o.models.push_back(m);
    } else if (a == "--config") readConfig(value(), o);
    else if (a == "--tokenizer") model().tokenizer = value();
    else if (a == "--tokenizer-config") model().tokenizerConfig = value();
    else if (a == "--chat-template") model().chatTemplate = value();
    else if (a == "--max-sequences") model().maxSequences = int(toInt(a, value(), 1, 1024));
    else if (a == "--max-queue") model().maxQueue = int(toInt(a, value(), 0, 100000));
    else if (a == "--max-context") model().maxContext = toInt(a, value(), 1, 1ll << 24);
    else if (a == "--threads") model().threads = int(toInt(a, value(), 0, 1024));
    else if (a == "--prefill-chunk") model().prefillChunk = int(toInt(a, value(), 0, 1 << 20));
    else if (a == "--kv-cache-blocks") model().kvCacheBlocks = toInt(a, value(), 0, 1ll << 32);
    else if (a == "--no-prefix-cache") model().prefixCache = false;
    else if (a == "--speculate") speculation(value(), a, model());
    else if (a == "--host") o.host = value();
    else if (a == "--port") o.port = int(toInt(a, value(), 0, 65535));
    else if (a == "--request-timeout") o.requestTimeoutSeconds = toSeconds(a, value());
    else if (a == "--drain-timeout") o.drainSeconds = toSeconds(a, value());
    else if (a == "--max-body-bytes") o.maxBodyBytes = size_t(toInt(a, value(), 1024, 1ll << 32));
    else if (a == "--http-threads") o.httpThreads = int(toInt(a, value(), 4, 4096));
    else if (a == "--trace-dir") o.traceDir = value();
    else if (a == "--no-request-log") o.logRequests = false;
    else if (a == "--min-step-ms") o.minStepMs = toSeconds(a, value());
    else
      throw std::runtime_error("unknown option '" + a + "' (see --help)");
  }
  if (o.models.empty())
    throw std::runtime_error("no model: give --model NAME=PATH.kiln or --config FILE (see --help)");
  for (size_t i = 0; i < o.models.size(); ++i) {
    const ModelOptions &m = o.models[i];
    if (m.name.empty() || m.path.empty())
      throw std::runtime_error("model " + std::to_string(i) + ": needs a name and a path");
    for (char c : m.name)
      if (!(isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.'))
        throw std::runtime_error("model name '" + m.name + "': use letters, digits, '-', '_', '.'");
    for (size_t k = 0; k < i; ++k)
      if (o.models[k].name == m.name)
        throw std::runtime_error("model name '" + m.name + "' given twice");
  }
  return o;
}

} // namespace kiln::serve
