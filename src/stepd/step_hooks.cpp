// SPDX-License-Identifier: GPL-2.0-or-later
#include "stepd/step_hooks.hpp"

#include "common/log_stamp.hpp"

#include <fmt/format.h>

namespace switchlua {

std::string step_tag(const StepArgs &s, std::string_view hook) {
  return log_subject({.job_id = s.job_id,
                      .step_id = s.step_id,
                      .node = s.node_name ? std::string_view(*s.node_name) : std::string_view(),
                      .hook = hook});
}

std::string managed_step_cannot_run(std::uint32_t job_id, std::uint32_t step_id,
                                    std::string_view node, std::string_view hook,
                                    std::string_view why, bool fails_step) {
  return fmt::format("{} on {}: the job is managed by switch/lua (its step has a stepinfo) but "
                     "{}: {}",
                     log_subject({.job_id = job_id, .step_id = step_id, .hook = hook}),
                     node.empty() ? std::string_view("this node") : node, why,
                     fails_step ? "the step fails (Error configuring interconnect)" : "not run");
}

namespace {
/// script.call() under kStepHookUmask, whatever SLURM_UMASK slurmstepd took
/// on (step_hooks.hpp: UmaskGuard).
auto call_with_fixed_umask(Script &script, Hook h, const StepArgs &step,
                           const MsgpackBytes *stepinfo) {
  const UmaskGuard umask_guard;
  return script.call(h, nullptr, &step, stepinfo);
}
} // namespace

Expected<StepHooks> StepHooks::load(const std::string &path, LogSink sink) {
  const UmaskGuard umask_guard; // the main chunk runs here
  auto tag = std::make_shared<std::string>();
  auto s = Script::load(
      path,
      [tag, sink](LogLevel l, std::string_view text) {
        if (tag->empty())
          sink(l, text);
        else
          sink(l, fmt::format("{}: {}", *tag, text));
      },
      Script::Host::InProcess); // os.exit() must never end slurmstepd
  if (!s)
    return Unexpected<Error>{s.error()};
  return StepHooks(std::move(*s), std::move(sink), std::move(tag));
}

StepVerdict StepHooks::preinit(const StepArgs &step, const MsgpackBytes *stepinfo) {
  return run(Hook::StepPreinit, step, stepinfo);
}
StepVerdict StepHooks::init(const StepArgs &step, const MsgpackBytes *stepinfo) {
  return run(Hook::StepInit, step, stepinfo);
}
StepVerdict StepHooks::postfini(const StepArgs &step, const MsgpackBytes *stepinfo) {
  return run(Hook::StepPostfini, step, stepinfo);
}

StepVerdict StepHooks::run(Hook h, const StepArgs &step, const MsgpackBytes *stepinfo) {
  StepVerdict v;
  const std::string tag = step_tag(step);
  const std::string who = step_tag(step, hook_name(h)); // "JobId=42 StepId=42.0 node1 step_init"
  *tag_ = who;
  auto r = call_with_fixed_umask(script_, h, step, stepinfo);
  tag_->clear();
  if (!r) {
    // switch.lua contract: a Lua error in a slurmstepd hook is logged and the
    // step proceeds (fail-open); a broken return is treated the same way.
    v.lua_error = true;
    const std::string &msg = r.error().message;
    std::string first = msg.substr(0, msg.find('\n'));
    if (first.size() != msg.size())
      sink_(LogLevel::Debug, fmt::format("{}: {}", who, msg));
    v.summary = fmt::format("{} {}: {}; fail-open: the step proceeds", who,
                            r.error().kind == CallError::Kind::LuaError ? "raised an error"
                            : r.error().kind == CallError::Kind::BadArgument
                                ? "could not be called"
                                : "broke the return convention",
                            first);
    sink_(LogLevel::Error, v.summary);
    return v;
  }
  for (const std::string &w : r->warnings)
    sink_(LogLevel::Error, fmt::format("{}: {}", who, w));
  v.rc = r->rc;
  v.message = r->message;
  // "returned -1" or "returned -1 (fabric port down)": the script's own words.
  const std::string said = r->message.empty() ? fmt::format("returned {}", r->rc)
                                              : fmt::format("returned {} ({})", r->rc, r->message);
  if (r->rc < 0) {
    if (h == Hook::StepPostfini) {
      v.kind = StepVerdict::Kind::DrainNode;
      // The first 20 characters (what sinfo -R shows) say what failed.
      v.reason = fmt::format("switch postfini failed: {} (switch/lua step_postfini {})",
                             r->message.empty() ? fmt::format("rc={}", r->rc) : r->message, tag);
      v.summary = fmt::format("{} {}: this node is to be drained", who, said);
    } else {
      v.kind = StepVerdict::Kind::FailStep;
      v.summary = fmt::format("{} {}: the step fails (Error configuring interconnect)", who, said);
    }
    sink_(LogLevel::Error, v.summary);
    return v;
  }
  if (h == Hook::StepInit)
    v.env = r->env;
  if (r->rc > 0) {
    v.summary = fmt::format("{} {}: logged, the step proceeds", who, said);
    sink_(LogLevel::Error, v.summary);
  } else {
    v.summary = fmt::format("{} returned 0", who);
    if (h == Hook::StepInit)
      v.summary += r->has_env ? fmt::format(" with {} environment change(s)", r->env.size())
                              : " with no environment table";
    sink_(LogLevel::Verbose, v.summary);
  }
  return v;
}

} // namespace switchlua
