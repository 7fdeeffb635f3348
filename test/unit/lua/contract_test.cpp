// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/unit/lua/contract_test.cpp
//
// lua/contract.hpp through Script::call: the argument tables, each hook's
// return convention (and every way of breaking it), the env rules of
// step_init, missing hooks.  The contract script itself: seed_test.cpp.
#include "lua/codec.hpp"
#include "lua/contract.hpp"
#include "lua/runtime.hpp"
#include "lua_test_util.hpp"

#include <gtest/gtest.h>
#include <msgpack.hpp>

#include <fmt/format.h>

#include <string>

namespace switchlua {
namespace {

using test::first_line;
using test::Loaded;
using test::sample_job;
using test::sample_step;

/// Loads `body` and calls hook `h` with sample arguments.
Expected<HookReturn, CallError> call(const std::string &body, Hook h,
                                     const MsgpackBytes *info = nullptr,
                                     std::string *path = nullptr) {
  Loaded l(body);
  if (path)
    *path = l.path;
  if (!l.script)
    return Unexpected<CallError>{{CallError::Kind::LuaError, "load: " + l.script.error().message}};
  const JobArgs job = sample_job();
  const StepArgs step = sample_step();
  auto r = l.script->call(h, &job, &step, info);
  EXPECT_EQ(lua_gettop(l.script->state()), 0) << "stack not restored";
  return r;
}

/// The BadReturn message of job_start returning `values`, without the path.
std::string bad_return(Hook h, const std::string &values) {
  std::string path;
  auto r = call(fmt::format("function {}() return {} end\n", hook_function(h), values), h, nullptr,
                &path);
  if (r)
    return "(accepted)";
  EXPECT_EQ(r.error().kind, CallError::Kind::BadReturn) << r.error().message;
  const std::string &m = r.error().message;
  return m.rfind(path + ": ", 0) == 0 ? m.substr(path.size() + 2) : "(no path) " + m;
}

/// The env step_init returns for `table` (Lua source).
HookReturn step_init_env(const std::string &table) {
  auto r = call("function slurm_switch_step_init() return 0, " + table + " end\n", Hook::StepInit);
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : HookReturn{};
}

EnvOp set(std::string n, std::string v) {
  return {EnvOp::Kind::Set, std::move(n), std::move(v)};
}
EnvOp unset(std::string n) {
  return {EnvOp::Kind::Unset, std::move(n), ""};
}

TEST(Contract, HookNamesRoundTrip) {
  for (Hook h : kAllHooks) {
    EXPECT_EQ(hook_from_name(hook_name(h)), h);
    EXPECT_EQ(hook_function(h), "slurm_switch_" + std::string(hook_name(h)));
  }
  EXPECT_EQ(hook_name(Hook::StepPostfini), "step_postfini");
  EXPECT_FALSE(hook_from_name("job_begin"));
}

// Issue 13: one descriptor row per hook; the facts the runner, the client
// and `check` act on come from it (switch.lua contract: hooks, processes,
// return conventions, defaults).
TEST(Contract, HookTableSaysWhereEachHookRunsAndWhatItReturns) {
  for (Hook h : kAllHooks)
    EXPECT_EQ(hook_info(h).hook, h) << hook_name(h);
  EXPECT_EQ(hook_info(Hook::JobStart).host, HookHost::Supervised);
  EXPECT_EQ(hook_info(Hook::BlockJobComplete).host, HookHost::Supervised);
  EXPECT_EQ(hook_info(Hook::StepInit).host, HookHost::Slurmstepd);
  EXPECT_TRUE(hook_info(Hook::SetupSpecialSteps).boolean);
  EXPECT_FALSE(hook_info(Hook::JobComplete).boolean);
  EXPECT_EQ(hook_info(Hook::JobStart).max_values, 2);
  EXPECT_EQ(hook_info(Hook::JobComplete).max_values, 3);
  EXPECT_EQ(hook_info(Hook::JobStart).when_absent, "declines every job");
  EXPECT_EQ(hook_info(Hook::BlockJobComplete).when_absent, "false");
  EXPECT_EQ(hook_info(Hook::StepPostfini).when_absent, "returns slurm.SUCCESS");
}

TEST(Contract, JobTableHasContractFields) {
  auto r = call(R"(
    function slurm_switch_job_start(job)
      assert(job.job_id == 42 and job.user_id == 1000 and job.group_id == 100)
      assert(job.user_name == "alice" and job.name == "train" and job.nodes == "node[1-2]")
      assert(#job.node_names == 2 and job.node_names[2] == "node2")
      assert(job.num_nodes == 2 and job.partition == "gpu" and job.network == "switchlua:skip")
      assert(job.account == nil and job.sluid == "S123")
      assert(job.restart_count == 3 and job.batch == true)
      assert(math.type(job.job_id) == "integer")
      return slurm.SUCCESS
    end)",
                Hook::JobStart);
  EXPECT_TRUE(r) << r.error().message;
}

TEST(Contract, StepTableHasContractFields) {
  auto r = call(R"(
    function slurm_switch_step_preinit(step, stepinfo)
      assert(step.job_id == 42 and step.step_id == 0 and step.sluid == "S123")
      assert(step.partition == "gpu" and step.node_name == "node1" and step.node_id == 0)
      assert(step.num_nodes == 2 and step.num_tasks == 8 and step.user_id == 1000)
      assert(step.user_name == "alice" and step.nodes == "node[1-2]")
      assert(step.network == nil and step.batch == false and stepinfo == nil)
      return 0
    end)",
                Hook::StepPreinit);
  EXPECT_TRUE(r) << r.error().message;
}

TEST(Contract, JobArgsMsgpackRoundTrip) {
  const JobArgs j = sample_job();
  auto back = JobArgs::from_msgpack(j.to_msgpack());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->job_id, 42u);
  EXPECT_EQ(back->user_name, "alice");
  EXPECT_EQ(back->node_names, j.node_names);
  EXPECT_EQ(back->account, std::nullopt);
  EXPECT_EQ(back->restart_count, 3u);
  EXPECT_TRUE(back->batch);
  EXPECT_EQ(back->to_msgpack(), j.to_msgpack());
}

