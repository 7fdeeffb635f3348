// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/core_pools.hpp
//
// The controller's fabric-ID pools (issue 38; switch.lua(5), POOLS): the
// allocator (ctld/pools.hpp) as CtldCore drives it, kept apart from
// core_impl.hpp.  Nothing here does anything unless a pool is declared
// (switch_pool_NAME, CtldConfig::pools).
//
//   take     a new setup attempt (RunJobStart) gets its IDs in its job table
//            (JobArgs::pools) before the step's "setup started" record is
//            written, so they are durable before job_start runs; an attempt
//            that finds too few free is refused: its job_start does not run
//            and it fails as a failed setup naming the pool (start_setup).
//   end      the step that forgets an attempt releases its IDs or, when the
//            attempt ended other than cleanly, quarantines them and writes a
//            "pools quarantined" record first (journal_step).
//   rebuild  at each take of control, from the journal's live attempts and
//            its quarantine; the IDs of a pool no longer declared are
//            dropped, one line per pool.
//   admit    Slurm 25.11+: select_nodes()'s test_only call, before the
//            nodes are allocated: a job that would be refused waits
//            PENDING instead (CtldCore::admit), counted per pool.
#pragma once

#include "ctld/journal.hpp"
#include "ctld/pool_release.hpp"
#include "ctld/pools.hpp"
#include "ctld/stats.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace switchlua {

struct JobSwitchState;
struct Event;
struct StepResult;
enum class PoolsFate : std::uint8_t;

/// A pool's shortage as the refusal and the gate word it: "pool vni has 0
/// of 1024 IDs free, 1 needed (switch_pool_vni)".
std::string pool_shortage_text(const PoolShortage &s);

struct CorePools {
  Pools alloc;
  /// Attempts whose take found too few IDs, and why (for the refusal).
  std::map<std::int64_t, std::string> refused;
  /// Setups refused for want of each pool's IDs since the plugin started
  /// (switch-lua(1) STATUS); kept across rebuild().
  std::map<std::string, std::uint64_t> refusals;
  /// Whether a pool is declared (alloc.any()), read by the syncer without
  /// the core's mutex: it serves switch-lua pool release only then.
  std::atomic<bool> declared{false};
  /// The JobId of each quarantined attempt (for release() and the lines).
  std::map<std::int64_t, std::uint32_t> quarantined_jobs;
  /// The records of the current step to be written before its others
  /// (PoolsQuarantined), taken by journal_step().
  std::vector<JournalRecord> records;
  /// A job the admission gate keeps PENDING: the pool it waits for ("":
  /// the fabric breaker), and when the gate last kept it (steady clock).
  struct Waiting {
    std::string pool;
    std::chrono::steady_clock::time_point at;
  };
  /// The jobs the gate keeps PENDING, by JobId.  A job leaves when it is
  /// admitted or starts, or at the first prune (once a minute) after the
  /// gate has not kept it for kWaitingForgotten (a job cancelled while it
  /// waited never starts).
  std::map<std::uint32_t, Waiting> waiting;
  /// How many of `waiting` wait for each pool ("": the breaker), kept with
  /// it, so that stats() is O(pools) with 10,000 jobs waiting.
  std::map<std::string, std::uint64_t> waiting_for;
  std::chrono::steady_clock::time_point waiting_pruned{};
  /// IDs came free while jobs wait for them: the core asks Slurm to
  /// schedule (SlurmPort::schedule) and clears it.
  bool wake = false;
  static constexpr std::chrono::minutes kWaitingForgotten{5};

  /// The admission gate (Slurm 25.11+, CtldCore::admit) keeps job
  /// `job_id` PENDING for `pool` ("": the fabric breaker) at `now`: true
  /// when it was not waiting, or waited for something else (the caller
  /// logs it once, and publishes the counts).  O(log jobs); once a minute
  /// the waits not renewed for kWaitingForgotten are dropped.
  bool wait(std::uint32_t job_id, const std::string &pool,
            std::chrono::steady_clock::time_point now);
  /// The gate lets job `job_id` through (or it starts): true when it was
  /// waiting.
  bool admitted(std::uint32_t job_id);

  /// The clock of the reuse delays (a test seam).
  PoolClock::time_point (*mono)() = &PoolClock::now;

  /// Replaces the allocator with one of `specs`, rebuilt from the journal's
  /// table (nullptr: none); drops from it the pools not declared (the
  /// journal compacts without them).  At a take of control (`taking`) every
  /// free ID of a pool with a reuse delay waits that delay once
  /// (Pools::hold_free); at a reconfigure the delays under way go on.
  /// Returns the log lines, e.g. "pool pkey is no longer declared
  /// (switch_pool_pkey): the IDs 2 attempts held are dropped".
  std::vector<std::string> rebuild(const std::vector<PoolSpec> &specs, Journal *journal,
                                   bool taking);
  /// rebuild()'s part from the journal: its live attempts and quarantine
  /// restored, the pools not declared dropped (their lines returned).
  std::vector<std::string> restore_from(const std::vector<PoolSpec> &specs, Journal &journal);

  /// annotate() of a step: takes the IDs of a new attempt (r.next.job.pools,
  /// or a refusal), and releases or quarantines (at `now`, Unix seconds) the
  /// IDs of the attempts the step forgets, queuing their records.
  void step(const JobSwitchState &old, const Event &e, StepResult &r, std::int64_t now);

  /// A job state Slurm saved, adopted after a restart or takeover
  /// (CtldCore::adopt): its attempt's IDs are taken again unless the
  /// allocator holds them already (the journal's rebuild), the attempt is
  /// over, or the journal forgot it (`forgotten`: its IDs were released or
  /// quarantined there).  So a journal lost or set aside never lets a new
  /// attempt get IDs that a live one may still use.
  void adopt(const JobSwitchState &s, bool forgotten);

  /// Ends `attempt` (of job `job_id`, `submit_time`) as `fate` says:
  /// Quarantine moves its IDs to the quarantine at `now` and queues its
  /// PoolsQuarantined record in `records`; else they are released.
  void end(std::int64_t attempt, std::uint32_t job_id, std::int64_t submit_time, PoolsFate fate,
           std::int64_t now);

  /// Why the start of `attempt` is refused ("" when it is not): "pool vni
  /// has 0 of 1024 IDs free, 1 needed (switch_pool_vni)".
  std::string refusal(std::int64_t attempt) const;

  /// switch-lua pool release: frees the quarantined attempts `r` names (of
  /// its JobId, or the one holding its pool's ID), queuing a PoolsReleased
  /// record each in `records`.  The attempts freed, oldest first; none when
  /// nothing matched.
  std::vector<PoolReleased> release(const PoolReleaseRequest &r);

  /// Every declared pool's numbers and refusals, by name (CtldStats).
  std::map<std::string, PoolStats> stats() const;
  /// The oldest `limit` quarantined attempts (by quarantine time).
  std::vector<PoolReleased> quarantine_list(std::size_t limit) const;
  /// CtldStats::set_pools() of all the above.
  void publish(CtldStats &s) const {
    s.set_pools(stats(), quarantine_list(kQuarantineListed), alloc.quarantined().size());
  }
  /// publish(), then whether IDs came free while jobs waited for them
  /// since the last call (`wake`, cleared): the caller asks Slurm to
  /// schedule (SlurmPort::schedule).
  bool publish_woken(CtldStats &s) {
    publish(s);
    return std::exchange(wake, false);
  }
};

} // namespace switchlua
