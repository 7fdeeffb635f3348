// SPDX-License-Identifier: GPL-2.0-or-later
//
// Two controllers on one StateSaveLocation (issue 24; switch_lua.conf(5),
// HIGH AVAILABILITY), with the real supervisor and runner and a fake Slurm
// each: only the core holding control reads and writes the journal, a
// standby's start and restart change nothing, each takeover reads the
// journal as the other controller left it (A->B->A->B), a second writer
// fences the first out loudly, and a reconfigure's new process that dies after the
// plugin's init (or after it took control) loses nothing.
#include "core_testing.hpp"
#include "ctld/core.hpp"
#include "ctld/persist.hpp"
#include "fake_slurm.hpp"
#include "harness.hpp"
#include "supervisor/results_log.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace switchlua;
using switchlua::test::FakeSlurm;
using switchlua::test::settle;
namespace fs = std::filesystem;

namespace {

using switchlua::test::TempDir;

/// A controller that holds control from its start (`in_control`), or a
/// standby / a reconfigure's new process that only ran the plugin's init.
CoreOptions options(const TempDir &d, bool in_control) {
  return test::ha_core_options(d, in_control, "recovery");
}

JobArgs job(std::uint32_t id) {
  JobArgs j;
  j.job_id = id;
  j.nodes = "node1";
  j.node_names = {"node1"};
  j.num_nodes = 1;
  j.network = "fabric";
  j.submit_time = 1000 + id;
  return j;
}

/// Starts the setup of `id` and runs it to Running; returns the state Slurm
/// saved while it ran (SetupRunning), as a crash right after leaves it.
JobSwitchState set_up(CtldCore &core, FakeSlurm &slurm, std::uint32_t id) {
  // As slurmctld calls job_start: with its locks held, which the core's
  // worker needs to apply the result.
  slurm.lock();
  EXPECT_TRUE(core.job_start(job(id), false));
  JobSwitchState saved = *core.state_of(id);
  slurm.unlock();
  EXPECT_EQ(saved.state, JobState::SetupRunning);
  EXPECT_TRUE(settle(core, [&] { return core.state_of(id)->state == JobState::Running; }))
      << slurm.all_logs();
  auto rec = decode_job_state(encode_job_state(&saved));
  EXPECT_TRUE(rec && rec->has_value());
  return **rec;
}

/// Slurm's saved record of a job that is Running with its setup's result.
JobSwitchState saved_running(CtldCore &core, std::uint32_t id) {
  JobSwitchState s = *core.state_of(id);
  auto rec = decode_job_state(encode_job_state(&s));
  EXPECT_TRUE(rec && rec->has_value());
  return **rec;
}

/// The attempts not over in the journal file as it is on disk (read
/// only: the journal may be held).
std::size_t live_on_disk(const TempDir &d) {
  std::ifstream in(d.journal(), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  JournalScan scan = scan_journal(ss.str());
  EXPECT_EQ(scan.status, JournalScan::Status::Clean) << scan.error;
  JournalTable t;
  for (const auto &r : scan.records)
    t.apply(r);
  return t.live.size();
}

std::string setups_of(std::uint32_t id) {
  return fmt::format("JobId={} job_start started", id);
}
std::string teardowns_of(std::uint32_t id) {
  return fmt::format("complete job_id={} ", id);
}

} // namespace

TEST(CoreHa, AStandbyStartAndRestartWhileThePrimaryWritesLoseNothing) {
  TempDir d;
  FakeSlurm sa, sb;
  auto primary = std::make_unique<CtldCore>(options(d, true), sa);
  ASSERT_TRUE(primary->in_control());
  JobSwitchState s7 = set_up(*primary, sa, 7);
  {
    CtldCore standby(options(d, false), sb); // a standby starts, and stops
    EXPECT_FALSE(standby.in_control());
  }
  auto standby = std::make_unique<CtldCore>(options(d, false), sb); // and starts again
  JobSwitchState s8 = set_up(*primary, sa, 8);
  EXPECT_FALSE(sb.logged("journal")) << "a standby does not read the journal: " << sb.all_logs();
  EXPECT_FALSE(standby->job_start(job(9), false)) << "a standby runs no setup";
  EXPECT_TRUE(sb.logged("JobId=9 job_start not run: this slurmctld does not hold control"))
      << sb.all_logs();
  // The primary is killed: the backup takes over.
  primary->halt();
  primary.reset();
  ASSERT_TRUE(standby->take_control(false));
  standby->adopt(s7);
  standby->adopt(s8);
  EXPECT_EQ(standby->recover_job(7, true), Recovery::ClearConfiguring);
  EXPECT_EQ(standby->recover_job(8, true), Recovery::ClearConfiguring)
      << "the setup the primary ran after the standby's restart is known: " << sb.all_logs();
  standby->reconcile_journal();
  EXPECT_EQ(standby->calls_in_flight(), 0u) << sb.all_logs();
  EXPECT_EQ(sb.count_logged("job_start started"), 0) << "no setup that returned runs again";
  EXPECT_EQ(sb.count_logged("complete job_id="), 0) << "and nothing is torn down as an orphan";
  for (std::uint32_t id : {7u, 8u}) {
    standby->job_complete(id);
    ASSERT_TRUE(settle(*standby, [&] { return !standby->state_of(id); })) << sb.all_logs();
  }
  EXPECT_EQ(sb.count_logged(teardowns_of(7)), 1);
  EXPECT_EQ(sb.count_logged(teardowns_of(8)), 1);
  standby.reset();
  EXPECT_EQ(live_on_disk(d), 0u);
}

// Issue 40 (was: refused after lock_wait, which made a backup abort): a
// second controller fences the first out; the first, once it checks,
// refuses to run anything (core_fence_test.cpp has the hand-over itself).
TEST(CoreHa, ASecondWriterFencesOutTheFirstLoudly) {
  TempDir d;
  FakeSlurm sa, sb;
  CtldCore a(options(d, true), sa);
  CtldCore b(options(d, false), sb);
  auto r = b.take_control(false);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(sb.logged("fenced takeover")) << sb.all_logs();
  EXPECT_FALSE(a.check_control());
  EXPECT_TRUE(sa.logged("no longer in control")) << sa.all_logs();
  // The stale one's scheduler may still start a job (Slurm's own split
  // brain): it waits CONFIGURING there, never launched without its setup.
  EXPECT_TRUE(a.job_start(job(7), false)) << "false: Slurm launches it unmanaged";
  EXPECT_TRUE(sa.logged("JobId=7 job_start not run: this slurmctld is no longer in control"))
      << sa.all_logs();
  a.drain_events();
  EXPECT_FALSE(sa.did("end_configuring 7")) << sa.all_logs();
  EXPECT_EQ(sa.count_logged("JobId=7 job_start started"), 0) << sa.all_logs();
  EXPECT_TRUE(b.job_start(job(8), false));
}

TEST(CoreHa, TakeoverABABEachReadsTheJournalAsTheOtherLeftIt) {
  TempDir d;
  FakeSlurm sa, sb;
  CtldCore a(options(d, true), sa);  // primary
  CtldCore b(options(d, false), sb); // backup, standby
  JobSwitchState s7 = set_up(a, sa, 7);
  a.release_control(); // scontrol takeover: A hands control to B
  EXPECT_FALSE(a.in_control());
  // 1st takeover: B knows A's attempt and does not run it again.
  ASSERT_TRUE(b.take_control(false));
  b.adopt(s7);
  EXPECT_EQ(b.recover_job(7, true), Recovery::ClearConfiguring);
  b.reconcile_journal();
  JobSwitchState s8 = set_up(b, sb, 8);
  b.job_complete(7); // job 7 ends under B
  ASSERT_TRUE(settle(b, [&] { return !b.state_of(7); })) << sb.all_logs();
  JobSwitchState r8 = saved_running(b, 8);
  b.release_control(); // B hands control back
  // 2nd: A drops what it knew and reads what B wrote: 7 is over (no orphan
  // teardown of it), 8 returned (not run again).
  ASSERT_TRUE(a.take_control(false));
  EXPECT_FALSE(a.state_of(7)) << "A's own picture is dropped";
  // ...without asking Slurm about job 7: a takeover has freed every job
  // record and Slurm's job table (a lookup crashed a live backup).
  EXPECT_FALSE(sa.did("forget 7")) << sa.all_logs();
  a.adopt(r8);
  EXPECT_EQ(a.recover_job(8, false), Recovery::Nothing);
  a.reconcile_journal();
  EXPECT_EQ(a.calls_in_flight(), 0u) << sa.all_logs();
  a.job_complete(8);
  ASSERT_TRUE(settle(a, [&] { return !a.state_of(8); })) << sa.all_logs();
  JobSwitchState s9 = set_up(a, sa, 9);
  a.release_control();
  // 3rd, B's second takeover in one process: works like the first.
  ASSERT_TRUE(b.take_control(false));
  EXPECT_FALSE(b.state_of(8));
  b.adopt(s9);
  EXPECT_EQ(b.recover_job(9, true), Recovery::ClearConfiguring) << sb.all_logs();
  b.reconcile_journal();
  EXPECT_EQ(b.calls_in_flight(), 0u) << sb.all_logs();
  b.job_complete(9);
  ASSERT_TRUE(settle(b, [&] { return !b.state_of(9); })) << sb.all_logs();
  JobSwitchState s10 = set_up(b, sb, 10);
  b.job_complete(10);
  ASSERT_TRUE(settle(b, [&] { return !b.state_of(10); })) << sb.all_logs();
  b.release_control();
  // The ledger: one setup and one teardown per attempt, over both.
  for (std::uint32_t id : {7u, 8u, 9u, 10u}) {
    EXPECT_EQ(sa.count_logged(setups_of(id)) + sb.count_logged(setups_of(id)), 1) << id;
    EXPECT_EQ(sa.count_logged(teardowns_of(id)) + sb.count_logged(teardowns_of(id)), 1)
        << id << "\nA:\n"
        << sa.all_logs() << "\nB:\n"
        << sb.all_logs();
  }
  EXPECT_EQ(live_on_disk(d), 0u);
}

TEST(CoreHa, AReconfigureWhoseNewProcessDiesAfterInitLosesNothing) {
  TempDir d;
  FakeSlurm sp, sc;
  CtldCore parent(options(d, true), sp);
  set_up(parent, sp, 7);
  parent.release_control(); // switch_p_save before the re-exec
  {
    CtldCore child(options(d, false), sc); // init only, then a fatal()
  }
  // "reconfigure failed": the old process resumes with its job list.
  ASSERT_TRUE(parent.take_control(true));
  EXPECT_EQ(parent.state_of(7)->state, JobState::Running) << sp.all_logs();
  parent.reconcile_journal();
  EXPECT_EQ(parent.calls_in_flight(), 0u);
  set_up(parent, sp, 8);
  EXPECT_EQ(live_on_disk(d), 2u) << "the resumed process writes the live journal";
}

TEST(CoreHa, AReconfigureWhoseNewProcessDiesAfterTakingControlLosesNothing) {
  TempDir d;
  FakeSlurm sp, sc;
  CtldCore parent(options(d, true), sp);
  JobSwitchState s7 = set_up(parent, sp, 7);
  parent.release_control();
  {
    // The new process takes control, loads the job state, starts a setup,
    // and dies (a fatal() of a later plugin).
    CtldCore child(options(d, false), sc);
    ASSERT_TRUE(child.take_control(false));
    child.adopt(s7);
    EXPECT_EQ(child.recover_job(7, true), Recovery::ClearConfiguring);
    child.reconcile_journal();
    set_up(child, sc, 11);
    child.halt();
  }
  ASSERT_TRUE(parent.take_control(true));
  EXPECT_EQ(parent.recover_job(7, false), Recovery::Nothing);
  parent.reconcile_journal(); // 11's attempt: no job of the parent carries it
  ASSERT_TRUE(settle(parent, [&] { return sp.logged("R_ORPHAN_OK"); })) << sp.all_logs();
  EXPECT_EQ(sp.count_logged(teardowns_of(11)), 1) << "torn down once, with its own jobinfo";
  EXPECT_EQ(sp.count_logged(teardowns_of(7)), 0) << "7 still runs";
  EXPECT_EQ(parent.state_of(7)->state, JobState::Running);
  EXPECT_EQ(live_on_disk(d), 1u);
}

namespace {
/// The disk under the journal is full while set (CoreOptions::journal_io).
std::atomic<bool> g_disk_full{false};
ssize_t full_write(int fd, const void *buf, std::size_t n) {
  if (g_disk_full) {
    errno = ENOSPC;
    return -1;
  }
  return ::write(fd, buf, n);
}
int full_fsync(int fd) {
  if (g_disk_full) {
    errno = ENOSPC;
    return -1;
  }
  return ::fsync(fd);
}
} // namespace

// switch_lua.conf(5), STATESAVELOCATION: while the journal cannot be
// written no setup starts (it fails naming the journal and errno, the job is
// requeued), teardowns wait for their record (switch_journal_failure=wait),
// the state is in the status counters, and
// once the disk has room the product runs normally again without a restart.
TEST(CoreHa, AFullStateSaveLocationFailsNewSetupsSafelyAndRecoversWithoutARestart) {
  TempDir d;
  FakeSlurm slurm;
  CoreOptions o = options(d, true);
  o.journal_io = {.write = full_write, .fsync = full_fsync};
  {
    CtldCore core(o, slurm);
    set_up(core, slurm, 7);
    g_disk_full = true;
    slurm.lock();
    EXPECT_TRUE(core.job_start(job(8), true));
    slurm.unlock();
    ASSERT_TRUE(settle(core, [&] { return slurm.did("requeue 8"); })) << slurm.all_logs();
    EXPECT_EQ(slurm.count_logged(setups_of(8)), 0) << "job_start is not called without its record";
    EXPECT_EQ(core.stats().host_faults, 0u)
        << "failed at once, not retried as a host fault (issue 20): " << slurm.all_logs();
    EXPECT_FALSE(slurm.logged("R_START_HOST_FAULT")) << slurm.all_logs();
    const std::string why = fmt::format("journal {}: cannot append: No space left on device "
                                        "(errno 28): no setup starts without its record",
                                        d.journal());
    EXPECT_TRUE(slurm.logged("JobId=8 job_start could not be started: " + why)) << slurm.all_logs();
    EXPECT_NE(slurm.reason_of("requeue 8").find(why), std::string::npos)
        << "the requeue reason names the journal and errno: " << slurm.reason_of("requeue 8");
    EXPECT_EQ(core.stats().journal_failure, "cannot append: No space left on device (errno 28)");
    EXPECT_EQ(slurm.count_logged("cannot append: No space left on device"), 2)
        << "one error line at the first failure, and the failed setup's own line: "
        << slurm.all_logs();
    // A teardown waits for its record (switch_journal_failure=wait, the
    // default), its nodes held: a crash meanwhile never runs it twice.
    core.job_complete(7);
    ASSERT_TRUE(settle(core, [&] { return core.stats().journal_waiting == 1; }))
        << slurm.all_logs();
    EXPECT_TRUE(slurm.logged("JobId=7 job_complete waits for the journal (cannot append: No "
                             "space left on device (errno 28)): its 'teardown started' record"))
        << slurm.all_logs();
    EXPECT_EQ(slurm.count_logged(teardowns_of(7)), 0) << "job_complete is not called yet";
    EXPECT_TRUE(slurm.did("hold 7")) << "its nodes stay held";
    EXPECT_FALSE(slurm.did("release 7"));
    EXPECT_EQ(core.state_of(7)->state, JobState::TeardownRunning);
    // Room again: the journal is retried (kJournalWaitRetry) with a fresh
    // snapshot, then the teardown runs, once.
    g_disk_full = false;
    ASSERT_TRUE(settle(core, [&] { return !core.state_of(7); })) << slurm.all_logs();
    EXPECT_EQ(slurm.count_logged(teardowns_of(7)), 1);
    EXPECT_TRUE(core.stats().journal_failure.empty());
    EXPECT_EQ(core.stats().journal_waiting, 0u);
    EXPECT_TRUE(slurm.logged("writable again")) << slurm.all_logs();
    EXPECT_TRUE(slurm.logged("written again: running the 1 teardown that waited for it"))
        << slurm.all_logs();
    set_up(core, slurm, 9);
    EXPECT_EQ(live_on_disk(d), 1u) << "7 over, 8 never started, 9 set up";
  }
}

// switch_journal_failure=run: a teardown runs without its record (safe to
// repeat by the contract), and the failure's line says what that means.
TEST(CoreHa, WithJournalFailureRunATeardownRunsWithoutItsRecord) {
  TempDir d;
  FakeSlurm slurm;
  CoreOptions o = options(d, true);
  o.journal_io = {.write = full_write, .fsync = full_fsync};
  o.config.journal_failure_waits = false;
  CtldCore core(o, slurm);
  set_up(core, slurm, 7);
  g_disk_full = true;
  core.job_complete(7);
  ASSERT_TRUE(settle(core, [&] { return !core.state_of(7); })) << slurm.all_logs();
  g_disk_full = false;
  EXPECT_EQ(slurm.count_logged(teardowns_of(7)), 1);
  EXPECT_FALSE(slurm.logged("waits for the journal")) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("teardowns still run (switch_journal_failure=run: after a crash "
                           "before it is written again, they run again)"))
      << slurm.all_logs();
}

