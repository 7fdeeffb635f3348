// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/contract.cpp
//
// Hook names, the job / step argument tables, and the parsers of what each hook
// returns.  Rule source: the contract script; see lua/contract.hpp for the rules.
#include "lua/contract.hpp"

#include "common/hostlist.hpp"
#include "common/msgpack_read.hpp"
#include "common/msgpack_write.hpp"
#include "common/utf8.hpp"
#include "lua/codec.hpp"
#include "lua/detail.hpp"
#include "lua/job_pools.hpp"

#include <lua.hpp>
#include <msgpack.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <utility>
#include <variant>

namespace switchlua {

namespace {

// clang-format off
/// The contract's hooks (switch.lua: "Hooks" and "Return conventions").
constexpr HookInfo kHooks[] = {
  {Hook::BlockJobComplete, "block_job_complete", "slurm_switch_block_job_complete",
   HookHost::Supervised, "()", true, 1, "a boolean", "false"},
  {Hook::SetupSpecialSteps, "setup_special_steps", "slurm_switch_setup_special_steps",
   HookHost::Supervised, "()", true, 1, "a boolean", "false"},
  {Hook::JobStart, "job_start", "slurm_switch_job_start",
   HookHost::Supervised, "(job)", false, 2, "rc, jobinfo|nil (or rc ~= 0, message)",
   "declines every job"},
  {Hook::JobComplete, "job_complete", "slurm_switch_job_complete",
   HookHost::Supervised, "(job, jobinfo)", false, 3, "rc[, message[, nodes]]",
   "returns slurm.SUCCESS"},
  {Hook::StepPreinit, "step_preinit", "slurm_switch_step_preinit",
   HookHost::Slurmstepd, "(step, stepinfo)", false, 2, "rc[, message]", "returns slurm.SUCCESS"},
  {Hook::StepInit, "step_init", "slurm_switch_step_init",
   HookHost::Slurmstepd, "(step, stepinfo)", false, 2, "rc, env|nil (or rc < 0, message)",
   "returns slurm.SUCCESS"},
  {Hook::StepPostfini, "step_postfini", "slurm_switch_step_postfini",
   HookHost::Slurmstepd, "(step, stepinfo)", false, 2, "rc[, message]", "returns slurm.SUCCESS"},
};
// clang-format on

/// One field of an argument table: its Lua / msgpack key and its member.
template <class T>
using Member = std::variant<std::uint32_t T::*, std::optional<std::string> T::*, bool T::*,
                            NodeNames T::*, std::int64_t T::*, std::optional<std::uint32_t> T::*,
                            std::string T::*, JobPools T::*>;
template <class T> struct Field {
  const char *name;
  Member<T> member;
};

/// The `job` table (contract: slurm_switch_job_start(job)).
const Field<JobArgs> kJobFields[] = {
    {"job_id", &JobArgs::job_id},
    {"user_id", &JobArgs::user_id},
    {"group_id", &JobArgs::group_id},
    {"user_name", &JobArgs::user_name},
    {"name", &JobArgs::name},
    {"nodes", &JobArgs::nodes},
    {"node_names", &JobArgs::node_names},
    {"num_nodes", &JobArgs::num_nodes},
    {"partition", &JobArgs::partition},
    {"network", &JobArgs::network},
    {"account", &JobArgs::account},
    {"sluid", &JobArgs::sluid},
    {"restart_count", &JobArgs::restart_count},
    {"batch", &JobArgs::batch},
    // Added in 0.2 (the unique key): absent before, decoded as 0 (kJobFieldsRequired).
    {"submit_time", &JobArgs::submit_time},
    {"attempt", &JobArgs::attempt},
    // Added in 0.3 (issue 11); optional on decode as well.
    {"qos", &JobArgs::qos},
    {"time_limit", &JobArgs::time_limit},
    {"num_tasks", &JobArgs::num_tasks},
    {"num_cpus", &JobArgs::num_cpus},
    {"tres_per_node", &JobArgs::tres_per_node},
    {"tres_per_task", &JobArgs::tres_per_task},
    {"array_job_id", &JobArgs::array_job_id},
    {"array_task_id", &JobArgs::array_task_id},
    {"het_job_id", &JobArgs::het_job_id},
    {"het_job_offset", &JobArgs::het_job_offset},
    // Added in 0.4 (issue 21); optional on decode as well.
    {"cluster_name", &JobArgs::cluster_name},
    // Added in 0.5 (issue 20); optional on decode, written only when set.
    {"failed_nodes", &JobArgs::failed_nodes},
    {"failed_node_names", &JobArgs::failed_node_names},
    // Added in 0.6 (issue 40), 0.7 (issue 38); optional, written only when set.
    {"epoch", &JobArgs::epoch},
    {"pools", &JobArgs::pools},
};
/// Fields every JobArgs record has; the ones after are optional on decode.
constexpr std::size_t kJobFieldsRequired = 14;
/// Fields to_msgpack() always writes; the ones after only when set.
constexpr std::size_t kJobFieldsAlways = 27;
/// The indexes of "epoch" (0.6) and "pools" (0.7), written only when set.
constexpr std::size_t kJobFieldEpoch = 29, kJobFieldPools = 30;

/// The `step` table (contract: slurm_switch_step_*(step, stepinfo)).
const Field<StepArgs> kStepFields[] = {
    {"job_id", &StepArgs::job_id},
    {"step_id", &StepArgs::step_id},
    {"id", &StepArgs::id},
    {"sluid", &StepArgs::sluid},
    {"partition", &StepArgs::partition},
    {"node_name", &StepArgs::node_name},
    {"node_id", &StepArgs::node_id},
    {"num_nodes", &StepArgs::num_nodes},
    {"num_tasks", &StepArgs::num_tasks},
    {"user_id", &StepArgs::user_id},
    {"user_name", &StepArgs::user_name},
    {"nodes", &StepArgs::nodes},
    {"network", &StepArgs::network},
    {"batch", &StepArgs::batch},
    {"attempt", &StepArgs::attempt},
    {"cluster_name", &StepArgs::cluster_name},
};

// Push one member; false (nothing pushed) for an empty optional, i.e. nil.
using job_pools::push_member, job_pools::pack_member, job_pools::read_member;
bool push_member(lua_State *L, std::uint32_t v) {
  lua_pushinteger(L, static_cast<lua_Integer>(v));
  return true;
}
bool push_member(lua_State *L, std::int64_t v) {
  lua_pushinteger(L, static_cast<lua_Integer>(v));
  return true;
}
bool push_member(lua_State *L, const std::optional<std::uint32_t> &v) {
  if (!v)
    return false;
  lua_pushinteger(L, static_cast<lua_Integer>(*v));
  return true;
}
bool push_member(lua_State *L, bool v) {
  lua_pushboolean(L, v ? 1 : 0);
  return true;
}
bool push_member(lua_State *L, const std::optional<std::string> &v) {
  if (!v)
    return false;
  lua_pushlstring(L, v->data(), v->size());
  return true;
}
bool push_member(lua_State *L, const std::string &v) {
  lua_pushlstring(L, v.data(), v.size());
  return true;
}
bool push_member(lua_State *L, const NodeNames &v) {
  lua_createtable(L, static_cast<int>(v.size()), 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    lua_pushlstring(L, v[i].data(), v[i].size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i) + 1);
  }
  return true;
}

template <class T, std::size_t N>
void push_fields(lua_State *L, const T &obj, const Field<T> (&fields)[N]) {
  luaL_checkstack(L, 4, "argument table");
  lua_createtable(L, 0, static_cast<int>(N));
  for (const auto &f : fields)
    std::visit(
        [&](auto m) {
          if (push_member(L, obj.*m))
            lua_setfield(L, -2, f.name);
        },
        f.member);
}

// Pack one member; an empty optional is msgpack nil.
using Packer = msgpack::packer<StringSink>;
void pack_member(Packer &pk, std::uint32_t v) {
  pk.pack_uint32(v);
}
void pack_member(Packer &pk, std::int64_t v) {
  pk.pack_int64(v);
}
void pack_member(Packer &pk, const std::optional<std::uint32_t> &v) {
  if (v)
    pk.pack_uint32(*v);
  else
    pk.pack_nil();
}
void pack_member(Packer &pk, bool v) {
  v ? pk.pack_true() : pk.pack_false();
}
void pack_member(Packer &pk, const std::string &s) {
  pack_str(pk, s);
}
void pack_member(Packer &pk, const std::optional<std::string> &v) {
  if (v)
    pack_member(pk, *v);
  else
    pk.pack_nil();
}
void pack_member(Packer &pk, const NodeNames &v) {
  pk.pack_array(static_cast<std::uint32_t>(v.size()));
  for (const auto &s : v)
    pack_member(pk, s);
}

using msgpack::type::object_type;

// Read one member; the error says what was expected.
Expected<void> read_member(const msgpack::object &o, std::uint32_t &out) {
  if (o.type != object_type::POSITIVE_INTEGER || o.via.u64 > UINT32_MAX)
    return fail(fmt::format("expected an unsigned 32-bit integer, got {}", msgpack_type_name(o)));
  out = static_cast<std::uint32_t>(o.via.u64);
  return {};
}
Expected<void> read_member(const msgpack::object &o, std::optional<std::uint32_t> &out) {
  if (o.type == object_type::NIL) {
    out.reset();
    return {};
  }
  if (o.type != object_type::POSITIVE_INTEGER || o.via.u64 > UINT32_MAX)
    return fail(
        fmt::format("expected an unsigned 32-bit integer or nil, got {}", msgpack_type_name(o)));
  out = static_cast<std::uint32_t>(o.via.u64);
  return {};
}
Expected<void> read_member(const msgpack::object &o, std::int64_t &out) {
  if (o.type == object_type::POSITIVE_INTEGER && o.via.u64 <= INT64_MAX)
    out = static_cast<std::int64_t>(o.via.u64);
  else if (o.type == object_type::NEGATIVE_INTEGER)
    out = o.via.i64;
  else
    return fail(fmt::format("expected a signed 64-bit integer, got {}", msgpack_type_name(o)));
  return {};
}
Expected<void> read_member(const msgpack::object &o, bool &out) {
  if (o.type != object_type::BOOLEAN)
    return fail(fmt::format("expected a boolean, got {}", msgpack_type_name(o)));
  out = o.via.boolean;
  return {};
}
Expected<void> read_member(const msgpack::object &o, std::optional<std::string> &out) {
  if (o.type == object_type::NIL)
    out.reset();
  else if (o.type == object_type::STR)
    out.emplace(o.via.str.ptr, o.via.str.size);
  else
    return fail(fmt::format("expected a string or nil, got {}", msgpack_type_name(o)));
  return {};
}
Expected<void> read_member(const msgpack::object &o, std::string &out) {
  if (o.type != object_type::STR)
    return fail(fmt::format("expected a string, got {}", msgpack_type_name(o)));
  out.assign(o.via.str.ptr, o.via.str.size);
  return {};
}
Expected<void> read_member(const msgpack::object &o, NodeNames &out) {
  if (o.type != object_type::ARRAY)
    return fail(fmt::format("expected an array of strings, got {}", msgpack_type_name(o)));
  std::vector<std::string> names;
  names.reserve(o.via.array.size);
  for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
    const auto &e = o.via.array.ptr[i];
    if (e.type != object_type::STR)
      return fail(
          fmt::format("element {}: expected a string, got {}", i + 1, msgpack_type_name(e)));
    names.emplace_back(e.via.str.ptr, e.via.str.size);
  }
  out = NodeNames(std::move(names));
  return {};
}