TEST(Contract, JobArgsFromMsgpackIsStrict) {
  auto err = [](const std::string &bytes) {
    auto r = JobArgs::from_msgpack(bytes);
    return r ? std::string("(accepted)") : r.error().message;
  };
  EXPECT_EQ(err("\x90"), "JobArgs msgpack: expected a map, got an array");
  EXPECT_EQ(err(""), "JobArgs msgpack: empty input");
  EXPECT_EQ(err("\x81\xa1x\x01"), "JobArgs msgpack: unknown field \"x\"");
  EXPECT_EQ(err("\x81\xa6job_id\xa1"
                "1"),
            "JobArgs msgpack: field job_id: expected an unsigned 32-bit integer, got a string");
  EXPECT_EQ(err("\x81\xa6job_id\x01"), "JobArgs msgpack: missing field user_id");
  EXPECT_EQ(err("\x82\xa6job_id\x01\xa6job_id\x02"), "JobArgs msgpack: field job_id appears twice");
  const auto good = sample_job().to_msgpack();
  EXPECT_EQ(err(good + "x"), "JobArgs msgpack: 1 trailing bytes after the map");
  EXPECT_EQ(err(good.substr(0, good.size() - 1)),
            "JobArgs msgpack: truncated map (" + std::to_string(good.size() - 1) + " bytes)");
}

// Issue 11: the read-only facts a fabric policy keys on; nil when absent.
TEST(Contract, JobTableHasIssue11Fields) {
  JobArgs job = sample_job();
  job.qos = "high";
  job.time_limit = 90;
  job.num_tasks = 8;
  job.num_cpus = 16;
  job.tres_per_node = "gres/gpu:2";
  job.array_job_id = 40;
  job.array_task_id = 2;
  Loaded l(R"(
    function slurm_switch_job_start(job)
      assert(job.qos == "high" and job.time_limit == 90, "qos/time_limit")
      assert(job.num_tasks == 8 and job.num_cpus == 16, "counts")
      assert(job.tres_per_node == "gres/gpu:2" and job.tres_per_task == nil, "tres")
      assert(job.array_job_id == 40 and job.array_task_id == 2, "array")
      assert(job.het_job_id == nil and job.het_job_offset == nil, "het")
      assert(math.type(job.time_limit) == "integer")
      return slurm.SUCCESS
    end)");
  ASSERT_TRUE(l.script) << l.script.error().message;
  auto r = l.script->call(Hook::JobStart, &job, nullptr, nullptr);
  EXPECT_TRUE(r) << r.error().message;
  auto back = JobArgs::from_msgpack(job.to_msgpack());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, job);
}

