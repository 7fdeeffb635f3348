// SPDX-License-Identifier: GPL-2.0-or-later
//
// Issue 20, the fabric breaker (switch.lua(5), Fabric outages): a fabric
// outage must not drain every node that ends a job while it lasts.  With
// the real supervisor and test/fixtures/fabric_outage.lua, whose fabric is
// down while a file exists.
#include "ctld/core.hpp"
#include "fake_slurm.hpp"
#include "harness.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <thread>

using namespace switchlua;
using switchlua::test::admit_locked;
using switchlua::test::FakeSlurm;
using switchlua::test::settle;
namespace fs = std::filesystem;

namespace {

using switchlua::test::TempDir;

CoreOptions options(std::uint32_t breaker_failures) {
  CoreOptions o;
  o.script = test::fixture("fabric_outage");
  o.client = test::default_options();
  o.block_job_complete = true; // as the fixture answers
  o.retry_interval = std::chrono::hours(1);
  o.config.breaker_failures = breaker_failures;
  o.config.max_setup_failures = 1; // a failure counted would hold the job
  return o;
}

JobArgs job(std::uint32_t id, const TempDir &d, const std::string &name = "job") {
  JobArgs j;
  j.job_id = id;
  j.name = name;
  j.nodes = fmt::format("node{}", id);
  j.node_names = {j.nodes.value()};
  j.num_nodes = 1;
  j.network = (d.dir / "fabric-down").string();
  j.submit_time = 1000 + id;
  j.batch = true;
  return j;
}

bool in_state(CtldCore &core, std::uint32_t id, JobState st) {
  auto s = core.state_of(id);
  return s && s->state == st;
}

/// settle() for longer: a kept teardown's first back-off is 5 s.
template <class F> bool settle_long(CtldCore &core, F done) {
  for (int i = 0; i < 3; ++i)
    if (settle(core, done))
      return true;
  return false;
}

} // namespace

TEST(FabricBreaker, NFailedTeardownsOpenItTheRestAreKeptAndCompleteWhenTheFabricReturns) {
  TempDir d;
  FakeSlurm slurm;
  CtldCore core(options(3), slurm);
  for (std::uint32_t id = 1; id <= 6; ++id) {
    ASSERT_TRUE(core.job_start(job(id, d), true));
    ASSERT_TRUE(settle(core, [&] { return in_state(core, id, JobState::Running); }))
        << slurm.all_logs();
  }
  std::ofstream((d.dir / "fabric-down")) << "down";
  for (std::uint32_t id = 1; id <= 6; ++id) {
    core.job_complete(id);
    ASSERT_TRUE(settle(core, [&] {
      return !core.state_of(id) || in_state(core, id, JobState::TeardownRetryWait);
    })) << slurm.all_logs();
  }
  // The two failures before it opened drained as usual; the third opened it.
  EXPECT_TRUE(slurm.did_starting("drain node1"));
  EXPECT_TRUE(slurm.did_starting("drain node2"));
  for (std::uint32_t id = 3; id <= 6; ++id) {
    EXPECT_FALSE(slurm.did_starting(fmt::format("drain node{}", id))) << slurm.all_logs();
    EXPECT_TRUE(in_state(core, id, JobState::TeardownRetryWait)) << id << slurm.all_logs();
  }
  EXPECT_EQ(slurm.count_logged("fabric breaker OPEN: 3 teardowns of different jobs failed "
                               "within 60 s"),
            1)
      << slurm.all_logs();
  EXPECT_TRUE(core.stats().breaker_open);
  // A setup that fails meanwhile names the outage and is not counted.
  ASSERT_TRUE(core.job_start(job(7, d), true));
  ASSERT_TRUE(settle(core, [&] { return slurm.did_starting("requeue 7"); })) << slurm.all_logs();
  EXPECT_NE(slurm.reason_of("requeue 7").find("the fabric is unavailable"), std::string::npos)
      << slurm.reason_of("requeue 7");
  EXPECT_FALSE(slurm.did_starting("requeue_held")) << slurm.all_logs();
  // The fabric returns: the kept teardowns complete, their nodes come back.
  fs::remove((d.dir / "fabric-down"));
  ASSERT_TRUE(settle_long(core, [&] {
    for (std::uint32_t id = 3; id <= 6; ++id)
      if (core.state_of(id))
        return false;
    return true;
  })) << slurm.all_logs();
  for (std::uint32_t id = 3; id <= 6; ++id) {
    EXPECT_TRUE(slurm.did(fmt::format("release {}", id))) << slurm.all_logs();
    EXPECT_FALSE(slurm.did_starting(fmt::format("drain node{}", id))) << slurm.all_logs();
  }
  EXPECT_EQ(slurm.count_logged("fabric breaker closed"), 1) << slurm.all_logs();
  EXPECT_FALSE(core.stats().breaker_open);
  EXPECT_EQ(core.stats().breaker_opens, 1u);
}

