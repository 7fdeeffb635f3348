// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/codec_msgpack.cpp
//
// msgpack -> Lua (push_msgpack) and msgpack -> JSON (msgpack_to_json).
// Decoding happens in three steps so that no Lua error can longjmp over a
// C++ object: unpack into a msgpack::object tree (C++ only, exceptions
// caught), validate the tree against the rules of codec.hpp (C++ only), then
// push it from a Lua C function run under lua_pcall, which only reads the
// plain msgpack::object structs.
#include "lua/codec.hpp"
#include "lua/detail.hpp"

#include "common/msgpack_read.hpp"

#include <lua.hpp>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace switchlua {

namespace {

using msgpack::type::object_type;

std::string_view as_view(const msgpack::object &o) {
  if (o.type == object_type::STR)
    return {o.via.str.ptr, o.via.str.size};
  return {o.via.bin.ptr, o.via.bin.size};
}

/// Unpacks exactly one msgpack value filling all of `bytes` (unpack_one),
/// errors prefixed "msgpack: ".
Expected<msgpack::object_handle> unpack_value(std::string_view bytes, std::size_t max_depth) {
  auto oh = unpack_one(bytes, limits_for_size(bytes.size(), max_depth), "value", max_depth);
  if (!oh)
    return fail("msgpack: " + oh.error().message);
  return oh;
}

/// Checks a decoded tree against the rules of push_msgpack.
class Validator {
public:
  explicit Validator(std::size_t max_depth) : max_depth_(max_depth) {}

  Expected<void> check(const msgpack::object &o, std::size_t depth) {
    switch (o.type) {
    case object_type::NIL:
      if (depth > 0)
        return error("nil is only allowed as the whole value");
      return {};
    case object_type::BOOLEAN:
    case object_type::NEGATIVE_INTEGER:
    case object_type::STR:
    case object_type::BIN:
      return {};
    case object_type::POSITIVE_INTEGER:
      if (o.via.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return error(fmt::format("the integer {} is out of Lua's range", o.via.u64));
      return {};
    case object_type::FLOAT32:
    case object_type::FLOAT64:
      if (!std::isfinite(o.via.f64))
        return error(fmt::format("the number {}", detail::format_float(o.via.f64)) +
                     " is not allowed");
      return {};
    case object_type::ARRAY:
    case object_type::MAP:
      return container(o, depth + 1);
    default:
      return error("an extension value is not allowed");
    }
  }

private:
  Unexpected<Error> error(std::string_view what) const {
    return fail(fmt::format("msgpack: {}: {}", path_, what));
  }

  Expected<void> container(const msgpack::object &o, std::size_t depth) {
    if (depth > max_depth_)
      return error(fmt::format("nested deeper than {} levels", max_depth_));
    const std::size_t base = path_.size();
    if (o.type == object_type::ARRAY) {
      for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
        detail::append_index(path_, static_cast<std::int64_t>(i) + 1);
        if (auto r = check(o.via.array.ptr[i], depth); !r)
          return r;
        path_.resize(base);
      }
      return {};
    }
    std::vector<std::string_view> keys;
    for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
      const auto &kv = o.via.map.ptr[i];
      if (kv.key.type != object_type::STR)
        return error("a map key that is not a string");
      keys.push_back(as_view(kv.key));
      detail::append_key(path_, keys.back());
      if (auto r = check(kv.val, depth); !r)
        return r;
      path_.resize(base);
    }
    std::sort(keys.begin(), keys.end());
    if (auto d = std::adjacent_find(keys.begin(), keys.end()); d != keys.end())
      return error(fmt::format("the key {} appears twice", detail::quote(*d)));
    return {};
  }

  std::size_t max_depth_;
  std::string path_ = "value";
};

