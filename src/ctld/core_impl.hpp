// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: ctld/core_impl.hpp
//
// The engine's insides (CtldCore::Impl), shared by the files it is
// written in, one per mechanism:
//   core.cpp           events in (apply()), actions out (execute()), the API
//   core_worker.cpp    the worker thread: queued outcomes and the effects
//                      that waited for the journal's fdatasync, applied
//                      under slurmctld's locks in short holds; timers
//   core_control.cpp   taking and giving up control (takeover, shutdown)
//   core_calls.cpp     hook calls: submitting them, their outcome lines
//   core_journal.cpp   the journal's writer: what each transition writes,
//                      attempt ids, setups refused and teardowns waiting
//                      while it cannot be written
//   core_recovery.cpp  the reconcile after a restart or takeover, orphans
//   core_breaker.cpp   the fabric breaker, the host-fault lines' rate limit
//   core_pools.cpp     fabric-ID pools; core_admit.cpp: the admission gate
// Internal to src/ctld (see core.hpp for the engine's contract).
//
// Threads: apply() runs with slurmctld's locks held and the core's
// recursive mutex `mu`; re-entry from an action (requeue -> job_complete)
// is allowed.  The supervisor client's thread only enqueues.  The syncer
// thread fdatasyncs the journal with no lock held, then (under mu) submits
// the calls and readies the effects that waited for it; the worker carries
// those effects out under slurmctld's locks.  Lock order: slurmctld's
// locks, then mu, then qmu.
#pragma once

#include "ctld/core.hpp"
#include "ctld/core_pools.hpp"
#include "ctld/fence.hpp"
#include "ctld/setup_failures.hpp"
#include "supervisor/results_log.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace switchlua {
namespace core_detail {

/// A queued input for the worker.
struct Queued {
  std::uint32_t job_id;
  std::uint64_t generation; // of the call that produced it (0: RetryTick)
  EventKind kind;
  Outcome outcome;
  std::int64_t orphan = 0; // the attempt of an orphan teardown, else 0
  /// The segment of the supervisor's results file its call recorded its
  /// result in (Impl::results_seg), 0 for none: that segment is kept while
  /// this waits to be applied.
  std::uint64_t results_seg = 0;
};

/// A setup attempt the journal says is not over and whose job record no
/// longer carries it: torn down on its own, once (R_ORPHAN_*).
struct Orphan {
  JobArgs job;
  std::optional<MsgpackBytes> jobinfo;
  bool in_flight = false;
  /// R_ORPHAN_WAIT_NODES: launched before the crash, its nodes may still run
  /// it; its teardown waits (checked at every periodic check).
  bool waiting = false;
  std::chrono::steady_clock::time_point since{};
  std::uint32_t host_faults = 0; ///< runners in a row that could not be started
};

/// The longest an orphan waits for its nodes (R_ORPHAN_WAIT_NODES) before
/// it is torn down anyway, with an error line.
inline constexpr std::chrono::minutes kOrphanNodeWaitMax{10};

/// The worker gives up Slurm's locks after this many steps (outcomes
/// applied or ready effects carried out) in one hold, or after
/// kWorkerHold, whichever comes first (issue 22).
inline constexpr std::size_t kWorkerBatch = 32;
inline constexpr std::chrono::milliseconds kWorkerHold{2};

/// How often a failing journal is tried again (besides the periodic
/// check): the teardowns that wait for it run, and a kill -9 soon after the
/// disk has room again finds the records refused meanwhile on disk.
inline constexpr std::chrono::milliseconds kJournalRetry{500};

/// How often the worker checks the control fence when nothing else did
/// (issue 40): a controller resumed after a stop finds itself stale within
/// this, whether or not it has anything to write.
inline constexpr std::chrono::milliseconds kFenceCheck{500};
/// How often a WAITING controller tries to take control again.
inline constexpr std::chrono::milliseconds kControlRetry{1000};

/// Seconds since the epoch (the fabric breaker's times in the stats).
inline std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The rules of a teardown that failed and would drain: what the fabric
/// breaker counts (switch_breaker_failures; core_breaker.cpp).
bool is_failed_teardown(std::string_view rule);

/// Whether an action is a hook call (job_start, job_complete or a late
/// job_complete): what the syncer may hold back until its record is synced.
inline bool is_call(ActionKind k) {
  return k == ActionKind::RunJobStart || k == ActionKind::RunJobComplete ||
         k == ActionKind::RunLateJobComplete;
}

/// The journal record of `kind` for the setup attempt of `job`.
inline JournalRecord journal_record(JournalKind k, const JobArgs &job) {
  return JournalRecord{
      .kind = k, .attempt = job.attempt, .job_id = job.job_id, .submit_time = job.submit_time};
}

} // namespace core_detail