TEST(Contract, StepTableHasItsSlurmStepId) {
  StepArgs step = sample_step();
  step.id = "42.0";
  Loaded l(R"(
    function slurm_switch_step_preinit(step)
      assert(step.id == "42.0" and step.num_tasks == 8 and step.node_id == 0)
      return 0
    end)");
  ASSERT_TRUE(l.script) << l.script.error().message;
  auto r = l.script->call(Hook::StepPreinit, nullptr, &step, nullptr);
  EXPECT_TRUE(r) << r.error().message;
}

// A record written before issue 11 (no qos .. het_job_offset) decodes with
// those fields nil / 0.
TEST(Contract, JobArgsWithoutIssue11FieldsDecodes) {
  JobArgs job = sample_job();
  job.qos = "high";
  job.het_job_id = 7;
  std::string full = job.to_msgpack();
  msgpack::object_handle oh = msgpack::unpack(full.data(), full.size());
  const msgpack::object_map &m = oh.get().via.map;
  ASSERT_EQ(m.size, 27u); // 26 fields of 0.3, cluster_name of 0.4
  msgpack::sbuffer b;
  msgpack::packer<msgpack::sbuffer> pk(b);
  pk.pack_map(16); // job_id .. attempt
  for (std::uint32_t i = 0; i < 16; ++i) {
    pk.pack(m.ptr[i].key);
    pk.pack(m.ptr[i].val);
  }
  auto back = JobArgs::from_msgpack(std::string_view(b.data(), b.size()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->qos, std::nullopt);
  EXPECT_EQ(back->het_job_id, std::nullopt);
  EXPECT_EQ(back->num_tasks, 0u);
  EXPECT_EQ(back->job_id, job.job_id);
  EXPECT_EQ(back->cluster_name, std::nullopt);
}

// Issue 21: a record of 0.3 (26 fields, no cluster_name) still decodes; a
// 0.4 record keeps cluster_name.
TEST(Contract, JobArgsClusterNameRoundTripsAndIsOptional) {
  JobArgs job = sample_job();
  job.cluster_name = "prod";
  auto back = JobArgs::from_msgpack(job.to_msgpack());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->cluster_name, "prod");
  std::string full = job.to_msgpack();
  msgpack::object_handle oh = msgpack::unpack(full.data(), full.size());
  const msgpack::object_map &m = oh.get().via.map;
  msgpack::sbuffer b;
  msgpack::packer<msgpack::sbuffer> pk(b);
  pk.pack_map(m.size - 1);
  for (std::uint32_t i = 0; i < m.size; ++i) {
    if (m.ptr[i].key.as<std::string>() == "cluster_name")
      continue;
    pk.pack(m.ptr[i].key);
    pk.pack(m.ptr[i].val);
  }
  back = JobArgs::from_msgpack(std::string_view(b.data(), b.size()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->cluster_name, std::nullopt);
}

// Issue 20, per-node attribution: failed_nodes and failed_node_names round
// trip; without failed nodes the record has exactly the 27 keys of 0.4, so
// a plugin of 0.4 (which refuses unknown keys) reads it on a downgrade; a
// record of 0.4 decodes with them nil / empty.
TEST(Contract, JobArgsFailedNodesRoundTripAndAreOmittedWhenNil) {
  JobArgs job = sample_job();
  std::string plain = job.to_msgpack();
  msgpack::object_handle oh = msgpack::unpack(plain.data(), plain.size());
  ASSERT_EQ(oh.get().via.map.size, 27u);
  for (std::uint32_t i = 0; i < oh.get().via.map.size; ++i)
    EXPECT_NE(oh.get().via.map.ptr[i].key.as<std::string>().rfind("failed_", 0), 0u);
  auto back = JobArgs::from_msgpack(plain);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->failed_nodes, std::nullopt);
  EXPECT_TRUE(back->failed_node_names.empty());
  job.failed_nodes = "node[2-3]";
  job.failed_node_names = {"node2", "node3"};
  back = JobArgs::from_msgpack(job.to_msgpack());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, job);
}