// Issue 24, found by the long --backup chaos run (double releases): a
// teardown that ran while the journal could not record it ran again when
// the controller was killed before the disk had room.  With
// switch_journal_failure=wait it has not run: the controller that restarts
// runs it, once, with its own jobinfo.
TEST(CoreHa, ATeardownThatWaitedForTheJournalRunsOnceAfterACrash) {
  TempDir d;
  FakeSlurm sa, sb;
  CoreOptions o = options(d, true);
  o.journal_io = {.write = full_write, .fsync = full_fsync};
  JobSwitchState saved;
  {
    CtldCore a(o, sa);
    set_up(a, sa, 7);
    g_disk_full = true;
    a.job_complete(7);
    ASSERT_TRUE(settle(a, [&] { return a.stats().journal_waiting == 1; })) << sa.all_logs();
    saved = saved_running(a, 7); // as Slurm saved it: the teardown outstanding
    a.halt();                    // kill -9
  }
  g_disk_full = false;
  EXPECT_EQ(sa.count_logged(teardowns_of(7)), 0) << sa.all_logs();
  CtldCore b(o, sb);
  b.adopt(saved);
  b.recover_job(7, false);
  b.reconcile_journal();
  ASSERT_TRUE(settle(b, [&] { return !b.state_of(7); })) << sb.all_logs();
  EXPECT_EQ(sb.count_logged(teardowns_of(7)), 1) << sb.all_logs();
  EXPECT_EQ(live_on_disk(d), 0u);
}

