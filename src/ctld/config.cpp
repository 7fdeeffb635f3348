// SPDX-License-Identifier: GPL-2.0-or-later
//
// SlurmctldParameters, read as Slurm reads its own keys there (slurmctld
// looks them up with xstrcasestr(): case-insensitive, e.g. power_save.c,
// rate_limit.c), one table row per key of ours.
#include "ctld/config.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <fmt/format.h>
#include <optional>
#include <stdexcept>

namespace switchlua {
namespace {

/// One key=value token as written (spaces around it trimmed).
struct Token {
  std::string_view key;
  std::string_view value;
  bool has_value;
};

Token split_token(std::string_view tok) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!tok.empty() && space(tok.front()))
    tok.remove_prefix(1);
  while (!tok.empty() && space(tok.back()))
    tok.remove_suffix(1);
  auto eq = tok.find('=');
  if (eq == std::string_view::npos)
    return Token{tok, {}, false};
  return Token{tok.substr(0, eq), tok.substr(eq + 1), true};
}

/// ASCII case-insensitive equality (no locale involved).
bool iequals(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

/// One setting of ours.  `hi == 0`: a two-word switch, `words` (0, 1):
/// yes/no unless given; else an integer in [lo, hi] (`unit` says what it
/// counts).
struct Key {
  std::string_view name;
  std::uint64_t lo, hi;
  std::string_view unit;
  std::uint64_t (*get)(const CtldConfig &);
  void (*set)(CtldConfig &, std::uint64_t);
  std::array<std::string_view, 2> words{"no", "yes"};
  /// A path setting: the CtldConfig member it sets (get/set unused).
  std::string CtldConfig::*path = nullptr;
  /// The family of pool settings (issue 38): `name` is the prefix, each
  /// switch_pool_NAME one pool of CtldConfig::pools (get/set unused).
  bool pool = false;
};

/// What describe() writes for a path setting that is not set.
constexpr std::string_view kNoPath = "none";
/// The prefix of the pool settings (switch_pool_NAME).
constexpr std::string_view kPoolPrefix = "switch_pool_";
/// The longest reuse delay of a pool, seconds (a day).
constexpr std::uint32_t kPoolMaxReuseDelay = 86400;

/// A pool's value as written back: FIRST-LAST joined by +, then :PER_JOB,
/// then :REUSE_DELAY when it is not 0 ("1024-2047:1", "1024-2047:1:60"; a
/// one-ID range is written FIRST).
std::string pool_text(const PoolSpec &p) {
  std::string out;
  for (const PoolRange &r : p.ranges)
    out += fmt::format("{}{}", out.empty() ? "" : "+",
                       r.first == r.last ? fmt::format("{}", r.first)
                                         : fmt::format("{}-{}", r.first, r.last));
  if (p.reuse_delay == 0)
    return fmt::format("{}:{}", out, p.per_job);
  return fmt::format("{}:{}:{}", out, p.per_job, p.reuse_delay);
}

/// A decimal number in [0, 2^32 - 1], all of `v`.
std::optional<std::uint32_t> pool_number(std::string_view v) {
  std::uint32_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    return std::nullopt;
  return n;
}

/// The ranges of a pool value ("32769-32800+33000"), sorted; nullopt when
/// one does not parse, is backwards, or overlaps another.
std::optional<std::vector<PoolRange>> pool_ranges(std::string_view v) {
  std::vector<PoolRange> out;
  while (true) {
    const auto plus = v.find('+');
    const std::string_view r = v.substr(0, plus);
    const auto dash = r.find('-');
    auto first = pool_number(r.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : pool_number(r.substr(dash + 1));
    if (!first || !last || *first > *last)
      return std::nullopt;
    out.push_back({*first, *last});
    if (plus == std::string_view::npos)
      break;
    v.remove_prefix(plus + 1);
  }
  std::sort(out.begin(), out.end(), [](auto &a, auto &b) { return a.first < b.first; });
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i].first <= out[i - 1].last)
      return std::nullopt;
  return out;
}

