// SPDX-License-Identifier: GPL-2.0-or-later
//
// The supervisor's lanes with real processes: a teardown and an interactive
// setup overtake batch setups that fill their share of the slots, a free slot
// goes to teardown > interactive > batch, a full lane refuses a call with a
// reason naming switch_max_queue, and a script changed on disk is what the
// very next call runs (runners started ahead of demand included), and the
// runners started ahead of demand are topped up after an outcome, not during
// the call.
#include "harness.hpp"

#include "supervisor/protocol.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <thread>
#include <tuple>

using namespace switchlua;
using namespace switchlua::test;
using namespace std::chrono_literals;

namespace {

/// A gate file of lane_gate.lua: absent until open() creates it.
class Gate {
public:
  Gate() {
    char tmpl[] = "/tmp/switchlua-gate-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/open";
  }
  ~Gate() { std::filesystem::remove_all(dir_); }
  const std::string &path() const { return path_; }
  void open() { std::ofstream(path_) << "open\n"; }

private:
  std::string dir_, path_;
};

/// A lane_gate.lua call waiting on `gate` (an existing path: no wait).
CallRequest gated(const std::string &gate, Hook h, bool batch) {
  CallRequest r = request("lane_gate", 60s);
  r.hook = h;
  r.job.network = gate;
  r.job.batch = batch;
  return r;
}

/// Waits until `n` calls of `c` have logged "start".
bool wait_started_logs(SyncClient &c, const std::vector<CallId> &ids, std::size_t n) {
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < until) {
    std::size_t k = 0;
    for (CallId id : ids)
      k += c.wait_for_log(id, "start", 0s) ? 1 : 0;
    if (k >= n)
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

std::size_t count_in(const std::vector<CallId> &order, const std::vector<CallId> &ids) {
  std::size_t n = 0;
  for (CallId id : order)
    n += std::find(ids.begin(), ids.end(), id) != ids.end();
  return n;
}

} // namespace

TEST(Lanes, TeardownAndInteractiveSetupOvertakeAFullSetOfSlowBatchSetups) {
  ClientOptions o = default_options();
  o.max_concurrent = 4; // one slot reserved: batch setups take at most 3
  SyncClient c(o);
  Gate gate;
  std::vector<CallId> batch;
  for (int i = 0; i < 6; ++i)
    batch.push_back(c.submit(gated(gate.path(), Hook::JobStart, true)));
  ASSERT_TRUE(wait_started_logs(c, batch, 3));

  // The batch setups hold their 3 slots and 3 more wait; these still run now.
  CallResult interactive = c.run(gated("/", Hook::JobStart, false));
  EXPECT_EQ(interactive.outcome.kind, OutcomeKind::Returned) << describe(interactive.outcome);
  CallResult teardown = c.run(gated("/", Hook::JobComplete, true));
  EXPECT_EQ(teardown.outcome.kind, OutcomeKind::Returned) << describe(teardown.outcome);
  EXPECT_EQ(count_in(c.started_order(), batch), 3u) << "a waiting batch setup started first";
  for (CallId id : batch)
    EXPECT_FALSE(c.finished(id));

  gate.open();
  for (CallId id : batch) {
    auto r = c.wait(id, 60s);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
  }
}

TEST(Lanes, AFreeSlotGoesToTeardownThenInteractiveThenBatch) {
  ClientOptions o = default_options();
  o.max_concurrent = 2; // batch setups take at most 1
  SyncClient c(o);
  Gate gate;
  // b1 first, alone: the first call of a script waits for its validation
  // (script_guard.hpp), and an interactive setup then ahead of it would leave
  // b1 only the reserved slot, which batch setups never take.
  const CallId b1 = c.submit(gated(gate.path(), Hook::JobStart, true));
  ASSERT_TRUE(wait_started_logs(c, {b1}, 1));
  const CallId i1 = c.submit(gated(gate.path(), Hook::JobStart, false));
  ASSERT_TRUE(wait_started_logs(c, {b1, i1}, 2));
  // Both slots taken; these wait, submitted in the reverse of their priority.
  const CallId b2 = c.submit(gated("/", Hook::JobStart, true));
  const CallId i2 = c.submit(gated("/", Hook::JobStart, false));
  const CallId t = c.submit(gated("/", Hook::JobComplete, false));
  std::this_thread::sleep_for(200ms); // all three reach the supervisor first
  EXPECT_EQ(c.started_order(), (std::vector<CallId>{b1, i1}));
  gate.open();
  for (CallId id : {b1, i1, b2, i2, t}) {
    auto r = c.wait(id, 60s);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
  }
  EXPECT_EQ(c.started_order(), (std::vector<CallId>{b1, i1, t, i2, b2}));
}

TEST(Lanes, AFullLaneRefusesTheCallAndNamesTheSetting) {
  ClientOptions o = default_options();
  o.max_concurrent = 1;
  o.max_queue = 2;
  SyncClient c(o);
  Gate gate;
  const CallId running = c.submit(gated(gate.path(), Hook::JobStart, true));
  ASSERT_TRUE(wait_started_logs(c, {running}, 1));
  const CallId w1 = c.submit(gated("/", Hook::JobStart, true));
  const CallId w2 = c.submit(gated("/", Hook::JobStart, true));
  const CallId refused = c.submit(gated("/", Hook::JobStart, true));
  auto r = c.wait(refused, 30s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome.kind, OutcomeKind::SpawnFailed);
  EXPECT_EQ(r->outcome.message, "the supervisor's batch queue is full (2 calls waiting, "
                                "SlurmctldParameters switch_max_queue=2)");
  EXPECT_EQ(describe(r->outcome),
            "could not be started: the supervisor's batch queue is full (2 calls waiting, "
            "SlurmctldParameters switch_max_queue=2)");
  // Each lane has its own bound: a teardown still queues.
  const CallId teardown = c.submit(gated("/", Hook::JobComplete, true));
  gate.open();
  for (CallId id : {running, w1, w2, teardown}) {
    auto done = c.wait(id, 60s);
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->outcome.kind, OutcomeKind::Returned) << describe(done->outcome);
  }
}