struct CtldCore::Impl {
  using Queued = core_detail::Queued;
  using Orphan = core_detail::Orphan;

  CoreOptions opts;
  SlurmPort &port;
  SupervisorClient client;
  mutable std::recursive_mutex mu; // guards jobs, cfg, retry_wait, calls
  std::map<std::uint32_t, JobSwitchState> jobs;
  std::set<std::uint32_t> retry_wait;
  /// Host-fault back-offs (ScheduleRetry with a delay; issue 20): a
  /// RetryTick for (job, generation), or a new run of an orphan teardown
  /// (attempt != 0), once due.  Guarded by qmu: the worker waits for the
  /// earliest.
  struct Timer {
    std::uint32_t job_id;
    std::uint64_t generation;
    std::int64_t orphan = 0;
    bool journal = false; ///< retry the journal, then run the teardowns waiting for it
  };
  std::multimap<std::chrono::steady_clock::time_point, Timer> timers;
  /// When the first of a job's consecutive host faults happened (by job id;
  /// host_fault_age), under mu.
  std::map<std::uint32_t, std::chrono::steady_clock::time_point> host_fault_since;
  /// The rate limit of host-fault lines: one per kHostFaultLinePeriod, the
  /// others counted and named in the next one (under mu).
  std::chrono::steady_clock::time_point host_fault_line_at{};
  std::uint64_t host_fault_lines_held = 0;
  /// The fabric breaker (issue 20; switch.lua(5), Fabric outages), under mu.
  struct Breaker {
    bool open = false;
    std::atomic<bool> gate{false}; ///< `open`, read by admit() without mu
    std::chrono::steady_clock::time_point since{}, probe_at{}; ///< opened; admit()'s last probe
    std::string why;                                           ///< why it opened
    /// Failed teardowns (when, JobId) within switch_breaker_window.
    std::deque<std::pair<std::chrono::steady_clock::time_point, std::uint32_t>> failures;
  } breaker;
  /// A teardown that waits for the journal (issue 24,
  /// switch_journal_failure=wait): its "teardown started" record could not
  /// be written, so job_complete is not called until a fresh snapshot
  /// holds it; a crash or a takeover meanwhile leaves it to the next
  /// controller, which runs it once.  Under mu.
  struct JournalWait {
    std::uint32_t job_id = 0;
    /// The job's state when the call was due (its generation: the result
    /// the state machine waits for; a late teardown runs whatever it is now).
    JobSwitchState state;
    EventKind result_kind = EventKind::TeardownResult; ///< or LateTeardownResult
    std::optional<MsgpackBytes> jobinfo;
    std::int64_t orphan = 0; ///< an orphan teardown's attempt (run_orphan), else 0
    std::chrono::steady_clock::time_point since{};
  };
  std::vector<JournalWait> journal_waiting;
  /// A hook call whose journal record is written but not yet fdatasync'ed
  /// (issue 22, group commit): the syncer thread syncs the journal outside
  /// Slurm's locks and then submits it, in order; the record still comes
  /// before the call.  Under mu.
  struct PendingCall {
    std::uint64_t seq = 0; ///< Journal::write()'s: durable once durable_seq() reaches it
    JobSwitchState state;  ///< as execute() had it
    Action action;         ///< RunJobStart, RunJobComplete or RunLateJobComplete
    std::chrono::steady_clock::time_point decided; ///< when execute() queued it
  };
  std::deque<PendingCall> pending_calls;
  /// A step's actions held back until its journal records are durable
  /// (issue 22): written under Slurm's locks, synced by the syncer outside
  /// them (one fdatasync for all written meanwhile), carried out in order in
  /// the worker's next hold: the record comes before the effect, no hold
  /// waits for the disk.
  struct PendingEffects {
    std::uint64_t seq = 0;       ///< Journal::write()'s, as PendingCall's
    JobSwitchState state;        ///< the step's next state, as execute() takes it
    std::vector<Action> actions; ///< the step's actions, all of them
    bool durable = true;         ///< false: the records could not be synced (the journal failed)
  };
  /// Written, waiting for the syncer's fdatasync (under mu).
  std::deque<PendingEffects> pending_effects;
  /// Durable (or failed): the worker's to carry out (under qmu).
  std::deque<PendingEffects> ready_effects;
  /// Taken from ready_effects (under qmu) and not yet carried out (mu):
  /// counted by decisions_pending(), never 0 while one is between them.
  std::atomic<std::size_t> effects_running{0};
  std::mutex smu; ///< guards sync_wanted, sync_stop
  std::condition_variable scv;
  bool sync_wanted = false;
  bool sync_stop = false;
  std::thread syncer;
  /// A journal sync that does not return (issue 40 item 5; switch_lua.conf(5),
  /// STATESAVELOCATION): when the syncer's fdatasync began (steady clock;
  /// epoch 0 while none runs) and whether its stall was reported, under
  /// stall_mu (the syncer sets and clears, the worker's check_sync_stall()
  /// reports; neither holds mu for it).
  std::mutex stall_mu;
  std::chrono::steady_clock::time_point sync_began{};
  bool sync_stall_reported = false;
  bool journal_timer_armed = false; ///< a Timer{.journal = true} is pending
  std::map<CallId, std::pair<std::uint32_t, Hook>> calls;
  /// The supervisor's results files of this control period (issue 40;
  /// supervisor/results_log.hpp): the segment new calls record their
  /// results in (a new one at each take_control(), never reused in the
  /// process), since when, and per segment the
  /// calls submitted in it whose outcome has not reached the worker's queue
  /// yet.  A segment older than the current one, with no such call and no
  /// queued outcome of it, once the journal is all durable, holds nothing
  /// the journal does not: its file is removed (results_unlink, by the
  /// syncer, outside every lock).  Under mu.
  std::uint64_t results_seg = 1;
  std::chrono::steady_clock::time_point results_seg_since{};
  std::map<std::uint64_t, std::size_t> results_calls;
  std::vector<std::string> results_unlink;
  CtldConfig cfg;
  /// Set by stop_children() (switch_p_save before a restart or reconfigure),
  /// or by lock_port() once port.stopping(): outcomes are dropped, not
  /// applied, so the saved state still says what was outstanding and the
  /// next slurmctld re-runs it.
  bool frozen = false;
  std::unique_ptr<Journal> journal;
  /// The control fence (issue 40): the journal's lock and this control
  /// period's epoch, held while in control.
  std::unique_ptr<ControlFence> fence;
  bool in_control = false; ///< take_control() .. release_control()
  /// WAITING (issue 40): Slurm made this slurmctld the controller, but
  /// take_control() failed; why (the error line), "" otherwise.  New
  /// setups wait in `parked`; the caller retries (CtldCore::retry_control:
  /// the plugin's restore thread, every kControlRetry).
  std::string waiting;
  bool waiting_keep_jobs = false;  ///< take_control()'s argument, for the retry
  std::uint64_t waiting_epoch = 0; ///< the epoch on disk at the failure
  /// Setups asked for while WAITING (job_start returned true: the job
  /// waits CONFIGURING), started in order once control is taken; a job
  /// that ends meanwhile is only dropped.  By job id, under mu.
  std::map<std::uint32_t, std::pair<JobArgs, bool>> parked;
  /// Stale (issue 40): another slurmctld took control since; set by
  /// fence_ok(), cleared by take_control().
  bool stale = false;
  /// The next periodic fence check by the worker (kFenceCheck).
  std::chrono::steady_clock::time_point fence_check_at{};
  /// reconcile_journal() ran since take_control() (the plugin's path; a
  /// core that takes control at construction counts as reconciled).
  bool reconciled = true;
  std::int64_t last_attempt = 0; // without a journal
  /// Every attempt id seen outside the journal's records (attempt_floor()):
  /// the journal file's and its set-aside copies' modification times, the
  /// attempts of Slurm's saved job states (adopt()); next_attempt() is
  /// always above it, so an id is never reused when the journal was set
  /// aside or unreadable and the wall clock went back (issue 20).
  std::int64_t attempt_floor = 0;
  std::map<std::uint32_t, Recovery> hints; // adopt() -> recover_job()
  std::map<std::int64_t, Orphan> orphans;
  SetupFailureCounts failures;   // switch_max_setup_failures, also in the journal
  CorePools pools;               // switch_pool_NAME (issue 38), also in the journal
  std::uint32_t inline_skip = 0; // settle_setup(): interactive jobs left to skip the wait