// Issue 11: a failed setup may give its message as the second value; with
// slurm.SUCCESS a string is still not a jobinfo.
TEST(Contract, JobStartFailureMayGiveAMessage) {
  auto r = call(R"(function slurm_switch_job_start()
                     return slurm.ERROR, "fabric manager unreachable"
                   end)",
                Hook::JobStart);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rc, kError);
  EXPECT_EQ(r->message, "fabric manager unreachable");
  EXPECT_FALSE(r->jobinfo);
  EXPECT_EQ(bad_return(Hook::JobStart, "slurm.SUCCESS, 'fabric up'"),
            R"(job_start returned "fabric up" (a string) as jobinfo, expected a table or nil)");
}

// Issue 21: the message becomes a reason and part of a log line: one line,
// its control characters escaped, even when it carries a user's string.
TEST(Contract, AHooksMessageIsOneLineWithControlCharactersEscaped) {
  auto r = call(R"(function slurm_switch_job_start(job)
                     return slurm.ERROR, "no VNI for " .. "a\nswitch/lua: forged\27[0m"
                   end)",
                Hook::JobStart);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->message, "no VNI for a\\nswitch/lua: forged\\x1b[0m");
}

TEST(Contract, JobStartReturnsRcAndJobinfo) {
  auto r = call(R"(function slurm_switch_job_start(job)
                     return slurm.SUCCESS, {id = job.job_id, vlans = {101, 102}}
                   end)",
                Hook::JobStart);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rc, kSuccess);
  ASSERT_TRUE(r->jobinfo);
  EXPECT_EQ(*msgpack_to_json(*r->jobinfo), R"({"id":42,"vlans":[101,102]})");
  EXPECT_EQ(r->jobinfo_error, "");
}

TEST(Contract, JobStartWithoutJobinfoDeclines) {
  for (const char *ret : {"slurm.SUCCESS", "slurm.SUCCESS, nil"}) {
    auto r = call(std::string("function slurm_switch_job_start() return ") + ret + " end",
                  Hook::JobStart);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->rc, kSuccess);
    EXPECT_FALSE(r->jobinfo);
    EXPECT_EQ(r->jobinfo_error, "");
  }
}

TEST(Contract, JobStartUnsavableJobinfoSetsJobinfoError) {
  auto r = call("function slurm_switch_job_start() return 0, {fabric = {handler = print}} end",
                Hook::JobStart);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->jobinfo);
  EXPECT_EQ(r->jobinfo_error, "jobinfo.fabric.handler: a function cannot be saved");
}

TEST(Contract, IntegralFloatRcIsAccepted) {
  auto r = call("function slurm_switch_job_complete() return -1.0 end", Hook::JobComplete);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rc, kError);
}

TEST(Contract, RejectsNoValue) {
  EXPECT_EQ(bad_return(Hook::JobStart, ""),
            "job_start returned no value, expected rc, jobinfo|nil (or rc ~= 0, message)");
  EXPECT_EQ(bad_return(Hook::JobComplete, "nil"), "job_complete returned nil as rc, expected an "
                                                  "integer number");
  EXPECT_EQ(bad_return(Hook::StepInit, ""),
            "step_init returned no value, expected rc, env|nil (or rc < 0, message)");
  EXPECT_EQ(bad_return(Hook::BlockJobComplete, ""),
            "block_job_complete returned no value, expected a boolean");
}

TEST(Contract, RejectsStringRc) {
  EXPECT_EQ(bad_return(Hook::JobStart, "'0'"),
            R"(job_start returned "0" (a string) as rc, expected an integer number)");
}

TEST(Contract, RejectsNanInfAndFractionRc) {
  EXPECT_EQ(bad_return(Hook::StepPreinit, "0/0"),
            "step_preinit returned nan (a float) as rc, expected an integer number");
  EXPECT_EQ(bad_return(Hook::StepPostfini, "1/0"),
            "step_postfini returned inf (a float) as rc, expected an integer number");
  EXPECT_EQ(bad_return(Hook::JobComplete, "0.5"),
            "job_complete returned 0.5 (a float) as rc, expected an integer number");
  EXPECT_EQ(bad_return(Hook::JobComplete, "2^63"),
            "job_complete returned 9.2233720368548e+18 (a float) as rc, expected an integer "
            "number");
}

