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
// Rejected, with the path of the bad value (`jobinfo.fabric.vlans[2]`,
// `jobinfo["a b"]` for a key that is not an identifier):
// functions, userdata, threads, light userdata, NaN and +-inf, tables with a
// metatable, tables mixing string and integer keys, sparse or non-positive
// integer keys, float or boolean keys, cycles (a table reached again while
// being encoded), depth beyond limits.max_depth, more than limits.max_bytes
// of output.  The Lua stack height is unchanged on every return.
//
// Messages read "<path>: <what> cannot be saved" (msgpack) or "... cannot be
// converted" (JSON), e.g.
//   jobinfo.fabric.handler: a function cannot be saved
//   jobinfo.x: the number nan cannot be saved
//   jobinfo.t: a table with both string and integer keys cannot be saved
//   jobinfo.t: an array with holes (key 3 but only 2 integer keys) cannot be saved
//   jobinfo.a.self: a reference back to an enclosing table (jobinfo.a) cannot be saved
//   jobinfo.a...: a table nested deeper than 32 levels cannot be saved
//   jobinfo.s: the encoded value exceeds the limit of 65536 bytes
// The same table reached twice on different branches (not a cycle) is
// written twice.  Map keys are written sorted, so equal tables give equal
// bytes.  Tables are walked recursively, one C++ frame per level, bounded by
// max_depth; only raw accesses are made (no metamethod runs), so nothing
// raises except a memory error.
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
  std::size_t max_depth = 32;        ///< nested tables
  std::size_t max_bytes = 64 * 1024; ///< encoded size, bytes
};

/// Encodes the Lua value at `idx` as msgpack.  `root` names it in errors:
/// "jobinfo.fabric.handler: a function cannot be saved".
Expected<MsgpackBytes> encode_lua(lua_State *L, int idx, std::string_view root,
                                  const CodecLimits &limits = {});

/// Decodes msgpack bytes and pushes the value (one slot).  Maps become
/// tables with string keys, arrays 1..n tables; str and bin become strings,
/// int stays integer, float32/64 float.  nil is allowed only as the whole
/// value (a Lua table cannot hold nil, so an array with a nil element could
/// not round-trip).  Error (nothing pushed), message starting "msgpack: ":
/// empty, truncated or malformed input, trailing bytes after the value,
/// non-string or duplicate map keys, nil inside a container, NaN or +-inf,
/// an unsigned integer beyond int64, extension types, or depth beyond
/// limits.max_depth, e.g. "msgpack: value.fabric: a map key that is not a
/// string".  Decoding runs under lua_pcall (a memory error is an error).
Expected<void> push_msgpack(lua_State *L, std::string_view bytes, const CodecLimits &limits = {});

/// The JSON text of the Lua value at `idx` (compact, keys sorted, integral
/// floats as "2.0", empty table as "{}", nil as "null"), with the same rules
/// and limits as encode_lua plus: strings must be valid UTF-8
/// ("value.s: a string that is not valid UTF-8 cannot be converted").
Expected<std::string> lua_to_json(lua_State *L, int idx, std::string_view root,
                                  const CodecLimits &limits = {});

/// The JSON text of a msgpack value (for logs and `switch-lua simulate`):
/// compact, keys sorted; str and bin as text with invalid UTF-8 replaced by
/// U+FFFD; non-string map keys as their JSON text.  Lenient about what
/// push_msgpack refuses except: malformed, truncated or trailing bytes,
/// extension types, depth beyond the default limit.
Expected<std::string> msgpack_to_json(std::string_view bytes);

} // namespace switchlua