  std::mutex qmu;
  std::condition_variable qcv;
  std::deque<Queued> queue;
  bool stopping = false;
  std::thread worker;

  CtldStats stats{std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()};
  /// Shared so that a write is done outside `mu` (publish_status,
  /// release_control): file I/O never holds the core lock (issue 35).
  std::shared_ptr<StatusPublisher> publisher;

  /// The supervisor's size comes from SlurmctldParameters (switch_max_calls,
  /// switch_max_queue), fixed for the supervisor's life.
  static ClientOptions sized(ClientOptions c, const CtldConfig &cfg);

  Impl(CoreOptions o, SlurmPort &p);
  ~Impl();
  void on_script_log(CallId id, LogLevel l, std::string_view text);
  void enqueue(Queued q);
  void run_worker();

  /// Applies queued events in order, at most `most` of them; slurmctld's
  /// locks held.  `defer_effects` (the worker): each step's actions wait
  /// in pending_effects for the syncer when its records are only written
  /// (apply()); else (drain_events()) they are carried out here after an
  /// fdatasync under the locks.  Returns how many it applied.
  std::size_t apply_queued(std::size_t most = SIZE_MAX, bool defer_effects = false);
  /// The worker: carries out the ready effects (ready_effects), at most
  /// `most`, in order; slurmctld's locks held.  A job that moved on
  /// meanwhile (its setup's failure decided, then the job ended or ran
  /// again before the requeue or cancel could be asked) gets no requeue
  /// or cancel: Slurm has ended that run already.  Returns how many.
  std::size_t run_ready_effects(std::size_t most = SIZE_MAX);
  /// release_control() (no Slurm lock held by the caller): every pending
  /// or ready effect synced (fdatasync under mu) and carried out under
  /// Slurm's locks, then frozen before they are let go: what this
  /// controller decided is done before it gives up control, nothing after.
  void flush_effects();
  /// settle_setup(): whether `q` is the SetupResult of run `generation`.
  static bool is_setup_result(const Queued &q, std::uint32_t job_id, std::uint64_t generation);
  /// settle_setup(): waits up to `wait` for that result (a copy; it stays
  /// queued); nullopt when it did not come, and later calls then skip
  /// their wait (inline_skip).
  std::optional<Queued> await_setup_result(std::uint32_t job_id, std::uint64_t generation,
                                           std::chrono::milliseconds wait);
  /// settle_setup(): applies `found` here when it leads to Running or
  /// Declined with no action but ending the launch delay and logging (else
  /// false, left queued); true only when the syncer made its records durable
  /// within `wait` (issue 40 item 5) and this controller is in control.
  bool apply_setup_inline(const Queued &found, std::chrono::milliseconds wait);
  /// Its wait for write `seq` of `job_id`, then the effects (no lock held).
  bool await_inline_effects(std::uint32_t job_id, std::uint64_t seq, std::chrono::milliseconds w);
  void fire_retries();
  /// port.lock(), then frozen = true (logged once) if port.stopping().
  void lock_port();
  bool effects_parked = false; ///< (qmu) frozen: ready_effects wait for a tick
  /// Arms a Timer `delay` from now and wakes the worker.
  void arm_timer(std::chrono::milliseconds delay, Timer t);
  /// Fires the due timers; slurmctld's locks held.
  void fire_timers(const std::vector<Timer> &due);
  /// Counts a failed teardown of `job_id`; true when the failed teardowns
  /// of different jobs within switch_breaker_window reach
  /// switch_breaker_failures (0: never).
  bool breaker_counts(std::uint32_t job_id);
  /// Opens the breaker: one error line naming `why`, its state in the stats.
  void open_breaker(const std::string &why);
  /// Closes it (JobId `job_id`'s `hook` succeeded): one error line, every
  /// kept teardown runs again now, Slurm schedules the jobs it kept PENDING.
  void close_breaker(std::uint32_t job_id, std::string_view hook);
  /// apply()'s part of the breaker: opens it when this step is the
  /// switch_breaker_failures-th failed teardown of different jobs within
  /// switch_breaker_window (then steps `s` again with fabric_down, into
  /// `r`) or when the hook returned slurm.FABRIC_DOWN.  Returns whether
  /// this outcome closes it (a successful job_start or job_complete while
  /// it is open): apply() closes it at its end, after the step's
  /// actions are carried out or queued for the journal's fdatasync.
  bool breaker_step(std::uint32_t job_id, const Event &e, JobSwitchState &s, StepResult &r);
  /// A host-fault line (R_*_HOST_FAULT), rate-limited: true when it is
  /// logged now, with `line` extended by the count of the held ones.
  bool host_fault_line(std::string &line);

