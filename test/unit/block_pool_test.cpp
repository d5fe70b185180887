// The paged KV cache's block pool: all-or-none takes, holds counted per block, and the prefix cache
// (publish, share, idle blocks taken back least recently released first, a lookup that must match
// tokens and the chain before it).
#include "generate/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

using kiln::runtime::BlockPool;

namespace {

std::vector<int32_t> iota(size_t n, int32_t from) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = from + int32_t(i);
  return v;
}

TEST(BlockPool, TakesAllOrNoneAndFreesOnRelease) {
  BlockPool pool;
  pool.reset(4, 16, false);
  std::vector<int64_t> a, b;
  ASSERT_TRUE(pool.take(3, a));
  EXPECT_EQ(a, (std::vector<int64_t>{0, 1, 2})); // lowest ids first
  EXPECT_FALSE(pool.take(2, b));                  // one is left: nothing taken
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool.available(), 1);
  pool.release(a, 1); // a step that failed gives back what it took beyond its first block
  EXPECT_EQ(a, (std::vector<int64_t>{0}));
  EXPECT_EQ(pool.available(), 3);
  pool.release(a);
  EXPECT_EQ(pool.held(), 0);
  // Without prefix caching nothing is shared or kept.
  const auto t = iota(64, 1);
  ASSERT_TRUE(pool.take(2, a));
  pool.publish(a, t.data(), 2);
  pool.release(a);
  EXPECT_EQ(pool.share(t.data(), t.size(), 63, b), 0u);
  EXPECT_EQ(pool.stats().cached, 0);
  EXPECT_EQ(pool.stats().lookups, 0);
}

TEST(BlockPool, SharesPublishedBlocksAndCountsHolds) {
  BlockPool pool;
  pool.reset(8, 4, true);
  const auto prompt = iota(10, 100); // two full blocks of 4 and 2 tokens more
  std::vector<int64_t> a;
  ASSERT_TRUE(pool.take(3, a));
  pool.publish(a, prompt.data(), 2);
  EXPECT_EQ(pool.stats().cached, 2);
  // A second sequence with the same start shares both blocks while the first still holds them.
  std::vector<int64_t> b;
  EXPECT_EQ(pool.share(prompt.data(), prompt.size(), 9, b), 2u);
  EXPECT_EQ(b, (std::vector<int64_t>{a[0], a[1]}));
  EXPECT_EQ(pool.held(), 3);
  // The limit: a prompt of exactly 8 tokens shares only the first block (its last token must run).
  std::vector<int64_t> c;
  EXPECT_EQ(pool.share(prompt.data(), 8, 7, c), 1u);
  pool.release(c);
  pool.release(a); // blocks 0 and 1 are still held by b; a's third block was never cached: free
  EXPECT_EQ(pool.held(), 2);
  EXPECT_EQ(pool.stats().idle, 0);
  pool.release(b);
  EXPECT_EQ(pool.held(), 0);
  EXPECT_EQ(pool.stats().idle, 2);
  EXPECT_EQ(pool.available(), 8);
  // Idle blocks are found again.
  std::vector<int64_t> d;
  EXPECT_EQ(pool.share(prompt.data(), prompt.size(), 9, d), 2u);
  EXPECT_EQ(pool.stats().idle, 0);
  EXPECT_EQ(pool.stats().lookups, 3);
  EXPECT_EQ(pool.stats().lookupTokens, 10 + 8 + 10);
  EXPECT_EQ(pool.stats().hitBlocks, 2 + 1 + 2);
}

TEST(BlockPool, PinsSharedAndCachedBlocks) {
  BlockPool pool;
  pool.reset(4, 4, true);
  const auto prompt = iota(8, 1);
  std::vector<int64_t> a, b;
  ASSERT_TRUE(pool.take(3, a));
  EXPECT_FALSE(pool.pinned(a[0])); // held by one sequence, not cached: its own to write
  pool.publish(a, prompt.data(), 1);
  EXPECT_TRUE(pool.pinned(a[0]));  // cached for its prefix
  EXPECT_FALSE(pool.pinned(a[1]));
  EXPECT_EQ(pool.share(prompt.data(), prompt.size(), 7, b), 1u); // held by two now
  const int64_t first = b[0];
  EXPECT_TRUE(pool.pinned(first));
  pool.release(a);
  pool.release(b);
  EXPECT_TRUE(pool.pinned(first)); // idle, still cached
}

TEST(BlockPool, MatchesOnlyTheSameTokensAfterTheSameBlocks) {
  BlockPool pool;
  pool.reset(8, 4, true);
  const auto prompt = iota(12, 1);
  std::vector<int64_t> a;
  ASSERT_TRUE(pool.take(3, a));
  pool.publish(a, prompt.data(), 3);
  pool.release(a);
  // Another first block: nothing after it matches, though its second block's tokens are the same.
  auto other = prompt;
  other[0] = 99;
  std::vector<int64_t> b;
  EXPECT_EQ(pool.share(other.data(), other.size(), 11, b), 0u);
  // A difference in the second block: the first is shared, the lookup stops there.
  other = prompt;
  other[5] = 99;
  EXPECT_EQ(pool.share(other.data(), other.size(), 11, b), 1u);
  pool.release(b);
  // A second copy of a cached prefix is not registered over the first: it stays private.
  std::vector<int64_t> c;
  ASSERT_TRUE(pool.take(2, c));
  pool.publish(c, prompt.data(), 2);
  EXPECT_EQ(pool.stats().cached, 3);
  pool.release(c);
  EXPECT_EQ(pool.stats().idle, 3);
}

TEST(BlockPool, TakesIdleBlocksBackLeastRecentlyReleasedFirst) {
  BlockPool pool;
  pool.reset(4, 2, true);
  const auto p = iota(4, 10), q = iota(4, 50);
  std::vector<int64_t> a, b;
  ASSERT_TRUE(pool.take(2, a));
  pool.publish(a, p.data(), 2);
  ASSERT_TRUE(pool.take(2, b));
  pool.publish(b, q.data(), 2);
  pool.release(a); // idle: a[1], a[0] (later blocks first)
  pool.release(b); // then b[1], b[0]
  EXPECT_EQ(pool.available(), 4);
  std::vector<int64_t> c;
  ASSERT_TRUE(pool.take(1, c)); // takes back a's second block
  EXPECT_EQ(c[0], a[1]);
  EXPECT_EQ(pool.stats().evictions, 1);
  std::vector<int64_t> d;
  EXPECT_EQ(pool.share(p.data(), p.size(), 4, d), 1u); // a's first block is still there
  EXPECT_EQ(pool.share(q.data(), q.size(), 4, d), 2u); // b's are both there
  EXPECT_FALSE(pool.take(2, c));                        // every block is held now but none free
  EXPECT_EQ(pool.available(), 0);
  pool.release(d);
  pool.release(c);
  EXPECT_EQ(pool.available(), 4);
  // reset forgets everything.
  pool.reset(4, 2, true);
  EXPECT_EQ(pool.share(q.data(), q.size(), 4, d), 0u);
  EXPECT_EQ(pool.stats().cached, 0);
}

} // namespace
