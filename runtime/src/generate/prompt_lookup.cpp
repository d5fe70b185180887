#include "generate/prompt_lookup.h"

#include <algorithm>

namespace kiln::runtime {

std::vector<int32_t> lookupDraft(const int32_t *tokens, size_t count, size_t k, size_t maxNgram) {
  std::vector<int32_t> draft;
  if (k == 0 || count < 2)
    return draft;
  for (size_t n = std::min(maxNgram, count - 1); n >= 1; --n) {
    const int32_t *suffix = tokens + count - n;
    // Latest occurrence first: what followed most recently is the likeliest continuation. An
    // occurrence must leave at least one token after it before the suffix itself.
    for (size_t start = count - n; start-- > 0;) {
      if (!std::equal(suffix, suffix + n, tokens + start))
        continue;
      const size_t from = start + n, to = std::min(count, from + k);
      draft.assign(tokens + from, tokens + to);
      return draft;
    }
  }
  return draft;
}

} // namespace kiln::runtime
