// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/detail.hpp
//
// Internal helpers of the Lua library shared by codec.cpp, contract.cpp,
// runtime.cpp and slurm_table.cpp.  Not part of the public API: nothing
// outside src/lua includes this file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

struct lua_State;

namespace switchlua::detail {

/// Whether `s` is a Lua-style identifier ([A-Za-z_][A-Za-z0-9_]*), which a
/// path prints as `.name` rather than `["name"]`.
bool is_identifier(std::string_view s);

/// `s` in double quotes for a message, with `"`, `\` and every byte outside
/// printable ASCII escaped (`\n`, `\t`, `\0`, `\255`).  Longer than
/// `max_bytes` input is cut and marked with `...` inside the quotes.
std::string quote(std::string_view s, std::size_t max_bytes = 40);

/// Appends the path step of a string key: `.name` or `["a b"]`.
void append_key(std::string &path, std::string_view key);

/// Appends the path step of an array index: `[2]`.
void append_index(std::string &path, std::int64_t index);

/// `d` as C's "%.14g" formats it in the C locale, whatever the process
/// locale is ("0.5", "1e+20", "nan", "inf"): what Lua's tostring() shows.
std::string format_number(double d);
/// A float in Lua's own notation (format_number() with ".0" on integral
/// values, "nan", "inf", "-inf").  Locale-independent too.
std::string format_float(double d);

/// Whether `s` is well-formed UTF-8: no overlong forms, no surrogates,
/// nothing above U+10FFFF.
bool is_utf8(std::string_view s);

/// Pushes `bytes` as a Lua string under lua_pcall, so that a memory error
/// cannot longjmp over the caller's C++ objects.  On failure the error
/// object is pushed instead and false is returned.  Either way one slot.
bool push_string_protected(lua_State *L, std::string_view bytes);

} // namespace switchlua::detail
