// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller engine (ctld/core.hpp CtldCore) from slurmctld's side:
// events in (job_start, job_complete, retry ticks), actions out through a
// fake Slurm port, with the real supervisor and runner running
// test/fixtures/core_flow.lua.  One behaviour of switch.lua(5) per test;
// the state machine's rules alone are tested in test/unit/ctld.
#include "ctld/core.hpp"
#include "fake_slurm.hpp"
#include "harness.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace switchlua;
using switchlua::test::FakeSlurm;
using switchlua::test::settle;
namespace fs = std::filesystem;

namespace {

CoreOptions options() {
  CoreOptions o;
  o.script = test::fixture("core_flow");
  o.client = test::default_options();
  o.block_job_complete = true;              // as the fixture answers
  o.retry_interval = std::chrono::hours(1); // retries only through retry_now()
  return o;
}

JobArgs job(std::uint32_t id, const std::string &name, std::string network = "fabric") {
  JobArgs j;
  j.job_id = id;
  j.name = name;
  j.nodes = "node[1-2]";
  j.node_names = {"node1", "node2"};
  j.num_nodes = 2;
  j.network = std::move(network);
  j.submit_time = 1000 + id;
  j.batch = true;
  return j;
}

bool in_state(CtldCore &core, std::uint32_t id, JobState st) {
  auto s = core.state_of(id);
  return s && s->state == st;
}

} // namespace

TEST(CoreFlow, JobWithoutNetworkIsNotManaged) {
  FakeSlurm slurm;
  CtldCore core(options(), slurm);
  JobArgs j = job(1, "ok");
  j.network.reset();
  EXPECT_FALSE(core.job_start(j, true));
  EXPECT_FALSE(core.state_of(1));
  EXPECT_EQ(core.calls_in_flight(), 0u);
  EXPECT_TRUE(slurm.all_actions().empty());
}

TEST(CoreFlow, SetupThatAcceptsEndsConfiguringAndTheTeardownReleasesNothingHeld) {
  FakeSlurm slurm;
  CtldCore core(options(), slurm);
  ASSERT_TRUE(core.job_start(job(2, "ok"), true));
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 2, JobState::Running); }))
      << slurm.all_logs();
  EXPECT_EQ(slurm.all_actions(), std::vector<std::string>{"end_configuring 2"});
  core.job_complete(2);
  ASSERT_TRUE(settle(core, [&] { return !core.state_of(2); })) << slurm.all_logs();
  // block_job_complete: the nodes were held during the teardown, then released.
  EXPECT_EQ(slurm.reason_of("hold 2"), "node[1-2] nodes held");
  EXPECT_EQ(slurm.reason_of("release 2"), "node[1-2] nodes released");
  EXPECT_TRUE(slurm.logged("torn down ok")) << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("drain")) << slurm.all_logs();
}

TEST(CoreFlow, DeclinedSetupIsForgottenAndItsEndRunsNoTeardown) {
  FakeSlurm slurm;
  CtldCore core(options(), slurm);
  ASSERT_TRUE(core.job_start(job(3, "decline"), true));
  ASSERT_TRUE(settle(core, [&] { return slurm.did("end_configuring 3"); })) << slurm.all_logs();
  core.job_complete(3);
  settle(core, [&] { return !core.state_of(3); });
  EXPECT_FALSE(slurm.logged("torn down")) << slurm.all_logs();
  EXPECT_FALSE(slurm.did("hold 3"));
}

// From the moment slurmctld begins to stop (Slurm 25.05 and later close the
// accounting storage then, before switch_p_save), a call's result is not
// applied: the teardown that ends now releases nothing (a release would call
// into Slurm) and stays outstanding for the next slurmctld (e2e t0911 on
// 25.05.8: the backup handing control back crashed in that release).
TEST(CoreFlow, NoResultIsAppliedOnceSlurmctldStops) {
  FakeSlurm slurm;
  CtldCore core(options(), slurm);
  ASSERT_TRUE(core.job_start(job(9, "slowend"), true));
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 9, JobState::Running); }));
  core.job_complete(9); // its job_complete takes 0.3 s
  ASSERT_TRUE(settle(core, [&] { return slurm.did("hold 9") && core.calls_in_flight() == 1; }))
      << slurm.all_logs();
  slurm.is_stopping = true;
  ASSERT_TRUE(settle(core, [&] { return slurm.logged("TeardownResult not applied"); }))
      << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged("slurmctld is stopping: no call's result"), 1) << slurm.all_logs();
  EXPECT_FALSE(slurm.did("release 9")) << slurm.all_logs();
  EXPECT_TRUE(in_state(core, 9, JobState::TeardownRunning)) << slurm.all_logs();
}

