#include "generate/block_pool.h"

#include <algorithm>

namespace kiln::runtime {

void BlockPool::reset(int64_t total, int64_t blockSize, bool prefixCaching) {
  blockSize_ = blockSize;
  prefixCaching_ = prefixCaching && blockSize > 0;
  refs_.assign(size_t(std::max<int64_t>(total, 0)), 0);
  free_.clear();
  for (int64_t b = total; b-- > 0;)
    free_.push_back(b);
  idle_.clear();
  cached_.assign(prefixCaching_ ? refs_.size() : 0, Cached{});
  byHash_.clear();
  stats_ = Stats{};
}

bool BlockPool::take(size_t n, std::vector<int64_t> &blocks) {
  if (n > free_.size() + idle_.size())
    return false;
  for (size_t i = 0; i < n; ++i) {
    int64_t b;
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    } else {
      b = idle_.front();
      forget(b); // its prefix is lost; it leaves idle_
      ++stats_.evictions;
    }
    refs_[size_t(b)] = 1;
    blocks.push_back(b);
  }
  return true;
}

void BlockPool::release(std::vector<int64_t> &blocks, size_t keep) {
  // Last blocks first: a sequence's later blocks go idle ahead of its earlier ones, so the start of
  // a prompt, which more sequences share, is taken back last.
  for (size_t i = blocks.size(); i-- > keep;) {
    const int64_t b = blocks[i];
    if (--refs_[size_t(b)] > 0)
      continue;
    if (prefixCaching_ && cached_[size_t(b)].valid) {
      idle_.push_back(b);
      cached_[size_t(b)].idlePos = std::prev(idle_.end());
      ++stats_.idle;
    } else {
      free_.push_back(b);
    }
  }
  blocks.resize(std::min(keep, blocks.size()));
}

uint64_t BlockPool::chain(uint64_t parentHash, const int32_t *tokens) const {
  // FNV-1a over the parent's hash and the tokens' bytes, then a final mix; never 0 (0 = no parent).
  uint64_t h = 1469598103934665603ull ^ parentHash;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(parentHash);
  for (int64_t i = 0; i < blockSize_; ++i)
    mix(uint64_t(uint32_t(tokens[i])));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h ? h : 1;
}

size_t BlockPool::share(const int32_t *tokens, size_t length, size_t limit, std::vector<int64_t> &blocks) {
  if (!prefixCaching_)
    return 0;
  ++stats_.lookups;
  stats_.lookupTokens += int64_t(length);
  const size_t most = limit / size_t(blockSize_);
  uint64_t parent = 0;
  size_t k = 0;
  for (; k < most; ++k) {
    const int32_t *t = tokens + k * size_t(blockSize_);
    const uint64_t h = chain(parent, t);
    auto it = byHash_.find(h);
    if (it == byHash_.end())
      break;
    Cached &c = cached_[size_t(it->second)];
    if (c.parentHash != parent || !std::equal(c.tokens.begin(), c.tokens.end(), t))
      break;
    const int64_t b = it->second;
    if (refs_[size_t(b)]++ == 0) { // it was idle
      idle_.erase(c.idlePos);
      --stats_.idle;
    }
    blocks.push_back(b);
    parent = h;
  }
  stats_.hitBlocks += int64_t(k);
  return k;
}

void BlockPool::publish(const std::vector<int64_t> &blocks, const int32_t *tokens, size_t fullBlocks) {
  if (!prefixCaching_)
    return;
  uint64_t parent = 0;
  for (size_t i = 0; i < fullBlocks && i < blocks.size(); ++i) {
    const int32_t *t = tokens + i * size_t(blockSize_);
    Cached &c = cached_[size_t(blocks[i])];
    if (c.valid) { // shared from the cache, or published by an earlier call
      parent = c.hash;
      continue;
    }
    const uint64_t h = chain(parent, t);
    if (byHash_.count(h))
      return; // another block holds this prefix: this sequence's copy, and what follows it, stay private
    c.hash = h;
    c.parentHash = parent;
    c.tokens.assign(t, t + blockSize_);
    c.valid = true;
    byHash_[h] = blocks[i];
    ++stats_.cached;
    parent = h;
  }
}

void BlockPool::forget(int64_t block) {
  Cached &c = cached_[size_t(block)];
  idle_.erase(c.idlePos);
  --stats_.idle;
  byHash_.erase(c.hash);
  c = Cached{};
  --stats_.cached;
}

} // namespace kiln::runtime