TEST(Lanes, QueuedTimeIsReportedAndTheRunTimeExcludesIt) {
  ClientOptions o = default_options();
  o.max_concurrent = 1;
  SyncClient c(o);
  Gate gate;
  const CallId first = c.submit(gated(gate.path(), Hook::JobStart, false));
  ASSERT_TRUE(wait_started_logs(c, {first}, 1));
  const CallId second = c.submit(gated("/", Hook::JobStart, false));
  std::this_thread::sleep_for(300ms);
  gate.open();
  auto r = c.wait(second, 60s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
  EXPECT_GE(r->outcome.queued.count(), 300);
  auto f = c.wait(first, 60s);
  ASSERT_TRUE(f.has_value());
  EXPECT_LT(f->outcome.queued.count(), r->outcome.queued.count());
  EXPECT_GE(f->outcome.elapsed.count(), 300);
}

/// prestart, fork_server
class ScriptOnDisk : public ::testing::TestWithParam<std::tuple<std::uint32_t, bool>> {};

TEST_P(ScriptOnDisk, TheNextCallRunsTheFileAsItIsNow) {
  ClientOptions o = default_options();
  o.prestart = std::get<0>(GetParam());
  o.fork_server = std::get<1>(GetParam());
  SyncClient c(o);
  Gate dir; // a private folder for the script
  const std::string script = std::filesystem::path(dir.path()).parent_path() / "switch.lua";
  auto write = [&](int version) {
    std::ofstream(script + ".new")
        << "function slurm_switch_job_start(job)\n  slurm.log_info(\"version " << version
        << "\")\n  return slurm.SUCCESS, nil\nend\n";
    std::filesystem::rename(script + ".new", script);
  };
  CallRequest req = request("returns_normally");
  req.script = script;
  for (int version = 1; version <= 3; ++version) {
    write(version);
    CallResult r = c.run(req);
    ASSERT_EQ(r.outcome.kind, OutcomeKind::Returned) << describe(r.outcome);
    // The supervisor validates a changed script first (script_guard.hpp) and
    // says so on the call that saw the change; the call runs the new version.
    std::vector<std::string> script_lines;
    int notices = 0;
    for (const std::string &l : r.logs)
      if (l.find(" changed (content ") != std::string::npos)
        ++notices;
      else
        script_lines.push_back(l);
    ASSERT_EQ(script_lines, (std::vector<std::string>{"version " + std::to_string(version)}));
    EXPECT_EQ(notices, version == 1 ? 0 : 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Prestart, ScriptOnDisk,
                         ::testing::Combine(::testing::Values(0u, 2u), ::testing::Bool()));

/// Whether `pid` is a fork server (its command line says --fork-server).
bool is_fork_server(pid_t pid) {
  return switchlua::test::proc_cmdline(pid).find("--fork-server") != std::string::npos;
}

/// Direct children of process `pid` (/proc/PID/task/PID/children) but the
/// fork server: the runners.
std::set<pid_t> children_of(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/task/{}/children", pid, pid));
  std::set<pid_t> out;
  for (pid_t child; f >> child;)
    if (!is_fork_server(child))
      out.insert(child);
  return out;
}

/// Waits (at most 10 s) until the children of `pid` are `n` processes,
/// `done(children)` holds and the set stays the same for 200 ms (a call's
/// runner may still be there, unreaped, just after its outcome, and the
/// refill follows its reap); returns the last children read.
std::set<pid_t> wait_children(
    pid_t pid, std::size_t n,
    const std::function<bool(const std::set<pid_t> &)> &done = [](const std::set<pid_t> &) {
      return true;
    }) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  std::set<pid_t> now = children_of(pid);
  while (std::chrono::steady_clock::now() < until) {
    if (now.size() == n && done(now)) {
      std::this_thread::sleep_for(200ms);
      if (children_of(pid) == now)
        return now;
    } else {
      std::this_thread::sleep_for(10ms);
    }
    now = children_of(pid);
  }
  return now;
}

// A runner started ahead of demand is replaced once a call's outcome has
// gone out, never while the call that took it runs: a runner's start
// (vfork, exec, the dynamic loader) would compete with that call on the
// critical path of srun's first readiness poll (server.hpp).
TEST(Prestart, IdleRunnersAreToppedUpAfterTheOutcomeNotDuringTheCall) {
  ClientOptions o = default_options();
  o.prestart = 2;
  SyncClient c(o);
  ASSERT_EQ(c.run(request("returns_normally")).outcome.kind, OutcomeKind::Returned);
  const pid_t sup = c.client().supervisor_pid(); // started with the first call
  ASSERT_GT(sup, 0);
  const std::set<pid_t> idle = wait_children(sup, 2);
  ASSERT_EQ(idle.size(), 2u) << "two idle runners after the first call";
  Gate gate; // closed: the call waits
  const CallId id = c.submit(gated(gate.path(), Hook::JobStart, true));
  ASSERT_TRUE(c.wait_for_log(id, "start"));
  std::this_thread::sleep_for(300ms); // ample for a refill to have happened
  EXPECT_EQ(children_of(sup), idle) << "the running call's runner and one idle runner";
  gate.open();
  auto r = c.wait(id, 60s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
  // The outcome may go out before the call's runner is reaped (an early
  // outcome): wait for two runners that are not the two of before, i.e. the
  // call's runner gone and a new one started.
  const std::set<pid_t> after =
      wait_children(sup, 2, [&](const std::set<pid_t> &now) { return now != idle; });
  EXPECT_EQ(after.size(), 2u) << "topped up to two idle runners after the call";
  EXPECT_NE(after, idle) << "the call's runner is gone and a new one runs";
}

// Issue 40: the supervisor runs on while its slurmctld is stopped; once
// another slurmctld has taken control (a greater epoch in the epoch file), a
// queued call of the old epoch is not started, and says why.
TEST(Lanes, QueuedCallsOfAnOlderEpochAreNotStartedOnceAnotherControllerTookControl) {
  ClientOptions o = default_options();
  o.max_concurrent = 1;
  SyncClient c(o);
  Gate gate;
  char tmpl[] = "/tmp/switchlua-epoch-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string epoch_file = dir + "/switch_lua.journal.epoch";
  auto write_epoch = [&](int n) { // replaced by rename, as the controller does
    std::ofstream(epoch_file + ".new") << n << "\n";
    std::filesystem::rename(epoch_file + ".new", epoch_file);
  };
  auto in_epoch = [&](CallRequest r, std::uint64_t e) {
    r.epoch = e;
    r.epoch_file = epoch_file;
    return r;
  };
  write_epoch(1);
  const CallId running = c.submit(in_epoch(gated(gate.path(), Hook::JobStart, true), 1));
  ASSERT_TRUE(wait_started_logs(c, {running}, 1));
  const CallId setup = c.submit(in_epoch(gated("/", Hook::JobStart, true), 1));
  const CallId teardown = c.submit(in_epoch(gated("/", Hook::JobComplete, true), 1));
  const CallId current = c.submit(in_epoch(gated("/", Hook::JobStart, true), 2));
  std::this_thread::sleep_for(200ms); // all three reach the supervisor's lanes first
  write_epoch(2);                     // another slurmctld took control
  std::vector<std::string> lines;
  std::mutex mu;
  c.set_log_observer([&](CallId, const std::string &l) {
    std::lock_guard g(mu);
    lines.push_back(l);
  });
  gate.open();
  auto r = c.wait(running, 60s); // started before the takeover: not recalled
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome.kind, OutcomeKind::Returned) << describe(r->outcome);
  for (CallId id : {setup, teardown}) {
    auto f = c.wait(id, 30s);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->outcome.kind, OutcomeKind::SpawnFailed) << describe(f->outcome);
    EXPECT_EQ(f->outcome.message, fmt::format("not started: {} says epoch 2, this call's is 1: "
                                              "a later period of control began",
                                              epoch_file));
  }
  auto k = c.wait(current, 30s); // submitted in the epoch in control: runs
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->outcome.kind, OutcomeKind::Returned) << describe(k->outcome);
  EXPECT_EQ(c.started_order(), (std::vector<CallId>{running, current}));
  {
    std::lock_guard g(mu);
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [](const std::string &l) {
                              return l.find("queued calls of epoch 1 not started") !=
                                     std::string::npos;
                            }),
              1)
        << "one line per takeover";
  }
  // A missing epoch file never fences: the controller in control goes on.
  std::filesystem::remove(epoch_file);
  auto m = c.run(in_epoch(gated("/", Hook::JobStart, true), 1));
  EXPECT_EQ(m.outcome.kind, OutcomeKind::Returned) << describe(m.outcome);
  std::filesystem::remove_all(dir);
}
