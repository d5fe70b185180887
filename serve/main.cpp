// kiln-serve: serves compiled kiln artifacts over HTTP (docs/serving.md).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "http_server.h"
#include "kserve_api.h"
#include "metrics.h"
#include "models.h"
#include "openai_api.h"
#include "options.h"

using namespace kiln::serve;

namespace {

void logEvent(const nlohmann::json &j) {
  std::fprintf(stderr, "%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(stderr);
}

} // namespace

int main(int argc, char **argv) {
  ServerOptions options;
  try {
    options = parseOptions(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-serve: %s\n", e.what());
    return 2;
  }
  // A client that goes away mid-write must not kill the server.
  std::signal(SIGPIPE, SIG_IGN);
  // SIGTERM and SIGINT are taken by sigwait() below: blocked here, before any thread starts, so
  // every thread inherits the mask and none is interrupted.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  Metrics metrics;
  ModelRegistry models;
  ServerState state{options, models, metrics};
  HttpServer server(state);
  registerOpenAiRoutes(server, state);
  registerKServeRoutes(server, state);
  int port = 0;
  try {
    port = server.bind();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-serve: %s\n", e.what());
    return 1;
  }
  // Listening before loading: /health answers 503 until every model is loaded.
  std::atomic<bool> listenReturned{false};
  std::thread listener([&] {
    server.listen();
    listenReturned = true;
  });
  logEvent({{"event", "listening"}, {"host", options.host}, {"port", port}});

  int status = 0;
  try {
    for (const ModelOptions &m : options.models) {
      models.load(m, metrics);
      const ServedModel &sm = *models.find(m.name);
      logEvent({{"event", "model_loaded"}, {"model", m.name}, {"path", m.path},
                {"kind", sm.decoder ? "decoder" : "forward"}, {"slots", m.maxSequences}, {"queue", m.maxQueue},
                {"max_context", sm.maxContext}, {"kv_block_size", sm.kvBlockSize},
                {"kv_cache_blocks", sm.kvPoolBlocks}, {"prefix_cache", sm.kvBlockSize > 0 && m.prefixCache},
                {"chat_template", chatFormName(sm.chat.form)}});
    }
    models.ready = true;
    logEvent({{"event", "ready"}, {"models", options.models.size()}});
  } catch (const std::exception &e) {
    logEvent({{"event", "startup_failed"}, {"error", e.what()}});
    std::fprintf(stderr, "kiln-serve: %s\n", e.what());
    status = 1;
  }

  if (status == 0) {
    int sig = 0;
    sigwait(&stopSignals, &sig);
    // Drain: refuse new work (/health turns 503 so load balancers stop routing here), let what
    // runs and waits finish within the grace period, then cancel the rest.
    logEvent({{"event", "draining"}, {"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"},
              {"grace_seconds", options.drainSeconds}});
    state.draining = true;
    for (const auto &m : models.all())
      m->scheduler->stopAdmitting();
    auto deadline = Clock::now() + std::chrono::milliseconds(int64_t(options.drainSeconds * 1000));
    auto busy = [&] {
      if (state.active.load() > 0)
        return true;
      for (const auto &m : models.all())
        if (!m->scheduler->idle())
          return true;
      return false;
    };
    while (busy() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    bool cancelled = busy();
    if (cancelled) {
      for (const auto &m : models.all())
        m->scheduler->cancelAll();
      // Cancelled sequences stop within a step; their handlers then write their last bytes.
      auto hard = Clock::now() + std::chrono::seconds(5);
      while (state.active.load() > 0 && Clock::now() < hard)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    logEvent({{"event", "drained"}, {"cancelled_in_flight", cancelled}});
  }
  // httplib's stop() does nothing before its accept loop runs: wait for it (start-up failures can
  // get here within microseconds of starting the listener).
  while (!server.running() && !listenReturned)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server.stop();
  listener.join();
  return status;
}
