// Bounded queue, the decoders' continuous-batching engine and the forward models' slot workers (see scheduler.h).
#include "scheduler.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "metrics.h"

namespace kiln::serve {

Scheduler::Scheduler(std::string model, int slots, int queueCapacity, SlotFactory make, SlotDestroyer destroy,
                     Metrics &metrics, bool batchedDecoder, size_t prefillChunk)
    : model_(std::move(model)), capacity_(size_t(queueCapacity)), destroy_(std::move(destroy)), metrics_(metrics),
      batched_(batchedDecoder), prefillChunk_(prefillChunk) {
  try {
    for (int i = 0; i < (batched_ ? 1 : slots); ++i)
      slots_.push_back(make(i));
  } catch (...) {
    for (Slot &s : slots_)
      destroy_(s);
    throw;
  }
  runningJobs_.resize(size_t(slots));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    metrics_.setGauge("kiln:slots_total", model_, double(slots));
    publish();
  }
  if (batched_) {
    blockSize_ = kiln_generator_kv_block_size(slots_[0].generator);
    publishCache();
    workers_.emplace_back([this] { engine(); });
  } else {
    for (size_t i = 0; i < slots_.size(); ++i)
      workers_.emplace_back([this, i] { work(i); });
  }
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    admitting_ = false;
    for (auto &j : runningJobs_)
      if (j)
        j->cancel();
  }
  wake_.notify_all();
  for (auto &t : workers_)
    t.join();
  for (auto &j : queue_)
    j->dropped("shutdown");
  for (auto &[j, index] : admitted_)
    j->dropped("shutdown");
  for (Slot &s : slots_)
    destroy_(s);
}

void Scheduler::publish() {
  size_t busy = size_t(std::count_if(runningJobs_.begin(), runningJobs_.end(), [](auto &j) { return bool(j); }));
  metrics_.setGauge("kiln:num_requests_running", model_, double(busy));
  metrics_.setGauge("kiln:slots_in_use", model_, double(busy));
  metrics_.setGauge("kiln:num_requests_waiting", model_, double(queue_.size()));
}

Scheduler::Admission Scheduler::submit(std::shared_ptr<Job> job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!admitting_)
    return Admission::Draining;
  bool slotFree = std::any_of(runningJobs_.begin(), runningJobs_.end(), [](auto &j) { return !j; });
  // The queue holds the jobs no slot has taken yet; a free slot takes its job at once.
  size_t free = slotFree ? size_t(std::count_if(runningJobs_.begin(), runningJobs_.end(), [](auto &j) { return !j; }))
                         : 0;
  if (queue_.size() >= capacity_ + free)
    return Admission::QueueFull;
  job->enqueuedAt = Clock::now();
  // A paged cache admits by free blocks too, which only the engine knows: the job waits in the
  // queue until the engine admits it between steps.
  if (batched_ && slotFree && blockSize_ == 0) {
    size_t index = 0;
    while (runningJobs_[index])
      ++index;
    runningJobs_[index] = job;
    admitted_.emplace_back(std::move(job), index);
  } else {
    queue_.push_back(std::move(job));
  }
  publish();
  wake_.notify_one();
  return Admission::Admitted;
}

void Scheduler::cancel(const std::shared_ptr<Job> &job) {
  std::shared_ptr<Job> removed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job->cancel();
    auto it = std::find(queue_.begin(), queue_.end(), job);
    if (it != queue_.end()) {
      removed = *it;
      queue_.erase(it);
      publish();
    }
  }
  if (removed)
    removed->dropped("cancelled");
}

void Scheduler::stopAdmitting() {
  std::lock_guard<std::mutex> lock(mutex_);
  admitting_ = false;
}

void Scheduler::cancelAll() {
  std::deque<std::shared_ptr<Job>> removed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    removed.swap(queue_);
    for (auto &j : runningJobs_)
      if (j)
        j->cancel("shutdown");
    publish();
  }
  for (auto &j : removed) {
    j->cancel("shutdown");
    j->dropped("shutdown");
  }
}

