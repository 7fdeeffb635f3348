// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/runner_main.cpp
//
// switch-lua-runner: one hook call, in a process of its own, started by
// switch-lua-supervisor as the leader of a new process group.
//
//   switch-lua-runner --channel-fd=3
//   switch-lua-runner --channel-fd=3 --fork-server
//
// With --fork-server it is the supervisor's fork server (fork_server.hpp):
// it does the warm-up once and then forks one runner per request on fd 3;
// each child does what follows, without a warm-up of its own.
//
// Reads one request frame from the channel (it may have been started ahead of
// demand and wait there, after a warm-up run of a built-in script: see
// warm_up()), sets the call tag from it, loads the script into a fresh
// Lua state, sends each script log line at once as a log frame (a hook that
// then hangs has still logged), calls the hook, flushes the files the script
// left open, sends one result frame (saying whether it has any child left)
// and exits 0 without closing the Lua state (its finalizers must not delay
// or change the reported result).  Exit status 2: no usable request.
#include "lua/broken_pipe.hpp"
#include "lua/log_limits.hpp"
#include "lua/run_command.hpp"
#include "lua/runtime.hpp"
#include "supervisor/call.hpp"
#include "supervisor/fork_server.hpp"
#include "supervisor/proc_scan.hpp"
#include "supervisor/protocol.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace switchlua;

namespace {

/// Writes all of `bytes`; false when the supervisor is gone.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool read_exact(int fd, char *buf, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, buf, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    buf += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

/// The request frame; nullopt on EOF (the supervisor died) or a bad frame.
std::optional<RequestFrame> read_request(int fd) {
  unsigned char len[4];
  if (!read_exact(fd, reinterpret_cast<char *>(len), 4))
    return std::nullopt;
  const std::size_t n = (std::size_t{len[0]} << 24) | (std::size_t{len[1]} << 16) |
                        (std::size_t{len[2]} << 8) | std::size_t{len[3]};
  if (n > kMaxFrameBytes)
    return std::nullopt;
  std::string body(n, '\0');
  if (!read_exact(fd, body.data(), n))
    return std::nullopt;
  auto f = decode_body(body);
  if (!f || !std::holds_alternative<RequestFrame>(*f))
    return std::nullopt;
  return std::get<RequestFrame>(std::move(*f));
}

ResultFrame failed(ResultFrame::Kind kind, std::string message) {
  ResultFrame r;
  r.kind = kind;
  r.message = std::move(message);
  return r;
}

/// The Lua memory bound: kLuaMemoryEnv (MiB, from
/// SlurmctldParameters=switch_lua_memory) or the default.
std::size_t memory_limit() {
  const char *v = std::getenv(kLuaMemoryEnv);
  char *end = nullptr;
  const unsigned long long mib = v ? std::strtoull(v, &end, 10) : 0;
  if (mib == 0 || end == v || *end != '\0' || mib > (1ULL << 20))
    return kDefaultCtldLuaMemoryLimit;
  return static_cast<std::size_t>(mib) << 20;
}

/// A runner is the first process the kernel's OOM killer should pick, before
/// slurmctld (a killed job_complete is retried: R_COMPLETE_KILLED).
void become_oom_victim() {
  const int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  [[maybe_unused]] ssize_t n = ::write(fd, "1000", 4);
  ::close(fd);
}

/// Runs the request's hook.  The Lua state of a hook call is moved into
/// `keep`, which the caller never destroys (main() ends in std::_Exit): its
/// finalizers (__gc, __close on the state's close) therefore never run, so
/// they can neither delay the result frame nor change it.
ResultFrame run_hook(const RequestFrame &req, LogSink sink, std::optional<Script> &keep) {
  auto load = [&]() {
    return req.source ? Script::load_source(req.script, *req.source, std::move(sink),
                                            Script::Host::OwnProcess, memory_limit())
                      : Script::load(req.script, std::move(sink), Script::Host::OwnProcess,
                                     memory_limit());
  };
  if (req.validate_only) { // the supervisor's check of a changed script
    auto script = load();
    if (!script)
      return failed(ResultFrame::Kind::LoadFailed, script.error().message);
    keep.emplace(std::move(*script));
    std::string errors;
    for (const std::string &e : keep->hook_type_errors())
      errors += (errors.empty() ? "" : "; ") + e;
    if (!errors.empty())
      return failed(ResultFrame::Kind::LoadFailed, errors);
    ResultFrame ok;
    ok.ret.hook = req.hook;
    ok.ret.flag = true;
    return ok;
  }
  if (hook_info(req.hook).host != HookHost::Supervised)
    return failed(ResultFrame::Kind::LoadFailed,
                  "request: hook " + std::string(hook_name(req.hook)) + " is not a slurmctld hook");
  auto job = JobArgs::from_msgpack(req.job);
  if (!job)
    return failed(ResultFrame::Kind::LoadFailed, "request: job: " + job.error().message);
  auto script = load();
  if (!script)
    return failed(ResultFrame::Kind::LoadFailed, script.error().message);
  const MsgpackBytes *info = req.jobinfo ? &*req.jobinfo : nullptr;
  keep.emplace(std::move(*script));
  auto r = keep->call(req.hook, &*job, nullptr, info);
  if (!r) {
    const bool lua = r.error().kind == CallError::Kind::LuaError;
    return failed(lua ? ResultFrame::Kind::LuaError : ResultFrame::Kind::BadReturn,
                  r.error().message);
  }
  ResultFrame ok;
  ok.ret = std::move(*r);
  return ok;
}

/// The wire bytes of `r`, always within kMaxFrameBytes: the message is cut
/// to kMaxMessageBytes, and a jobinfo too large for a frame is replaced by a
/// jobinfo_error (the setup then fails as for any jobinfo that cannot be
/// saved), so no size of anything the script produced changes the outcome
/// into a protocol error.
std::string encode_result(ResultFrame r) {
  if (r.message.size() > kMaxMessageBytes)
    r.message = bound_message(r.message);
  std::string wire = encode_frame(r);
  if (wire.size() - 4 > kMaxFrameBytes && r.ret.jobinfo) {
    r.ret.jobinfo_error = "jobinfo: " + std::to_string(r.ret.jobinfo->size()) +
                          " bytes encoded, more than the supervisor's frame limit of " +
                          std::to_string(kMaxFrameBytes);
    r.ret.jobinfo.reset();
    wire = encode_frame(r);
  }
  return wire;
}

/// Whether this process has no child at all, alive or dead and unwaited,
/// whatever its exit signal (__WALL: also clone()d children that do not
/// send SIGCHLD), and is single-threaded (a thread a C module started could
/// still fork).  The waitid() is atomic in the kernel, unlike a read of
/// /proc/PID/task/PID/children.
bool childless() {
  siginfo_t si{};
  if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 || errno != ECHILD)
    return false;
  std::unique_ptr<DIR, int (*)(DIR *)> tasks(::opendir("/proc/self/task"), ::closedir);
  if (!tasks)
    return false;
  int n = 0;
  while (const dirent *d = ::readdir(tasks.get()))
    n += d->d_name[0] != '.';
  return n == 1;
}

