// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/config.hpp"
#include "ctld/persist.hpp"
#include "stepd/stepinfo.hpp"

#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <msgpack.hpp>
#include <sstream>

using namespace switchlua;

TEST(Config, DefaultsAreFinite) {
  auto c = parse_slurmctld_parameters("");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->switch_timeout.count(), 10);
  EXPECT_EQ(c->switch_retries, 3u);
  EXPECT_TRUE(c->drain_on_failure);
  EXPECT_EQ(c->max_calls, 512u);
  EXPECT_EQ(c->max_queue, 10000u);
  EXPECT_EQ(c->switch_kill_grace.count(), 2);
  EXPECT_EQ(c->lua_memory_mb, 256u);
  EXPECT_EQ(c->status_interval, 0u) << "no summary lines unless asked";
  EXPECT_FALSE(c->mismatch_fails) << "a script mismatch only warns unless asked";
}

// Issue 36: the defaults are the contract; what goes beyond it is named.
TEST(Config, BeyondContractIsEmptyWithTheDefaultsAndNamesWhatASiteSet) {
  auto c = parse_slurmctld_parameters("");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->breaker_failures, 0u) << "the breaker counts failures only when asked";
  EXPECT_TRUE(beyond_contract(*c).empty());
  c = parse_slurmctld_parameters("switch_breaker_failures=5,switch_max_setup_failures=3");
  ASSERT_TRUE(c) << c.error().message;
  auto b = beyond_contract(*c);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_TRUE(b[0].starts_with("switch_breaker_failures=5: ")) << b[0];
  EXPECT_TRUE(b[1].starts_with("switch_max_setup_failures=3: ")) << b[1];
}

// Issue 38: switch_pool_NAME=RANGES[:PER_JOB[:REUSE_DELAY]], opt-in fabric-ID pools.
TEST(Config, PoolsAreDeclaredByNameWithRangesAndPerJob) {
  auto c = parse_slurmctld_parameters("");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->pools.empty()) << "no pool unless declared";
  c = parse_slurmctld_parameters(
      "switch_pool_vni=1024-2047,Switch_Pool_PKey=33000-33010+32769-32800:2,switch_timeout=5");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->pools.size(), 2u);
  EXPECT_EQ(c->pools[0], (PoolSpec{"pkey", {{32769, 32800}, {33000, 33010}}, 2}));
  EXPECT_EQ(c->pools[1], (PoolSpec{"vni", {{1024, 2047}}, 1}));
  EXPECT_NE(describe(*c).find(" switch_pool_pkey=32769-32800+33000-33010:2 "
                              "switch_pool_vni=1024-2047:1"),
            std::string::npos)
      << describe(*c);
  auto back = parse_slurmctld_parameters(to_slurmctld_parameters(*c));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, *c);
  auto b = beyond_contract(*c);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_TRUE(b[0].starts_with("switch_pool_pkey=32769-32800+33000-33010:2: ")) << b[0];
  EXPECT_NE(b[1].find("pool vni"), std::string::npos) << b[1];
  EXPECT_TRUE(parse_slurmctld_parameters("switch_pool_a=7,switch_pool_a=7:1")) << "same value";
  // The reuse delay: written back only when set, and said at start-up.
  c = parse_slurmctld_parameters("switch_pool_vni=1024-2047:1:60,switch_pool_b=1:1:0");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->pools[0], (PoolSpec{"b", {{1, 1}}, 1, 0}));
  EXPECT_EQ(c->pools[1], (PoolSpec{"vni", {{1024, 2047}}, 1, 60}));
  EXPECT_NE(describe(*c).find(" switch_pool_b=1:1 switch_pool_vni=1024-2047:1:60"),
            std::string::npos)
      << describe(*c);
  back = parse_slurmctld_parameters(to_slurmctld_parameters(*c));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, *c);
  b = beyond_contract(*c);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_TRUE(b[1].ends_with("; an ID released stays out of use 60 s")) << b[1];
  EXPECT_EQ(b[0].find("out of use"), std::string::npos) << b[0];
  EXPECT_TRUE(slurmctld_parameters_warnings("switch_pool_vni=1-2").empty());
}