// Issue 24, found by the long --backup chaos run: a teardown ended while
// the journal could not be written (its record missing), room came back,
// and control was handed over before the next periodic check.  The
// controller that gives up control writes the fresh snapshot first, so the
// one that takes over reads the teardown as done and does not run it again
// (the run's "double release"); a handover with the disk still failing
// says what the next controller may repeat.
TEST(CoreHa, HandingOverControlFlushesAJournalThatHasRoomAgain) {
  TempDir d;
  FakeSlurm sa, sb;
  CoreOptions oa = options(d, true);
  oa.journal_io = {.write = full_write, .fsync = full_fsync};
  oa.retry_interval = std::chrono::hours(1); // no periodic check before the handover
  // A teardown that ends while the journal fails: with =wait, one that was
  // already running when the disk failed; =run makes any teardown one.
  oa.config.journal_failure_waits = false;
  CtldCore a(oa, sa);
  CtldCore b(options(d, false), sb);
  set_up(a, sa, 7);
  g_disk_full = true;
  a.job_complete(7); // runs without its record: safe to repeat
  ASSERT_TRUE(settle(a, [&] { return !a.state_of(7); })) << sa.all_logs();
  EXPECT_EQ(sa.count_logged(teardowns_of(7)), 1);
  g_disk_full = false; // room again, and no periodic check since
  a.release_control();
  EXPECT_TRUE(sa.logged("writable again")) << sa.all_logs();
  EXPECT_EQ(live_on_disk(d), 0u) << "the teardown of 7 is on disk before the lock is released";
  ASSERT_TRUE(b.take_control(false));
  b.reconcile_journal();
  EXPECT_EQ(b.calls_in_flight(), 0u) << "no orphan teardown of 7: " << sb.all_logs();
  EXPECT_EQ(sb.count_logged(teardowns_of(7)), 0) << sb.all_logs();
  b.release_control();
  // The disk still failing at the handover: one error line that names what
  // the next controller may run again.
  ASSERT_TRUE(a.take_control(false));
  set_up(a, sa, 8);
  g_disk_full = true;
  a.job_complete(8);
  ASSERT_TRUE(settle(a, [&] { return !a.state_of(8); })) << sa.all_logs();
  a.release_control();
  g_disk_full = false;
  EXPECT_TRUE(sa.logged("control given up with the journal not written since")) << sa.all_logs();
}

