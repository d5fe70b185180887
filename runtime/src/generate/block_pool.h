// The blocks of a paged KV cache and who holds them; with prefix caching, the full blocks of prompts
// kept by their tokens so that a later sequence with the same prompt start shares them (vLLM's
// automatic prefix caching, over kiln's paged cache).
#ifndef KILN_RUNTIME_BLOCK_POOL_H
#define KILN_RUNTIME_BLOCK_POOL_H

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {

// Blocks 0..total-1 of `blockSize` cache entries each. A block is free, held by one or more
// sequences (reference-counted), or idle: cached for its prefix, held by none, and taken back
// (least recently released first) only when no free block is left.
//
// A cached block is known by the hash of every token from the start of the sequence to its end
// (its parent block's hash combined with its own tokens), and stores its own tokens and its
// parent's hash: a lookup accepts it only when both match, so a 64-bit hash collision would need
// the parent's hash to collide as well as identical tokens. Only whole blocks are shared, and
// a sequence writes past the blocks it shares, never into them.
class BlockPool {
public:
  struct Stats {
    int64_t cached = 0;       // blocks registered for their prefix (held or idle)
    int64_t idle = 0;         // cached blocks no sequence holds
    int64_t lookups = 0;      // prompts looked up
    int64_t lookupTokens = 0; // their tokens
    int64_t hitBlocks = 0;    // blocks shared by those lookups
    int64_t evictions = 0;    // idle cached blocks taken back for new use
  };

  // Empties the pool: `total` free blocks, nothing cached. Prefix caching on or off.
  void reset(int64_t total, int64_t blockSize, bool prefixCaching);
  bool prefixCaching() const { return prefixCaching_; }
  int64_t total() const { return int64_t(refs_.size()); }
  // Blocks a sequence could take now: the free ones and the idle cached ones.
  int64_t available() const { return int64_t(free_.size() + idle_.size()); }
  // Blocks held by at least one sequence.
  int64_t held() const { return total() - available(); }
  const Stats &stats() const { return stats_; }

  // Appends `n` blocks to `blocks` (free ones first, then idle cached ones, which are forgotten),
  // all or none: false when fewer than n are available.
  bool take(size_t n, std::vector<int64_t> &blocks);
  // Drops one hold on each of blocks[keep..] and erases them from the vector (the blocks of a
  // sequence that ends, keep = 0, or of a step that failed). A block no sequence holds any more
  // becomes free, or idle if it is cached.
  void release(std::vector<int64_t> &blocks, size_t keep = 0);

  // Whether writing into `block` could change what others read: another sequence holds it too, or
  // it is cached for its prefix. A sequence rewound into such a block must not write there.
  bool pinned(int64_t block) const {
    return refs_[size_t(block)] > 1 || (prefixCaching_ && cached_[size_t(block)].valid);
  }
  // Prefix caching: appends to `blocks` the cached blocks that hold tokens[0, k * blockSize) for
  // the largest k with k * blockSize <= limit, holding each; returns k. Nothing without prefix
  // caching. `length` is the prompt's, for the stats.
  size_t share(const int32_t *tokens, size_t length, size_t limit, std::vector<int64_t> &blocks);
  // Registers blocks[i] for i < fullBlocks as holding tokens[i * blockSize, (i + 1) * blockSize)
  // after the blocks before it, unless another block already holds that prefix (then this copy
  // stays private, freed when its sequence ends). Blocks already registered are skipped.
  void publish(const std::vector<int64_t> &blocks, const int32_t *tokens, size_t fullBlocks);

private:
  struct Cached {
    uint64_t hash = 0;       // of the tokens from the sequence start to this block's end
    uint64_t parentHash = 0; // the block before it; 0 for the first block
    std::vector<int32_t> tokens;
    bool valid = false;
    std::list<int64_t>::iterator idlePos; // in idle_ while no sequence holds it
  };
  uint64_t chain(uint64_t parentHash, const int32_t *tokens) const;
  void forget(int64_t block);

  int64_t blockSize_ = 0;
  bool prefixCaching_ = false;
  std::vector<int32_t> refs_;           // holds per block
  std::vector<int64_t> free_;           // a stack, lowest id on top
  std::list<int64_t> idle_;             // idle cached blocks, least recently released first
  std::vector<Cached> cached_;          // per block
  std::unordered_map<uint64_t, int64_t> byHash_;
  Stats stats_;
};

} // namespace kiln::runtime

#endif
