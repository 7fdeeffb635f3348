// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/server.cpp
//
// Handlers of switch-lua-supervisor (one thread, one io_context):
//
//   start_read_client ──frame──> on_client_frame ──> lanes_ ──> start_next_calls
//          │      (lane full: SpawnFailed outcome at once)         │ (< max_concurrent;
//          │                                    teardown > interactive > batch, batch
//          │                                    leaves reserved_slots() free)
//          │                                                 dispatch: StartedFrame,
//          │                                    an idle runner (idle_) or a fresh spawn
//          └──EOF/error──> on_client_closed ──> terminate_everything │
//                                                                   v
//   start_wait_sigterm ──SIGTERM──> terminate_everything        Call::start
//                                                     log ──> client_ (LogFrame)
//   start_wait_sigchld ──SIGCHLD──> on_sigchld     done ──> on_call_outcome
//       waitid(P_PID, leader, WNOWAIT) peek per call:        ──> client_ (OutcomeFrame)
//         exited ──> Call::on_leader_exited      finished ──> on_call_finished
//                                                            ──> start_next_calls, refill
//       other zombies ──> reaped here (orphans, killed escapees)
//   Call drain ──> sweep: kill + reap escapees, report leftovers
//   Call result (childless runner) ──> only_runners_left? ──> done early
//
// Escapees.  A process that left its call's group (setsid) is not reached by
// killpg.  Being a subreaper, the supervisor inherits it once its parent
// dies.  When a call ends, sweep() reads the supervisor's children (cheap:
// /proc/self/task/PID/children, not a scan of every process) and takes those
// that are not call leaders and not in the group of a call still running; each
// one is killed (its whole group when it leads one: it is our unreaped
// child, so its pgid cannot be recycled), reaped, and reported in the
// outcome of the ending call.  A process whose environment still carries the
// tag (SWITCHLUA_CALL_ID) of another call that is still running is left for
// that call.  An untagged one is charged to whichever call ends first.
#include "supervisor/server.hpp"

#include "supervisor/channel.hpp"
#include "supervisor/proc_scan.hpp"

#include "common/content_hash.hpp"

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <unordered_set>
#include <utility>

