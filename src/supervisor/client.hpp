// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/client.hpp
//
// The client side of the supervisor: what slurmctld (through the plugin) and
// `switch-lua simulate` use to run job_start / job_complete in supervised
// child processes.
//
//   SupervisorClient c({.supervisor = "/usr/libexec/switch-lua/switch-lua-supervisor"}, on_log);
//   c.submit({.script = "/etc/slurm/switch.lua", .hook = Hook::JobStart, .job = job,
//             .timeout = std::chrono::seconds(10)},
//            [](CallId id, const Outcome &o) { ... });   // runs on the client thread
//
// The client starts the supervisor once (fork+exec through Boost.Process v2,
// with a launcher that does not copy the caller's page tables), talks to it
// with msgpack frames on a socketpair, and runs one I/O thread of its own.
// submit() never blocks: it enqueues into a bounded queue and returns.
// If the supervisor dies, every call in flight completes with
// OutcomeKind::Abandoned and the next submit() restarts the supervisor.  If
// the client (slurmctld) dies, the supervisor kills every child process
// group and exits.
#pragma once

#include "common/expected.hpp"
#include "lua/contract.hpp"
#include "lua/runtime.hpp"
#include "supervisor/outcome.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace switchlua {

/// The watchdog: while a supervisor runs, the client sends it a ping every
/// kWatchdogInterval; a supervisor that has sent no frame at all (pong, log,
/// outcome) for kWatchdogBound while a ping is outstanding is SIGKILLed (it
/// may be stopped, stuck in D state or live-locked), its calls in flight
/// complete Abandoned ("... stopped answering ..."), and the next call starts
/// a new one.  So an outcome arrives at most switch_timeout +
/// switch_kill_grace + kWatchdogBound (+ the queue wait) after a call
/// started, whatever happens to the supervisor.
inline constexpr std::chrono::seconds kWatchdogInterval{1};
inline constexpr std::chrono::seconds kWatchdogBound{5};
/// The bound for a supervisor whose main thread is runnable (state R in
/// /proc/PID/stat) while its ping goes unanswered: on a host starved for
/// CPU it waits to be scheduled and is not hung (issue 39: at a load of 145
/// on two cores one went 5.2 s without a pong, and killing it cost its
/// calls and, after switch_retries, drained nodes).  A supervisor that spins
/// without answering is killed at this bound instead; a stopped (T), stuck
/// (D) or not-reading (S) one still at kWatchdogBound.
inline constexpr std::chrono::seconds kWatchdogRunnableBound{60};

/// The watchdog's rule: whether a supervisor that has answered nothing for
/// `silent` with a ping outstanding, its main thread in /proc state `state`
/// ('R', 'S', 'D', 'T', ..., '?' when unreadable), is killed now: at
/// `runnable_bound` (kWatchdogRunnableBound unless a test shortens it) when
/// runnable, else at kWatchdogBound.  The caller first lets the client read
/// what the supervisor already wrote (FrameChannel::unread_bytes()): a
/// controller starved itself hears late, and silence is measured by it.
bool watchdog_kills(char state, std::chrono::steady_clock::duration silent,
                    std::chrono::seconds runnable_bound = kWatchdogRunnableBound);

/// Identifies one call for its lifetime in a client; never reused.
using CallId = std::uint64_t;

/// One call of a slurmctld hook: job_start, job_complete, or one of the two
/// start-up questions (block_job_complete, setup_special_steps).
struct CallRequest {
  std::string script;         ///< path of switch.lua
  Hook hook = Hook::JobStart; ///< JobStart, JobComplete, BlockJobComplete or SetupSpecialSteps
  JobArgs job;                ///< the job table
  std::optional<MsgpackBytes> jobinfo; ///< job_complete's jobinfo; nullopt = nil
  std::chrono::seconds timeout{10};    ///< switch_timeout the call started with (>= 1 s)
  /// switch_kill_grace: SIGTERM to the call's group at the deadline, SIGKILL
  /// this much later (0: SIGKILL at once).
  std::chrono::seconds kill_grace{2};
  /// The control epoch this call is submitted in and its epoch file
  /// (RequestFrame::epoch): the supervisor does not start the call once the
  /// file holds a greater epoch.  0: no fence.
  std::uint64_t epoch = 0;
  std::string epoch_file;
  /// RequestFrame::results_file: the supervisor's results file for this
  /// call ("": none).
  std::string results_file;
};

