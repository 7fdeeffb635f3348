// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: stepd/step_hooks.hpp
//
// The slurmstepd side: preinit, init and postfini run in-process on a script
// loaded once per slurmstepd, with the contract's mapping of their results
// (switch.lua contract, "slurmstepd: per step"):
//
//   rc == 0          proceed
//   rc <  0          preinit/init: the step fails (ESLURM_INTERCONNECT_FAILURE,
//                    srun: "Error configuring interconnect");
//                    postfini: the node is drained
//   rc >  0          logged; the step proceeds
//   rc, "message"    (any rc; step_init only with rc < 0) the message joins
//                    the log line and postfini's drain reason
//   Lua error        logged; the step proceeds (fail-open, deliberately weaker
//                    than an explicit negative return)
//   bad return       (e.g. the string "0") logged as a script bug; fail-open
//                    like a Lua error
//
// init's env table becomes EnvOps (see contract.hpp for the rules); the
// operations are applied only when init did not fail.
//
//   auto hooks = StepHooks::load("/etc/slurm/switch.lua", sink);
//   StepVerdict v = hooks->init(step, &stepinfo);
//   if (v.kind == StepVerdict::Kind::FailStep) return ESLURM_INTERCONNECT_FAILURE;
#pragma once

#include "common/expected.hpp"
#include "lua/contract.hpp"
#include "lua/runtime.hpp"

#include <memory>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <vector>

namespace switchlua {

/// The consequence of one step hook for the step and the node.
struct StepVerdict {
  enum class Kind {
    Proceed,   ///< the step goes on
    FailStep,  ///< preinit/init returned < 0: fail the step
    DrainNode, ///< postfini returned < 0: drain this node
  };
  Kind kind = Kind::Proceed;
  std::int64_t rc = 0;    ///< what the hook returned (0 after an error)
  bool lua_error = false; ///< the hook raised or broke the convention (fail-open)
  std::vector<EnvOp> env; ///< init: environment operations to apply
  std::string message;    ///< what the hook returned with its rc ("" if nothing)
  /// DrainNode: "switch postfini failed: <message, or rc=-1> (switch/lua
  /// step_postfini JobId=42 StepId=42.0 node1)"; its first 20 characters,
  /// all that sinfo -R shows, say what failed.
  std::string reason;
  std::string summary; ///< one line for logs and timelines
};

/// The umask every step hook (and the script's main chunk, and the commands
/// slurm.run starts from them) runs under in slurmstepd: slurmstepd applies
/// the user's SLURM_UMASK to itself before postfini and never restores it
/// (Slurm 24.11 to 26.05 mgr.c), so without this, files root's postfini
/// creates would get the mode the user chose (issue 35).
inline constexpr mode_t kStepHookUmask = 022;

/// Sets the process's umask for its lifetime, then restores the one before.
class UmaskGuard {
public:
  explicit UmaskGuard(mode_t mask = kStepHookUmask) : old_(::umask(mask)) {}
  ~UmaskGuard() { ::umask(old_); }
  UmaskGuard(const UmaskGuard &) = delete;
  UmaskGuard &operator=(const UmaskGuard &) = delete;

private:
  mode_t old_;
};

/// The step hooks on one loaded script.  Not thread-safe.
class StepHooks {
public:
  /// Loads the script (fresh Lua state) with `sink` for its log lines.
  /// Errors as Script::load.
  static Expected<StepHooks> load(const std::string &path, LogSink sink);

  /// preinit(step, stepinfo): stepinfo is the job's jobinfo (msgpack) or
  /// nullptr for nil.
  StepVerdict preinit(const StepArgs &step, const MsgpackBytes *stepinfo);
  StepVerdict init(const StepArgs &step, const MsgpackBytes *stepinfo);
  StepVerdict postfini(const StepArgs &step, const MsgpackBytes *stepinfo);

  Script &script() { return script_; }

private:
  StepHooks(Script s, LogSink sink, std::shared_ptr<std::string> tag)
      : script_(std::move(s)), sink_(std::move(sink)), tag_(std::move(tag)) {}
  StepVerdict run(Hook h, const StepArgs &step, const MsgpackBytes *stepinfo);
  Script script_;
  LogSink sink_;
  /// "JobId=N StepId=M node step_init" while a hook runs: prefixed to the
  /// script's own log lines, so grepping a JobId finds them too.
  std::shared_ptr<std::string> tag_;
};

/// The line (without the "switch/lua: " prefix) for a step of a managed job
/// (it has a stepinfo) whose hook cannot run on this node, e.g. because
/// the node's script did not load (switch.lua(5), "When the script does
/// not load": a managed step never runs without its step hooks):
/// "JobId=42 StepId=42.0 step_preinit on node7: the job is managed by
/// switch/lua (its step has a stepinfo) but WHY: the step fails (Error
/// configuring interconnect)"; `fails_step` false (step_postfini): "...:
/// not run".  `node` empty: "this node".  The plugin's slurmstepd
/// (plugin/stepd_abi.cpp) and `switch-lua simulate` both write it.
std::string managed_step_cannot_run(std::uint32_t job_id, std::uint32_t step_id,
                                    std::string_view node, std::string_view hook,
                                    std::string_view why, bool fails_step);

/// "JobId=42 StepId=42.0 node1 step_init" (hook empty: without it) for log
/// lines: the subject of common/log_stamp.hpp, whose step_id_text() spells
/// the special steps the way Slurm does ("42.batch").
std::string step_tag(const StepArgs &s, std::string_view hook = {});

} // namespace switchlua