/// Pushes a validated tree.  Runs under lua_pcall (raises on memory errors).
void push_object(lua_State *L, const msgpack::object &o) {
  luaL_checkstack(L, 3, "msgpack value nested too deep");
  switch (o.type) {
  case object_type::NIL:
    lua_pushnil(L);
    break;
  case object_type::BOOLEAN:
    lua_pushboolean(L, o.via.boolean);
    break;
  case object_type::POSITIVE_INTEGER:
    lua_pushinteger(L, static_cast<lua_Integer>(o.via.u64));
    break;
  case object_type::NEGATIVE_INTEGER:
    lua_pushinteger(L, o.via.i64);
    break;
  case object_type::FLOAT32:
  case object_type::FLOAT64:
    lua_pushnumber(L, o.via.f64);
    break;
  case object_type::STR:
  case object_type::BIN: {
    const auto s = as_view(o);
    lua_pushlstring(L, s.data(), s.size());
    break;
  }
  case object_type::ARRAY:
    lua_createtable(L, static_cast<int>(o.via.array.size), 0);
    for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
      push_object(L, o.via.array.ptr[i]);
      lua_rawseti(L, -2, static_cast<lua_Integer>(i) + 1);
    }
    break;
  case object_type::MAP:
    lua_createtable(L, 0, static_cast<int>(o.via.map.size));
    for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
      push_object(L, o.via.map.ptr[i].key);
      push_object(L, o.via.map.ptr[i].val);
      lua_rawset(L, -3);
    }
    break;
  default:
    lua_pushnil(L);
    break; // excluded by Validator
  }
}

int l_push_object(lua_State *L) {
  push_object(L, *static_cast<const msgpack::object *>(lua_touserdata(L, 1)));
  return 1;
}

/// A decoded tree as JSON for display: bin as text, other map keys as their
/// JSON text, NaN/inf as null.
nlohmann::json to_json(const msgpack::object &o) {
  switch (o.type) {
  case object_type::BOOLEAN:
    return o.via.boolean;
  case object_type::POSITIVE_INTEGER:
    return o.via.u64;
  case object_type::NEGATIVE_INTEGER:
    return o.via.i64;
  case object_type::FLOAT32:
  case object_type::FLOAT64:
    return o.via.f64;
  case object_type::STR:
  case object_type::BIN:
    return std::string(as_view(o));
  case object_type::ARRAY: {
    auto a = nlohmann::json::array();
    for (std::uint32_t i = 0; i < o.via.array.size; ++i)
      a.push_back(to_json(o.via.array.ptr[i]));
    return a;
  }
  case object_type::MAP: {
    auto m = nlohmann::json::object();
    for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
      const auto &kv = o.via.map.ptr[i];
      const bool text = kv.key.type == object_type::STR || kv.key.type == object_type::BIN;
      const std::string key =
          text ? std::string(as_view(kv.key))
               : to_json(kv.key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      m[key] = to_json(kv.val);
    }
    return m;
  }
  default:
    return nullptr; // nil; an extension is refused before
  }
}

bool has_extension(const msgpack::object &o) {
  if (o.type == object_type::EXT)
    return true;
  if (o.type == object_type::ARRAY)
    return std::any_of(o.via.array.ptr, o.via.array.ptr + o.via.array.size, has_extension);
  if (o.type == object_type::MAP)
    return std::any_of(o.via.map.ptr, o.via.map.ptr + o.via.map.size,
                       [](const msgpack::object_kv &kv) {
                         return has_extension(kv.key) || has_extension(kv.val);
                       });
  return false;
}

} // namespace

Expected<void> push_msgpack(lua_State *L, std::string_view bytes, const CodecLimits &limits) {
  auto oh = unpack_value(bytes, limits.max_depth);
  if (!oh)
    return Unexpected<Error>{oh.error()};
  if (auto r = Validator(limits.max_depth).check(oh->get(), 0); !r)
    return r;
  const int top = lua_gettop(L);
  if (!lua_checkstack(L, 3))
    return fail("msgpack: the Lua stack is exhausted");
  lua_pushcfunction(L, l_push_object);
  lua_pushlightuserdata(L, const_cast<msgpack::object *>(&oh->get()));
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    auto e = fail(fmt::format("msgpack: {}", msg ? msg : "error while pushing the value"));
    lua_settop(L, top);
    return e;
  }
  assert(lua_gettop(L) == top + 1);
  return {};
}

Expected<std::string> msgpack_to_json(std::string_view bytes) {
  const CodecLimits limits;
  auto oh = unpack_value(bytes, limits.max_depth);
  if (!oh)
    return Unexpected<Error>{oh.error()};
  if (has_extension(oh->get()))
    return fail("msgpack: an extension value cannot be shown as JSON");
  try {
    return to_json(oh->get()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception &e) {
    return fail(fmt::format("msgpack: cannot show as JSON ({})", e.what()));
  }
}

} // namespace switchlua
