// SPDX-License-Identifier: GPL-2.0-or-later
//
// Issue 40 item 5, no journal I/O under Slurm's locks: an interactive job
// whose setup is over within switch_interactive_wait is applied inside
// switch_p_job_start (settle_setup(), Slurm's locks held), but the journal
// records of its launch are synced by the core's syncer thread, never
// there.  While that fdatasync does not return (StateSaveLocation's
// storage stalls), settle_setup() gives up after one more wait and leaves
// the launch to the worker; with a healthy disk it still releases the
// launch itself.  The fdatasync is gated by the test (JournalIo), which
// opens the gate only after settle_setup() returned: a settle_setup() that
// synced under the locks would wait for the gate's own 30 s bound.
#include "core_testing.hpp"
#include "ctld/core.hpp"
#include "fake_slurm.hpp"
#include "harness.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <unistd.h>

using namespace switchlua;
using switchlua::test::FakeSlurm;
using switchlua::test::TempDir;
using namespace std::chrono_literals;

namespace {

/// The fdatasync gate: once armed, the next fdatasync waits until the test
/// opens it (at most 30 s).  Global: JournalIo takes function pointers.
struct SyncGate {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false;
  bool blocked = false;   ///< an fdatasync is waiting at the gate
  bool open = false;      ///< the test opened it
  bool timed_out = false; ///< the 30 s bound opened it
};
SyncGate *g_gate = nullptr;

int gated_fdatasync(int fd) {
  {
    std::unique_lock l(g_gate->mu);
    if (g_gate->armed && !g_gate->open) {
      g_gate->blocked = true;
      g_gate->cv.notify_all();
      g_gate->timed_out = !g_gate->cv.wait_for(l, 30s, [] { return g_gate->open; });
    }
  }
  return ::fdatasync(fd);
}

constexpr std::uint32_t kJob = 8;

/// A core in control with a journal, switch_interactive_wait `wait_ms`, and
/// interactive job kJob started under Slurm's locks (the fence_write
/// fixture: its job_start waits for <gate>.start).  The locks stay held.
struct Rig {
  TempDir d;
  FakeSlurm slurm;
  SyncGate gate;
  std::string start = (d.dir / "gate").string();
  std::unique_ptr<CtldCore> core;

  explicit Rig(std::uint32_t wait_ms) {
    g_gate = &gate;
    CoreOptions o = test::ha_core_options(d, true, "fence_write");
    o.journal_io = {.fdatasync = gated_fdatasync};
    o.config.interactive_wait_ms = wait_ms;
    core = std::make_unique<CtldCore>(std::move(o), slurm);
    JobArgs j;
    j.job_id = kJob;
    j.name = "ok";
    j.nodes = "node1";
    j.node_names = {"node1"};
    j.num_nodes = 1;
    j.network = start;
    j.batch = false;
    slurm.lock(); // as select_nodes() around switch_p_job_start
    EXPECT_TRUE(core->job_start(j, false));
    // Its "setup started" record synced (the syncer does not need the
    // locks) and the hook running, waiting for the test.
    EXPECT_TRUE(test::eventually([&] { return slurm.logged("setup job_id=8 "); }, 60s))
        << slurm.all_logs();
  }
  ~Rig() {
    open_gate();
    if (slurm_locked)
      slurm.unlock();
    core.reset();
    g_gate = nullptr;
  }
  void arm() {
    std::lock_guard l(gate.mu);
    gate.armed = true;
  }
  void open_gate() {
    {
      std::lock_guard l(gate.mu);
      gate.open = true;
    }
    gate.cv.notify_all();
  }
  bool blocked() {
    std::lock_guard l(gate.mu);
    return gate.blocked;
  }
  /// Lets the job's job_start return, then settle_setup() as the glue calls
  /// it, the locks still held; its answer.
  bool settle() {
    std::ofstream(start + ".start") << "go\n";
    return core->settle_setup(kJob);
  }
  void unlock() {
    slurm.unlock();
    slurm_locked = false;
  }
  bool slurm_locked = true;
};

} // namespace

TEST(InlineSync, ALaunchWhoseRecordIsNotSyncedWithinTheWaitIsLeftToTheWorker) {
  Rig r(3000); // within the setting's bounds (100) times 30: a loaded machine
  r.arm();
  const bool settled = r.settle();
  const bool blocked = r.blocked();
  const bool launched = r.slurm.did("end_configuring 8");
  {
    std::lock_guard l(r.gate.mu);
    EXPECT_FALSE(r.gate.timed_out) << "settle_setup waited for the fdatasync under Slurm's locks";
  }
  EXPECT_FALSE(settled) << r.slurm.all_logs();
  EXPECT_TRUE(blocked) << "the setup's result was not applied within the wait (a slow hook?)\n"
                       << r.slurm.all_logs();
  EXPECT_FALSE(launched) << "the launch was released before its record was durable";
  EXPECT_TRUE(r.slurm.logged("its journal record not synced within switch_interactive_wait=3000 "
                             "ms: the launch is delayed until it is"))
      << r.slurm.all_logs();
  r.unlock();
  r.open_gate();
  EXPECT_TRUE(test::eventually([&] { return r.slurm.did("end_configuring 8"); }, 60s))
      << "the worker never released the launch once its record was synced\n"
      << r.slurm.all_logs();
}

TEST(InlineSync, ALaunchWhoseRecordIsSyncedWithinTheWaitIsReleasedInside) {
  Rig r(20000); // far above any fdatasync of a healthy disk
  const bool settled = r.settle();
  const bool launched = r.slurm.did("end_configuring 8");
  EXPECT_TRUE(settled) << r.slurm.all_logs();
  EXPECT_TRUE(launched) << r.slurm.all_logs();
  r.unlock();
  EXPECT_EQ(r.core->drain_events(), 0u) << "the outcome was applied once, not queued again";
}
