// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/log_limits.hpp
//
// Bounds on what a script may log (switch.lua(5), LOGGING, Bounds):
//
//   bound_log_line(text)    every line a hook logs (slurm.log_*, print) is
//                           cut to kMaxLogLineBytes bytes, on a UTF-8
//                           character boundary, and marked
//   LogBudget               per call: after kCallLogLineBudget lines or
//                           kCallLogByteBudget bytes, further lines are
//                           dropped and counted (one notice when the budget
//                           runs out, one "N lines suppressed" line at the end)
//   bound_message(text)     an error message (Lua error, traceback) cut to
//                           kMaxMessageBytes, the same way
//
//   std::string line = bound_log_line(huge);   // <= 4096 bytes + marker
//   LogBudget b;
//   if (b.admit(line.size())) send(line);      // else b.suppressed() grows
//
// The output is valid UTF-8 whenever the input was; a cut never splits a
// character (the marker itself is ASCII).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace switchlua {

/// Longest log line kept, in bytes of the script's text (the marker not counted).
inline constexpr std::size_t kMaxLogLineBytes = 4096;
/// Lines one hook call may log (slurmctld hooks: per call; step hooks: per
/// hook call too).
inline constexpr std::uint64_t kCallLogLineBudget = 1000;
/// Bytes (after truncation) one hook call may log.
inline constexpr std::uint64_t kCallLogByteBudget = 1024 * 1024;
/// Longest error message kept (Lua error with its traceback).
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;

/// The longest prefix of `text` of at most `limit` bytes that does not end
/// inside a UTF-8 multi-byte sequence (a lead byte followed by fewer
/// continuation bytes than it announces is dropped whole).
std::string_view utf8_prefix(std::string_view text, std::size_t limit);

/// `text` itself when it has at most `limit` bytes; else utf8_prefix(text,
/// limit) followed by " [... line truncated: N bytes in all]".
std::string bound_text(std::string_view text, std::size_t limit);

/// bound_text(text, kMaxLogLineBytes).
inline std::string bound_log_line(std::string_view text) {
  return bound_text(text, kMaxLogLineBytes);
}
/// bound_text(text, kMaxMessageBytes).
inline std::string bound_message(std::string_view text) {
  return bound_text(text, kMaxMessageBytes);
}

/// The per-call log budget.  Not thread-safe.
class LogBudget {
public:
  /// Counts a line of `bytes`; true when it may be logged.  Once the budget
  /// is used up, every further line is refused and counted.
  bool admit(std::size_t bytes);
  /// Lines refused so far.
  std::uint64_t suppressed() const { return suppressed_; }
  /// True exactly once: at the first refused line (for the notice).
  bool first_refusal() {
    const bool first = suppressed_ == 1 && !noticed_;
    noticed_ = noticed_ || suppressed_ > 0;
    return first;
  }
  /// "log budget of this call used up (1000 lines or 1048576 bytes): further
  /// lines are suppressed"
  static std::string notice();
  /// "N lines suppressed (log budget: 1000 lines or 1048576 bytes per call)"
  std::string summary() const;

private:
  std::uint64_t lines_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t suppressed_ = 0;
  bool noticed_ = false;
};

} // namespace switchlua