namespace switchlua {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {
/// Whether our child `pid` has exited, peeked (WNOWAIT): it stays a zombie
/// for whoever reaps it.
bool exited_unreaped(pid_t pid) {
  siginfo_t si{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         si.si_pid == pid;
}
} // namespace

Server::Server(asio::io_context &io, ServerConfig config)
    : io_(io), config_(std::move(config)), sigchld_(io, SIGCHLD), sigterm_(io, SIGTERM) {
  if (config_.max_concurrent == 0)
    config_.max_concurrent = 1;
  if (config_.max_queue == 0)
    config_.max_queue = 1;
  if (!config_.good_copy.empty()) {
    guard_.set_copy(config_.good_copy);
    copy_note_ = guard_.load_copy();
  }
}

int Server::run() {
  start_wait_sigchld();
  start_wait_sigterm();
  start_read_client();
  refill_idle_runners();
  io_.run();
  return 0;
}

void Server::start_read_client() {
  client_ = FrameChannel::adopt(io_, config_.client_fd);
  client_->start([this](Frame f) { on_client_frame(f); },
                 [this](std::optional<Error>) { on_client_closed(); });
}

void Server::on_client_frame(Frame &f) {
  if (const auto *ping = std::get_if<PingFrame>(&f)) { // the client's watchdog
    if (!stopping_)
      client_->send(encode_frame(PongFrame{ping->seq}));
    return;
  }
  auto *req = std::get_if<RequestFrame>(&f);
  if (req == nullptr || stopping_)
    return; // only requests come from the client
  auto &lane = lanes_[static_cast<std::size_t>(req->lane)];
  if (lane.size() >= config_.max_queue) {
    // Refused at once: the client applies it as a failed start of the call
    // (switch.lua contract: a failed setup requeues or cancels, a failed
    // teardown drains).
    Outcome o;
    o.kind = OutcomeKind::SpawnFailed;
    o.message = fmt::format("the supervisor's {} queue is full ({} calls waiting, "
                            "SlurmctldParameters switch_max_queue={})",
                            lane_name(req->lane), lane.size(), config_.max_queue);
    client_->send(encode_frame(OutcomeFrame{req->id, std::move(o)}));
    return;
  }
  lane.push_back({std::move(*req), Clock::now()});
  start_next_calls();
}

void Server::on_client_closed() {
  terminate_everything();
}

void Server::start_next_calls() {
  const std::uint32_t batch_limit = config_.max_concurrent - reserved_slots(config_.max_concurrent);
  while (!stopping_ && !validating_ && active_.size() < config_.max_concurrent) {
    std::deque<Waiting> *from = nullptr;
    for (Lane l : {Lane::Teardown, Lane::Interactive, Lane::Batch}) {
      auto &q = lanes_[static_cast<std::size_t>(l)];
      if (q.empty())
        continue;
      if (l == Lane::Batch && active_.size() >= batch_limit)
        break; // the reserve is for teardowns and interactive setups
      from = &q;
      break;
    }
    if (from == nullptr)
      break;
    if (refuse_if_fenced(from->front().req)) {
      from->pop_front();
      continue;
    }
    if (!copy_note_.empty())
      client_->send(encode_frame(
          LogFrame{from->front().req.id, LogLevel::Error, std::exchange(copy_note_, {})}));
    // A changed script is validated (in a runner of its own) before any call
    // uses it; the calls wait for the verdict.
    if (auto changed = guard_.check(from->front().req.script))
      return start_validation(std::move(*changed), from->front().req);
    Waiting w = std::move(from->front());
    from->pop_front();
    std::string hash;
    if (const ScriptGuard::Version *good = guard_.good(w.req.script)) {
      w.req.source = good->bytes; // never a version that did not pass
      hash = good->hash;
    }
    dispatch(std::move(w.req), w.queued_at, std::move(hash));
  }
}

bool Server::refuse_if_fenced(const RequestFrame &req) {
  if (req.epoch == 0 || req.epoch_file.empty())
    return false;
  // Only a greater epoch fences: a file that is missing or unreadable (0)
  // never stops the calls of the controller in control.
  const std::uint64_t now = epoch_watch_.current(req.epoch_file);
  if (now <= req.epoch)
    return false;
  if (fenced_epoch_ != now) { // one line per takeover, not one per call
    fenced_epoch_ = now;
    client_->send(encode_frame(
        LogFrame{req.id, LogLevel::Error,
                 fmt::format("supervisor: queued calls of epoch {} not started: {} says epoch {}, "
                             "a later period of control began (another slurmctld took control, "
                             "or this one took it again) (switch.lua(5), HIGH AVAILABILITY)",
                             req.epoch, req.epoch_file, now)}));
  }
  Outcome o;
  o.kind = OutcomeKind::SpawnFailed;
  o.message = fmt::format("not started: {} says epoch {}, this call's is {}: a later period of "
                          "control began",
                          req.epoch_file, now, req.epoch);
  client_->send(encode_frame(OutcomeFrame{req.id, std::move(o)}));
  return true;
}

std::optional<ResultRecord> Server::result_record_of(const RequestFrame &req) {
  if (req.results_file.empty() || (req.hook != Hook::JobStart && req.hook != Hook::JobComplete))
    return std::nullopt;
  auto job = JobArgs::from_msgpack(req.job);
  if (!job)
    return std::nullopt;
  return ResultRecord{.hook = req.hook,
                      .attempt = job->attempt,
                      .job_id = job->job_id,
                      .submit_time = job->submit_time,
                      .epoch = req.epoch,
                      .jobinfo_given = req.jobinfo ? content_hash(*req.jobinfo) : "",
                      .ended_unix_ms = 0,
                      .outcome = {}};
}

void Server::record_then_send(CallId cid, Outcome o, ResultRecord record, const std::string &path) {
  record.outcome = o;
  record.ended_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  results_.write(path, frame_result_record(record),
                 [this, cid, o = std::move(o)](const std::string &error) mutable {
                   asio::post(io_, [this, cid, o = std::move(o), error]() mutable {
                     if (!error.empty() && !stopping_)
                       client_->send(encode_frame(
                           LogFrame{cid, LogLevel::Error,
                                    fmt::format("supervisor: result not recorded ({}); should this "
                                                "slurmctld stop before it reaches the journal, the "
                                                "next controller runs the call again",
                                                error)}));
                     on_call_outcome(cid, std::move(o));
                   });
                 });
}

void Server::dispatch(RequestFrame req, Clock::time_point queued_at, std::string script_hash) {
  const CallId id = req.id;
  if (active_.count(id) != 0) {
    Outcome o;
    o.kind = OutcomeKind::SpawnFailed;
    o.message = "duplicate call id from the client";
    client_->send(encode_frame(OutcomeFrame{id, std::move(o)}));
    return;
  }
  const auto queued =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - queued_at);
  Call::Callbacks cb;
  cb.on_log = [this](CallId cid, LogLevel level, std::string_view text) {
    if (client_->queued_bytes() + text.size() > kMaxClientLogBacklog) {
      ++dropped_logs_[cid]; // slurmctld reads too slowly: lines, never outcomes
      return;
    }
    client_->send(encode_frame(LogFrame{cid, level, std::string(text)}));
  };
  // Issue 40: a job_start or job_complete that returned is recorded in the
  // controller's results file, durably, before slurmctld hears of it.
  cb.on_done = [this, queued, script_hash = std::move(script_hash), record = result_record_of(req),
                path = req.results_file](CallId cid, Outcome o) {
    o.queued = queued;
    o.script_hash = script_hash;
    if (!record || o.kind != OutcomeKind::Returned)
      on_call_outcome(cid, std::move(o));
    else
      record_then_send(cid, std::move(o), *record, path);
  };
  cb.sweep = [this](const Call &c) { return sweep(c); };
  cb.alone = [this](const Call &) { return only_runners_left(); };
  cb.on_finished = [this](CallId cid) { on_call_finished(cid); };
  cb.spawn = [this](CallId tag) { return new_runner(tag); };
  auto call = std::make_shared<Call>(io_, config_.runner, std::move(req), std::move(cb));
  active_[id] = call;
  call->start(take_idle_runner());
  // Only for a runner that got the request (a spawn failure is reported by
  // its outcome alone); sent before this thread reads any of its frames, so
  // the client sees "started" before the call's log lines.
  if (call->pgid() > 0)
    client_->send(encode_frame(StartedFrame{id, queued.count()}));
}

std::optional<RunnerProcess> Server::take_idle_runner() {
  while (!idle_.empty()) {
    RunnerProcess r = idle_.front();
    idle_.pop_front();
    siginfo_t si{};
    // Still alive?  (A runner that died idle was not yet seen by on_sigchld.)
    if (::waitid(P_PID, r.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0)
      return r;
    ::close(r.fd);
    while (::waitpid(r.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  return std::nullopt;
}

Expected<RunnerProcess> Server::new_runner(CallId tag) {
  if (config_.fork_server)
    if (auto r = fork_server_.fork_runner(io_, tag))
      return r;
  return spawn_runner(io_, config_.runner, tag);
}

void Server::post_refill() {
  // Not right after a dispatch: a runner's start (vfork, exec, the dynamic
  // loader) then competes for the CPU with the call that just took one, and
  // the supervisor waits in vfork() while that call's result may be ready.
  // After an outcome has gone out, it delays nobody's result.
  if (config_.prestart == 0 || refill_posted_ || idle_.size() >= config_.prestart)
    return;
  refill_posted_ = true;
  asio::post(io_, [this] {
    refill_posted_ = false;
    refill_idle_runners();
  });
}

void Server::refill_idle_runners() {
  // Idle runners count against nothing: they run no script until a call
  // takes one.  Not while stopping, and at most `prestart` of them.
  while (!stopping_ && idle_.size() < config_.prestart) {
    auto r = new_runner(0);
    if (!r)
      return; // the call that needs one spawns it itself and reports why
    idle_.push_back(*r);
  }
}

void Server::on_call_outcome(CallId id, Outcome o) {
  const auto dropped = dropped_logs_.extract(id);
  if (stopping_)
    return;
  if (!dropped.empty())
    client_->send(encode_frame(LogFrame{
        id, LogLevel::Error,
        fmt::format("{} log line{} dropped: slurmctld did not read them fast enough (backlog "
                    "limit {} bytes)",
                    dropped.mapped(), dropped.mapped() == 1 ? "" : "s", kMaxClientLogBacklog)}));
  client_->send(encode_frame(OutcomeFrame{id, std::move(o)}));
}

void Server::on_call_finished(CallId id) {
  active_.erase(id);
  if (stopping_)
    return;
  start_next_calls();
  post_refill();
}

std::unordered_set<pid_t> Server::runner_pids() const {
  std::unordered_set<pid_t> runners;
  for (const auto &[id, c] : active_)
    if (const pid_t leader = c->unreaped_leader(); leader > 0)
      runners.insert(leader);
  for (const RunnerProcess &r : idle_)
    runners.insert(r.pid);
  for (pid_t p : fork_server_.pids())
    runners.insert(p);
  return runners;
}

bool Server::only_runners_left() const {
  const auto pids = child_pids();
  if (!pids)
    return false;
  const auto runners = runner_pids();
  return std::all_of(pids->begin(), pids->end(), [&](pid_t p) { return runners.count(p) != 0; });
}

std::vector<ProcEntry> Server::children_but_runners() const {
  const auto runners = runner_pids();
  std::vector<ProcEntry> out;
  const auto pids = child_pids();
  if (!pids) { // no children list in this kernel: the whole table
    for (const ProcEntry &e : scan_children())
      if (runners.count(e.pid) == 0)
        out.push_back(e);
    return out;
  }
  const pid_t self = ::getpid();
  for (pid_t pid : *pids)
    if (runners.count(pid) == 0)
      if (auto e = read_proc_entry(pid); e && e->ppid == self)
        out.push_back(*e);
  return out;
}

void Server::start_validation(ScriptGuard::Candidate c, const RequestFrame &trigger) {
  if (c.hash.rfind("missing:", 0) == 0 || !c.refusal.empty()) // refused as it is
    return on_validated(c, trigger.id, Outcome{});
  validating_ = true;
  RequestFrame v;
  v.id = next_validation_id_++;
  v.script = c.path;
  v.hook = Hook::BlockJobComplete;
  v.job = JobArgs{}.to_msgpack();
  v.timeout_s = trigger.timeout_s;
  v.kill_grace_s = trigger.kill_grace_s;
  v.source = c.bytes;
  v.validate_only = true;
  const CallId trigger_id = trigger.id;
  Call::Callbacks cb;
  cb.on_log = nullptr; // the chunk's own lines: logged again by every call
  cb.on_done = [this, c = std::move(c), trigger_id](CallId id, Outcome o) {
    active_.erase(id);
    on_validated(c, trigger_id, o);
  };
  cb.sweep = [this](const Call &call) { return sweep(call); };
  cb.spawn = [this](CallId tag) { return new_runner(tag); };
  auto call = std::make_shared<Call>(io_, config_.runner, std::move(v), std::move(cb));
  active_[call->id()] = call;
  call->start();
}

void Server::on_validated(const ScriptGuard::Candidate &c, CallId trigger, const Outcome &o) {
  validating_ = false;
  if (stopping_)
    return;
  std::string error;
  if (!c.refusal.empty())
    error = c.refusal;
  else if (c.bytes.empty() && c.hash.rfind("missing:", 0) == 0)
    error = fmt::format("cannot open {}: {}", c.path, c.hash.substr(8));
  else if (o.kind == OutcomeKind::LoadFailed)
    error = o.message;
  else if (o.kind != OutcomeKind::Returned || !o.ret.flag)
    error = fmt::format("{}: checking it {}", c.path, describe(o));
  const std::string line = guard_.settle(c, error);
  if (!line.empty())
    client_->send(
        encode_frame(LogFrame{trigger, error.empty() ? LogLevel::Info : LogLevel::Error, line}));
  start_next_calls();
}

void Server::start_wait_sigchld() {
  sigchld_.async_wait([this](const boost::system::error_code &ec, int) {
    if (ec || stopping_)
      return;
    on_sigchld();
    start_wait_sigchld();
  });
}

void Server::on_sigchld() {
  // Call leaders: peeked one by one (WNOWAIT), never reaped here.  A leader
  // that died within its kill grace stays a zombie for a while (call.hpp),
  // so a waitid(P_ALL) peek could return it again and again.
  std::vector<std::shared_ptr<Call>> exited;
  for (const auto &[id, c] : active_) {
    const pid_t leader = c->unreaped_leader();
    if (leader <= 0 || c->leader_exit_noted())
      continue;
    if (exited_unreaped(leader))
      exited.push_back(c);
  }
  for (const auto &c : exited)
    c->on_leader_exited(); // reaps it, or waits out the grace
  auto is_leader = [&](pid_t pid) {
    for (const auto &[id, c] : active_)
      if (c->unreaped_leader() == pid)
        return true;
    return false;
  };
  // Anything else: orphans, killed escapees.  The peek returns one zombie
  // at a time; a leader left a zombie for its kill grace hides the ones
  // behind it, which only then are looked for in the children list.
  bool hidden = false;
  for (;;) {
    siginfo_t si{};
    if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
      break;
    if (is_leader(si.si_pid)) {
      hidden = true;
      break;
    }
    // An idle runner died (killed from outside): drop it, start another later.
    for (auto it = idle_.begin(); it != idle_.end(); ++it)
      if (it->pid == si.si_pid) {
        ::close(it->fd);
        idle_.erase(it);
        break;
      }
    while (::waitpid(si.si_pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (fork_server_.owns(si.si_pid))
      fork_server_.reaped(si.si_pid); // the next runner starts another
  }
  if (hidden)
    reap_hidden_zombies();
}

void Server::reap_hidden_zombies() {
  for (const ProcEntry &e : children_but_runners())
    if (e.state == 'Z')
      ::waitpid(e.pid, nullptr, WNOHANG);
  for (auto it = idle_.begin(); it != idle_.end();) { // an idle runner killed from outside
    if (exited_unreaped(it->pid)) {
      ::close(it->fd);
      ::waitpid(it->pid, nullptr, 0);
      it = idle_.erase(it);
    } else {
      ++it;
    }
  }
  for (pid_t p : fork_server_.pids())
    if (exited_unreaped(p)) {
      ::waitpid(p, nullptr, 0);
      fork_server_.reaped(p);
    }
}

void Server::start_wait_sigterm() {
  sigterm_.async_wait([this](const boost::system::error_code &ec, int) {
    if (!ec)
      terminate_everything();
  });
}

SweepResult Server::sweep(const Call &ending) {
  SweepResult r;
  auto other_live = [&](auto pred) {
    for (const auto &[id, c] : active_)
      if (c.get() != &ending && pred(*c))
        return true;
    return false;
  };
  const auto &before = ending.escapees();
  // Not the other calls' runners (each reaped by its Call; the ending one's
  // is reaped already) nor the runners started ahead of demand.
  for (const ProcEntry &e : children_but_runners()) {
    if (e.state == 'Z') {
      ::waitpid(e.pid, nullptr, WNOHANG); // dead leftovers and escapees
      continue;
    }
    if (e.pgrp == ending.pgid() || std::find(before.begin(), before.end(), e.pid) != before.end()) {
      r.remaining = true; // SIGKILLed already, not yet dead
      continue;
    }
    if (other_live([&](const Call &c) { return c.pgid() == e.pgrp; }))
      continue; // in the group of a call still running
    const auto tag = read_call_tag(e.pid);
    if (tag && *tag != ending.id() && active_.count(*tag) != 0)
      continue; // escaped from a call still running
    if (ending.outcome_reported() && tag != ending.id())
      continue; // not this call's (it had nothing left): for a call that can report it
    if (e.pgrp == e.pid)
      ::killpg(e.pid, SIGKILL); // our unreaped child leads it: not recycled
    else
      ::kill(e.pid, SIGKILL);
    r.killed.push_back(e.pid);
    r.remaining = true;
  }
  // Members of the group that are not our children yet (their parent, also
  // in the group, is dying).  Signal 0 delivers nothing, so probing a pgid
  // whose leader we reaped is harmless: were the number recycled, the drain
  // would only wait out its limit.
  if (::kill(-ending.pgid(), 0) == 0)
    r.remaining = true;
  return r;
}

void Server::terminate_everything() {
  if (stopping_)
    return;
  stopping_ = true;
  if (client_)
    client_->close();
  sigchld_.cancel();
  sigterm_.cancel();
  for (auto &[id, c] : active_)
    c->kill_group();
  // Kill whatever else is ours (escapees, orphans), reap everything; bounded.
  const auto until = Clock::now() + 2s;
  for (;;) {
    for (const ProcEntry &e : scan_children())
      if (e.state != 'Z')
        e.pgrp == e.pid ? ::killpg(e.pid, SIGKILL) : ::kill(e.pid, SIGKILL);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    errno = 0;
    if ((::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD) || Clock::now() >= until)
      break;
    std::this_thread::sleep_for(5ms);
  }
  for (auto &l : lanes_)
    l.clear();
  for (const RunnerProcess &r : idle_)
    ::close(r.fd); // killed and reaped above with the other children
  idle_.clear();
  io_.stop();
}

} // namespace switchlua
