// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/utf8.hpp
//
// UTF-8 hygiene for every string that leaves the product: job and drain
// reasons, log lines, JSON output, task environment values.  Slurm and the
// tools that read its output (sinfo, scontrol, sacct, JSON consumers) expect
// valid UTF-8; a script may hand us any bytes.
//
//   utf8_valid("café")                    -> true
//   utf8_sanitize("caf\xe9")              -> "caf\uFFFD" (U+FFFD, 3 bytes)
//   utf8_truncate("aé", 2)                -> "a"   (never half a character)
//   utf8_truncate_marked(s, 160, "...")   -> at most 160 bytes, "..." at the end when cut
//
// Rules (RFC 3629): overlong encodings, surrogates (U+D800..U+DFFF) and code
// points above U+10FFFF are invalid; each maximal invalid subsequence becomes
// one U+FFFD, as the Unicode standard recommends (and as Python's
// "replace" handler does).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace switchlua {

namespace utf8_detail {
/// Length of the valid UTF-8 sequence that starts at s[i], or 0 if the byte
/// there does not start one (then one byte is skipped as invalid).
inline std::size_t valid_seq_len(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80)
    return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF; // range of the second byte
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0)
      lo = 0xA0; // no overlong
    if (c == 0xED)
      hi = 0x9F; // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0)
      lo = 0x90; // no overlong
    if (c == 0xF4)
      hi = 0x8F; // <= U+10FFFF
  } else
    return 0;
  if (i + n > s.size())
    return 0;
  if (b(i + 1) < lo || b(i + 1) > hi)
    return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF)
      return 0;
  return n;
}
} // namespace utf8_detail

/// Whether `s` is valid UTF-8 (RFC 3629).
inline bool utf8_valid(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_detail::valid_seq_len(s, i);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

/// `s` with every invalid byte replaced by U+FFFD (EF BF BD).  Valid input
/// is returned unchanged.
inline std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_detail::valid_seq_len(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

/// The longest prefix of `s` of at most `max_bytes` bytes that ends on a
/// character boundary (a valid sequence is never cut in half).  Invalid
/// bytes count as one character each; sanitize first to get valid output.
inline std::string_view utf8_truncate(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes)
    return s;
  std::size_t end = 0;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_detail::valid_seq_len(s, i);
    if (n == 0)
      n = 1;
    if (i + n > max_bytes)
      break;
    i += n;
    end = i;
  }
  return s.substr(0, end);
}

/// `s` made valid (utf8_sanitize) and, if longer than `max_bytes`, cut on a
/// character boundary so that it plus `marker` fits in `max_bytes`, with
/// `marker` appended.  `max_bytes` must exceed marker.size().
inline std::string utf8_truncate_marked(std::string_view s, std::size_t max_bytes,
                                        std::string_view marker = "...") {
  std::string clean = utf8_sanitize(s);
  if (clean.size() <= max_bytes)
    return clean;
  const std::size_t room = max_bytes > marker.size() ? max_bytes - marker.size() : 0;
  std::string out(utf8_truncate(clean, room));
  out += marker;
  return out;
}

/// One log line from any text (issue 21; switch.lua(5), LOGGING): the text
/// made valid UTF-8 (utf8_sanitize), then every character that could end a
/// line or steer a terminal shown as an escape, so that one call is one
/// line and a user's string cannot forge a line of its own:
///   newline, carriage return, tab      -> \n \r \t
///   other C0 controls and DEL          -> \xHH (e.g. ESC -> \x1b)
///   C1 controls, U+2028, U+2029        -> \uHHHH (e.g. NEL -> \u0085)
/// Everything else, the backslash included, is kept as it is.  Idempotent:
/// its output contains no character it escapes.
///   log_escape("a\nb\x1b[31m") -> "a\\nb\\x1b[31m"
inline std::string log_escape(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string s = utf8_sanitize(text);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      const auto c1 = static_cast<unsigned char>(s[++i]);
      out += "\\u00";
      out += kHex[c1 >> 4];
      out += kHex[c1 & 0xf];
    } else if (c == 0xe2 && i + 2 < s.size() && s[i + 1] == '\x80' &&
               (s[i + 2] == '\xa8' || s[i + 2] == '\xa9')) {
      out += s[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

} // namespace switchlua