  std::int64_t next_attempt();
  /// The lowest attempt_floor the journal file at `path` allows: the
  /// newest modification time, in microseconds since the epoch, of `path`
  /// and of its set-aside copies (`path`.corrupt-*): every attempt id
  /// written there was taken from the wall clock before that time.  0 when
  /// there is none.
  static std::int64_t attempt_floor_of(const std::string &path);

  /// Whether the records are durable (Journal::append); true without a
  /// journal.  With `seq`: written only (Journal::write), `*seq` their
  /// sequence number when they still need the syncer's fdatasync (else 0);
  /// true unless the disk failed.
  bool journal_append(const std::vector<JournalRecord> &recs, std::uint64_t *seq = nullptr);

  /// What journal_step() did: `durable` false when the journal could not
  /// write the records; `seq` non-zero when they are written and wait for
  /// the syncer's fdatasync (the step's calls go to pending_calls).
  struct JournalStep {
    bool durable = true;
    std::uint64_t seq = 0;
    bool synced_here = false; ///< records synced here: apply() checks the fence again
  };
  /// The journal records of one transition, durable before its actions
  /// run: the durable record comes before the effect.  `defer`: the
  /// records are only written here and synced by the syncer outside
  /// Slurm's locks, the step's actions waiting for it (its hook calls in
  /// pending_calls when they are its only effects, deferrable(); else, for
  /// the worker's outcomes, all its actions in pending_effects).
  JournalStep journal_step(const JobSwitchState &old, const Event &e, const StepResult &r,
                           bool defer);
  /// Whether a step's calls alone may wait for the syncer: hook calls (at
  /// least one), logs and node holds only (the logs and holds are carried
  /// out at once).  A step with any other effect on Slurm (launch,
  /// requeue, cancel, release, drain) waits for a synced record under the
  /// locks, or, the worker's, in pending_effects.
  static bool deferrable(const std::vector<Action> &actions);
  /// The syncer thread (issue 22): waits for pending calls, fdatasyncs the
  /// journal without any lock (a group commit), then dispatch_pending().
  void run_syncer();
  void wake_syncer();
  /// execute() of a call whose record `seq` is written, not synced: into
  /// pending_calls, the syncer woken (mu held).
  void defer_call(const JobSwitchState &s, const Action &a, std::uint64_t seq);
  /// Whether the record of Journal::write() sequence `seq` is settled: true
  /// once durable (or no journal), false once its sync failed; nullopt
  /// while it waits for the next sync (mu held).
  std::optional<bool> record_durable(std::uint64_t seq) const;
  /// The pending effects whose records are durable (or whose sync failed)
  /// to ready_effects, in order; the worker woken (mu held).
  void ready_pending_effects();
  /// Submits the pending calls whose records are durable, in order; once
  /// the journal failed, the rest as switch_journal_failure says.  Dropped
  /// when frozen or out of control (mu held).
  void dispatch_pending();
  /// Drops the pending calls (stop_children, take_control): never started,
  /// their jobs are recovered like those of killed calls (mu held).
  void drop_pending(std::string_view why);

