// Bounded queue and slot workers (see scheduler.h for what this is and is not).
#include "scheduler.h"

#include <algorithm>
#include <cmath>

#include "metrics.h"

namespace kiln::serve {

Scheduler::Scheduler(std::string model, int slots, int queueCapacity, SlotFactory make, SlotDestroyer destroy,
                     Metrics &metrics)
    : model_(std::move(model)), capacity_(size_t(queueCapacity)), destroy_(std::move(destroy)), metrics_(metrics) {
  try {
    for (int i = 0; i < slots; ++i)
      slots_.push_back(make(i));
  } catch (...) {
    for (Slot &s : slots_)
      destroy_(s);
    throw;
  }
  runningJobs_.resize(slots_.size());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    metrics_.setGauge("kiln:slots_total", model_, double(slots_.size()));
    publish();
  }
  for (size_t i = 0; i < slots_.size(); ++i)
    workers_.emplace_back([this, i] { work(i); });
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
  queue_.push_back(std::move(job));
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
  double s = std::ceil(meanJobSeconds_ * double(queue_.size() + 1) / double(std::max<size_t>(1, slots_.size())));
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

} // namespace kiln::serve
