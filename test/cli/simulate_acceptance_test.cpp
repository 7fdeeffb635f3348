// SPDX-License-Identifier: GPL-2.0-or-later
//
// Acceptance: `switch-lua simulate` on the contract script (a copy with
// ALLOW_DIRECTIVES set to true), one test per directive of its header,
// asserting the outcome the header describes.  Skipped cleanly where the
// contract script (../shared/seeds/switch.lua) is absent.  Also `check`.
#include "run_cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// The contract script: $SWITCHLUA_SEED, else <source root>/../shared/seeds/switch.lua
/// (as test/unit/lua/seed_test.cpp and test/e2e/lib.sh find it).
fs::path seed_path() {
  if (const char *e = std::getenv("SWITCHLUA_SEED"))
    return e;
  return fs::path(SWITCHLUA_SOURCE_ROOT) / ".." / "shared" / "seeds" / "switch.lua";
}

const fs::path kSeed = seed_path();

using switchlua::test::CmdResult;

/// The CLI with no system slurm.conf (SlurmUser: root only), whatever the
/// host's /etc/slurm holds.
CmdResult run(const std::string &args) {
  return switchlua::test::run_cli(args, "SLURM_CONF=/nonexistent/slurm.conf ");
}

/// Timeline entries whose text is exactly `text`.
int count_text(const json &j, const std::string &text) {
  int n = 0;
  for (const auto &e : j["timeline"])
    n += e["text"] == text;
  return n;
}

/// The content hash slurmctld and check give the file: FNV-1a 64-bit.
std::string content_of(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : ss.str()) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/// The seed with ALLOW_DIRECTIVES (and optionally BLOCK_JOB_COMPLETE) flipped.
fs::path seed_copy(bool block_job_complete = false) {
  std::ifstream in(kSeed);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  auto flip = [&](const std::string &from, const std::string &to) {
    auto pos = s.find(from);
    if (pos != std::string::npos)
      s.replace(pos, from.size(), to);
  };
  flip("local ALLOW_DIRECTIVES = false", "local ALLOW_DIRECTIVES = true");
  if (block_job_complete)
    flip("local BLOCK_JOB_COMPLETE = false", "local BLOCK_JOB_COMPLETE = true");
  fs::path p = fs::temp_directory_path() /
               (block_job_complete ? "switchlua-seed-bjc.lua" : "switchlua-seed.lua");
  std::ofstream(p) << s;
  return p;
}

class Seed : public testing::Test {
protected:
  void SetUp() override {
    if (!fs::exists(kSeed))
      GTEST_SKIP() << "contract script not found at " << kSeed;
  }
  json simulate(const std::string &directives, const std::string &extra = "", bool bjc = false) {
    CmdResult r = run("simulate " + seed_copy(bjc).string() +
                      " --json --network switchlua:" + directives + " " + extra);
    EXPECT_EQ(r.status, 0) << r.out;
    try {
      return json::parse(r.out);
    } catch (const std::exception &e) {
      ADD_FAILURE() << "not JSON: " << r.out;
      return json::object();
    }
  }
  static int count(const json &j, const std::string &text) {
    int n = 0;
    for (const auto &e : j["timeline"])
      if (e["text"].get<std::string>().find(text) != std::string::npos)
        n++;
    return n;
  }
  static void expect_nodes(const json &j, const std::string &state,
                           const std::string &reason = "") {
    for (const auto &[name, n] : j["result"]["nodes"].items()) {
      EXPECT_EQ(n["state"], state) << name;
      if (!reason.empty()) { // braces: EXPECT_NE is an if/else of its own
        EXPECT_NE(n["reason"].get<std::string>().find(reason), std::string::npos) << n["reason"];
      }
    }
  }
};

TEST_F(Seed, CheckListsAllHooks) {
  CmdResult r = run("check --json " + kSeed.string());
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["hooks"].size(), 7u) << r.out;
  EXPECT_TRUE(j["missing"].empty());
}

TEST_F(Seed, DefaultPathSetsUpRunsStepsAndTearsDown) {
  json j = simulate("none", "--nodes 2");
  EXPECT_EQ(j["result"]["job_state"], "COMPLETED") << j.dump(1);
  expect_nodes(j, "IDLE");
  ASSERT_EQ(j["result"]["steps"].size(), 1u);
  const json &env = j["result"]["steps"][0]["env"]["node1"];
  EXPECT_EQ(env["SWITCHLUA_JOB_ID"], "1001");
  EXPECT_EQ(env["SWITCHLUA_RANK_HINT"], "7");
  EXPECT_EQ(env["SWITCHLUA_ENABLED"], "1");
  EXPECT_TRUE(env["SWITCHLUA_SHOULD_BE_UNSET"].is_null());
  EXPECT_EQ(env["SWITCHLUA_TOKEN"], "tok-1001");
  EXPECT_EQ(count(j, "job_complete started"), 1);
}

TEST_F(Seed, SkipDeclinesNoStepHooksNoJobComplete) {
  json j = simulate("skip");
  EXPECT_TRUE(j["result"]["steps"].empty());
  EXPECT_EQ(count(j, "declined the job"), 1);
  EXPECT_EQ(count(j, "job_complete started"), 0);
  expect_nodes(j, "IDLE");
}

TEST_F(Seed, DeferRequeuesARequeueableBatchJob) {
  json j = simulate("defer", "--batch");
  EXPECT_EQ(j["result"]["job_state"], "PENDING (requeued)");
  EXPECT_EQ(j["result"]["job_reason"].get<std::string>().rfind("switch setup failed", 0), 0u);
  EXPECT_EQ(count(j, "job_complete started"), 0);
  expect_nodes(j, "IDLE");
}

TEST_F(Seed, DeferCancelsWithoutRequeue) {
  json j = simulate("defer", "--no-requeue");
  EXPECT_EQ(j["result"]["job_state"], "CANCELLED");
  EXPECT_EQ(j["result"]["job_reason"], "switch setup failed: switch/lua job_start returned rc=-1");
  expect_nodes(j, "IDLE");
}

TEST_F(Seed, StartCrashIsAFailedSetup) {
  json j = simulate("start_crash", "--batch");
  EXPECT_EQ(j["result"]["job_state"], "PENDING (requeued)");
  EXPECT_NE(j["result"]["job_reason"].get<std::string>().find(
                "switch setup failed: switch/lua job_start raised an error"),
            std::string::npos)
      << j["result"]["job_reason"];
  EXPECT_EQ(count(j, "job_complete started"), 0);
}

TEST_F(Seed, CompleteAgainRetriesThenDrainsWhenBlocking) {
  json j = simulate("complete_again", "--retries 3", true);
  EXPECT_TRUE(j["config"]["block_job_complete"].get<bool>());
  EXPECT_EQ(count(j, "job_complete started"), 4); // the first call + 3 retries
  expect_nodes(j, "DRAINED", "still returned slurm.EAGAIN after switch_retries=3");
}