  /// CtldCore::take_control (mu held).
  Expected<void> take_control(bool keep_jobs);
  /// take_control()'s fence and journal (mu held): the lock (or a fenced
  /// takeover, logged), the epoch, the journal read and written afresh.
  /// Errors: ControlFence::take's.
  Expected<void> take_journal();
  /// take_control()'s failure (mu held): WAITING, its line (the first of a
  /// streak only), its counter and status; the worker retries.
  void enter_waiting(bool keep_jobs, const std::string &why);
  /// Whether this controller still holds control (issue 40): the fence's
  /// check (two stat(2) calls); true without a journal.  A stale one
  /// becomes so here, once (become_stale()).  mu held.
  bool fence_ok();
  /// Another slurmctld took control (mu held): one error line, no launch,
  /// every buffered outcome, pending call and effect dropped, the journal
  /// closed unwritten, the supervisor told to stop, no status file.
  void become_stale(const FenceStale &why);
  /// The syncer's fdatasync of `t` (issue 40), or its I/O `io` (errno):
  /// marked running for check_sync_stall(); once it returns after a
  /// reported stall, one line saying how long it took.
  int timed_sync(Journal::SyncTicket &t);
  int timed_io(const std::function<int()> &io);
  /// The syncer: a journal past its size compacted, its I/O lock-free
  /// (Journal::CompactionTicket), its rename under mu if fence_ok().
  void compact_outside();
  /// From the worker every kFenceCheck: a journal sync running for
  /// opts.journal_stall_after or longer is reported once (a line, the
  /// stats).  Takes stall_mu only: never waits for the disk nor for mu.
  void check_sync_stall();
  /// The worker's periodic fence check (kFenceCheck), in control only:
  /// `lk` (qmu) is given up meanwhile (mu comes first).  Returns when the
  /// next one is due.
  std::chrono::steady_clock::time_point fence_tick(std::unique_lock<std::mutex> &lk) {
    lk.unlock();
    // First, and without mu: a journal append that blocks on the same
    // storage holds mu, and the stall must still be reported.
    check_sync_stall();
    {
      std::lock_guard g(mu);
      if (in_control && fence_ok())
        rotate_results();
    }
    lk.lock();
    return std::chrono::steady_clock::now() + core_detail::kFenceCheck;
  }
  /// take_control(): what the previous time in control left in memory and
  /// no longer holds (killed calls' outcomes, back-offs, the breaker,
  /// orphans, restart hints) dropped (mu held).
  void drop_volatile_state();
  /// adopt() of one state against the journal's table (mu held).
  void adopt_locked(JobSwitchState s);
  /// Why a setup may not start now ("" when it may): the journal cannot
  /// write its record (issue 24: no setup without its record).
  std::string journal_refusal() const;