/// Options of the client.
struct ClientOptions {
  std::string supervisor; ///< path of the switch-lua-supervisor executable
  std::string runner;     ///< path of the switch-lua-runner executable (passed on)
  /// Calls running at once (switch_max_calls); more wait in the supervisor's
  /// lanes (see server.hpp: teardown > interactive > batch, with a reserve
  /// batch setups may not take).
  std::uint32_t max_concurrent = 512;
  /// Waiting calls per lane in the supervisor (switch_max_queue); beyond, a
  /// call completes at once with SpawnFailed, "... queue is full ...".
  std::uint32_t max_queue = 10000;
  /// Runners kept started ahead of demand (each serves one call); 0: none.
  std::uint32_t prestart = 2;
  /// Runners forked by the supervisor's fork server (fork_server.hpp), with
  /// no exec per call; false: each runner is exec'd.
  bool fork_server = true;
  std::uint32_t max_queued = 4096; ///< submitted but not finished; beyond: submit() fails
  /// Environment of every runner besides the fixed clean set
  /// (PATH=/usr/sbin:/usr/bin:/sbin:/bin, LANG=C, SWITCHLUA_CALL_ID=<CallId>);
  /// e.g. {"SLURM_CONF=/etc/slurm/slurm.conf"}.  Nothing else is inherited.
  std::vector<std::string> child_env;
  /// Where every supervisor keeps (and starts from) the last good script
  /// (supervisor/script_guard.hpp), e.g. "<StateSaveLocation>/switch_lua.good";
  /// "": kept in memory only.
  std::string good_copy;
  /// The watchdog's bound for a runnable supervisor (watchdog_kills());
  /// only the process tests change it, to see the rule in seconds.
  std::chrono::seconds watchdog_runnable_bound = kWatchdogRunnableBound;
};

/// Completion callback: runs on the client's I/O thread; must not block long.
using CallDone = std::function<void(CallId, const Outcome &)>;
/// Log callback for the script's lines, as they happen; same thread.
using CallLog = std::function<void(CallId, LogLevel, std::string_view)>;
/// Start callback: the call left its lane and its process got the request,
/// after waiting `queued` in the supervisor; same thread, before any log line
/// of the call.  Not called for a call refused or failed before it started.
using CallStarted = std::function<void(CallId, std::chrono::milliseconds queued)>;

class SupervisorClient {
public:
  SupervisorClient(ClientOptions opts, CallLog on_log);
  ~SupervisorClient(); ///< stops: the supervisor kills its children and exits
  SupervisorClient(const SupervisorClient &) = delete;
  SupervisorClient &operator=(const SupervisorClient &) = delete;

  /// Queues a call; never blocks (the supervisor is started, on the I/O
  /// thread, by the first call that needs it).  Errors: the queue is full
  /// (max_queued), the client is stopped, a hook other than the four
  /// slurmctld hooks, a timeout under 1 s.  `done` is called exactly once
  /// otherwise, on the I/O thread, and `started` (optional) before it when
  /// the call's process starts.  The lane is lane_of(hook, job.batch).
  /// Thread-safe.
  Expected<CallId> submit(CallRequest req, CallDone done, CallStarted started = {});

  /// Kills every call in flight (their `done` gets Abandoned) and stops the
  /// supervisor; used before slurmctld re-execs on reconfigure.  Blocks
  /// until the supervisor has exited (bounded: 5 s, then SIGKILL), and joins
  /// the I/O thread.  Idempotent; later submits fail.  Must not be called
  /// from a callback (it would wait for its own thread).
  void shutdown();

  /// Pid of the current supervisor process, or -1 (for tests).
  pid_t supervisor_pid() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace switchlua
