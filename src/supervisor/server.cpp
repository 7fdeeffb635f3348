// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/server.cpp
//
// Handlers of switch-lua-supervisor (one thread, one io_context):
//
//   start_read_client ──frame──> on_client_frame ──> queue_ ──> start_next_calls
//          │                                                        │ (< max_concurrent)
//          └──EOF/error──> on_client_closed ──> terminate_everything │
//                                                                   v
//   start_wait_sigterm ──SIGTERM──> terminate_everything        Call::start
//                                                     log ──> client_ (LogFrame)
//   start_wait_sigchld ──SIGCHLD──> on_sigchld           done ──> on_call_done
//       waitid(P_PID, leader, WNOWAIT) peek per call:        ──> client_ (OutcomeFrame)
//         exited ──> Call::on_leader_exited                  ──> start_next_calls
//       other zombies ──> reaped here (orphans, killed escapees)
//   Call drain ──> sweep: kill + reap escapees, report leftovers
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

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace switchlua {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

Server::Server(asio::io_context &io, ServerConfig config)
    : io_(io), config_(std::move(config)), sigchld_(io, SIGCHLD), sigterm_(io, SIGTERM) {
  if (config_.max_concurrent == 0)
    config_.max_concurrent = 1;
}

int Server::run() {
  start_wait_sigchld();
  start_wait_sigterm();
  start_read_client();
  io_.run();
  return 0;
}

void Server::start_read_client() {
  client_ = FrameChannel::adopt(io_, config_.client_fd);
  client_->start([this](Frame f) { on_client_frame(std::move(f)); },
                 [this](std::optional<Error>) { on_client_closed(); });
}

void Server::on_client_frame(Frame f) {
  if (const auto *ping = std::get_if<PingFrame>(&f)) { // the client's watchdog
    if (!stopping_)
      client_->send(encode_frame(PongFrame{ping->seq}));
    return;
  }
  auto *req = std::get_if<RequestFrame>(&f);
  if (req == nullptr || stopping_)
    return; // only requests come from the client
  queue_.push_back(std::move(*req));
  start_next_calls();
}

void Server::on_client_closed() {
  terminate_everything();
}

void Server::start_next_calls() {
  while (!stopping_ && !validating_ && active_.size() < config_.max_concurrent && !queue_.empty()) {
    if (auto changed = guard_.check(queue_.front().script))
      return start_validation(std::move(*changed), queue_.front());
    RequestFrame req = std::move(queue_.front());
    queue_.pop_front();
    if (const ScriptGuard::Version *good = guard_.good(req.script))
      req.source = good->bytes; // never a version that did not pass
    const CallId id = req.id;
    if (active_.count(id) != 0) {
      Outcome o;
      o.kind = OutcomeKind::SpawnFailed;
      o.message = "duplicate call id from the client";
      client_->send(encode_frame(OutcomeFrame{id, std::move(o)}));
      continue;
    }
    Call::Callbacks cb;
    cb.on_log = [this](CallId cid, LogLevel level, std::string_view text) {
      if (client_->queued_bytes() + text.size() > kMaxClientLogBacklog) {
        ++dropped_logs_[cid]; // slurmctld reads too slowly: lines, never outcomes
        return;
      }
      client_->send(encode_frame(LogFrame{cid, level, std::string(text)}));
    };
    cb.on_done = [this](CallId cid, Outcome o) { on_call_done(cid, std::move(o)); };
    cb.sweep = [this](const Call &c) { return sweep(c); };
    auto call = std::make_shared<Call>(io_, config_.runner, std::move(req), std::move(cb));
    active_[id] = call;
    call->start();
  }
}

void Server::on_call_done(CallId id, Outcome o) {
  active_.erase(id);
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
  start_next_calls();
}

void Server::start_validation(ScriptGuard::Candidate c, const RequestFrame &trigger) {
  if (c.hash.rfind("missing:", 0) == 0) // nothing to run: refused as it is
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
  auto call = std::make_shared<Call>(io_, config_.runner, std::move(v), std::move(cb));
  active_[call->id()] = call;
  call->start();
}

void Server::on_validated(const ScriptGuard::Candidate &c, CallId trigger, const Outcome &o) {
  validating_ = false;
  if (stopping_)
    return;
  std::string error;
  if (c.bytes.empty() && c.hash.rfind("missing:", 0) == 0)
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
    siginfo_t si{};
    if (::waitid(P_PID, static_cast<id_t>(leader), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == leader)
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
  // Anything else: orphans, killed escapees.
  for (;;) {
    siginfo_t si{};
    if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0 ||
        is_leader(si.si_pid))
      break;
    while (::waitpid(si.si_pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  for (const ProcEntry &e : scan_children())
    if (e.state == 'Z' && !is_leader(e.pid))
      ::waitpid(e.pid, nullptr, WNOHANG);
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
  for (const ProcEntry &e : scan_children()) {
    if (other_live([&](const Call &c) { return c.unreaped_leader() == e.pid; }))
      continue; // another call's runner: reaped by its Call
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
  queue_.clear();
  io_.stop();
}

} // namespace switchlua
