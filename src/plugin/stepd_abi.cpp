// SPDX-License-Identifier: GPL-2.0-or-later
//
// The slurmstepd half of the C ABI (switch_lua_core.h: slc_stepd_*): the
// step hooks, in slurmstepd's own process, over stepd/step_hooks.hpp.
// Every entry point runs in cabi::guarded() (abi_guard.hpp): an exception is
// logged and the step goes on (the contract's fail-open for step hooks).
#include "plugin/switch_lua_core.h"

#include "common/log_stamp.hpp"
#include "common/utf8.hpp"
#include "lua/run_command.hpp"
#include "plugin/abi_guard.hpp"
#include "stepd/step_hooks.hpp"
#include "stepd/stepinfo.hpp"

#include <cstring>
#include <fmt/format.h>
#include <optional>

namespace switchlua {
namespace {

using cabi::opt;

struct Stepd {
  slc_log_fn log = nullptr;
  std::optional<StepHooks> hooks;
  bool compared = false; ///< provenance checked (once per slurmstepd: one step)
  bool mismatch_fails_step = false;
  bool setup_special_steps = false; ///< the script's answer at init (Slurm 25.11+)
  /// Why this node's script did not load (slc_stepd_init), for the line of
  /// a managed step that therefore fails.
  std::string load_error;
  /// slc_stepd_init ran and the script did not load (or loading threw).
  bool load_failed = false;
};
Stepd g_stepd;

/// "JobId=42 StepId=42.batch" (common/log_stamp.hpp) for an entry point's
/// error line; "step" without a step.
std::string step_entry(const slc_step_t *step, std::string_view hook = {}) {
  if (!step)
    return std::string(hook.empty() ? "step" : hook);
  return log_subject({.job_id = step->job_id, .step_id = step->step_id, .hook = hook});
}

/// A finished line ("switch/lua: ...") at error level, for cabi::guarded().
void stepd_line(const std::string &line) {
  if (g_stepd.log)
    g_stepd.log(SLC_LOG_ERROR, log_escape(line).c_str());
}

void stepd_log(LogLevel l, std::string_view text) {
  if (g_stepd.log)
    g_stepd.log(static_cast<int>(l), log_escape(log_line({}, text)).c_str());
}

/// Compares the script this slurmstepd loaded with the one whose job_start
/// set the job up (the stepinfo's hash; switch.lua(5), PROVENANCE).  A
/// mismatch is logged with both hashes, the node and the step; returns
/// false when the step must fail (switch_script_mismatch=fail).
bool provenance_matches(const StepArgs &a, const Stepinfo &si) {
  const std::string &here = g_stepd.hooks->script().hash();
  if (si.script_hash.empty() || si.script_hash == here)
    return true;
  stepd_log(
      LogLevel::Error,
      fmt::format("{}: script mismatch: {} here has content {}, but job_start ran content "
                  "{} on slurmctld; {} (switch_script_mismatch={})",
                  step_tag(a), g_stepd.hooks->script().path(), here, si.script_hash,
                  si.mismatch_fails ? "the step fails" : "the step runs with this node's copy",
                  si.mismatch_fails ? "fail" : "warn"));
  return !si.mismatch_fails;
}

/// A step of a managed job (it has a stepinfo) that cannot get its step
/// hooks (issue 20): preinit and init fail the step (FailStep, slurmstepd's
/// "Error configuring interconnect"), postfini only logs; one line naming
/// the step, the node and why.  A managed step never runs without them.
std::optional<StepVerdict> cannot_run(const slc_step_t *step, std::string_view hook,
                                      bool fails_step, const std::string &why) {
  stepd_log(LogLevel::Error,
            managed_step_cannot_run(step->job_id, step->step_id,
                                    step->node_name ? step->node_name : "", hook, why, fails_step));
  if (!fails_step)
    return std::nullopt;
  StepVerdict v;
  v.kind = StepVerdict::Kind::FailStep;
  v.rc = -1;
  return v;
}

/// Runs one step hook; nullopt when it must not run (no stepinfo: the job
/// is not managed).  A managed step whose hooks cannot run: cannot_run().
template <typename F>
std::optional<StepVerdict> run_step_hook(const slc_step_t *step, const char *info, size_t len,
                                         std::string_view hook, bool fails_step, F call) {
  if (!step || !info || len == 0)
    return std::nullopt; // contract: no stepinfo, no step hooks
  if (!g_stepd.hooks)
    return cannot_run(step, hook, fails_step,
                      fmt::format("this node's script did not load ({})",
                                  g_stepd.load_error.empty() ? "see the error at its start"
                                                             : g_stepd.load_error));
  auto si = decode_stepinfo(std::string_view(info, len));
  if (!si)
    return cannot_run(step, hook, fails_step,
                      fmt::format("this node cannot read its stepinfo ({}; this node reads "
                                  "stepinfo versions 1 to {}: upgrade it to slurmctld's version)",
                                  si.error().message, kStepinfoVersion));
  StepArgs a;
  a.job_id = step->job_id;
  a.step_id = step->step_id;
  a.node_id = step->node_id;
  a.num_nodes = step->num_nodes;
  a.num_tasks = step->num_tasks;
  a.user_id = step->user_id;
  a.node_name = opt(step->node_name);
  a.user_name = opt(step->user_name);
  a.nodes = opt(step->nodes);
  a.id = step->id ? step->id : "";
  a.partition = opt(step->partition);
  a.batch = step->batch;
  a.sluid = si->sluid;
  a.attempt = si->attempt; // the plugin's, never the script's
  // Issue 21: what slurmctld recorded and signed, never the task environment.
  a.network = si->network;
  a.cluster_name = si->cluster_name;
  if (si->num_tasks)
    a.num_tasks = *si->num_tasks;
  else if (!step->batch)
    a.num_tasks = 0; // an older controller: the launch request's count is srun's to write
  if (!g_stepd.compared) {
    g_stepd.compared = true;
    g_stepd.mismatch_fails_step = !provenance_matches(a, *si);
  }
  if (g_stepd.mismatch_fails_step) {
    StepVerdict v;
    v.kind = StepVerdict::Kind::FailStep; // preinit fails: init and postfini never run
    v.rc = -1;
    return v;
  }
  return call(a, &si->jobinfo);
}

/// The script's answer to a boolean hook, in this process (switch.lua
/// contract: every slurmstepd asks block_job_complete() and
/// setup_special_steps() when it starts); an error is logged, false.
bool ask_boolean(Hook h) {
  auto r = g_stepd.hooks->script().call(h, nullptr, nullptr, nullptr);
  if (!r) {
    stepd_log(LogLevel::Error,
              fmt::format("{}: {}; taken as false", hook_name(h), r.error().message));
    return false;
  }
  return r->flag;
}

/// Issue 20, a stale step after a partition: the step was killed, and
/// slurmctld says (`now`) that its job was requeued since the setup whose
/// stepinfo the step got, or is gone: one line says the postfini is of an
/// attempt that is over.  Nothing without `now` or when the stepinfo
/// predates the restart count (an older controller: no way to tell).
void note_attempt_over(const slc_step_t *step, const char *info, size_t len,
                       const slc_job_now_t *now) {
  if (!now || !step || !info || len == 0)
    return;
  auto si = decode_stepinfo(std::string_view(info, len));
  if (!si || !si->restart_count)
    return;
  std::string why;
  if (!now->found)
    why = "its job is gone from slurmctld";
  else if (now->restart_count > *si->restart_count)
    why = fmt::format("the job was requeued since (restart_count {} at that setup, {} now, {})",
                      *si->restart_count, now->restart_count, now->state ? now->state : "?");
  if (why.empty())
    return;
  stepd_log(LogLevel::Info,
            fmt::format("{} on {}: the step was killed, and its attempt {} is over: {}; "
                        "step_postfini runs with step.attempt={} (release only what carries it)",
                        step_entry(step, "step_postfini"),
                        step->node_name ? step->node_name : "this node", si->attempt, why,
                        si->attempt));
}

} // namespace
} // namespace switchlua

