// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/server.hpp
//
// The switch-lua-supervisor process: reads requests from the client
// (slurmctld) on one socket, runs each in a supervised runner (see call.hpp)
// with the last known good version of the script (script_guard.hpp: a changed
// script is validated in a runner of its own before any call uses it), with
// at most `max_concurrent` at once, streams log frames back (bounded:
// kMaxClientLogBacklog), sends one started frame when a call's process gets
// its request and one outcome frame per request.
//
// Lanes.  A request that cannot start at once waits in the lane the client
// chose (RequestFrame::lane); each lane is FIFO and holds at most `max_queue`
// requests (beyond: an immediate SpawnFailed outcome saying the lane is
// full).  A free slot goes to the teardown lane first, then interactive, then
// batch, and batch setups never take the last reserved_slots() slots: a
// teardown or an interactive setup waits at most for one running call to end,
// never behind a backlog of batch setups.
//
// The fork server.  With `fork_server` (the default) runners are forked by
// one process that loaded the runner once (fork_server.hpp), not exec'd;
// when it fails, a runner is exec'd instead (spawn_runner) and the call goes
// on: it is the host's fault, never the call's.
//
// Runners ahead of demand.  Up to `prestart` runners are kept started and
// idle, each waiting for one request; a call takes one (fresh process, fresh
// Lua state, the validated script bytes sent with the request) and a new one
// is started once a call's outcome has gone out (not between a dispatch and
// its result, where its start would compete with the call).  When the client
// socket reaches EOF (slurmctld died or shut down) or SIGTERM arrives (the
// parent-death signal), it kills every call's process group and every other
// child, reaps them, and run() returns.
//
//   asio::io_context io;
//   Server server(io, {.client_fd = 3, .runner = {...}, .max_concurrent = 512});
//   return server.run();
//
// The fence.  A request carries the control epoch the slurmctld submitted
// it in and the epoch file (RequestFrame::epoch).  While that slurmctld is
// stopped (SIGSTOP, a VM paused) this process runs on; once another
// slurmctld has taken control the file holds a greater epoch, and a queued
// call is then not started (a SpawnFailed outcome says why) instead of
// running beside the new controller's own call for the same job.  A call
// already started cannot be recalled: job.epoch lets a fabric manager refuse
// it (switch.lua(5), HIGH AVAILABILITY).
//
// The results file.  A job_start or job_complete that returned is appended
// to the file its request names (RequestFrame::results_file) and
// fdatasync'ed by a thread of its own (ResultsWriter, group commit) before
// its outcome frame is sent: a slurmctld killed while it was stopped, whose
// calls ended meanwhile, loses no result; the controller that takes over
// adds them to its journal instead of running the calls again
// (supervisor/results_log.hpp).  A record that cannot be written is named
// in an error line of the call, and the outcome is sent all the same.
//
// The process must be a child subreaper (PR_SET_CHILD_SUBREAPER) so that a
// call's orphans, and processes that left a call's group with setsid(), are
// reparented to it; main() sets it.
#pragma once

#include "common/epoch_file.hpp"
#include "supervisor/call.hpp"
#include "supervisor/fork_server.hpp"
#include "supervisor/proc_scan.hpp"
#include "supervisor/results_log.hpp"
#include "supervisor/script_guard.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_set>

