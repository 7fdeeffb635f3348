// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/proc/fake_runner.cpp
//
// A stand-in for switch-lua-runner in early_outcome_test.cpp: it speaks the
// runner's side of the protocol but, instead of running a script, does what
// the request's script path names, then sends a Returned result and stays
// alive for a while, so the test can see whether the supervisor waited for
// its exit before it delivered the outcome.
//
//   .../childless      result with childless = true, then 2 s alive
//   .../with-child     a child that sleeps 30 s (in the group), result with
//                      childless = false, then 1 s alive
//   .../orphan         a grandchild in a session of its own (setsid) whose
//                      parent is reaped at once: the runner is childless,
//                      the supervisor inherits the grandchild; result with
//                      childless = true, then 1 s alive
// Before the result it logs "pid N" (itself) and, for orphan, "orphan M".
#include "supervisor/protocol.hpp"

#include <cerrno>
#include <chrono>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace switchlua;

namespace {

void send_all(int fd, const std::string &bytes) {
  std::string_view b = bytes;
  while (!b.empty()) {
    const ssize_t n = ::send(fd, b.data(), b.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      ::_exit(3);
    b.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::optional<RequestFrame> read_request(int fd) {
  FrameDecoder d;
  char buf[65536];
  for (;;) {
    auto f = d.next();
    if (!f)
      return std::nullopt;
    if (*f)
      return std::holds_alternative<RequestFrame>(**f)
                 ? std::optional(std::get<RequestFrame>(std::move(**f)))
                 : std::nullopt;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return std::nullopt;
    d.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

void log(int fd, const std::string &text) {
  send_all(fd, encode_frame(LogFrame{0, LogLevel::Info, text}));
}

} // namespace

int main() {
  const int fd = 3; // --channel-fd=3, as the supervisor starts runners
  auto req = read_request(fd);
  if (!req)
    return 2;
  const std::string mode = req->script.substr(req->script.rfind('/') + 1);
  log(fd, "pid " + std::to_string(::getpid()));
  ResultFrame r;
  r.ret.hook = req->hook;
  r.ret.rc = 0;
  auto stay = std::chrono::seconds(1);
  if (mode == "childless") {
    r.childless = true;
    stay = std::chrono::seconds(2);
  } else if (mode == "with-child") {
    if (::fork() == 0) {
      ::sleep(30);
      ::_exit(0);
    }
  } else if (mode == "orphan") {
    int p[2];
    if (::pipe(p) != 0)
      return 4;
    const pid_t child = ::fork();
    if (child == 0) {
      if (::fork() == 0) {
        ::setsid();
        const std::string me = std::to_string(::getpid());
        [[maybe_unused]] ssize_t n = ::write(p[1], me.data(), me.size());
        ::close(p[1]);
        ::sleep(30);
        ::_exit(0);
      }
      ::_exit(0);
    }
    ::close(p[1]);
    char buf[32] = {};
    [[maybe_unused]] ssize_t n = ::read(p[0], buf, sizeof buf - 1);
    ::waitpid(child, nullptr, 0);
    log(fd, std::string("orphan ") + buf);
    r.childless = true; // true: the grandchild is the supervisor's now
  } else {
    return 5;
  }
  send_all(fd, encode_frame(r));
  std::this_thread::sleep_for(stay);
  ::_exit(0);
}