TEST_F(Seed, CompleteAgainWithoutBlockingIsAFailure) {
  json j = simulate("complete_again");
  EXPECT_EQ(count(j, "job_complete started"), 1);
  expect_nodes(j, "DRAINED", "block_job_complete is false");
}

TEST_F(Seed, CompleteCrashDrains) {
  json j = simulate("complete_crash");
  expect_nodes(j, "DRAINED", "switch/lua job_complete raised an error");
}

TEST_F(Seed, CompleteCrashWithDrainOffDoesNotDrain) {
  json j = simulate("complete_crash", "--drain-on-failure no");
  expect_nodes(j, "IDLE");
  EXPECT_EQ(count(j, "switch_drain_on_failure=no"), 1);
}

TEST_F(Seed, StepdWarnAndCrashDirectivesLetTheStepRun) {
  for (const char *d : {"preinit_warn", "preinit_crash", "init_warn", "init_crash", "postfini_warn",
                        "postfini_crash"}) {
    json j = simulate(d);
    ASSERT_EQ(j["result"]["steps"].size(), 1u) << d;
    EXPECT_FALSE(j["result"]["steps"][0]["failed"].get<bool>()) << d;
    expect_nodes(j, "IDLE");
  }
}

TEST_F(Seed, InitCrashSetsNoEnvironment) {
  json j = simulate("init_crash");
  EXPECT_TRUE(j["result"]["steps"][0]["env"].is_null() ||
              j["result"]["steps"][0]["env"]["node1"].empty())
      << j["result"]["steps"][0].dump();
}

TEST_F(Seed, PreinitAndInitFailFailTheStep) {
  for (const char *d : {"preinit_fail", "init_fail"}) {
    json j = simulate(d);
    EXPECT_TRUE(j["result"]["steps"][0]["failed"].get<bool>()) << d;
    EXPECT_EQ(count(j, "srun: error: Error configuring interconnect"), 1) << d;
    EXPECT_EQ(j["result"]["job_state"], "FAILED") << d;
  }
}

TEST_F(Seed, NoenvSetsNothing) {
  json j = simulate("noenv");
  EXPECT_FALSE(j["result"]["steps"][0]["failed"].get<bool>());
  EXPECT_TRUE(j["result"]["steps"][0]["env"]["node1"].empty());
}

TEST_F(Seed, PostfiniDrainDrainsTheNode) {
  json j = simulate("postfini_drain");
  expect_nodes(j, "DRAINED", "switch postfini failed: rc=-1 (switch/lua step_postfini JobId=");
}

TEST_F(Seed, RestartDuringTeardownReRunsJobCompleteWithTheSameJobinfo) {
  json j = simulate("complete_again", "--retries 2 --restart-during teardown", true);
  EXPECT_EQ(count(j, "slurmctld killed"), 1);
  EXPECT_EQ(count(j, "recovered after a slurmctld restart"), 1);
  EXPECT_GE(count(j, "tok-1001"), 2); // the same jobinfo reached job_complete again
  expect_nodes(j, "DRAINED");
}

TEST_F(Seed, RestartDuringTeardownThenSuccessReleasesTheNodes) {
  json j = simulate("none", "--restart-during teardown", true);
  EXPECT_EQ(count(j, "recovered after a slurmctld restart"), 1);
  expect_nodes(j, "IDLE");
}

TEST_F(Seed, RestartDuringSetupRunsJobStartAgain) {
  json j = simulate("none", "--restart-during setup");
  EXPECT_EQ(count(j, "running job_start again"), 1);
  EXPECT_EQ(j["result"]["steps"].size(), 1u);
}

TEST(Simulate, TimedOutSetupFailsAndTearsDownWithNil) {
  fs::path p = fs::temp_directory_path() / "switchlua-hang.lua";
  std::ofstream(p)
      << "function slurm_switch_job_start(job) os.execute('sleep 30') "
         "return slurm.SUCCESS, {} end\n"
         "function slurm_switch_job_complete(job, ji) "
         "slurm.log_info('teardown jobinfo=%s', tostring(ji)) return slurm.SUCCESS end\n";
  CmdResult r = run("simulate " + p.string() + " --json --network fabric --timeout 1 --no-requeue");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["result"]["job_state"], "CANCELLED");
  EXPECT_EQ(j["result"]["job_reason"].get<std::string>().rfind("switch setup timed out", 0), 0u);
  int nil_teardowns = 0;
  for (const auto &e : j["timeline"])
    if (e["text"].get<std::string>().find("teardown jobinfo=nil") != std::string::npos)
      nil_teardowns++;
  EXPECT_EQ(nil_teardowns, 1) << r.out;
}

// Issue 19 item 6: the fault injection says when there was nothing to
// interrupt instead of silently injecting nothing.
TEST(Simulate, RestartDuringTeardownSaysSoWhenNoTeardownRuns) {
  fs::path p = fs::temp_directory_path() / "switchlua-declines.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) return slurm.SUCCESS, nil end\n";
  CmdResult r =
      run("simulate " + p.string() + " --json --network fabric --restart-during teardown");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(count_text(j, "--restart-during teardown: nothing injected: no job_complete runs for "
                          "the job"),
            1)
      << r.out;
  int kills = 0;
  for (const auto &e : j["timeline"])
    kills += e["text"].get<std::string>().find("slurmctld killed") != std::string::npos;
  EXPECT_EQ(kills, 0) << r.out;
}

// Issue 19 item 6: a job_complete that ends at once is still interrupted:
// the kill is injected under the locks of the job's end, before the call
// can report (it was missed when the simulator polled every 20 ms).
TEST(Simulate, RestartDuringAQuickTeardownIsAlwaysInjected) {
  fs::path p = fs::temp_directory_path() / "switchlua-quick-teardown.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) return slurm.SUCCESS, {k = 1} end\n"
                      "function slurm_switch_job_complete(job, ji) return slurm.SUCCESS end\n";
  for (int i = 0; i < 5; ++i) {
    CmdResult r =
        run("simulate " + p.string() + " --json --network fabric --restart-during teardown");
    ASSERT_EQ(r.status, 0) << r.out;
    json j = json::parse(r.out);
    int kills = 0;
    for (const auto &e : j["timeline"])
      kills += e["text"].get<std::string>().find("slurmctld killed") != std::string::npos;
    EXPECT_EQ(kills, 1) << "run " << i << ": " << r.out;
  }
}

