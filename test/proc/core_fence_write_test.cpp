// SPDX-License-Identifier: GPL-2.0-or-later
//
// The write half of the hand-over (issue 40; switch.lua(5), HIGH
// AVAILABILITY): controller A runs one job through its journal batches
// (the setup started; the setup accepted and the launch released, or the
// failed setup and its requeue; the teardown started; the teardown over,
// or its drain) and at one step of one batch another controller, B, takes
// control (a fenced takeover: a new lock file renamed onto A's, the epoch
// one higher).  The steps: before the batch (its fence check), inside its
// write(2), inside its fdatasync, right after the fdatasync, and while the
// batch's effect happens (the hook runs, the launch, requeue or drain is
// asked of Slurm).  Whatever the step, once the loss can be seen A starts
// no hook, asks Slurm nothing in a later hold of its locks, writes no
// journal byte and says "no longer in control" once; B, replaying the
// journal (reconcile_journal: what it says is not over is torn down), ends
// with every attempt over, the job set up at most once and torn down at
// most once per successful setup (a failed teardown runs again: the
// results it returned are not adopted, switch.lua(5)).
//
// The core_fence/core_ha tests' helpers, as there: the "fake lock" is a
// second real CtldCore taking control; there is no fake clock in the core
// (its periodic fence check runs every 500 ms on the worker and may find
// the loss first, which only makes A do less).  Every wait is on an event
// with a generous deadline; nothing asserts a duration.
#include "core_testing.hpp"
#include "ctld/core.hpp"
#include "ctld/fence.hpp"
#include "ctld/journal.hpp"
#include "fake_slurm.hpp"
#include "harness.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

using namespace switchlua;
using switchlua::test::FakeSlurm;
using switchlua::test::TempDir;

namespace {

/// Where in a batch the lock is lost.
enum class At {
  Before,      ///< between batches: the batch's own fence check must see it
  Write,       ///< inside the batch's write(2) (the bytes still land)
  Fdatasync,   ///< inside its fdatasync, before the disk is asked
  Synced,      ///< right after its fdatasync returned
  Action,      ///< while Slurm carries out its first effect (launch, requeue, drain)
  HookRunning, ///< while the hook the batch started runs
};

/// The lock loss of one test: armed for one batch and step, fired once
/// (another controller takes control), with what controller A had done
/// when it fired.  Global: JournalIo takes plain function pointers.
struct Loss {
  std::mutex mu;
  std::optional<At> armed;
  bool fired = false;
  std::function<void()> take;          ///< B's take_control
  std::function<void()> note;          ///< records A's counts at the loss
  std::atomic<long> bytes_after{0};    ///< journal bytes A wrote after the loss
  std::atomic<int> snapshots_after{0}; ///< snapshots (their fsync) A wrote after it
  std::atomic<bool> lost{false};

