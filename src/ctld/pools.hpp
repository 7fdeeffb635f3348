// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/pools.hpp
//
// Issue 38, durable fabric-ID pools (opt-in): integer IDs (Slingshot VNIs,
// InfiniBand PKeys, ...) that the controller hands to the setup attempts of
// managed jobs so that no two live attempts ever hold the same ID of a pool.
// A pool is declared in SlurmctldParameters (switch_pool_NAME=RANGES[:PER_JOB[:REUSE_DELAY]],
// switch_lua.conf(5)); its rules are in switch.lua(5), POOLS.
//
// This file is the allocator only, pure: no I/O, no clock reads (times are
// passed in), no locks (the core calls it under its mutex).  What makes it
// durable is the caller: the IDs taken are written into the attempt's job
// table (JobArgs::pools) in the journal's SetupStarted record before the hook
// runs, and the allocator is rebuilt from the journal's live attempts and
// quarantined IDs with restore().
//
// Per pool:
//   free         the IDs of the pool's ranges that no attempt holds
//   taken        attempt -> the IDs it holds (a live attempt)
//   quarantined  attempt -> the IDs it held, kept out of use because its
//                teardown failed (the fabric may still use them); reported,
//                released by an administrator only
// IDs are handed out round-robin: from a cursor just after the last ID
// handed out, wrapping at the end of the ranges, so a released ID is reused
// as late as possible (flux-coral2 hands out Slingshot VNIs the same way:
// a VNI freed by one job is not at once the next job's, whose traffic
// could then meet the late packets of the first).  A pool may also have a
// reuse delay (PoolSpec::reuse_delay): an ID released stays out of use
// ("cooling") for that many seconds, on the steady clock; and after a
// start or a takeover, when which IDs the previous controller released
// lately is not known, every free ID of such a pool waits that delay once
// (hold_free()).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace switchlua {

/// The clock of the reuse delays: monotonic (a step of the wall clock
/// neither ends nor lengthens a delay).
using PoolClock = std::chrono::steady_clock;

/// One inclusive range of IDs, first <= last.
struct PoolRange {
  std::uint32_t first = 0;
  std::uint32_t last = 0;
  bool operator==(const PoolRange &) const = default;
};

/// One declared pool.  `name` matches [a-z][a-z0-9_]{0,31}; `ranges` are
/// sorted, disjoint and non-empty (ctld/config.cpp reads them so); every
/// attempt takes `per_job` (>= 1) IDs.  Source: switch_lua.conf(5),
/// switch_pool_NAME.
struct PoolSpec {
  std::string name;
  std::vector<PoolRange> ranges;
  std::uint32_t per_job = 1;
  /// Seconds an ID released stays out of use before it is handed out again
  /// (0: none; at most 86400).  Source: switch_lua.conf(5),
  /// switch_pool_NAME=RANGES:PER_JOB:REUSE_DELAY.
  std::uint32_t reuse_delay = 0;
  bool operator==(const PoolSpec &) const = default;
};

/// The IDs an attempt holds: pool name -> its IDs, in the order handed out
/// (per pool, per_job of them).  What a job table carries as `pools`.
using PoolIds = std::map<std::string, std::vector<std::uint32_t>>;

/// Why take() handed out nothing: the first pool (in name order) with fewer
/// than `needed` IDs free; `free` of its `size` IDs were free.
struct PoolShortage {
  std::string pool;
  std::size_t free = 0;
  std::size_t needed = 0;
  std::size_t size = 0;
  /// Of the IDs not free, those only in their reuse delay (free once it
  /// ends).
  std::size_t cooling = 0;
  bool operator==(const PoolShortage &) const = default;
};

/// The result of take(): the attempt's IDs, or the shortage.
struct PoolTake {
  std::optional<PoolIds> ids;
  std::optional<PoolShortage> shortage;
};

/// IDs kept out of use after a failed teardown: what the attempt held and
/// since when (Unix seconds, as passed to quarantine()).
struct PoolQuarantine {
  PoolIds ids;
  std::int64_t since = 0;
  bool operator==(const PoolQuarantine &) const = default;
};

/// One pool's numbers now (switch-lua(1) STATUS and its metrics).
struct PoolCounts {
  std::size_t size = 0;        ///< IDs in its ranges
  std::size_t free = 0;        ///< of those, held by no attempt
  std::size_t taken = 0;       ///< IDs held by attempts not over
  std::size_t quarantined = 0; ///< IDs kept out of use after a failed teardown
  std::size_t cooling = 0;     ///< IDs released and still in their reuse delay
  bool operator==(const PoolCounts &) const = default;
};

/// The allocator of every declared pool.  Not thread-safe.
class Pools {
public:
  Pools() = default;
  /// The pools of `specs` (names distinct), all IDs free, cursors at the
  /// start of each pool.
  explicit Pools(std::vector<PoolSpec> specs);

  /// Whether any pool is declared (false: the feature is off and no caller
  /// writes anything about pools).
  bool any() const { return !pools_.empty(); }
  /// The declared pools, in name order.
  std::vector<PoolSpec> specs() const;

  /// Hands `attempt` per_job IDs of every pool, round-robin from each
  /// pool's cursor.  Idempotent per attempt: an attempt that holds IDs
  /// (taken, or quarantined) gets the same IDs again and nothing changes,
  /// so a retried start of one attempt keeps its IDs.  When a pool has
  /// fewer than per_job IDs free, nothing at all is taken (no pool changes)
  /// and the shortage names that pool.  No pools declared: an empty map.
  /// The reuse delays over at `now` end first (cool()).
  PoolTake take(std::int64_t attempt, PoolClock::time_point now = {});