TEST(Simulate, EagainAfterAnAbandonedSetupWithoutBlockingDrainsAtOnce) {
  // Issue 9 item 1: block_job_complete false, job_start past switch_timeout,
  // job_complete(nil) returns EAGAIN: a failure at the first EAGAIN, and the
  // nodes are not held meanwhile.
  fs::path p = fs::temp_directory_path() / "switchlua-abandon-eagain.lua";
  std::ofstream(p) << "function slurm_switch_block_job_complete() return false end\n"
                      "function slurm_switch_job_start(job) os.execute('sleep 30') "
                      "return slurm.SUCCESS, {} end\n"
                      "function slurm_switch_job_complete(job, ji) return slurm.EAGAIN end\n";
  CmdResult r =
      run("simulate " + p.string() + " --json --network fabric --timeout 1 --no-requeue --nodes 2");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  int completes = 0, node_holds = 0;
  for (const auto &e : j["timeline"]) {
    std::string t = e["text"];
    completes += t.find("job_complete started") != std::string::npos;
    node_holds += t.find("job and nodes") != std::string::npos;
  }
  EXPECT_EQ(completes, 1) << r.out;
  EXPECT_EQ(node_holds, 0) << r.out;
  for (const auto &[name, n] : j["result"]["nodes"].items()) {
    EXPECT_EQ(n["state"], "DRAINED") << name;
    EXPECT_EQ(n["reason"], "switch teardown failed: JobId=1001 switch/lua job_complete returned "
                           "slurm.EAGAIN but block_job_complete is false")
        << name;
  }
}

TEST(Simulate, CancelDuringSetupIsNotAFailureAndTearsDownOnce) {
  fs::path p = fs::temp_directory_path() / "switchlua-slow.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) os.execute('sleep 1') "
                      "return slurm.SUCCESS, {vni = 7} end\n"
                      "function slurm_switch_job_complete(job, ji) "
                      "slurm.log_info('teardown vni=%s', tostring(ji and ji.vni)) "
                      "return slurm.SUCCESS end\n";
  CmdResult r =
      run("simulate " + p.string() + " --json --network fabric --batch --cancel-during-setup");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["result"]["job_state"], "CANCELLED");
  EXPECT_EQ(j["result"]["job_reason"], "") << "a cancel is not a fabric failure";
  int teardowns = 0, requeues = 0;
  for (const auto &e : j["timeline"]) {
    std::string t = e["text"];
    teardowns += t.find("teardown vni=7") != std::string::npos;
    requeues += t.find("requeued") != std::string::npos;
  }
  EXPECT_EQ(teardowns, 1) << r.out;
  EXPECT_EQ(requeues, 0);
  for (const auto &[name, n] : j["result"]["nodes"].items())
    EXPECT_EQ(n["state"], "IDLE") << name;
}

// Issue 20, per-node attribution, as on the cluster: --fail-node node2
// ends the job NODE_FAIL with node2 DOWN; job_complete is told (one line),
// and its failure naming node3 drains node3 only, with its message.
TEST(Simulate, AFailedNodeIsToldToJobCompleteAndOnlyTheNamedNodeDrains) {
  fs::path p = fs::temp_directory_path() / "switchlua-failnode.lua";
  std::ofstream(p) << "function slurm_switch_block_job_complete() return true end\n"
                      "function slurm_switch_job_start(job) return slurm.SUCCESS, {vni = 7} end\n"
                      "function slurm_switch_job_complete(job, ji) "
                      "slurm.log_info('told %s %d', tostring(job.failed_nodes), "
                      "#job.failed_node_names) "
                      "return slurm.ERROR, 'port 7 did not clear', 'node3' end\n";
  CmdResult r =
      run("simulate " + p.string() + " --json --network fabric --nodes 3 --fail-node node2");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["result"]["job_state"], "NODE_FAIL");
  EXPECT_EQ(count_text(j, "switch/lua: JobId=1001 job_complete: told node2 1"), 1) << r.out;
  EXPECT_EQ(count_text(j, "switch/lua: JobId=1001 ended with failed nodes node2 (DOWN, "
                          "NOT_RESPONDING or FAIL, or removed from the job): job_complete is "
                          "told (job.failed_nodes)"),
            1)
      << r.out;
  const auto &nodes = j["result"]["nodes"];
  EXPECT_EQ(nodes["node1"]["state"], "IDLE");
  EXPECT_EQ(nodes["node2"]["state"], "DOWN");
  EXPECT_EQ(nodes["node3"]["state"], "DRAINED");
  EXPECT_EQ(nodes["node3"]["reason"], "switch teardown failed: JobId=1001 switch/lua job_complete "
                                      "returned rc=-1: port 7 did not clear");
  // Without it, job_complete is told nothing; a name not of the job is refused.
  r = run("simulate " + p.string() + " --json --network fabric --nodes 3");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_text(json::parse(r.out), "switch/lua: JobId=1001 job_complete: told nil 0"), 1);
  r = run("simulate " + p.string() + " --network fabric --nodes 3 --fail-node node9");
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1) << r.status;
  EXPECT_NE(r.out.find("--fail-node node9: node9 is not a node of the job (node[1-3])"),
            std::string::npos)
      << r.out;
}

TEST(Simulate, OsExitInAStepHookIsALuaErrorNotTheEndOfTheHost) {
  fs::path p = fs::temp_directory_path() / "switchlua-stepexit.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) return slurm.SUCCESS, {x = 1} end\n"
                      "function slurm_switch_step_init(step, si) os.exit(7) end\n";
  CmdResult r = run("simulate " + p.string() + " --json --network fabric");
  ASSERT_EQ(r.status, 0) << r.out; // slurmstepd (here: switch-lua) survives
  json j = json::parse(r.out);
  EXPECT_FALSE(j["result"]["steps"][0]["failed"].get<bool>()) << "fail-open";
  int refused = 0;
  for (const auto &e : j["timeline"])
    refused +=
        e["text"].get<std::string>().find("os.exit() is not allowed here") != std::string::npos;
  EXPECT_EQ(refused, 2) << r.out; // one per node
}

// Issue 19 item 7: a script whose io.popen helper exits before reading
// what the script writes (test/fixtures/broken_pipe.lua, in every hook) gets
// a Lua value ("Broken pipe", 32), in the runner's job_start and
// job_complete and in the step hooks that simulate runs in-process: the
// simulation ends normally (it exited 141, SIGPIPE, in step_init).
TEST(Simulate, ABrokenPipeIsALuaValueInEveryHookNotTheEndOfTheHost) {
  const std::string script = SWITCHLUA_SOURCE_ROOT "/test/fixtures/broken_pipe.lua";
  CmdResult r = run("simulate " + script + " --json --network fabric");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["result"]["job_state"], "COMPLETED") << j.dump(1);
  ASSERT_EQ(j["result"]["steps"].size(), 1u) << j.dump(1);
  EXPECT_FALSE(j["result"]["steps"][0]["failed"].get<bool>()) << j.dump(1);
  EXPECT_EQ(j["result"]["steps"][0]["env"]["node1"]["SWITCHLUA_PIPE_PROBE"],
            "write=nil Broken pipe 32; child=signal 13")
      << j.dump(1);
  int probes = 0;
  for (const auto &e : j["timeline"])
    probes +=
        e["text"].get<std::string>().find(
            "broken pipe probe: write=nil Broken pipe 32; child=signal 13") != std::string::npos;
  // job_start, job_complete, and preinit, init, postfini on each node.
  const int nodes = static_cast<int>(j["result"]["nodes"].size());
  EXPECT_EQ(probes, 2 + 3 * nodes) << r.out;
}

