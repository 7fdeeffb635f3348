// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/config.hpp"

#include <charconv>
#include <fmt/format.h>
#include <optional>

namespace switchlua {
namespace {

/// One key=value token of ours, or nullopt.
struct Token {
  std::string_view key;
  std::string_view value;
  bool has_value;
};

std::optional<Token> split_token(std::string_view tok) {
  auto eq = tok.find('=');
  std::string_view key = tok.substr(0, eq);
  if (key != "switch_timeout" && key != "switch_retries" && key != "switch_drain_on_failure" &&
      key != "switch_max_calls" && key != "switch_max_queue" && key != "switch_kill_grace")
    return std::nullopt;
  if (eq == std::string_view::npos)
    return Token{key, {}, false};
  return Token{key, tok.substr(eq + 1), true};
}

Expected<std::uint64_t> parse_count(const Token &t, std::uint64_t lo, std::uint64_t hi,
                                    std::string_view what) {
  std::uint64_t v = 0;
  const char *b = t.value.data();
  const char *e = b + t.value.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (!t.has_value || t.value.empty() || ec != std::errc() || p != e || v < lo || v > hi)
    return fail(fmt::format("SlurmctldParameters: {}={}: must be an integer {} from {} to {}",
                            t.key, t.has_value ? t.value : "", what, lo, hi));
  return v;
}

} // namespace

Expected<CtldConfig> parse_slurmctld_parameters(std::string_view params) {
  CtldConfig c;
  bool seen_timeout = false, seen_retries = false, seen_drain = false, seen_calls = false,
       seen_queue = false, seen_grace = false;
  // switch_max_calls / switch_max_queue: a count in [lo, hi], same rules.
  auto count_key = [&](const Token &t, std::uint32_t lo, std::uint32_t hi, std::uint32_t &dst,
                       bool &seen) -> Expected<void> {
    auto v = parse_count(t, lo, hi, "count");
    if (!v)
      return fail(v.error().message);
    if (seen && *v != dst)
      return fail(fmt::format("SlurmctldParameters: {} given twice ({} and {})", t.key, dst, *v));
    dst = static_cast<std::uint32_t>(*v);
    seen = true;
    return {};
  };
  while (!params.empty()) {
    auto comma = params.find(',');
    std::string_view tok = params.substr(0, comma);
    params = comma == std::string_view::npos ? std::string_view{} : params.substr(comma + 1);
    auto t = split_token(tok);
    if (!t)
      continue; // not ours: Slurm ignores unknown tokens, so do we
    if (t->key == "switch_timeout") {
      auto v = parse_count(*t, 1, kMaxSwitchTimeout.count(), "number of seconds");
      if (!v)
        return fail(v.error().message);
      std::chrono::seconds s(*v);
      if (seen_timeout && s != c.switch_timeout)
        return fail(fmt::format("SlurmctldParameters: switch_timeout given twice ({} and {})",
                                c.switch_timeout.count(), *v));
      c.switch_timeout = s;
      seen_timeout = true;
    } else if (t->key == "switch_kill_grace") { // SIGTERM..SIGKILL at the deadline
      auto v = parse_count(*t, 0, kMaxSwitchKillGrace.count(), "number of seconds");
      if (!v)
        return fail(v.error().message);
      if (seen_grace && std::chrono::seconds(*v) != c.switch_kill_grace)
        return fail(fmt::format("SlurmctldParameters: switch_kill_grace given twice ({} and {})",
                                c.switch_kill_grace.count(), *v));
      c.switch_kill_grace = std::chrono::seconds(*v);
      seen_grace = true;
    } else if (t->key == "switch_retries") {
      auto v = parse_count(*t, 0, kMaxSwitchRetries, "count");
      if (!v)
        return fail(v.error().message);
      if (seen_retries && *v != c.switch_retries)
        return fail(fmt::format("SlurmctldParameters: switch_retries given twice ({} and {})",
                                c.switch_retries, *v));
      c.switch_retries = static_cast<std::uint32_t>(*v);
      seen_retries = true;
    } else if (t->key == "switch_max_calls") {
      if (auto ok = count_key(*t, 1, kMaxSwitchMaxCalls, c.max_calls, seen_calls); !ok)
        return fail(ok.error().message);
    } else if (t->key == "switch_max_queue") {
      if (auto ok = count_key(*t, 1, kMaxSwitchMaxQueue, c.max_queue, seen_queue); !ok)
        return fail(ok.error().message);
    } else {
      bool v;
      if (t->has_value && t->value == "yes")
        v = true;
      else if (t->has_value && t->value == "no")
        v = false;
      else
        return fail(
            fmt::format("SlurmctldParameters: switch_drain_on_failure={}: must be yes or no",
                        t->has_value ? t->value : ""));
      if (seen_drain && v != c.drain_on_failure)
        return fail("SlurmctldParameters: switch_drain_on_failure given twice (yes and no)");
      c.drain_on_failure = v;
      seen_drain = true;
    }
  }
  return c;
}

std::string describe(const CtldConfig &c) {
  return fmt::format("switch_timeout={} switch_retries={} switch_drain_on_failure={} "
                     "switch_kill_grace={} switch_max_calls={} switch_max_queue={}",
                     c.switch_timeout.count(), c.switch_retries, c.drain_on_failure ? "yes" : "no",
                     c.switch_kill_grace.count(), c.max_calls, c.max_queue);
}

} // namespace switchlua