namespace {
/// The journal's fdatasync (CoreOptions::journal_io): held while the gate
/// is shut (up to 3 s, so that a sync made under Slurm's locks shows as a
/// failed check, not a hang), failing with `g_sync_errno` when set; counts
/// its callers and remembers the last one's thread.
std::mutex g_gate_mu;
std::condition_variable g_gate_cv;
bool g_gate_open = true;
int g_syncs_held = 0;
std::thread::id g_sync_thread;
std::atomic<int> g_sync_errno{0};
std::chrono::seconds g_gate_limit{3}; ///< how long a shut gate holds a sync at most
int gated_fdatasync(int fd) {
  {
    std::unique_lock l(g_gate_mu);
    g_sync_thread = std::this_thread::get_id();
    ++g_syncs_held;
    g_gate_cv.notify_all();
    g_gate_cv.wait_for(l, g_gate_limit, [] { return g_gate_open; });
    --g_syncs_held;
  }
  if (const int e = g_sync_errno.load()) {
    errno = e;
    return -1;
  }
  return ::fdatasync(fd);
}
void shut_gate(bool shut) {
  {
    std::lock_guard l(g_gate_mu);
    g_gate_open = !shut;
  }
  g_gate_cv.notify_all();
}
} // namespace

// Issue 22: the worker applies an outcome under Slurm's locks with its
// records only written; the syncer's fdatasync runs with no lock held, and
// the launch (the effect) waits for it.  So while the disk is slow, Slurm's
// own threads get the locks; and no launch comes before its record.  Waits
// without drain_events(), which applies in the caller's one hold.
TEST(CoreHa, TheWorkerNeverWaitsForTheDiskWithSlurmsLocksHeld) {
  TempDir d;
  FakeSlurm slurm;
  CoreOptions o = options(d, true);
  o.journal_io = {.fdatasync = gated_fdatasync};
  CtldCore core(o, slurm);
  const auto wait_until = [](auto done) {
    for (int i = 0; i < 1000 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  };
  constexpr std::uint32_t kFirst = 21, kJobs = 6;
  slurm.lock(); // the setups start, run and end while the locks are held
  for (std::uint32_t id = kFirst; id < kFirst + kJobs; ++id)
    EXPECT_TRUE(core.job_start(job(id), true));
  // EXPECT, not ASSERT: Slurm's locks are held until the unlock below.
  EXPECT_TRUE(wait_until([&] { return slurm.count_logged("job_start returned") == int(kJobs); }))
      << slurm.all_logs();
  shut_gate(true); // the disk stalls from here on
  slurm.unlock();
  const auto all_running = [&] {
    for (std::uint32_t id = kFirst; id < kFirst + kJobs; ++id)
      if (core.state_of(id)->state != JobState::Running)
        return false;
    return true;
  };
  EXPECT_TRUE(wait_until(all_running)) << slurm.all_logs();
  {
    std::unique_lock l(g_gate_mu);
    EXPECT_TRUE(g_gate_cv.wait_for(l, std::chrono::seconds(5), [] { return g_syncs_held > 0; }))
        << "the records' fdatasync was not started: " << slurm.all_logs();
  }
  // Slurm's locks are free while the records wait for the disk ...
  auto taken = std::async(std::launch::async, [&] {
    slurm.lock();
    slurm.unlock();
  });
  EXPECT_EQ(taken.wait_for(std::chrono::seconds(2)), std::future_status::ready)
      << "the worker holds Slurm's locks while the disk writes its records";
  // ... and no launch came before its record is durable.
  EXPECT_FALSE(slurm.did_starting("end_configuring")) << slurm.all_logs();
  EXPECT_GE(core.decisions_pending(), 1u);
  shut_gate(false);
  taken.wait();
  ASSERT_TRUE(settle(core, [&] {
    for (std::uint32_t id = kFirst; id < kFirst + kJobs; ++id)
      if (!slurm.did(fmt::format("end_configuring {}", id)))
        return false;
    return true;
  })) << slurm.all_logs();
  EXPECT_EQ(live_on_disk(d), std::size_t{kJobs}) << "every launch has its records on disk";
}

// A setup's failure decided (its requeue waiting for the records' sync),
// then the job ends before the sync returns (scancel): Slurm has ended
// that run, so no requeue is asked of it, one line says why, and the launch
// delay of ours is still taken back.
TEST(CoreHa, ARequeueDecidedBeforeTheJobEndedIsNotAskedAfterIt) {
  TempDir d;
  FakeSlurm slurm;
  CoreOptions o = options(d, true);
  o.script = test::fixture("setup_fails");
  o.journal_io = {.fdatasync = gated_fdatasync};
  CtldCore core(o, slurm);
  slurm.lock();
  EXPECT_TRUE(core.job_start(job(9), true));
  for (int i = 0; i < 500 && slurm.count_logged("JobId=9 job_start returned") == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(slurm.count_logged("JobId=9 job_start returned"), 1) << slurm.all_logs();
  shut_gate(true);
  slurm.unlock();
  for (int i = 0; i < 500 && core.state_of(9)->state != JobState::SetupFailed; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(core.state_of(9)->state, JobState::SetupFailed) << slurm.all_logs();
  EXPECT_FALSE(slurm.did("requeue 9")) << "asked before its record is durable";
  slurm.lock(); // scancel: Slurm ends the job
  core.job_complete(9);
  slurm.unlock();
  shut_gate(false);
  ASSERT_TRUE(settle(core, [&] { return slurm.did("end_configuring 9"); })) << slurm.all_logs();
  EXPECT_FALSE(slurm.did("requeue 9")) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("JobId=9 requeue not asked: the job ended or ran again while the "
                           "decision's journal record was synced (its state now forgotten)"))
      << slurm.all_logs();
}

// Issue 22 (group commit): switch_p_job_start writes the setup's record
// under Slurm's locks but does not wait for its fdatasync: the core's
// syncer thread syncs it with no lock held, and only then is job_start
// called (the record still comes before the call).
TEST(CoreHa, AJobStartReturnsBeforeItsRecordsSyncAndItsCallWaitsForTheSync) {
  TempDir d;
  FakeSlurm slurm;
  CoreOptions o = options(d, true);
  o.journal_io = {.fdatasync = gated_fdatasync};
  CtldCore core(o, slurm);
  shut_gate(true);
  slurm.lock(); // as select_nodes() holds them around switch_p_job_start
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(core.job_start(job(8), false));
  const auto in_job_start = std::chrono::steady_clock::now() - t0;
  {
    std::unique_lock l(g_gate_mu);
    // EXPECT, not ASSERT: Slurm's locks are held until the unlock below.
    EXPECT_TRUE(g_gate_cv.wait_for(l, std::chrono::seconds(5), [] { return g_syncs_held > 0; }))
        << "the record's fdatasync was not started: " << slurm.all_logs();
    EXPECT_NE(g_sync_thread, std::this_thread::get_id())
        << "the fdatasync ran in switch_p_job_start, under Slurm's locks";
  }
  EXPECT_LT(in_job_start, std::chrono::seconds(1)) << "job_start waited for the fdatasync";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(slurm.count_logged(setups_of(8)), 0) << "job_start ran before its record was synced";
  EXPECT_EQ(core.state_of(8)->state, JobState::SetupRunning);
  EXPECT_EQ(core.calls_in_flight(), 1u) << "the call waiting for its sync counts as in flight";
  slurm.unlock();
  shut_gate(false);
  ASSERT_TRUE(settle(core, [&] { return core.state_of(8)->state == JobState::Running; }))
      << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged(setups_of(8)), 1);
  EXPECT_EQ(live_on_disk(d), 1u);
  // Its "queued N ms" counts the wait for the sync (at least the 200 ms
  // above): the line says how long after Slurm's call the hook started.
  std::smatch m;
  const std::string logs = slurm.all_logs();
  ASSERT_TRUE(
      std::regex_search(logs, m, std::regex(R"(JobId=8 job_start started \(queued (\d+) ms)")))
      << logs;
  EXPECT_GE(std::stoi(m[1].str()), 200) << m[0];
}

// Issue 40 item 5: a journal fdatasync that does not return is reported
// while it lasts (one error line, journal_stalled_since, journal_stalls),
// the setup waiting for its record meanwhile, and once it returns one more
// line says how long it took; the status is clear again.
TEST(CoreHa, AStalledJournalSyncIsReportedWhileItLastsAndWhenItReturns) {
  TempDir d;
  FakeSlurm slurm;
  CoreOptions o = options(d, true);
  o.journal_io = {.fdatasync = gated_fdatasync};
  o.journal_stall_after = std::chrono::milliseconds(300);
  CtldCore core(o, slurm);
  g_gate_limit = std::chrono::seconds(60); // held until the test opens it
  shut_gate(true);
  slurm.lock();
  EXPECT_TRUE(core.job_start(job(8), false));
  slurm.unlock();
  const auto logged_within = [&](const std::string &what, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!slurm.logged(what) && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return slurm.logged(what);
  };
  const std::string stalled = "fdatasync has not returned for";
  EXPECT_TRUE(logged_within(stalled, std::chrono::seconds(30))) << slurm.all_logs();
  EXPECT_GT(core.stats().journal_stalled_since, 0) << "the status shows the stall";
  EXPECT_EQ(core.stats().journal_stalls, 1u);
  EXPECT_EQ(slurm.count_logged(setups_of(8)), 0) << "job_start ran before its record was synced";
  shut_gate(false);
  g_gate_limit = std::chrono::seconds(3);
  EXPECT_TRUE(logged_within("the fdatasync that stalled returned after", std::chrono::seconds(30)))
      << slurm.all_logs();
  ASSERT_TRUE(settle(core, [&] { return core.state_of(8)->state == JobState::Running; }))
      << slurm.all_logs();
  EXPECT_EQ(core.stats().journal_stalled_since, 0) << "the stall is over";
  EXPECT_EQ(core.stats().journal_stalls, 1u);
  EXPECT_EQ(slurm.count_logged(stalled), 1) << "one line per stall: " << slurm.all_logs();
}

// A deferred fdatasync that fails is a record that could not be written
// (issue 24's rules, unchanged by the group commit): the setup is not run
// and its job is requeued naming the journal; a teardown waits for the
// journal, then runs once when a fresh snapshot is written.
TEST(CoreHa, AFailedDeferredSyncRefusesTheSetupAndTheTeardownWaitsForTheJournal) {
  TempDir d;
  FakeSlurm slurm;
  CoreOptions o = options(d, true);
  o.journal_io = {.fdatasync = gated_fdatasync};
  CtldCore core(o, slurm);
  set_up(core, slurm, 7);
  g_sync_errno = EIO;
  slurm.lock();
  EXPECT_TRUE(core.job_start(job(8), true));
  slurm.unlock();
  ASSERT_TRUE(settle(core, [&] { return slurm.did("requeue 8"); })) << slurm.all_logs();
  g_sync_errno = 0;
  EXPECT_EQ(slurm.count_logged(setups_of(8)), 0) << "job_start is not called without its record";
  EXPECT_NE(slurm.reason_of("requeue 8").find("fdatasync failed: Input/output error (errno 5)"),
            std::string::npos)
      << slurm.reason_of("requeue 8");
  // The snapshot (fsync, not failing) makes it trusted again.
  ASSERT_TRUE(settle(core, [&] { return core.stats().journal_failure.empty(); }))
      << slurm.all_logs();
  g_sync_errno = EIO;
  core.job_complete(7);
  ASSERT_TRUE(settle(core, [&] {
    return slurm.logged("JobId=7 job_complete waits for the journal");
  })) << slurm.all_logs();
  g_sync_errno = 0;
  ASSERT_TRUE(settle(core, [&] { return !core.state_of(7); })) << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged(teardowns_of(7)), 1) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("written again: running the 1 teardown that waited for it"))
      << slurm.all_logs();
  EXPECT_EQ(live_on_disk(d), 0u);
}