// Issue 19 item 7, switch-lua(1) TIMELINE: the step hooks' verbose lines
// are shown (a hook that returned 0), slurmctld's debug lines (the rule
// ids of the transitions) are not.
TEST(Simulate, TheTimelineShowsTheLevelsTheManPageSays) {
  fs::path p = fs::temp_directory_path() / "switchlua-levels.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) return slurm.SUCCESS, {x = 1} end\n"
                      "function slurm_switch_job_complete(job, ji) return slurm.SUCCESS end\n"
                      "function slurm_switch_step_preinit(step, si) return 0 end\n";
  CmdResult r = run("simulate " + p.string() + " --json --network fabric");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  int verbose = 0, debug = 0;
  for (const auto &e : j["timeline"]) {
    const std::string t = e["text"].get<std::string>();
    verbose += t.find("step_preinit returned 0") != std::string::npos;
    debug += t.find("SetupRequested -> SetupRunning (R_SETUP)") != std::string::npos;
  }
  EXPECT_EQ(verbose, static_cast<int>(j["result"]["nodes"].size())) << r.out;
  EXPECT_EQ(debug, 0) << r.out;
}

TEST(Simulate, NonUtf8LogLineGivesValidJson) {
  // Issue: one non-UTF-8 byte in a log line made simulate --json abort.
  fs::path p = fs::temp_directory_path() / "switchlua-latin1.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) slurm.log_info('caf\\xe9') "
                      "return slurm.SUCCESS, {x = 1} end\n";
  CmdResult r = run("simulate " + p.string() + " --json --network fabric");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out); // throws on invalid UTF-8 or bad JSON
  int found = 0;
  for (const auto &e : j["timeline"])
    found += e["text"].get<std::string>().find("caf\xef\xbf\xbd") != std::string::npos;
  EXPECT_EQ(found, 1) << r.out; // the byte became U+FFFD
}

TEST(Simulate, LongAccentedErrorReasonEndsOnAWholeCharacter) {
  // Issue 9 item 6: the job's reason was cut at a byte limit, in half an "é".
  fs::path p = fs::temp_directory_path() / "switchlua-accented.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) "
                      "error(('a'):rep(115)..('\xc3\xa9'):rep(20), 0) end\n";
  CmdResult r = run("simulate " + p.string() + " --json --network fabric --no-requeue");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  std::string want =
      "switch setup failed: switch/lua job_start raised an error: " + std::string(115, 'a');
  for (int i = 0; i < 12; ++i)
    want += "\xc3\xa9";
  want += "...";
  EXPECT_EQ(j["result"]["job_reason"], want);
}

TEST(Simulate, HooksAllocatingWithoutEndFailAsTheContractSaysAndTheHostLives) {
  // Issue 9 item 8: a Lua memory bound for every hook.  job_start (a runner,
  // 256 MiB): a failed setup; step_init (in the host, 64 MiB): fail-open.
  fs::path p = fs::temp_directory_path() / "switchlua-oom.lua";
  const std::string grow = "local t, c = {}, ('x'):rep(1 << 20) "
                           "for i = 1, 1e9 do t[i] = c .. i end ";
  std::ofstream(p) << "function slurm_switch_job_start(job) "
                   << "if job.network == 'grow' then " << grow << "end "
                   << "return slurm.SUCCESS, {x = 1} end\n"
                   << "function slurm_switch_step_init(step, si) " << grow << "end\n";
  // switch_timeout far beyond the growth's few CPU seconds: on a loaded
  // machine (two CPU hogs and a test run beside it: 18 s of wall time for
  // 1.1 s of CPU) the memory bound, not the clock, must be what ends it.
  CmdResult r = run("simulate " + p.string() + " --json --network grow --no-requeue --timeout 600");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["result"]["job_reason"],
            "switch setup failed: switch/lua job_start raised an error: not enough memory");
  r = run("simulate " + p.string() + " --json --network fabric");
  ASSERT_EQ(r.status, 0) << r.out; // the host (slurmstepd here) lives
  j = json::parse(r.out);
  ASSERT_EQ(j["result"]["steps"].size(), 1u);
  EXPECT_FALSE(j["result"]["steps"][0]["failed"].get<bool>()) << "step hooks are fail-open";
  int oom = 0;
  for (const auto &e : j["timeline"])
    oom += e["text"].get<std::string>().find(
               "step_init raised an error: not enough memory; fail-open: the step proceeds") !=
           std::string::npos;
  EXPECT_EQ(oom, 2) << r.out; // one per node
}

TEST(Simulate, KillGraceLetsAHelperThatTrapsSigtermCleanUp) {
  // --kill-grace is switch_kill_grace: SIGTERM at the deadline, SIGKILL
  // after the grace; 0: SIGKILL at once.
  const fs::path marker =
      fs::temp_directory_path() / ("switchlua-grace-" + std::to_string(::getpid()));
  fs::path p = fs::temp_directory_path() / "switchlua-grace.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job)\n"
                      "  os.execute(\"exec sh -c 'trap \\\"echo cleaned up > "
                   << marker.string()
                   << "; exit 0\\\" TERM; while :; do sleep 0.1; done'\")\n"
                      "  while true do end\n"
                      "end\n";
  for (int grace : {3, 0}) {
    fs::remove(marker);
    CmdResult r = run("simulate " + p.string() +
                      " --json --network fabric --no-requeue --timeout 1 "
                      "--kill-grace " +
                      std::to_string(grace));
    ASSERT_EQ(r.status, 0) << r.out;
    json j = json::parse(r.out);
    EXPECT_EQ(j["config"]["switch_kill_grace"], grace);
    EXPECT_EQ(j["result"]["job_state"], "CANCELLED");
    EXPECT_EQ(j["result"]["job_reason"].get<std::string>().rfind("switch setup timed out", 0), 0u)
        << j["result"]["job_reason"];
    std::ifstream in(marker);
    std::string text;
    std::getline(in, text);
    EXPECT_EQ(text, grace > 0 ? "cleaned up" : "") << "--kill-grace " << grace;
  }
  fs::remove(marker);
  CmdResult bad = run("simulate " + p.string() + " --network fabric --kill-grace 301");
  EXPECT_EQ(bad.status, 105 << 8) << bad.out; // CLI11: value out of range
}

TEST(Simulate, SluidHasTheFormatOfSlurm2411) {
  // Issue 9 item 5: "s" + 13 Crockford base32 digits of (cluster id << 52 |
  // ms since the epoch << 10 | sequence), as sluid2str prints it.
  fs::path p = fs::temp_directory_path() / "switchlua-sluid.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) slurm.log_info('sluid=%s', job.sluid) "
                      "return slurm.SUCCESS, {} end\n";
  const auto ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const long long before = ms();
  CmdResult r = run("simulate " + p.string() + " --json --network fabric --steps 0");
  const long long after = ms();
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  const std::string sluid = j["job"]["sluid"];
  ASSERT_TRUE(std::regex_match(sluid, std::regex("s[0-9A-HJKMNP-TV-Z]{13}"))) << sluid;
  EXPECT_EQ(count_text(j, "switch/lua: JobId=1001 job_start: sluid=" + sluid), 1) << r.out;
  const std::string digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  std::uint64_t v = 0;
  for (char c : sluid.substr(1))
    v = (v << 5) | digits.find(c);
  EXPECT_EQ(v >> 52, 2u) << "the simulated cluster id";
  const long long when = static_cast<long long>((v >> 10) & ((1ULL << 42) - 1));
  EXPECT_GE(when, before);
  EXPECT_LE(when, after);
  EXPECT_EQ(v & 0x3ff, 0u);
}

