// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/call.hpp
//
// One supervised hook call inside switch-lua-supervisor: spawn a runner in
// its own process group, send it the request, stream its log frames, enforce
// the deadline, reap it, clean up after it, classify.
//
//   start() ──spawn──> runner ──frames──> on_frame ──log──> Callbacks::on_log
//      │                                      └─result──> Observation
//      └──deadline timer──> fire_deadline: killpg(pgid, SIGTERM) (leader unreaped)
//                              ──kill_grace_s later──> kill_now: killpg(pgid, SIGKILL)
//   server's SIGCHLD peek ──> on_leader_exited: within the grace, wait (leader
//                             unreaped) until no live member is left in the
//                             group or the grace ends; then killpg, reap (waitpid)
//   reaped && channel EOF ──> drain (Callbacks::sweep until the group and the
//                             escapees are gone, at most 2 s)
//                         ──> classify() ──> Callbacks::on_done (once)
//                         ──> Callbacks::on_finished (once)
//   result frame, runner childless, Callbacks::alone ──> classify() ──> on_done
//                             early (the reap and the drain follow, unreported)
//
// TERM, grace, KILL: at the deadline the whole group gets SIGTERM, so a hook's
// helper (a shell that traps TERM, a fabric-manager client) can let go of
// what it holds; after RequestFrame::kill_grace_s seconds (0: at once) the
// group gets SIGKILL.  The outcome is TimedOut either way.  During the grace
// the leader (the runner, whose SIGTERM is fatal) is left unreaped even when
// it died, so the pgid cannot be recycled while members may still run; the
// group is polled (/proc, every kGracePoll) until it has no live member.
//
// Rules kept here: the group is signalled only while its leader is unreaped
// (a reaped pgid may be recycled); leftovers in the group are killed before
// the leader is reaped; the outcome is delivered once the leader is reaped
// and the channel reached EOF (or 2 s after the reap, for a channel a
// leftover still holds), or, when the call's result shows that nothing it
// started is left (Callbacks::alone), as soon as that result arrives: the
// runner's own exit then costs nobody's setup anything (issue 8: 0.2 to 1 ms
// on the testbed).  Single-threaded: everything runs on the io_context.
#pragma once

#include "supervisor/outcome.hpp"
#include "supervisor/protocol.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace switchlua {

class FrameChannel;

/// The runner's parent-death signal (PR_SET_PDEATHSIG): on it the runner
/// SIGKILLs its own group (the supervisor is gone).  Not SIGTERM, which is
/// the deadline's signal and leaves the group its kill grace.
inline constexpr int kRunnerParentDeathSignal = SIGUSR1;

/// How runners are started (from the supervisor's command line).
struct RunnerConfig {
  std::string runner;                 ///< path of switch-lua-runner
  std::vector<std::string> child_env; ///< appended to base_child_env() and the call tag
};

/// A started runner and the supervisor's end of its channel (owned by whoever
/// holds it: close `fd` and reap `pid` when not handing it to a Call).
struct RunnerProcess {
  pid_t pid = -1; ///< leader of its own process group (pgid == pid), unreaped
  int fd = -1;    ///< connected socket; the runner waits on it for one request
};

/// Starts one switch-lua-runner in a new process group, with the clean
/// environment, `config.child_env` and, when `tag` is not 0, the call tag
/// (kCallTagVar=<tag>); a runner started without a tag (ahead of demand) sets
/// the tag itself from the request it gets.  Errors: socketpair or spawn failed.
Expected<RunnerProcess> spawn_runner(boost::asio::io_context &io, const RunnerConfig &config,
                                     CallId tag);

/// What a sweep of the process table found for a finishing call.
struct SweepResult {
  std::vector<pid_t> killed; ///< escapees killed by this sweep
  bool remaining = false;    ///< members of the group or escapees still exist
};