/// One switch_pool_NAME=RANGES[:PER_JOB[:REUSE_DELAY]] token (NAME
/// lower-cased: keys are case-insensitive), or the error naming key and
/// value.
Expected<PoolSpec> parse_pool(const Token &t) {
  PoolSpec p;
  for (char ch : t.key.substr(kPoolPrefix.size()))
    p.name += ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch + 32) : ch;
  bool name_ok = p.name.size() <= 32 && p.name.front() >= 'a' && p.name.front() <= 'z';
  for (char ch : p.name)
    name_ok = name_ok && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_');
  const std::string_view v = t.has_value ? t.value : "";
  if (!name_ok)
    return fail(fmt::format("SlurmctldParameters: {}={}: the pool name must be a letter, then "
                            "at most 31 letters, digits or _",
                            t.key, v));
  const auto colon = v.find(':');
  const auto colon2 = colon == std::string_view::npos ? colon : v.find(':', colon + 1);
  auto ranges = pool_ranges(v.substr(0, colon));
  std::size_t size = 0;
  for (const PoolRange &r : ranges ? *ranges : std::vector<PoolRange>{})
    size += static_cast<std::size_t>(r.last) - r.first + 1;
  auto per_job = colon == std::string_view::npos
                     ? std::optional<std::uint32_t>(1)
                     : pool_number(v.substr(colon + 1, colon2 - colon - 1));
  auto delay = colon2 == std::string_view::npos ? std::optional<std::uint32_t>(0)
                                                : pool_number(v.substr(colon2 + 1));
  if (!ranges || !per_job || *per_job < 1 || *per_job > size || !delay ||
      *delay > kPoolMaxReuseDelay)
    return fail(fmt::format("SlurmctldParameters: {}={}: must be ranges FIRST-LAST of integers "
                            "from 0 to 4294967295 joined by + and not overlapping, then "
                            "optionally :PER_JOB from 1 to the pool's size, then optionally "
                            ":REUSE_DELAY in seconds from 0 to {} "
                            "(e.g. 1024-2047, 32769-32800+33000-33010:2 or 1024-2047:1:60)",
                            t.key, v, kPoolMaxReuseDelay));
  p.ranges = std::move(*ranges);
  p.per_job = *per_job;
  p.reuse_delay = *delay;
  return p;
}

/// Adds the pool of `t` to `c`, or the error (a bad value, or the pool
/// given twice with different values).
std::optional<std::string> add_pool(CtldConfig &c, const Token &t) {
  auto p = parse_pool(t);
  if (!p)
    return p.error().message;
  for (const PoolSpec &have : c.pools)
    if (have.name == p->name)
      return have == *p ? std::nullopt
                        : std::optional<std::string>(
                              fmt::format("SlurmctldParameters: {}{} given twice ({} and {})",
                                          kPoolPrefix, p->name, pool_text(have), pool_text(*p)));
  auto at = std::lower_bound(c.pools.begin(), c.pools.end(), p->name,
                             [](const PoolSpec &a, const std::string &n) { return a.name < n; });
  c.pools.insert(at, std::move(*p));
  return std::nullopt;
}

// clang-format off
const Key kKeys[] = {
  {"switch_timeout", 1, static_cast<std::uint64_t>(kMaxSwitchTimeout.count()), "number of seconds",
   [](const CtldConfig &c) -> std::uint64_t { return c.switch_timeout.count(); },
   [](CtldConfig &c, std::uint64_t v) { c.switch_timeout = std::chrono::seconds(v); }},
  {"switch_retries", 0, kMaxSwitchRetries, "count",
   [](const CtldConfig &c) -> std::uint64_t { return c.switch_retries; },
   [](CtldConfig &c, std::uint64_t v) { c.switch_retries = static_cast<std::uint32_t>(v); }},
  {"switch_drain_on_failure", 0, 0, "",
   [](const CtldConfig &c) -> std::uint64_t { return c.drain_on_failure; },
   [](CtldConfig &c, std::uint64_t v) { c.drain_on_failure = v != 0; }},
  {"switch_kill_grace", 0, static_cast<std::uint64_t>(kMaxSwitchKillGrace.count()), "number of seconds",
   [](const CtldConfig &c) -> std::uint64_t { return c.switch_kill_grace.count(); },
   [](CtldConfig &c, std::uint64_t v) { c.switch_kill_grace = std::chrono::seconds(v); }},
  {"switch_max_calls", 1, kMaxSwitchMaxCalls, "count",
   [](const CtldConfig &c) -> std::uint64_t { return c.max_calls; },
   [](CtldConfig &c, std::uint64_t v) { c.max_calls = static_cast<std::uint32_t>(v); }},
  {"switch_max_queue", 1, kMaxSwitchMaxQueue, "count",
   [](const CtldConfig &c) -> std::uint64_t { return c.max_queue; },
   [](CtldConfig &c, std::uint64_t v) { c.max_queue = static_cast<std::uint32_t>(v); }},
  {"switch_lua_memory", 1, kMaxSwitchLuaMemory, "number of MiB",
   [](const CtldConfig &c) -> std::uint64_t { return c.lua_memory_mb; },
   [](CtldConfig &c, std::uint64_t v) { c.lua_memory_mb = static_cast<std::uint32_t>(v); }},
  {"switch_status_interval", 0, kMaxSwitchStatusInterval, "number of seconds",
   [](const CtldConfig &c) -> std::uint64_t { return c.status_interval; },
   [](CtldConfig &c, std::uint64_t v) { c.status_interval = static_cast<std::uint32_t>(v); }},
  {"switch_script_mismatch", 0, 0, "",
   [](const CtldConfig &c) -> std::uint64_t { return c.mismatch_fails; },
   [](CtldConfig &c, std::uint64_t v) { c.mismatch_fails = v != 0; }, {"warn", "fail"}},
  {"switch_max_setup_failures", 0, kMaxSwitchMaxSetupFailures, "count",
   [](const CtldConfig &c) -> std::uint64_t { return c.max_setup_failures; },
   [](CtldConfig &c, std::uint64_t v) { c.max_setup_failures = static_cast<std::uint32_t>(v); }},
  {"switch_interactive_wait", 0, kMaxSwitchInteractiveWait, "number of milliseconds",
   [](const CtldConfig &c) -> std::uint64_t { return c.interactive_wait_ms; },
   [](CtldConfig &c, std::uint64_t v) { c.interactive_wait_ms = static_cast<std::uint32_t>(v); }},
  {"switch_breaker_failures", 0, kMaxSwitchBreakerFailures, "count",
   [](const CtldConfig &c) -> std::uint64_t { return c.breaker_failures; },
   [](CtldConfig &c, std::uint64_t v) { c.breaker_failures = static_cast<std::uint32_t>(v); }},
  {"switch_breaker_window", 1, kMaxSwitchBreakerWindow, "number of seconds",
   [](const CtldConfig &c) -> std::uint64_t { return c.breaker_window_s; },
   [](CtldConfig &c, std::uint64_t v) { c.breaker_window_s = static_cast<std::uint32_t>(v); }},
  {"switch_journal_failure", 0, 0, "",
   [](const CtldConfig &c) -> std::uint64_t { return c.journal_failure_waits; },
   [](CtldConfig &c, std::uint64_t v) { c.journal_failure_waits = v != 0; }, {"run", "wait"}},
  {"switch_metrics_file", 0, 0, "path", nullptr, nullptr, {}, &CtldConfig::metrics_file},
  {kPoolPrefix, 0, 0, "RANGES[:PER_JOB[:REUSE_DELAY]]", nullptr, nullptr, {}, nullptr, true},
};
// clang-format on

