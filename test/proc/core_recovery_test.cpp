// SPDX-License-Identifier: GPL-2.0-or-later
//
// The controller engine's recovery with its journal (switch.lua(5):
// Restart, Journal), with the real supervisor and runner and a fake Slurm:
// a setup the journal says returned is restored and not run again, an
// attempt the journal says is over is forgotten, and an attempt no job
// record carries is torn down with its own job table and jobinfo.
#include "common/content_hash.hpp"
#include "ctld/core.hpp"
#include "ctld/persist.hpp"
#include "fake_slurm.hpp"
#include "harness.hpp"
#include "supervisor/proc_scan.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sys/stat.h>
#include <thread>

using namespace switchlua;
using switchlua::test::FakeSlurm;
using switchlua::test::settle;
namespace fs = std::filesystem;

namespace {

using switchlua::test::TempDir;

CoreOptions options(const TempDir &d) {
  CoreOptions o;
  o.script = test::fixture("recovery");
  o.client = test::default_options();
  o.journal_path = d.journal();
  o.retry_interval = std::chrono::milliseconds(100);
  return o;
}

JobArgs job(std::uint32_t id, std::int64_t submit_time) {
  JobArgs j;
  j.job_id = id;
  j.nodes = "node1";
  j.node_names = {"node1"};
  j.num_nodes = 1;
  j.network = "fabric";
  j.submit_time = submit_time;
  return j;
}

/// Runs a setup to Running and returns the state Slurm would have saved
/// while it ran (SetupRunning), as a kill -9 right after the setup
/// returned leaves it.
JobSwitchState setup_then_crash(const TempDir &d, const JobArgs &j) {
  FakeSlurm slurm;
  CtldCore core(options(d), slurm);
  EXPECT_TRUE(core.job_start(j, false));
  JobSwitchState saved = *core.state_of(j.job_id);
  EXPECT_EQ(saved.state, JobState::SetupRunning);
  EXPECT_TRUE(settle(core, [&] { return core.state_of(j.job_id)->state == JobState::Running; }))
      << slurm.all_logs();
  EXPECT_TRUE(slurm.did("end_configuring 7"));
  // Slurm's saved record: decoded as after a restart.
  auto rec = decode_job_state(encode_job_state(&saved));
  EXPECT_TRUE(rec && rec->has_value());
  return **rec;
}

} // namespace

TEST(CoreRecovery, SetupThatReturnedIsRestoredAndNotLaunchedAgain) {
  TempDir d;
  JobSwitchState saved = setup_then_crash(d, job(7, 1000));
  FakeSlurm slurm;
  CtldCore core(options(d), slurm);
  core.adopt(saved);
  EXPECT_EQ(core.recover_job(7, true), Recovery::ClearConfiguring);
  auto s = core.state_of(7);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, JobState::Running);
  ASSERT_TRUE(s->jobinfo) << "restored with the jobinfo job_start returned";
  EXPECT_EQ(core.calls_in_flight(), 0u) << "job_start is not run again";
  EXPECT_TRUE(slurm.logged("JobId=7 recovery: the journal says job_start of attempt"))
      << slurm.all_logs();
  core.reconcile_journal();
  EXPECT_EQ(core.calls_in_flight(), 0u) << "the attempt is carried by the job: no orphan";
  // The job's end tears down the attempt with the same jobinfo, once.
  core.job_complete(7);
  ASSERT_TRUE(settle(core, [&] { return !core.state_of(7); }));
  EXPECT_TRUE(slurm.logged(fmt::format("complete job_id=7 submit_time=1000 attempt={} made_by={}",
                                       saved.job.attempt, saved.job.attempt)))
      << slurm.all_logs();
}

TEST(CoreRecovery, SetupReturnedButNotReleasedIsLaunchedNow) {
  TempDir d;
  JobArgs j = job(7, 1000);
  j.attempt = 555;
  {
    Journal jr(d.journal(), [](bool, const std::string &) {});
    jr.append({{.kind = JournalKind::SetupStarted,
                .attempt = 555,
                .job_id = 7,
                .submit_time = 1000,
                .job = j},
               {.kind = JournalKind::SetupAccepted,
                .attempt = 555,
                .job_id = 7,
                .submit_time = 1000,
                .jobinfo = std::string("\x81\xa1x\x01")}});
  }
  JobSwitchState saved;
  saved.state = JobState::SetupRunning;
  saved.job = j;
  saved.recovered = true;
  FakeSlurm slurm;
  {
    CtldCore core(options(d), slurm);
    core.adopt(saved);
    EXPECT_EQ(core.recover_job(7, true), Recovery::LaunchNow);
    EXPECT_EQ(core.state_of(7)->state, JobState::Running);
  }
  Journal jr(d.journal(), [](bool, const std::string &) {});
  EXPECT_TRUE(jr.table().live.at(555).launch_released) << "written before the launch";
}