TEST(Config, BadPoolsNameKeyAndValue) {
  const std::string ranges_rule =
      ": must be ranges FIRST-LAST of integers from 0 to 4294967295 joined by + and not "
      "overlapping, then optionally :PER_JOB from 1 to the pool's size, then optionally "
      ":REUSE_DELAY in seconds from 0 to 86400 (e.g. 1024-2047, 32769-32800+33000-33010:2 or "
      "1024-2047:1:60)";
  for (const std::string bad :
       {"switch_pool_vni=", "switch_pool_vni=abc", "switch_pool_vni=5-3",
        "switch_pool_vni=1-10+5-12", "switch_pool_vni=1-4:5", "switch_pool_vni=1-4:0",
        "switch_pool_vni=1-4:", "switch_pool_vni=-4", "switch_pool_vni=1-4294967296",
        "switch_pool_vni=1--4", "switch_pool_vni=1-4:1:", "switch_pool_vni=1-4:1:86401",
        "switch_pool_vni=1-4:1:x", "switch_pool_vni=1-4::60", "switch_pool_vni=1-4:1:60:2"}) {
    auto c = parse_slurmctld_parameters(bad);
    ASSERT_FALSE(c) << bad;
    EXPECT_EQ(c.error().message, "SlurmctldParameters: " + bad + ranges_rule);
  }
  auto c = parse_slurmctld_parameters("switch_pool_9x=1-2");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "SlurmctldParameters: switch_pool_9x=1-2: the pool name must be a "
                               "letter, then at most 31 letters, digits or _");
  EXPECT_FALSE(parse_slurmctld_parameters("switch_pool_a-b=1-2"));
  EXPECT_FALSE(parse_slurmctld_parameters("switch_pool_" + std::string(33, 'a') + "=1"));
  EXPECT_TRUE(parse_slurmctld_parameters("switch_pool_" + std::string(32, 'a') + "=1"));
  c = parse_slurmctld_parameters("switch_pool_vni=1-4,switch_pool_VNI=1-5");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message,
            "SlurmctldParameters: switch_pool_vni given twice (1-4:1 and 1-5:1)");
}

TEST(Config, ReadsStatusIntervalAndScriptMismatch) {
  auto c = parse_slurmctld_parameters("switch_status_interval=300,Switch_Script_Mismatch=FAIL");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->status_interval, 300u);
  EXPECT_TRUE(c->mismatch_fails);
  c = parse_slurmctld_parameters("switch_script_mismatch=warn");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FALSE(c->mismatch_fails);
}

TEST(Config, ReadsTheLaneSizes) {
  auto c = parse_slurmctld_parameters("switch_max_calls=4096,foo,switch_max_queue=1");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->max_calls, 4096u);
  EXPECT_EQ(c->max_queue, 1u);
  EXPECT_EQ(describe(*c), "switch_timeout=10 switch_retries=3 switch_drain_on_failure=yes "
                          "switch_kill_grace=2 switch_max_calls=4096 switch_max_queue=1 "
                          "switch_lua_memory=256 switch_status_interval=0 "
                          "switch_script_mismatch=warn switch_max_setup_failures=0 "
                          "switch_interactive_wait=3 switch_breaker_failures=0 "
                          "switch_breaker_window=60 switch_journal_failure=wait "
                          "switch_metrics_file=none");
}

TEST(Config, SlurmctldParametersStringReadsBackToTheSameSettings) {
  // What a reconfigure with a bad value falls back to (ctld_abi.cpp).
  auto c = parse_slurmctld_parameters("switch_timeout=7,switch_retries=0,switch_drain_on_failure="
                                      "no,switch_kill_grace=0,switch_max_calls=9,"
                                      "switch_max_queue=3,switch_lua_memory=64,"
                                      "switch_status_interval=60,switch_script_mismatch=fail,"
                                      "switch_max_setup_failures=5,switch_interactive_wait=0,"
                                      "switch_breaker_failures=0,switch_breaker_window=600,"
                                      "switch_journal_failure=run,"
                                      "switch_metrics_file=/var/lib/node-exporter/switch_lua.prom");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->interactive_wait_ms, 0u);
  EXPECT_FALSE(c->journal_failure_waits);
  EXPECT_EQ(to_slurmctld_parameters(*c),
            "switch_timeout=7,switch_retries=0,switch_drain_on_failure=no,switch_kill_grace=0,"
            "switch_max_calls=9,switch_max_queue=3,switch_lua_memory=64,"
            "switch_status_interval=60,switch_script_mismatch=fail,"
            "switch_max_setup_failures=5,switch_interactive_wait=0,switch_breaker_failures=0,"
            "switch_breaker_window=600,switch_journal_failure=run,"
            "switch_metrics_file=/var/lib/node-exporter/switch_lua.prom");
  auto back = parse_slurmctld_parameters(to_slurmctld_parameters(*c));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, *c);
}