TEST(CoreFlow, FailedSetupRequeuesABatchJobThatMayBeRequeued) {
  FakeSlurm slurm;
  CtldCore core(options(), slurm);
  ASSERT_TRUE(core.job_start(job(4, "fail"), true));
  ASSERT_TRUE(settle(core, [&] { return slurm.did("requeue 4"); })) << slurm.all_logs();
  EXPECT_EQ(slurm.reason_of("requeue 4"),
            "switch setup failed: switch/lua job_start returned rc=-1");
  EXPECT_FALSE(slurm.did("cancel 4"));
}

TEST(CoreFlow, FailedSetupCancelsAJobThatMayNotBeRequeued) {
  FakeSlurm slurm;
  CtldCore core(options(), slurm);
  ASSERT_TRUE(core.job_start(job(5, "fail"), false));
  ASSERT_TRUE(settle(core, [&] { return slurm.did("cancel 5"); })) << slurm.all_logs();
  EXPECT_EQ(slurm.reason_of("cancel 5"),
            "switch setup failed: switch/lua job_start returned rc=-1");
  EXPECT_FALSE(slurm.did("requeue 5"));
}

TEST(CoreFlow, TeardownEagainKeepsTheNodesHeldUntilARetrySucceeds) {
  FakeSlurm slurm;
  CtldCore core(options(), slurm);
  std::string marker = (fs::temp_directory_path() / "swl-core-flow-again").string();
  std::ofstream(marker) << "busy\n";
  ASSERT_TRUE(core.job_start(job(6, "again", marker), true));
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 6, JobState::Running); }));
  core.job_complete(6);
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 6, JobState::TeardownRetryWait); }))
      << slurm.all_logs();
  EXPECT_TRUE(slurm.did("hold 6"));
  EXPECT_FALSE(slurm.did("release 6")) << "released while the teardown said EAGAIN";
  core.retry_now(); // still EAGAIN: still held
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 6, JobState::TeardownRetryWait); }));
  EXPECT_FALSE(slurm.did("release 6"));
  fs::remove(marker);
  core.retry_now();
  ASSERT_TRUE(settle(core, [&] { return !core.state_of(6); })) << slurm.all_logs();
  EXPECT_EQ(slurm.reason_of("release 6"), "node[1-2] nodes released");
  EXPECT_FALSE(slurm.did_starting("drain")) << slurm.all_logs();
}

TEST(CoreFlow, FailedTeardownDrainsTheJobsNodesWithAReasonSayingSo) {
  FakeSlurm slurm;
  CtldCore core(options(), slurm);
  ASSERT_TRUE(core.job_start(job(7, "broken"), true));
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 7, JobState::Running); }));
  core.job_complete(7);
  ASSERT_TRUE(settle(core, [&] { return !core.state_of(7); })) << slurm.all_logs();
  EXPECT_TRUE(slurm.did("drain node[1-2]: switch teardown failed: JobId=7 switch/lua "
                        "job_complete returned rc=-1"))
      << testing::PrintToString(slurm.all_actions());
  EXPECT_TRUE(slurm.did("release 7")) << "the drained nodes are no longer held by the job";
}

namespace {

/// The core with switch_interactive_wait=`ms`, its supervisor already
/// started (by one setup run to its end), so a wait measures a call alone.
/// An interactive wait (ms) far above the setting's range (100), so that a
/// quick setup is over within it however loaded the machine is: the tests
/// check which path a result takes, never how fast it comes.
constexpr std::uint32_t kAnyLoad = 20000;

std::unique_ptr<CtldCore> warm_core(FakeSlurm &slurm, std::uint32_t ms) {
  CoreOptions o = options();
  o.config.interactive_wait_ms = ms;
  auto core = std::make_unique<CtldCore>(o, slurm);
  EXPECT_TRUE(core->job_start(job(99, "ok"), true));
  EXPECT_TRUE(settle(*core, [&] { return in_state(*core, 99, JobState::Running); }));
  return core;
}

JobArgs interactive(std::uint32_t id, const std::string &name) {
  JobArgs j = job(id, name);
  j.batch = false;
  return j;
}

/// switch_p_job_start of interactive job `id` as select_nodes() runs it,
/// Slurm's locks held: job_start, then settle_setup(), whose answer it
/// returns.
bool start_interactive(FakeSlurm &slurm, CtldCore &core, std::uint32_t id,
                       const std::string &name) {
  std::lock_guard locks(slurm);
  EXPECT_TRUE(core.job_start(interactive(id, name), false));
  return core.settle_setup(id);
}

} // namespace

