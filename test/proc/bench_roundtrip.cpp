// SPDX-License-Identifier: GPL-2.0-or-later
//
// bench_roundtrip [N]: the cost of one supervised hook call.
//
// Prints mean and median milliseconds of N (default 200) sequential job_start
// round trips of a trivial script (client -> supervisor -> runner -> result
// -> client), with runners spawned per call (prestart 0) and started ahead of
// demand (prestart 2, the default), calls 5 ms apart (the gap not timed),
// next to the spawn floor measured in the
// same run: posix_spawn + waitpid of /bin/true, and Boost.Process v2's
// default and vfork launchers.
// Not a test: nothing is asserted.
#include "supervisor/client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/process/v2/posix/vfork_launcher.hpp>
#include <boost/process/v2/process.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <numeric>
#include <spawn.h>
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

} // namespace

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200;
  CallRequest req;
  req.script = std::string(SWITCHLUA_FIXTURES) + "/bench_trivial.lua";
  req.job.job_id = 1;
  auto round_trip = [&](std::uint32_t prestart) {
    ClientOptions opts;
    opts.supervisor = SWITCHLUA_SUPERVISOR_PATH;
    opts.runner = SWITCHLUA_RUNNER_PATH;
    opts.prestart = prestart;
    SupervisorClient client(opts, nullptr);
    timed(5, [&] { one_call(client, req); }); // starts the supervisor, warms caches
    // Calls 5 ms apart, as jobs arrive in a cluster (the gap is not timed):
    // a runner started ahead of demand is ready by the next call.
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ms.push_back(timed(1, [&] { one_call(client, req); })[0]);
    }
    return stats(ms);
  };
  const Stats call0 = round_trip(0);
  const Stats call = round_trip(2);

  extern char **environ;
  const Stats posix_true = stats(timed(n, [&] {
    pid_t pid = -1;
    char arg0[] = "/bin/true";
    char *argv[] = {arg0, nullptr};
    if (::posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) == 0)
      ::waitpid(pid, nullptr, 0);
  }));

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

  fmt::print("{} calls each\n", n);
  fmt::print("hook round trip, runner spawned per call (prestart 0):  mean {:.3f} ms, median "
             "{:.3f} ms\n",
             call0.mean, call0.median);
  fmt::print("hook round trip, runners started ahead (prestart 2):   mean {:.3f} ms, median "
             "{:.3f} ms\n",
             call.mean, call.median);
  fmt::print("bare posix_spawn+waitpid /bin/true:                    mean {:.3f} ms, median "
             "{:.3f} ms\n",
             posix_true.mean, posix_true.median);
  fmt::print("bare spawn+wait /bin/true, default launcher:           mean {:.3f} ms, median "
             "{:.3f} ms\n",
             fork_true.mean, fork_true.median);
  fmt::print("bare spawn+wait /bin/true, vfork launcher:             mean {:.3f} ms, median "
             "{:.3f} ms\n",
             vfork_true.mean, vfork_true.median);
  fmt::print("ratio round trip / posix_spawn floor (median): prestart 0 {:.2f}, prestart 2 "
             "{:.2f}\n",
             call0.median / posix_true.median, call.median / posix_true.median);
  return 0;
}
