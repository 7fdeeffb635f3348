// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/spawn.cpp
//
// spawn_child() and its initializers.  Everything an initializer does in
// on_exec_setup() runs in the vfork child, which shares the parent's memory
// until it execs: it may only make async-signal-safe system calls on data
// prepared before the fork (no allocation, no locks, no C++ exceptions).
#include "supervisor/spawn.hpp"

#include <boost/process/v2/posix/vfork_launcher.hpp>
#include <boost/process/v2/process.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace switchlua {
namespace {

namespace bp = boost::process::v2;
using bp::error_code;
using Launcher = bp::posix::default_launcher;
using Path = bp::filesystem::path;
using Argv = const char *const *;

error_code last_error() {
  return error_code(errno, boost::system::system_category());
}

/// setpgid(0, 0): the child is the leader of a new process group, whose id is
/// its pid.  The supervisor kills a call's whole group through it.
struct new_process_group {
  error_code on_exec_setup(Launcher &, const Path &, Argv) {
    return ::setpgid(0, 0) == 0 ? error_code() : last_error();
  }
};

/// stdin, stdout and stderr on /dev/null (switch.lua contract): the script
/// logs through slurm.log_*, never to slurmctld's terminal.
struct null_stdio {
  int fd = -1;
  null_stdio() : fd(::open("/dev/null", O_RDWR | O_CLOEXEC)) {}
  ~null_stdio() {
    if (fd >= 0)
      ::close(fd);
  }
  null_stdio(const null_stdio &) = delete;
  null_stdio &operator=(const null_stdio &) = delete;

  error_code on_setup(Launcher &, const Path &, Argv) {
    return fd >= 0 ? error_code() : error_code(ENOENT, boost::system::system_category());
  }
  error_code on_exec_setup(Launcher &, const Path &, Argv) {
    for (int target = 0; target <= 2; ++target)
      if (::dup2(fd, target) < 0)
        return last_error();
    return {};
  }
};

/// The channel socket as kChildChannelFd, and nothing else beyond stdio: the
/// launcher closes every fd not in its whitelist after on_exec_setup.  The
/// whitelist stays {0, 1, 2, 3}, contiguous, because Boost 1.83's Linux
/// close_all() does not close gaps between whitelisted fds.  Must come after
/// null_stdio (a /dev/null fd of 3 in the parent is replaced here).
struct inherit_channel {
  int fd;
  error_code on_setup(Launcher &launcher, const Path &, Argv) {
    if (fd <= 2)
      return error_code(EBADF, boost::system::system_category());
    launcher.fd_whitelist.push_back(kChildChannelFd);
    return {};
  }
  error_code on_exec_setup(Launcher &, const Path &, Argv) {
    // dup2 onto another number clears FD_CLOEXEC; onto itself it does not.
    if (fd == kChildChannelFd)
      return ::fcntl(fd, F_SETFD, 0) == 0 ? error_code() : last_error();
    return ::dup2(fd, kChildChannelFd) >= 0 ? error_code() : last_error();
  }
};

/// Every signal disposition back to SIG_DFL and an empty mask: the parent
/// (slurmctld, the supervisor) has handlers, ignored and blocked signals that
/// the script's commands must not inherit (an ignored SIGPIPE survives exec).
/// spawn_child() blocks all signals around the vfork, so no handler of the
/// parent can run in the child before this.
struct default_signals {
  error_code on_exec_setup(Launcher &, const Path &, Argv) {
    struct sigaction sa{};
    sa.sa_handler = SIG_DFL;
    ::sigemptyset(&sa.sa_mask);
    for (int sig = 1; sig < NSIG; ++sig)
      if (sig != SIGKILL && sig != SIGSTOP)
        ::sigaction(sig, &sa, nullptr); // EINVAL for libc-reserved signals: fine
    sigset_t none;
    ::sigemptyset(&none);
    return ::sigprocmask(SIG_SETMASK, &none, nullptr) == 0 ? error_code() : last_error();
  }
};

/// Exactly the given environment, prepared before the fork.
struct clean_environment {
  std::vector<const char *> ptrs;
  explicit clean_environment(const std::vector<std::string> &env) {
    for (const std::string &e : env)
      ptrs.push_back(e.c_str());
    ptrs.push_back(nullptr);
  }
  error_code on_setup(Launcher &launcher, const Path &, Argv) {
    launcher.env = ptrs.data();
    return {};
  }
};

/// PR_SET_PDEATHSIG in the child before exec (kept across exec).  The vfork
/// parent is suspended until the exec, so it cannot have died already.  The
/// signal follows the death of the parent *thread* that spawned the child.
struct parent_death_signal {
  int sig;
  error_code on_exec_setup(Launcher &, const Path &, Argv) {
    if (sig == 0)
      return {};
    return ::prctl(PR_SET_PDEATHSIG, sig) == 0 ? error_code() : last_error();
  }
};

/// Blocks every signal in the calling thread for its lifetime.
class SignalsBlocked {
public:
  SignalsBlocked() {
    sigset_t all;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &saved_);
  }
  ~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  SignalsBlocked(const SignalsBlocked &) = delete;
  SignalsBlocked &operator=(const SignalsBlocked &) = delete;

private:
  sigset_t saved_;
};

} // namespace

std::vector<std::string> base_child_env() {
  return {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"};
}

Expected<pid_t> spawn_child(boost::asio::io_context &io, const SpawnSpec &spec) {
  bp::posix::vfork_launcher launcher;
  null_stdio stdio;
  clean_environment env(spec.env);
  error_code ec;
  pid_t pid = -1;
  {
    SignalsBlocked blocked;
    auto proc = launcher(io.get_executor(), ec, Path(spec.path), spec.args, default_signals{},
                         new_process_group{}, stdio, inherit_channel{spec.channel_fd}, env,
                         parent_death_signal{spec.death_signal});
    if (!ec)
      pid = proc.detach().id(); // we reap it, not Boost.Process
  }
  if (!ec)
    return pid;
  // The child of a failed exec has _exit()ed already (vfork returns after).
  if (launcher.pid > 0)
    while (::waitpid(launcher.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  return fail(fmt::format("cannot execute {}: {}", spec.path, ec.message()));
}

} // namespace switchlua