  /// Starts (again) the teardown of an orphaned attempt.
  void run_orphan(std::int64_t attempt);
  /// Whether an orphan of job id `job_id` is not torn down yet; before
  /// reconcile_journal() (a start Slurm schedules before the restore
  /// thread ran), also a launched attempt of it in the journal that may
  /// become one.
  bool has_orphan_of(std::uint32_t job_id) const;
  /// Periodic check: the waiting orphans whose nodes no longer may run
  /// them (or that waited kOrphanNodeWaitMax) are torn down now.
  void check_waiting_orphans();
  /// OrphanGone for every job in SetupWaitOrphan without an orphan left.
  void wake_orphan_waiters();
  /// Before this slurmctld gives up control (mu held; issue 24): a journal
  /// that failed is written again as a fresh snapshot if the disk lets it,
  /// so that records refused meanwhile (a teardown that ended) are on disk
  /// for the controller that takes over; else one error line says that it
  /// may run those teardowns again (switch.lua contract: safe to repeat).
  void flush_journal_for_handover();
  /// Whether a teardown whose record `durable` says is not on disk waits
  /// for the journal (switch_journal_failure=wait and the journal failing):
  /// then `w` is kept in journal_waiting, one info line names the job, and
  /// the journal is retried every kJournalRetry (mu held).
  bool wait_for_journal(bool durable, JournalWait w);
  /// execute() of RunJobComplete / RunLateJobComplete: job_complete now,
  /// or once the journal holds its record (wait_for_journal()).
  void submit_teardown(const JobSwitchState &s, const Action &a, bool durable,
                       std::chrono::milliseconds waited = {});
  /// Once the journal is trusted again: runs every teardown that waited
  /// for it (one line with their number); else nothing (mu held).
  void run_journal_waits();
  /// While the journal is failing: a journal_tick() kJournalRetry from now
  /// (one pending at a time; mu held).
  void arm_journal_timer();
  /// The journal timer: tries the fresh snapshot (Journal::retry()), then
  /// run_journal_waits(), or arms itself again (mu held).
  void journal_tick();
  /// What the journal's failure line says the product does meanwhile.
  std::string journal_while_failing() const;
  /// Issue 20: the JobId of a job other than `job_id` whose teardown holds
  /// one of `job`'s nodes (nodes_held, in TeardownRunning, TeardownRetryWait
  /// or SetupUndoingEnded), 0 if none.  Compares job.node_names; O(jobs x
  /// nodes).
  std::uint32_t held_teardown_of(std::uint32_t job_id, const JobArgs &job) const;

