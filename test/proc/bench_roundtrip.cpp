// SPDX-License-Identifier: GPL-2.0-or-later
//
// bench_roundtrip [N]: the cost of one supervised hook call.
//
// Prints mean and median milliseconds of N (default 200) sequential job_start
// round trips of a trivial script (client -> supervisor -> runner -> result
// -> client), next to a bare Boost.Process v2 spawn + wait of /bin/true in
// the same run (default fork launcher and vfork launcher), and the ratio.
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
  ClientOptions opts;
  opts.supervisor = SWITCHLUA_SUPERVISOR_PATH;
  opts.runner = SWITCHLUA_RUNNER_PATH;
  SupervisorClient client(opts, nullptr);
  CallRequest req;
  req.script = std::string(SWITCHLUA_FIXTURES) + "/bench_trivial.lua";
  req.job.job_id = 1;
  timed(5, [&] { one_call(client, req); }); // starts the supervisor, warms caches
  const Stats call = stats(timed(n, [&] { one_call(client, req); }));

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
  fmt::print("hook round trip (client->supervisor->runner->result): mean {:.3f} ms, median "
             "{:.3f} ms\n",
             call.mean, call.median);
  fmt::print("bare spawn+wait /bin/true, default launcher:           mean {:.3f} ms, median "
             "{:.3f} ms\n",
             fork_true.mean, fork_true.median);
  fmt::print("bare spawn+wait /bin/true, vfork launcher:             mean {:.3f} ms, median "
             "{:.3f} ms\n",
             vfork_true.mean, vfork_true.median);
  fmt::print("ratio round trip / bare default spawn (median): {:.2f}\n",
             call.median / fork_true.median);
  return 0;
}
