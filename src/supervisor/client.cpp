// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/client.cpp
//
// SupervisorClient: one I/O thread running an io_context.  submit() (any
// thread) encodes the request and posts it; everything else happens on the
// I/O thread:
//
//   send_call ──ensure_supervisor (spawn once)──> channel_ ──RequestFrame──> supervisor
//   channel_ ──StartedFrame──> started callback (the call's process got it)
//            ──LogFrame──> on_log callback
//            ──OutcomeFrame──> complete ──> done callback
//            ──EOF / error──> on_supervisor_gone: reap it, every call in
//                             flight completes Abandoned; the next
//                             send_call starts a new supervisor
//   watchdog (every kWatchdogInterval) ──PingFrame──> supervisor ──PongFrame──>
//            no frame for kWatchdogBound with a ping outstanding: SIGKILL it
//            (then as EOF above: the calls in flight complete Abandoned)
//   shutdown ──> do_shutdown: close channel_ (the supervisor sees EOF, kills
//                its children, exits), wait <= 5 s, then SIGKILL
#include "supervisor/client.hpp"

#include "supervisor/channel.hpp"
#include "supervisor/proc_scan.hpp"
#include "supervisor/protocol.hpp"
#include "supervisor/spawn.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace switchlua {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

/// Waits up to `grace` for `pid` to exit, then SIGKILLs and reaps it.
/// Returns the wait status.  `pid` is our unreaped child.
int reap_within(pid_t pid, std::chrono::milliseconds grace) {
  int status = 0;
  const auto until = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < until) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR))
      return status;
    std::this_thread::sleep_for(2ms);
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string status_text(int status) {
  if (WIFSIGNALED(status)) {
    const char *abbrev = sigabbrev_np(WTERMSIG(status));
    return fmt::format("killed by signal {} (SIG{})", WTERMSIG(status), abbrev ? abbrev : "?");
  }
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

Outcome abandoned(std::string message) {
  Outcome o;
  o.kind = OutcomeKind::Abandoned;
  o.message = std::move(message);
  return o;
}

} // namespace

struct SupervisorClient::Impl {
  ClientOptions opts;
  CallLog on_log;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;
  std::atomic<pid_t> pid{-1};

  std::mutex mu; // guards the three below
  bool stopped = false;
  CallId next_id = 1;
  std::uint32_t outstanding = 0;

  // I/O thread only.
  asio::steady_timer watchdog{io};
  std::uint64_t ping_seq = 0;
  std::chrono::steady_clock::time_point last_heard{};
  bool ping_outstanding = false;
  std::shared_ptr<FrameChannel> channel;
  struct Inflight {
    CallDone done;
    CallStarted started;
  };
  std::map<CallId, Inflight> inflight;
  bool shutting_down = false;
  std::string hung_message; ///< set when the watchdog killed the supervisor

  void send_call(CallId id, std::string bytes, Inflight cbs);
  Expected<void> ensure_supervisor();
  void on_frame(Frame f);
  void arm_watchdog();
  void on_watchdog();
  void on_supervisor_gone(std::optional<Error> why);
  void complete(CallId id, const Outcome &o);
  void abandon_all(const std::string &message);
  void do_shutdown();
};

void SupervisorClient::Impl::send_call(CallId id, std::string bytes, Inflight cbs) {
  inflight.emplace(id, std::move(cbs));
  if (shutting_down)
    return complete(id, abandoned("the supervisor client is shutting down"));
  if (auto ok = ensure_supervisor(); !ok) {
    Outcome o;
    o.kind = OutcomeKind::SpawnFailed;
    o.message = fmt::format("cannot start switch-lua-supervisor: {}", ok.error().message);
    return complete(id, o);
  }
  channel->send(std::move(bytes));
}