TEST(FabricBreaker, AScriptThatSaysFabricDownOpensItAtOnceAndNothingIsDrained) {
  TempDir d;
  FakeSlurm slurm;
  CtldCore core(options(0), slurm); // only slurm.FABRIC_DOWN opens it
  for (std::uint32_t id = 1; id <= 2; ++id) {
    ASSERT_TRUE(core.job_start(job(id, d, "says"), true));
    ASSERT_TRUE(settle(core, [&] { return in_state(core, id, JobState::Running); }))
        << slurm.all_logs();
  }
  std::ofstream((d.dir / "fabric-down")) << "down";
  for (std::uint32_t id = 1; id <= 2; ++id) {
    core.job_complete(id);
    ASSERT_TRUE(settle(core, [&] { return in_state(core, id, JobState::TeardownRetryWait); }))
        << slurm.all_logs();
  }
  EXPECT_FALSE(slurm.did_starting("drain")) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("fabric breaker OPEN: JobId=1 job_complete returned "
                           "slurm.FABRIC_DOWN"))
      << slurm.all_logs();
  fs::remove((d.dir / "fabric-down"));
  ASSERT_TRUE(settle_long(core, [&] { return !core.state_of(1) && !core.state_of(2); }))
      << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("drain")) << slurm.all_logs();
  EXPECT_TRUE(slurm.did("release 1"));
  EXPECT_TRUE(slurm.did("release 2"));
}

// Slurm 25.11+ (the test_only call): while the breaker is open a new job
// waits PENDING (one line), one job every breaker_probe is let through to
// probe the fabric, and its success closes the breaker and asks Slurm to
// schedule the jobs that waited.
TEST(FabricBreaker, WhileItIsOpenNewJobsWaitPendingAndOneProbesTheFabric) {
  TempDir d;
  FakeSlurm slurm;
  CoreOptions o = options(0);
  o.breaker_probe = std::chrono::milliseconds(300);
  CtldCore core(o, slurm);
  ASSERT_TRUE(core.job_start(job(1, d, "says"), true));
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 1, JobState::Running); }))
      << slurm.all_logs();
  EXPECT_TRUE(admit_locked(core, slurm, 2)) << "closed: every job is admitted";
  std::ofstream((d.dir / "fabric-down")) << "down";
  core.job_complete(1);
  ASSERT_TRUE(settle(core, [&] { return slurm.logged("fabric breaker OPEN"); }))
      << slurm.all_logs();
  auto admit = [&](std::uint32_t id) { return admit_locked(core, slurm, id); };
  EXPECT_FALSE(admit(2));
  EXPECT_FALSE(admit(2));
  EXPECT_EQ(1, slurm.count_logged("JobId=2 job_start waits: the job stays PENDING "
                                  "(Reason=Resources) until the fabric breaker closes: JobId=1 "
                                  "job_complete returned slurm.FABRIC_DOWN"))
      << slurm.all_logs();
  ASSERT_TRUE(settle(core, [&] { return admit(2); })) << "the probe, after breaker_probe";
  EXPECT_TRUE(slurm.logged("JobId=2 job_start runs to probe the fabric while the fabric breaker "
                           "is open (one job every 0.3 s; its success closes the breaker)"))
      << slurm.all_logs();
  EXPECT_FALSE(admit(3)) << "one probe per breaker_probe";
  fs::remove(d.dir / "fabric-down");
  ASSERT_TRUE(core.job_start(job(2, d), true));
  ASSERT_TRUE(settle(core, [&] { return slurm.logged("fabric breaker closed"); }))
      << slurm.all_logs();
  EXPECT_GE(slurm.schedules.load(), 1) << "job 3 waited for the breaker";
  EXPECT_TRUE(admit(3));
}

