// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/core.hpp
//
// The controller engine: owns each managed job's JobSwitchState, feeds the
// state machine (job_fsm.hpp) with slurmctld's events and the supervisor's
// outcomes, and carries out its actions through a SlurmPort.  The Slurm
// plugin (plugin/ctld_abi.cpp) and `switch-lua simulate` both drive this one
// implementation, so what the harness shows is what the cluster does.
//
// Threads:
//   - job_start() / job_complete() / recover_job() / adopt() are called by
//     slurmctld with its locks held (from switch_p_* hooks);
//   - outcomes arrive on the supervisor client's thread and are queued;
//   - the core's worker thread takes slurmctld's locks (SlurmPort::lock),
//     applies queued outcomes and retry ticks, and unlocks.
// Actions may re-enter the core on the same thread (a requeue makes
// slurmctld call job_complete at once); the core allows that.
#pragma once

#include "ctld/config.hpp"
#include "ctld/fence.hpp"
#include "ctld/job_fsm.hpp"
#include "ctld/journal.hpp"
#include "ctld/node_attribution.hpp"
#include "ctld/recovery_fsm.hpp"
#include "ctld/stats.hpp"
#include "supervisor/client.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchlua {

/// What the core needs from slurmctld.  Every method except lock()/unlock()
/// is called with slurmctld's locks held (the core's worker took them, or
/// slurmctld holds them around a hook); none may take them again.
class SlurmPort {
public:
  virtual ~SlurmPort() = default;
  virtual void lock() = 0; ///< conf R, job W, node W, fed R
  virtual void unlock() = 0;
  virtual void end_configuring(std::uint32_t job_id) = 0;
  virtual void requeue(std::uint32_t job_id, const std::string &reason) = 0;
  /// R_SETUP_FAILURES_HELD: requeue the job held (admin hold, `scontrol
  /// release`) with `reason`; cancel it if Slurm refuses the requeue.
  virtual void requeue_held(std::uint32_t job_id, const std::string &reason) = 0;
  virtual void cancel(std::uint32_t job_id, const std::string &reason) = 0;
  virtual void hold(std::uint32_t job_id, const std::string &nodes, bool hold_nodes) = 0;
  virtual void release(std::uint32_t job_id, const std::string &nodes, bool release_nodes) = 0;
  virtual void drain(const std::string &nodes, const std::string &reason) = 0;
  /// The job's switch state ended: the job record must forget its handle.
  virtual void forget(std::uint32_t job_id) = 0;
  virtual void save_state() = 0;
  /// Issue 24, the lost start: whether a node of `nodes` may still run an
  /// instance of `job_id` that slurmctld no longer knows it launched (an
  /// orphan whose launch was released before a crash).  Its teardown waits
  /// while true.  The default, false, tears such orphans down at once.
  virtual bool job_may_run_on_nodes(std::uint32_t job_id, const std::string &nodes) {
    (void)job_id;
    (void)nodes;
    return false;
  }
  /// One log line (already prefixed "switch/lua: ").  Thread-safe.
  virtual void log(LogLevel level, const std::string &line) = 0;
  /// Asked with the locks of lock() held: slurmctld has begun to stop (or
  /// to re-exec for a reconfigure) and its job and node functions may no
  /// longer be called (Slurm 25.05 and later close the accounting storage
  /// before switch_p_save).  True freezes the core as stop_children() does.
  virtual bool stopping() { return false; }
  /// Pool IDs came free while jobs wait PENDING for them (issue 38, the
  /// admission gate): Slurm's scheduler should run again soon.  Never
  /// blocks; may be called without slurmctld's locks.  Default: nothing.
  virtual void schedule() {}
};

struct CoreOptions {
  std::string script;              ///< path of switch.lua
  CtldConfig config;               ///< from SlurmctldParameters
  bool block_job_complete = false; ///< the script's answer, asked once
  ClientOptions client;            ///< supervisor and runner paths, caps
  /// The periodic check that retries EAGAIN teardowns.
  std::chrono::milliseconds retry_interval{5000};
  /// The journal file (ctld/journal.hpp), e.g.
  /// "<StateSaveLocation>/switch_lua.journal"; empty: no journal.
  std::string journal_path;
  /// The status file (ctld/stats.hpp), e.g.
  /// "<StateSaveLocation>/switch_lua.status"; empty: none.
  std::string status_path;
  /// Whether the constructor takes control (take_control(false)) at once:
  /// tests and `switch-lua simulate`.  The plugin passes false: slurmctld
  /// initialises the switch plugin in a standby backup and in a
  /// reconfigure's new process too, which must not touch the journal; it
  /// takes control from switch_p_restore (issue 24).
  bool take_control_at_start = true;
  /// How long take_control() waits for the journal's lock that another
  /// slurmctld holds (one giving up control releases it in its
  /// switch_p_save) before it fences that one out (ctld/fence.hpp).
  std::chrono::milliseconds lock_wait{5000};
  /// Test seam of take_control(): called at each step of the fence's
  /// take-over (ControlFence::take).
  FenceStepHook fence_step;
  /// Fault injection into the journal's writes (tests).
  JournalIo journal_io;
  /// A journal fdatasync that has not returned after this long is reported
  /// as a stall (one error line, the status file, two metrics; issue 40;
  /// switch_lua.conf(5), STATESAVELOCATION).  Checked every 500 ms.
  std::chrono::milliseconds journal_stall_after{5000};
  /// While the fabric breaker is open, the admission gate (admit(), Slurm
  /// 25.11+) lets one job through this often: its job_start probes the
  /// fabric.  Shorter in tests.
  std::chrono::milliseconds breaker_probe{30000};
  /// How long one segment of the supervisor's results file lasts (issue
  /// 40; supervisor/results_log.hpp); shorter in tests.
  std::chrono::milliseconds results_segment{30000};
};

