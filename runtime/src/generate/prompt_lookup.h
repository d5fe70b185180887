// Prompt-lookup drafting for speculative decoding: the tokens that followed the latest earlier
// occurrence of the sequence's last few tokens, proposed as its next ones (no draft model).
#ifndef KILN_RUNTIME_PROMPT_LOOKUP_H
#define KILN_RUNTIME_PROMPT_LOOKUP_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::runtime {

// Up to `k` tokens: for n from `maxNgram` down to 1, the last n tokens of tokens[0, count) are
// searched for earlier in it (latest occurrence first); the first match gives the tokens that
// followed it. Empty when nothing matches.
std::vector<int32_t> lookupDraft(const int32_t *tokens, size_t count, size_t k, size_t maxNgram);

} // namespace kiln::runtime

#endif