TEST(Simulate, SetupSpecialStepsTrueIsLoggedAsIgnoredAsThePluginDoes) {
  fs::path p = fs::temp_directory_path() / "switchlua-sss.lua";
  std::ofstream(p) << "function slurm_switch_setup_special_steps() return true end\n"
                      "function slurm_switch_job_start(job) return slurm.SUCCESS, {} end\n";
  for (const char *bjc : {"auto", "true"}) {
    CmdResult r = run("simulate " + p.string() +
                      " --json --slurm 24.11 --network fabric --block-job-complete " + bjc);
    ASSERT_EQ(r.status, 0) << r.out;
    json j = json::parse(r.out);
    int found = 0;
    for (const auto &e : j["timeline"])
      found += e["source"] == "slurmctld" && e["kind"] == "log" && e["error"] == false &&
               e["text"] == "switch/lua: setup_special_steps() returned true, but a Slurm older "
                            "than 25.11 never calls the step init for batch or interactive "
                            "steps: ignored";
    EXPECT_EQ(found, 1) << r.out;
  }
  std::ofstream(p) << "function slurm_switch_setup_special_steps() return false end\n"
                      "function slurm_switch_job_start(job) return slurm.SUCCESS, {} end\n";
  CmdResult r = run("simulate " + p.string() + " --json --network fabric");
  EXPECT_EQ(count_text(json::parse(r.out), "setup_special_steps"), 0) << r.out;
}

/// A script whose setup_special_steps() returns true and whose step_init
/// returns `init` ("0, {STEP_BATCH = tostring(step.batch)}" by default).
fs::path special_steps_script(const std::string &init = "0, {STEP_BATCH = tostring(step.batch)}") {
  fs::path p = fs::temp_directory_path() / "switchlua-special.lua";
  std::ofstream(p) << "function slurm_switch_setup_special_steps() return true end\n"
                      "function slurm_switch_job_start(job) return slurm.SUCCESS, {} end\n"
                      "function slurm_switch_step_init(step, si) return " +
                          init + " end\n";
  return p;
}

TEST(Simulate, SpecialStepsRunStepInitOnTheBatchStepOnlyOnTheSeriesThatHaveThem) {
  // Issue 36 item 3: simulate behaves as the Slurm series it is given
  // (common/slurm_series.hpp); the newest by default.
  const fs::path p = special_steps_script();
  const std::string batch_init = "switch/lua: JobId=1001 StepId=1001.batch node1 step_init "
                                 "returned 0 with 1 environment change(s)";
  for (const char *series : {"", " --slurm 26.05", " --slurm 25.11"}) {
    CmdResult r = run("simulate " + p.string() + " --json --batch --network fabric" + series);
    ASSERT_EQ(r.status, 0) << r.out;
    json j = json::parse(r.out);
    EXPECT_EQ(j["slurm"], *series ? std::string(series).substr(9) : "26.05");
    EXPECT_EQ(count_text(j, "switch/lua: setup_special_steps() returned true: batch and "
                            "interactive steps get a stepinfo and run step_init"),
              1)
        << r.out;
    EXPECT_EQ(count_text(j, batch_init), 1) << r.out;
    ASSERT_EQ(j["result"]["steps"].size(), 2u) << r.out;
    EXPECT_EQ(j["result"]["steps"][0]["id"], "1001.batch");
    EXPECT_EQ(j["result"]["steps"][0]["env"]["node1"]["STEP_BATCH"], "true");
    EXPECT_EQ(j["result"]["steps"][1]["env"]["node1"]["STEP_BATCH"], "false");
  }
  for (const char *series : {"24.11", "25.05"}) {
    CmdResult r =
        run("simulate " + p.string() + " --json --batch --network fabric --slurm " + series);
    ASSERT_EQ(r.status, 0) << r.out;
    json j = json::parse(r.out);
    EXPECT_EQ(count_text(j, "switch/lua: setup_special_steps() returned true, but a Slurm older "
                            "than 25.11 never calls the step init for batch or interactive "
                            "steps: ignored"),
              1)
        << r.out;
    EXPECT_EQ(count_text(j, batch_init), 0) << r.out;
    ASSERT_EQ(j["result"]["steps"].size(), 1u) << r.out;
    EXPECT_EQ(j["result"]["steps"][0]["id"], "1001.0");
  }
  // An interactive job has no batch step on any series.
  CmdResult r = run("simulate " + p.string() + " --json --network fabric --slurm 26.05");
  EXPECT_EQ(count_text(json::parse(r.out), batch_init), 0) << r.out;
}

TEST(Simulate, AFailedBatchStepInitDrainsTheBatchHostAndRequeuesAsSlurmDoes) {
  // switch.lua(5) step_init: a failed batch step init is a failed batch
  // launch: the node drains ("batch job complete failure"), the job is
  // requeued if it may be, else FAILED; no other step runs.
  const fs::path p = special_steps_script("-1, 'no fabric'");
  CmdResult r = run("simulate " + p.string() + " --json --batch --network fabric --slurm 26.05");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["result"]["job_state"], "PENDING (requeued)") << r.out;
  EXPECT_EQ(j["result"]["nodes"]["node1"]["state"], "DRAINED");
  EXPECT_EQ(j["result"]["nodes"]["node1"]["reason"], "batch job complete failure");
  EXPECT_EQ(j["result"]["nodes"]["node2"]["state"], "IDLE");
  ASSERT_EQ(j["result"]["steps"].size(), 1u) << r.out;
  EXPECT_TRUE(j["result"]["steps"][0]["failed"].get<bool>());
  r = run("simulate " + p.string() + " --json --no-requeue --network fabric --slurm 26.05");
  j = json::parse(r.out);
  EXPECT_EQ(j["result"]["job_state"], "FAILED") << r.out;
  r = run("simulate " + p.string() + " --json --batch --network fabric --slurm 24.11");
  j = json::parse(r.out);
  EXPECT_EQ(j["result"]["nodes"]["node1"]["state"], "IDLE") << r.out; // no batch step init
}