// Issue 24, the lost start: slurmctld launched job 7 and was killed before
// it saved the job RUNNING; after the restart its record is PENDING (no
// switch state), so the journal's attempt is an orphan.  While its node may
// still run it, it is not torn down (R_ORPHAN_WAIT_NODES), and Slurm's next
// start of job 7 waits in CONFIGURING without job_start
// (R_SETUP_WAIT_ORPHAN); once the node no longer may run it the teardown
// runs once, then job 7's new setup (R_SETUP_AFTER_ORPHAN).
TEST(CoreHa, ALostStartIsNotTornDownUnderRunningTasksAndTheNextStartWaits) {
  TempDir d;
  std::int64_t old_attempt;
  {
    FakeSlurm s0;
    CtldCore before(options(d, true), s0);
    set_up(before, s0, 7);
    old_attempt = before.state_of(7)->job.attempt;
    before.halt(); // kill -9 before Slurm saved the job RUNNING
  }
  FakeSlurm slurm;
  slurm.nodes_may_run = true;
  CtldCore core(options(d, true), slurm);
  core.reconcile_journal(); // job 7's record came back PENDING: nothing adopted
  EXPECT_TRUE(slurm.logged("R_ORPHAN_WAIT_NODES")) << slurm.all_logs();
  EXPECT_EQ(core.calls_in_flight(), 0u) << "no teardown under running tasks";
  // Slurm starts job 7 again.
  slurm.lock();
  EXPECT_TRUE(core.job_start(job(7), true)) << "managed: its launch is delayed";
  slurm.unlock();
  EXPECT_EQ(core.state_of(7)->state, JobState::SetupWaitOrphan);
  EXPECT_TRUE(slurm.logged("JobId=7 job_start waits")) << slurm.all_logs();
  core.retry_now(); // a periodic check: the node may still run it
  EXPECT_EQ(core.calls_in_flight(), 0u);
  EXPECT_EQ(slurm.count_logged(teardowns_of(7)), 0);
  // The node reported the job gone.
  slurm.nodes_may_run = false;
  core.retry_now();
  ASSERT_TRUE(settle(core, [&] {
    return core.state_of(7) && core.state_of(7)->state == JobState::Running;
  })) << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged(fmt::format("complete job_id=7 submit_time=1007 attempt={} "
                                           "made_by={}",
                                           old_attempt, old_attempt)),
            1)
      << "the lost attempt is torn down once, with its own jobinfo";
  EXPECT_EQ(slurm.count_logged(setups_of(7)), 1) << "then the new setup, once";
  EXPECT_TRUE(slurm.logged("R_SETUP_AFTER_ORPHAN")) << slurm.all_logs();
  const auto acts = slurm.all_actions();
  EXPECT_EQ(std::count(acts.begin(), acts.end(), "end_configuring 7"), 1)
      << "launched once, after the teardown";
  EXPECT_FALSE(slurm.did_starting("drain")) << slurm.all_logs();
}