Expected<void> SupervisorClient::Impl::ensure_supervisor() {
  if (channel && !channel->closed())
    return {};
  auto sv = make_socketpair();
  if (!sv)
    return fail(sv.error().message);
  SpawnSpec spec;
  spec.path = opts.supervisor;
  spec.args = {fmt::format("--channel-fd={}", kChildChannelFd),
               "--runner=" + opts.runner,
               fmt::format("--max-concurrent={}", opts.max_concurrent),
               fmt::format("--max-queue={}", opts.max_queue),
               fmt::format("--prestart={}", opts.prestart),
               fmt::format("--fork-server={}", opts.fork_server ? 1 : 0)};
  if (!opts.good_copy.empty())
    spec.args.push_back("--good-copy=" + opts.good_copy);
  for (const std::string &e : opts.child_env)
    spec.args.push_back("--child-env=" + e);
  spec.channel_fd = (*sv)[1];
  spec.env = base_child_env();
  // Sent when this (the I/O) thread dies: the supervisor then cleans up.
  spec.death_signal = SIGTERM;
  auto child = spawn_child(io, spec);
  ::close((*sv)[1]);
  if (!child) {
    ::close((*sv)[0]);
    return fail(child.error().message);
  }
  pid = *child;
  last_heard = std::chrono::steady_clock::now();
  ping_outstanding = false;
  channel = FrameChannel::adopt(io, (*sv)[0]);
  channel->start([this](Frame f) { on_frame(std::move(f)); },
                 [this](std::optional<Error> why) { on_supervisor_gone(std::move(why)); });
  arm_watchdog();
  return {};
}

void SupervisorClient::Impl::arm_watchdog() {
  watchdog.expires_after(kWatchdogInterval);
  watchdog.async_wait([this](const boost::system::error_code &ec) {
    if (!ec)
      on_watchdog();
  });
}

bool watchdog_kills(char state, std::chrono::steady_clock::duration silent,
                    std::chrono::seconds runnable_bound) {
  return silent >= (state == 'R' ? std::chrono::steady_clock::duration(runnable_bound)
                                 : std::chrono::steady_clock::duration(kWatchdogBound));
}

void SupervisorClient::Impl::on_watchdog() {
  if (shutting_down || !channel || channel->closed())
    return; // the next supervisor arms its own
  const auto now = std::chrono::steady_clock::now();
  if (ping_outstanding && now - last_heard >= kWatchdogBound) {
    // Its answer may be waiting in the socket while this thread was the one
    // starved: the read handler runs next and the silence ends.
    if (channel->unread_bytes() > 0)
      return arm_watchdog();
    const pid_t p = pid.load();
    // Runnable: waiting for a CPU on a starved host, or spinning.  Only the
    // longer bound tells the two apart (kWatchdogRunnableBound).
    const std::optional<ProcEntry> entry = p > 0 ? read_proc_entry(p) : std::nullopt;
    const bool runnable = entry && entry->state == 'R';
    const auto runnable_bound = opts.watchdog_runnable_bound;
    if (!watchdog_kills(runnable ? 'R' : '?', now - last_heard, runnable_bound))
      return arm_watchdog();
    // Stopped, stuck in D state, not reading its channel, or live-locked:
    // kill it.  Its channel then reaches EOF and on_supervisor_gone() fails
    // the calls in flight and lets the next call start a new one.
    hung_message = fmt::format(
        "switch-lua-supervisor (pid {}) stopped answering for {} ms ({}watchdog bound {} s), "
        "killed",
        p, std::chrono::duration_cast<std::chrono::milliseconds>(now - last_heard).count(),
        runnable ? "runnable, " : "", (runnable ? runnable_bound : kWatchdogBound).count());
    if (p > 0)
      ::kill(p, SIGKILL);
    return;
  }
  if (!ping_outstanding) {
    ping_outstanding = true;
    channel->send(encode_frame(PingFrame{++ping_seq}));
  }
  arm_watchdog();
}

void SupervisorClient::Impl::on_frame(Frame f) {
  last_heard = std::chrono::steady_clock::now(); // any frame shows it is alive
  ping_outstanding = false;
  if (auto *log = std::get_if<LogFrame>(&f)) {
    if (on_log && inflight.count(log->id) != 0)
      on_log(log->id, log->level, log->text);
  } else if (auto *out = std::get_if<OutcomeFrame>(&f)) {
    complete(out->id, out->outcome);
  } else if (auto *st = std::get_if<StartedFrame>(&f)) {
    auto it = inflight.find(st->id);
    if (it != inflight.end() && it->second.started)
      it->second.started(st->id, std::chrono::milliseconds(st->queued_ms));
  }
}