TEST(Contract, RejectsFunctionAndTableRc) {
  EXPECT_EQ(bad_return(Hook::JobStart, "print"),
            "job_start returned a function as rc, expected an integer number");
  EXPECT_EQ(bad_return(Hook::StepInit, "{}"),
            "step_init returned a table as rc, expected an integer number");
}

TEST(Contract, RejectsBadSecondValue) {
  EXPECT_EQ(bad_return(Hook::JobStart, "0, 'x'"),
            R"(job_start returned "x" (a string) as jobinfo, expected a table or nil)");
  EXPECT_EQ(bad_return(Hook::StepInit, "0, 7"),
            "step_init returned 7 as env, expected a table or nil");
  EXPECT_EQ(bad_return(Hook::StepInit, "0, setmetatable({}, {})"),
            "step_init returned an env table with a metatable, expected a plain table");
}

TEST(Contract, RejectsExtraValuesButIgnoresTrailingNils) {
  EXPECT_EQ(bad_return(Hook::JobStart, "0, {}, 'x'"),
            "job_start returned 3 values, expected rc, jobinfo|nil (or rc ~= 0, message)");
  EXPECT_EQ(bad_return(Hook::JobComplete, "0, 'm', 'node1', 1"),
            "job_complete returned 4 values, expected rc[, message[, nodes]]");
  EXPECT_EQ(bad_return(Hook::JobComplete, "0, nil, nil"), "(accepted)");
  EXPECT_EQ(bad_return(Hook::JobComplete, "0, nil, nil, nil"), "(accepted)");
}

// Issue 20, per-node attribution: job_complete -> rc[, message[, nodes]],
// nodes a host list expression or an array of names (or expressions).
TEST(Contract, JobCompleteMayNameItsMessageAndNodes) {
  auto r = call("function slurm_switch_job_complete() return slurm.ERROR, 'port 7 stuck', "
                "'node[2-3]' end",
                Hook::JobComplete);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rc, kError);
  EXPECT_EQ(r->message, "port 7 stuck");
  EXPECT_EQ(r->nodes, (std::vector<std::string>{"node2", "node3"}));
  r = call("function slurm_switch_job_complete() return -1, nil, {'node1', 'gpu[01-02]'} end",
           Hook::JobComplete);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->message, "");
  EXPECT_EQ(r->nodes, (std::vector<std::string>{"node1", "gpu01", "gpu02"}));
  r = call("function slurm_switch_job_complete() return -1, 'x', {} end", Hook::JobComplete);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->nodes, std::vector<std::string>{}) << "an empty list is not nil";
  r = call("function slurm_switch_job_complete() return -1, 'x' end", Hook::JobComplete);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->nodes, std::nullopt);
  r = call("function slurm_switch_job_complete() return 0, 'all clean' end", Hook::JobComplete);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->message, "all clean");
}

TEST(Contract, JobCompleteRefusesNodesThatAreNotAHostList) {
  EXPECT_EQ(bad_return(Hook::JobComplete, "-1, 'm', 7"),
            "job_complete returned 7 as nodes, expected a host list, an array of node names or "
            "nil");
  EXPECT_EQ(bad_return(Hook::JobComplete, "-1, 'm', {'node1', 2}"),
            "job_complete returned 2 as nodes[2], expected a node name");
  EXPECT_EQ(bad_return(Hook::JobComplete, "-1, 'm', 'node[1-'"),
            "job_complete returned \"node[1-\" as nodes: host list \"node[1-\": a '[' without "
            "its ']'");
  EXPECT_EQ(bad_return(Hook::JobComplete, "-1, 'm', setmetatable({}, {})"),
            "job_complete returned a table with a metatable as nodes, expected a host list, an "
            "array of node names or nil");
  EXPECT_EQ(bad_return(Hook::JobComplete, "-1, 7"),
            "job_complete returned 7 as message, expected a string or nil");
}

TEST(Contract, BooleanHooksReturnTheirFlag) {
  auto t =
      call("function slurm_switch_block_job_complete() return true end", Hook::BlockJobComplete);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->flag);
  auto f =
      call("function slurm_switch_setup_special_steps() return false end", Hook::SetupSpecialSteps);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_FALSE(f->flag);
}

