// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/fork_server.cpp
//
// Both sides of the fork server (fork_server.hpp).  The wire: a
// SOCK_SEQPACKET socketpair; a request is one 8-byte message (the call
// tag, 0 for none) carrying the call's channel as SCM_RIGHTS, a reply one
// 4-byte message: the child's pid, or minus the errno of a failed clone.
#include "supervisor/fork_server.hpp"

#include "supervisor/channel.hpp"
#include "supervisor/proc_scan.hpp"
#include "supervisor/spawn.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <pthread.h>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace switchlua {

namespace {

using Clock = std::chrono::steady_clock;

/// clone3(2)'s argument, version 0 (CLONE_ARGS_SIZE_VER0, 64 bytes), spelt
/// out here: <linux/sched.h> clashes with <sched.h>.
struct CloneArgs {
  std::uint64_t flags = 0;
  std::uint64_t pidfd = 0;
  std::uint64_t child_tid = 0;
  std::uint64_t parent_tid = 0;
  std::uint64_t exit_signal = 0;
  std::uint64_t stack = 0;
  std::uint64_t stack_size = 0;
  std::uint64_t tls = 0;
};
static_assert(sizeof(CloneArgs) == 64);

/// Where glibc keeps the calling thread's id in its descriptor (struct
/// pthread), which fork() has the kernel fill in for the child: glibc
/// publishes the field's place for libthread_db as _thread_db_pthread_tid
/// (bits, count, offset).  nullptr when it is absent or does not hold this
/// thread's id now: the child then keeps the fork server's id there, which
/// only pthread calls that name a thread by its kernel id on pthread_self()
/// would notice.
pid_t *glibc_tid_slot() {
  const auto *desc = static_cast<const std::uint32_t *>(
      ::dlvsym(RTLD_DEFAULT, "_thread_db_pthread_tid", "GLIBC_PRIVATE"));
  if (desc == nullptr || desc[0] != 8 * sizeof(pid_t) || desc[1] != 1 || desc[2] > 4096)
    return nullptr;
  auto *slot = reinterpret_cast<pid_t *>(reinterpret_cast<char *>(::pthread_self()) + desc[2]);
  return *slot == ::gettid() ? slot : nullptr;
}

/// fork(), but the child's parent is our parent (the supervisor).
pid_t clone_sibling(pid_t *tid_slot) {
  CloneArgs a;
  a.flags = CLONE_PARENT | (tid_slot != nullptr ? CLONE_CHILD_SETTID : 0);
  a.child_tid = reinterpret_cast<std::uintptr_t>(tid_slot);
  // exit_signal stays 0, as clone3 requires with CLONE_PARENT: the child
  // sends the supervisor the signal we would send it, SIGCHLD.
  return static_cast<pid_t>(::syscall(SYS_clone3, &a, sizeof a));
}

/// Closes every fd above kChildChannelFd.
void close_the_rest() {
  if (::syscall(SYS_close_range, kChildChannelFd + 1, ~0U, 0) == 0)
    return;
  std::vector<int> fds; // no close_range(2): what /proc says is open
  if (DIR *d = ::opendir("/proc/self/fd")) {
    while (const dirent *e = ::readdir(d))
      if (const int fd = std::atoi(e->d_name); fd > kChildChannelFd && fd != ::dirfd(d))
        fds.push_back(fd);
    ::closedir(d);
  }
  for (int fd : fds)
    ::close(fd);
}

/// In the child: what the spawn of an exec'd runner does before exec
/// (spawn.hpp), for what the fork server does not already have.
void become_call_process(int channel, std::uint64_t tag, pid_t supervisor) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, kRunnerParentDeathSignal);
  if (::getppid() != supervisor)
    ::kill(0, SIGKILL);             // the supervisor died before the signal was armed
  ::dup2(channel, kChildChannelFd); // replaces the control socket
  ::close(channel);
  close_the_rest();
  ::prctl(PR_SET_NAME, "switch-lua-runner");
  if (tag != 0)
    ::setenv(std::string(kCallTagVar).c_str(), std::to_string(tag).c_str(), 1);
}

/// The message of one request: the call's tag (8 bytes) and room for one
/// file descriptor (SCM_RIGHTS).  Points into itself: not copyable.
struct TagMessage {
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
  iovec iov;
  msghdr m{};
  explicit TagMessage(std::uint64_t &tag) : iov{&tag, sizeof tag} {
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
  }
  TagMessage(const TagMessage &) = delete;
  TagMessage &operator=(const TagMessage &) = delete;
};