/// Fills `out` from one map entry; `seen` marks the fields already read.
Expected<void> read_job_field(const msgpack::object_kv &kv, JobArgs &out, std::vector<bool> &seen) {
  if (kv.key.type != object_type::STR)
    return fail(fmt::format("a key that is {}, not a string", msgpack_type_name(kv.key)));
  const std::string_view key(kv.key.via.str.ptr, kv.key.via.str.size);
  for (std::size_t i = 0; i < std::size(kJobFields); ++i) {
    if (key != kJobFields[i].name)
      continue;
    if (seen[i])
      return fail(fmt::format("field {} appears twice", key));
    seen[i] = true;
    auto r = std::visit([&](auto m) { return read_member(kv.val, out.*m); }, kJobFields[i].member);
    if (!r)
      return fail(fmt::format("field {}: {}", key, r.error().message));
    return {};
  }
  return fail(fmt::format("unknown field {}", detail::quote(key)));
}

/// The Lua type of each alternative of Member, in its order, and whether
/// that alternative may be nil.
constexpr std::pair<std::string_view, bool> kMemberTypes[] = {
    {"integer", false}, {"string", true},  {"boolean", false}, {"string[]", false},
    {"integer", false}, {"integer", true}, {"string", false},  {"table<string,integer[]>", true},
};
static_assert(std::size(kMemberTypes) == std::variant_size_v<Member<JobArgs>>);

