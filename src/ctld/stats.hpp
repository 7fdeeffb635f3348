// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/stats.hpp
//
// The controller's counters (switch-lua(1), STATUS) and their publisher:
//
//   CtldCore ──call_submitted/started/done, action──▶ CtldStats (own mutex)
//                                                       │ snapshot()
//   StatusPublisher thread (every 1 s) ◀────────────────┘
//       changed, or 30 s since the last write ─▶ <StateSaveLocation>/switch_lua.status
//                                                 (JSON, common/safe_file.hpp)
//       switch_status_interval > 0 and due   ─▶ one info line in slurmctld.log
//
// The counters start from zero when the plugin starts (slurmctld's start
// and every reconfigure, which restarts the plugin in 24.11); nothing is
// carried across.  Feeding them costs a mutex and a map update per call
// event; the file is written on the publisher's own thread, never on
// slurmctld's.
#pragma once

#include "ctld/job_fsm.hpp"
#include "ctld/pool_release.hpp"
#include "ctld/pools.hpp"
#include "supervisor/client.hpp"
#include "supervisor/protocol.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <thread>
#include <utility>

namespace switchlua {

/// Version of the status file's layout ("format").  A reader refuses a
/// newer one.
inline constexpr int kStatusFormat = 1;
/// Upper bounds (ms) of the round-trip histogram's buckets; one more bucket
/// above the last bound collects the rest.
inline constexpr std::array<std::int64_t, 15> kRoundTripBoundsMs{
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000};

/// The outcome classes counted per hook, in the file's order:
///   ok          job_start: rc 0 with a jobinfo; job_complete: rc >= 0, not EAGAIN
///   declined    job_start: rc 0 with nil jobinfo (not managed)
///   eagain      job_complete: slurm.EAGAIN
///   failed      a return the contract counts as a failure (job_start rc ~= 0
///               or a jobinfo that cannot be saved; job_complete rc < 0)
///   lua_error, bad_return, exited_without_return, signaled, timed_out,
///   spawn_failed, abandoned, load_failed: outcome_kind_name() of the rest.
std::string_view outcome_class(Hook h, const Outcome &o);
/// Every class outcome_class() may give, in the file's order.
const std::vector<std::string_view> &outcome_classes();

/// A fixed-bucket histogram of durations (kRoundTripBoundsMs).
struct RoundTrip {
  std::array<std::uint64_t, kRoundTripBoundsMs.size() + 1> buckets{};
  std::uint64_t count = 0;
  std::int64_t sum_ms = 0; ///< of every duration added (the histogram's _sum)
  std::int64_t max_ms = 0;
  void add(std::chrono::milliseconds d);
  /// The upper bound (ms) of the bucket holding the q-quantile (0 < q <= 1),
  /// i.e. "at most this many ms"; -1 when the last (open) bucket holds it;
  /// 0 when empty.
  std::int64_t quantile_bound(double q) const;
};

/// Per lane of the supervisor (protocol.hpp, Lane).
struct LaneStats {
  std::uint64_t waiting = 0; ///< submitted, not started nor finished (queue depth now)
  std::uint64_t started = 0; ///< calls that left the lane
  std::int64_t wait_ms_total = 0;
  std::int64_t wait_ms_max = 0;
};

/// One fabric-ID pool (issue 38; switch.lua(5), POOLS): its IDs now, and
/// the setups refused for want of them since the plugin started.
struct PoolStats {
  PoolCounts ids;
  std::uint64_t refusals = 0;
  /// Jobs the admission gate keeps PENDING for this pool now (Slurm
  /// 25.11+; CorePools::admit).
  std::uint64_t waiting = 0;
  bool operator==(const PoolStats &) const = default;
};

/// The quarantined attempts the status file lists (the oldest).
inline constexpr std::size_t kQuarantineListed = 100;

/// The counters, a copy (CtldStats::snapshot()).
struct StatsSnapshot {
  std::int64_t started_at = 0; ///< unix time the counters started from zero
  /// hook name -> outcome class -> calls finished with it.
  std::map<std::string, std::map<std::string, std::uint64_t>> outcomes;
  std::map<std::string, RoundTrip> round_trip; ///< hook name -> submit-to-outcome
  std::array<LaneStats, 3> lanes{};            ///< by Lane
  std::uint64_t in_flight = 0;                 ///< submitted and not finished
  std::uint64_t running = 0;                   ///< of those, started (their process has the call)
  std::uint64_t timeouts = 0;                  ///< calls that hit switch_timeout
  std::uint64_t leftovers_killed = 0; ///< processes that left a call's group, killed at its end
  std::uint64_t retries = 0;          ///< job_complete runs scheduled again (EAGAIN, restarts)
  std::uint64_t drains = 0;           ///< drains of a job's nodes asked of Slurm
  std::uint64_t requeues = 0;         ///< requeues asked of Slurm
  std::uint64_t cancels = 0;          ///< cancels asked of Slurm
  /// Journal::failure(): "" while the journal writes, else why it cannot
  /// (new setups fail meanwhile; issue 24).
  std::string journal_failure;
  /// Teardowns waiting for the journal (switch_journal_failure=wait): their
  /// job_complete runs once it is written again; their nodes stay held.
  std::uint64_t journal_waiting = 0;
  /// A journal fdatasync that has not returned for switch/lua's stall
  /// threshold (5 s): unix time it began, 0 when none is stalled; and how
  /// many stalls were reported (issue 40).
  std::int64_t journal_stalled_since = 0;
  std::uint64_t journal_stalls = 0;
  /// Hook calls whose runner could not be started (fork/spawn EAGAIN or
  /// ENOMEM, a full lane), retried as faults of the host, never counted
  /// against a job (issue 20; R_*_HOST_FAULT).
  std::uint64_t host_faults = 0;
  /// The fabric breaker (issue 20): open now, since when (unix time of its
  /// last change), why it opened, and how many times it opened.
  bool breaker_open = false;
  std::int64_t breaker_since = 0;
  std::string breaker_why;
  std::uint64_t breaker_opens = 0;
  std::uint64_t jobs = 0; ///< jobs with switch state now
  /// Control of the journal (issue 40; switch.lua(5), HIGH AVAILABILITY):
  /// "in control", "WAITING" (Slurm made this slurmctld the controller but
  /// the plugin could not take control yet: new setups wait, retried every
  /// second), "stale" (another slurmctld took control since: no hook runs
  /// here) or "standby".
  std::string control = "standby";
  std::string control_why;                ///< WAITING / stale: why
  std::uint64_t epoch = 0;                ///< the epoch of this controller's last control period
  std::uint64_t control_waits = 0;        ///< times take-control failed and the plugin ran WAITING
  std::uint64_t fenced_takeovers = 0;     ///< control taken from a holder that kept its lock
  std::uint64_t stale_periods = 0;        ///< times this controller found itself stale
  std::map<std::string, PoolStats> pools; ///< by pool name; empty without switch_pool_NAME
  /// The quarantined attempts, oldest first, at most kQuarantineListed of
  /// them (what switch-lua pool release frees), and how many there are.
  std::vector<PoolReleased> quarantine;
  std::uint64_t quarantined_attempts = 0;
};

/// The status file's JSON (switch-lua(1), STATUS): the snapshot plus what
/// the publisher knows (`written` unix time, script path, journal size).
nlohmann::json status_json(const StatsSnapshot &s, std::int64_t written, const std::string &script,
                           std::int64_t journal_bytes, std::uint32_t summary_interval);
/// The one-line summary for slurmctld.log, e.g. "switch/lua: status: job_start 3 ok, 0
/// declined, 1 failed; job_complete 3 ok, 0 eagain, 0 failed; in flight 0 (waiting 0);
/// timeouts 0, leftovers killed 0, retries 0, drains 0, requeues 1, cancels 0; round trip
/// job_start p50<=20 ms p99<=50 ms".
std::string status_summary(const StatsSnapshot &s);

/// The counters.  Thread-safe.  Every call names the supervisor's CallId;
/// a call's events must come in the order submitted, started (optional),
/// done (the core feeds them under its own mutex, which orders them).
class CtldStats {
public:
  using Clock = std::chrono::steady_clock;
  explicit CtldStats(std::int64_t started_at_unix);

