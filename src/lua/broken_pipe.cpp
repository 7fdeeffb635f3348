// SPDX-License-Identifier: GPL-2.0-or-later
#include "lua/broken_pipe.hpp"

#include <csignal>
#include <mutex>

namespace switchlua {
namespace {

extern "C" void on_sigpipe(int) {} // the write that raised it fails with EPIPE

std::mutex guard_mu;
int guards = 0;         // guarded by guard_mu
bool installed = false; // guarded by guard_mu: the handler is ours

void install() {
  struct sigaction sa{};
  sa.sa_handler = on_sigpipe;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGPIPE, &sa, nullptr);
}

} // namespace

BrokenPipeIsAnError::BrokenPipeIsAnError() {
  std::lock_guard g(guard_mu);
  if (guards++ > 0)
    return;
  struct sigaction now{};
  if (::sigaction(SIGPIPE, nullptr, &now) != 0)
    return;
  if ((now.sa_flags & SA_SIGINFO) == 0 && now.sa_handler == SIG_DFL) {
    install();
    installed = true;
  }
}

BrokenPipeIsAnError::~BrokenPipeIsAnError() {
  std::lock_guard g(guard_mu);
  if (--guards > 0 || !installed)
    return;
  installed = false;
  // Back to the default only if the handler is still ours: a handler that
  // another thread of the host (slurmstepd's conmgr) installed while the
  // hook ran stays in place.
  struct sigaction now{};
  if (::sigaction(SIGPIPE, nullptr, &now) != 0 || (now.sa_flags & SA_SIGINFO) != 0 ||
      now.sa_handler != on_sigpipe)
    return;
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGPIPE, &dfl, nullptr);
}

void catch_sigpipe_for_good() {
  install();
}

} // namespace switchlua