TEST(Config, MetricsFileIsAnAbsolutePathOrNone) {
  auto c = parse_slurmctld_parameters("switch_metrics_file=/var/lib/prometheus/node-exporter/"
                                      "switch_lua.prom");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->metrics_file, "/var/lib/prometheus/node-exporter/switch_lua.prom");
  auto none = parse_slurmctld_parameters("switch_metrics_file=NONE");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->metrics_file, "");
  for (const char *bad :
       {"switch_metrics_file=", "switch_metrics_file", "switch_metrics_file=relative.prom",
        "switch_metrics_file=/var/lib/", "switch_metrics_file=/a b.prom"}) {
    auto r = parse_slurmctld_parameters(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("must be an absolute file path (without spaces) or none"),
              std::string::npos)
        << r.error().message;
  }
  auto twice =
      parse_slurmctld_parameters("switch_metrics_file=/a.prom,switch_metrics_file=/b.prom");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message,
            "SlurmctldParameters: switch_metrics_file given twice (/a.prom and /b.prom)");
}

TEST(Config, KillGraceTakesZeroToThreeHundredSeconds) {
  auto zero = parse_slurmctld_parameters("switch_kill_grace=0");
  ASSERT_TRUE(zero) << zero.error().message;
  EXPECT_EQ(zero->switch_kill_grace.count(), 0);
  auto most = parse_slurmctld_parameters("switch_kill_grace=300");
  ASSERT_TRUE(most) << most.error().message;
  EXPECT_EQ(most->switch_kill_grace.count(), 300);
  auto over = parse_slurmctld_parameters("switch_kill_grace=301");
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().message, "SlurmctldParameters: switch_kill_grace=301: must be an integer "
                                  "number of seconds from 0 to 300");
}

TEST(Config, ReadsOurKeysAmongOthers) {
  auto c = parse_slurmctld_parameters(
      "enable_configless,switch_timeout=5,idle_on_node_suspend,switch_retries=0,"
      "switch_drain_on_failure=no");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->switch_timeout.count(), 5);
  EXPECT_EQ(c->switch_retries, 0u);
  EXPECT_FALSE(c->drain_on_failure);
}

TEST(Config, UnknownKeysAreIgnoredAsSlurmDoes) {
  EXPECT_TRUE(parse_slurmctld_parameters("switch_timeout_extra=abc,foo=bar"));
}

// Issue 9 item 5b: Slurm looks up its own SlurmctldParameters keys with
// xstrcasestr() (case-insensitive); ours are read the same way.
TEST(Config, KeysAndYesNoAreCaseInsensitiveAsSlurmReadsItsOwn) {
  auto c = parse_slurmctld_parameters(
      "enable_configless, Switch_Timeout=7 ,SWITCH_RETRIES=1,switch_drain_on_failure=NO");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->switch_timeout.count(), 7);
  EXPECT_EQ(c->switch_retries, 1u);
  EXPECT_FALSE(c->drain_on_failure);
  auto bad = parse_slurmctld_parameters("SWITCH_TIMEOUT=0");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "SlurmctldParameters: SWITCH_TIMEOUT=0: must be an integer "
                                 "number of seconds from 1 to 86400");
}

