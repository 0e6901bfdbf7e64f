// Block pool and scheduler: exact block ids, LRU eviction order, prefix verification, chunking.
#include <gtest/gtest.h>

#include "engine/block_pool.h"
#include "engine/kv_cache_manager.h"
#include "engine/scheduler.h"

namespace nucleus {
namespace {

TEST(BlockPool, AllocatesInOrderAndFreesToTheTail) {
  BlockPool pool(4, 2);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.allocate(3, a));
  EXPECT_EQ(a, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(pool.num_free_blocks(), 1);
  EXPECT_FALSE(pool.allocate(2, b));  // all or nothing
  EXPECT_TRUE(b.empty());
  pool.release(1);
  pool.release(0);
  // Free list now: 3 (never used), 1, 0 — least recently freed first.
  ASSERT_TRUE(pool.allocate(3, b));
  EXPECT_EQ(b, (std::vector<int32_t>{3, 1, 0}));
  pool.release(3);
  EXPECT_THROW(pool.release(3), std::exception) << "a double release must be caught";
}

TEST(BlockPool, RetainTakesAFreeBlockBackAndCountsReferences) {
  BlockPool pool(2, 2);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.allocate(1, a));
  pool.retain(a[0]);
  EXPECT_EQ(pool.ref_count(a[0]), 2);
  pool.release(a[0]);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.release(a[0]);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  pool.retain(a[0]);  // back from the free list, as a prefix hit does
  EXPECT_EQ(pool.num_free_blocks(), 1);
  EXPECT_EQ(pool.ref_count(a[0]), 1);
}

TEST(BlockPool, PrefixCacheHitsVerifyTokensAndEvictInLruOrder) {
  BlockPool pool(3, 2);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(pool.allocate(3, blocks));
  const std::vector<int32_t> t0 = {5, 6}, t1 = {7, 8}, t2 = {9, 10};
  const uint64_t h0 = hash_block_tokens(0, t0), h1 = hash_block_tokens(h0, t1), h2 = hash_block_tokens(0, t2);
  pool.register_full_block(0, h0, t0);
  pool.register_full_block(1, h1, t1);
  pool.register_full_block(2, h2, t2);
  pool.release(2);
  pool.release(1);
  pool.release(0);  // free list: 2, 1, 0
  EXPECT_EQ(pool.lookup(h0, t0), 0);
  EXPECT_EQ(pool.lookup(h1, t1), 1);
  EXPECT_EQ(pool.lookup(h1, t0), -1);  // same hash, other tokens: not a hit
  EXPECT_EQ(pool.lookup(hash_block_tokens(1, t0), t0), -1);  // other parent
  EXPECT_EQ(pool.counters().prefix_queries, 4);
  EXPECT_EQ(pool.counters().prefix_hits, 2);
  std::vector<int32_t> fresh;
  ASSERT_TRUE(pool.allocate(1, fresh));
  EXPECT_EQ(fresh, (std::vector<int32_t>{2}));  // least recently freed goes first
  EXPECT_EQ(pool.counters().evictions, 1);
  EXPECT_EQ(pool.lookup(h2, t2), -1);  // evicted
  EXPECT_EQ(pool.lookup(h0, t0), 0);   // still cached
}

Request make_request(int64_t n_tokens, uint64_t arrival) {
  Request r;
  r.id = static_cast<int64_t>(arrival) + 1;
  r.arrival = arrival;
  for (int64_t i = 0; i < n_tokens; ++i) r.tokens.push_back(static_cast<int32_t>(100 + i));
  r.num_prompt_tokens = n_tokens;
  return r;
}

TEST(Scheduler, ChunksPrefillsToTheTokenBudgetRunningFirst) {
  BlockPool pool(64, 4);
  KvCacheManager kv(pool, false);
  Scheduler scheduler({16, 8}, kv);
  Request a = make_request(40, 0), b = make_request(3, 1);
  scheduler.add(&a);
  scheduler.add(&b);
  SchedulerOutput s1 = scheduler.schedule();
  ASSERT_EQ(s1.scheduled.size(), 1u);  // a takes the whole budget
  EXPECT_EQ(s1.scheduled[0].num_tokens, 16);
  scheduler.update_after_step(s1);
  SchedulerOutput s2 = scheduler.schedule();
  ASSERT_EQ(s2.scheduled.size(), 1u);
  EXPECT_EQ(s2.scheduled[0].num_tokens, 16);
  scheduler.update_after_step(s2);
  SchedulerOutput s3 = scheduler.schedule();  // a's last 8, then b's 3
  ASSERT_EQ(s3.scheduled.size(), 2u);
  EXPECT_EQ(s3.scheduled[0].request, &a);
  EXPECT_EQ(s3.scheduled[0].num_tokens, 8);
  EXPECT_EQ(s3.scheduled[1].request, &b);
  EXPECT_EQ(s3.scheduled[1].num_tokens, 3);
  EXPECT_EQ(a.block_table.size(), 10u);  // 40 tokens / 4
  scheduler.remove(&a);
  scheduler.remove(&b);
  EXPECT_EQ(pool.num_free_blocks(), 64);
}

TEST(Scheduler, PreemptsTheLatestArrivedWhenBlocksRunOut) {
  BlockPool pool(4, 4);  // 16 token slots
  KvCacheManager kv(pool, false);
  Scheduler scheduler({64, 8}, kv);
  Request a = make_request(8, 0), b = make_request(8, 1);
  scheduler.add(&a);
  scheduler.add(&b);
  SchedulerOutput s1 = scheduler.schedule();
  ASSERT_EQ(s1.scheduled.size(), 2u);
  scheduler.update_after_step(s1);
  a.tokens.push_back(1);  // each sampled a token: both need a third block, only 0 free
  b.tokens.push_back(1);
  SchedulerOutput s2 = scheduler.schedule();
  EXPECT_EQ(s2.num_preempted, 1);
  ASSERT_EQ(s2.scheduled.size(), 1u);
  EXPECT_EQ(s2.scheduled[0].request, &a);
  EXPECT_EQ(b.status, RequestStatus::waiting);
  EXPECT_EQ(b.num_computed_tokens, 0);
  EXPECT_TRUE(b.block_table.empty());
  scheduler.update_after_step(s2);
  scheduler.remove(&a);
  SchedulerOutput s3 = scheduler.schedule();  // b comes back and is recomputed from scratch
  ASSERT_EQ(s3.scheduled.size(), 1u);
  EXPECT_EQ(s3.scheduled[0].request, &b);
  EXPECT_EQ(s3.scheduled[0].num_tokens, 9);
  scheduler.remove(&b);
  EXPECT_EQ(pool.num_free_blocks(), 4);
}

}  // namespace
}  // namespace nucleus