TEST(Contract, BooleanHooksRejectNonBoolean) {
  EXPECT_EQ(bad_return(Hook::BlockJobComplete, "nil"),
            "block_job_complete returned nil, expected a boolean");
  EXPECT_EQ(bad_return(Hook::SetupSpecialSteps, "1"),
            "setup_special_steps returned 1, expected a boolean");
  EXPECT_EQ(bad_return(Hook::SetupSpecialSteps, "'true'"),
            R"(setup_special_steps returned "true" (a string), expected a boolean)");
}

TEST(Contract, MissingHooksUseDocumentedDefaults) {
  for (Hook h : kAllHooks) {
    auto r = call("local x = 1\n", h);
    ASSERT_TRUE(r) << hook_name(h) << ": " << r.error().message;
    EXPECT_EQ(r->hook, h);
    EXPECT_EQ(r->rc, kSuccess);
    EXPECT_FALSE(r->flag);
    EXPECT_FALSE(r->jobinfo);
    EXPECT_FALSE(r->has_env);
  }
}

TEST(Contract, HookThatIsNotAFunctionIsAnError) {
  std::string path;
  auto r = call("slurm_switch_job_start = 5\n", Hook::JobStart, nullptr, &path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, CallError::Kind::LuaError);
  EXPECT_EQ(r.error().message, path + ": slurm_switch_job_start is 5, not a function");
}

TEST(Contract, LuaErrorInHookHasFileLineAndTraceback) {
  std::string path;
  auto r = call("function slurm_switch_step_postfini()\n  error('boom')\nend\n", Hook::StepPostfini,
                nullptr, &path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, CallError::Kind::LuaError);
  EXPECT_EQ(first_line(r.error().message), path + ":2: boom");
  EXPECT_NE(r.error().message.find("in function 'slurm_switch_step_postfini'"), std::string::npos)
      << r.error().message;
}

TEST(Contract, JobCompleteReceivesDecodedJobinfo) {
  test::LuaState L;
  L.push("{fabric = {vlans = {101}}}");
  auto info = encode_lua(L, -1, "jobinfo");
  ASSERT_TRUE(info);
  auto r = call(R"(function slurm_switch_job_complete(job, jobinfo)
                     assert(job.job_id == 42 and jobinfo.fabric.vlans[1] == 101)
                     return slurm.EAGAIN
                   end)",
                Hook::JobComplete, &*info);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rc, kEagain);
  auto nil = call("function slurm_switch_job_complete(job, i) assert(i == nil) return 0 end",
                  Hook::JobComplete);
  EXPECT_TRUE(nil) << nil.error().message;
}

TEST(Contract, CallLeavesTheCallersStackAlone) {
  Loaded l("function slurm_switch_job_complete() error('x') end\n"
           "function slurm_switch_step_init() return 0, {A = 1} end\n");
  ASSERT_TRUE(l.script) << l.script.error().message;
  lua_State *L = l.script->state();
  lua_pushinteger(L, 7);
  const JobArgs job = sample_job();
  const StepArgs step = sample_step();
  EXPECT_FALSE(l.script->call(Hook::JobComplete, &job, nullptr, nullptr));
  EXPECT_TRUE(l.script->call(Hook::StepInit, nullptr, &step, nullptr));
  EXPECT_TRUE(l.script->call(Hook::JobStart, &job, nullptr, nullptr)); // missing
  ASSERT_EQ(lua_gettop(L), 1);
  EXPECT_EQ(lua_tointeger(L, 1), 7);
}

TEST(Contract, CorruptInfoIsBadArgument) {
  const MsgpackBytes bad = "\x92\x01";
  auto r = call("function slurm_switch_step_init() return 0 end", Hook::StepInit, &bad);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, CallError::Kind::BadArgument);
  EXPECT_EQ(r.error().message, "stepinfo: cannot decode: msgpack: truncated value (2 bytes)");
}

TEST(Contract, EnvStringIsSet) {
  auto r = step_init_env("{FOO = 'bar'}");
  EXPECT_TRUE(r.has_env);
  EXPECT_EQ(r.env, std::vector<EnvOp>{set("FOO", "bar")});
  EXPECT_TRUE(r.warnings.empty());
}

