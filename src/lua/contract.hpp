// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/contract.hpp
//
// The switch.lua contract as data: the hooks, the argument tables each hook
// receives, the return codes, and one strict parser per hook of what the
// hook returned.  The source of every rule here is the contract script
// (switch.lua(5); the seed `shared/seeds/switch.lua`).
//
// Return conventions (switch.lua contract):
//   block_job_complete, setup_special_steps -> boolean
//   job_start   -> rc, jobinfo|nil      (rc must be an integer number)
//                  or, with rc ~= SUCCESS: rc, message (a string: the
//                  failure's message, as an error() message reaches the
//                  job's reason; a jobinfo with a failed rc is discarded
//                  anyway, so a string cannot be mistaken for one)
//   job_complete -> rc[, message[, nodes]]  (issue 20: message a string
//                  or nil, joins the outcome line and a drain's reason;
//                  nodes a host list expression or an array of names, the
//                  nodes a failure concerns: only those are drained)
//   step_preinit, step_postfini -> rc[, message]
//   step_init   -> rc, env|nil      or, with rc < 0: rc, message
// A return that breaks the convention (no value, the string "0", NaN, 0.5,
// a function) is a `BadReturn` failure with a precise message, never a
// success.  A missing hook function behaves as documented per hook in
// `missing_hook_return()`.
//
// Decisions where the contract script is silent (tested in
// test/unit/lua/contract_test.cpp):
//   - rc is an integer number.  A float with an integral value (0.0, -1.0)
//     is that integer, as Lua 5.4 itself converts it; 0.5, NaN, +-inf, a
//     float beyond int64 and every non-number (the string "0") are refused.
//   - Strings are never coerced to numbers or booleans.
//   - A boolean hook must return true or false; nil is refused.  (A hook
//     that is not defined at all answers false.)
//   - Trailing nils past the convention are ignored (`return rc, nil` from
//     job_complete is fine); any other extra value is refused.
#pragma once

#include "common/expected.hpp"
#include "lua/job_pools.hpp"
#include "lua/node_names.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct lua_State;