template <class T, std::size_t N> std::vector<ArgField> arg_fields(const Field<T> (&fields)[N]) {
  std::vector<ArgField> out;
  for (const Field<T> &f : fields) {
    const auto &[type, nil] = kMemberTypes[f.member.index()];
    out.push_back(ArgField{f.name, type, nil});
  }
  return out;
}

} // namespace

std::vector<ArgField> job_fields() {
  return arg_fields(kJobFields);
}

std::vector<ArgField> step_fields() {
  return arg_fields(kStepFields);
}

const HookInfo &hook_info(Hook h) {
  for (const auto &i : kHooks)
    if (i.hook == h)
      return i;
  assert(false && "unknown Hook");
  return kHooks[0];
}

std::string_view hook_name(Hook h) {
  return hook_info(h).name;
}

std::string_view hook_function(Hook h) {
  return hook_info(h).function;
}

std::optional<Hook> hook_from_name(std::string_view name) {
  for (const auto &n : kHooks)
    if (n.name == name)
      return n.hook;
  return std::nullopt;
}

std::string describe_value(lua_State *L, int idx) {
  switch (lua_type(L, idx)) {
  case LUA_TNONE:
    return "no value";
  case LUA_TNIL:
    return "nil";
  case LUA_TBOOLEAN:
    return lua_toboolean(L, idx) ? "true (a boolean)" : "false (a boolean)";
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx))
      return fmt::format("{}", lua_tointeger(L, idx));
    return detail::format_float(lua_tonumber(L, idx)) + " (a float)";
  case LUA_TSTRING: {
    std::size_t len = 0;
    const char *s = lua_tolstring(L, idx, &len);
    return detail::quote({s, len}) + " (a string)";
  }
  case LUA_TLIGHTUSERDATA:
    return "a light userdata";
  case LUA_TTHREAD:
    return "a thread (coroutine)";
  default:
    return fmt::format("a {}", lua_typename(L, lua_type(L, idx)));
  }
}

