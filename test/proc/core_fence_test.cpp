// SPDX-License-Identifier: GPL-2.0-or-later
//
// The control fence (issue 40; switch.lua(5), HIGH AVAILABILITY), with the
// real supervisor and runner and a fake Slurm per controller: a backup
// takes control from a holder that keeps its lock (a stopped primary)
// instead of failing; the old holder, once it runs again, runs no hook,
// writes nothing and says so, whether it writes or not; a lock lost at each
// step of a take-over leaves at most one controller in control, and the
// one that waits takes control later without aborting; a lock lost at a
// write damages nothing the controller in control reads.  Every wait is on
// an event with a generous deadline; nothing asserts a duration.
#include "core_testing.hpp"
#include "ctld/core.hpp"
#include "ctld/fence.hpp"
#include "ctld/journal.hpp"
#include "fake_slurm.hpp"
#include "harness.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace switchlua;
using switchlua::test::FakeSlurm;
using switchlua::test::settle;
using switchlua::test::TempDir;

namespace {

CoreOptions options(const TempDir &d, bool in_control) {
  return test::ha_core_options(d, in_control, "fence");
}

JobArgs job(std::uint32_t id, const std::string &name = "plain",
            const std::string &network = "fabric") {
  JobArgs j;
  j.job_id = id;
  j.name = name;
  j.nodes = "node1";
  j.node_names = {"node1"};
  j.num_nodes = 1;
  j.network = network;
  j.submit_time = 1000 + id;
  return j;
}

/// job_start as slurmctld calls it, with its locks held.
bool start(CtldCore &core, FakeSlurm &slurm, std::uint32_t id, const std::string &name = "plain",
           const std::string &network = "fabric") {
  slurm.lock();
  const bool ours = core.job_start(job(id, name, network), false);
  slurm.unlock();
  return ours;
}

/// Waits (generously) until `pred` holds; false if it never does.
bool eventually(const std::function<bool()> &pred) {
  return test::eventually(pred, std::chrono::seconds(15));
}

std::string read_all(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The journal's table as it is on disk.
JournalTable on_disk(const TempDir &d) {
  JournalScan scan = scan_journal(read_all(d.journal()));
  EXPECT_EQ(scan.status, JournalScan::Status::Clean) << scan.error;
  JournalTable t;
  for (const auto &r : scan.records)
    t.apply(r);
  return t;
}

bool knows_job(const JournalTable &t, std::uint32_t id) {
  for (const auto &[a, e] : t.live)
    if (e.job.job_id == id)
      return true;
  return false;
}

std::uint64_t epoch_on_disk(const TempDir &d) {
  return ControlFence::read_epoch(d.journal() + ".epoch");
}

std::string setups_of(std::uint32_t id) {
  return fmt::format("setup job_id={} ", id);
}

} // namespace

// Item 1 of issue 40: the backup took 120 s, then failed and Slurm aborted
// it.  Now it fences the holder out within lock_wait and takes control.
TEST(CoreFence, ABackupTakesControlFromAHolderThatKeepsItsLock) {
  TempDir d;
  FakeSlurm sa, sb;
  CtldCore a(options(d, true), sa); // the primary, stopped: it keeps its lock
  CtldCore b(options(d, false), sb);
  const std::uint64_t ea = a.epoch();
  auto r = b.take_control(false);
  ASSERT_TRUE(r) << r.error().message << "\n" << sb.all_logs();
  EXPECT_TRUE(b.in_control());
  EXPECT_FALSE(b.waiting_for_control());
  EXPECT_EQ(b.epoch(), ea + 1);
  EXPECT_EQ(epoch_on_disk(d), ea + 1);
  EXPECT_TRUE(sb.logged("fenced takeover")) << sb.all_logs();
  EXPECT_FALSE(a.check_control());
  // "now" is ea + 1, or ea when A's periodic check ran between B's new
  // lock file and B's epoch (the lock file told it first).
  EXPECT_TRUE(sa.logged(fmt::format("no longer in control (epoch {}, now ", ea))) << sa.all_logs();
  EXPECT_EQ(sa.count_logged("is no longer in control (epoch "), 1) << sa.all_logs();
}

// Item 2: the old primary, resumed, ran hooks and appended to the journal
// the backup no longer read.  Now its first write finds it stale.
TEST(CoreFence, AStaleControllerRunsNoHookAndWritesNothing) {
  TempDir d;
  FakeSlurm sa, sb;
  CtldCore a(options(d, true), sa);
  ASSERT_TRUE(start(a, sa, 7));
  ASSERT_TRUE(settle(a, [&] { return a.state_of(7)->state == JobState::Running; }))
      << sa.all_logs();
  CtldCore b(options(d, false), sb);
  ASSERT_TRUE(b.take_control(false));
  const std::string journal_before = read_all(d.journal());
  // The stale primary's scheduler starts a job: it waits CONFIGURING
  // there, never launched without its setup (chaos seed 2: launched
  // unmanaged, then by the controller in control too: 'Duplicate jobid').
  EXPECT_TRUE(start(a, sa, 8)) << "job_start false: Slurm launches the job unmanaged";
  a.job_complete(7); // and ends one
  a.drain_events();
  EXPECT_FALSE(sa.did("end_configuring 8")) << sa.all_logs();
  EXPECT_EQ(sa.count_logged(setups_of(8)), 0) << sa.all_logs();
  EXPECT_EQ(sa.count_logged("teardown job_id=7"), 0) << sa.all_logs();
  EXPECT_EQ(read_all(d.journal()), journal_before) << "the stale controller wrote the journal";
  // The stale line once (its own words; the refused job_start's line also
  // says "no longer in control" when the worker found the loss first).
  EXPECT_EQ(sa.count_logged("is no longer in control (epoch "), 1) << sa.all_logs();
  EXPECT_FALSE(a.in_control());
}

// "Within a second of resuming": the worker's periodic check finds it,
// with nothing to write.  Waits for the line; asserts no duration.
TEST(CoreFence, AStaleControllerSaysSoWithoutWritingAnything) {
  TempDir d;
  FakeSlurm sa, sb;
  CtldCore a(options(d, true), sa);
  CtldCore b(options(d, false), sb);
  ASSERT_TRUE(b.take_control(false));
  EXPECT_TRUE(eventually([&] { return sa.logged("no longer in control"); })) << sa.all_logs();
  EXPECT_FALSE(a.in_control());
  EXPECT_TRUE(b.check_control());
}

// Item 2 again: a call that returns after the fence is not acted on (no
// launch, no record), and the supervisor's calls are stopped.
TEST(CoreFence, AnOutcomeThatArrivesAfterTheFenceIsDiscarded) {
  TempDir d;
  FakeSlurm sa, sb;
  CtldCore a(options(d, true), sa);
  const std::string gate = (d.dir / "gate").string();
  ASSERT_TRUE(start(a, sa, 7, "gated", gate));
  ASSERT_TRUE(eventually([&] { return sa.logged(setups_of(7)); })) << sa.all_logs();
  CtldCore b(options(d, false), sb);
  ASSERT_TRUE(b.take_control(false));
  std::ofstream(gate) << "open\n";
  EXPECT_TRUE(eventually([&] { return sa.logged("no longer in control"); })) << sa.all_logs();
  EXPECT_TRUE(eventually([&] { return a.calls_in_flight() == 0; })) << sa.all_logs();
  a.drain_events();
  EXPECT_FALSE(sa.did("end_configuring 7")) << sa.all_logs();
  for (const auto &[att, e] : on_disk(d).live)
    EXPECT_FALSE(e.accepted) << "the stale controller recorded a setup's result";
}

// A lock file removed under the holder (an operator, an NFS lease): the
// holder stops at its next write rather than run on unfenced.
TEST(CoreFence, ALockFileRemovedStopsTheHolderAtItsNextWrite) {
  TempDir d;
  FakeSlurm sa;
  CtldCore a(options(d, true), sa);
  ASSERT_EQ(::unlink((d.journal() + ".lock").c_str()), 0);
  start(a, sa, 8);
  a.drain_events();
  EXPECT_EQ(sa.count_logged(setups_of(8)), 0) << sa.all_logs();
  EXPECT_TRUE(sa.logged("was removed")) << sa.all_logs();
  EXPECT_FALSE(a.in_control());
}

// Item 2 of "what to build": hooks get the epoch.
TEST(CoreFence, HooksGetTheControllersEpoch) {
  TempDir d;
  FakeSlurm sa, sb;
  {
    CtldCore a(options(d, true), sa);
    a.release_control();
  }
  CtldCore b(options(d, false), sb);
  ASSERT_TRUE(b.take_control(false));
  ASSERT_EQ(b.epoch(), 2u);
  ASSERT_TRUE(start(b, sb, 9));
  ASSERT_TRUE(settle(b, [&] { return b.state_of(9)->state == JobState::Running; }))
      << sb.all_logs();
  EXPECT_TRUE(sb.logged("setup job_id=9 epoch=2")) << sb.all_logs();
  b.job_complete(9);
  ASSERT_TRUE(settle(b, [&] { return !b.state_of(9); })) << sb.all_logs();
  EXPECT_TRUE(sb.logged("teardown job_id=9 epoch=2 made_in=2")) << sb.all_logs();
}

// ---- A lock lost at each step of a take-over -----------------------------

class LockLostDuringTakeover : public ::testing::TestWithParam<const char *> {};

// B takes control from a stopped A; at step GetParam() of B's take-over a
// third controller C takes control.  At no point are two in control; the
// one that waits (WAITING) never aborts, runs no hook, parks the setups
// asked of it, and takes control once the other gives it up; each setup
// runs once, with the epoch of the controller that ran it.
TEST_P(LockLostDuringTakeover, AtMostOneControllerAndTheOtherWaits) {
  TempDir d;
  FakeSlurm sa, sb, sc;
  CtldCore a(options(d, true), sa);
  CtldCore c(options(d, false), sc);
  CoreOptions ob = options(d, false);
  const std::string step = GetParam();
  bool fired = false;
  ob.fence_step = [&](std::string_view s) {
    if (s == step && !fired) {
      fired = true;
      (void)c.take_control(false);
    }
  };
  CtldCore b(std::move(ob), sb);
  (void)b.take_control(false); // never an abort: in control, or WAITING
  ASSERT_TRUE(fired) << "step " << step << " not reached:\n" << sb.all_logs();
  EXPECT_FALSE(a.check_control()) << "the stopped primary is fenced out";
  const bool bc = b.check_control(), cc = c.check_control();
  EXPECT_FALSE(bc && cc) << "two controllers in control\nB:\n"
                         << sb.all_logs() << "\nC:\n"
                         << sc.all_logs();
  // Whoever does not hold control waits (or is stale) and runs nothing.
  CtldCore &out = bc ? c : b;
  FakeSlurm &sout = bc ? sc : sb;
  if (out.waiting_for_control()) {
    EXPECT_TRUE(start(out, sout, 21)) << "a WAITING controller parks the setup";
    EXPECT_EQ(sout.count_logged(setups_of(21)), 0);
  }
  const bool parked = out.waiting_for_control();
  // Converge: the one in control gives it up (a hand-back); the other
  // retries while WAITING, or, stale, takes control when Slurm's next
  // switch_p_restore asks it to.
  CtldCore &in = bc ? b : c;
  in.release_control();
  ASSERT_TRUE(eventually([&] {
    if (out.waiting_for_control())
      out.retry_control();
    else if (!out.in_control())
      (void)out.take_control(false);
    return out.in_control();
  })) << "B:\n"
      << sb.all_logs() << "\nC:\n"
      << sc.all_logs();
  CtldCore &now = b.in_control() ? b : c;
  FakeSlurm &snow = b.in_control() ? sb : sc;
  EXPECT_EQ(now.epoch(), epoch_on_disk(d));
  now.reconcile_journal(); // the restore thread's walk: parked setups start
  ASSERT_TRUE(start(now, snow, 22));
  ASSERT_TRUE(settle(now, [&] {
    auto s = now.state_of(22);
    return s && s->state == JobState::Running;
  })) << snow.all_logs();
  EXPECT_EQ(sb.count_logged(setups_of(22)) + sc.count_logged(setups_of(22)), 1);
  EXPECT_TRUE(snow.logged(fmt::format("setup job_id=22 epoch={}", now.epoch()))) << snow.all_logs();
  if (parked) {
    EXPECT_TRUE(eventually([&] { return snow.count_logged(setups_of(21)) == 1; }))
        << "the parked setup runs once control is taken\n"
        << snow.all_logs();
  }
  EXPECT_LE(sb.count_logged(setups_of(21)) + sc.count_logged(setups_of(21)), 1);
  EXPECT_EQ(sa.count_logged("setup job_id="), 0);
}

INSTANTIATE_TEST_SUITE_P(EachStep, LockLostDuringTakeover,
                         ::testing::Values("lock", "fence-create", "fence-rename", "epoch-read",
                                           "epoch-write", "identify"),
                         [](const auto &info) {
                           std::string n = info.param;
                           for (char &ch : n)
                             if (ch == '-')
                               ch = '_';
                           return n;
                         });

// ---- A lock lost at a write ----------------------------------------------

namespace {
// The fault hooks (JournalIo takes plain function pointers): armed by the
// test thread, run once by whichever thread of the core writes next.
std::mutex g_hook_mu;
std::function<void()> g_in_write;
std::function<void()> take_hook(std::function<void()> &h) {
  std::lock_guard l(g_hook_mu);
  return std::exchange(h, nullptr);
}
void arm_hook(std::function<void()> &h, std::function<void()> f) {
  std::lock_guard l(g_hook_mu);
  h = std::move(f);
}
bool hook_ran(std::function<void()> &h) {
  std::lock_guard l(g_hook_mu);
  return !h;
}
ssize_t hooked_write(int fd, const void *buf, std::size_t n) {
  if (auto f = take_hook(g_in_write))
    f();
  return ::write(fd, buf, n);
}
} // namespace

// Control taken by B between A's fence check and A's append: A's record
// lands in the file B's take-over replaced, which nobody reads; B's
// journal does not have it, and A is stale at its next step.
TEST(CoreFence, AnAppendAfterTheCheckLandsWhereNoReaderLooks) {
  TempDir d;
  FakeSlurm sa, sb;
  CoreOptions oa = options(d, true);
  oa.journal_io.write = hooked_write;
  CtldCore a(std::move(oa), sa);
  CtldCore b(options(d, false), sb);
  arm_hook(g_in_write, [&] { EXPECT_TRUE(b.take_control(false)); });
  start(a, sa, 8); // its "setup started" record is appended after B took control
  EXPECT_TRUE(hook_ran(g_in_write));
  EXPECT_TRUE(b.in_control());
  EXPECT_FALSE(knows_job(on_disk(d), 8)) << "a stale append reached the journal B reads";
  start(b, sb, 9);
  EXPECT_TRUE(knows_job(on_disk(d), 9)) << sb.all_logs();
  EXPECT_TRUE(eventually([&] { return sa.logged("no longer in control"); })) << sa.all_logs();
  a.drain_events();
  EXPECT_EQ(sa.count_logged(setups_of(8)), 0) << sa.all_logs();
}

// A stale compaction that renames its snapshot onto the journal after B
// took control (A stopped between its check and its rename): B finds its
// file replaced at its next write and writes it again from memory, so what
// B wrote since is on disk again.  The stale rename is made by the test:
// two controllers in one test process share write_file_atomically()'s
// temp name (PATH.tmp.<pid>), so A's own compaction cannot race B's here.
TEST(CoreFence, AStaleCompactionIsUndoneAtTheNextWrite) {
  TempDir d;
  FakeSlurm sa, sb;
  CtldCore a(options(d, true), sa);
  ASSERT_TRUE(start(a, sa, 7));
  ASSERT_TRUE(settle(a, [&] { return a.state_of(7)->state == JobState::Running; }))
      << sa.all_logs();
  const std::string stale = (d.dir / "stale-snapshot").string();
  std::ofstream(stale, std::ios::binary) << read_all(d.journal()); // A's picture: 7
  CtldCore b(options(d, false), sb);
  ASSERT_TRUE(b.take_control(false));
  ASSERT_TRUE(start(b, sb, 9));
  ASSERT_TRUE(settle(b, [&] { return b.state_of(9)->state == JobState::Running; }))
      << sb.all_logs();
  ASSERT_EQ(::rename(stale.c_str(), d.journal().c_str()), 0); // the stale rename lands
  ASSERT_FALSE(knows_job(on_disk(d), 9));
  ASSERT_TRUE(start(b, sb, 10));
  EXPECT_TRUE(sb.logged("was removed or replaced under the controller in control"))
      << sb.all_logs();
  const JournalTable t = on_disk(d);
  EXPECT_TRUE(knows_job(t, 9)) << "what B wrote before the stale rename is lost";
  EXPECT_TRUE(knows_job(t, 10)) << sb.all_logs();
  EXPECT_FALSE(a.check_control());
}