namespace switchlua {

/// msgpack-encoded bytes of one Lua value (see lua/codec.hpp).
using MsgpackBytes = std::string;

/// The hooks of the contract, in the order of a job's life.
enum class Hook : std::uint8_t {
  BlockJobComplete,  ///< slurmctld, asked once per daemon: hold nodes during job_complete?
  SetupSpecialSteps, ///< asked once per daemon: also run init for batch/interactive steps?
  JobStart,          ///< slurmctld: set the fabric up for a job (supervised child)
  JobComplete,       ///< slurmctld: tear the fabric down (supervised child)
  StepPreinit,       ///< slurmstepd, per step and node, before the container exists
  StepInit,          ///< slurmstepd, inside the container; may set step environment
  StepPostfini,      ///< slurmstepd, after every task is dead
};

/// All hooks, for iteration.
inline constexpr Hook kAllHooks[] = {
    Hook::BlockJobComplete, Hook::SetupSpecialSteps, Hook::JobStart,    Hook::JobComplete,
    Hook::StepPreinit,      Hook::StepInit,          Hook::StepPostfini};

/// Where a hook runs (switch.lua contract: the hooks and their processes).
enum class HookHost : std::uint8_t {
  Supervised, ///< slurmctld's side, in a child of switch-lua-supervisor
  Slurmstepd, ///< in slurmstepd's own process, on the node
};

/// One row of the contract's hook table: everything the product knows about
/// a hook in one place.  The runner, the supervisor client, the return
/// parser, `switch-lua check` and `simulate` read it; a new hook is a row.
struct HookInfo {
  Hook hook;
  std::string_view name;        ///< "job_start": logs, frames, the CLI
  std::string_view function;    ///< "slurm_switch_job_start": the Lua global
  HookHost host;                ///< where it runs
  std::string_view arguments;   ///< the Lua call, e.g. "(job, jobinfo)"
  bool boolean;                 ///< returns true/false (asked once per daemon)
  int max_values;               ///< values it may return (trailing nils aside)
  std::string_view convention;  ///< the return convention in words
  std::string_view when_absent; ///< what a script without it gets, in words
};

/// The row of `h` (every Hook has one).
const HookInfo &hook_info(Hook h);

/// Short name used in logs, frames and the CLI: "job_start", "step_init", ...
std::string_view hook_name(Hook h);
/// The global Lua function implementing the hook: "slurm_switch_job_start", ...
std::string_view hook_function(Hook h);
/// Inverse of hook_name(); nullopt for an unknown name.
std::optional<Hook> hook_from_name(std::string_view name);

/// One field of the job or step table as the code defines it (the tables
/// kJobFields / kStepFields of contract.cpp, the one source that push(),
/// the msgpack codec, switch.lua(5) and the LuaLS definitions
/// lua/switch-lua-meta/slurm.lua are checked against): its key, its Lua type
/// ("integer", "string", "boolean", "string[]") and whether it may be nil.
struct ArgField {
  std::string_view name;
  std::string_view lua_type;
  bool may_be_nil;
};

/// The fields of the `job` table, in table order.
std::vector<ArgField> job_fields();
/// The fields of the `step` table, in table order.
std::vector<ArgField> step_fields();

/// Return codes exposed as slurm.SUCCESS / slurm.ERROR / slurm.EAGAIN.
/// EAGAIN is Linux's errno value; positive, so "other positive values" of
/// job_complete (only logged) must differ from it.
inline constexpr std::int64_t kSuccess = 0;
inline constexpr std::int64_t kError = -1;
inline constexpr std::int64_t kEagain = 11;
/// slurm.FABRIC_DOWN (issue 20): the fabric as a whole is unavailable, not
/// this job's part of it; opens the controller's fabric breaker
/// (switch.lua(5), Fabric outages).  Negative, so a plugin that does not
/// know it takes it for a failure (a drain), never for a success.
inline constexpr std::int64_t kFabricDown = -100;

/// The `job` table of job_start / job_complete.  Strings are Slurm's own
/// text; an empty optional is nil in Lua.
struct JobArgs {
  std::uint32_t job_id = 0;
  std::uint32_t user_id = 0;
  std::uint32_t group_id = 0;
  std::optional<std::string> user_name;
  std::optional<std::string> name;  ///< job name (-J)
  std::optional<std::string> nodes; ///< hostlist expression, e.g. "node[1-3]"
  NodeNames node_names;             ///< the same nodes, expanded, in order (shared by copies)
  std::uint32_t num_nodes = 0;
  std::optional<std::string> partition;
  std::optional<std::string> network; ///< the job's --network string
  std::optional<std::string> account;
  std::optional<std::string> sluid; ///< Slurm's SLUID text where the Slurm has one
  std::uint32_t restart_count = 0;  ///< times the job was requeued
  bool batch = false;               ///< a batch job (sbatch), not an allocation
  /// The job record's submit time (Unix seconds, details->submit_time):
  /// with job_id, the key of the job record; job ids come back after a
  /// slurmctld crash, (job_id, submit_time) does not.  0 when unknown.
  std::int64_t submit_time = 0;
  /// Unique per setup attempt (one job_start call and the job_complete calls
  /// that tear down what it set up); 0 when unknown.  Never reused, also
  /// across slurmctld restarts: microseconds since the epoch, strictly
  /// increasing within a controller.
  std::int64_t attempt = 0;
  // Added in 0.3 (issue 11, read-only facts a fabric policy keys on); a
  // record written before has none of them: decoded as nil / 0.
  std::optional<std::string> qos;              ///< the job's QOS name
  std::optional<std::uint32_t> time_limit;     ///< minutes; nil when unlimited or unset
  std::uint32_t num_tasks = 0;                 ///< details->num_tasks (0: not known)
  std::uint32_t num_cpus = 0;                  ///< CPUs allocated (total_cpus), else requested
  std::optional<std::string> tres_per_node;    ///< as Slurm keeps it, e.g. "gres/gpu:2"
  std::optional<std::string> tres_per_task;    ///< as Slurm keeps it, e.g. "cpu=2"
  std::optional<std::uint32_t> array_job_id;   ///< array jobs only
  std::optional<std::uint32_t> array_task_id;  ///< array jobs only
  std::optional<std::uint32_t> het_job_id;     ///< heterogeneous jobs only (the leader's id)
  std::optional<std::uint32_t> het_job_offset; ///< heterogeneous jobs only (component, from 0)
  /// Added in 0.4 (issue 21): slurm_conf.cluster_name of the controller
  /// (ClusterName, admin-set), so two clusters on one fabric can key their
  /// allocations apart; nil in a record written before.
  std::optional<std::string> cluster_name;
  /// Added in 0.5 (issue 20, per-node attribution): the nodes of the job
  /// that failed or were removed from it, as slurmctld says when the job
  /// ends (switch_p_job_complete: DOWN, NOT_RESPONDING or FAIL, or no
  /// longer in the allocation of a --no-kill job), a host list expression
  /// of names among node_names; nil when none, in job_start, and in the
  /// teardown of an attempt no job record carries (an orphan).  Set by the
  /// core at JobEnded (CtldCore::job_complete), never by the script.
  std::optional<std::string> failed_nodes;
  /// The same nodes expanded, in node_names' order; empty when none.
  NodeNames failed_node_names;
  /// Added in 0.6 (issue 40): the epoch of the control period of the
  /// slurmctld that runs the call (switch.lua(5), HIGH AVAILABILITY):
  /// grows by one with each controller that takes control, so a fabric
  /// manager may refuse a call whose epoch is below one it has seen.  Set
  /// by the core in the call's copy of the table only (never in Slurm's
  /// state nor the journal); nil without a journal.
  std::optional<std::uint32_t> epoch;
  /// Added in 0.7 (issue 38; switch.lua(5), POOLS): the fabric IDs of the
  /// declared pools (switch_pool_NAME) that this setup attempt holds, pool
  /// name -> IDs; taken by the core before job_start runs, so they are in
  /// the journal's "setup started" record.  Empty (nil in Lua, not written
  /// in msgpack) when no pool is declared.
  JobPools pools;

