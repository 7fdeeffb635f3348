// SPDX-License-Identifier: GPL-2.0-or-later
//
// Issue 38, the fabric-ID pool allocator (ctld/pools.hpp): round-robin
// hand-out, idempotent take per attempt, all-or-nothing shortage, release,
// quarantine and the rebuild from the journal.
#include "ctld/pools.hpp"

#include <gtest/gtest.h>
#include <set>

using namespace switchlua;

namespace {

using Ids = std::vector<std::uint32_t>;

PoolSpec pool(std::string name, std::vector<PoolRange> ranges, std::uint32_t per_job = 1) {
  return PoolSpec{std::move(name), std::move(ranges), per_job};
}

Ids ids_of(const PoolTake &t, const std::string &name) {
  EXPECT_TRUE(t.ids.has_value()) << (t.shortage ? t.shortage->pool : "");
  if (!t.ids || !t.ids->contains(name))
    return {};
  return t.ids->at(name);
}

TEST(Pools, NoPoolDeclaredTakesNothing) {
  Pools p;
  EXPECT_FALSE(p.any());
  PoolTake t = p.take(1);
  ASSERT_TRUE(t.ids.has_value());
  EXPECT_TRUE(t.ids->empty());
  EXPECT_TRUE(p.taken().empty());
}

TEST(Pools, HandsOutRoundRobinSoAReleasedIdIsReusedLast) {
  Pools p({pool("vni", {{1, 4}})});
  EXPECT_EQ(Ids{1}, ids_of(p.take(10), "vni"));
  EXPECT_EQ(Ids{2}, ids_of(p.take(11), "vni"));
  EXPECT_TRUE(p.release(10));
  // 1 is free again, but the cursor is after 2: 3 and 4 come first.
  EXPECT_EQ(Ids{3}, ids_of(p.take(12), "vni"));
  EXPECT_EQ(Ids{4}, ids_of(p.take(13), "vni"));
  EXPECT_EQ(Ids{1}, ids_of(p.take(14), "vni"));
  EXPECT_EQ(0u, p.free_count("vni"));
}

TEST(Pools, TakeIsIdempotentPerAttempt) {
  Pools p({pool("vni", {{100, 199}}, 2)});
  const Ids first = ids_of(p.take(7), "vni");
  EXPECT_EQ((Ids{100, 101}), first);
  EXPECT_EQ(first, ids_of(p.take(7), "vni")); // a retried start of the same attempt
  EXPECT_EQ(98u, p.free_count("vni"));
  EXPECT_EQ((Ids{102, 103}), ids_of(p.take(8), "vni"));
}

TEST(Pools, RangesArePerJobAndWalkedInOrder) {
  Pools p({pool("pkey", {{10, 11}, {20, 22}}, 2)});
  EXPECT_EQ((Ids{10, 11}), ids_of(p.take(1), "pkey"));
  EXPECT_EQ((Ids{20, 21}), ids_of(p.take(2), "pkey"));
  PoolTake t = p.take(3);
  EXPECT_FALSE(t.ids.has_value());
  ASSERT_TRUE(t.shortage.has_value());
  EXPECT_EQ((PoolShortage{"pkey", 1, 2, 5}), *t.shortage);
}

TEST(Pools, AShortageInOnePoolTakesNothingFromAnother) {
  Pools p({pool("a", {{1, 10}}), pool("b", {{1, 1}})});
  EXPECT_EQ(Ids{1}, ids_of(p.take(1), "b"));
  PoolTake t = p.take(2);
  ASSERT_TRUE(t.shortage.has_value());
  EXPECT_EQ((PoolShortage{"b", 0, 1, 1}), *t.shortage);
  EXPECT_EQ(9u, p.free_count("a")); // pool a gave nothing to attempt 2
  EXPECT_FALSE(p.taken().contains(2));
  EXPECT_TRUE(p.held(2).empty());
}

TEST(Pools, TwoLiveAttemptsNeverHoldTheSameId) {
  Pools p({pool("vni", {{1, 8}}, 3)});
  std::set<std::uint32_t> seen;
  for (std::int64_t a = 1; a <= 2; ++a)
    for (std::uint32_t id : ids_of(p.take(a), "vni"))
      EXPECT_TRUE(seen.insert(id).second) << "ID " << id << " handed out twice";
  EXPECT_TRUE(p.release(1));
  const Ids live = p.held(2).at("vni");
  const std::set<std::uint32_t> of2(live.begin(), live.end());
  for (std::uint32_t id : ids_of(p.take(3), "vni"))
    EXPECT_FALSE(of2.contains(id)) << "ID " << id << " of live attempt 2 handed to attempt 3";
}

TEST(Pools, AQuarantinedAttemptKeepsItsIdsOutOfUse) {
  Pools p({pool("vni", {{1, 2}})});
  EXPECT_EQ(Ids{1}, ids_of(p.take(1), "vni"));
  EXPECT_TRUE(p.quarantine(1, 1700000000));
  EXPECT_FALSE(p.release(1)); // released only by unquarantine
  EXPECT_EQ(1u, p.free_count("vni"));
  ASSERT_TRUE(p.quarantined().contains(1));
  EXPECT_EQ(1700000000, p.quarantined().at(1).since);
  EXPECT_EQ(Ids{2}, ids_of(p.take(2), "vni"));
  EXPECT_TRUE(p.take(3).shortage.has_value());
  EXPECT_TRUE(p.unquarantine(1));
  EXPECT_EQ(Ids{1}, ids_of(p.take(3), "vni"));
}

TEST(Pools, RestoreRebuildsTakenAndQuarantinedAndTheCursor) {
  Pools p({pool("vni", {{1, 10}})});
  EXPECT_TRUE(p.restore(5, {{"vni", {3}}}).empty());
  EXPECT_TRUE(p.restore(6, {{"vni", {4}}}, 1700000000).empty());
  EXPECT_EQ(8u, p.free_count("vni"));
  EXPECT_TRUE(p.quarantined().contains(6));
  EXPECT_TRUE(p.taken().contains(5));
  // The cursor is after the newest restored attempt's last ID.
  EXPECT_EQ(Ids{5}, ids_of(p.take(7), "vni"));
  // A retried start of a restored attempt keeps its IDs.
  EXPECT_EQ(Ids{3}, ids_of(p.take(5), "vni"));
}

TEST(Pools, RestoreDropsAPoolNoLongerDeclaredAndKeepsIdsOutsideTheRanges) {
  Pools p({pool("vni", {{1, 3}})});
  auto dropped = p.restore(5, {{"vni", {2, 9}}, {"pkey", {32769}}});
  EXPECT_EQ(std::vector<std::string>{"pkey"}, dropped);
  EXPECT_EQ(2u, p.free_count("vni")); // 9 is held but not in the pool's ranges
  EXPECT_FALSE(p.held(5).contains("pkey"));
  // The cursor is at 9, past the ranges: the walk wraps to 1.
  EXPECT_EQ(Ids{1}, ids_of(p.take(6), "vni"));
  EXPECT_EQ(Ids{3}, ids_of(p.take(7), "vni"));
  EXPECT_TRUE(p.release(5));
  EXPECT_EQ(1u, p.free_count("vni"));
}

// The numbers switch-lua status and the metrics show: every change of
// take, release, quarantine, unquarantine and restore moves them.
TEST(Pools, CountsFollowEveryChange) {
  Pools p({pool("vni", {{1, 4}}), pool("pkey", {{10, 11}})});
  using C = PoolCounts;
  EXPECT_EQ(p.counts().at("vni"), (C{.size = 4, .free = 4}));
  ids_of(p.take(1), "vni");
  ids_of(p.take(2), "vni");
  EXPECT_EQ(p.counts().at("vni"), (C{.size = 4, .free = 2, .taken = 2}));
  EXPECT_EQ(p.counts().at("pkey"), (C{.size = 2, .free = 0, .taken = 2}));
  EXPECT_TRUE(p.quarantine(1, 1700000000));
  EXPECT_EQ(p.counts().at("vni"), (C{.size = 4, .free = 2, .taken = 1, .quarantined = 1}));
  EXPECT_TRUE(p.release(2));
  EXPECT_EQ(p.counts().at("vni"), (C{.size = 4, .free = 3, .taken = 0, .quarantined = 1}));
  EXPECT_TRUE(p.unquarantine(1));
  EXPECT_EQ(p.counts().at("vni"), (C{.size = 4, .free = 4}));
  // Restored: one taken (with an ID outside the ranges), one quarantined.
  p.restore(5, {{"vni", {2, 9}}});
  p.restore(6, {{"vni", {3}}}, 1700000000);
  EXPECT_EQ(p.counts().at("vni"), (C{.size = 4, .free = 2, .taken = 2, .quarantined = 1}));
  p.restore(6, {{"vni", {3}}}); // the same attempt restored again, now taken
  EXPECT_EQ(p.counts().at("vni"), (C{.size = 4, .free = 2, .taken = 3, .quarantined = 0}));
}

// The reuse delay (switch_pool_NAME=RANGES:PER_JOB:REUSE_DELAY): an ID
// released, or freed from the quarantine, is handed out again only once
// the delay has passed, on the steady clock; meanwhile it counts as
// cooling, and a pool with nothing else free is short (the gate's answer).
TEST(Pools, AReleasedIdWaitsItsReuseDelay) {
  using namespace std::chrono_literals;
  const PoolClock::time_point t0 = PoolClock::now();
  Pools p({PoolSpec{"vni", {{1, 2}}, 1, 30}, pool("pkey", {{10, 19}})});
  EXPECT_EQ(Ids{1}, ids_of(p.take(1, t0), "vni"));
  EXPECT_EQ(Ids{2}, ids_of(p.take(2, t0), "vni"));
  EXPECT_TRUE(p.release(1, t0 + 1s));
  EXPECT_EQ(p.counts(t0 + 2s).at("vni"),
            (PoolCounts{.size = 2, .free = 0, .taken = 1, .cooling = 1}));
  const PoolTake early = p.take(3, t0 + 30s); // 29 s after the release
  ASSERT_TRUE(early.shortage.has_value());
  EXPECT_EQ(*early.shortage,
            (PoolShortage{.pool = "vni", .free = 0, .needed = 1, .size = 2, .cooling = 1}));
  EXPECT_FALSE(p.cool(t0 + 30s));
  EXPECT_EQ(Ids{1}, ids_of(p.take(3, t0 + 31s), "vni")); // the delay is over
  // A pool without a delay frees at once, beside one with it.
  EXPECT_TRUE(p.release(3, t0 + 40s));
  EXPECT_EQ(p.counts(t0 + 40s).at("pkey").free, 9u);
  EXPECT_EQ(p.counts(t0 + 40s).at("vni").cooling, 1u);
  // Freed from the quarantine by an administrator: the delay too.
  EXPECT_TRUE(p.quarantine(2, 1700000000));
  EXPECT_TRUE(p.unquarantine(2, t0 + 50s));
  EXPECT_TRUE(p.cool(t0 + 71s)); // 1 (released at 40 s) is free again
  EXPECT_EQ(p.counts(t0 + 71s).at("vni"),
            (PoolCounts{.size = 2, .free = 1, .taken = 0, .cooling = 1}));
  EXPECT_TRUE(p.cool(t0 + 80s));
  EXPECT_EQ(p.counts(t0 + 80s).at("vni"), (PoolCounts{.size = 2, .free = 2}));
}

// At a start or takeover the IDs the previous controller released lately
// are not known: every free ID of a pool with a delay waits it once;
// IDs that live attempts hold stay theirs.  A reconfigure carries the
// delays under way.
TEST(Pools, AfterATakeoverEveryFreeIdWaitsTheDelayOnce) {
  using namespace std::chrono_literals;
  const PoolClock::time_point t0 = PoolClock::now();
  Pools p({PoolSpec{"vni", {{1, 4}}, 1, 60}, pool("pkey", {{10, 11}})});
  p.restore(7, {{"vni", {2}}});
  p.hold_free(t0);
  EXPECT_EQ(p.counts(t0).at("vni"), (PoolCounts{.size = 4, .free = 0, .taken = 1, .cooling = 3}));
  EXPECT_EQ(p.counts(t0).at("pkey").free, 2u) << "a pool without a delay is not held";
  EXPECT_TRUE(p.take(8, t0 + 59s).shortage.has_value());
  EXPECT_EQ(Ids{3}, ids_of(p.take(8, t0 + 60s), "vni"));
  EXPECT_TRUE(p.release(8, t0 + 61s));
  Pools next({PoolSpec{"vni", {{1, 4}}, 2, 60}});
  next.restore(7, {{"vni", {2}}});
  next.carry_cooling(p);
  EXPECT_EQ(next.counts(t0 + 62s).at("vni"),
            (PoolCounts{.size = 4, .free = 2, .taken = 1, .cooling = 1}));
  EXPECT_EQ((Ids{4, 1}), ids_of(next.take(9, t0 + 62s), "vni"));
  const PoolTake during = next.take(10, t0 + 120s);
  ASSERT_TRUE(during.shortage.has_value());
  EXPECT_EQ(during.shortage->cooling, 1u);
  const PoolTake after = next.take(10, t0 + 122s);
  ASSERT_TRUE(after.shortage.has_value());
  EXPECT_EQ(after.shortage->free, 1u) << "3, once its delay is over";
  EXPECT_EQ(after.shortage->cooling, 0u);
}

} // namespace