const Key *find_key(std::string_view name) {
  for (const Key &k : kKeys)
    if (k.pool ? name.size() > k.name.size() && iequals(name.substr(0, k.name.size()), k.name)
               : iequals(k.name, name))
      return &k;
  return nullptr;
}

/// How a setting is named in lists: switch_pool_NAME for the family.
std::string key_label(const Key &k) {
  return k.pool ? fmt::format("{}NAME", k.name) : std::string(k.name);
}

/// The token's value for `k`, or the error naming key and value as written.
Expected<std::uint64_t> parse_value(const Key &k, const Token &t) {
  const std::string_view v = t.has_value ? t.value : "";
  if (k.hi == 0) {
    if (iequals(v, k.words[1]))
      return 1;
    if (iequals(v, k.words[0]))
      return 0;
    return fail(fmt::format("SlurmctldParameters: {}={}: must be {} or {}", t.key, v, k.words[1],
                            k.words[0]));
  }
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n < k.lo || n > k.hi)
    return fail(fmt::format("SlurmctldParameters: {}={}: must be an integer {} from {} to {}",
                            t.key, v, k.unit, k.lo, k.hi));
  return n;
}

std::string value_text(const Key &k, std::uint64_t v) {
  return k.hi == 0 ? std::string(k.words[v ? 1 : 0]) : std::to_string(v);
}

/// A path setting's value: "none" (any case) is empty; else an absolute
/// path (a comma would end the token; a space or control character is
/// refused as a likely typo).
Expected<std::string> parse_path(const Token &t) {
  const std::string_view v = t.has_value ? t.value : "";
  if (iequals(v, kNoPath))
    return std::string();
  bool ok = v.size() > 1 && v.front() == '/' && v.back() != '/';
  for (char c : v)
    ok = ok && static_cast<unsigned char>(c) > ' ' && c != 0x7f;
  if (!ok)
    return fail(fmt::format("SlurmctldParameters: {}={}: must be an absolute file path "
                            "(without spaces) or none",
                            t.key, v));
  return std::string(v);
}

std::string current_text(const Key &k, const CtldConfig &c) {
  if (k.path)
    return (c.*k.path).empty() ? std::string(kNoPath) : c.*k.path;
  return value_text(k, k.get(c));
}

/// Calls f(token) for each comma-separated token.
template <class F> void each_token(std::string_view params, F f) {
  while (!params.empty()) {
    auto comma = params.find(',');
    f(split_token(params.substr(0, comma)));
    params = comma == std::string_view::npos ? std::string_view{} : params.substr(comma + 1);
  }
}

} // namespace