  /// Encodes the table as a msgpack map (keys as above).  The fields of
  /// 0.5 are written only when failed_nodes is set, so that a plugin of
  /// 0.4, which refuses keys it does not know, still reads every record of
  /// a job without failed nodes (a downgrade); epoch (0.6) only when set,
  /// pools (0.7) only when not empty.
  MsgpackBytes to_msgpack() const;
  /// Decodes what to_msgpack() wrote, including records of previous
  /// versions without submit_time and attempt (read as 0) or without the
  /// fields added in 0.3, 0.4 or 0.5 (nil / 0 / empty).  Error on anything else, with a
  /// message starting "JobArgs msgpack: ": not a map, an unknown, missing or
  /// repeated field, a field of the wrong type ("field user_id: expected an
  /// unsigned 32-bit integer, got a string"), trailing or truncated bytes.
  static Expected<JobArgs> from_msgpack(std::string_view bytes);
  bool operator==(const JobArgs &) const = default;
  /// Pushes the table onto L (one slot).  Never raises except on OOM.
  void push(lua_State *L) const;
};

/// The `step` table of the slurmstepd hooks.
struct StepArgs {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  /// The step in Slurm's own text, "JobId.StepId" ("1234.0", "1234.batch";
  /// "1234+1.0" for a component of a heterogeneous job); never nil (the
  /// glue always builds it, switch.lua(5)).
  std::string id;
  std::optional<std::string> sluid;
  std::optional<std::string> partition; ///< nil on a batch step (contract)
  std::optional<std::string> node_name; ///< this node
  std::uint32_t node_id = 0;            ///< this node's index in the step
  std::uint32_t num_nodes = 0;
  std::uint32_t num_tasks = 0;
  std::uint32_t user_id = 0;
  std::optional<std::string> user_name;
  /// The step's hostlist expression, from the launch credential (signed by
  /// slurmctld: step_hostlist).
  std::optional<std::string> nodes;
  /// The step's --network as slurmctld recorded it (srun's --network, else
  /// the job's), from the stepinfo; never the task environment (issue 21).
  /// nil when the controller's plugin did not send it (older version).
  std::optional<std::string> network;
  bool batch = false;
  /// The setup attempt (job.attempt of the job_start) whose stepinfo this
  /// step got, set by the plugin from the stepinfo (issue 20: a requeued
  /// job keeps its id; a step hook of an earlier run can arrive after the
  /// controller tore that run down).  0: unknown (a stepinfo of a
  /// controller that predates it).
  std::int64_t attempt = 0;
  /// ClusterName of the controller that set the job up (the stepinfo's,
  /// i.e. job.cluster_name of job_start); nil from an older controller.
  std::optional<std::string> cluster_name;

