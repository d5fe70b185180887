// Token sampling: a filter pipeline over one row of logits, then one draw from a portable PRNG.
#include "generate/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln {

std::string SamplingParams::validate() const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature))
    return "temperature must be finite and >= 0 (0 means greedy), got " + std::to_string(temperature);
  if (top_k < 0)
    return "top_k must be >= 0 (0 means off), got " + std::to_string(top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f))
    return "top_p must be in (0, 1], got " + std::to_string(top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f))
    return "min_p must be in [0, 1], got " + std::to_string(min_p);
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty))
    return "repetition_penalty must be finite and > 0 (1 means off), got " +
           std::to_string(repetition_penalty);
  return {};
}

// ---- Rng: xoshiro256** 1.0 (Blackman and Vigna), state filled by splitmix64. ----

namespace {

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

} // namespace

void Rng::reseed(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t &word : s)
    word = splitmix64(state);
  // splitmix64 is a bijection of distinct counters, so the four words are never all zero.
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

// ---- Sampler ----

Sampler::Sampler(const SamplingParams &params)
    : params_(params), paramsError_(params.validate()), error_(paramsError_), rng_(params.seed) {}

int32_t Sampler::fail(const char *message) {
  error_ = message;
  return -1;
}

namespace {

// Lowest index of the largest value that is neither NaN nor -inf; -1 if there is none.
template <typename Get> int32_t argmax(int32_t vocab, Get get) {
  int32_t best = -1;
  double bestValue = -std::numeric_limits<double>::infinity();
  for (int32_t i = 0; i < vocab; ++i) {
    const double v = get(i);
    if (v > bestValue) { // false for NaN, for -inf, and for ties (keeps the lower index)
      bestValue = v;
      best = i;
    }
  }
  return best;
}

} // namespace

