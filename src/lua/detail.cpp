// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/detail.cpp
//
// The internal helpers declared in lua/detail.hpp.
#include "lua/detail.hpp"

#include "common/utf8.hpp"

#include <lua.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace switchlua {

namespace detail {

bool is_identifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9'))
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string quote(std::string_view s, std::size_t max_bytes) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c >= 0x20 && c < 0x7f)
        out += static_cast<char>(c);
      else
        out += fmt::format("\\{}", static_cast<unsigned>(c));
    }
  }
  if (s.size() > max_bytes)
    out += "...";
  out += '"';
  return out;
}

void append_key(std::string &path, std::string_view key) {
  if (is_identifier(key)) {
    path += '.';
    path += key;
  } else {
    path += '[';
    path += quote(key, 1024);
    path += ']';
  }
}

void append_index(std::string &path, std::int64_t index) {
  path += fmt::format("[{}]", index);
}

std::string format_number(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "inf" : "-inf";
  // std::to_chars never consults the locale (snprintf would write "0,5"
  // after a hook's os.setlocale("de_DE.UTF-8")).
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::general, 14);
  return std::string(buf, r.ptr);
}

std::string format_float(double d) {
  if (std::isnan(d) || std::isinf(d))
    return format_number(d);
  std::string s = format_number(d);
  if (s.find_first_not_of("-0123456789") == std::string::npos)
    s += ".0";
  return s;
}

namespace {
int l_push_view(lua_State *L) {
  const auto *v = static_cast<const std::string_view *>(lua_touserdata(L, 1));
  lua_pushlstring(L, v->data(), v->size());
  return 1;
}
} // namespace

/// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates,
/// nothing above U+10FFFF).
bool is_utf8(std::string_view s) {
  return utf8_valid(s);
}

bool push_string_protected(lua_State *L, std::string_view bytes) {
  lua_pushcfunction(L, l_push_view);
  lua_pushlightuserdata(L, &bytes);
  return lua_pcall(L, 1, 1, 0) == LUA_OK;
}

} // namespace detail

} // namespace switchlua