MsgpackBytes JobArgs::to_msgpack() const {
  StringSink buf;
  std::size_t estimate = 1024; // the other fields, keys included
  for (const std::string &n : node_names)
    estimate += n.size() + 5;
  buf.bytes.reserve(estimate);
  Packer pk(buf);
  // The 0.5 pair only with failed nodes, the 0.6 epoch, 0.7 pools only when set.
  auto written = [&](std::size_t i) {
    return i < kJobFieldsAlways || (i == kJobFieldEpoch   ? epoch.has_value()
                                    : i == kJobFieldPools ? !pools.empty()
                                                          : failed_nodes.has_value());
  };
  std::size_t n = 0;
  for (std::size_t i = 0; i < std::size(kJobFields); ++i)
    n += written(i) ? 1 : 0;
  pk.pack_map(static_cast<std::uint32_t>(n));
  for (std::size_t i = 0; i < std::size(kJobFields); ++i) {
    if (!written(i))
      continue;
    const auto &f = kJobFields[i];
    pack_str(pk, f.name);
    std::visit([&](auto m) { pack_member(pk, this->*m); }, f.member);
  }
  return std::move(buf.bytes);
}

Expected<JobArgs> JobArgs::from_msgpack(std::string_view bytes) {
  auto oh = unpack_one(bytes, limits_for_size(bytes.size(), 3), "map");
  if (!oh)
    return fail("JobArgs msgpack: " + oh.error().message);
  const msgpack::object &o = oh->get();
  if (o.type != object_type::MAP)
    return fail(fmt::format("JobArgs msgpack: expected a map, got {}", msgpack_type_name(o)));
  JobArgs out;
  std::vector<bool> seen(std::size(kJobFields), false);
  for (std::uint32_t i = 0; i < o.via.map.size; ++i)
    if (auto r = read_job_field(o.via.map.ptr[i], out, seen); !r)
      return fail("JobArgs msgpack: " + r.error().message);
  for (std::size_t i = 0; i < kJobFieldsRequired; ++i)
    if (!seen[i])
      return fail(fmt::format("JobArgs msgpack: missing field {}", kJobFields[i].name));
  return out;
}