int32_t Sampler::sample(const float *logits, int32_t vocab, const int32_t *history,
                        size_t history_len) {
  if (!paramsError_.empty()) {
    error_ = paramsError_;
    return -1;
  }
  if (!logits)
    return fail("logits is null");
  if (vocab <= 0)
    return fail("vocab must be > 0");
  if (history_len > 0 && !history)
    return fail("history is null but history_len > 0");
  error_.clear();

  const float penalty = params_.repetition_penalty;
  const bool penalize = penalty != 1.0f && history_len > 0;
  const bool greedy = params_.temperature == 0.0f;

  if (greedy && !penalize) {
    const int32_t best = argmax(vocab, [&](int32_t i) { return double(logits[i]); });
    return best >= 0 ? best : fail("every logit is NaN or -inf");
  }

  if (scratch_.size() < size_t(vocab))
    scratch_.resize(size_t(vocab)); // the only allocation; none once the vocabulary has been seen
  Candidate *c = scratch_.data();
  for (int32_t i = 0; i < vocab; ++i)
    c[i] = {double(logits[i]), i};

  // Repetition penalty, computed in float as HF does. It reads the original logit, so a token that
  // occurs several times in the history is penalized once.
  if (penalize) {
    for (size_t h = 0; h < history_len; ++h) {
      const int32_t id = history[h];
      if (id < 0 || id >= vocab)
        continue;
      const float l = logits[id];
      c[id].logit = double(l > 0.0f ? l / penalty : l * penalty);
    }
  }

  if (greedy) {
    const int32_t best = argmax(vocab, [&](int32_t i) { return c[i].logit; });
    return best >= 0 ? best : fail("every logit is NaN or -inf");
  }

  // Candidates: drop NaN and -inf (probability 0). If any logit is +inf, only those remain, with
  // equal weight (the limit of the softmax). Otherwise divide by the temperature in double, which
  // cannot overflow for a float logit and a float temperature >= the smallest subnormal.
  constexpr double inf = std::numeric_limits<double>::infinity();
  size_t n = 0;
  bool anyPositiveInf = false;
  for (int32_t i = 0; i < vocab; ++i) {
    const double v = c[i].logit;
    if (std::isnan(v) || v == -inf)
      continue;
    anyPositiveInf |= v == inf;
    c[n++] = c[i];
  }
  if (n == 0)
    return fail("every logit is NaN or -inf");
  if (anyPositiveInf) {
    size_t m = 0;
    for (size_t i = 0; i < n; ++i)
      if (c[i].logit == inf)
        c[m++] = {0.0, c[i].id};
    n = m;
  } else {
    const double t = double(params_.temperature);
    for (size_t i = 0; i < n; ++i)
      c[i].logit /= t;
  }

  // A strict total order (ids are distinct), so sorting gives the same sequence with any standard
  // library. Candidates are drawn in this order after top-k or top-p, otherwise in id order.
  auto better = [](const Candidate &a, const Candidate &b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  bool sorted = false;
  const size_t k = size_t(params_.top_k);
  if (k > 0 && k < n) {
    if (k <= 64) {
      // A heap of the k best (its front is the worst of them): one comparison for most candidates,
      // O(V log k) at worst; about 3x faster than nth_element over a 128k vocabulary.
      std::make_heap(c, c + k, better);
      for (size_t i = k; i < n; ++i) {
        if (better(c[i], c[0])) {
          std::pop_heap(c, c + k, better);
          c[k - 1] = c[i];
          std::push_heap(c, c + k, better);
        }
      }
    } else {
      std::nth_element(c, c + (k - 1), c + n, better); // O(V)
    }
    n = k;
    std::sort(c, c + n, better); // the k best, in an order that does not depend on the library
    sorted = true;
  }
  // Softmax weights relative to the maximum: w = exp(l - max) in [0, 1], exactly 1 for the best.
  double maxLogit = c[0].logit;
  for (size_t i = 1; i < n; ++i)
    maxLogit = std::max(maxLogit, c[i].logit);

  if (params_.top_p < 1.0f) {
    // Top-p: the shortest prefix of the sorted candidates reaching top_p of the mass (at least one).
    // Without top-k, only as much is sorted as the scan reaches: the best 256, then 4x more each
    // time, each step an nth_element over the rest, so a small nucleus of a large vocabulary costs
    // O(V) and not O(V log V). The prefix is the same as with a full sort.
    double total = 0.0;
    for (size_t i = 0; i < n; ++i)
      total += std::exp(c[i].logit - maxLogit);
    const double threshold = double(params_.top_p) * total;
    size_t sortedEnd = sorted ? n : 0; // c[0, sortedEnd) is sorted and better than the rest
    double cumulative = 0.0;
    for (size_t i = 0; i < n; ++i) {
      if (i == sortedEnd) {
        const size_t m = std::min(n, std::max<size_t>(256, 4 * sortedEnd));
        if (m < n)
          std::nth_element(c + sortedEnd, c + (m - 1), c + n, better);
        std::sort(c + sortedEnd, c + m, better);
        sortedEnd = m;
      }
      c[i].logit = std::exp(c[i].logit - maxLogit);
      cumulative += c[i].logit;
      if (cumulative >= threshold) {
        n = i + 1;
        break;
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i)
      c[i].logit = std::exp(c[i].logit - maxLogit);
  }

  // Min-p: p / p_max = w, so keep w >= min_p. The best token (w = 1) always stays.
  if (params_.min_p > 0.0f) {
    const double minP = double(params_.min_p);
    size_t m = 0;
    for (size_t i = 0; i < n; ++i)
      if (c[i].logit >= minP)
        c[m++] = c[i];
    n = m;
  }

  // One draw, always, so the stream position depends only on the number of non-greedy calls.
  double total = 0.0;
  for (size_t i = 0; i < n; ++i)
    total += c[i].logit;
  const double r = rng_.uniform() * total;
  double cumulative = 0.0;
  int32_t lastPositive = c[0].id;
  for (size_t i = 0; i < n; ++i) {
    if (c[i].logit <= 0.0)
      continue; // underflowed to 0: never drawn
    cumulative += c[i].logit;
    lastPositive = c[i].id;
    if (r < cumulative)
      return c[i].id;
  }
  return lastPositive; // r rounded up to total
}

} // namespace kiln