TEST(CoreRecovery, AttemptTheJournalSaysIsOverIsForgotten) {
  TempDir d;
  JobArgs j = job(7, 1000);
  j.attempt = 555;
  {
    Journal jr(d.journal(), [](bool, const std::string &) {});
    jr.append({{.kind = JournalKind::SetupStarted,
                .attempt = 555,
                .job_id = 7,
                .submit_time = 1000,
                .job = j},
               {.kind = JournalKind::Forgotten, .attempt = 555, .job_id = 7, .submit_time = 1000}});
  }
  JobSwitchState saved;
  saved.state = JobState::SetupRunning;
  saved.job = j;
  FakeSlurm slurm;
  CtldCore core(options(d), slurm);
  core.adopt(saved);
  EXPECT_EQ(core.recover_job(7, true), Recovery::ClearConfiguring);
  EXPECT_FALSE(core.state_of(7));
  EXPECT_TRUE(slurm.did("forget 7"));
  EXPECT_EQ(core.calls_in_flight(), 0u);
}

// Issue 20: attempt ids are never reused when the journal was set aside.
// The corrupt journal's last write is an hour ahead of the wall clock (the
// clock was set back an hour since), and Slurm's saved state carries an
// attempt two hours ahead: the journal's records know neither, and a new
// attempt id is above both.
TEST(CoreRecovery, AttemptIdsStayAboveASetAsideJournalAndSlurmsSavedAttempts) {
  TempDir d;
  {
    std::ofstream(d.journal()) << "NOTAJRNL and not a journal either";
  }
  const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::int64_t written_us = now_us + std::int64_t{3600} * 1000000;
  struct timespec times[2] = {{.tv_sec = written_us / 1000000, .tv_nsec = 0},
                              {.tv_sec = written_us / 1000000, .tv_nsec = 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, d.journal().c_str(), times, 0), 0);
  FakeSlurm slurm;
  CtldCore core(options(d), slurm);
  bool aside = false;
  for (const auto &ent : fs::directory_iterator(d.dir))
    aside = aside || ent.path().filename().string().starts_with("switch_lua.journal.corrupt-");
  ASSERT_TRUE(aside) << "the corrupt journal was not set aside: " << slurm.all_logs();
  ASSERT_TRUE(core.job_start(job(7, 1000), false));
  const std::int64_t first = core.state_of(7)->job.attempt;
  EXPECT_GT(first, written_us - 1000000) << "an id the set-aside journal may hold";

  JobSwitchState saved;
  saved.state = JobState::Running;
  saved.job = job(8, 1001);
  saved.job.attempt = now_us + std::int64_t{7200} * 1000000;
  saved.jobinfo = std::string("\x81\xa1x\x01");
  core.adopt(saved);
  ASSERT_TRUE(core.job_start(job(9, 1002), false));
  EXPECT_GT(core.state_of(9)->job.attempt, saved.job.attempt) << "Slurm's saved attempt reused";
  EXPECT_TRUE(settle(core, [&] { return core.calls_in_flight() == 0; }));
}

TEST(CoreRecovery, AttemptWhoseJobIdBelongsToANewerJobIsTornDownWithItsOwnTable) {
  TempDir d;
  setup_then_crash(d, job(7, 1000)); // the journal has attempt A of job 7
  std::int64_t old_attempt;
  {
    Journal jr(d.journal(), [](bool, const std::string &) {});
    ASSERT_EQ(jr.table().live.size(), 1u);
    old_attempt = jr.table().live.begin()->first;
  }
  // After the restart job id 7 belongs to another job (another submit
  // time), running a setup of its own.
  FakeSlurm slurm;
  CtldCore core(options(d), slurm);
  ASSERT_TRUE(core.job_start(job(7, 2000), false));
  core.reconcile_journal();
  ASSERT_TRUE(settle(core, [&] {
    return slurm.logged("R_ORPHAN_OK") && core.state_of(7) &&
           core.state_of(7)->state == JobState::Running;
  })) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged(fmt::format("complete job_id=7 submit_time=1000 attempt={} made_by={}",
                                       old_attempt, old_attempt)))
      << slurm.all_logs();
  EXPECT_FALSE(slurm.logged("submit_time=2000")) << "the newer job is not torn down";
  Journal jr(d.journal(), [](bool, const std::string &) {});
  EXPECT_EQ(jr.table().live.count(old_attempt), 0u);
  EXPECT_EQ(jr.table().forgotten.count(old_attempt), 1u);
}