class Call : public std::enable_shared_from_this<Call> {
public:
  struct Callbacks {
    std::function<void(CallId, LogLevel, std::string_view)> on_log;
    /// The outcome, exactly once: when the call is over, or earlier (see
    /// `alone`).
    std::function<void(CallId, Outcome)> on_done;
    std::function<SweepResult(const Call &)> sweep; ///< kill and reap leftovers
    /// Optional.  Asked when a result frame that says the runner is childless
    /// arrives before the deadline: true when no other process can be left
    /// of the call either (none of the supervisor's children is unknown to
    /// it).  Then on_done runs at once, with that result, and the leader's
    /// exit, the group kill and the sweep follow as usual, unreported.
    std::function<bool(const Call &)> alone;
    /// Optional: the call is over (leader reaped, group and escapees gone or
    /// the drain limit passed), after on_done; exactly once.
    std::function<void(CallId)> on_finished;
    /// Optional: starts the call's runner when start() is given none
    /// (default: spawn_runner with the call's id as its tag).
    std::function<Expected<RunnerProcess>(CallId)> spawn;
  };

  Call(boost::asio::io_context &io, const RunnerConfig &config, RequestFrame request,
       Callbacks callbacks);

  /// Spawns the runner, or takes `ready` (a runner started ahead of demand,
  /// used for this one call only), sends it the request and arms the deadline
  /// (switch_timeout counts from here).  A spawn failure is delivered
  /// (SpawnFailed) from a posted handler, never from inside start().
  void start(std::optional<RunnerProcess> ready = std::nullopt);
  /// The server's SIGCHLD handler saw (WNOWAIT) that the leader exited.
  /// Kills the group's leftovers, then reaps the leader; within the kill
  /// grace, first waits for the group to empty (or the grace to end).
  void on_leader_exited();
  /// on_leader_exited() ran and the leader is not reaped yet (grace wait):
  /// the SIGCHLD handler must not report it again.
  bool leader_exit_noted() const { return leader_exited_ && !reaped_; }
  /// SIGKILLs the group if its leader is unreaped (supervisor shutdown).
  void kill_group();

  CallId id() const { return request_.id; }
  /// The runner's pid (== its pgid) while spawned and unreaped, else -1.
  pid_t unreaped_leader() const { return reaped_ ? -1 : pid_; }
  /// The call's process group id (the runner's pid), or -1 before spawning.
  pid_t pgid() const { return pid_; }
  /// Escapees killed so far for this call.
  const std::vector<pid_t> &escapees() const { return escapees_; }
  /// The outcome went out already (early: Callbacks::alone), so nothing
  /// found from now on can be reported with it.
  bool outcome_reported() const { return reported_outcome_; }

private:
  void on_frame(Frame f);
  void on_channel_closed();
  void check_deadline();
  void fire_deadline();
  void kill_now();
  void poll_grace();
  void reap_leader();
  void maybe_finish();
  void drain_step();
  void report();
  void deliver();

  boost::asio::io_context &io_;
  const RunnerConfig &config_;
  RequestFrame request_;
  Callbacks cb_;
  std::shared_ptr<FrameChannel> channel_;
  boost::asio::steady_timer deadline_timer_;
  boost::asio::steady_timer drain_timer_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::steady_clock::time_point drain_until_;
  std::chrono::milliseconds elapsed_{0};
  Observation obs_;
  pid_t pid_ = -1;
  bool reported_ = false;  ///< a result frame arrived
  bool term_sent_ = false; ///< the deadline passed: the group got SIGTERM (or SIGKILL)
  bool killed_ = false;    ///< we sent SIGKILL to the group
  bool leader_exited_ = false;
  bool reaped_ = false;
  bool eof_ = false;
  bool draining_ = false;
  bool done_ = false;             ///< deliver() ran: the call is over
  bool reported_outcome_ = false; ///< on_done ran
  std::vector<pid_t> escapees_;
};

} // namespace switchlua
