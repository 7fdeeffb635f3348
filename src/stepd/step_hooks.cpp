// SPDX-License-Identifier: GPL-2.0-or-later
#include "stepd/step_hooks.hpp"

#include <fmt/format.h>

namespace switchlua {

std::string step_tag(const StepArgs &s) {
  return fmt::format("JobId={} StepId={}{}{}", s.job_id, s.step_id, s.node_name ? " " : "",
                     s.node_name ? *s.node_name : "");
}

Expected<StepHooks> StepHooks::load(const std::string &path, LogSink sink) {
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
  std::string tag = step_tag(step);
  std::string_view name = hook_name(h);
  *tag_ = fmt::format("{} {}", tag, name);
  auto r = script_.call(h, nullptr, &step, stepinfo);
  tag_->clear();
  if (!r) {
    // switch.lua contract: a Lua error in a slurmstepd hook is logged and the
    // step proceeds (fail-open); a broken return is treated the same way.
    v.lua_error = true;
    const std::string &msg = r.error().message;
    std::string first = msg.substr(0, msg.find('\n'));
    if (first.size() != msg.size())
      sink_(LogLevel::Debug, fmt::format("{} {}: {}", tag, name, msg));
    v.summary = fmt::format("{} {} {}: {}; fail-open: the step proceeds", tag, name,
                            r.error().kind == CallError::Kind::LuaError ? "raised an error"
                            : r.error().kind == CallError::Kind::BadArgument
                                ? "could not be called"
                                : "broke the return convention",
                            first);
    sink_(LogLevel::Error, v.summary);
    return v;
  }
  for (const std::string &w : r->warnings)
    sink_(LogLevel::Error, fmt::format("{} {}: {}", tag, name, w));
  v.rc = r->rc;
  if (r->rc < 0) {
    if (h == Hook::StepPostfini) {
      v.kind = StepVerdict::Kind::DrainNode;
      v.reason = fmt::format(
          "switch step cleanup failed: switch/lua step_postfini returned {} ({})", r->rc, tag);
      v.summary = fmt::format("{} {} returned {}: the node is drained", tag, name, r->rc);
    } else {
      v.kind = StepVerdict::Kind::FailStep;
      v.summary = fmt::format("{} {} returned {}: the step fails (Error configuring interconnect)",
                              tag, name, r->rc);
    }
    sink_(LogLevel::Error, v.summary);
    return v;
  }
  if (h == Hook::StepInit)
    v.env = r->env;
  if (r->rc > 0) {
    v.summary = fmt::format("{} {} returned {}: logged, the step proceeds", tag, name, r->rc);
    sink_(LogLevel::Error, v.summary);
  } else {
    v.summary = fmt::format("{} {} returned 0", tag, name);
    if (h == Hook::StepInit)
      v.summary += r->has_env ? fmt::format(" with {} environment change(s)", r->env.size())
                              : " with no environment table";
    sink_(LogLevel::Verbose, v.summary);
  }
  return v;
}

} // namespace switchlua
