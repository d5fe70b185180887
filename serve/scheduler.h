// The per-model scheduler: a bounded FIFO queue in front of a fixed number of slots.
//
// Two engines behind one interface:
// - Decoders: continuous batching. One engine thread owns one kiln_generator with --max-sequences
//   cache rows. Each iteration it admits queued jobs into free rows, runs one prompt chunk of one
//   sequence that is still prefilling (--prefill-chunk tokens, so a long prompt does not stall the
//   others), then one decode step for every sequence whose prompt has run, all in one model run
//   (kiln_generator_step), and retires finished or cancelled sequences, freeing their rows for the
//   next step. The runtime computes each sequence of a step as it would alone, so batching never
//   changes a token.
// - Forward models: each slot owns a kiln_session and a worker thread that runs the oldest queued
//   job to completion on it.
//
// submit() admits or refuses before any work (bounded queue), cancel() removes a queued job or
// stops a running one before its next step.
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

// A job the decoders' engine drives step by step (GenerationJob). Each call returns false once
// the sequence has finished (the job is then done and its row is freed).
class StepJob : public Job {
public:
  void run(Slot &) override {} // not used: the engine calls the steps below
  virtual bool begin() = 0;    // before anything runs
  virtual const std::vector<int32_t> &prompt() const = 0;
  virtual const kiln_sampling_params &sampling() const = 0;
  virtual void prefilled() = 0; // the whole prompt has run
  // Before every step that would run the model or sample (cancellation, deadline, room in
  // this sequence's cache); `first`: the token from the prompt's logits comes next.
  virtual bool mayContinue(int64_t position, int64_t capacity, bool first) = 0;
  virtual bool acceptToken(int32_t token, bool first) = 0;
  virtual void fail(const std::string &message) = 0;
  virtual Clock::duration minStep() const { return Clock::duration(0); }
  // The most cache entries this sequence can take (prompt + new tokens); 0: the whole context.
  // A paged KV cache admits the sequence only when the pool has that many blocks unreserved.
  virtual size_t maxCacheTokens() const { return 0; }
};

class Scheduler {
public:
  using SlotFactory = std::function<Slot(int index)>; // throws std::runtime_error
  using SlotDestroyer = std::function<void(Slot &)>;
  // Creates every slot's runtime state now (so a model that cannot run fails at startup, and
  // memory use is fixed before the first request) and starts one worker per slot.
  // With `batchedDecoder`, make(0) is called once for a slot whose generator has `slots`
  // sequences, and one engine thread decodes them together (continuous batching); jobs must be
  // StepJobs. `prefillChunk`: prompt tokens per prefill run (0: whole prompts).
  Scheduler(std::string model, int slots, int queueCapacity, SlotFactory make, SlotDestroyer destroy,
            Metrics &metrics, bool batchedDecoder = false, size_t prefillChunk = 0);
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
  int slots() const { return int(runningJobs_.size()); }
  const Slot &slot(int i) const { return slots_[size_t(i)]; }
  // Seconds a refused client should wait: the queue ahead over the slots times a job's mean time.
  int retryAfterSeconds() const;
  // Prompt-lookup speculative decoding: up to `tokens` drafted per step while one sequence decodes
  // alone (a batch of several is served better by one step for all); 0: off. Before any job.
  void speculate(int tokens) { speculateLookup_ = tokens; }
  // Draft-model speculative decoding instead: `draft` (a generator of a smaller decoder with the
  // same vocabulary, one sequence, owned by the caller and outliving the scheduler) proposes
  // `tokens` tokens greedily per step while one sequence decodes alone. Before any job.
  void speculateWithDraft(kiln_generator *draft, int tokens) {
    draft_ = draft;
    draftTokens_ = tokens;
  }

private:
  void work(size_t slotIndex);
  void engine(); // the decoders' continuous-batching loop
  void publishCache(); // KV cache gauges, from the engine thread
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
  bool batched_ = false;
  // Jobs given a free slot at submit() that the engine has not started yet (batched mode): a
  // slot is taken at once, as a slot worker would, so the gauges count it as running.
  std::vector<std::pair<std::shared_ptr<Job>, size_t>> admitted_;
  size_t prefillChunk_ = 0;
  // Paged KV caches: blocks the engine's running sequences may take at most (engine thread only).
  int64_t reservedBlocks_ = 0;
  int64_t blockSize_ = 0; // tokens per block of a paged KV cache; 0: not paged
  std::atomic<int> speculateLookup_{0};
  kiln_generator *draft_ = nullptr; // engine thread only, after speculateWithDraft
  int draftTokens_ = 0;
  int64_t draftSequence_ = -1;      // the draft's one sequence, following the speculating request
  bool speculating() const { return speculateLookup_ > 0 || draft_ != nullptr; }
  // The draft model's proposal for `history` (the sequence's tokens so far): up to draftTokens_
  // tokens; none when the draft's context is full. Engine thread.
  kiln_error *draftProposal(const std::vector<int32_t> &history, std::vector<int32_t> &out);
};

} // namespace kiln::serve
