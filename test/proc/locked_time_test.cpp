// SPDX-License-Identifier: GPL-2.0-or-later
//
// Issue 22, jobs of any size under Slurm's locks: the plugin's C ABI
// (plugin/switch_lua_core.h) driven as the glue drives it, with the real
// supervisor and runner running test/fixtures/large_job.lua (which
// reads every node) and the journal in a temporary folder, for
// synthetic job tables of 3, 100, 1,000 and 10,000 nodes.  Times every entry
// point that slurmctld calls with its locks held, and the longest hold of
// those locks by the core's worker (ops->lock to ops->unlock) while it
// applies the setup's and the teardown's outcomes:
//
//   job_start    slc_ctld_job_start (switch_p_job_start: the job table, the
//                journal's record written, not synced: the core's syncer
//                thread fdatasyncs it outside the locks before the call)
//   apply setup  the worker's longest lock hold until the setup is applied
//   pack         slc_ctld_pack (switch_p_pack_jobinfo: every job state save)
//   stepinfo     slc_ctld_stepinfo (switch_p_build_stepinfo: every step)
//   unpack       decode_job_state, what slc_ctld_unpack reads at a restart
//   job_complete slc_ctld_job_complete (switch_p_job_complete)
//   apply td     the worker's longest lock hold until the teardown is applied
//                (the handle is released there: jobinfo_free has nothing left)
//   settle       slc_ctld_settle_setup (switch_p_job_start of an interactive
//                job, right after its job_start: waits for the setup at most
//                switch_interactive_wait, then for its record's sync at most
//                as long again; issue 40)
//
// Prints the median of each (microseconds), per node, and its growth from
// 1,000 to 10,000 nodes (10 is linear).  A benchmark: asserts only what
// must hold at every size (the setup runs and ends, the records decode
// with every node, the teardown ends).  It also counts every fsync(2) and
// fdatasync(2) of the plugin's code by where the calling thread was
// (inside an entry point, the worker holding Slurm's locks, the stop, or
// outside them: the core's syncer thread), linked with
// --wrap=fsync,--wrap=fdatasync (issue 40: StateSaveLocation's storage may
// stall; Slurm alone does not wait for it under its locks).
#include "ctld/persist.hpp"
#include "plugin/switch_lua_core.h"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using namespace switchlua;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

/// Where the calling thread is when it calls fsync(2) or fdatasync(2).
enum Place : int {
  kOutside,  ///< no Slurm lock held: the core's syncer thread
  kEntry,    ///< inside an entry point of the C ABI, as slurmctld calls them (its locks held)
  kHold,     ///< holding the fake's locks: the core's worker, while slurmctld runs
  kStopping, ///< holding them in slc_ctld_stop_children (switch_p_save: slurmctld stops)
  kPlaces
};
thread_local Place t_place = kOutside;
thread_local bool t_stopping = false;
std::array<std::atomic<int>, kPlaces> g_syncs{};

void count_sync() {
  ++g_syncs[t_place];
}

/// Times one entry point called as slurmctld calls it (under its locks):
/// `f()`'s result, its duration added to `us`.
template <class F> auto entry(double &us, F f) {
  t_place = kEntry;
  const auto t0 = Clock::now();
  auto r = f();
  us = us_since(t0);
  t_place = kOutside;
  return r;
}

} // namespace

// The linker's --wrap (meson.build): the plugin's own calls land here.
extern "C" {
int __real_fdatasync(int fd);
int __real_fsync(int fd);
int __wrap_fdatasync(int fd) {
  count_sync();
  return __real_fdatasync(fd);
}
int __wrap_fsync(int fd) {
  count_sync();
  return __real_fsync(fd);
}
}