TEST(Simulate, AFailedStepFailsAnInteractiveJobButNotABatchJob) {
  // Issue 9 item 5: srun completes its allocation with its exit status (1:
  // FAILED); a batch job takes its batch script's, simulated as 0.
  fs::path p = fs::temp_directory_path() / "switchlua-stepfail.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) return slurm.SUCCESS, {} end\n"
                      "function slurm_switch_step_init(step, si) return -1 end\n";
  CmdResult r = run("simulate " + p.string() + " --json --network fabric");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["result"]["job_state"], "FAILED");
  EXPECT_EQ(count_text(j,
                       "srun exits with status 1 (a step failed): the job ends FAILED: slurmctld "
                       "deallocates the nodes (switch_p_job_complete)"),
            1)
      << r.out;
  r = run("simulate " + p.string() + " --json --network fabric --batch");
  ASSERT_EQ(r.status, 0) << r.out;
  j = json::parse(r.out);
  EXPECT_TRUE(j["result"]["steps"][0]["failed"].get<bool>());
  EXPECT_EQ(j["result"]["job_state"], "COMPLETED");
  EXPECT_EQ(count_text(j, "the batch script exits with 0: the job ends COMPLETED (a batch script "
                          "whose last command is the failed srun would end it FAILED): slurmctld "
                          "deallocates the nodes (switch_p_job_complete)"),
            1)
      << r.out;
}

/// Milliseconds and the SLUID, the parts of simulate's output that change
/// from run to run, replaced by fixed text.
std::string normalize_run(std::string s) {
  s = std::regex_replace(s, std::regex(R"((^|\n) *[0-9]+ ms  )"), "$1T ms  ");
  s = std::regex_replace(s, std::regex(R"((queued|ran) [0-9]+ ms)"), "$1 N ms");
  s = std::regex_replace(s, std::regex("fnv1a64:[0-9a-f]{16}"), "fnv1a64:H");
  return std::regex_replace(s, std::regex("SLUID=s[0-9A-Z]{13}"), "SLUID=S");
}

TEST(Simulate, OutputIsTheExampleOfTheManPage) {
  // Issue 9 item 4: switch-lua(1) OUTPUT shows `switch-lua simulate
  // conf/switch.lua --network vni` run in the source tree, as it is.
  std::ifstream in(fs::path(SWITCHLUA_SOURCE_ROOT) / "man" / "switch-lua.1");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string man = ss.str();
  const auto out = man.find(".SH OUTPUT");
  ASSERT_NE(out, std::string::npos);
  const auto ex = man.find(".EX\n", out) + 4;
  std::string example = man.substr(ex, man.find(".EE\n", ex) - ex);
  example = std::regex_replace(example, std::regex(R"(\\-)"), "-");
  const std::string cmd = "cd " + std::string(SWITCHLUA_SOURCE_ROOT) +
                          " && " SWITCHLUA_CLI " simulate conf/switch.lua --network vni";
  FILE *p = popen(cmd.c_str(), "r");
  std::string got;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    got.append(buf.data(), n);
  EXPECT_EQ(pclose(p), 0);
  EXPECT_EQ(normalize_run(got), normalize_run(example));
}

TEST(Simulate, SpecialStepsExampleOfTheManPageIsSimulatesOutput) {
  // Issue 36 item 3: switch-lua(1) SIMULATE shows what --slurm changes for
  // the batch step; each "$ switch-lua ..." line of the example is run (in
  // a folder holding the "$ cat FILE" script) and must print what follows it.
  std::ifstream in(fs::path(SWITCHLUA_SOURCE_ROOT) / "man" / "switch-lua.1");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string man = ss.str();
  const auto mark = man.find(".\\\" example: special steps by series");
  ASSERT_NE(mark, std::string::npos);
  const auto ex = man.find(".EX\n", mark) + 4;
  std::string example = man.substr(ex, man.find(".EE\n", ex) - ex);
  example = std::regex_replace(example, std::regex(R"(\\-)"), "-");
  example = std::regex_replace(example, std::regex(R"(\\\.)"), ".");
  const fs::path dir = fs::temp_directory_path() / "switchlua-man-special";
  fs::create_directories(dir);
  std::istringstream lines(example);
  std::string line, file, cmd, want, script;
  int commands = 0;
  auto check = [&] {
    if (cmd.empty())
      return;
    ++commands;
    const std::string sh = "cd " + dir.string() + " && " +
                           std::regex_replace(cmd, std::regex("^switch-lua "), SWITCHLUA_CLI " ");
    FILE *p = popen(sh.c_str(), "r");
    std::string got;
    std::array<char, 4096> buf;
    std::size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
      got.append(buf.data(), n);
    pclose(p);
    EXPECT_EQ(normalize_run(got), normalize_run(want)) << cmd;
  };
  while (std::getline(lines, line)) {
    if (line.rfind("$ cat ", 0) == 0) {
      file = line.substr(6);
      continue;
    }
    if (line.rfind("$ ", 0) == 0) {
      if (!file.empty()) {
        std::ofstream(dir / file) << script;
        file.clear();
      }
      check();
      cmd = line.substr(2);
      want.clear();
      continue;
    }
    (file.empty() ? want : script) += line + "\n";
  }
  check();
  EXPECT_EQ(commands, 2);
}

TEST(Simulate, MissingScriptIsAnError) {
  CmdResult r = run("simulate /nonexistent/switch.lua --network fabric");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("cannot open /nonexistent/switch.lua"), std::string::npos) << r.out;
}

TEST(Check, ChunkCallingOsExitIsRefused) {
  fs::path p = fs::temp_directory_path() / "switchlua-chunkexit.lua";
  std::ofstream(p) << "os.exit(0)\n";
  CmdResult r = run("check " + p.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("os.exit() is not allowed here"), std::string::npos) << r.out;
}

TEST(Check, HookThatIsNotAFunctionIsAnError) {
  // Issue 9 item 4: exit status 1 and "loaded": false, with the message the
  // controller logs when it refuses such a version.
  fs::path p = fs::temp_directory_path() / "switchlua-notfn.lua";
  std::ofstream(p) << "slurm_switch_job_start = 5\nslurm_switch_job_complete = 'x'\n";
  const std::string msg = p.string() + ": slurm_switch_job_start is 5, not a function; " +
                          p.string() +
                          ": slurm_switch_job_complete is \"x\" (a string), not a function";
  CmdResult r = run("check " + p.string());
  EXPECT_EQ(r.status, 1 << 8);
  EXPECT_EQ(r.out, "switch-lua check: " + msg + " (content " + content_of(p) + ")\n");
  r = run("check --json " + p.string());
  EXPECT_EQ(r.status, 1 << 8);
  json j = json::parse(r.out);
  EXPECT_EQ(j["loaded"], false);
  EXPECT_EQ(j["error"], msg);
  EXPECT_EQ(j["errors"], json::array({p.string() + ": slurm_switch_job_start is 5, not a function",
                                      p.string() + ": slurm_switch_job_complete is \"x\" (a "
                                                   "string), not a function"}));
  EXPECT_EQ(j["hooks"], json::array());
  EXPECT_EQ(j["missing"].size(), 5u) << "the two wrong hooks are errors, not missing";
  EXPECT_EQ(j["content"], content_of(p));
  // simulate refuses it the same way, before running anything.
  r = run("simulate " + p.string() + " --network fabric");
  EXPECT_EQ(r.status, 1 << 8);
  EXPECT_EQ(r.out, "switch-lua simulate: " + msg + " (content " + content_of(p) + ")\n");
}

