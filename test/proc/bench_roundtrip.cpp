// SPDX-License-Identifier: GPL-2.0-or-later
//
// bench_roundtrip [N [MODE [SCRIPT]]]: the cost of one supervised hook call
// (MODE, for a profiler: only the mode of that row, 0 to 3, -1 all; SCRIPT:
// the job_start to call instead of fixtures/bench_trivial.lua, e.g. one that
// runs commands).  SWITCHLUA_BENCH_RUNNER names another switch-lua-runner
// build to measure (two builds compared on the same machine).
//
// For each way of starting a call's runner, N (default 200) sequential
// job_start calls of a trivial script (client -> supervisor -> runner ->
// result -> client), 5 ms apart (the gap not timed), after 5 warm-up calls:
//
//   wall   mean and median milliseconds of one round trip
//   cpu    utime+stime per call of the supervisor and every process it
//          started (runners, the fork server), and of this process (the
//          client's I/O thread: slurmctld's share); from getrusage
//          (RUSAGE_CHILDREN once the supervisor is reaped, RUSAGE_SELF):
//          a client's whole life with N calls minus one with none, over N;
//          of it the supervisor's and the fork server's own share, from
//          /proc/PID/schedstat around the timed calls
//
// next to the spawn floor measured in the same run: posix_spawn + waitpid of
// /bin/true (wall, and cpu of parent + child), and Boost.Process v2's default
// and vfork launchers (wall).  Ratios are against the posix_spawn floor.
// Not a test: nothing is asserted.
#include "supervisor/client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/process/v2/posix/vfork_launcher.hpp>
#include <boost/process/v2/process.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <spawn.h>
#include <string_view>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <vector>

using namespace switchlua;
using Clock = std::chrono::steady_clock;
namespace bp = boost::process::v2;

namespace {

struct Stats {
  double mean = 0, median = 0;
};

Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size(), ms[ms.size() / 2]};
}

std::vector<double> timed(int n, const std::function<void()> &f) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    f();
    out.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return out;
}

/// utime + stime of `who` (RUSAGE_SELF, RUSAGE_CHILDREN, RUSAGE_THREAD), ms.
double cpu_ms(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

/// One call through the supervisor, waited for.
void one_call(SupervisorClient &c, const CallRequest &req) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  OutcomeKind kind{};
  auto id = c.submit(req, [&](CallId, const Outcome &o) {
    std::lock_guard lock(mu);
    done = true;
    kind = o.kind;
    cv.notify_all();
  });
  if (!id) {
    fmt::print(stderr, "submit: {}\n", id.error().message);
    std::exit(1);
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done; });
  if (kind != OutcomeKind::Returned) {
    fmt::print(stderr, "unexpected outcome {}\n", outcome_kind_name(kind));
    std::exit(1);
  }
}

/// How a call's runner is started.
struct Mode {
  const char *name;
  std::uint32_t prestart;
  bool fork_server;
};

struct Result {
  Stats wall;
  double supervisor_cpu = 0; ///< ms per call: supervisor and its children
  double client_cpu = 0;     ///< ms per call: this process
  double own_cpu = 0;        ///< ms per call: the supervisor alone
  double server_cpu = 0;     ///< ms per call: the fork server alone
};

/// On-CPU time of process `pid`'s main thread (/proc/PID/schedstat), ms;
/// 0 when it is gone.
double oncpu_ms(pid_t pid) {
  std::FILE *f = std::fopen(fmt::format("/proc/{}/schedstat", pid).c_str(), "r");
  unsigned long long ns = 0;
  if (f) {
    if (std::fscanf(f, "%llu", &ns) != 1)
      ns = 0;
    std::fclose(f);
  }
  return ns / 1e6;
}

/// The supervisor's child that is its fork server, or -1.
pid_t fork_server_of(pid_t sup) {
  std::FILE *f = std::fopen(fmt::format("/proc/{}/task/{}/children", sup, sup).c_str(), "r");
  pid_t found = -1;
  for (int p = 0; f && std::fscanf(f, "%d", &p) == 1;) {
    std::FILE *c = std::fopen(fmt::format("/proc/{}/cmdline", p).c_str(), "r");
    char buf[512] = {};
    const std::size_t len = c ? std::fread(buf, 1, sizeof buf - 1, c) : 0;
    if (c)
      std::fclose(c);
    for (std::size_t i = 0; i < len; i += std::strlen(buf + i) + 1)
      if (std::string_view(buf + i) == "--fork-server")
        found = p;
  }
  if (f)
    std::fclose(f);
  return found;
}

/// The supervisor's and the fork server's on-CPU time, ms.
std::pair<double, double> own_cpu(SupervisorClient &client) {
  const pid_t sup = client.supervisor_pid();
  const pid_t server = fork_server_of(sup);
  return {oncpu_ms(sup), server > 0 ? oncpu_ms(server) : 0.0};
}

struct Life {
  double tree = 0, client = 0; ///< ms: the supervisor's tree, this process
  double own = 0, server = 0;  ///< ms during the timed calls: supervisor, fork server
};