TEST(Config, UnknownSwitchKeyIsNamedInAWarning) {
  auto c = parse_slurmctld_parameters("switch_timout=5,foo=bar,switch_retries=2");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->switch_timeout.count(), 10) << "the typo is ignored, not an error";
  EXPECT_EQ(slurmctld_parameters_warnings("switch_timout=5,foo=bar,switch_retries=2,Switch_X"),
            (std::vector<std::string>{
                "SlurmctldParameters: switch_timout is not a switch/lua setting and is ignored "
                "(the settings are switch_timeout, switch_retries, switch_drain_on_failure, "
                "switch_kill_grace, switch_max_calls, switch_max_queue, switch_lua_memory, "
                "switch_status_interval, switch_script_mismatch, switch_max_setup_failures, "
                "switch_interactive_wait, switch_breaker_failures, switch_breaker_window, "
                "switch_journal_failure, switch_metrics_file, switch_pool_NAME): check "
                "its spelling",
                "SlurmctldParameters: Switch_X is not a switch/lua setting and is ignored "
                "(the settings are switch_timeout, switch_retries, switch_drain_on_failure, "
                "switch_kill_grace, switch_max_calls, switch_max_queue, switch_lua_memory, "
                "switch_status_interval, switch_script_mismatch, switch_max_setup_failures, "
                "switch_interactive_wait, switch_breaker_failures, switch_breaker_window, "
                "switch_journal_failure, switch_metrics_file, switch_pool_NAME): check "
                "its spelling"}));
  EXPECT_TRUE(slurmctld_parameters_warnings("enable_configless,switch_timeout=3").empty());
}

TEST(Config, BadValuesNameKeyAndValue) {
  struct Bad {
    const char *params;
    const char *message;
  } bad[] = {
      {"switch_timeout=0", "SlurmctldParameters: switch_timeout=0: must be an integer number of "
                           "seconds from 1 to 86400"},
      {"switch_timeout=-1", "switch_timeout=-1: must be"},
      {"switch_timeout=abc", "switch_timeout=abc: must be"},
      {"switch_timeout=", "switch_timeout=: must be"},
      {"switch_timeout", "switch_timeout=: must be"},
      {"switch_timeout=99999999999999999999999", "switch_timeout=99999999999999999999999"},
      {"switch_timeout=86401", "switch_timeout=86401"},
      {"switch_timeout=5s", "switch_timeout=5s"},
      {"switch_retries=-1", "switch_retries=-1: must be an integer count from 0 to 1000"},
      {"switch_retries=1001", "switch_retries=1001"},
      {"switch_drain_on_failure=maybe", "switch_drain_on_failure=maybe: must be yes or no"},
      {"switch_drain_on_failure=", "switch_drain_on_failure=: must be yes or no"},
      {"switch_drain_on_failure=no,switch_drain_on_failure=yes",
       "switch_drain_on_failure given twice (no and yes)"},
      {"switch_timeout=5,switch_timeout=6", "switch_timeout given twice (5 and 6)"},
      {"switch_max_calls=0", "SlurmctldParameters: switch_max_calls=0: must be an integer count "
                             "from 1 to 4096"},
      {"switch_max_calls=4097", "switch_max_calls=4097: must be"},
      {"switch_max_calls", "switch_max_calls=: must be"},
      {"switch_max_queue=0", "SlurmctldParameters: switch_max_queue=0: must be an integer count "
                             "from 1 to 100000"},
      {"switch_max_queue=100001", "switch_max_queue=100001: must be"},
      {"switch_lua_memory=0", "SlurmctldParameters: switch_lua_memory=0: must be an integer "
                              "number of MiB from 1 to 65536"},
      {"switch_status_interval=-1", "SlurmctldParameters: switch_status_interval=-1: must be an "
                                    "integer number of seconds from 0 to 86400"},
      {"switch_status_interval=86401", "switch_status_interval=86401: must be"},
      {"switch_script_mismatch=yes", "SlurmctldParameters: switch_script_mismatch=yes: must be "
                                     "fail or warn"},
      {"switch_script_mismatch", "switch_script_mismatch=: must be fail or warn"},
      {"switch_max_calls=8,switch_max_calls=9", "switch_max_calls given twice (8 and 9)"},
      {"switch_max_queue=8,switch_max_queue=9", "switch_max_queue given twice (8 and 9)"},
      {"switch_interactive_wait=101", "SlurmctldParameters: switch_interactive_wait=101: must be "
                                      "an integer number of milliseconds from 0 to 100"},
      {"switch_interactive_wait=2ms", "switch_interactive_wait=2ms: must be"},
  };
  for (const Bad &b : bad) {
    auto c = parse_slurmctld_parameters(b.params);
    ASSERT_FALSE(c) << b.params;
    EXPECT_NE(c.error().message.find(b.message), std::string::npos)
        << b.params << " -> " << c.error().message;
  }
}