  void call_submitted(CallId id, Hook h, Lane lane, Clock::time_point now = Clock::now());
  /// The call left its lane after waiting `queued` (the supervisor's figure).
  void call_started(CallId id, std::chrono::milliseconds queued);
  /// The call's outcome; its round trip is now - submitted.
  void call_done(CallId id, const Outcome &o, Clock::time_point now = Clock::now());
  /// A call refused before it had an id (submit() failed): counted under its
  /// outcome (spawn_failed), no round trip.
  void call_refused(Hook h, const Outcome &o);
  /// Counts Requeue, Cancel, DrainNodes and ScheduleRetry; others ignored.
  void action(ActionKind k);
  void set_jobs(std::size_t n);
  /// StatsSnapshot::pools (CorePools::stats()), ::quarantine and
  /// ::quarantined_attempts (CorePools::quarantine_list()).
  void set_pools(std::map<std::string, PoolStats> pools, std::vector<PoolReleased> quarantine = {},
                 std::uint64_t quarantined_attempts = 0);
  /// StatsSnapshot::journal_failure.
  void set_journal_failure(const std::string &why);
  /// StatsSnapshot::journal_stalled_since = `since` (unix s; 0: over), and
  /// one more journal_stalls when a stall begins.
  void set_journal_stall(std::int64_t since);
  /// StatsSnapshot::journal_waiting.
  void set_journal_waiting(std::size_t n);
  /// StatsSnapshot::control, control_why and epoch.
  void set_control(const std::string &state, const std::string &why, std::uint64_t epoch);
  /// One more of control_waits, fenced_takeovers or stale_periods.
  void count_control(std::uint64_t StatsSnapshot::*counter);
  /// One host fault (a runner that could not be started; host_faults).
  void host_fault();
  /// The fabric breaker opened (`open`, with `why`) or closed at `at` (unix).
  void breaker(bool open, std::int64_t at, const std::string &why);