/// The built-in script of warm_up(): a job_start that reads the job, logs
/// and returns a jobinfo, so that the load, the call and both codecs run.
constexpr std::string_view kWarmUpSource = R"lua(
function slurm_switch_job_start(job)
  slurm.log_debug("warm-up JobId=%d %s", job.job_id, job.nodes)
  return slurm.SUCCESS, { job_id = job.job_id, nodes = job.node_names }
end
)lua";

/// What a runner started ahead of demand does while it has no call yet: run
/// kWarmUpSource's job_start once, in a Lua state of its own that it then
/// closes, and encode the result, sending nothing.  The dynamic loader's
/// binding of the symbols a call uses and the first touch of the code and
/// data of Lua, the codecs and the frame encoder then happen here, off the
/// call's path, instead of between the request and the result (0.3 to 1.5
/// ms of a trivial job_start on the testbed, issue 8).  The call itself
/// still gets a fresh Lua state loaded from its script alone.
void warm_up() {
  RequestFrame req;
  req.script = "(switch-lua-runner warm-up)";
  req.hook = Hook::JobStart;
  req.source = std::string(kWarmUpSource);
  JobArgs job;
  job.job_id = 1;
  job.nodes = "node1";
  job.node_names = {"node1"};
  job.num_nodes = 1;
  req.job = job.to_msgpack();
  std::optional<Script> state;
  (void)encode_result(run_hook(req, [](LogLevel, std::string_view) {}, state));
}