// Issue 19 item 7: an orphan's nodes cannot be held (no job record holds
// them), so its EAGAIN is a failure (switch.lua contract, job_complete
// EAGAIN): drained at once, forgotten, never run again at a periodic check.
TEST(CoreRecovery, R_ORPHAN_FAIL_AnOrphansEagainDrainsAtOnceAndIsNotRetried) {
  TempDir d;
  JobArgs old = job(7, 1000);
  old.name = "eagain";
  setup_then_crash(d, old);
  std::int64_t attempt;
  {
    Journal jr(d.journal(), [](bool, const std::string &) {});
    ASSERT_EQ(jr.table().live.size(), 1u);
    attempt = jr.table().live.begin()->first;
  }
  FakeSlurm slurm;
  CtldCore core(options(d), slurm);
  core.reconcile_journal();
  ASSERT_TRUE(settle(core, [&] { return slurm.logged("R_ORPHAN_FAIL"); })) << slurm.all_logs();
  EXPECT_TRUE(slurm.did("drain node1: switch teardown failed: JobId=7 switch/lua job_complete (job "
                        "record gone) returned slurm.EAGAIN but its nodes cannot be held (job "
                        "record gone)"))
      << slurm.all_logs();
  core.retry_now();
  core.retry_now();
  core.drain_events();
  EXPECT_EQ(slurm.count_logged("complete job_id=7 submit_time=1000"), 1) << slurm.all_logs();
  EXPECT_FALSE(slurm.logged("running it again")) << slurm.all_logs();
  Journal jr(d.journal(), [](bool, const std::string &) {});
  EXPECT_EQ(jr.table().forgotten.count(attempt), 1u);
}

namespace {

/// The supervisor the core started: our child running switch-lua-supervisor.
pid_t supervisor_child() {
  for (const ProcEntry &p : scan_processes()) {
    if (p.ppid != ::getpid())
      continue;
    std::ifstream cmdline("/proc/" + std::to_string(p.pid) + "/cmdline");
    std::string argv0;
    std::getline(cmdline, argv0, '\0');
    if (argv0.find("switch-lua-supervisor") != std::string::npos)
      return p.pid;
  }
  return 0;
}

} // namespace

// switch.lua contract, job_start timeout: the extra job_complete of a late
// setup result is "only logged", also when the job's regular teardown has
// already finished (issue 9 item 2: that result was dropped).  The late
// return is made deterministic as in late_test.cpp (supervisor stopped
// across the deadline); the late job_complete waits for a file the test
// creates once the regular teardown is over.
TEST(CoreLate, LateTeardownResultIsLoggedAfterTheRegularTeardownFinished) {
  TempDir d;
  CoreOptions o = options(d);
  o.script = test::fixture("late_teardown");
  o.config.switch_timeout = std::chrono::seconds(2);
  FakeSlurm slurm;
  CtldCore core(o, slurm);
  JobArgs j = job(8, 1000);
  const fs::path go = d.dir / "go";
  j.network = go.string();
  ASSERT_TRUE(core.job_start(j, false));
  ASSERT_TRUE(settle(core, [&] { return slurm.logged("ready"); })) << slurm.all_logs();
  const pid_t sup = supervisor_child();
  ASSERT_GT(sup, 0);
  ::kill(sup, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(3000)); // past the 2 s deadline
  ::kill(sup, SIGCONT);
  ASSERT_TRUE(settle(core, [&] { return slurm.did("cancel 8"); })) << slurm.all_logs();
  core.job_complete(8); // the regular teardown, with nil: returns at once
  ASSERT_TRUE(settle(core, [&] { return !core.state_of(8); })) << slurm.all_logs();
  std::ofstream(go) << "go\n";
  const std::string want = "switch/lua: JobId=8 job_complete for the late setup result returned "
                           "rc=-1 (only logged; nothing drained, nothing retried)";
  EXPECT_TRUE(settle(core, [&] { return slurm.logged(want); })) << slurm.all_logs();
  EXPECT_EQ(slurm.level_of(want), LogLevel::Error);
  EXPECT_FALSE(slurm.did_starting("drain ")) << slurm.all_logs();
}