  /// Pushes the table onto L (one slot; empty optionals are absent, i.e.
  /// nil).  Never raises except on OOM.
  void push(lua_State *L) const;
};

/// One change to a step's environment, from step_init's env table.
struct EnvOp {
  enum class Kind { Set, Unset };
  Kind kind = Kind::Set;
  std::string name;
  std::string value; ///< empty for Unset
  bool operator==(const EnvOp &) const = default;
};

/// What a hook returned, parsed per the contract.
struct HookReturn {
  Hook hook = Hook::JobStart;
  /// rc of job_start, job_complete and the step hooks (kSuccess, kEagain, ...).
  std::int64_t rc = kSuccess;
  /// The boolean of block_job_complete / setup_special_steps.
  bool flag = false;
  /// job_start: the jobinfo table, msgpack-encoded; nullopt when nil (the
  /// job is declined) or when it could not be encoded (see jobinfo_error).
  std::optional<MsgpackBytes> jobinfo;
  /// job_start: non-empty when a table was returned but cannot be saved,
  /// e.g. "jobinfo.fabric.handler: a function cannot be saved".
  std::string jobinfo_error;
  /// step_init: whether an env table was returned, and its operations.
  bool has_env = false;
  std::vector<EnvOp> env;
  /// Step hooks and a failed job_start: the message a hook gave with its rc
  /// (`return -1, "fabric port down"`), valid UTF-8 (invalid bytes
  /// replaced), at most kMaxHookMessageBytes; empty when none.  It reaches
  /// the log line and, for step_postfini, the node's drain reason, for
  /// job_start the job's reason.
  std::string message;
  /// job_complete (issue 20, per-node attribution): the nodes its failure
  /// concerns, its third value (a host list expression, or an array of
  /// names or expressions), expanded; nullopt when it gave none (nil), an
  /// empty list when it gave an empty one.  Only a failure (rc < 0 but
  /// slurm.FABRIC_DOWN) drains, and then only these of the job's nodes.
  std::optional<std::vector<std::string>> nodes;
  /// Entries skipped while parsing (bad env names, nested tables, SLURM_*),
  /// one log line each.
  std::vector<std::string> warnings;
};

/// Longest step hook message kept, bytes (cut on a character boundary).
inline constexpr std::size_t kMaxHookMessageBytes = 200;

/// What a hook "returns" when the script does not define it: false for the
/// boolean hooks; kSuccess with nil jobinfo / no env otherwise (a script
/// without job_start declines every job).
HookReturn missing_hook_return(Hook h);

/// Parses the `nret` values on top of L's stack, returned by hook `h`.
/// Does not pop them; the stack is unchanged on return.  Errors (the caller
/// reports them as BadReturn), each starting with the hook name:
///   `job_start returned no value, expected rc, jobinfo|nil`
///   `job_start returned "0" (a string) as rc, expected an integer number`
///   `job_start returned "x" (a string) as jobinfo, expected a table or nil`
///   `step_init returned 7 as env, expected a table or nil`
///   `job_complete returned 4 values, expected rc[, message[, nodes]]`
///   `job_complete returned 7 as nodes, expected a host list, an array of
///    node names or nil`
///   `block_job_complete returned nil, expected a boolean`
/// A jobinfo table that cannot be encoded is not an error: it sets
/// `jobinfo_error` (path rooted at "jobinfo", see lua/codec.hpp).
Expected<HookReturn> parse_hook_return(lua_State *L, Hook h, int nret);

/// A short description of the Lua value at `idx` for messages, without
/// calling metamethods or converting in place: `nil`, `no value`,
/// `true (a boolean)`, `-1` (integers bare), `0.5 (a float)`,
/// `nan (a float)`, `"0" (a string)` (quoted, escaped, cut at 40 bytes),
/// `a table`, `a function`, `a userdata`, `a thread (coroutine)`.
std::string describe_value(lua_State *L, int idx);

/// The env rules of step_init (contract): string -> set; integer ->
/// decimal text ("42"); float -> "%.14g" text ("0.5", 7.0 -> "7"); true ->
/// "1"; false -> unset.  Skipped, each with one warning naming the entry and
/// the reason, e.g. `env.SLURM_JOB_ID skipped: SLURM_* names belong to
/// Slurm` (the caller adds hook and step): a non-string or empty name, a
/// name with '=' or NUL, a string value with NUL, a NaN or infinite float, a
/// table, function or other value type, and any SLURM_* name (setup_env()
/// overwrites those).  Reads raw (no metamethods); the stack is unchanged.
/// Operations are sorted by name and the new warnings sorted, so results
/// are deterministic.
std::vector<EnvOp> env_ops_from_table(lua_State *L, int idx, std::vector<std::string> &warnings);

} // namespace switchlua