  /// CtldCore::job_complete(): the nodes of `s`'s job that failed or were
  /// removed, by `end`, into s.job (failed_nodes, failed_node_names), with
  /// one info line when there are any (issue 20, per-node attribution).
  void note_failed_nodes(JobSwitchState &s, const JobEnd &end);

  /// The result of an orphan teardown (R_ORPHAN_OK / R_ORPHAN_FAIL;
  /// orphan_result(), recovery_fsm.hpp).
  void apply_orphan(std::int64_t attempt, const Outcome &out);

  /// apply() out of control: its error line.
  void not_applied(std::uint32_t job_id, const Event &e);
  /// One event for one job; locks held.  `defer_effects`: see
  /// apply_queued() (the worker's outcomes).
  void apply(std::uint32_t job_id, const Event &e, bool defer_effects = false);
  /// apply()'s additions to a step's result: a new attempt id for each
  /// job_start it runs, the script hash of a setup's jobinfo (the
  /// stepinfo carries it), and the script named in job_complete's outcome
  /// line (switch.lua(5), PROVENANCE).  `old`: the job's state before it.
  void annotate(const Event &e, const JobSwitchState &old, StepResult &r);
  /// "job_start" for a setup's events, else "job_complete" (log lines).
  static std::string_view event_hook(const Event &e) {
    return e.kind == EventKind::SetupResult ? "job_start" : "job_complete";
  }

