// The per-model scheduler: a bounded FIFO queue in front of a fixed number of slots.
//
// What it does today: each slot owns its own runtime state (a kiln_generator with batch 1 for a
// decoder, a kiln_session for a forward model) and a worker thread that takes the oldest queued
// job and runs it to completion on that slot: prefill, then one kiln_generator_next() per token.
// So up to --max-sequences sequences decode at once, each in its own generator, concurrently on
// the model's shared kernel thread pool; a new request starts as soon as any slot frees, without
// waiting for the others. This is NOT continuous batching: the sequences are not batched into one
// model run per step (the runtime's generator decodes a static, left-padded batch that starts
// together), so each step of each sequence is its own model run.
//
// The interface is what a continuous-batching engine needs too: submit() admits or refuses
// before any work (bounded queue), cancel() removes a queued job or stops a running one before its
// next step, and a Job reports its own tokens. A step-function engine (one decode step for all
// active sequences, admission of queued jobs between steps, chunked prefill) replaces the worker
// loop in scheduler.cpp and the per-slot generator (Slot) with one batched generator; Job::run()
// then becomes per-step calls, which GenerationJob already offers apart from its own loop
// (generation.h: begin(), mayContinue() before each step, acceptToken() with each sampled token;
// only prefill() and the model run itself are the engine's).
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "trace.h"

namespace kiln::serve {

class Metrics;

// The runtime state one slot owns.
struct Slot {
  int index = 0;
  kiln_generator *generator = nullptr; // decoder models
  kiln_session *session = nullptr;     // forward models
};

class Job {
public:
  virtual ~Job() = default;
  // Runs on a slot's worker; returns when the job is complete. Checks cancelled() between steps.
  virtual void run(Slot &slot) = 0;
  // Instead of run(): the job left the queue without running ("cancelled", "shutdown").
  virtual void dropped(const std::string &reason) = 0;
  // Called when the job leaves the queue for a slot (trace: queue stage ends).
  virtual void dequeued() {}

  // `why`: "cancelled" (the client went away or timed out) or "shutdown" (the drain's grace
  // period ended); a static string.
  void cancel(const char *why = "cancelled") {
    const char *none = nullptr;
    cancelled_.compare_exchange_strong(none, why, std::memory_order_relaxed);
  }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed) != nullptr; }
  std::string cancelReason() const {
    const char *why = cancelled_.load(std::memory_order_relaxed);
    return why ? why : "";
  }
  Clock::time_point enqueuedAt;

private:
  std::atomic<const char *> cancelled_{nullptr};
};

class Scheduler {
public:
  using SlotFactory = std::function<Slot(int index)>; // throws std::runtime_error
  using SlotDestroyer = std::function<void(Slot &)>;
  // Creates every slot's runtime state now (so a model that cannot run fails at startup, and
  // memory use is fixed before the first request) and starts one worker per slot.
  Scheduler(std::string model, int slots, int queueCapacity, SlotFactory make, SlotDestroyer destroy,
            Metrics &metrics);
  ~Scheduler();

  enum class Admission { Admitted, QueueFull, Draining };
  Admission submit(std::shared_ptr<Job> job);
  // Removes a queued job (its dropped("cancelled") runs), or asks a running one to stop after its
  // current step.
  void cancel(const std::shared_ptr<Job> &job);
  // Stops admitting (submit() answers Draining).
  void stopAdmitting();
  // Cancels every queued and running job (reason "shutdown").
  void cancelAll();
  bool idle() const;
  size_t running() const;
  size_t waiting() const;
  int slots() const { return int(slots_.size()); }
  const Slot &slot(int i) const { return slots_[size_t(i)]; }
  // Seconds a refused client should wait: the queue ahead over the slots times a job's mean time.
  int retryAfterSeconds() const;

private:
  void work(size_t slotIndex);
  void publish(); // gauges; called with mutex_ held

  std::string model_;
  size_t capacity_;
  SlotDestroyer destroy_;
  Metrics &metrics_;
  std::vector<Slot> slots_;
  std::vector<std::thread> workers_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::shared_ptr<Job>> runningJobs_; // per slot; null when free
  bool admitting_ = true;
  bool stopping_ = false;
  double meanJobSeconds_ = 1.0;
};

} // namespace kiln::serve