namespace {
JobSwitchState sample() {
  JobSwitchState s;
  s.state = JobState::TeardownRetryWait;
  s.job.job_id = 7;
  s.job.nodes = "node[1-3]";
  s.job.node_names = {"node1", "node2", "node3"};
  s.job.network = "switchlua:complete_again";
  s.job.user_name = "tbuser";
  s.jobinfo = std::string("\x81\xa1x\x93\x01\x02\x03", 8);
  s.requeue_allowed = true;
  s.block_job_complete = true;
  s.nodes_held = true;
  s.retries = 2;
  s.generation = 9;
  return s;
}
} // namespace

TEST(Persist, RoundTripKeepsEverythingAndMarksRecovered) {
  JobSwitchState s = sample();
  auto d = decode_job_state(encode_job_state(&s));
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_TRUE(d->has_value());
  EXPECT_TRUE((*d)->recovered);
  (*d)->recovered = false;
  EXPECT_EQ(**d, s);
}

TEST(Persist, AbsentRecordDecodesToNothing) {
  auto d = decode_job_state(encode_job_state(nullptr));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_FALSE(d->has_value());
}

TEST(Persist, EveryTruncationIsAnErrorNotACrash) {
  JobSwitchState s = sample();
  std::string full = encode_job_state(&s);
  for (std::size_t n = 0; n < full.size(); ++n) {
    auto d = decode_job_state(std::string_view(full).substr(0, n));
    EXPECT_FALSE(d) << "prefix of " << n << " bytes decoded";
  }
}

TEST(Persist, CorruptedBytesNeverInventAState) {
  JobSwitchState s = sample();
  std::string full = encode_job_state(&s);
  for (std::size_t i = 0; i < full.size(); ++i) {
    std::string c = full;
    c[i] = static_cast<char>(c[i] ^ 0x5a);
    auto d = decode_job_state(c);
    if (!d || !d->has_value())
      continue; // refused: fine
    // Whatever decodes must be a valid state, never an invented one.
    EXPECT_TRUE((*d)->recovered);
    EXPECT_LE((*d)->retries, kMaxSwitchRetries);
    EXPECT_FALSE(job_state_name((*d)->state).empty());
  }
}

TEST(Persist, FutureVersionIsRefusedWithAClearError) {
  std::string rec = encode_job_state(nullptr);
  // [ "swlua", 1, nil ]: the version is the byte after the 6-byte magic.
  rec[7] = 0x07;
  auto d = decode_job_state(rec);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message,
            "switch/lua job state: record version 7 is newer than this plugin's 2");
}

// A record written by the previous version (1): its job table has no
// submit_time and no attempt.  It decodes, with both 0.
TEST(Persist, Version1RecordWithoutTheUniqueKeyDecodes) {
  JobArgs job;
  job.job_id = 9;
  job.nodes = "node1";
  job.node_names = {"node1"};
  job.network = "fabric";
  // JobArgs as version 1 wrote it: the 14 fields before submit_time.
  std::string full = job.to_msgpack();
  msgpack::object_handle oh = msgpack::unpack(full.data(), full.size());
  const msgpack::object_map &m = oh.get().via.map;
  msgpack::sbuffer jb;
  msgpack::packer<msgpack::sbuffer> jp(jb);
  // Version 1 had the first 14 keys; 0.2 added submit_time and attempt,
  // 0.3 the 10 fields of issue 11, 0.4 cluster_name (issue 21).
  ASSERT_EQ(m.size, 27u);
  jp.pack_map(14);
  for (std::uint32_t i = 0; i < 14; ++i) {
    std::string key(m.ptr[i].key.via.str.ptr, m.ptr[i].key.via.str.size);
    ASSERT_NE(key, "submit_time");
    jp.pack(m.ptr[i].key);
    jp.pack(m.ptr[i].val);
  }
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(3);
  pk.pack(std::string_view("swlua"));
  pk.pack(1u);
  pk.pack_map(8);
  pk.pack(std::string_view("state"));
  pk.pack(std::string_view("Running"));
  pk.pack(std::string_view("job"));
  pk.pack_bin(static_cast<std::uint32_t>(jb.size()));
  pk.pack_bin_body(jb.data(), static_cast<std::uint32_t>(jb.size()));
  pk.pack(std::string_view("jobinfo"));
  pk.pack_nil();
  for (const char *f : {"requeue", "bjc", "held"}) {
    pk.pack(std::string_view(f));
    pk.pack(false);
  }
  pk.pack(std::string_view("retries"));
  pk.pack(0u);
  pk.pack(std::string_view("gen"));
  pk.pack(3u);
  auto d = decode_job_state(std::string_view(buf.data(), buf.size()));
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->state, JobState::Running);
  EXPECT_EQ((*d)->job.job_id, 9u);
  EXPECT_EQ((*d)->job.submit_time, 0);
  EXPECT_EQ((*d)->job.attempt, 0);
  EXPECT_EQ((*d)->script_hash, "") << "a record without 'script': provenance unknown";
}