  /// The IDs `attempt` holds (taken or quarantined); empty when none.
  PoolIds held(std::int64_t attempt) const;

  /// Frees the IDs of `attempt` (after a clean teardown, or a setup that
  /// failed or declined: switch.lua(5), POOLS); those of a pool with a
  /// reuse delay free only once it has passed from `now`.  True when it
  /// held any taken IDs; a quarantined attempt stays quarantined (false).
  bool release(std::int64_t attempt, PoolClock::time_point now = {});

  /// Moves the taken IDs of `attempt` to the quarantine, at `now` (Unix
  /// seconds): they stay out of use.  True when it held taken IDs.
  bool quarantine(std::int64_t attempt, std::int64_t now);

  /// Frees a quarantined attempt's IDs (an administrator's decision), after
  /// their pool's reuse delay from `now` as release() does.  True when it
  /// was quarantined.
  bool unquarantine(std::int64_t attempt, PoolClock::time_point now = {});

  /// Ends the reuse delays over at `now`: those IDs are free again.  True
  /// when any came free.  O(IDs freed) amortized.
  bool cool(PoolClock::time_point now);

  /// At a start or takeover: every free ID of each pool with a reuse delay
  /// stays out of use until `now` + that delay (the IDs the previous
  /// controller released within it are not recorded).  O(pools).
  void hold_free(PoolClock::time_point now);

  /// Carries the reuse delays under way in `old` (a reconfigure that
  /// changed the pools) into this allocator, for the pools both declare.
  void carry_cooling(const Pools &old);

  /// Rebuilds one attempt from the journal: `ids` are taken by `attempt`
  /// (or quarantined since `since` when set).  IDs of a pool that is not
  /// declared are dropped and the pool's name returned (the caller logs it
  /// once per pool); IDs outside a declared pool's ranges are kept held
  /// (they are still in use on the fabric) but never handed out.  The
  /// cursor of each pool moves to the restored attempt's last ID when it
  /// is the newest attempt restored so far, so reuse stays delayed across a
  /// restart.  Restoring an attempt that holds IDs already replaces them.
  std::vector<std::string> restore(std::int64_t attempt, const PoolIds &ids,
                                   std::optional<std::int64_t> since = std::nullopt);

  /// Free IDs of `pool` (0 for a pool not declared).
  std::size_t free_count(const std::string &pool) const;
  /// What take() of a new attempt would find now: the first pool (in name
  /// order) with fewer than per_job IDs free, or nullopt when every pool
  /// has enough (or none is declared).  O(pools), no allocation unless a
  /// pool is short.  The admission gate's question (CtldCore::admit), after
  /// cool(now).
  std::optional<PoolShortage> shortage(PoolClock::time_point now = {}) const;
  /// Every declared pool's numbers at `now`, by name; O(pools).  An ID held
  /// outside a pool's ranges (restored after the ranges shrank) counts as
  /// taken or quarantined, not in `size`.
  std::map<std::string, PoolCounts> counts(PoolClock::time_point now = {}) const;
  /// Live attempts holding IDs, by attempt.
  const std::map<std::int64_t, PoolIds> &taken() const { return taken_; }
  /// Quarantined attempts, by attempt.
  const std::map<std::int64_t, PoolQuarantine> &quarantined() const { return quarantined_; }

private:
  struct Pool {
    PoolSpec spec;
    std::size_t size = 0;                ///< IDs in the ranges
    std::set<std::uint32_t> used;        ///< held IDs (in the ranges or not)
    std::size_t used_in_ranges = 0;      ///< of used, those inside the ranges
    std::size_t quarantined = 0;         ///< of used, those of quarantined attempts
    std::optional<std::uint32_t> cursor; ///< last ID handed out
    /// Released IDs in their reuse delay (still in `used`): (until, ID),
    /// oldest first (one delay per pool, a monotonic clock).
    std::deque<std::pair<PoolClock::time_point, std::uint32_t>> cooling;
    /// hold_free(): until then no ID not in `used` is free.
    PoolClock::time_point held_until{};
  };
  /// The free IDs of `p` at `now`, and those of them held by hold_free().
  static std::size_t free_ids(const Pool &p, PoolClock::time_point now);
  static std::size_t held_ids(const Pool &p, PoolClock::time_point now);
  /// Frees `ids` at once, or puts them in their pools' reuse delay.
  void let_go(const PoolIds &ids, PoolClock::time_point now);
  /// The ID after `id` in the pool's ranges, wrapping; the first ID when
  /// `id` is nullopt.
  static std::uint32_t next_id(const Pool &p, std::optional<std::uint32_t> id);
  static bool in_ranges(const Pool &p, std::uint32_t id);
  void hold(const PoolIds &ids);
  void unhold(const PoolIds &ids);
  /// Adds `sign` * the IDs of `ids` to each pool's quarantined count.
  void count_quarantined(const PoolIds &ids, int sign);
  std::map<std::string, Pool> pools_;
  std::map<std::int64_t, PoolIds> taken_;
  std::map<std::int64_t, PoolQuarantine> quarantined_;
  std::int64_t newest_restored_ = 0;
};

} // namespace switchlua