bool Scheduler::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && std::none_of(runningJobs_.begin(), runningJobs_.end(), [](auto &j) { return bool(j); });
}

size_t Scheduler::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return size_t(std::count_if(runningJobs_.begin(), runningJobs_.end(), [](auto &j) { return bool(j); }));
}

size_t Scheduler::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

int Scheduler::retryAfterSeconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  double s = std::ceil(meanJobSeconds_ * double(queue_.size() + 1) / double(std::max<size_t>(1, runningJobs_.size())));
  return int(std::clamp(s, 1.0, 60.0));
}

void Scheduler::work(size_t slotIndex) {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_)
        return;
      job = queue_.front();
      queue_.pop_front();
      runningJobs_[slotIndex] = job;
      publish();
    }
    auto start = Clock::now();
    metrics_.observe("kiln:request_queue_time_seconds", model_,
                     std::chrono::duration<double>(start - job->enqueuedAt).count());
    job->dequeued();
    job->run(slots_[slotIndex]);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    metrics_.observe("kiln:request_inference_time_seconds", model_, seconds);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      runningJobs_[slotIndex].reset();
      meanJobSeconds_ = 0.8 * meanJobSeconds_ + 0.2 * seconds;
      publish();
    }
  }
}

void Scheduler::publishCache() {
  kiln_generator_cache_stats st;
  st.struct_size = sizeof st;
  kiln_generator_cache_stats_get(slots_[0].generator, &st);
  metrics_.setGauge("kiln:kv_cache_tokens", model_, double(st.tokens_cached));
  metrics_.setGauge("kiln:kv_cache_bytes_in_use", model_, double(st.bytes_in_use));
  const bool paged = blockSize_ > 0;
  metrics_.setGauge("kiln:kv_cache_blocks_total", model_, paged ? double(st.blocks_total) : 0.0);
  metrics_.setGauge("kiln:kv_cache_blocks_in_use", model_, paged ? double(st.blocks_in_use) : 0.0);
  metrics_.setGauge("kiln:kv_cache_blocks_reserved", model_, double(reservedBlocks_));
  metrics_.setGauge("kiln:kv_cache_blocks_cached", model_, double(st.blocks_cached));
  metrics_.setCounter("kiln:prefix_cache_queries_total", model_, double(st.prefix_lookup_tokens));
  metrics_.setCounter("kiln:prefix_cache_hits_total", model_, double(st.prefix_hit_blocks * st.block_size));
  metrics_.setCounter("kiln:prefix_cache_evictions_total", model_, double(st.prefix_evictions));
  if (speculating()) {
    int64_t drafted = 0, accepted = 0;
    kiln_generator_speculation_stats(slots_[0].generator, &drafted, &accepted);
    metrics_.setCounter("kiln:spec_decode_num_draft_tokens_total", model_, double(drafted));
    metrics_.setCounter("kiln:spec_decode_num_accepted_tokens_total", model_, double(accepted));
  }
  // Rows are allocated at the first sequence; until then the reservation is what they will take.
  double total = paged ? double(st.blocks_total) * double(st.block_size) * double(st.bytes_per_token)
                       : double(std::max<int64_t>(st.rows, st.max_sequences)) *
                             double(kiln_generator_max_context(slots_[0].generator)) * double(st.bytes_per_token);
  metrics_.setGauge("kiln:kv_cache_bytes_total", model_, total);
  metrics_.setGauge("kiln:kv_cache_usage_perc", model_, total > 0 ? double(st.bytes_in_use) / total : 0.0);
}

namespace {

std::string takeMessage(kiln_error *e) {
  std::string m = kiln_error_message(e);
  kiln_error_free(e);
  return m;
}

} // namespace

