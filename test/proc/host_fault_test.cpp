// SPDX-License-Identifier: GPL-2.0-or-later
//
// Issue 20, host faults are the host's: a hook's runner that cannot be
// started is a fault of the slurmctld host, never of the job.  The fault is
// injected for real: the core's runner path names a file that does not
// exist (the supervisor's spawn fails, SpawnFailed, as it does with EAGAIN
// under a pids limit), and a copy of the real runner appears there later,
// as when the limit is lifted (a copy: the supervisor resolves a symlink).  With the real
// supervisor and test/fixtures/core_flow.lua.
#include "ctld/core.hpp"
#include "fake_slurm.hpp"
#include "harness.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

using namespace switchlua;
using switchlua::test::FakeSlurm;
using switchlua::test::settle;
namespace fs = std::filesystem;

namespace {

using switchlua::test::TempDir;

CoreOptions options(const fs::path &runner) {
  CoreOptions o;
  o.script = test::fixture("core_flow");
  o.client = test::default_options();
  o.client.runner = runner.string();
  o.block_job_complete = true; // as the fixture answers
  o.retry_interval = std::chrono::hours(1);
  o.config.max_setup_failures = 1; // any failure counted would hold the job at once
  return o;
}

JobArgs job(std::uint32_t id) {
  JobArgs j;
  j.job_id = id;
  j.name = "ok";
  j.nodes = "node[1-2]";
  j.node_names = {"node1", "node2"};
  j.num_nodes = 2;
  j.network = "fabric";
  j.submit_time = 1000 + id;
  j.batch = true;
  return j;
}

bool in_state(CtldCore &core, std::uint32_t id, JobState st) {
  auto s = core.state_of(id);
  return s && s->state == st;
}

std::uint64_t spawn_failed(const StatsSnapshot &s, const std::string &hook) {
  auto h = s.outcomes.find(hook);
  if (h == s.outcomes.end())
    return 0;
  auto c = h->second.find("spawn_failed");
  return c == h->second.end() ? 0 : c->second;
}

} // namespace

TEST(HostFault, ASetupWhoseRunnerCannotStartWaitsAndRunsOnceItCan) {
  TempDir d;
  const fs::path runner = d.dir / "switch-lua-runner";
  FakeSlurm slurm;
  CtldCore core(options(runner), slurm);
  ASSERT_TRUE(core.job_start(job(7), true));
  // At least two failed starts (250 ms apart): the job keeps waiting.
  ASSERT_TRUE(settle(core, [&] { return spawn_failed(core.stats(), "job_start") >= 2; }))
      << slurm.all_logs();
  EXPECT_TRUE(in_state(core, 7, JobState::SetupRunning)) << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("requeue")) << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("cancel")) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("job_start could not be started")) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("a fault of this host, not of the job")) << slurm.all_logs();
  // One line per 10 s: the second fault is counted, not logged.
  EXPECT_EQ(slurm.count_logged("a fault of this host"), 1) << slurm.all_logs();
  // The limit is lifted.
  fs::copy_file(SWITCHLUA_RUNNER_PATH, runner);
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 7, JobState::Running); }))
      << slurm.all_logs();
  EXPECT_TRUE(slurm.did("end_configuring 7"));
  EXPECT_FALSE(slurm.did_starting("requeue")) << slurm.all_logs();
  EXPECT_GE(core.stats().host_faults, 2u);
}