// A call in flight on the controller that gives up control is killed, its
// outcome never applied there, and the new controller runs it again as the
// restart rules say (R_RESTART_SETUP): never finished by both.
TEST(CoreHa, ACallInFlightAtTheHandOverIsKilledAndRunAgainByTheNewController) {
  TempDir d;
  FakeSlurm sa, sb;
  CoreOptions oa = options(d, true), ob = options(d, false);
  oa.script = ob.script = test::fixture("core_flow");
  CtldCore a(oa, sa);
  CtldCore b(ob, sb);
  JobArgs slow = job(20);
  slow.name = "slow"; // job_start takes 0.3 s
  sa.lock();
  ASSERT_TRUE(a.job_start(slow, false));
  sa.unlock();
  ASSERT_EQ(a.calls_in_flight(), 1u);
  a.release_control(); // kills the call
  EXPECT_EQ(a.calls_in_flight(), 0u);
  a.drain_events();
  EXPECT_EQ(a.state_of(20)->state, JobState::SetupRunning) << "its outcome is not applied";
  EXPECT_FALSE(sa.logged("JobId=20 SetupResult -> Running")) << sa.all_logs();
  const JobSwitchState at_save = *a.state_of(20);
  auto saved = decode_job_state(encode_job_state(&at_save));
  ASSERT_TRUE(saved && saved->has_value());
  ASSERT_TRUE(b.take_control(false));
  b.adopt(**saved);
  EXPECT_EQ(b.recover_job(20, true), Recovery::DelayLaunch);
  b.reconcile_journal();
  ASSERT_TRUE(settle(b, [&] {
    return b.state_of(20) && b.state_of(20)->state == JobState::Running;
  })) << sb.all_logs();
  EXPECT_TRUE(sb.logged("R_RESTART_SETUP")) << sb.all_logs();
  EXPECT_EQ(sb.count_logged("JobId=20 job_start started"), 1);
  EXPECT_EQ(sb.count_logged("torn down nil"), 1) << "the killed attempt is undone once";
  EXPECT_FALSE(sb.logged("R_ORPHAN")) << "carried by the job: no orphan";
}