  /// Fires if armed at `at`; true when it fired now.
  bool at(At at) {
    std::lock_guard l(mu);
    if (armed != at || fired)
      return false;
    fired = true;
    armed.reset();
    note();
    lost = true;
    take();
    return true;
  }
  void arm(At at) {
    std::lock_guard l(mu);
    armed = at;
  }
  bool has_fired() {
    std::lock_guard l(mu);
    return fired;
  }
};
Loss *g_loss = nullptr;

ssize_t lossy_write(int fd, const void *buf, std::size_t n) {
  if (!g_loss->at(At::Write) && g_loss->lost)
    g_loss->bytes_after += static_cast<long>(n);
  return ::write(fd, buf, n);
}
// The fdatasync of a batch written before the loss is not counted: it
// writes no new byte (the bytes it makes durable went to the file B's
// take-over replaced, or are in what B read).
int lossy_fdatasync(int fd) {
  g_loss->at(At::Fdatasync);
  const int r = ::fdatasync(fd);
  g_loss->at(At::Synced);
  return r;
}
int lossy_fsync(int fd) { // a snapshot's (compaction)
  if (g_loss->lost)
    ++g_loss->snapshots_after;
  return ::fsync(fd);
}

/// Controller A's Slurm: a FakeSlurm whose launch, requeue and drain are
/// where an At::Action loss fires (after Slurm did it).
class LossySlurm final : public SlurmPort {
public:
  explicit LossySlurm(FakeSlurm &s) : s_(s) {}
  void lock() override { s_.lock(); }
  void unlock() override { s_.unlock(); }
  void end_configuring(std::uint32_t id) override {
    s_.end_configuring(id);
    g_loss->at(At::Action);
  }
  void requeue(std::uint32_t id, const std::string &r) override {
    s_.requeue(id, r);
    g_loss->at(At::Action);
  }
  void requeue_held(std::uint32_t id, const std::string &r) override { s_.requeue_held(id, r); }
  void cancel(std::uint32_t id, const std::string &r) override { s_.cancel(id, r); }
  void hold(std::uint32_t id, const std::string &n, bool h) override { s_.hold(id, n, h); }
  void release(std::uint32_t id, const std::string &n, bool r) override { s_.release(id, n, r); }
  void drain(const std::string &n, const std::string &r) override {
    s_.drain(n, r);
    g_loss->at(At::Action);
  }
  void forget(std::uint32_t id) override { s_.forget(id); }
  void save_state() override {}
  void log(LogLevel l, const std::string &line) override { s_.log(l, line); }

private:
  FakeSlurm &s_;
};

CoreOptions options(const TempDir &d, bool in_control) {
  return test::ha_core_options(d, in_control, "fence_write");
}

/// Waits (generously: 60 s, for a loaded machine) until `pred` holds;
/// false if it never does.
bool eventually(const std::function<bool()> &pred) {
  return test::eventually(pred, std::chrono::seconds(60));
}

/// The attempts not over in the journal on disk; -1 while it is not clean
/// (a record being appended).
long live_on_disk(const TempDir &d) {
  std::ifstream in(d.journal(), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  JournalScan scan = scan_journal(ss.str());
  if (scan.status != JournalScan::Status::Clean)
    return -1;
  JournalTable t;
  for (const auto &r : scan.records)
    t.apply(r);
  return static_cast<long>(t.live.size());
}

/// One case: the job's flow (its name in the fixture), the batch the loss
/// is armed for, and the step.
struct Case {
  const char *name;
  /// "ok", "fail" (setup fails, requeue), "broken" (teardown fails, drain),
  /// "inline" (an interactive job whose launch settle_setup() decides
  /// under Slurm's locks, switch_interactive_wait)
  const char *flow;
  const char *batch; ///< "setup", "launch", "requeue", "teardown", "forget", "drain"
  At at;
};

constexpr std::uint32_t kJob = 8;

/// The two controllers, A in control from its start, B standing by, and
/// what A had done when the lock was lost.
struct Rig {
  TempDir d;
  FakeSlurm sa, sb;
  LossySlurm pa{sa};
  Loss loss;
  std::string gate = (d.dir / "gate").string();
  std::unique_ptr<CtldCore> a, b;
  std::uint64_t epoch_a = 0;
  int holds_at = 0;
  std::size_t actions_at = 0;
  int hooks_at = 0;

  Rig() {
    g_loss = &loss;
    CoreOptions oa = options(d, true);
    oa.journal_io = {.write = lossy_write, .fdatasync = lossy_fdatasync, .fsync = lossy_fsync};
    oa.config.interactive_wait_ms = 60000; // the "inline" flow: a loaded machine
    a = std::make_unique<CtldCore>(std::move(oa), pa);
    b = std::make_unique<CtldCore>(options(d, false), sb);
    epoch_a = a->epoch();
    loss.note = [this] {
      holds_at = sa.holds.load();
      actions_at = sa.all_actions().size();
      hooks_at = hooks(sa);
    };
    loss.take = [this] { EXPECT_TRUE(b->take_control(false)) << sb.all_logs(); };
  }
  ~Rig() {
    a.reset(); // before the loss it points at
    b.reset();
    g_loss = nullptr;
  }
  static int hooks(FakeSlurm &s) {
    return s.count_logged(fmt::format("setup job_id={} ", kJob)) +
           s.count_logged(fmt::format("teardown job_id={} ", kJob));
  }
  bool a_stale() { return sa.logged("is no longer in control (epoch "); }
  /// Arms the loss when `batch` is the case's; At::Before fires it now.
  void arm(const Case &c, const char *batch) {
    if (std::string_view(c.batch) != batch)
      return;
    loss.arm(c.at);
    if (c.at == At::Before)
      loss.at(At::Before);
  }
  void open(const char *which) { std::ofstream(gate + which) << "open\n"; }
};

JobArgs job(const char *flow, const std::string &gate) {
  JobArgs j;
  j.job_id = kJob;
  j.name = flow;
  j.nodes = "node1";
  j.node_names = {"node1"};
  j.num_nodes = 1;
  j.network = gate;
  j.submit_time = 1000 + kJob;
  return j;
}

/// A runs the job through its batches, the loss armed for the case's
/// batch; every wait ends at the batch's effect or once A says it is stale.
void run_flow(Rig &r, const Case &c) {
  const std::string flow = c.flow;
  r.arm(c, "setup");
  r.sa.lock();
  r.a->job_start(job(c.flow, r.gate), flow == "fail");
  r.sa.unlock();
  ASSERT_TRUE(eventually([&] { return r.sa.logged("setup job_id=8 ") || r.a_stale(); }))
      << r.sa.all_logs();
  if (std::string_view(c.batch) == "setup" && c.at == At::HookRunning)
    r.loss.at(At::HookRunning);
  r.arm(c, flow == "fail" ? "requeue" : "launch");
  r.open(".start");
  if (flow == "inline") {
    // The launch's records are written and synced inside settle_setup():
    // it releases the launch (true) only while A is still in control.
    r.sa.lock();
    const bool settled = r.a->settle_setup(kJob);
    r.sa.unlock();
    EXPECT_EQ(settled, !r.loss.has_fired()) << r.sa.all_logs();
  }
  ASSERT_TRUE(eventually([&] {
    return r.sa.did(flow == "fail" ? "requeue 8" : "end_configuring 8") || r.a_stale();
  })) << r.sa.all_logs();
  if (flow == "fail")
    return;
  r.arm(c, "teardown");
  r.sa.lock();
  r.a->job_complete(kJob);
  r.sa.unlock();
  ASSERT_TRUE(eventually([&] { return r.sa.logged("teardown job_id=8 ") || r.a_stale(); }))
      << r.sa.all_logs();
  r.arm(c, flow == "broken" ? "drain" : "forget");
  r.open(".end");
  // The job's state goes at once, its effects (the drain) once synced.
  ASSERT_TRUE(eventually([&] {
    return (!r.a->state_of(kJob) && r.a->decisions_pending() == 0) || r.a_stale();
  })) << r.sa.all_logs();
}

/// What A did after the loss: nothing, and one line.
void expect_stale_a_did_nothing(Rig &r) {
  ASSERT_TRUE(eventually([&] { return r.a_stale() && r.a->calls_in_flight() == 0; }))
      << r.sa.all_logs();
  r.a->drain_events();
  EXPECT_FALSE(r.a->in_control());
  EXPECT_EQ(r.sa.count_logged(fmt::format("no longer in control (epoch {}, now ", r.epoch_a)), 1)
      << r.sa.all_logs();
  // One such line; a job_start Slurm asks of it afterwards says "is no
  // longer in control (another slurmctld took control since)" on its own.
  EXPECT_EQ(r.sa.count_logged("is no longer in control (epoch "), 1) << r.sa.all_logs();
  EXPECT_EQ(Rig::hooks(r.sa), r.hooks_at) << "a hook ran after the loss\n" << r.sa.all_logs();
  const auto acts = r.sa.all_actions();
  for (std::size_t i = r.actions_at; i < acts.size(); ++i)
    EXPECT_LE(r.sa.hold_of(acts[i]), r.holds_at)
        << "'" << acts[i] << "' asked of Slurm after the loss\n"
        << r.sa.all_logs();
  EXPECT_EQ(r.loss.bytes_after.load(), 0) << "journal bytes written after the loss";
  EXPECT_EQ(r.loss.snapshots_after.load(), 0) << "a journal snapshot written after the loss";
}

/// B replays the journal: every attempt over, each setup made once and
/// released once, no teardown run twice by one controller.
void expect_b_consistent(Rig &r, const Case &c) {
  r.open(".start");
  r.open(".end");
  EXPECT_TRUE(r.b->in_control());
  EXPECT_EQ(r.b->epoch(), r.epoch_a + 1);
  r.b->reconcile_journal();
  ASSERT_TRUE(eventually([&] {
    return live_on_disk(r.d) == 0 && r.b->calls_in_flight() == 0 && r.b->decisions_pending() == 0;
  })) << "B:\n"
      << r.sb.all_logs();
  const auto count = [&](const std::string &what) {
    return std::pair{r.sa.count_logged(what), r.sb.count_logged(what)};
  };
  const auto [setups_a, setups_b] = count("setup job_id=8 ");
  const auto [downs_a, downs_b] = count("teardown job_id=8 ");
  EXPECT_LE(setups_a, 1);
  EXPECT_EQ(setups_b, 0) << "B's Slurm never started the job again";
  EXPECT_LE(downs_a, 1) << r.sa.all_logs();
  EXPECT_LE(downs_b, 1) << r.sb.all_logs();
  const bool made = setups_a == 1 && std::string_view(c.flow) != "fail";
  if (std::string_view(c.flow) != "broken") {
    EXPECT_LE(downs_a + downs_b, 1) << "a teardown ran twice\nA:\n"
                                    << r.sa.all_logs() << "B:\n"
                                    << r.sb.all_logs();
  }
  if (made) {
    EXPECT_GE(downs_a + downs_b, 1) << "an allocation never released\nA:\n"
                                    << r.sa.all_logs() << "B:\n"
                                    << r.sb.all_logs();
  }
  EXPECT_FALSE(r.sb.logged("no longer in control")) << r.sb.all_logs();
  EXPECT_TRUE(r.b->check_control());
}

class LockLostDuringWrite : public ::testing::TestWithParam<Case> {};

TEST_P(LockLostDuringWrite, TheStaleControllerStopsAndTheNewOneReplaysAConsistentJournal) {
  const Case &c = GetParam();
  Rig r;
  ASSERT_TRUE(r.a->in_control()) << r.sa.all_logs();
  run_flow(r, c);
  ASSERT_TRUE(r.loss.has_fired()) << "step not reached\n" << r.sa.all_logs();
  expect_stale_a_did_nothing(r);
  expect_b_consistent(r, c);
}

const Case kCases[] = {
    {"setup_before_check", "ok", "setup", At::Before},
    {"setup_in_write", "ok", "setup", At::Write},
    {"setup_in_fdatasync", "ok", "setup", At::Fdatasync},
    {"setup_after_fdatasync", "ok", "setup", At::Synced},
    {"setup_while_job_start_runs", "ok", "setup", At::HookRunning},
    {"launch_in_write", "ok", "launch", At::Write},
    {"launch_in_fdatasync", "ok", "launch", At::Fdatasync},
    {"launch_after_fdatasync", "ok", "launch", At::Synced},
    {"launch_at_end_configuring", "ok", "launch", At::Action},
    {"teardown_before_check", "ok", "teardown", At::Before},
    {"teardown_in_write", "ok", "teardown", At::Write},
    {"teardown_in_fdatasync", "ok", "teardown", At::Fdatasync},
    {"teardown_after_fdatasync", "ok", "teardown", At::Synced},
    {"forget_in_write", "ok", "forget", At::Write},
    {"forget_in_fdatasync", "ok", "forget", At::Fdatasync},
    {"forget_after_fdatasync", "ok", "forget", At::Synced},
    {"requeue_in_write", "fail", "requeue", At::Write},
    {"requeue_in_fdatasync", "fail", "requeue", At::Fdatasync},
    {"requeue_after_fdatasync", "fail", "requeue", At::Synced},
    {"requeue_at_requeue", "fail", "requeue", At::Action},
    {"drain_in_write", "broken", "drain", At::Write},
    {"drain_in_fdatasync", "broken", "drain", At::Fdatasync},
    {"drain_after_fdatasync", "broken", "drain", At::Synced},
    {"drain_at_drain", "broken", "drain", At::Action},
    {"inline_launch_in_write", "inline", "launch", At::Write},
    {"inline_launch_in_fdatasync", "inline", "launch", At::Fdatasync},
    {"inline_launch_after_fdatasync", "inline", "launch", At::Synced},
};

INSTANTIATE_TEST_SUITE_P(EachStep, LockLostDuringWrite, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

} // namespace