/// The parent-death signal (kRunnerParentDeathSignal, set before exec by the
/// supervisor): the supervisor is gone, so nobody will kill this call's
/// group; do it now.  SIGTERM keeps its default action: at the deadline the
/// supervisor sends it to the whole group and this process ends, while the
/// other members get the kill grace (call.hpp).
extern "C" void on_parent_death(int) {
  ::kill(0, SIGKILL);
}

/// What every runner process sets up for itself before a call, and the fork
/// server before any (its children inherit it).
void prepare_process() {
  ::signal(kRunnerParentDeathSignal, on_parent_death);
  ::signal(SIGTERM, SIG_DFL);
  // A write to an io.popen helper that exited is a Lua error the script can
  // handle (nil, "Broken pipe", 32), never this call's death on SIGPIPE
  // (issue 19); the commands it starts still get SIGPIPE's default.
  catch_sigpipe_for_good();
  become_oom_victim();
}

/// The call on channel `fd`: reads the request, runs it, sends the result
/// and _Exits 0; returns 2 when there is no usable request.
int serve_call(int fd) {
  // Commands the script runs (os.execute, io.popen) must not hold the channel.
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  auto req = read_request(fd);
  if (!req)
    return 2;
  // A runner started ahead of demand has no tag yet; what the script starts
  // inherits it, so the supervisor can tell whose escapee a process is.
  ::setenv(std::string(kCallTagVar).c_str(), std::to_string(req->id).c_str(), 1);
  // Before the script runs, so that all it starts inherits it; a refusal
  // (it cannot be) leaves the call at the supervisor's priority.
  if (req->lane == Lane::Batch) {
    errno = 0;
    const int now = ::getpriority(PRIO_PROCESS, 0);
    if (errno == 0)
      (void)::setpriority(PRIO_PROCESS, 0, std::min(now + kBatchLaneNice, 19));
  }
  // Lines arrive cut to kMaxLogLineBytes (the slurm table does it); the
  // call's budget is kept here, so a flood costs neither the supervisor nor
  // slurmctld more than the budget.
  LogBudget budget;
  LogSink sink = [fd, &budget](LogLevel level, std::string_view text) noexcept {
    try {
      if (budget.admit(text.size()))
        write_all(fd, encode_frame(LogFrame{0, level, std::string(text)}));
      else if (budget.first_refusal())
        write_all(fd, encode_frame(LogFrame{0, LogLevel::Error, LogBudget::notice()}));
    } catch (...) { // out of memory: the line is lost, the call goes on
    }
  };
  std::optional<Script> state; // never closed: see run_hook()
  // slurm.run's commands end within the call's own switch_timeout.
  set_call_deadline(std::chrono::steady_clock::now() + std::chrono::seconds(req->timeout_s));
  ResultFrame result = run_hook(*req, sink, state);
  if (budget.suppressed() > 0)
    write_all(fd, encode_frame(LogFrame{0, LogLevel::Error, budget.summary()}));
  // What the script wrote to files it did not close reaches them before the
  // result does (the state is never closed, so their __gc never runs).
  std::fflush(nullptr);
  // After the hook (and the log lines): nothing forks here any more.
  result.childless = childless();
  write_all(fd, encode_result(std::move(result)));
  std::_Exit(0);
}

/// The fork server's child shows as a runner (ps, scripts/chaos): the
/// --fork-server argument is blanked in its copy of the command line.
void hide_fork_server_arg(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--fork-server")
      std::memset(argv[i], 0, std::strlen(argv[i]));
}

} // namespace

int main(int argc, char **argv) {
  int fd = 3;
  bool fork_server = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.substr(0, 13) == "--channel-fd=")
      fd = std::atoi(argv[i] + 13);
    else if (a == "--fork-server")
      fork_server = true;
  }
  prepare_process();
  if (fork_server) {
    ::prctl(PR_SET_NAME, "switch-lua-fork");
    warm_up(); // once, for every child
    serve_forks(fd, [argc, argv](int channel) {
      hide_fork_server_arg(argc, argv);
      return serve_call(channel);
    });
  }
  // Started ahead of demand (no call tag yet) and no call waiting for it yet
  // (in a burst one may take it at once): nobody waits on the warm-up.
  pollfd waiting{fd, POLLIN, 0};
  if (std::getenv(std::string(kCallTagVar).c_str()) == nullptr && ::poll(&waiting, 1, 0) == 0)
    warm_up();
  return serve_call(fd);
}