// A planned stop on 24.11 (switch_p_save: release_control): a teardown
// that fails past its last hold of Slurm's locks, before its children are
// stopped, is not applied there (its "forgotten" record written and its
// drain dropped with the stop: the next controller would read the attempt
// as over and never drain); it runs again on the next controller, which
// drains.  The failure is let through right after that last unlock.
TEST(CoreHa, ATeardownThatFailsWhileControlIsGivenUpIsDrainedByTheNextController) {
  TempDir d;
  FakeSlurm sa, sb;
  CoreOptions oa = options(d, true), ob = options(d, false);
  oa.script = ob.script = test::fixture("fence_write");
  CtldCore a(oa, sa);
  CtldCore b(ob, sb);
  const std::string gate = (d.dir / "gate").string();
  std::ofstream(gate + ".start") << "go\n";
  JobArgs broken = job(7);
  broken.name = "broken"; // job_complete returns -1 once <gate>.end exists
  broken.network = gate;
  ASSERT_TRUE(a.job_start(broken, true));
  ASSERT_TRUE(settle(a, [&] { return a.state_of(7)->state == JobState::Running; }))
      << sa.all_logs();
  a.job_complete(7);
  ASSERT_TRUE(
      test::eventually([&] { return sa.logged("teardown job_id=7 "); }, std::chrono::seconds(60)))
      << sa.all_logs();
  const JobSwitchState at_save = *a.state_of(7); // TeardownRunning
  sa.after_next_unlock_here([&] {
    std::ofstream(gate + ".end") << "go\n";
    // The teardown's outcome reaches the worker: applied or dropped.
    EXPECT_TRUE(
        test::eventually([&] { return !a.state_of(7) || sa.logged("TeardownResult not applied"); },
                         std::chrono::seconds(60)))
        << sa.all_logs();
  });
  a.release_control();
  EXPECT_TRUE(sa.logged("JobId=7 TeardownResult not applied: slurmctld is stopping"))
      << sa.all_logs();
  auto saved = decode_job_state(encode_job_state(&at_save));
  ASSERT_TRUE(saved && saved->has_value());
  ASSERT_TRUE(b.take_control(false));
  b.adopt(**saved);
  b.recover_job(7, false);
  b.reconcile_journal();
  ASSERT_TRUE(settle(b, [&] { return !b.state_of(7); })) << sb.all_logs();
  const auto drains = [](FakeSlurm &s) {
    const auto acts = s.all_actions();
    return std::count_if(acts.begin(), acts.end(),
                         [](const std::string &x) { return x.rfind("drain node1:", 0) == 0; });
  };
  EXPECT_EQ(drains(sa) + drains(sb), 1) << "A:\n" << sa.all_logs() << "\nB:\n" << sb.all_logs();
}

// The same when Slurm schedules the job's new start before the restore
// thread reconciled the journal: the launched attempt in the journal makes
// it wait all the same.
TEST(CoreHa, ALostStartWaitsEvenWhenTheNewStartComesBeforeTheReconcile) {
  TempDir d;
  {
    FakeSlurm s0;
    CtldCore before(options(d, true), s0);
    set_up(before, s0, 7);
    before.halt();
  }
  FakeSlurm slurm;
  slurm.nodes_may_run = true;
  CtldCore core(options(d, false), slurm); // the plugin's path
  ASSERT_TRUE(core.take_control(false));
  slurm.lock();
  EXPECT_TRUE(core.job_start(job(7), true));
  slurm.unlock();
  EXPECT_EQ(core.state_of(7)->state, JobState::SetupWaitOrphan) << slurm.all_logs();
  core.reconcile_journal();
  EXPECT_EQ(core.calls_in_flight(), 0u);
  EXPECT_EQ(core.state_of(7)->state, JobState::SetupWaitOrphan);
  slurm.nodes_may_run = false;
  core.retry_now();
  ASSERT_TRUE(settle(core, [&] {
    return core.state_of(7) && core.state_of(7)->state == JobState::Running;
  })) << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged(teardowns_of(7)), 1);
  EXPECT_EQ(slurm.count_logged(setups_of(7)), 1);
}

// The lost start again, while another job's held teardown holds the same
// node (seen in chaos-26.05: a restart re-asserts node holds a few seconds
// late, and Slurm gave that node to the lost job's new start).  When the
// lost attempt is torn down the new start still waits, now for the held
// teardown (R_SETUP_WAIT_HELD), and that teardown's report wakes it
// (R_SETUP_AFTER_HELD): it must not wait for good.
TEST(CoreHa, ALostStartsNextStartThatAHeldTeardownAlsoBlocksRunsOnceThatTeardownReported) {
  TempDir d;
  const fs::path gate = d.dir / "gate";
  CoreOptions o = options(d, true);
  o.script = test::fixture("core_flow"); // "again": EAGAIN while `gate` exists
  o.block_job_complete = true;
  o.retry_interval = std::chrono::hours(1); // periodic checks only by retry_now()
  o.config.switch_retries = 10;
  {
    FakeSlurm s0;
    CtldCore before(o, s0);
    set_up(before, s0, 7);
    before.halt(); // kill -9 before Slurm saved job 7 RUNNING
  }
  FakeSlurm slurm;
  slurm.nodes_may_run = true;
  CtldCore core(o, slurm);
  core.reconcile_journal();
  ASSERT_TRUE(slurm.logged("R_ORPHAN_WAIT_NODES")) << slurm.all_logs();
  // Job 8 ran on node1; its teardown is held and returns EAGAIN.
  std::ofstream(gate) << "closed";
  JobArgs held = job(8);
  held.name = "again";
  held.network = gate.string();
  slurm.lock();
  ASSERT_TRUE(core.job_start(held, false));
  slurm.unlock();
  ASSERT_TRUE(settle(core, [&] { return core.state_of(8)->state == JobState::Running; }))
      << slurm.all_logs();
  core.job_complete(8);
  ASSERT_TRUE(settle(core, [&] { return core.state_of(8)->state == JobState::TeardownRetryWait; }))
      << slurm.all_logs();
  ASSERT_TRUE(core.state_of(8)->nodes_held);
  // Slurm starts job 7 again on node1: it waits for its lost attempt.
  slurm.lock();
  ASSERT_TRUE(core.job_start(job(7), true));
  slurm.unlock();
  ASSERT_EQ(core.state_of(7)->state, JobState::SetupWaitOrphan);
  // The node no longer runs the lost attempt: it is torn down; job 8's
  // teardown runs again and still returns EAGAIN.
  slurm.nodes_may_run = false;
  core.retry_now();
  ASSERT_TRUE(settle(core, [&] {
    return slurm.logged("R_ORPHAN_OK") && core.state_of(8)->state == JobState::TeardownRetryWait;
  })) << slurm.all_logs();
  EXPECT_EQ(core.state_of(7)->state, JobState::SetupWaitOrphan) << slurm.all_logs();
  EXPECT_EQ(core.state_of(7)->held_by, 8u);
  EXPECT_TRUE(slurm.logged("JobId=7 job_start still waits: the teardown of JobId=8 holds one of "
                           "its nodes"))
      << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged(setups_of(7)), 0) << "no job_start while node1 is held";
  // Job 8's teardown succeeds at its next retry: job 7 is set up, once,
  // without another periodic check.
  fs::remove(gate);
  core.retry_now();
  ASSERT_TRUE(settle(core, [&] {
    return core.state_of(7) && core.state_of(7)->state == JobState::Running;
  })) << slurm.all_logs();
  EXPECT_TRUE(slurm.logged("R_SETUP_AFTER_HELD")) << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged(setups_of(7)), 1);
  EXPECT_FALSE(slurm.did_starting("drain")) << slurm.all_logs();
}