void JobArgs::push(lua_State *L) const {
  push_fields(L, *this, kJobFields);
}

void StepArgs::push(lua_State *L) const {
  push_fields(L, *this, kStepFields);
}

// ---- What a hook returned -------------------------------------------------

namespace {

bool is_boolean_hook(Hook h) {
  return hook_info(h).boolean;
}

/// How many values the hook may return (contract: return conventions).
int max_values(Hook h) {
  return hook_info(h).max_values;
}

/// The convention in words, for messages.
std::string_view convention(Hook h) {
  return hook_info(h).convention;
}

/// rc: an integer number; an integral float (0.0) counts as that integer.
Expected<std::int64_t> parse_rc(lua_State *L, int idx, Hook h) {
  int ok = 0;
  const lua_Integer rc = lua_type(L, idx) == LUA_TNUMBER ? lua_tointegerx(L, idx, &ok) : 0;
  if (!ok)
    return fail(fmt::format("{} returned {} as rc, expected an integer number", hook_name(h),
                            describe_value(L, idx)));
  return static_cast<std::int64_t>(rc);
}

Expected<void> parse_jobinfo(lua_State *L, int idx, HookReturn &out) {
  if (lua_isnil(L, idx))
    return {};
  if (!lua_istable(L, idx))
    return fail(fmt::format("job_start returned {} as jobinfo, expected a table or nil",
                            describe_value(L, idx)));
  auto bytes = encode_lua(L, idx, "jobinfo");
  if (bytes)
    out.jobinfo = std::move(*bytes);
  else
    out.jobinfo_error = bytes.error().message;
  return {};
}

Expected<void> parse_env(lua_State *L, int idx, HookReturn &out) {
  if (lua_isnil(L, idx))
    return {};
  if (!lua_istable(L, idx))
    return fail(fmt::format("step_init returned {} as env, expected a table or nil",
                            describe_value(L, idx)));
  if (lua_getmetatable(L, idx)) {
    lua_pop(L, 1);
    return fail("step_init returned an env table with a metatable, expected a plain table");
  }
  out.has_env = true;
  out.env = env_ops_from_table(L, idx, out.warnings);
  return {};
}

/// A step hook's message (switch.lua(5): `return -1, "fabric port down"`):
/// a string or nil; made valid UTF-8, one line (control characters
/// escaped: log_escape, issue 21) and cut at kMaxHookMessageBytes.
Expected<void> parse_message(lua_State *L, int idx, HookReturn &out) {
  if (lua_isnil(L, idx))
    return {};
  if (lua_type(L, idx) != LUA_TSTRING)
    return fail(fmt::format("{} returned {} as message, expected a string or nil",
                            hook_name(out.hook), describe_value(L, idx)));
  std::size_t len = 0;
  const char *m = lua_tolstring(L, idx, &len);
  out.message =
      utf8_truncate_marked(log_escape(std::string_view(m, len)), kMaxHookMessageBytes, "...");
  return {};
}

/// Appends the names of one string of job_complete's nodes (a host list
/// expression) to `out`.
Expected<void> add_node_names(std::string_view text, std::vector<std::string> &out) {
  auto names = expand_hostlist(text);
  if (!names)
    return fail(fmt::format("job_complete returned {} as nodes: {}", detail::quote(text),
                            names.error().message));
  if (out.size() + names->size() > kMaxHostlistNames)
    return fail(fmt::format("job_complete returned more than {} nodes", kMaxHostlistNames));
  out.insert(out.end(), names->begin(), names->end());
  return {};
}

/// job_complete's third value (issue 20): the nodes its failure concerns, a
/// host list expression or an array (sequence) of names or expressions.
Expected<void> parse_nodes(lua_State *L, int idx, HookReturn &out) {
  if (lua_isnil(L, idx))
    return {};
  std::vector<std::string> names;
  if (lua_type(L, idx) == LUA_TSTRING) {
    std::size_t len = 0;
    const char *t = lua_tolstring(L, idx, &len);
    if (auto e = add_node_names(std::string_view(t, len), names); !e)
      return e;
  } else if (lua_istable(L, idx) && !lua_getmetatable(L, idx)) {
    const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
    for (lua_Integer i = 1; i <= n; ++i) {
      const bool is_string = lua_rawgeti(L, idx, i) == LUA_TSTRING;
      std::size_t len = 0;
      const char *t = is_string ? lua_tolstring(L, -1, &len) : nullptr;
      std::string text = is_string ? std::string(t, len) : describe_value(L, -1);
      lua_pop(L, 1);
      if (!is_string)
        return fail(
            fmt::format("job_complete returned {} as nodes[{}], expected a node name", text, i));
      if (auto e = add_node_names(text, names); !e)
        return e;
    }
  } else {
    if (lua_istable(L, idx))
      lua_pop(L, 1); // the metatable
    return fail(
        fmt::format("job_complete returned {} as nodes, expected a host list, an array of "
                    "node names or nil",
                    lua_istable(L, idx) ? "a table with a metatable" : describe_value(L, idx)));
  }
  out.nodes = std::move(names);
  return {};
}

} // namespace

