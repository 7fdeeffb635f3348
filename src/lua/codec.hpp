// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/codec.hpp
//
// Strict conversion of a Lua value to msgpack and back, for jobinfo and
// stepinfo (which live in Slurm's job state file and in every step's
// credential), and to JSON for slurm.to_json() and for display.
//
// Accepted: nil (top level only), booleans, integers (Lua integer subtype,
// kept as msgpack int), finite floats (kept as float64: 2.0 stays 2.0),
// strings (any bytes; to_json requires UTF-8), and tables that are either
// arrays (keys exactly 1..n, n >= 1) or maps (string keys only).  An empty
// table is encoded as an empty map.
//
// Rejected, with the path of the bad value (`jobinfo.fabric.vlans[2]`):
// functions, userdata, threads, light userdata, NaN and +-inf, tables with a
// metatable, tables mixing string and integer keys, sparse or non-positive
// integer keys, float or boolean keys, cycles (a table reached again while
// being encoded), depth beyond limits.max_depth, more than limits.max_bytes
// of output.  The Lua stack height is unchanged on every return.
#pragma once

#include "common/expected.hpp"

#include <cstddef>
#include <string>
#include <string_view>

struct lua_State;

namespace switchlua {

using MsgpackBytes = std::string;

/// Bounds on one encoded value.
struct CodecLimits {
  std::size_t max_depth = 32;          ///< nested tables
  std::size_t max_bytes = 64 * 1024;   ///< encoded size, bytes
};

/// Encodes the Lua value at `idx` as msgpack.  `root` names it in errors:
/// "jobinfo.fabric.handler: a function cannot be saved".
Expected<MsgpackBytes> encode_lua(lua_State *L, int idx, std::string_view root,
                                  const CodecLimits &limits = {});

/// Decodes msgpack bytes and pushes the value (one slot).  Maps become
/// tables with string keys, arrays 1..n tables.  Error (nothing pushed) on
/// truncated or malformed input, non-string map keys, or depth beyond limits.
Expected<void> push_msgpack(lua_State *L, std::string_view bytes, const CodecLimits &limits = {});

/// The JSON text of the Lua value at `idx` (compact, keys sorted), with the
/// same rules as encode_lua plus: strings must be valid UTF-8.
Expected<std::string> lua_to_json(lua_State *L, int idx, std::string_view root,
                                  const CodecLimits &limits = {});

/// The JSON text of a msgpack value (for logs and `switch-lua simulate`).
Expected<std::string> msgpack_to_json(std::string_view bytes);

} // namespace switchlua