// The periodic check's part of the same rule: a start that waits with
// nothing left to wait for (here a recovered waiter adopted after the
// reconcile, so no edge event names it) is woken by the next periodic
// check, not left CONFIGURING.
TEST(CoreHa, AWaitingStartWithNothingLeftToWaitForIsWokenByThePeriodicCheck) {
  TempDir d;
  CoreOptions o = options(d, true);
  o.retry_interval = std::chrono::hours(1);
  FakeSlurm slurm;
  CtldCore core(o, slurm);
  core.reconcile_journal();
  JobSwitchState waiting;
  waiting.job = job(9);
  waiting.job.attempt = 4242;
  waiting.state = JobState::SetupWaitOrphan;
  core.adopt(waiting);
  EXPECT_EQ(core.recover_job(9, true), Recovery::DelayLaunch);
  EXPECT_EQ(core.state_of(9)->state, JobState::SetupWaitOrphan);
  core.retry_now();
  ASSERT_TRUE(settle(core, [&] {
    return core.state_of(9) && core.state_of(9)->state == JobState::Running;
  })) << slurm.all_logs();
  EXPECT_EQ(slurm.count_logged(setups_of(9)), 1);
}

// Issue 40, item 3: the supervisor runs on while its slurmctld is stopped,
// and records each result before sending it.  A setup and a teardown that
// end while their controller is stopped (halt(): it applies nothing, as a
// stopped and then killed process) are adopted by the controller that
// takes control: neither runs again, nothing is undone with nil.
TEST(CoreHa, CallsThatEndedWhileTheirControllerWasStoppedAreAdoptedNotRunAgain) {
  TempDir d;
  FakeSlurm sa, sb;
  CoreOptions oa = options(d, true), ob = options(d, false);
  oa.script = ob.script = test::fixture("core_flow");
  CtldCore a(oa, sa);
  CtldCore b(ob, sb);
  JobArgs ends = job(31);
  ends.name = "slowend"; // job_complete takes 0.3 s
  sa.lock();
  ASSERT_TRUE(a.job_start(ends, false));
  sa.unlock();
  ASSERT_TRUE(settle(a, [&] { return a.state_of(31)->state == JobState::Running; }))
      << sa.all_logs();
  sa.lock();
  a.job_complete(31);
  const JobSwitchState saved31 = saved_running(a, 31);
  JobArgs starts = job(32);
  starts.name = "slow"; // job_start takes 0.3 s
  ASSERT_TRUE(a.job_start(starts, false));
  const JobSwitchState saved32 = saved_running(a, 32);
  sa.unlock();
  // Both running (not waiting for their records' sync), then stopped: both
  // calls end, their outcomes are never applied.
  ASSERT_TRUE(settle(a, [&] {
    return sa.logged("JobId=32 job_start started") && sa.logged("JobId=31 job_complete started");
  })) << sa.all_logs();
  a.halt();
  ASSERT_TRUE(settle(a, [&] { return a.calls_in_flight() == 0; })) << sa.all_logs();
  EXPECT_EQ(saved31.state, JobState::TeardownRunning);
  EXPECT_EQ(saved32.state, JobState::SetupRunning);

  ASSERT_TRUE(b.take_control(false)); // a still holds its lock: fenced out
  b.adopt(saved31);
  b.adopt(saved32);
  EXPECT_EQ(b.recover_job(32, true), Recovery::LaunchNow) << sb.all_logs();
  b.recover_job(31, false);
  b.reconcile_journal();
  ASSERT_TRUE(settle(b, [&] {
    return b.state_of(32) && b.state_of(32)->state == JobState::Running && !b.state_of(31);
  })) << sb.all_logs();
  EXPECT_TRUE(sb.logged("JobId=32 job_start recovery: attempt ")) << sb.all_logs();
  EXPECT_TRUE(sb.logged("adopted, job_start is not run again")) << sb.all_logs();
  EXPECT_TRUE(sb.logged("JobId=31 job_complete recovery: the teardown of attempt "))
      << sb.all_logs();
  EXPECT_TRUE(sb.logged("results file(s), 3 result(s): 2 adopted")) << sb.all_logs();
  EXPECT_TRUE(
      sb.logged("job_start is not run again; the launch was not released: launching it now"))
      << sb.all_logs(); // R_RECOVER_ACCEPTED_LAUNCH_NOW
  EXPECT_EQ(sb.count_logged("job_start started"), 0) << "no setup runs again";
  EXPECT_EQ(sb.count_logged("job_complete started"), 0) << "no teardown runs again, no undo";
  EXPECT_TRUE(list_results_files(d.journal()).empty()) << "removed once in the journal";
}

// The controller in control keeps only the segments its journal does not
// hold yet: with a short segment, every file is gone once the jobs are
// quiet.
TEST(CoreHa, TheControllerRemovesTheResultsFilesItsJournalHolds) {
  TempDir d;
  FakeSlurm sa;
  CoreOptions oa = options(d, true);
  oa.script = test::fixture("core_flow");
  oa.results_segment = std::chrono::milliseconds(50);
  CtldCore a(oa, sa);
  for (std::uint32_t id = 41; id <= 43; ++id)
    set_up(a, sa, id);
  EXPECT_TRUE(settle(a, [&] { return list_results_files(d.journal()).empty(); }))
      << fmt::format("left: {}", fmt::join(list_results_files(d.journal()), " "));
  for (std::uint32_t id = 41; id <= 43; ++id) {
    sa.lock();
    a.job_complete(id);
    sa.unlock();
  }
  EXPECT_TRUE(settle(a, [&] {
    return !a.state_of(41) && !a.state_of(42) && !a.state_of(43) &&
           list_results_files(d.journal()).empty();
  })) << fmt::format("left: {}", fmt::join(list_results_files(d.journal()), " "));
}
