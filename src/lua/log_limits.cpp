// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/log_limits.cpp
#include "lua/log_limits.hpp"

#include <fmt/format.h>

namespace switchlua {

std::string_view utf8_prefix(std::string_view text, std::size_t limit) {
  if (text.size() <= limit)
    return text;
  std::size_t cut = limit;
  // Back up over continuation bytes (10xxxxxx) to the start of the
  // character that the cut would split, at most 3 of them.
  std::size_t back = 0;
  while (back < 4 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
    ++back;
  }
  if (back == 4) // not UTF-8 there: a plain byte cut
    cut = limit;
  return text.substr(0, cut);
}

std::string bound_text(std::string_view text, std::size_t limit) {
  if (text.size() <= limit)
    return std::string(text);
  std::string out(utf8_prefix(text, limit));
  out += fmt::format(" [... line truncated: {} bytes in all]", text.size());
  return out;
}

bool LogBudget::admit(std::size_t bytes) {
  if (suppressed_ == 0 && lines_ < kCallLogLineBudget && bytes_ + bytes <= kCallLogByteBudget) {
    ++lines_;
    bytes_ += bytes;
    return true;
  }
  ++suppressed_;
  return false;
}

std::string LogBudget::notice() {
  return fmt::format("log budget of this call used up ({} lines or {} bytes): further lines are "
                     "suppressed",
                     kCallLogLineBudget, kCallLogByteBudget);
}

std::string LogBudget::summary() const {
  return fmt::format("{} line{} suppressed (log budget: {} lines or {} bytes per call)",
                     suppressed_, suppressed_ == 1 ? "" : "s", kCallLogLineBudget,
                     kCallLogByteBudget);
}

} // namespace switchlua