// The decoders' engine. Per iteration: admit queued jobs into free rows; check every sequence
// (cancelled, timed out, cache full) so a client that left frees its row within one step; run one
// prompt chunk of the oldest sequence still prefilling; run one decode step for all the others
// together; retire the finished ones.
kiln_error *Scheduler::draftProposal(const std::vector<int32_t> &history, std::vector<int32_t> &out) {
  out.clear();
  if (history.empty() || int64_t(history.size()) + 1 > kiln_generator_max_context(draft_))
    return nullptr; // past the draft's context: an ordinary step
  // The draft's sequence follows the request's tokens, keeping its cache for the common start
  // (a new request starts it over from its prompt's common start with the last one).
  if (draftSequence_ < 0) {
    if (kiln_error *e = kiln_generator_add_sequence(draft_, history.data(), history.size(), nullptr, &draftSequence_))
      return e;
  } else if (kiln_error *e = kiln_generator_set_sequence_tokens(draft_, draftSequence_, history.data(), history.size())) {
    return e;
  }
  size_t left = 1;
  while (left > 0)
    if (kiln_error *e = kiln_generator_prefill(draft_, draftSequence_, prefillChunk_, &left))
      return e;
  const int64_t room = kiln_generator_max_context(draft_) - kiln_generator_sequence_length(draft_, draftSequence_) - 1;
  for (int64_t i = 0; i < std::min<int64_t>(draftTokens_, room); ++i) {
    int32_t t = -1;
    if (kiln_error *e = kiln_generator_step(draft_, &draftSequence_, 1, &t))
      return e;
    out.push_back(t);
  }
  return nullptr;
}