/// Asks the script a boolean hook (block_job_complete / setup_special_steps)
/// through a supervised child, blocking up to `timeout`.  Errors name the
/// script, the hook and the outcome; the caller then uses false.
Expected<bool> ask_boolean_hook(SupervisorClient &client, const std::string &script, Hook h,
                                std::chrono::seconds timeout);

/// ask_boolean_hook(), with the contract's fallback: on any failure the
/// answer is false and `log_error` gets one line,
/// "switch/lua: <error>; <hook> taken as false".  Used by the plugin's init
/// and by `switch-lua simulate`, so both say the same.
bool ask_boolean_hook_or_false(SupervisorClient &client, const std::string &script, Hook h,
                               std::chrono::seconds timeout,
                               const std::function<void(const std::string &)> &log_error);

class CtldCore {
public:
  CtldCore(CoreOptions opts, SlurmPort &port);
  ~CtldCore(); ///< stops the worker and the supervisor (children killed)
  CtldCore(const CtldCore &) = delete;
  CtldCore &operator=(const CtldCore &) = delete;

  /// switch_p_job_start.  Returns whether the job is ours (network set):
  /// then its setup is started and the caller must keep it CONFIGURING.
  /// `job` is kept: a caller that moves it in spares a copy of the job
  /// table under Slurm's locks.
  bool job_start(JobArgs job, bool requeue_allowed);
  /// Slurm 25.11+, switch_p_job_start(job, test_only=true), the admission
  /// gate: select_nodes() asks it on every scheduling attempt of a job with
  /// --network, after it picked the nodes and before it allocates them,
  /// under Slurm's locks; a job_start() of the same job follows at once,
  /// under the same locks, when it answers true.  False keeps the job
  /// PENDING (the glue sets Reason=Resources) because a declared pool has
  /// fewer IDs free than a new attempt takes; one Info line when the job
  /// starts waiting, "JobId=42 job_start waits: the job stays PENDING
  /// (Reason=Resources) until pool vni has IDs free: pool vni has 0 of 4
  /// IDs free, 1 needed (switch_pool_vni)".  True when no pool is declared
  /// (one atomic load), and when this slurmctld is not in control
  /// (job_start() decides).  Never I/O, a child or a wait: the core's
  /// mutex, O(pools).  switch.lua(5), POOLS.
  bool admit(std::uint32_t job_id);
  /// switch_p_job_start of an interactive job (srun, salloc), right after
  /// job_start() returned true, with the locks Slurm holds there (conf R,
  /// job W, node W, part R, fed R: those the worker takes, and more).  Waits
  /// at most switch_interactive_wait for the outcome of the job's job_start
  /// and, when it is a success whose only actions are ending the launch
  /// delay and logging, applies it here.  True then: the setup is over and
  /// the glue must not delay the launch, so the job is never CONFIGURING
  /// and srun's first readiness poll finds it ready (issue 8).  False: no
  /// outcome in time, an outcome that is not such a success (left to the
  /// worker: a requeue or cancel must not run inside Slurm's select_nodes()),
  /// a wait of 0, slurmctld stopping, this slurmctld found no longer in
  /// control while the outcome's records were synced (issue 40: the
  /// controller in control recovers the job), or waits being skipped: after a wait
  /// that ran out, the next kInlineSkip calls do not wait, so a slow
  /// job_start holds Slurm's locks for nothing at most once in
  /// kInlineSkip + 1 interactive jobs; a job_start that returns within the
  /// wait (queued + ran) meanwhile ends the skipping.  The glue then delays the launch as
  /// for any job and the worker ends the delay.
  bool settle_setup(std::uint32_t job_id);
  /// After a settle_setup() wait that ran out, how many interactive jobs
  /// skip the wait.
  static constexpr std::uint32_t kInlineSkip = 15;
  /// switch_p_job_complete.  Nothing for jobs without switch state.  `end`:
  /// what slurmctld says of the job's nodes now (issue 20): the nodes of
  /// the job that failed or were removed become job.failed_nodes and
  /// job.failed_node_names of every job_complete of this run (one info
  /// line names them), none when `end` names none.
  void job_complete(std::uint32_t job_id, const JobEnd &end = {});
  /// After a restart (restore thread, locks held): Recover for the job.
  /// `configuring`: the job is RUNNING+CONFIGURING.  Says what the glue
  /// must do with the job's launch (see Recovery).
  Recovery recover_job(std::uint32_t job_id, bool configuring);
  /// A state unpacked from Slurm's job state file (marked recovered),
  /// merged with the journal: a setup the journal says returned with a
  /// jobinfo is restored as Running with it (never run again).
  void adopt(JobSwitchState s);
  /// After the restore walk (locks held): every attempt the journal says is
  /// not over and no job's switch state carries is torn down, with its own
  /// job table and jobinfo (nil if its job_start never reported).
  void reconcile_journal();
  /// The current state of a job, if any (copy).
  std::optional<JobSwitchState> state_of(std::uint32_t job_id) const;
  /// Replaces the settings (tests only: the plugin reads SlurmctldParameters
  /// once, at init, since a reconfigure re-execs slurmctld); calls in
  /// flight keep their timeout.
  void set_config(const CtldConfig &c);
  CtldConfig config() const;
  /// switch_p_restore: this slurmctld now holds control (its start-up as
  /// primary, a takeover, or the resumption after a failed reconfigure).
  /// Takes the journal's lock, reads the journal as it is now (what another
  /// controller wrote included), and starts the status file.  `keep_jobs`:
  /// the job states in memory stay (a failed reconfigure: Slurm does not
  /// load its job state again) and are merged with the journal as adopt()
  /// does; otherwise they are dropped (Slurm loads its state now and
  /// adopt() gets every job) without a call to SlurmPort::forget: Slurm
  /// holds no job record then (at a takeover it has just freed them all,
  /// and with them its job table, which a lookup would dereference: the
  /// third takeover in one live backup crashed so, t0911-takeover.sh).
  /// A lock still held by another process after lock_wait is fenced out
  /// (issue 40: a fresh lock file and the next epoch, ctld/fence.hpp); that
  /// controller stops at its next check.  Already in control: nothing.
  /// Errors (logged too): the lock or epoch file cannot be written, or
  /// another controller took control meanwhile; the core then runs WAITING
  /// (no call runs, new setups wait: job_start() returns true and parks
  /// them; the worker retries every second, without fencing out a
  /// controller that took control after this one first tried).  Never
  /// something the caller must abort on.
  Expected<void> take_control(bool keep_jobs);
  /// switch_p_save: this slurmctld gives up control (shutdown, reconfigure,
  /// standby after handing control back): stop_children(), then the status
  /// file's last write, and the journal is closed and its lock released.
  /// From here on job_start() refuses (logged) and nothing is applied
  /// until take_control().
  void release_control();
  /// Whether this core holds control (take_control() and no
  /// release_control() since, and not found stale since).
  bool in_control() const;
  /// Whether take_control() failed and the core retries (WAITING).
  bool waiting_for_control() const;
  /// WAITING: take_control() again, without waiting for the lock (the
  /// plugin's restore thread calls it every second, then recovers the jobs
  /// and calls reconcile_journal(), which starts the setups that waited).
  /// The jobs adopted meanwhile are merged with the journal as adopt()
  /// does.  True once in control; false while it still fails (or when not
  /// WAITING and not in control: control was given up meanwhile).
  bool retry_control();
  /// The epoch of the current (or last) control period; 0 before the first
  /// or without a journal.
  std::uint64_t epoch() const;
  /// Checks the control fence now (the worker does every 500 ms, and
  /// before each journal write, hook launch and synced decision's effects):
  /// false when this core is not (or no longer) in control.
  bool check_control();
  /// switch_p_save, before slurmctld exits or re-execs (reconfigure): kills
  /// every supervised child, and freezes the states so the killed calls'
  /// outcomes are not applied: the saved state keeps what was outstanding,
  /// marked recovered, for the next slurmctld (or this one, after a failed
  /// reconfigure: recover_job() and job_start() unfreeze).  Blocks up to 5 s.
  void stop_children();
  /// `kill -9` of slurmctld, for simulate and tests: from this call on no
  /// outcome is applied and no call result changes a job's switch state, as
  /// if the process had died now; nothing is saved or killed (destroy the
  /// core for that).  The journal keeps what it holds.
  void halt();
  /// Runs queued events now (tests and simulate; the worker does it too).
  /// Returns the number of events applied.
  std::size_t drain_events();
  /// Fires RetryTick for jobs waiting now instead of at the next check.
  void retry_now();
  /// Number of hook calls in flight, counting those waiting for their
  /// journal record's fdatasync (pending_calls).
  std::size_t calls_in_flight() const;
  /// Number of the worker's decisions whose actions are not carried out
  /// yet: their journal records wait for the syncer's fdatasync, or their
  /// effects for the worker's next hold of Slurm's locks (issue 22), or
  /// the worker is carrying them out now.
  std::size_t decisions_pending() const;
  /// The counters (switch-lua(1), STATUS), a copy.
  StatsSnapshot stats() const;
  /// Writes the status file now (tests; a thread does it every second).
  void publish_status();

private:
  /// reconcile_journal()'s orphans (mu held).
  void reconcile_orphans();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace switchlua