TEST(Check, ScriptThatLoadsExitsZeroWithEmptyErrors) {
  fs::path p = fs::temp_directory_path() / "switchlua-fine.lua";
  std::ofstream(p) << "slurm.log_info('hello')\n"
                      "function slurm_switch_job_start(job) return slurm.SUCCESS, {} end\n";
  // Run without luacheck on PATH (its own tests are below).
  auto run = [](const std::string &args) {
    return switchlua::test::run_cli(args, "env PATH=/nonexistent ");
  };
  CmdResult r = run("check --json " + p.string());
  EXPECT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["luacheck"]["ran"], false);
  EXPECT_EQ(j["luacheck"]["why_not"], "luacheck is not installed (Debian: lua-check)");
  j.erase("luacheck");
  EXPECT_EQ(j, json::parse(R"({"content": ")" + content_of(p) + R"(", "errors": [],
    "hooks": ["slurm_switch_job_start"], "loaded": true, "log": ["info: hello"],
    "missing": ["slurm_switch_block_job_complete", "slurm_switch_setup_special_steps",
                "slurm_switch_job_complete", "slurm_switch_step_preinit",
                "slurm_switch_step_init", "slurm_switch_step_postfini"],
    "script": ")" + p.string() +
                           R"("})"));
  r = run("check " + p.string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, p.string() + ": loaded (content " + content_of(p) +
                       ")\n"
                       "  log info: hello\n"
                       "  missing slurm_switch_block_job_complete (default: false)\n"
                       "  missing slurm_switch_setup_special_steps (default: false)\n"
                       "  hook    slurm_switch_job_start\n"
                       "  missing slurm_switch_job_complete (default: returns slurm.SUCCESS)\n"
                       "  missing slurm_switch_step_preinit (default: returns slurm.SUCCESS)\n"
                       "  missing slurm_switch_step_init (default: returns slurm.SUCCESS)\n"
                       "  missing slurm_switch_step_postfini (default: returns slurm.SUCCESS)\n"
                       "luacheck: not run: luacheck is not installed (Debian: lua-check)\n");
}

TEST(Check, RunsLuacheckWithTheSwitchluaStandardWhenItIsInstalled) {
  if (std::system("command -v luacheck >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "luacheck is not installed (Debian: lua-check)";
  fs::path p = fs::temp_directory_path() / "switchlua-lint.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job)\n"
                      "  slurm.log_inf('JobId=%d', job.job_id)\n"
                      "  return slurm.SUCCESS, {}\n"
                      "end\n";
  CmdResult r = run("check " + p.string());
  EXPECT_EQ(r.status, 0) << "luacheck's warnings are advice: " << r.out;
  EXPECT_NE(r.out.find("\nluacheck: 1 warning ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  " + p.string() +
                       ":2:3: (W143) accessing undefined field 'log_inf' of global 'slurm'\n"),
            std::string::npos)
      << r.out;
  r = run("check --json " + p.string());
  const json j = json::parse(r.out);
  EXPECT_EQ(j["luacheck"]["ran"], true);
  EXPECT_EQ(j["luacheck"]["warnings"].size(), 1u) << r.out;
}

TEST(Simulate, ScriptThatDoesNotLoadExitsOneAndRunsNothing) {
  // Issue 9 item 4: switch-lua(1) EXIT STATUS.
  fs::path p = fs::temp_directory_path() / "switchlua-sim-broken.lua";
  std::ofstream(p) << "local x = = 1\n";
  CmdResult r = run("simulate " + p.string() + " --network fabric --json");
  EXPECT_EQ(r.status, 1 << 8);
  EXPECT_EQ(r.out, "switch-lua simulate: " + p.string() +
                       ":1: unexpected symbol near '=' (content " + content_of(p) + ")\n");
}

TEST(Check, BrokenScriptNamesFileAndLine) {
  fs::path p = fs::temp_directory_path() / "switchlua-broken.lua";
  std::ofstream(p) << "local x = 1\nfunction oops(\n";
  CmdResult r = run("check " + p.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find(p.string() + ":3:"), std::string::npos) << r.out;
}

/// A fresh root-owned 0700 directory under the temporary directory.
fs::path fresh_dir() {
  std::string t = (fs::temp_directory_path() / "switchlua-trust-XXXXXX").string();
  if (::mkdtemp(t.data()) == nullptr)
    throw std::runtime_error("mkdtemp");
  return t;
}

TEST(Check, WorldWritableScriptIsRefusedWithOwnerAndMode) {
  // Issue 12 item 6: anyone who can write the script is root.
  const fs::path d = fresh_dir();
  const fs::path p = d / "switch.lua";
  std::ofstream(p) << "return slurm.SUCCESS\n";
  ::chmod(p.c_str(), 0666);
  CmdResult r = run("check " + p.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find(p.string() +
                       ": owned by uid 0 (root), mode 0666: refused; it must be owned by root "
                       "and not writable by group or others (switch.lua(5))"),
            std::string::npos)
      << r.out;
  ::chmod(p.c_str(), 0644);
  r = run("check " + p.string());
  EXPECT_EQ(r.status, 0) << r.out;
  fs::remove_all(d);
}

TEST(Check, SlurmUserMayOwnTheScript) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root (chown)";
  const fs::path d = fresh_dir();
  const fs::path p = d / "switch.lua";
  std::ofstream(p) << "return slurm.SUCCESS\n";
  ASSERT_EQ(::chown(p.c_str(), 65534, 0), 0);
  CmdResult r = run("check " + p.string()); // no slurm.conf beside it: root only
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("owned by uid 65534 (nobody), mode 0644: refused; it must be owned by "
                       "root and not"),
            std::string::npos)
      << r.out;
  r = run("check --slurm-user nobody " + p.string());
  EXPECT_EQ(r.status, 0) << r.out;
  r = run("check --slurm-user 65534 " + p.string());
  EXPECT_EQ(r.status, 0) << r.out;
  // Issue 35 item 4: a slurm.conf beside the script names nobody, whoever
  // owns it; only the system's (SLURM_CONF here), root's, does.
  std::ofstream(d / "slurm.conf") << "SlurmUser=nobody\n";
  ASSERT_EQ(::chown((d / "slurm.conf").c_str(), 65534, 0), 0);
  r = run("check " + p.string());
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("it must be owned by root and not"), std::string::npos) << r.out;
  const std::string conf = "SLURM_CONF=" + (d / "slurm.conf").string() + " ";
  r = switchlua::test::run_cli("check " + p.string(), conf);
  EXPECT_EQ(r.status, 2 << 8) << r.out;
  EXPECT_NE(r.out.find("slurm.conf " + (d / "slurm.conf").string() +
                       ": owned by uid 65534, mode 0644: not trusted to name SlurmUser"),
            std::string::npos)
      << r.out;
  ASSERT_EQ(::chown((d / "slurm.conf").c_str(), 0, 0), 0);
  r = switchlua::test::run_cli("check " + p.string(), conf);
  EXPECT_EQ(r.status, 0) << r.out;
  r = run("check --slurm-user no-such-user-xyz " + p.string());
  EXPECT_EQ(r.status, 2 << 8) << r.out;
  fs::remove_all(d);
}