void Scheduler::engine() {
  kiln_generator *gen = slots_[0].generator;
  const int64_t capacity = kiln_generator_max_context(gen);
  // A paged cache: a sequence is admitted only when the pool has the blocks it may take at most
  // (prompt + max tokens) unreserved, so a running sequence never finds the pool empty (the
  // runtime's KILN_ERROR_OUT_OF_RANGE would fail the whole step). Without paging every slot
  // holds a whole row, and the slots alone bound admission.
  const int64_t blockSize = blockSize_;
  int64_t poolBlocks = 0;
  if (blockSize > 0) {
    kiln_generator_cache_stats st;
    st.struct_size = sizeof st;
    kiln_generator_cache_stats_get(gen, &st);
    poolBlocks = st.blocks_total;
  }
  auto worstBlocks = [&](const StepJob &job) -> int64_t {
    int64_t tokens = int64_t(job.maxCacheTokens());
    tokens = tokens <= 0 ? capacity : std::min(tokens, capacity);
    return (tokens + blockSize - 1) / blockSize;
  };
  struct Active {
    std::shared_ptr<StepJob> job;
    size_t index = 0; // into runningJobs_
    int64_t sequence = 0;
    bool prefilling = true;
    bool first = true;
    int64_t blocks = 0; // reserved in the paged pool
    Clock::time_point start;
    std::vector<int32_t> history; // prompt and new tokens, for prompt-lookup drafts
  };
  std::vector<Active> active;
  std::vector<int64_t> admittedBlocks; // per entry of `admitted` below
  auto retire = [&](Active &a) {
    if (a.sequence != 0)
      if (kiln_error *e = kiln_generator_remove_sequence(gen, a.sequence))
        kiln_error_free(e);
    reservedBlocks_ -= a.blocks;
    a.blocks = 0;
    double seconds = std::chrono::duration<double>(Clock::now() - a.start).count();
    metrics_.observe("kiln:request_inference_time_seconds", model_, seconds);
    std::lock_guard<std::mutex> lock(mutex_);
    runningJobs_[a.index].reset();
    meanJobSeconds_ = 0.8 * meanJobSeconds_ + 0.2 * seconds;
    publish();
  };
  for (;;) {
    // Admission between steps.
    std::vector<std::pair<std::shared_ptr<StepJob>, size_t>> admitted;
    admittedBlocks.clear();
    std::vector<std::pair<std::shared_ptr<StepJob>, int64_t>> tooLarge; // can never fit the pool
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !admitted_.empty() || !active.empty(); });
      if (stopping_)
        break;
      // 1: admit with these blocks reserved; 0: wait for blocks; -1: more than the whole pool.
      int64_t pending = 0, need = 0;
      auto fits = [&](const std::shared_ptr<StepJob> &job) {
        need = 0;
        if (blockSize <= 0 || !job)
          return 1;
        need = worstBlocks(*job);
        if (need > poolBlocks)
          return -1;
        if (reservedBlocks_ + pending + need > poolBlocks)
          return 0;
        pending += need;
        return 1;
      };
      std::deque<std::shared_ptr<Job>> wait;
      for (auto &[j, index] : admitted_) {
        auto job = std::dynamic_pointer_cast<StepJob>(j);
        int f = fits(job);
        if (f == 1) {
          admitted.emplace_back(job, index);
          admittedBlocks.push_back(need);
          continue;
        }
        runningJobs_[index].reset(); // it gives its slot back while it waits, or fails
        if (f == 0)
          wait.push_back(j);
        else
          tooLarge.emplace_back(job, need);
      }
      admitted_.clear();
      queue_.insert(queue_.begin(), wait.begin(), wait.end()); // ahead of later arrivals
      while (!queue_.empty() && active.size() + admitted.size() < runningJobs_.size()) {
        auto job = std::dynamic_pointer_cast<StepJob>(queue_.front());
        int f = fits(job);
        if (f == 0)
          break; // first come, first served: later jobs wait behind it
        queue_.pop_front();
        if (!job)
          continue; // not a decoder's job: never submitted here
        if (f < 0) {
          tooLarge.emplace_back(job, need);
          continue;
        }
        size_t index = 0;
        while (runningJobs_[index])
          ++index;
        runningJobs_[index] = job;
        admitted.emplace_back(job, index);
        admittedBlocks.push_back(need);
      }
      publish();
    }
    for (auto &[job, need] : tooLarge) {
      job->dequeued();
      if (job->begin())
        job->fail("the request needs up to " + std::to_string(need) + " KV cache blocks of " +
                  std::to_string(blockSize) + " tokens (prompt + max tokens), more than the pool's " +
                  std::to_string(poolBlocks) + " (--kv-cache-blocks)");
    }
    for (size_t k = 0; k < admitted.size(); ++k) {
      auto &[job, index] = admitted[k];
      if (!job) { // not a decoder's job: never submitted here
        std::lock_guard<std::mutex> lock(mutex_);
        runningJobs_[index].reset();
        continue;
      }
      Active a;
      a.job = job;
      a.index = index;
      a.blocks = admittedBlocks[k];
      reservedBlocks_ += a.blocks;
      a.start = Clock::now();
      metrics_.observe("kiln:request_queue_time_seconds", model_,
                       std::chrono::duration<double>(a.start - job->enqueuedAt).count());
      job->dequeued();
      if (!job->begin()) {
        retire(a);
        continue;
      }
      const auto &prompt = job->prompt();
      if (speculating())
        a.history = prompt;
      if (kiln_error *e = kiln_generator_add_sequence(gen, prompt.data(), prompt.size(), &job->sampling(), &a.sequence)) {
        job->fail(takeMessage(e));
        retire(a);
        continue;
      }
      active.push_back(std::move(a));
    }

    // Checks before any model run: cancellation, deadline, a full cache.
    Clock::duration minStep(0);
    for (size_t i = 0; i < active.size();) {
      Active &a = active[i];
      // A sequence still prefilling is checked for cancellation and its deadline only.
      bool keep = a.prefilling ? a.job->mayContinue(0, capacity, true)
                               : a.job->mayContinue(kiln_generator_sequence_length(gen, a.sequence), capacity, a.first);
      if (!keep) {
        retire(a);
        active.erase(active.begin() + long(i));
        continue;
      }
      minStep = std::max(minStep, a.job->minStep());
      ++i;
    }
    if (active.empty()) {
      publishCache();
      continue;
    }
    auto stepStart = Clock::now();

    // One prompt chunk of the oldest sequence still prefilling.
    for (size_t i = 0; i < active.size(); ++i) {
      Active &a = active[i];
      if (!a.prefilling)
        continue;
      size_t left = 0;
      if (kiln_error *e = kiln_generator_prefill(gen, a.sequence, prefillChunk_, &left)) {
        a.job->fail(takeMessage(e));
        retire(a);
        active.erase(active.begin() + long(i));
      } else if (left == 0) {
        a.prefilling = false;
        a.job->prefilled();
      }
      break;
    }

    // One decode step for every sequence whose prompt has run.
    std::vector<int64_t> sequences;
    std::vector<size_t> which;
    for (size_t i = 0; i < active.size(); ++i)
      if (!active[i].prefilling) {
        sequences.push_back(active[i].sequence);
        which.push_back(i);
      }
    std::vector<bool> finished(active.size(), false);
    // A sequence decoding alone may speculate: the tokens are the same, several per step when the
    // text repeats. With others in the step it does not (one step serves them all).
    const int lookup = speculateLookup_;
    const bool speculate = speculating();
    if (speculate && sequences.size() == 1 && active.size() == 1 && !active[which[0]].first) {
      Active &a = active[which[0]];
      std::vector<int32_t> draft;
      kiln_error *e = nullptr;
      if (draft_) {
        e = draftProposal(a.history, draft);
      } else {
        draft.resize(static_cast<size_t>(lookup));
        draft.resize(kiln_lookup_draft(a.history.data(), a.history.size(), size_t(lookup), 3, draft.data()));
      }
      std::vector<int32_t> tokens(draft.size() + 1);
      size_t n = 0;
      if (!e)
        e = kiln_generator_step_draft(gen, a.sequence, draft.data(), draft.size(), tokens.data(), &n);
      if (minStep.count() > 0)
        std::this_thread::sleep_until(stepStart + minStep);
      metrics_.setGauge("kiln:decode_batch_size", model_, 1.0);
      if (e) {
        a.job->fail(takeMessage(e));
        finished[which[0]] = true;
      }
      for (size_t k = 0; k < n && !finished[which[0]]; ++k) {
        a.history.push_back(tokens[k]);
        finished[which[0]] = !a.job->acceptToken(tokens[k], false);
      }
    } else if (!sequences.empty()) {
      std::vector<int32_t> tokens(sequences.size());
      kiln_error *e = kiln_generator_step(gen, sequences.data(), sequences.size(), tokens.data());
      if (minStep.count() > 0)
        std::this_thread::sleep_until(stepStart + minStep);
      metrics_.setGauge("kiln:decode_batch_size", model_, double(sequences.size()));
      std::string error = e ? takeMessage(e) : "";
      for (size_t k = 0; k < which.size(); ++k) {
        Active &a = active[which[k]];
        if (!error.empty()) {
          a.job->fail(error);
          finished[which[k]] = true;
          continue;
        }
        if (speculate)
          a.history.push_back(tokens[k]);
        bool more = a.job->acceptToken(tokens[k], a.first);
        a.first = false;
        finished[which[k]] = !more;
      }
    }
    for (size_t i = active.size(); i-- > 0;)
      if (finished[i]) {
        retire(active[i]);
        active.erase(active.begin() + long(i));
      }
    publishCache();
  }
  // Shutting down: every sequence still running ends.
  for (Active &a : active) {
    a.job->cancel("shutdown");
    a.job->mayContinue(0, capacity, true);
    retire(a);
  }
}

} // namespace kiln::serve
