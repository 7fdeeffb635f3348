// SPDX-License-Identifier: GPL-2.0-or-later
//
// Issue 20, jobs of any size: the shipped example (conf/switch.lua) through
// the controller engine, its journal and Slurm's saved job state, with job
// tables of 3, 1,000 and 10,000 nodes ("nid00001"...).  Prints the time of
// each job_start and job_complete (submit to applied result, real
// supervisor and runner): a benchmark, not an assertion.  Asserts what must
// hold at every size: the setup is accepted, the teardown releases, nothing
// is drained, the journal reopens clean and the saved state decodes.
#include "ctld/core.hpp"
#include "ctld/journal.hpp"
#include "ctld/persist.hpp"
#include "fake_slurm.hpp"
#include "harness.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>

using namespace switchlua;
using switchlua::test::FakeSlurm;
using switchlua::test::settle;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

using switchlua::test::TempDir;

JobArgs job(std::uint32_t id, std::uint32_t n) {
  JobArgs j;
  j.job_id = id;
  j.name = "large";
  j.nodes = n == 1 ? std::string("nid00001") : fmt::format("nid[00001-{:05}]", n);
  for (std::uint32_t i = 1; i <= n; ++i)
    j.node_names.push_back(fmt::format("nid{:05}", i));
  j.num_nodes = n;
  j.network = "vni"; // the example manages these
  j.submit_time = 1000 + id;
  j.batch = true;
  return j;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

} // namespace

TEST(LargeJob, TheExampleSetsUpAndTearsDownJobsOf3To10000Nodes) {
  const fs::path example = fs::path(SWITCHLUA_FIXTURES) / ".." / ".." / "conf" / "switch.lua";
  ASSERT_TRUE(fs::exists(example)) << example;
  TempDir d;
  const std::string journal = (d.dir / "switch_lua.journal").string();
  FakeSlurm slurm;
  CoreOptions o;
  o.script = example.string();
  o.client = test::default_options();
  o.block_job_complete = true; // as the example answers
  o.retry_interval = std::chrono::hours(1);
  o.journal_path = journal;
  CtldCore core(o, slurm);
  std::uint32_t id = 100;
  std::printf("example conf/switch.lua, real supervisor and runner:\n");
  for (std::uint32_t n : {3u, 1000u, 10000u}) {
    ++id;
    const JobArgs j = job(id, n);
    auto t0 = Clock::now();
    ASSERT_TRUE(core.job_start(j, true));
    ASSERT_TRUE(settle(core,
                       [&] {
                         auto s = core.state_of(id);
                         return s && s->state == JobState::Running;
                       }))
        << n << " nodes: " << slurm.all_logs();
    const double start_ms = ms_since(t0);
    // What Slurm saves of the job and reads back after a restart.
    const JobSwitchState running = *core.state_of(id);
    auto saved = decode_job_state(encode_job_state(&running));
    ASSERT_TRUE(saved && saved->has_value()) << n << " nodes: the saved state does not decode";
    EXPECT_EQ((*saved)->job.node_names.size(), n);
    t0 = Clock::now();
    core.job_complete(id);
    ASSERT_TRUE(settle(core, [&] { return !core.state_of(id); }))
        << n << " nodes: " << slurm.all_logs();
    const double complete_ms = ms_since(t0);
    EXPECT_TRUE(slurm.did(fmt::format("release {}", id))) << slurm.all_logs();
    std::printf("  %5u nodes: job_start %7.1f ms, job_complete %7.1f ms, saved state %zu bytes\n",
                n, start_ms, complete_ms, encode_job_state(&running).size());
  }
  EXPECT_FALSE(slurm.did_starting("drain")) << slurm.all_logs();
  EXPECT_FALSE(slurm.did_starting("requeue")) << slurm.all_logs();
  // The journal the next slurmctld reads: clean, nothing set aside.
  std::string said;
  Journal again(journal, [&](bool, const std::string &l) { said += l + "\n"; });
  EXPECT_EQ(said.find("CORRUPT"), std::string::npos) << said;
  EXPECT_EQ(said.find("torn"), std::string::npos) << said;
}