using namespace switchlua;

extern "C" {

int slc_stepd_init(const char *script_path, slc_log_fn log) {
  g_stepd.log = log;
  // No call process group in slurmstepd: each slurm.run command gets one
  // of its own, killed when it returns (lua/run_command.hpp).
  set_run_own_group(true);
  return cabi::guarded(
      [&] { return fmt::format("loading {}", script_path ? script_path : "(null)"); },
      "the step hooks will not run", -1, stepd_line,
      [&] {
        // Once per slurmstepd; a second call (tests) starts afresh.
        g_stepd.hooks.reset();
        g_stepd.setup_special_steps = false;
        g_stepd.load_error.clear();
        g_stepd.compared = g_stepd.mismatch_fails_step = false;
        g_stepd.load_failed = true; // until it loaded, also if loading throws
        auto h =
            StepHooks::load(script_path, [](LogLevel l, std::string_view t) { stepd_log(l, t); });
        if (!h) {
          g_stepd.load_error = h.error().message;
          stepd_log(LogLevel::Error,
                    fmt::format("{}; the step hooks will not run", h.error().message));
          return -1;
        }
        g_stepd.hooks.emplace(std::move(*h));
        g_stepd.load_failed = false;
        if (cabi::slurm_special_steps()) {
          (void)ask_boolean(Hook::BlockJobComplete); // asked, as every slurmstepd does; unused
          g_stepd.setup_special_steps = ask_boolean(Hook::SetupSpecialSteps);
        }
        return 0;
      });
}

bool slc_stepd_setup_special_steps(void) {
  if (!cabi::slurm_special_steps())
    return false;
  if (g_stepd.hooks)
    return g_stepd.setup_special_steps;
  // switch.lua(5), "When the script does not load": a managed step never
  // runs without its step hooks, special steps included.  This node cannot
  // ask its script, so Slurm is told true and calls job_init for the batch
  // and interactive steps; their stepinfo decides, as slurmctld put one
  // there only when its own answer was true: a managed one fails
  // (cannot_run()), one without stepinfo proceeds.  Not in the job's
  // stepmgr, which would otherwise give interactive steps a stepinfo
  // slurmctld did not ask for.
  return g_stepd.load_failed && !cabi::stepmgr_active();
}

int slc_stepd_preinit(const slc_step_t *step, const char *info, size_t len) {
  return cabi::guarded([&] { return step_entry(step, "step_preinit"); }, "fail-open", 0, stepd_line,
                       [&] {
                         auto v = run_step_hook(step, info, len, "step_preinit", true,
                                                [](const StepArgs &a, const MsgpackBytes *si) {
                                                  return g_stepd.hooks->preinit(a, si);
                                                });
                         return (v && v->kind == StepVerdict::Kind::FailStep) ? -1 : 0;
                       });
}

int slc_stepd_init_step(const slc_step_t *step, const char *info, size_t len,
                        void (*set_env)(void *, const char *, const char *),
                        void (*unset_env)(void *, const char *), void *ctx) {
  return cabi::guarded([&] { return step_entry(step, "step_init"); }, "fail-open", 0, stepd_line,
                       [&] {
                         auto v = run_step_hook(step, info, len, "step_init", true,
                                                [](const StepArgs &a, const MsgpackBytes *si) {
                                                  return g_stepd.hooks->init(a, si);
                                                });
                         if (!v)
                           return 0;
                         if (v->kind == StepVerdict::Kind::FailStep)
                           return -1;
                         for (const EnvOp &op : v->env) {
                           if (op.kind == EnvOp::Kind::Set)
                             set_env(ctx, op.name.c_str(), op.value.c_str());
                           else
                             unset_env(ctx, op.name.c_str());
                         }
                         return 0;
                       });
}

int slc_stepd_postfini(const slc_step_t *step, const char *info, size_t len,
                       const slc_job_now_t *now, char **reason) {
  *reason = nullptr;
  return cabi::guarded([&] { return step_entry(step, "step_postfini"); }, "fail-open", 0,
                       stepd_line,
                       [&] {
                         note_attempt_over(step, info, len, now);
                         auto v = run_step_hook(step, info, len, "step_postfini", false,
                                                [](const StepArgs &a, const MsgpackBytes *si) {
                                                  return g_stepd.hooks->postfini(a, si);
                                                });
                         if (!v || v->kind != StepVerdict::Kind::DrainNode)
                           return 0;
                         *reason = strdup(log_escape(v->reason).c_str());
                         return -1;
                       });
}

} // extern "C"