TEST(HostFault, ATeardownWhoseRunnerCannotStartKeepsTheNodesHeldAndIsNeverADrain) {
  TempDir d;
  const fs::path runner = d.dir / "switch-lua-runner";
  fs::copy_file(SWITCHLUA_RUNNER_PATH, runner);
  FakeSlurm slurm;
  CoreOptions o = options(runner);
  o.config.switch_retries = 1; // host faults do not spend it
  CtldCore core(o, slurm);
  ASSERT_TRUE(core.job_start(job(8), true));
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 8, JobState::Running); }))
      << slurm.all_logs();
  fs::remove(runner);
  // The supervisor keeps idle runners started in advance: setups of other
  // jobs use them up, until one cannot start.
  for (std::uint32_t id = 20; id < 24; ++id)
    ASSERT_TRUE(core.job_start(job(id), true));
  ASSERT_TRUE(settle(core, [&] { return spawn_failed(core.stats(), "job_start") >= 1; }))
      << slurm.all_logs();
  core.job_complete(8);
  ASSERT_TRUE(settle(core, [&] { return spawn_failed(core.stats(), "job_complete") >= 3; }))
      << slurm.all_logs();
  EXPECT_TRUE(core.state_of(8)) << "the teardown was given up: " << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("drain")) << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("release")) << "the nodes went back untorn-down";
  EXPECT_TRUE(slurm.did_starting("hold 8"));
  fs::copy_file(SWITCHLUA_RUNNER_PATH, runner);
  ASSERT_TRUE(settle(core, [&] { return !core.state_of(8); })) << slurm.all_logs();
  EXPECT_TRUE(slurm.did_starting("release 8"));
  EXPECT_FALSE(slurm.did_starting("drain")) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("torn down ok")) << slurm.all_logs();
}

TEST(HostFault, AfterSwitchTimeoutTheSetupIsRequeuedButNeverCountedAgainstTheJob) {
  TempDir d;
  const fs::path runner = d.dir / "switch-lua-runner";
  FakeSlurm slurm;
  CoreOptions o = options(runner);
  o.config.switch_timeout = std::chrono::seconds(1);
  CtldCore core(o, slurm);
  ASSERT_TRUE(core.job_start(job(9), true));
  ASSERT_TRUE(settle(core, [&] { return slurm.did_starting("requeue"); })) << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("requeue_held"))
      << "counted toward switch_max_setup_failures=1: " << slurm.all_logs();
  EXPECT_NE(slurm.reason_of("requeue 9").find("a fault of the slurmctld host"), std::string::npos)
      << slurm.all_logs();
}

namespace {
/// The pid of this process's child switch-lua-supervisor, 0 if none.
pid_t supervisor_child() {
  for (const auto &e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos)
      continue;
    const std::string comm = line.substr(open + 1, close - open - 1);
    int ppid = 0;
    char state = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) != 2)
      continue;
    if (ppid == ::getpid() && comm.starts_with("switch-lua-sup"))
      return static_cast<pid_t>(std::stoi(name));
  }
  return 0;
}
} // namespace

// Issue 20: the calls of a supervisor that the watchdog replaces are undone
// and run again on the new one (R_START_LOST, then R_UNDO_OK), not failed
// to their jobs (before: "switch setup timed out ... abandoned", a requeue).
TEST(HostFault, AJobStartLostWithAStoppedSupervisorIsUndoneAndRunAgainNotRequeued) {
  FakeSlurm slurm;
  CoreOptions o = options(SWITCHLUA_RUNNER_PATH);
  CtldCore core(o, slurm);
  TempDir d;
  JobArgs j = job(30);
  j.name = "hang"; // core_flow.lua: job_start sleeps 30 s while the file exists
  j.network = (d.dir / "hang").string();
  std::ofstream(*j.network) << "hang";
  ASSERT_TRUE(core.job_start(j, true));
  pid_t sup = 0;
  for (int i = 0; i < 200 && !(sup = supervisor_child()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GT(sup, 0) << "no supervisor child found";
  std::this_thread::sleep_for(std::chrono::milliseconds(300)); // the call is running
  ASSERT_EQ(::kill(sup, SIGSTOP), 0);
  fs::remove(*j.network); // the job_start run again returns at once
  // The watchdog (5 s) replaces it; the undo and the new job_start run on
  // the new one.
  bool running = false;
  for (int i = 0; i < 3 && !running; ++i)
    running = settle(core, [&] { return in_state(core, 30, JobState::Running); });
  EXPECT_TRUE(running) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("(R_START_LOST)")) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("(R_UNDO_OK)")) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("the supervisor that ran it is gone (replaced)")) << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("requeue")) << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("cancel")) << slurm.all_logs();
  ::kill(sup, SIGCONT);
}