namespace {

/// A fake slurmctld: its locks (a mutex whose holds by the worker are
/// timed), and which jobs ended CONFIGURING or were forgotten.
struct Fake {
  std::mutex locks;
  Clock::time_point locked_at;
  std::mutex mu;
  std::condition_variable cv;
  double longest_hold_us = 0;
  std::set<std::uint32_t> ended, forgotten;
  std::vector<std::string> errors;
};
Fake g_fake;

void fake_lock() {
  g_fake.locks.lock();
  g_fake.locked_at = Clock::now();
  t_place = t_stopping ? kStopping : kHold;
}
void fake_unlock() {
  t_place = kOutside;
  const double held = us_since(g_fake.locked_at);
  {
    std::lock_guard g(g_fake.mu);
    g_fake.longest_hold_us = std::max(g_fake.longest_hold_us, held);
  }
  g_fake.locks.unlock();
}
void fake_end(std::uint32_t id) {
  std::lock_guard g(g_fake.mu);
  g_fake.ended.insert(id);
  g_fake.cv.notify_all();
}
void fake_forget(std::uint32_t id) {
  std::lock_guard g(g_fake.mu);
  g_fake.forgotten.insert(id);
  g_fake.cv.notify_all();
}
void fake_log(int level, const char *line) {
  if (level != SLC_LOG_ERROR)
    return;
  std::lock_guard g(g_fake.mu);
  g_fake.errors.emplace_back(line);
}
void fake_requeue(std::uint32_t, const char *r) {
  fake_log(SLC_LOG_ERROR, (std::string("requeue: ") + r).c_str());
}
void fake_hold(std::uint32_t, const char *, bool) {}
void fake_drain(const char *, const char *r) {
  fake_log(SLC_LOG_ERROR, (std::string("drain: ") + r).c_str());
}
void fake_nothing() {}

const slc_ctld_ops_t kOps = {
    .lock = fake_lock,
    .unlock = fake_unlock,
    .end_configuring = fake_end,
    .requeue = fake_requeue,
    .requeue_held = fake_requeue,
    .cancel = fake_requeue,
    .hold = fake_hold,
    .release = fake_hold,
    .drain = fake_drain,
    .forget = fake_forget,
    .save_state = fake_nothing,
    .log = fake_log,
    .job_may_run = nullptr,
};

/// Waits (at most 60 s) until `id` is in `set` and the worker has let go of
/// the locks it held meanwhile; takes its longest hold since the last call.
bool wait_in(const std::set<std::uint32_t> &set, std::uint32_t id, double &hold_us) {
  std::unique_lock g(g_fake.mu);
  const bool ok = g_fake.cv.wait_for(g, std::chrono::seconds(60), [&] { return set.count(id); });
  g.unlock();
  {
    std::lock_guard held(g_fake.locks);
  } // the hold that added `id` is over
  g.lock();
  hold_us = std::exchange(g_fake.longest_hold_us, 0);
  return ok;
}

constexpr std::array kColumns = {"job_start", "apply setup",  "pack",     "stepinfo",
                                 "unpack",    "job_complete", "apply td", "settle"};
using Row = std::array<double, kColumns.size()>;

/// The job table of job `id` on `n` nodes (names and pointers kept by the
/// caller while `job` is used).
struct JobOf {
  std::vector<std::string> names;
  std::vector<const char *> ptrs;
  std::string nodes;
  slc_job_t job{};
  JobOf(std::uint32_t id, std::uint32_t n);
};

JobOf::JobOf(std::uint32_t id, std::uint32_t n) {
  for (std::uint32_t i = 1; i <= n; ++i)
    names.push_back(fmt::format("nid{:05}", i));
  for (const std::string &s : names)
    ptrs.push_back(s.c_str());
  nodes = n == 1 ? names[0] : fmt::format("nid[00001-{:05}]", n);
  job.job_id = id;
  job.num_nodes = n;
  job.name = "large";
  job.user_name = "alice";
  job.nodes = nodes.c_str();
  job.node_names = ptrs.data();
  job.node_names_count = n;
  job.network = "vni";
  job.batch = true;
  job.requeue_allowed = true;
  job.submit_time = 1000 + id;
}

/// An interactive job of `n` nodes: job_start, then settle_setup under the
/// same locks, as switch_p_job_start; settle_setup's time (us).
double interactive_job(std::uint32_t id, std::uint32_t n) {
  JobOf of(id, n);
  of.job.batch = false;
  double us = 0, ignored = 0;
  void *h = entry(ignored, [&] { return slc_ctld_job_start(&of.job); });
  EXPECT_NE(h, nullptr) << n << " nodes: not managed";
  if (!h)
    return us;
  entry(us, [&] { return slc_ctld_settle_setup(id); });
  EXPECT_TRUE(wait_in(g_fake.ended, id, ignored)) << n << " nodes: the launch was never released";
  entry(ignored, [&] {
    slc_ctld_job_complete(id, h, nullptr);
    return 0;
  });
  EXPECT_TRUE(wait_in(g_fake.forgotten, id, ignored)) << n << " nodes: the teardown never ended";
  EXPECT_EQ(slc_jobinfo_free(h, id), 0);
  return us;
}

/// One job of `n` nodes through every entry point, then an interactive one
/// (`id` + kInteractive); the times (us).
constexpr std::uint32_t kInteractive = 1000000;
Row one_job(std::uint32_t id, std::uint32_t n) {
  JobOf of(id, n);
  const slc_job_t &job = of.job;
  Row r{};
  void *h = entry(r[0], [&] { return slc_ctld_job_start(&job); });
  EXPECT_NE(h, nullptr) << n << " nodes: not managed";
  if (!h)
    return r;
  EXPECT_TRUE(wait_in(g_fake.ended, id, r[1])) << n << " nodes: the setup never ended";
  char *buf = nullptr;
  std::size_t len = 0;
  entry(r[2], [&] {
    slc_ctld_pack(h, &buf, &len);
    return 0;
  });
  const std::string packed(buf ? buf : "", len);
  slc_free(buf);
  const slc_step_facts_t facts{.network = "vni", .num_tasks = n};
  EXPECT_EQ(entry(r[3], [&] { return slc_ctld_stepinfo(h, &facts, &buf, &len); }), 1)
      << n << " nodes: no stepinfo";
  slc_free(buf);
  auto t0 = Clock::now();
  auto decoded = decode_job_state(packed);
  r[4] = us_since(t0);
  EXPECT_TRUE(decoded && *decoded && (*decoded)->job.node_names.size() == n)
      << n << " nodes: the packed state does not decode with every node";
  entry(r[5], [&] {
    slc_ctld_job_complete(id, h, nullptr);
    return 0;
  });
  EXPECT_TRUE(wait_in(g_fake.forgotten, id, r[6])) << n << " nodes: the teardown never ended";
  // The teardown's end released the handle (CPort::forget): Slurm's later
  // jobinfo_free leaves it alone.
  EXPECT_EQ(slc_jobinfo_free(h, id), 0);
  r[7] = interactive_job(id + kInteractive, n);
  return r;
}

using switchlua::test::TempDir;

} // namespace

