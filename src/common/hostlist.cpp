// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/hostlist.cpp
//
// Host list expressions (hostlist.hpp).  Rule source: Slurm's hostlist.c
// (hostlist_create, hostlist_ranged_string): see the header.
#include "common/hostlist.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <utility>

namespace switchlua {
namespace {

/// One number or range of a bracket, with its printed width (0: natural).
struct Range {
  std::uint64_t lo = 0, hi = 0;
  std::size_t width = 0;
};

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 18)
    return false;
  for (char c : s)
    if (c < '0' || c > '9')
      return false;
  return true;
}

std::uint64_t to_number(std::string_view s) {
  std::uint64_t v = 0;
  for (char c : s)
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  return v;
}

/// The ranges of one bracket's text ("1-3,07").
Expected<std::vector<Range>> parse_bracket(std::string_view body, std::string_view entry) {
  std::vector<Range> out;
  std::size_t start = 0;
  while (start <= body.size()) {
    const std::size_t comma = body.find(',', start);
    const std::string_view part = body.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const std::size_t dash = part.find('-');
    const std::string_view lo = part.substr(0, dash);
    const std::string_view hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi))
      return fail(fmt::format("host list \"{}\": \"[{}]\" is not numbers and ranges such as "
                              "[1-3,7]",
                              entry, body));
    Range r{to_number(lo), to_number(hi), (lo.size() > 1 && lo[0] == '0') ? lo.size() : 0};
    if (r.hi < r.lo)
      return fail(
          fmt::format("host list \"{}\": the range {} goes down (write it low-high)", entry, part));
    out.push_back(r);
    if (comma == std::string_view::npos)
      break;
    start = comma + 1;
  }
  return out;
}

/// Appends the names of one entry ("rack[1-2]n[1-3]") to `out`.
Expected<void> expand_entry(std::string_view entry, std::string_view whole,
                            std::vector<std::string> &out) {
  const std::size_t open = entry.find('[');
  if (open == std::string_view::npos) {
    if (entry.find(']') != std::string_view::npos)
      return fail(fmt::format("host list \"{}\": a ']' without its '['", whole));
    if (out.size() >= kMaxHostlistNames)
      return fail(
          fmt::format("host list \"{:.60}\": more than {} names", whole, kMaxHostlistNames));
    out.emplace_back(entry);
    return {};
  }
  const std::size_t close = entry.find(']', open);
  if (close == std::string_view::npos ||
      entry.substr(open + 1, close - open - 1).find('[') != std::string_view::npos)
    return fail(fmt::format("host list \"{}\": a '[' without its ']'", whole));
  auto ranges = parse_bracket(entry.substr(open + 1, close - open - 1), whole);
  if (!ranges)
    return Unexpected<Error>{ranges.error()};
  const std::string_view prefix = entry.substr(0, open), rest = entry.substr(close + 1);
  for (const Range &r : *ranges)
    for (std::uint64_t v = r.lo; v <= r.hi; ++v) {
      if (out.size() >= kMaxHostlistNames)
        return fail(
            fmt::format("host list \"{:.60}\": more than {} names", whole, kMaxHostlistNames));
      const std::string head = fmt::format("{}{:0{}}", prefix, v, r.width);
      if (auto e = expand_entry(fmt::format("{}{}", head, rest), whole, out); !e)
        return e;
    }
  return {};
}

bool is_separator(char c) {
  return c == ',' || c == ' ' || c == '\t' || c == '\n';
}

/// A name split into its text and its trailing decimal number, if any.
struct Split {
  std::string_view prefix, digits;
};

Split split_name(std::string_view name) {
  std::size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
    --i;
  if (name.size() - i > 18) // too long for a number: kept whole
    i = name.size();
  return {name.substr(0, i), name.substr(i)};
}

} // namespace

Expected<std::vector<std::string>> expand_hostlist(std::string_view expr) {
  std::vector<std::string> out;
  std::size_t start = 0, depth = 0;
  for (std::size_t i = 0; i <= expr.size(); ++i) {
    const bool end = i == expr.size();
    if (!end && expr[i] == '[')
      ++depth;
    else if (!end && expr[i] == ']' && depth > 0)
      --depth;
    if (!end && (depth > 0 || !is_separator(expr[i])))
      continue;
    if (const std::string_view entry = expr.substr(start, i - start); !entry.empty())
      if (auto e = expand_entry(entry, expr, out); !e)
        return Unexpected<Error>{e.error()};
    start = i + 1;
  }
  return out;
}

std::string compress_hostlist(const std::vector<std::string> &names) {
  std::string out;
  std::size_t i = 0;
  while (i < names.size()) {
    const Split first = split_name(names[i]);
    if (first.digits.empty()) {
      out += (out.empty() ? "" : ",") + names[i++];
      continue;
    }
    const std::size_t width =
        first.digits.size() > 1 && first.digits[0] == '0' ? first.digits.size() : 0;
    // The run: names with the same prefix whose numbers print in this width.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
    std::size_t j = i;
    for (; j < names.size(); ++j) {
      const Split s = split_name(names[j]);
      const bool padded = s.digits.size() > 1 && s.digits[0] == '0';
      if (s.prefix != first.prefix || s.digits.empty() ||
          (width == 0 ? padded : s.digits.size() != width))
        break;
      const std::uint64_t v = to_number(s.digits);
      if (!spans.empty() && spans.back().second + 1 == v)
        spans.back().second = v;
      else
        spans.emplace_back(v, v);
    }
    out += out.empty() ? "" : ",";
    if (j - i == 1) {
      out += names[i];
    } else {
      out += fmt::format("{}[", first.prefix);
      for (std::size_t k = 0; k < spans.size(); ++k) {
        out += fmt::format("{}{:0{}}", k ? "," : "", spans[k].first, width);
        if (spans[k].second != spans[k].first)
          out += fmt::format("-{:0{}}", spans[k].second, width);
      }
      out += "]";
    }
    i = j;
  }
  return out;
}

} // namespace switchlua
