// Token sampling for the generation loop: repetition penalty, temperature, top-k, top-p, min-p and a
// portable PRNG, so a seed gives the same tokens on every platform and compiler.
#ifndef KILN_RUNTIME_SAMPLING_H
#define KILN_RUNTIME_SAMPLING_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct SamplingParams {
  float temperature = 0.0f;        // 0: greedy (argmax); otherwise logits are divided by it
  int32_t top_k = 0;               // keep the k most likely tokens; 0: off
  float top_p = 1.0f;              // nucleus: smallest set with cumulative probability >= top_p; 1: off
  float min_p = 0.0f;              // drop tokens with probability < min_p * max probability; 0: off
  float repetition_penalty = 1.0f; // HF semantics, once per distinct token in the history; 1: off
  uint64_t seed = 0;

  // Empty when every field is in range, otherwise a message naming the first bad field.
  std::string validate() const;
};

// xoshiro256** seeded through splitmix64: the same stream on every platform and compiler.
class Rng {
public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next();
  // A double in [0, 1) from the top 53 bits of next().
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }

private:
  uint64_t s[4];
};

// Picks the next token from one row of logits. Not thread-safe; one per generation stream.
//
// Pipeline: repetition penalty (also in greedy mode, as in HF), then greedy argmax (lowest id on ties)
// or temperature, top-k, softmax, top-p, min-p and one draw from the Rng. NaN and -inf logits are never
// chosen; if any logit is +inf the draw is uniform over the +inf tokens. Every non-greedy call consumes
// exactly one uniform() from the Rng, whatever the size of the support.
//
// Buffers are sized on the first call and reused, so calls with the same vocabulary do not allocate.
class Sampler {
public:
  explicit Sampler(const SamplingParams &params);

  // Returns a token id in [0, vocab), or -1 with error() set when the params are invalid, logits is
  // null, vocab <= 0, or every logit is NaN or -inf. History ids outside [0, vocab) are ignored.
  int32_t sample(const float *logits, int32_t vocab, const int32_t *history, size_t history_len);

  const SamplingParams &params() const { return params_; }
  // Restarts the random stream, as if the Sampler were constructed with this seed.
  void reseed(uint64_t seed) { rng_.reseed(seed); }
  // Why the last sample() returned -1, or why the params are invalid; empty otherwise.
  const std::string &error() const { return error_; }

private:
  struct Candidate {
    double logit; // after penalty and temperature; in (-inf, +inf)
    int32_t id;
  };

  int32_t fail(const char *message);

  SamplingParams params_;
  std::string paramsError_;
  std::string error_;
  Rng rng_;
  std::vector<Candidate> scratch_; // reused across calls
};

} // namespace kiln

#endif // KILN_RUNTIME_SAMPLING_H