/// CPU of one client's life with `n` timed calls; their wall times go to
/// `ms`.
Life client_life(const Mode &m, const CallRequest &req, int n, std::vector<double> &ms) {
  const double children0 = cpu_ms(RUSAGE_CHILDREN), self0 = cpu_ms(RUSAGE_SELF);
  Life life;
  {
    ClientOptions opts;
    opts.supervisor = SWITCHLUA_SUPERVISOR_PATH;
    const char *runner = std::getenv("SWITCHLUA_BENCH_RUNNER");
    opts.runner = runner != nullptr ? runner : SWITCHLUA_RUNNER_PATH;
    opts.prestart = m.prestart;
    opts.fork_server = m.fork_server;
    SupervisorClient client(opts, nullptr);
    timed(5, [&] { one_call(client, req); }); // starts the supervisor, warms caches
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the refill
    const auto [own0, server0] = own_cpu(client);
    // Calls 5 ms apart, as jobs arrive in a cluster (the gap is not timed):
    // a runner started ahead of demand is ready by the next call.
    for (int i = 0; i < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ms.push_back(timed(1, [&] { one_call(client, req); })[0]);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the last refill
    const auto [own1, server1] = own_cpu(client);
    life.own = own1 - own0;
    life.server = server1 - server0;
  } // the supervisor is reaped: its tree's CPU is in RUSAGE_CHILDREN
  life.tree = cpu_ms(RUSAGE_CHILDREN) - children0;
  life.client = cpu_ms(RUSAGE_SELF) - self0;
  return life;
}

Result measure(const Mode &m, const CallRequest &req, int n) {
  std::vector<double> ms, none;
  const Life empty = client_life(m, req, 0, none);
  const Life full = client_life(m, req, n, ms);
  return {stats(ms), (full.tree - empty.tree) / n, (full.client - empty.client) / n, full.own / n,
          full.server / n};
}

} // namespace

int main(int argc, char **argv) {
  // CALLS [MODE [SCRIPT]]: CALLS >= 1, MODE 0-3 (-1: all); anything else is
  // refused, not read as 0 (an empty table, or an out-of-range index).
  auto number = [&](int i, int fallback, int lo, int hi) {
    if (argc <= i)
      return fallback;
    char *end = nullptr;
    errno = 0;
    const long v = std::strtol(argv[i], &end, 10);
    if (errno != 0 || end == argv[i] || *end != '\0' || v < lo || v > hi) {
      std::fprintf(stderr,
                   "bench_roundtrip: argument %d is '%s', not a number in %d..%d\n"
                   "usage: bench_roundtrip [CALLS [MODE [SCRIPT]]]\n",
                   i, argv[i], lo, hi);
      std::exit(2);
    }
    return static_cast<int>(v);
  };
  const int n = number(1, 200, 1, 1000000);
  CallRequest req;
  req.script =
      argc > 3 ? std::string(argv[3]) : std::string(SWITCHLUA_FIXTURES) + "/bench_trivial.lua";
  req.job.job_id = 1;
  const Mode modes[] = {
      {"round trip, exec'd runner per call", 0, false},
      {"round trip, exec'd runners ahead (prestart 2)", 2, false},
      {"round trip, fork server per call", 0, true},
      {"round trip, forked runners ahead (prestart 2)", 2, true},
  };
  // argv[2], for a profiler: the one mode to run (0-3); the table then
  // shows only it.
  const int only = number(2, -1, -1, 3);
  std::vector<Result> results;
  for (std::size_t i = 0; i < std::size(modes); ++i)
    results.push_back(only < 0 || static_cast<std::size_t>(only) == i ? measure(modes[i], req, n)
                                                                      : Result{});

  extern char **environ;
  const double spawn_children0 = cpu_ms(RUSAGE_CHILDREN), spawn_self0 = cpu_ms(RUSAGE_THREAD);
  const Stats posix_true = stats(timed(n, [&] {
    pid_t pid = -1;
    char arg0[] = "/bin/true";
    char *argv[] = {arg0, nullptr};
    if (::posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) == 0)
      ::waitpid(pid, nullptr, 0);
  }));
  const double spawn_cpu =
      (cpu_ms(RUSAGE_CHILDREN) - spawn_children0 + cpu_ms(RUSAGE_THREAD) - spawn_self0) / n;

  boost::asio::io_context io;
  const Stats fork_true = stats(timed(n, [&] {
    bp::process p(io, "/bin/true", {});
    p.wait();
  }));
  const Stats vfork_true = stats(timed(n, [&] {
    bp::posix::vfork_launcher launch;
    auto p = launch(io, "/bin/true", std::vector<std::string>{});
    p.wait();
  }));

  fmt::print("{} calls each, ms.  cpu: utime+stime per call of the supervisor and every process "
             "it started (sup+), of which the supervisor alone (sup) and the fork server (fs), "
             "and of the client process (cli); x: ratio to posix_spawn of /bin/true\n",
             n);
  fmt::print("{:<44} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6}\n", "", "mean", "median",
             "sup+", "sup", "fs", "cli", "total", "x wall", "x cpu");
  for (std::size_t i = 0; i < std::size(modes); ++i) {
    const Result &r = results[i];
    if (only >= 0 && static_cast<std::size_t>(only) != i)
      continue;
    fmt::print("{:<44} {:7.3f} {:7.3f} {:7.3f} {:7.3f} {:7.3f} {:7.3f} {:7.3f} {:6.2f} {:6.2f}\n",
               modes[i].name, r.wall.mean, r.wall.median, r.supervisor_cpu, r.own_cpu, r.server_cpu,
               r.client_cpu, r.supervisor_cpu + r.client_cpu, r.wall.median / posix_true.median,
               (r.supervisor_cpu + r.client_cpu) / spawn_cpu);
  }
  fmt::print("{:<44} {:7.3f} {:7.3f} {:>7} {:>7} {:>7} {:>7} {:7.3f} {:6.2f} {:6.2f}\n",
             "posix_spawn+waitpid /bin/true", posix_true.mean, posix_true.median, "", "", "", "",
             spawn_cpu, 1.0, 1.0);
  fmt::print("{:<44} {:7.3f} {:7.3f}\n", "spawn+wait /bin/true, Boost default launcher",
             fork_true.mean, fork_true.median);
  fmt::print("{:<44} {:7.3f} {:7.3f}\n", "spawn+wait /bin/true, Boost vfork launcher",
             vfork_true.mean, vfork_true.median);
  return 0;
}