  /// "script /etc/slurm/switch.lua content fnv1a64:..." (switch.lua(5),
  /// PROVENANCE); without a hash when no version of the script had passed.
  std::string script_ref(const std::string &hash) const;

  /// Hands the call to the supervisor client.  `waited`: how long it
  /// already waited for its journal record's fdatasync (a pending call),
  /// counted in its "queued N ms" (the started and outcome lines, the
  /// stats), so that they say the whole wait between Slurm's call and the
  /// hook's.
  void submit(const JobSwitchState &s, Hook h, std::optional<MsgpackBytes> jobinfo,
              EventKind result_kind, std::chrono::milliseconds waited = {});
  /// A submitted call's outcome (the client's thread, no lock held): the
  /// call forgotten, its outcome counted and logged, `q` to the worker.
  void call_ended(CallId cid, Queued q, Hook h);
  /// The control fence's fields of a request (issue 40): job.epoch, the
  /// epoch file, and, for job_start and job_complete, the results file of
  /// the current segment, counted in results_calls.  Returns that segment
  /// (0: none, no fence).  mu held.
  std::uint64_t fence_request(CallRequest &req);
  /// A call of segment `seg` has had its outcome queued (mu held).
  void results_call_done(std::uint64_t seg);
  /// From the worker's fence tick (mu held): starts a new segment every
  /// opts.results_segment and moves the files of the segments that hold
  /// nothing the journal lacks to results_unlink (the syncer removes them).
  void rotate_results();
  /// take_control(), after the journal is read (mu held): the results the
  /// supervisors recorded (supervisor/results_log.hpp; any epoch) that the
  /// journal lacks are added to it (ctld/adopt_results.hpp), one line each;
  /// once durable, the files are removed.
  void adopt_supervisor_results();
  /// execute() of RunJobStart: job_start now; with `refuse` non-empty (its
  /// journal record could not be made durable, issue 24) the call fails at
  /// once as SpawnFailed with that message, and R_START_FAIL's line says
  /// "JobId=N job_start could not be started: journal ...".
  void rebuild_pools(bool taking); // issue 38: cfg.pools, the journal (core_calls.cpp)
  void serve_pool_release();       // issue 38: pool release, reuse delays (core_pool_release.cpp)
  Journal::SyncTicket release_pools(const PoolReleaseRequest &req, PoolReleaseAnswer &answer);
  void forget_orphan(std::int64_t attempt, const JobArgs &job, PoolsFate fate); // ... and here
  void start_setup(const JobSwitchState &s, const std::string &refuse,
                   std::chrono::milliseconds waited = {});
  /// How long job `job_id`'s runners have failed to start (issue 20; 0
  /// unless `e` is a SpawnFailed one or follows one): its host-fault
  /// back-off.  Forgets the job's first failure at a new request or at an
  /// outcome that is not SpawnFailed.
  std::chrono::milliseconds host_fault_age(std::uint32_t job_id, const Event &e);

  /// The outcome line of a call (switch_lua.conf(5), FOLLOWING A JOB IN THE LOGS), info or
  /// error as the contract says, then the traceback of an error at the same level.
  void log_outcome(std::uint32_t job_id, Hook h, const Outcome &o);

  /// Carries out the actions.  `refuse_start` non-empty: a RunJobStart is
  /// not run but fails at once with that message (its journal record could
  /// not be written).  `pending_seq` non-zero: the hook calls wait in
  /// pending_calls for the syncer (their records are not synced yet).
  void execute(const JobSwitchState &s, const std::vector<Action> &actions,
               const std::string &refuse_start = {}, std::uint64_t pending_seq = 0);
};

} // namespace switchlua