TEST(Persist, ScriptHashRoundTripsAndAWrongTypeIsRefused) {
  JobSwitchState s = sample();
  s.script_hash = "fnv1a64:0123456789abcdef";
  auto d = decode_job_state(encode_job_state(&s));
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->script_hash, "fnv1a64:0123456789abcdef");
  s.script_hash.clear();
  const std::string without = encode_job_state(&s);
  EXPECT_EQ(without.find("script"), std::string::npos) << "no key when unknown";
  s.script_hash = "x";
  std::string rec = encode_job_state(&s);
  // "script": "x" -> "script": 7 (a positive fixint in place of the fixstr).
  auto pos = rec.find(std::string("\xa6script\xa1x", 9));
  ASSERT_NE(pos, std::string::npos);
  rec.replace(pos + 7, 2, "\x07");
  auto bad = decode_job_state(rec);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "switch/lua job state: field 'script' is an integer, expected a string");
}

TEST(Persist, UnknownStateNameIsRefused) {
  JobSwitchState s = sample();
  std::string rec = encode_job_state(&s);
  auto pos = rec.find("TeardownRetryWait");
  ASSERT_NE(pos, std::string::npos);
  rec.replace(pos, 17, "TeardownRetryWaiX");
  auto d = decode_job_state(rec);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message,
            "switch/lua job state: field 'state': unknown state 'TeardownRetryWaiX'");
}

TEST(Stepinfo, RoundTripAndRejections) {
  Stepinfo si{.jobinfo = "\x80", .sluid = "sABC123"};
  auto d = decode_stepinfo(encode_stepinfo(si));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, si);
  std::string rec = encode_stepinfo(si);
  EXPECT_FALSE(decode_stepinfo(rec.substr(0, rec.size() - 1)));
  EXPECT_FALSE(decode_stepinfo(""));
  EXPECT_FALSE(decode_stepinfo(encode_job_state(nullptr)));
}

TEST(Stepinfo, Version2CarriesTheScriptHashAndTheMismatchPolicy) {
  Stepinfo si{.jobinfo = "\x80",
              .sluid = std::nullopt,
              .script_hash = "fnv1a64:00000000000000ff",
              .mismatch_fails = true};
  auto d = decode_stepinfo(encode_stepinfo(si));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->script_hash, "fnv1a64:00000000000000ff");
  EXPECT_TRUE(d->mismatch_fails);
  si.mismatch_fails = false;
  d = decode_stepinfo(encode_stepinfo(si));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_FALSE(d->mismatch_fails);
}

// Issue 20: the stepinfo carries the setup attempt (step.attempt), in the
// provenance map, which older nodes read past; without it, 0 (unknown).
TEST(Stepinfo, CarriesTheAttemptOfItsSetup) {
  Stepinfo si{.jobinfo = "\x80", .sluid = "sABC", .attempt = 1764614400123456};
  auto d = decode_stepinfo(encode_stepinfo(si));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->attempt, 1764614400123456);
  EXPECT_EQ(*d, si);
  si.attempt = 0;
  d = decode_stepinfo(encode_stepinfo(si));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->attempt, 0);
}