/// Issue 9 item 9: one module search path in check, simulate (in-process
/// step hooks), and the runner (job_start), whatever the caller's LUA_PATH.
TEST(Modules, FoundNextToTheScriptEverywhereAndMissingTheSameWay) {
  const fs::path d = fresh_dir(), elsewhere = fresh_dir();
  std::ofstream(d / "fabric.lua") << "return { port = 'next-to-script' }\n";
  std::ofstream(elsewhere / "fabric.lua") << "return { port = 'from-LUA_PATH' }\n";
  const fs::path top = d / "top.lua", hooks = d / "hooks.lua";
  std::ofstream(top) << "local fabric = require 'fabric'\n";
  std::ofstream(hooks)
      << "function slurm_switch_job_start(job)\n"
         "  return slurm.SUCCESS, {port = require('fabric').port}\n"
         "end\n"
         "function slurm_switch_step_init(step, si)\n"
         "  return slurm.SUCCESS, {FABRIC_PORT = require('fabric').port .. '/' .. si.port}\n"
         "end\n";
  const std::string env = "LUA_PATH='" + elsewhere.string() + "/?.lua' LUA_PATH_5_4='" +
                          elsewhere.string() + "/?.lua' ";
  // check with the caller's LUA_PATH pointing elsewhere
  CmdResult r = switchlua::test::run_cli("check " + top.string(), env);
  EXPECT_EQ(r.status, 0) << r.out;
  r = run("simulate " + hooks.string() + " --json --network fabric --nodes 1");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["result"]["steps"][0]["env"]["node1"]["FABRIC_PORT"],
            "next-to-script/next-to-script")
      << r.out; // job_start (runner) and step_init (in-process) found it

  fs::remove(d / "fabric.lua");
  const std::string missing = "module 'fabric' not found:";
  const std::string tried = "no file '" + d.string() + "/fabric.lua'";
  r = run("check " + top.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find(top.string() + ":1: " + missing), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(tried), std::string::npos) << r.out;
  r = run("simulate " + top.string() + " --network fabric");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find(top.string() + ":1: " + missing), std::string::npos) << r.out;
  r = run("simulate " + hooks.string() + " --json --network fabric --nodes 1 --no-requeue");
  ASSERT_EQ(r.status, 0) << r.out;
  j = json::parse(r.out);
  EXPECT_EQ(j["result"]["job_reason"],
            "switch setup failed: switch/lua job_start raised an error: " + hooks.string() +
                ":2: " + missing)
      << r.out; // the runner: the same message
  bool runner_tried = false;
  for (const auto &e : j["timeline"])
    runner_tried |= e["text"].get<std::string>().find(tried) != std::string::npos;
  EXPECT_TRUE(runner_tried) << r.out;
  fs::remove_all(d);
  fs::remove_all(elsewhere);
}

} // namespace

namespace {

/// The JSON object a script logged as "<tag>{...}" in the timeline.
json logged_json(const json &j, const std::string &tag) {
  for (const auto &e : j["timeline"]) {
    const std::string t = e["text"].get<std::string>();
    auto pos = t.find(tag);
    if (pos != std::string::npos)
      return json::parse(t.substr(pos + tag.size()));
  }
  ADD_FAILURE() << "no " << tag << " line";
  return json::object();
}

fs::path dump_script() {
  fs::path p = fs::temp_directory_path() / "switchlua-dump-args.lua";
  std::ofstream(p) << "function slurm_switch_job_start(job) "
                      "slurm.log_info('JOB=%s', slurm.to_json(job)) return slurm.SUCCESS, {} end\n"
                      "function slurm_switch_step_init(step) "
                      "slurm.log_info('STEP=%s', slurm.to_json(step)) return slurm.SUCCESS end\n";
  return p;
}

} // namespace

// Issue 11: the job table's read-only facts, set by simulate's options and
// given to the hooks as the plugin gives them (the same JobArgs::push).
TEST(Simulate, JobAndStepTablesTakeTheOptions) {
  CmdResult r = run("simulate " + dump_script().string() +
                    " --json --network fabric --batch --nodes 2 --tasks 4 --cpus 8 --account acct"
                    " --qos high --time-limit 90 --tres-per-node gres/gpu:2 --tres-per-task cpu=2"
                    " --array-job-id 40 --array-task-id 3 --het-job-id 50 --het-job-offset 1");
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  json job = logged_json(j, "JOB=");
  EXPECT_EQ(job["account"], "acct");
  EXPECT_EQ(job["qos"], "high");
  EXPECT_EQ(job["time_limit"], 90);
  EXPECT_EQ(job["num_tasks"], 4);
  EXPECT_EQ(job["num_cpus"], 8);
  EXPECT_EQ(job["tres_per_node"], "gres/gpu:2");
  EXPECT_EQ(job["tres_per_task"], "cpu=2");
  EXPECT_EQ(job["array_job_id"], 40);
  EXPECT_EQ(job["array_task_id"], 3);
  EXPECT_EQ(job["het_job_id"], 50);
  EXPECT_EQ(job["het_job_offset"], 1);
  EXPECT_EQ(job["num_nodes"], 2);
  EXPECT_EQ(job["nodes"], "node[1-2]");
  json step = logged_json(j, "STEP=");
  EXPECT_EQ(step["id"], "1001.0");
  EXPECT_EQ(step["num_tasks"], 4);
  EXPECT_EQ(step["node_id"], 0);
}

TEST(Simulate, JobTableDefaultsLookLikeARealJob) {
  CmdResult r = run("simulate " + dump_script().string() + " --json --network fabric --nodes 3");
  ASSERT_EQ(r.status, 0) << r.out;
  json job = logged_json(json::parse(r.out), "JOB=");
  EXPECT_EQ(job["account"], "sim");
  EXPECT_EQ(job["qos"], "normal");
  EXPECT_EQ(job["time_limit"], 60);
  EXPECT_EQ(job["num_tasks"], 3);
  EXPECT_EQ(job["num_cpus"], 3);
  for (const char *absent : {"tres_per_node", "tres_per_task", "array_job_id", "array_task_id",
                             "het_job_id", "het_job_offset"})
    EXPECT_FALSE(job.contains(absent)) << absent;
  r = run("simulate " + dump_script().string() + " --json --network fabric --time-limit UNLIMITED");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(logged_json(json::parse(r.out), "JOB=").contains("time_limit"));
  r = run("simulate " + dump_script().string() + " --json --network fabric --time-limit 1h");
  EXPECT_NE(r.status, 0) << r.out;
}