HookReturn missing_hook_return(Hook h) {
  HookReturn r;
  r.hook = h;
  r.rc = kSuccess;
  r.flag = false;
  return r;
}

Expected<HookReturn> parse_hook_return(lua_State *L, Hook h, int nret) {
  const int first = lua_gettop(L) - nret + 1;
  int n = nret;
  while (n > max_values(h) && lua_isnil(L, first + n - 1))
    --n; // trailing nils past the convention are no values
  if (n == 0)
    return fail(fmt::format("{} returned no value, expected {}", hook_name(h), convention(h)));
  if (n > max_values(h))
    return fail(fmt::format("{} returned {} values, expected {}", hook_name(h), n, convention(h)));
  HookReturn out = missing_hook_return(h);
  if (is_boolean_hook(h)) {
    if (!lua_isboolean(L, first))
      return fail(fmt::format("{} returned {}, expected a boolean", hook_name(h),
                              describe_value(L, first)));
    out.flag = lua_toboolean(L, first) != 0;
    return out;
  }
  auto rc = parse_rc(L, first, h);
  if (!rc)
    return Unexpected<Error>{rc.error()};
  out.rc = *rc;
  Expected<void> second;
  if (h == Hook::JobStart && n == 2 && out.rc != kSuccess && lua_type(L, first + 1) == LUA_TSTRING)
    second = parse_message(L, first + 1, out); // a failed setup's message (issue 11)
  else if (h == Hook::JobStart && n == 2)
    second = parse_jobinfo(L, first + 1, out);
  else if (h == Hook::StepInit && n == 2 && out.rc < 0 && lua_type(L, first + 1) == LUA_TSTRING)
    second = parse_message(L, first + 1, out);
  else if (h == Hook::StepInit && n == 2)
    second = parse_env(L, first + 1, out);
  else if ((h == Hook::StepPreinit || h == Hook::StepPostfini || h == Hook::JobComplete) && n >= 2)
    second = parse_message(L, first + 1, out);
  if (second && h == Hook::JobComplete && n == 3)
    second = parse_nodes(L, first + 2, out); // issue 20, per-node attribution
  if (!second)
    return Unexpected<Error>{second.error()};
  return out;
}

} // namespace switchlua