// Issue 20: and the job's restart count at that setup (the run the attempt
// belongs to), 0 included; absent from an older controller.
TEST(Stepinfo, CarriesTheRestartCountOfItsSetup) {
  Stepinfo si{.jobinfo = "\x80", .attempt = 7};
  auto d = decode_stepinfo(encode_stepinfo(si));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->restart_count, std::nullopt);
  for (std::uint32_t c : {0u, 3u}) {
    si.restart_count = c;
    d = decode_stepinfo(encode_stepinfo(si));
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(*d, si);
  }
}

TEST(Stepinfo, CarriesTheStepFactsSlurmctldRecorded) {
  // Issue 21: the step's network, task count and the cluster name travel in
  // the signed stepinfo; absent keys (an older controller) stay nullopt.
  Stepinfo si{.jobinfo = "\x80", .sluid = "sX"};
  auto d = decode_stepinfo(encode_stepinfo(si));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->network, std::nullopt);
  EXPECT_EQ(d->num_tasks, std::nullopt);
  EXPECT_EQ(d->cluster_name, std::nullopt);
  si.network = "vni;touch /tmp/x\n";
  si.num_tasks = 7;
  si.cluster_name = "prod";
  d = decode_stepinfo(encode_stepinfo(si));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, si);
}

namespace {
/// A stepinfo record built by hand: `version`, and a provenance map with
/// "mismatch": `mismatch` (and a key from the future) when it is not null
/// (5 fields), else 4 fields.
std::string stepinfo_record(unsigned version, const char *mismatch) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(mismatch ? 5 : 4);
  pk.pack(std::string_view("swlua-step"));
  pk.pack(version);
  pk.pack_bin(1);
  pk.pack_bin_body("\x80", 1);
  pk.pack(std::string_view("sX"));
  if (mismatch) {
    pk.pack_map(3);
    pk.pack(std::string_view("script"));
    pk.pack(std::string_view("fnv1a64:1"));
    pk.pack(std::string_view("mismatch"));
    pk.pack(std::string_view(mismatch));
    pk.pack(std::string_view("later"));
    pk.pack(1);
  }
  return std::string(buf.data(), buf.size());
}
} // namespace

TEST(Stepinfo, Version1RecordsStillDecodeWithoutProvenance) {
  auto d = decode_stepinfo(stepinfo_record(1, nullptr));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->jobinfo, "\x80");
  EXPECT_EQ(d->sluid, "sX");
  EXPECT_EQ(d->script_hash, "") << "nothing to compare";
  EXPECT_FALSE(d->mismatch_fails);
}

TEST(Stepinfo, FieldCountMustMatchTheVersionAndMismatchIsWarnOrFail) {
  auto d = decode_stepinfo(stepinfo_record(2, "fail"));
  ASSERT_TRUE(d) << d.error().message << " (an unknown provenance key is ignored)";
  EXPECT_TRUE(d->mismatch_fails);
  EXPECT_EQ(d->script_hash, "fnv1a64:1");
  auto bad = decode_stepinfo(stepinfo_record(2, nullptr));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "switch/lua stepinfo: a version 2 record has 4 fields");
  bad = decode_stepinfo(stepinfo_record(1, "warn"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "switch/lua stepinfo: a version 1 record has 5 fields");
  bad = decode_stepinfo(stepinfo_record(2, "maybe"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "switch/lua stepinfo: provenance field 'mismatch' is 'maybe', not warn or fail");
  bad = decode_stepinfo(stepinfo_record(3, "warn"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "switch/lua stepinfo: record version 3 is newer than this plugin's 2");
}

// switch.lua(5), SLURM VERSIONS, states the stepinfo version this release
// writes and the versions it reads: the one source is kStepinfoVersion.
TEST(Stepinfo, TheManPageStatesTheVersionThisBuildWrites) {
  std::ifstream in(SWITCHLUA_SOURCE_ROOT "/man/switch.lua.5");
  ASSERT_TRUE(in) << SWITCHLUA_SOURCE_ROOT "/man/switch.lua.5";
  std::stringstream man;
  man << in.rdbuf();
  const std::string want =
      fmt::format("This release writes stepinfo version {} and reads versions 1 and {}.",
                  kStepinfoVersion, kStepinfoVersion);
  EXPECT_NE(man.str().find(want), std::string::npos) << "switch.lua(5) lacks: " << want;
}
