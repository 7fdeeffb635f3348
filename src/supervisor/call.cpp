// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/call.cpp
#include "supervisor/call.hpp"

#include "supervisor/channel.hpp"
#include "supervisor/proc_scan.hpp"
#include "supervisor/spawn.hpp"

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace switchlua {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {
/// How long after the reap a channel may stay open (a leftover holding it).
constexpr auto kEofGrace = 2s;
/// How long to wait for the group's leftovers and escapees to be gone.
constexpr auto kDrainLimit = 2s;
/// Poll interval while draining (every process is SIGKILLed: short).
constexpr auto kDrainPoll = 5ms;
/// Poll interval of the group while the kill grace runs with a dead leader.
constexpr auto kGracePoll = 20ms;

/// Whether a process of group `pgid` other than a zombie exists.
bool group_has_live_member(pid_t pgid) {
  for (const ProcEntry &e : scan_processes())
    if (e.pgrp == pgid && e.state != 'Z')
      return true;
  return false;
}
} // namespace

Call::Call(asio::io_context &io, const RunnerConfig &config, RequestFrame request,
           Callbacks callbacks)
    : io_(io), config_(config), request_(std::move(request)), cb_(std::move(callbacks)),
      deadline_timer_(io), drain_timer_(io) {}

Expected<RunnerProcess> spawn_runner(asio::io_context &io, const RunnerConfig &config, CallId tag) {
  auto sv = make_socketpair();
  if (!sv)
    return fail(sv.error().message);
  SpawnSpec spec;
  spec.path = config.runner;
  spec.args = {fmt::format("--channel-fd={}", kChildChannelFd)};
  spec.channel_fd = (*sv)[1];
  spec.env = base_child_env();
  if (tag != 0)
    spec.env.push_back(fmt::format("{}={}", kCallTagVar, tag));
  spec.env.insert(spec.env.end(), config.child_env.begin(), config.child_env.end());
  // On the supervisor's death the runner kills its own group.  Not SIGTERM:
  // that one is the deadline's, and must leave the group its grace.
  spec.death_signal = kRunnerParentDeathSignal;
  auto pid = spawn_child(io, spec);
  ::close((*sv)[1]);
  if (!pid) {
    ::close((*sv)[0]);
    return fail(pid.error().message);
  }
  return RunnerProcess{*pid, (*sv)[0]};
}

void Call::start(std::optional<RunnerProcess> ready) {
  started_ = Clock::now();
  deadline_ = started_ + std::chrono::seconds(request_.timeout_s);
  if (!ready) {
    auto r = cb_.spawn ? cb_.spawn(request_.id) : spawn_runner(io_, config_, request_.id);
    if (!r) {
      obs_.spawn_error = r.error().message;
      asio::post(io_, [self = shared_from_this()] { self->deliver(); });
      return;
    }
    ready = *r;
  }
  pid_ = ready->pid;
  obs_.spawned = true;
  channel_ = FrameChannel::adopt(io_, ready->fd);
  channel_->send(encode_frame(request_));
  auto self = shared_from_this();
  channel_->start([self](Frame f) { self->on_frame(std::move(f)); },
                  [self](std::optional<Error>) { self->on_channel_closed(); });
  deadline_timer_.expires_at(deadline_);
  deadline_timer_.async_wait([self](const boost::system::error_code &ec) {
    if (!ec)
      self->fire_deadline();
  });
}

void Call::check_deadline() {
  if (!term_sent_ && Clock::now() >= deadline_)
    fire_deadline();
}

void Call::fire_deadline() {
  if (reaped_ || term_sent_)
    return; // never signal the group of a reaped leader
  term_sent_ = true;
  deadline_timer_.cancel();
  // After a result frame the call has reported; the kill is only cleanup.
  if (reported_ || request_.kill_grace_s == 0) {
    if (!reported_)
      obs_.deadline_fired = true;
    return kill_now();
  }
  obs_.deadline_fired = true;
  ::killpg(pid_, SIGTERM);
  deadline_timer_.expires_after(std::chrono::seconds(request_.kill_grace_s));
  deadline_timer_.async_wait([self = shared_from_this()](const boost::system::error_code &ec) {
    if (!ec)
      self->kill_now();
  });
}

void Call::kill_now() {
  if (reaped_ || killed_)
    return;
  killed_ = true;
  ::killpg(pid_, SIGKILL);
  if (leader_exited_)
    reap_leader();
}

void Call::poll_grace() {
  if (reaped_ || killed_)
    return;
  if (!group_has_live_member(pid_))
    return reap_leader();
  drain_timer_.expires_after(kGracePoll);
  drain_timer_.async_wait([self = shared_from_this()](const boost::system::error_code &ec) {
    if (!ec)
      self->poll_grace();
  });
}

void Call::on_frame(Frame f) {
  // A frame read after the deadline passed is late even if the timer
  // handler has not run yet (the supervisor was not scheduled in time).
  check_deadline();
  if (const auto *log = std::get_if<LogFrame>(&f)) {
    if (cb_.on_log)
      cb_.on_log(id(), log->level, log->text);
    return;
  }
  auto *r = std::get_if<ResultFrame>(&f);
  if (r == nullptr || reported_)
    return; // not a runner frame, or a second result: ignored
  reported_ = true;
  obs_.result_after_deadline = obs_.deadline_fired;
  switch (r->kind) {
  case ResultFrame::Kind::Returned:
    obs_.result = std::move(r->ret);
    break;
  case ResultFrame::Kind::LuaError:
    obs_.lua_error = std::move(r->message);
    break;
  case ResultFrame::Kind::BadReturn:
    obs_.bad_return = std::move(r->message);
    break;
  case ResultFrame::Kind::LoadFailed:
    obs_.load_error = std::move(r->message);
    break;
  }
  if (r->childless && !obs_.deadline_fired && cb_.alone && cb_.alone(*this))
    report(); // the result is final and nothing of the call is left
}

void Call::on_leader_exited() {
  if (leader_exited_ || reaped_)
    return;
  check_deadline();
  leader_exited_ = true;
  if (term_sent_ && !killed_)
    return poll_grace(); // members may still be cleaning up
  reap_leader();
}

void Call::reap_leader() {
  if (reaped_)
    return;
  drain_timer_.cancel();
  // The leader is a zombie we have not reaped: its pgid cannot be recycled
  // yet, so this reaches exactly the call's leftovers.
  ::killpg(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  obs_.wait_status = status;
  reaped_ = true;
  elapsed_ = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
  deadline_timer_.cancel();
  if (!eof_) {
    drain_timer_.expires_after(kEofGrace);
    drain_timer_.async_wait([self = shared_from_this()](const boost::system::error_code &ec) {
      if (ec || self->eof_)
        return;
      self->channel_->close(); // a leftover holds the channel open
      self->on_channel_closed();
    });
  }
  maybe_finish();
}

void Call::on_channel_closed() {
  eof_ = true;
  maybe_finish();
}

void Call::maybe_finish() {
  if (!reaped_ || !eof_ || draining_)
    return;
  draining_ = true;
  drain_timer_.cancel();
  drain_until_ = Clock::now() + kDrainLimit;
  drain_step();
}

void Call::drain_step() {
  SweepResult r = cb_.sweep ? cb_.sweep(*this) : SweepResult{};
  escapees_.insert(escapees_.end(), r.killed.begin(), r.killed.end());
  if (r.remaining && Clock::now() < drain_until_) {
    drain_timer_.expires_after(kDrainPoll);
    drain_timer_.async_wait([self = shared_from_this()](const boost::system::error_code &ec) {
      if (!ec)
        self->drain_step();
    });
    return;
  }
  deliver();
}

void Call::report() {
  if (reported_outcome_)
    return;
  reported_outcome_ = true;
  Outcome o = classify(obs_);
  o.escapees = escapees_;
  o.elapsed = reaped_
                  ? elapsed_
                  : std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
  auto done = std::move(cb_.on_done);
  cb_.on_done = nullptr;
  if (done)
    done(id(), std::move(o));
}

void Call::deliver() {
  if (done_)
    return;
  done_ = true;
  if (channel_)
    channel_->close();
  deadline_timer_.cancel();
  drain_timer_.cancel();
  report();
  auto finished = std::move(cb_.on_finished);
  cb_ = {};
  if (finished)
    finished(id());
}

void Call::kill_group() {
  if (pid_ > 0 && !reaped_)
    ::killpg(pid_, SIGKILL);
}

} // namespace switchlua