TEST(CoreFlow, AnInteractiveSetupOverWithinTheWaitIsAppliedBeforeTheAllocationIsAnswered) {
  FakeSlurm slurm;
  auto core = warm_core(slurm, kAnyLoad);
  slurm.lock(); // as select_nodes() holds Slurm's locks around switch_p_job_start
  ASSERT_TRUE(core->job_start(interactive(20, "ok"), false));
  const bool settled = core->settle_setup(20);
  const bool running = in_state(*core, 20, JobState::Running);
  slurm.unlock();
  EXPECT_TRUE(settled) << slurm.all_logs();
  EXPECT_TRUE(running);
  EXPECT_TRUE(slurm.did("end_configuring 20"));
  EXPECT_TRUE(slurm.logged("job_start accepted the job")) << slurm.all_logs();
  EXPECT_EQ(core->drain_events(), 0u) << "the outcome was applied once, not queued again";
}

TEST(CoreFlow, AFailedInteractiveSetupIsLeftToTheWorkerOutsideSelectNodes) {
  FakeSlurm slurm;
  auto core = warm_core(slurm, kAnyLoad);
  slurm.lock();
  ASSERT_TRUE(core->job_start(interactive(21, "fail"), false));
  EXPECT_FALSE(core->settle_setup(21));
  EXPECT_FALSE(slurm.did("cancel 21")); // never inside switch_p_job_start
  slurm.unlock();
  ASSERT_TRUE(settle(*core, [&] { return slurm.did("cancel 21"); })) << slurm.all_logs();
}

TEST(CoreFlow, AWaitThatRunsOutMakesTheNextInteractiveJobsSkipItUntilASetupIsQuickAgain) {
  FakeSlurm slurm;
  auto core = warm_core(slurm, 1);
  auto ran_out = [&] { return slurm.count_logged("not over within switch_interactive_wait"); };
  auto set_wait = [&](std::uint32_t ms) {
    CtldConfig c = core->config();
    c.interactive_wait_ms = ms;
    core->set_config(c);
  };
  EXPECT_FALSE(start_interactive(slurm, *core, 22, "slow")); // 1 ms, the setup takes 0.3 s
  EXPECT_EQ(ran_out(), 1) << slurm.all_logs();
  set_wait(100);
  // Skipped: no wait, so no second "not over" line, though 0.3 s > 100 ms;
  // and 0.3 s is not quick: the skipping goes on.
  EXPECT_FALSE(start_interactive(slurm, *core, 23, "slow"));
  EXPECT_EQ(ran_out(), 1) << slurm.all_logs();
  // Both slow results in, judged against 100 ms (a result is judged by the
  // wait in force when it arrives).
  ASSERT_TRUE(settle(
      *core, [&] { return slurm.did("end_configuring 22") && slurm.did("end_configuring 23"); }));
  // kAnyLoad: now a setup of 0.3 s is over within the wait, however loaded
  // the machine is.  Job 24 is still skipped (its settle comes right after
  // its job_start, 0.3 s before its result; an instant setup could report
  // first and end the skipping before its own settle), and its result then
  // ends the skipping.
  set_wait(kAnyLoad);
  EXPECT_FALSE(start_interactive(slurm, *core, 24, "slow")) << slurm.all_logs();
  ASSERT_TRUE(settle(*core, [&] { return slurm.did("end_configuring 24"); }));
  EXPECT_TRUE(start_interactive(slurm, *core, 25, "ok")) << "the wait is tried again";
  EXPECT_EQ(ran_out(), 1) << slurm.all_logs();
}

TEST(CoreFlow, AnInteractiveWaitOfZeroNeverWaits) {
  FakeSlurm slurm;
  auto core = warm_core(slurm, 0);
  EXPECT_FALSE(start_interactive(slurm, *core, 23, "ok"));
  ASSERT_TRUE(settle(*core, [&] { return in_state(*core, 23, JobState::Running); }));
}