namespace switchlua {

class FrameChannel;

/// Most bytes of log frames queued for the client (slurmctld) at once.  A
/// log line that would go beyond is dropped and counted; when its call ends,
/// one line says how many were dropped.  Outcome frames are never dropped.
inline constexpr std::size_t kMaxClientLogBacklog = 4 * 1024 * 1024;

/// Settings of the supervisor, from its command line.
struct ServerConfig {
  int client_fd = -1;                 ///< connected socket to the client (owned)
  RunnerConfig runner;                ///< how to start runners
  std::uint32_t max_concurrent = 512; ///< calls at once (>= 1; switch_max_calls)
  std::uint32_t max_queue = 10000;    ///< waiting requests per lane (>= 1; switch_max_queue)
  std::uint32_t prestart = 2;         ///< idle runners kept started (0: spawn per call)
  bool fork_server = true;            ///< runners forked by the fork server (false: exec'd)
  /// The copy of the last good script (script_guard.hpp); "": none kept.
  std::string good_copy;
};

class Server {
public:
  Server(boost::asio::io_context &io, ServerConfig config);
  /// Serves until the client goes away or SIGTERM; returns the exit status.
  int run();

private:
  void start_read_client();
  void on_client_frame(Frame &f);
  void on_client_closed();
  void start_wait_sigchld();
  void on_sigchld();
  /// The zombies a waitid(P_ALL) peek cannot reach while a call leader is
  /// kept a zombie for its kill grace: orphans, escapees, idle runners.
  void reap_hidden_zombies();
  void start_wait_sigterm();
  void start_next_calls();
  /// True when `req` was submitted in a control epoch older than the one
  /// its epoch file holds now (RequestFrame::epoch; issue 40): it is not
  /// started, and gets a SpawnFailed outcome saying so (with one Error log
  /// line per new epoch).  One stat(2) per call (EpochWatch).
  bool refuse_if_fenced(const RequestFrame &req);
  /// Starts `req`; its outcome carries `script_hash`, the content of the
  /// bytes it runs (empty: the runner reads the file itself).
  void dispatch(RequestFrame req, std::chrono::steady_clock::time_point queued_at,
                std::string script_hash);
  std::optional<RunnerProcess> take_idle_runner();
  /// A new runner: forked by the fork server, or exec'd when that fails.
  Expected<RunnerProcess> new_runner(CallId tag);
  /// Tops the idle runners up to `prestart`, from the loop (asio::post),
  /// once a call's outcome has been sent: never on a call's critical path.
  void post_refill();
  void refill_idle_runners();
  /// The record of `req`'s result for its results file (issue 40), its
  /// outcome filled in when it ends; nullopt when none is kept (no results
  /// file, another hook, a job table that does not decode).
  static std::optional<ResultRecord> result_record_of(const RequestFrame &req);
  /// Appends `record` (with `o`) to `path` through results_, then sends `o`
  /// from the loop; a record that could not be written is named in an
  /// error line of the call first.
  void record_then_send(CallId cid, Outcome o, ResultRecord record, const std::string &path);
  /// A call's outcome: to the client (with the note of its dropped lines).
  void on_call_outcome(CallId id, Outcome o);
  /// A call is over: its slot is free, the next calls and the refill start.
  void on_call_finished(CallId id);
  /// Call::Callbacks::alone: every child of the supervisor is the unreaped
  /// leader of a call or an idle runner, so no orphan or escapee of any call
  /// is left (with a childless runner: nothing of that call is).
  bool only_runners_left() const;
  /// The supervisor's children that are neither the unreaped leader of a
  /// call nor an idle runner (orphans, escapees, dead or alive), with their
  /// process-table line.  One read of the children list and one stat read
  /// per such child: O(children) cheap lookups, not a stat of every runner,
  /// so that a burst of N calls does not cost N stat reads per call.
  std::vector<ProcEntry> children_but_runners() const;
  /// The unreaped call leaders, the idle runners and the fork servers.
  std::unordered_set<pid_t> runner_pids() const;
  void start_validation(ScriptGuard::Candidate c, const RequestFrame &trigger);
  void on_validated(const ScriptGuard::Candidate &c, CallId trigger, const Outcome &o);
  SweepResult sweep(const Call &ending);
  void terminate_everything();

  boost::asio::io_context &io_;
  ServerConfig config_;
  ForkServer fork_server_{config_.runner};
  std::shared_ptr<FrameChannel> client_;
  boost::asio::signal_set sigchld_;
  boost::asio::signal_set sigterm_;
  struct Waiting {
    RequestFrame req;
    std::chrono::steady_clock::time_point queued_at;
  };
  std::array<std::deque<Waiting>, 3> lanes_; ///< indexed by Lane
  std::deque<RunnerProcess> idle_;           ///< runners started ahead of demand
  bool refill_posted_ = false;
  std::map<CallId, std::shared_ptr<Call>> active_;
  std::map<CallId, std::uint64_t> dropped_logs_; ///< per call, over kMaxClientLogBacklog
  bool stopping_ = false;
  ScriptGuard guard_;       ///< last known good script (script_guard.hpp)
  std::string copy_note_;   ///< why the copy was not used; logged with the first call
  bool validating_ = false; ///< a changed script is being checked: dispatch waits
  CallId next_validation_id_ = CallId{1} << 63; ///< ids of checks, apart from the client's
  EpochWatch epoch_watch_;         ///< the epoch files of the requests (refuse_if_fenced)
  std::uint64_t fenced_epoch_ = 0; ///< the epoch last reported as fencing calls out
  /// The results files' writer (issue 40): declared last, so it is joined
  /// first, before anything its completions touch is gone.
  ResultsWriter results_;
};

} // namespace switchlua