void SupervisorClient::Impl::on_supervisor_gone(std::optional<Error> why) {
  const pid_t dead = pid.exchange(-1);
  channel.reset();
  watchdog.cancel();
  const int status = dead > 0 ? reap_within(dead, 1000ms) : 0;
  std::string msg = fmt::format("switch-lua-supervisor (pid {}) died ({}) with the call in flight",
                                dead, status_text(status));
  if (!hung_message.empty())
    msg = std::exchange(hung_message, std::string()) + " with the call in flight";
  if (why)
    msg += fmt::format(" after: {}", why->message);
  abandon_all(msg);
}

void SupervisorClient::Impl::complete(CallId id, const Outcome &o) {
  auto it = inflight.find(id);
  if (it == inflight.end())
    return;
  CallDone done = std::move(it->second.done);
  inflight.erase(it);
  {
    std::lock_guard lock(mu);
    --outstanding;
  }
  if (done)
    done(id, o);
}

void SupervisorClient::Impl::abandon_all(const std::string &message) {
  while (!inflight.empty())
    complete(inflight.begin()->first, abandoned(message));
}

void SupervisorClient::Impl::do_shutdown() {
  shutting_down = true;
  watchdog.cancel();
  const pid_t p = pid.exchange(-1);
  if (channel)
    channel->close(); // EOF: the supervisor kills its children and exits
  channel.reset();
  if (p > 0) {
    reap_within(p, 5000ms);
    abandon_all(fmt::format("switch-lua-supervisor (pid {}) stopped: the client shut down", p));
  }
  abandon_all("the supervisor client shut down");
}

SupervisorClient::SupervisorClient(ClientOptions opts, CallLog on_log) : impl_(new Impl) {
  impl_->opts = std::move(opts);
  impl_->on_log = std::move(on_log);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

SupervisorClient::~SupervisorClient() {
  shutdown();
}

Expected<CallId> SupervisorClient::submit(CallRequest req, CallDone done, CallStarted started) {
  if (hook_info(req.hook).host != HookHost::Supervised)
    return fail(fmt::format("submit: hook {} does not run in the supervisor", hook_name(req.hook)));
  if (req.timeout < std::chrono::seconds(1))
    return fail(fmt::format("submit: timeout {} s, must be at least 1 s", req.timeout.count()));
  RequestFrame frame{0,           std::move(req.script),
                     req.hook,    req.job.to_msgpack(),
                     req.jobinfo, static_cast<std::uint32_t>(req.timeout.count())};
  frame.lane = lane_of(req.hook, req.job.batch);
  frame.kill_grace_s =
      static_cast<std::uint32_t>(std::max<std::int64_t>(0, req.kill_grace.count()));
  frame.epoch = req.epoch;
  frame.epoch_file = std::move(req.epoch_file);
  frame.results_file = std::move(req.results_file);
  std::lock_guard lock(impl_->mu);
  if (impl_->stopped)
    return fail("submit: the supervisor client is stopped");
  if (impl_->outstanding >= impl_->opts.max_queued)
    return fail(
        fmt::format("submit: {} calls outstanding, the limit (max_queued)", impl_->outstanding));
  frame.id = impl_->next_id++;
  ++impl_->outstanding;
  // Posted under the lock: shutdown() posts after every accepted call.
  asio::post(impl_->io, [impl = impl_.get(), id = frame.id, bytes = encode_frame(frame),
                         cbs = Impl::Inflight{std::move(done), std::move(started)}]() mutable {
    impl->send_call(id, std::move(bytes), std::move(cbs));
  });
  return frame.id;
}

void SupervisorClient::shutdown() {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopped)
      return;
    impl_->stopped = true;
  }
  std::promise<void> finished;
  asio::post(impl_->io, [&] {
    impl_->do_shutdown();
    finished.set_value();
  });
  finished.get_future().wait();
  impl_->work.reset();
  impl_->io.stop();
  if (impl_->thread.joinable())
    impl_->thread.join();
}

pid_t SupervisorClient::supervisor_pid() const {
  return impl_->pid.load();
}

} // namespace switchlua