  StatsSnapshot snapshot() const;
  /// Grows with every change (the publisher writes when it moved).
  std::uint64_t version() const { return version_.load(); }

private:
  struct Pending {
    Hook hook = Hook::JobStart;
    Lane lane = Lane::Batch;
    Clock::time_point submitted;
    bool started = false;
  };
  void count_outcome(Hook h, const Outcome &o);
  /// Sets one field of s_ to `v`; a new version() only when it changed.
  template <class T, class V> void set_field(T StatsSnapshot::*field, V &&v) {
    std::lock_guard g(mu_);
    if (s_.*field == v)
      return;
    s_.*field = std::forward<V>(v);
    ++version_;
  }
  mutable std::mutex mu_;
  StatsSnapshot s_;
  std::map<CallId, Pending> pending_;
  std::atomic<std::uint64_t> version_{0};
};

/// The thread that publishes a CtldStats: the status file and the periodic
/// summary line.
class StatusPublisher {
public:
  using LogFn = std::function<void(LogLevel level, const std::string &line)>;
  /// `path` empty: no file.  `journal_path`: its size goes in the file
  /// (0 when empty or missing).  `log` gets the summary lines (info) and,
  /// once per run of failures, why the file cannot be written (error).
  StatusPublisher(const CtldStats &stats, std::string path, std::string script,
                  std::string journal_path, LogFn log);
  ~StatusPublisher(); ///< writes the file a last time and stops the thread
  StatusPublisher(const StatusPublisher &) = delete;
  StatusPublisher &operator=(const StatusPublisher &) = delete;
  /// switch_status_interval: seconds between summary lines, 0 = none.
  void set_interval(std::uint32_t seconds) { interval_ = seconds; }
  /// switch_metrics_file: where the Prometheus text of the counters
  /// (ctld/metrics.hpp) is written at the same moments as the status file,
  /// atomically, world-readable; empty: nowhere.  Thread-safe.
  void set_metrics_path(const std::string &path);
  /// Both settings at once (switch_status_interval, switch_metrics_file).
  void set_settings(std::uint32_t interval_s, const std::string &metrics_path) {
    set_interval(interval_s);
    set_metrics_path(metrics_path);
  }
  /// Writes the file now (tests; the thread does it every second).
  void publish();
  /// From now on publish() writes nothing, the destructor's last write
  /// included (issue 40: a stale controller leaves the status file to the
  /// one in control).
  void silence() {
    std::lock_guard g(write_mu_);
    silenced_ = true;
  }

private:
  void run();
  const CtldStats &stats_;
  std::string path_, script_, journal_path_;
  std::mutex settings_mu_;       // set_metrics_path(), never held during a write
  std::string metrics_path_;     // under settings_mu_
  bool metrics_changed_ = false; // under settings_mu_
  bool metrics_failing_ = false; // under write_mu_
  LogFn log_;
  std::atomic<std::uint32_t> interval_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  /// publish(): the thread, the core's publish_status and the tests; only
  /// publish() takes it, so a slow disk never blocks a setting's change.
  std::mutex write_mu_;
  bool silenced_ = false; // under write_mu_
  bool failing_ = false;
  std::uint64_t written_version_ = ~0ULL;
  std::chrono::steady_clock::time_point last_write_{}, last_summary_{};
  std::thread thread_;
};

} // namespace switchlua
