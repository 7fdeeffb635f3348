// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/run_command.cpp
//
// slurm.run (lua/run_command.hpp): posix_spawnp without a shell, pipes for
// the three standard streams, one poll loop over them and a pidfd of the
// command, SIGKILL at the timeout.  The Lua function below does all of its
// C++ work in a scope closed before it may raise (lua/slurm_table.cpp).
#include "lua/run_command.hpp"

#include "lua/detail.hpp"

#include <lua.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace switchlua {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::optional<Clock::time_point> g_deadline;
bool g_own_group = false;

/// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }
};

/// A pipe whose parent end is non-blocking; both ends close-on-exec (the
/// child's end is dup2'd onto 0, 1 or 2, which clears the flag there).
bool make_pipe(Fd &r, Fd &w) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    return false;
  r.fd = p[0];
  w.fd = p[1];
  return true;
}

void set_nonblock(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/// Reads what `fd` has now into `into` (at most kRunOutputMax kept).
/// false at EOF or on an error other than EAGAIN.
bool read_some(int fd, std::string &into, bool &truncated) {
  std::array<char, 65536> buf;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      const std::size_t room = kRunOutputMax - std::min(kRunOutputMax, into.size());
      into.append(buf.data(), std::min<std::size_t>(room, static_cast<std::size_t>(n)));
      if (static_cast<std::size_t>(n) > room)
        truncated = true;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

int pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

/// set_run_poll_for_tests(); nullptr: ::poll.
PollFn g_poll = nullptr;

void fill_status(RunResult &r, int st) {
  if (WIFEXITED(st))
    r.status = WEXITSTATUS(st);
  else if (WIFSIGNALED(st))
    r.signal = WTERMSIG(st);
}

/// posix_spawnp of req.argv with stdin `in_fd` (-1: /dev/null), stdout
/// `out_fd`, stderr `err_fd`, every signal at its default and none blocked,
/// req.env, req.cwd and req.own_group; `pid` set.  0, or the error number.
int spawn(const RunRequest &req, int in_fd, int out_fd, int err_fd, pid_t &pid) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  if (in_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  else
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  if (req.cwd)
    posix_spawn_file_actions_addchdir_np(&fa, req.cwd->c_str());
  // The command starts with every signal at its default and none blocked,
  // whatever this process ignores or blocks (slurmstepd ignores SIGPIPE).
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
  if (req.own_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);
  std::vector<char *> argv;
  argv.reserve(req.argv.size() + 1);
  for (const auto &a : req.argv)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char *> envp;
  if (req.env) {
    for (const auto &e : *req.env)
      envp.push_back(const_cast<char *>(e.c_str()));
    envp.push_back(nullptr);
  }
  const int rc = ::posix_spawnp(&pid, req.argv.front().c_str(), &fa, &attr, argv.data(),
                                req.env ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc;
}

} // namespace

void set_call_deadline(std::optional<Clock::time_point> deadline) {
  g_deadline = deadline;
}

void set_run_own_group(bool own) {
  g_own_group = own;
}

void set_run_poll_for_tests(PollFn fn) {
  g_poll = fn;
}

std::optional<milliseconds> run_timeout(std::optional<milliseconds> asked) {
  if (!g_deadline)
    return asked.value_or(kRunDefaultTimeout);
  // The hook keeps kRunDeadlineMargin to return in before the supervisor's
  // SIGTERM: a command killed at its capped timeout is the hook's to report.
  const auto left =
      std::chrono::duration_cast<milliseconds>(*g_deadline - Clock::now()) - kRunDeadlineMargin;
  if (left <= milliseconds(0))
    return std::nullopt;
  return asked ? std::min(*asked, left) : left;
}

RunResult run_command(const RunRequest &req) {
  RunResult r;
  const auto t0 = Clock::now();
  const std::string &name = req.argv.front();
  auto failed = [&](int err) {
    r.error = fmt::format("cannot run {}: {}", name, std::strerror(err));
    return r;
  };
  Fd in_r, in_w, out_r, out_w, err_r, err_w;
  if ((req.input && !make_pipe(in_r, in_w)) || !make_pipe(out_r, out_w) || !make_pipe(err_r, err_w))
    return failed(errno);

  pid_t pid = -1;
  const int rc = spawn(req, in_r.fd, out_w.fd, err_w.fd, pid);
  if (rc != 0)
    return failed(rc);
  r.started = true;
  in_r.reset();
  out_w.reset();
  err_w.reset();
  auto kill_it = [&] {
    if (req.own_group)
      ::kill(-pid, SIGKILL);
    else
      ::kill(pid, SIGKILL);
  };

  // A write to a command that stopped reading must not raise SIGPIPE here.
  sigset_t pipe_set, old_mask, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigpending(&pending);
  const bool pipe_was_pending = sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);

  std::size_t written = 0;
  if (req.input) {
    set_nonblock(in_w.fd);
    if (req.input->empty())
      in_w.reset();
  }
  set_nonblock(out_r.fd);
  set_nonblock(err_r.fd);
  Fd pidfd(pidfd_open(pid));
  const auto deadline = t0 + req.timeout;
  bool exited = false;
  int st = 0;
  while (!exited) {
    const auto now = Clock::now();
    if (now >= deadline) {
      kill_it();
      ::waitpid(pid, &st, 0);
      r.timed_out = true;
      exited = true;
      break;
    }
    std::array<pollfd, 4> p{};
    nfds_t n = 0;
    auto add = [&](int fd, short ev) {
      if (fd >= 0)
        p[n++] = pollfd{fd, ev, 0};
    };
    add(in_w.fd, POLLOUT);
    add(out_r.fd, POLLIN);
    add(err_r.fd, POLLIN);
    add(pidfd.fd, POLLIN);
    int wait_ms =
        static_cast<int>(std::chrono::duration_cast<milliseconds>(deadline - now).count() + 1);
    if (pidfd.fd < 0) // no pidfd (old kernel): look at the command every 20 ms
      wait_ms = std::min(wait_ms, 20);
    const int polled = g_poll ? g_poll(p.data(), n, wait_ms) : ::poll(p.data(), n, wait_ms);
    if (polled < 0 && errno != EINTR) {
      // Not watched any more: killed, and reported as a failure, never as
      // the exit status 0 of a wait status nobody filled in (issue 35).
      r.error = fmt::format("{} was killed: cannot watch it: poll: {}", name, std::strerror(errno));
      kill_it();
      ::waitpid(pid, &st, 0);
      r.unwatched = true;
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (!p[i].revents)
        continue;
      if (p[i].fd == in_w.fd) {
        const std::string &in = *req.input;
        const ssize_t w = ::write(in_w.fd, in.data() + written,
                                  std::min<std::size_t>(in.size() - written, 65536));
        if (w > 0)
          written += static_cast<std::size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == in.size())
          in_w.reset(); // all written, or the command closed its input (EPIPE)
      } else if (p[i].fd == out_r.fd) {
        if (!read_some(out_r.fd, r.out, r.truncated))
          out_r.reset();
      } else if (p[i].fd == err_r.fd) {
        if (!read_some(err_r.fd, r.err, r.truncated))
          err_r.reset();
      }
    }
    if (::waitpid(pid, &st, WNOHANG) == pid)
      exited = true;
  }
  // What the command wrote before it ended; a leftover child that keeps the
  // pipes open is not waited for.
  if (out_r.fd >= 0)
    read_some(out_r.fd, r.out, r.truncated);
  if (err_r.fd >= 0)
    read_some(err_r.fd, r.err, r.truncated);
  if (req.own_group)
    ::kill(-pid, SIGKILL); // its leftovers: no call group will kill them
  if (!r.unwatched)
    fill_status(r, st);
  in_w.reset();
  if (!pipe_was_pending) {
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) {
      const timespec zero{0, 0};
      ::sigtimedwait(&pipe_set, nullptr, &zero);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  r.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
  return r;
}

namespace {

/// Pushes the result table of `r` (light userdata at 1); run under
/// lua_pcall, so a memory error raises past no C++ object.
int push_result(lua_State *L) {
  const auto *r = static_cast<const RunResult *>(lua_touserdata(L, 1));
  lua_createtable(L, 0, 7);
  if (r->status) {
    lua_pushinteger(L, *r->status);
    lua_setfield(L, -2, "status");
  }
  if (r->signal) {
    lua_pushinteger(L, *r->signal);
    lua_setfield(L, -2, "signal");
  }
  lua_pushboolean(L, r->timed_out);
  lua_setfield(L, -2, "timed_out");
  lua_pushboolean(L, r->truncated);
  lua_setfield(L, -2, "truncated");
  lua_pushnumber(L, static_cast<lua_Number>(r->elapsed.count()) / 1000.0);
  lua_setfield(L, -2, "elapsed");
  lua_pushlstring(L, r->out.data(), r->out.size());
  lua_setfield(L, -2, "stdout");
  lua_pushlstring(L, r->err.data(), r->err.size());
  lua_setfield(L, -2, "stderr");
  return 1;
}

/// Reads argv and opts (at 1 and 2) into `req`; a static message on a bad
/// argument.  Raises nothing (lua_rawlen, lua_rawgeti, lua_next on a table
/// nobody modifies meanwhile).
const char *read_args(lua_State *L, RunRequest &req, std::optional<milliseconds> &asked) {
  const auto n = static_cast<lua_Integer>(lua_rawlen(L, 1));
  if (n < 1)
    return "argv must be a non-empty array of strings";
  for (lua_Integer i = 1; i <= n; ++i) {
    const bool is_string = lua_rawgeti(L, 1, i) == LUA_TSTRING;
    std::size_t len = 0;
    const char *s = is_string ? lua_tolstring(L, -1, &len) : nullptr;
    if (s)
      req.argv.emplace_back(s, len);
    lua_pop(L, 1);
    if (!s)
      return "argv must be a non-empty array of strings";
    if (std::memchr(req.argv.back().data(), '\0', len))
      return "an argument contains a NUL byte";
  }
  if (lua_isnoneornil(L, 2))
    return nullptr;
  if (!lua_istable(L, 2))
    return "opts must be a table";
  lua_pushnil(L);
  while (lua_next(L, 2) != 0) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    const char *bad = nullptr;
    if (std::strcmp(key, "stdin") == 0) {
      std::size_t len = 0;
      const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : nullptr;
      if (s)
        req.input.emplace(s, len);
      else
        bad = "opts.stdin must be a string";
    } else if (std::strcmp(key, "timeout") == 0) {
      const double t = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : -1;
      if (t > 0 && t <= 86400)
        asked = milliseconds(static_cast<std::int64_t>(t * 1000 + 0.5));
      else
        bad = "opts.timeout must be a number of seconds above 0 (at most 86400)";
    } else {
      bad = "opts has an unknown key (stdin and timeout are known)";
    }
    lua_pop(L, 1);
    if (bad) {
      lua_pop(L, 1); // the key lua_next left
      return bad;
    }
  }
  return nullptr;
}

/// slurm.run(argv[, opts]) -> result table | nil, message (run_command.hpp).
int l_run(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkstack(L, 8, "slurm.run");
  lua_settop(L, 2);
  const char *bad = nullptr;
  enum { Ok, NotStarted, LuaFailed } outcome = LuaFailed;
  {
    // Scope of every C++ object: closed before anything below may raise.
    try {
      RunRequest req;
      std::optional<milliseconds> asked;
      bad = read_args(L, req, asked);
      if (!bad) {
        const auto timeout = run_timeout(asked);
        RunResult r;
        if (!timeout) {
          r.error = fmt::format("{} not started: the call has no time left", req.argv.front());
        } else {
          req.timeout = *timeout;
          req.own_group = g_own_group;
          r = run_command(req);
        }
        if (!r.started || r.unwatched) {
          lua_pushnil(L);
          outcome =
              detail::push_string_protected(L, "slurm.run: " + r.error) ? NotStarted : LuaFailed;
        } else {
          lua_pushcfunction(L, push_result);
          lua_pushlightuserdata(L, &r);
          outcome = lua_pcall(L, 1, 1, 0) == LUA_OK ? Ok : LuaFailed;
        }
      }
    } catch (const std::exception &) {
      outcome = LuaFailed;
    }
  }
  if (bad)
    return luaL_error(L, "slurm.run: %s", bad);
  if (outcome == Ok)
    return 1;
  if (outcome == NotStarted)
    return 2;
  return luaL_error(L, "slurm.run: out of memory");
}

} // namespace

void register_run(lua_State *L) {
  lua_pushcfunction(L, l_run);
  lua_setfield(L, -2, "run");
}

} // namespace switchlua