namespace {

using Table = std::map<std::uint32_t, Row>;

/// Jobs per size (after one that warms up); the table shows their median.
constexpr int kReps = 9;

/// Every size, kReps jobs each after one that warms up; the medians (for
/// settle, the longest).
Table run_sizes(const char *state_dir, std::uint32_t &id) {
  const std::string script = std::string(SWITCHLUA_FIXTURES) + "/large_job.lua";
  Table median;
  EXPECT_EQ(slc_ctld_init(&kOps, script.c_str(), "switch_timeout=60", SWITCHLUA_LIBEXEC, state_dir),
            0);
  EXPECT_EQ(slc_ctld_take_control(false), 0);
  for (std::uint32_t n : {3u, 100u, 1000u, 10000u}) {
    one_job(++id, n); // warms the caches, the supervisor and the runner
    std::vector<Row> rows;
    for (int rep = 0; rep < kReps; ++rep)
      rows.push_back(one_job(++id, n));
    Row m{};
    for (std::size_t c = 0; c < kColumns.size(); ++c) {
      std::vector<double> v;
      for (const Row &r : rows)
        v.push_back(r[c]);
      std::sort(v.begin(), v.end());
      // settle: its longest (a wait that ran out makes the next 15
      // interactive jobs skip theirs, so its median is the skip's).
      m[c] = kColumns[c] == std::string_view("settle") ? v.back() : v[v.size() / 2];
    }
    median[n] = m;
  }
  t_stopping = true;
  slc_ctld_stop_children();
  t_stopping = false;
  slc_ctld_fini();
  return median;
}

void print(const char *title, Table &median) {
  std::printf("%s\n%8s", title, "nodes");
  for (const char *c : kColumns)
    std::printf(" %12s", c);
  std::printf("\n");
  for (const auto &[n, m] : median) {
    std::printf("%8u", n);
    for (double v : m)
      std::printf(" %12.1f", v);
    std::printf("\n%8s", "/node");
    for (double v : m)
      std::printf(" %12.3f", v / n);
    std::printf("\n");
  }
  std::printf("%8s", "10k/1k");
  for (std::size_t c = 0; c < kColumns.size(); ++c)
    std::printf(" %12.2f", median[10000][c] / median[1000][c]);
  std::printf("\n");
}

} // namespace

TEST(LockedTime, EveryEntryPointUnderSlurmsLocksFor3To10000Nodes) {
  TempDir state;
  slc_set_slurm_user(::getuid());
  std::uint32_t id = 100;
  Table journal = run_sizes(state.dir.c_str(), id);
  std::array<int, kPlaces> syncs{};
  for (int p = 0; p < kPlaces; ++p)
    syncs[p] = g_syncs[p].load();
  Table none = run_sizes(nullptr, id);
  {
    std::lock_guard g(g_fake.mu);
    EXPECT_TRUE(g_fake.errors.empty()) << g_fake.errors.front();
  }
  // None inside an entry point nor by the worker: the records are synced
  // by the syncer thread, and so is a journal compaction (the file past
  // 1 MiB: every few 10,000-node jobs), outside Slurm's locks.  At the stop
  // only what was written after the last sync before the locks were taken.
  std::printf("fsync/fdatasync calls with the journal, by where the thread was: %d outside "
              "Slurm's locks (the syncer), %d inside an entry point, %d by the worker "
              "holding Slurm's locks, %d at the stop (switch_p_save, holding them)\n",
              syncs[kOutside], syncs[kEntry], syncs[kHold], syncs[kStopping]);
  EXPECT_GT(syncs[kOutside], 0) << "the wrap counted nothing: the journal's syncs went elsewhere";
  EXPECT_EQ(syncs[kEntry], 0) << "an fsync or fdatasync inside an entry point";
  EXPECT_EQ(syncs[kHold], 0) << "an fsync or fdatasync by the worker holding Slurm's locks";
  std::printf("time under Slurm's locks, microseconds, median of %d jobs (and per node); "
              "10k/1k: growth from 1,000 to 10,000 nodes, 10 is linear\n",
              kReps);
  print("with the journal (StateSaveLocation in a temporary folder; job_start's "
        "record synced by the syncer thread, the worker's records under its lock)",
        journal);
  print("without a journal (no StateSaveLocation: what is not I/O)", none);
}