TEST(Contract, EnvIntegerIsDecimal) {
  EXPECT_EQ(step_init_env("{N = 42, M = -7}").env,
            (std::vector<EnvOp>{set("M", "-7"), set("N", "42")}));
}

TEST(Contract, EnvFloatIsShortDecimal) {
  EXPECT_EQ(step_init_env("{A = 0.5, B = 7.0, C = 1/3}").env,
            (std::vector<EnvOp>{set("A", "0.5"), set("B", "7"), set("C", "0.33333333333333")}));
}

TEST(Contract, EnvTrueIsOne) {
  EXPECT_EQ(step_init_env("{ON = true}").env, std::vector<EnvOp>{set("ON", "1")});
}

TEST(Contract, EnvFalseUnsets) {
  EXPECT_EQ(step_init_env("{OFF = false}").env, std::vector<EnvOp>{unset("OFF")});
}

TEST(Contract, EnvOpsAreSortedByName) {
  EXPECT_EQ(step_init_env("{c = '3', a = '1', b = '2'}").env,
            (std::vector<EnvOp>{set("a", "1"), set("b", "2"), set("c", "3")}));
}

TEST(Contract, EnvEmptyTableIsAnEnvWithNoOps) {
  auto r = step_init_env("{}");
  EXPECT_TRUE(r.has_env);
  EXPECT_TRUE(r.env.empty());
}

/// The warnings of step_init's env `table`; asserts nothing was set.
std::vector<std::string> env_warnings(const std::string &table) {
  auto r = step_init_env(table);
  EXPECT_TRUE(r.env.empty());
  return r.warnings;
}

TEST(Contract, EnvSkipsNonStringName) {
  EXPECT_EQ(env_warnings("{'x'}"),
            std::vector<std::string>{"env key 1 skipped: a variable name must be a string"});
}

TEST(Contract, EnvSkipsEmptyName) {
  EXPECT_EQ(env_warnings("{[''] = 'x'}"),
            std::vector<std::string>{R"(env[""] skipped: an empty variable name)"});
}

TEST(Contract, EnvSkipsNameWithEquals) {
  EXPECT_EQ(env_warnings("{['A=B'] = 'x'}"),
            std::vector<std::string>{R"(env["A=B"] skipped: a variable name cannot contain '=')"});
}

TEST(Contract, EnvSkipsNameWithNul) {
  EXPECT_EQ(env_warnings("{['A\\0B'] = 'x'}"),
            std::vector<std::string>{
                R"(env["A\0B"] skipped: a variable name cannot contain a NUL byte)"});
}

TEST(Contract, EnvSkipsValueWithNul) {
  EXPECT_EQ(env_warnings("{V = 'a\\0b'}"),
            std::vector<std::string>{"env.V skipped: a value cannot contain a NUL byte"});
}

TEST(Contract, EnvSkipsNestedTable) {
  EXPECT_EQ(env_warnings("{T = {1}}"),
            std::vector<std::string>{"env.T skipped: a table is not a string, number or boolean"});
}

TEST(Contract, EnvSkipsFunction) {
  EXPECT_EQ(
      env_warnings("{F = print}"),
      std::vector<std::string>{"env.F skipped: a function is not a string, number or boolean"});
}

TEST(Contract, EnvSkipsNonFiniteNumber) {
  EXPECT_EQ(env_warnings("{X = 1/0}"),
            std::vector<std::string>{"env.X skipped: inf is not a finite number"});
}

TEST(Contract, EnvSkipsSlurmNames) {
  EXPECT_EQ(env_warnings("{SLURM_JOB_ID = '1', SLURM_X = false}"),
            (std::vector<std::string>{"env.SLURM_JOB_ID skipped: SLURM_* names belong to Slurm",
                                      "env.SLURM_X skipped: SLURM_* names belong to Slurm"}));
}

TEST(Contract, EnvKeepsGoodEntriesNextToSkippedOnes) {
  auto r = step_init_env("{GOOD = 'y', SLURM_BAD = 'n'}");
  EXPECT_EQ(r.env, std::vector<EnvOp>{set("GOOD", "y")});
  EXPECT_EQ(r.warnings.size(), 1u);
}

} // namespace
} // namespace switchlua