// Issue 20, a node DOWN and back during a held teardown: Slurm's DOWN path
// ends the node's COMPLETING state and ReturnToService gives it back, so
// its scheduler can allocate it to another job while our teardown still
// holds it.  That job waits in CONFIGURING without job_start until the
// teardown has reported (R_SETUP_WAIT_HELD, R_SETUP_AFTER_HELD); a job on
// other nodes is not held up.
TEST(FabricBreaker, AJobGivenANodeThatAKeptTeardownHoldsWaitsUntilThatTeardownReported) {
  TempDir d;
  FakeSlurm slurm;
  CtldCore core(options(0), slurm);
  JobArgs a = job(1, d, "says");
  a.nodes = "node[1-2]";
  a.node_names = {"node1", "node2"};
  a.num_nodes = 2;
  ASSERT_TRUE(core.job_start(a, true));
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 1, JobState::Running); }))
      << slurm.all_logs();
  std::ofstream((d.dir / "fabric-down")) << "down";
  core.job_complete(1);
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 1, JobState::TeardownRetryWait); }))
      << slurm.all_logs();
  ASSERT_TRUE(core.state_of(1)->nodes_held);
  // Job 2 is given node2, job 3 node3.
  JobArgs b = job(2, d);
  b.nodes = "node2";
  b.node_names = {"node2"};
  ASSERT_TRUE(core.job_start(b, true));
  EXPECT_TRUE(in_state(core, 2, JobState::SetupWaitOrphan)) << slurm.all_logs();
  EXPECT_EQ(core.state_of(2)->held_by, 1u);
  EXPECT_EQ(slurm.count_logged("JobId=2 job_start waits: the teardown of JobId=1 still holds one "
                               "of its nodes"),
            1)
      << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged("JobId=2 job_start started"), 0) << slurm.all_logs();
  fs::remove(
      (d.dir / "fabric-down")); // job 3's setup succeeds (a job on other nodes is not held up)
  ASSERT_TRUE(core.job_start(job(3, d), true));
  ASSERT_TRUE(settle(core, [&] { return in_state(core, 3, JobState::Running); }))
      << slurm.all_logs();
  // Job 3's setup succeeded: the breaker closes and job 1's kept teardown
  // runs again at once and succeeds; then job 2 is set up.
  ASSERT_TRUE(settle_long(core, [&] { return in_state(core, 2, JobState::Running); }))
      << slurm.all_logs();
  EXPECT_FALSE(core.state_of(1)) << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged("JobId=2 the teardown of JobId=1 has reported: running job_start "
                               "now"),
            1)
      << slurm.all_logs();
  // The order: job 1's nodes released before job 2's setup ended.
  const std::vector<std::string> acts = slurm.all_actions();
  const auto released = std::find(acts.begin(), acts.end(), "release 1");
  const auto configured = std::find(acts.begin(), acts.end(), "end_configuring 2");
  ASSERT_NE(released, acts.end()) << slurm.all_logs();
  ASSERT_NE(configured, acts.end()) << slurm.all_logs();
  EXPECT_LT(released, configured);
  const std::string logs = slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("drain")) << logs;
}