// The engine feeds the counters (ctld/stats.hpp) and keeps the provenance
// of job_start's script (switch.lua(5), Provenance): two jobs set up and
// torn down with the real supervisor.
TEST(CoreStats, TwoJobsGiveTheirCountsTheStatusFileAndTheScriptHash) {
  TempDir d;
  FakeSlurm slurm;
  CoreOptions o = options(d);
  o.status_path = (d.dir / "switch_lua.status").string();
  CtldCore core(o, slurm);
  std::ifstream in(o.script, std::ios::binary);
  const std::string hash = content_hash(
      std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  for (std::uint32_t id : {7u, 8u})
    ASSERT_TRUE(core.job_start(job(id, 1000 + id), false));
  ASSERT_TRUE(settle(core, [&] {
    return core.state_of(7)->state == JobState::Running &&
           core.state_of(8)->state == JobState::Running;
  })) << slurm.all_logs();
  EXPECT_EQ(core.state_of(7)->script_hash, hash) << "kept for the stepinfo";
  EXPECT_TRUE(slurm.logged("switch/lua: JobId=7 job_start returned rc=0 with jobinfo (queued "))
      << slurm.all_logs();
  EXPECT_TRUE(slurm.logged(fmt::format(" ms; script {} content {})", o.script, hash)))
      << slurm.all_logs();
  for (std::uint32_t id : {7u, 8u})
    core.job_complete(id);
  ASSERT_TRUE(settle(core, [&] { return !core.state_of(7) && !core.state_of(8); }))
      << slurm.all_logs();
  EXPECT_TRUE(slurm.logged(fmt::format(
      "switch/lua: JobId=8 job_complete returned rc=0 (slurm.SUCCESS) (script {} content {})",
      o.script, hash)))
      << slurm.all_logs();
  const StatsSnapshot s = core.stats();
  EXPECT_EQ(s.outcomes.at("job_start").at("ok"), 2u);
  EXPECT_EQ(s.outcomes.at("job_complete").at("ok"), 2u);
  EXPECT_EQ(s.round_trip.at("job_start").count, 2u);
  EXPECT_EQ(s.lanes[static_cast<std::size_t>(Lane::Interactive)].started, 2u);
  EXPECT_EQ(s.lanes[static_cast<std::size_t>(Lane::Teardown)].started, 2u);
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.running, 0u);
  EXPECT_EQ(s.jobs, 0u);
  EXPECT_EQ(s.requeues + s.cancels + s.drains + s.retries + s.timeouts, 0u);
  core.publish_status();
  std::ifstream status(o.status_path);
  const std::string text((std::istreambuf_iterator<char>(status)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"job_start\": {\n      \"calls\": 2,"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("\"script\": \"{}\"", o.script)), std::string::npos) << text;
}

namespace {

/// One run of job 7 whose setup fails (fixture setup_fails): job_start,
/// its result, then the job_complete Slurm calls when it requeues the job.
/// Returns the action taken on the job ("requeue 7", "requeue_held 7: ...").
std::string failing_run(const TempDir &d, std::uint32_t restart_count) {
  FakeSlurm slurm;
  CoreOptions o = options(d);
  o.script = test::fixture("setup_fails");
  o.config.max_setup_failures = 3;
  CtldCore core(o, slurm); // a new core each run: as a slurmctld restart between runs
  JobArgs j = job(7, 1000 + restart_count);
  j.restart_count = restart_count;
  EXPECT_TRUE(core.job_start(j, true));
  std::string action;
  EXPECT_TRUE(settle(core, [&] {
    action = slurm.first_starting("requeue");
    return !action.empty();
  })) << slurm.all_logs();
  core.job_complete(7);
  EXPECT_TRUE(settle(core, [&] { return !core.state_of(7); })) << slurm.all_logs();
  return action;
}

} // namespace

// Issue 11: switch_max_setup_failures=3 holds the job at its third
// consecutive failed setup; the count lives in the journal, so it survives
// the restarts between the runs; after the hold it starts again.
TEST(CoreRecovery, R_SETUP_FAILURES_HELD_CountSurvivesRestartsAndStartsAgainAfterTheHold) {
  TempDir d;
  EXPECT_EQ(failing_run(d, 0), "requeue 7");
  EXPECT_EQ(failing_run(d, 1), "requeue 7");
  EXPECT_EQ(failing_run(d, 2),
            "requeue_held 7: switch setup failed 3 times (switch_max_setup_failures=3): "
            "switch/lua job_start returned rc=-1: fabric manager unreachable");
  // scontrol release: the next run (Slurm's requeue counted it) starts from 0.
  EXPECT_EQ(failing_run(d, 4), "requeue 7");
  EXPECT_EQ(failing_run(d, 5), "requeue 7");
}

// A run in between that did not fail its setup (the restart count jumps),
// or a job id reused after a crash (restart count 0 again), starts from 0.
TEST(CoreRecovery, R_SETUP_FAILURES_HELD_OnlyConsecutiveRunsCount) {
  TempDir d;
  EXPECT_EQ(failing_run(d, 0), "requeue 7");
  EXPECT_EQ(failing_run(d, 1), "requeue 7");
  EXPECT_EQ(failing_run(d, 3), "requeue 7");
  EXPECT_EQ(failing_run(d, 0), "requeue 7");
  EXPECT_EQ(failing_run(d, 1), "requeue 7");
}