/// One request: its tag and the attached fd (-1 if none).  false on EOF or
/// a broken socket.
bool receive_request(int fd, std::uint64_t &tag, int &channel) {
  TagMessage msg(tag);
  msghdr &m = msg.m;
  ssize_t n;
  while ((n = ::recvmsg(fd, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n <= 0)
    return false;
  channel = -1;
  for (cmsghdr *c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&channel, CMSG_DATA(c), sizeof channel);
  return n == sizeof tag;
}

bool send_request(int fd, std::uint64_t tag, int channel) {
  TagMessage msg(tag);
  msghdr &m = msg.m;
  cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &channel, sizeof channel);
  ssize_t n;
  while ((n = ::sendmsg(fd, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return n == sizeof tag;
}

/// The reply, waited for at most kForkReplyLimit; nullopt without one.
std::optional<std::int32_t> receive_reply(int fd) {
  const auto until = Clock::now() + kForkReplyLimit;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
    if (r < 0 && errno == EINTR)
      continue; // the supervisor's SIGCHLD
    if (r <= 0)
      return std::nullopt;
    std::int32_t v = 0;
    const ssize_t n = ::recv(fd, &v, sizeof v, 0);
    if (n < 0 && errno == EINTR)
      continue;
    return n == sizeof v ? std::optional(v) : std::nullopt;
  }
}

} // namespace

ForkServer::~ForkServer() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string ForkServer::runner_identity() const {
  struct stat st{};
  if (::stat(config_.runner.c_str(), &st) != 0)
    return {};
  return fmt::format("{}:{}:{}:{}.{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

Expected<void> ForkServer::start(boost::asio::io_context &io) {
  identity_ = runner_identity();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return fail(fmt::format("socketpair: {}", std::strerror(errno)));
  SpawnSpec spec;
  spec.path = config_.runner;
  spec.args = {fmt::format("--channel-fd={}", kChildChannelFd), "--fork-server"};
  spec.channel_fd = sv[1];
  spec.env = base_child_env(); // no call tag: each child gets its own
  spec.env.insert(spec.env.end(), config_.child_env.begin(), config_.child_env.end());
  spec.death_signal = SIGKILL; // it holds nothing to clean up
  auto pid = spawn_child(io, spec);
  ::close(sv[1]);
  if (!pid) { // the runner cannot be exec'd either: spawn_runner says why
    ::close(sv[0]);
    return fail(pid.error().message);
  }
  fd_ = sv[0];
  pid_ = *pid;
  answered_ = false;
  return {};
}

void ForkServer::give_up() {
  if (!answered_)
    never_again_ = true;
  retire();
}

void ForkServer::retire() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    retired_.push_back(pid_);
  }
  pid_ = -1;
}

Expected<RunnerProcess> ForkServer::fork_runner(boost::asio::io_context &io, CallId tag) {
  if (never_again_)
    return fail("the fork server is not used");
  if (fd_ >= 0 && runner_identity() != identity_)
    retire(); // the runner on disk changed: so do the runners
  if (fd_ < 0)
    if (auto ok = start(io); !ok)
      return Unexpected<Error>{ok.error()};
  auto sv = make_socketpair();
  if (!sv)
    return fail(sv.error().message);
  const bool sent = send_request(fd_, tag, (*sv)[1]);
  ::close((*sv)[1]);
  const auto reply = sent ? receive_reply(fd_) : std::nullopt;
  if (!reply || *reply <= 0) {
    ::close((*sv)[0]);
    const std::string why = !reply ? "the fork server did not answer" : std::strerror(-*reply);
    give_up();
    return fail(why);
  }
  answered_ = true;
  // The child does it too; whichever runs first, the group exists now.
  ::setpgid(*reply, *reply);
  return RunnerProcess{*reply, (*sv)[0]};
}

bool ForkServer::owns(pid_t pid) const {
  return pid > 0 &&
         (pid == pid_ || std::find(retired_.begin(), retired_.end(), pid) != retired_.end());
}

std::vector<pid_t> ForkServer::pids() const {
  std::vector<pid_t> out = retired_;
  if (pid_ > 0)
    out.push_back(pid_);
  return out;
}

void ForkServer::reaped(pid_t pid) {
  std::erase(retired_, pid);
  if (pid == pid_) { // died on its own: the next call starts another
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
    pid_ = -1;
  }
}

void serve_forks(int control_fd, const std::function<int(int)> &run_call) {
  const pid_t supervisor = ::getppid();
  pid_t *const tid_slot = glibc_tid_slot();
  std::uint64_t tag = 0;
  int channel = -1;
  while (receive_request(control_fd, tag, channel)) {
    std::int32_t reply = -EBADF;
    if (channel >= 0) {
      const pid_t pid = clone_sibling(tid_slot);
      if (pid == 0) {
        become_call_process(channel, tag, supervisor);
        ::_exit(run_call(kChildChannelFd));
      }
      reply = pid > 0 ? pid : -errno;
      ::close(channel);
    }
    while (::send(control_fd, &reply, sizeof reply, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
  }
  ::_exit(0);
}

} // namespace switchlua