Expected<CtldConfig> parse_slurmctld_parameters(std::string_view params) {
  CtldConfig c;
  std::vector<const Key *> seen;
  std::optional<std::string> error;
  each_token(params, [&](const Token &t) {
    const Key *k = find_key(t.key);
    if (!k || error)
      return; // not ours: Slurm ignores unknown tokens (unknown switch_*: see warnings)
    if (k->pool) {
      error = add_pool(c, t);
      return;
    }
    const bool again = std::find(seen.begin(), seen.end(), k) != seen.end();
    if (k->path) {
      auto p = parse_path(t);
      if (!p) {
        error = p.error().message;
        return;
      }
      if (again && c.*k->path != *p) {
        error = fmt::format("SlurmctldParameters: {} given twice ({} and {})", k->name,
                            current_text(*k, c), p->empty() ? std::string(kNoPath) : *p);
        return;
      }
      c.*k->path = *p;
      seen.push_back(k);
      return;
    }
    auto v = parse_value(*k, t);
    if (!v) {
      error = v.error().message;
      return;
    }
    if (again && k->get(c) != *v) {
      error = fmt::format("SlurmctldParameters: {} given twice ({} and {})", k->name,
                          value_text(*k, k->get(c)), value_text(*k, *v));
      return;
    }
    k->set(c, *v);
    seen.push_back(k);
  });
  if (error)
    return fail(*error);
  return c;
}

std::vector<std::string> slurmctld_parameters_warnings(std::string_view params) {
  std::vector<std::string> out;
  each_token(params, [&](const Token &t) {
    if (t.key.size() < 7 || !iequals(t.key.substr(0, 7), "switch_") || find_key(t.key))
      return;
    std::string ours;
    for (const Key &k : kKeys)
      ours += fmt::format("{}{}", ours.empty() ? "" : ", ", key_label(k));
    out.push_back(fmt::format("SlurmctldParameters: {} is not a switch/lua setting and is "
                              "ignored (the settings are {}): check its spelling",
                              t.key, ours));
  });
  return out;
}

namespace {
/// Every setting of ours as KEY=VALUE, in table order, joined by `sep`.
std::string join_settings(const CtldConfig &c, std::string_view sep) {
  std::string out;
  for (const Key &k : kKeys) {
    if (!k.pool) {
      out += fmt::format("{}{}={}", out.empty() ? "" : sep, k.name, current_text(k, c));
      continue;
    }
    for (const PoolSpec &p : c.pools) // none declared: nothing (the line of before)
      out += fmt::format("{}{}{}={}", out.empty() ? "" : sep, k.name, p.name, pool_text(p));
  }
  return out;
}
} // namespace

std::string describe(const CtldConfig &c) {
  return join_settings(c, " ");
}

std::vector<std::string> beyond_contract(const CtldConfig &c) {
  std::vector<std::string> out;
  if (c.breaker_failures > 0)
    out.push_back(fmt::format("switch_breaker_failures={}: failed teardowns counted into a fabric "
                              "outage are kept and run again, not drained",
                              c.breaker_failures));
  if (c.max_setup_failures > 0)
    out.push_back(fmt::format("switch_max_setup_failures={}: a job whose setup failed that many "
                              "times in a row is requeued held",
                              c.max_setup_failures));
  for (const PoolSpec &p : c.pools)
    out.push_back(fmt::format(
        "switch_pool_{}={}: managed jobs get {} ID{} of pool {} each "
        "(job.pools.{}); a job's setup fails while too few are free{}",
        p.name, pool_text(p), p.per_job, p.per_job == 1 ? "" : "s", p.name, p.name,
        p.reuse_delay == 0 ? std::string()
                           : fmt::format("; an ID released stays out of use {} s", p.reuse_delay)));
  return out;
}

std::string to_slurmctld_parameters(const CtldConfig &c) {
  return join_settings(c, ",");
}

std::vector<SettingSpec> slurmctld_settings() {
  const CtldConfig defaults;
  std::vector<SettingSpec> out;
  for (const Key &k : kKeys) {
    std::string_view unit = k.unit;
    if (unit.starts_with("number of "))
      unit.remove_prefix(10);
    out.push_back(SettingSpec{k.name, k.hi == 0 && !k.path && !k.pool, k.lo, k.hi, unit, k.words,
                              k.pool ? std::string(kNoPath) : current_text(k, defaults),
                              k.path != nullptr, k.pool});
  }
  return out;
}

const SettingSpec &slurmctld_setting(std::string_view name) {
  static const std::vector<SettingSpec> all = slurmctld_settings();
  for (const SettingSpec &s : all)
    if (s.name == name)
      return s;
  throw std::out_of_range(fmt::format("switch/lua: {} is not a setting in config.cpp", name));
}

} // namespace switchlua
