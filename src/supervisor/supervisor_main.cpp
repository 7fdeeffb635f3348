// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/supervisor_main.cpp
//
// switch-lua-supervisor: started once by SupervisorClient, never by hand.
//
//   switch-lua-supervisor --channel-fd=3 --runner=PATH [--max-concurrent=N]
//                         [--max-queue=N] [--prestart=N] [--fork-server=0|1]
//                         [--good-copy=PATH] [--child-env=NAME=value]...
//
// Exit status: 0 after the client went away (or SIGTERM), 2 on bad usage.
#include "lua/trust.hpp"
#include "supervisor/server.hpp"

#include <boost/asio/io_context.hpp>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <string_view>
#include <sys/prctl.h>

namespace {

bool parse_number(std::string_view s, auto &out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

/// Fills `cfg` from argv; false on anything unexpected.
bool parse_args(int argc, char **argv, switchlua::ServerConfig &cfg) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view opt) -> std::optional<std::string_view> {
      if (a.substr(0, opt.size()) == opt)
        return a.substr(opt.size());
      return std::nullopt;
    };
    if (auto v = value("--channel-fd=")) {
      if (!parse_number(*v, cfg.client_fd))
        return false;
    } else if (auto v = value("--runner=")) {
      cfg.runner.runner = std::string(*v);
    } else if (auto v = value("--max-concurrent=")) {
      if (!parse_number(*v, cfg.max_concurrent) || cfg.max_concurrent == 0)
        return false;
    } else if (auto v = value("--max-queue=")) {
      if (!parse_number(*v, cfg.max_queue) || cfg.max_queue == 0)
        return false;
    } else if (auto v = value("--prestart=")) {
      if (!parse_number(*v, cfg.prestart))
        return false;
    } else if (auto v = value("--fork-server=")) {
      if (*v != "0" && *v != "1")
        return false;
      cfg.fork_server = *v == "1";
    } else if (auto v = value("--good-copy=")) {
      cfg.good_copy = std::string(*v);
    } else if (auto v = value("--child-env=")) {
      if (v->find('=') == std::string_view::npos)
        return false;
      cfg.runner.child_env.emplace_back(*v);
      // The runners' SlurmUser is the supervisor's too (script_guard).
      const std::string_view key = std::string_view(switchlua::kSlurmUserEnv);
      if (v->substr(0, key.size()) == key && v->size() > key.size() && (*v)[key.size()] == '=') {
        unsigned long uid = 0;
        if (!parse_number(v->substr(key.size() + 1), uid))
          return false;
        switchlua::set_slurm_user(static_cast<uid_t>(uid));
      }
    } else {
      return false;
    }
  }
  return cfg.client_fd > 2 && !cfg.runner.runner.empty();
}

} // namespace

int main(int argc, char **argv) {
  switchlua::ServerConfig cfg;
  if (!parse_args(argc, argv, cfg)) {
    std::fprintf(stderr, "usage: switch-lua-supervisor --channel-fd=N --runner=PATH "
                         "[--max-concurrent=N] [--max-queue=N] [--prestart=N] "
                         "[--fork-server=0|1] [--good-copy=PATH] [--child-env=NAME=value]...\n");
    return 2;
  }
  // Orphans and setsid() escapees of the calls are reparented to us.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // A vanished client must show as EOF/EPIPE, not kill us before cleanup.
  ::signal(SIGPIPE, SIG_IGN);
  // The channel must not leak into runners (spawn closes it anyway).
  ::fcntl(cfg.client_fd, F_SETFD, FD_CLOEXEC);
  // PR_SET_PDEATHSIG (SIGTERM) was set before exec by the client's spawn.
  boost::asio::io_context io;
  switchlua::Server server(io, std::move(cfg));
  return server.run();
}