namespace {

/// The admission gate's cost per call (issue 38): slc_ctld_job_admit, as
/// Slurm 25.11+'s test_only call, for `queued` JobIds each asked twice (the
/// scheduler asks again on every pass), with `params`; job `holder` (one
/// node) first takes the pool's IDs when `holder` is not 0.  Every answer
/// must be `want`.  Returns the median, the 99th percentile and the
/// longest call (us; the longest is the machine's: a preemption).
std::array<double, 3> admit_cost(const char *state_dir, const char *params, std::uint32_t holder,
                                 std::uint32_t queued, bool want) {
  const std::string script = std::string(SWITCHLUA_FIXTURES) + "/large_job.lua";
  EXPECT_EQ(slc_ctld_init(&kOps, script.c_str(), params, SWITCHLUA_LIBEXEC, state_dir), 0);
  EXPECT_EQ(slc_ctld_take_control(false), 0);
  void *h = nullptr;
  double ignored = 0;
  JobOf of(holder, 1);
  if (holder != 0) {
    h = entry(ignored, [&] { return slc_ctld_job_start(&of.job); });
    EXPECT_TRUE(h && wait_in(g_fake.ended, holder, ignored)) << "the holder's setup never ended";
  }
  std::vector<double> us;
  std::uint32_t wrong = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (std::uint32_t id = 1; id <= queued; ++id) {
      double t = 0;
      wrong += entry(t, [&] { return slc_ctld_job_admit(holder + id); }) != want;
      us.push_back(t);
    }
  EXPECT_EQ(wrong, 0u) << "admit answered other than " << want;
  if (h) {
    entry(ignored, [&] {
      slc_ctld_job_complete(holder, h, nullptr);
      return 0;
    });
    EXPECT_TRUE(wait_in(g_fake.forgotten, holder, ignored)) << "the holder's teardown never ended";
    EXPECT_EQ(slc_jobinfo_free(h, holder), 0);
  }
  t_stopping = true;
  slc_ctld_stop_children();
  t_stopping = false;
  slc_ctld_fini();
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100], us.back()};
}

} // namespace

// Issue 38, the admission gate (switch.lua(5), POOLS): Slurm 25.11+ asks
// switch_p_job_start(test_only) of every queued job on every scheduling
// pass, under its locks.  10,000 queued jobs, each asked twice: with no
// pool declared (one atomic load: the baseline), and with a pool declared
// whose one ID a running job holds (every job kept PENDING; the map of
// waiting jobs grows to 10,000).  A benchmark: prints the median, the 99th
// percentile and the longest call, and their ratio to the baseline;
// asserts only the answers.
TEST(LockedTime, AdmissionGateFor10000QueuedJobs) {
  TempDir state;
  slc_set_slurm_user(::getuid());
  constexpr std::uint32_t kQueued = 10000;
  const auto base = admit_cost(state.dir.c_str(), "switch_timeout=60", 0, kQueued, true);
  const auto gate =
      admit_cost(state.dir.c_str(), "switch_timeout=60,switch_pool_vni=5", 500000, kQueued, false);
  std::printf("admission gate (switch_p_job_start test_only), %u queued jobs asked twice, "
              "microseconds per call (the longest includes any preemption of this process)\n"
              "%-32s %9s %9s %9s\n%-32s %9.3f %9.3f %9.1f\n%-32s %9.3f %9.3f %9.1f\n"
              "%-32s %9.1f %9.1f\n",
              kQueued, "", "median", "p99", "longest", "no pool declared (baseline)", base[0],
              base[1], base[2], "pool empty, all kept PENDING", gate[0], gate[1], gate[2],
              "ratio to the baseline", base[0] > 0 ? gate[0] / base[0] : 0.0,
              base[1] > 0 ? gate[1] / base[1] : 0.0);
}
