// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/codec.cpp
//
// Lua -> msgpack / JSON: one walker over the Lua value (classify each table
// first, then emit) feeding one of two emitters.  The walk recurses once per
// nested table, so its depth is bounded by CodecLimits::max_depth; cycles are
// caught by the list of tables on the current path.  The other direction
// (msgpack -> Lua, msgpack -> JSON) is in codec_msgpack.cpp.
#include "lua/codec.hpp"

#include "common/msgpack_write.hpp"
#include "lua/detail.hpp"

#include <lua.hpp>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>
#include <vector>

namespace switchlua {

namespace {

/// The output side of a walk.  Map keys come sorted, each before its value.
class Emitter {
public:
  virtual ~Emitter() = default;
  virtual void nil() = 0;
  virtual void boolean(bool b) = 0;
  virtual void integer(lua_Integer i) = 0;
  virtual void real(double d) = 0;
  virtual void string(std::string_view s) = 0;
  virtual void begin_array(std::size_t n) = 0;
  virtual void begin_map(std::size_t n) = 0;
  virtual void key(std::string_view k) = 0;
  virtual void end() = 0;
  /// Bytes written so far.
  virtual std::size_t size() const = 0;
  /// Output text, valid after the walk.
  virtual std::string take() = 0;
};

/// msgpack: ints as int, floats as float64, strings as str, tables as
/// array / map.
class MsgpackEmitter final : public Emitter {
public:
  void nil() override { pk_.pack_nil(); }
  void boolean(bool b) override { b ? pk_.pack_true() : pk_.pack_false(); }
  void integer(lua_Integer i) override { pk_.pack_int64(i); }
  void real(double d) override { pk_.pack_double(d); }
  void string(std::string_view s) override { pack_str(pk_, s); }
  void begin_array(std::size_t n) override { pk_.pack_array(static_cast<std::uint32_t>(n)); }
  void begin_map(std::size_t n) override { pk_.pack_map(static_cast<std::uint32_t>(n)); }
  void key(std::string_view k) override { string(k); }
  void end() override {}
  std::size_t size() const override { return out_.s.size(); }
  std::string take() override { return std::move(out_.s); }

private:
  struct Sink {
    std::string s;
    void write(const char *d, std::size_t n) { s.append(d, n); }
  };
  Sink out_;
  msgpack::packer<Sink> pk_{out_};
};

/// Compact JSON; integral floats keep their ".0" (nlohmann's notation).
class JsonEmitter final : public Emitter {
public:
  void nil() override { scalar("null"); }
  void boolean(bool b) override { scalar(b ? "true" : "false"); }
  void integer(lua_Integer i) override { scalar(fmt::format("{}", i)); }
  void real(double d) override { scalar(nlohmann::json(d).dump()); }
  void string(std::string_view s) override { scalar(text(s)); }
  void begin_array(std::size_t) override { open('[', false); }
  void begin_map(std::size_t) override { open('{', true); }
  void key(std::string_view k) override {
    comma();
    out_ += text(k);
    out_ += ':';
  }
  void end() override {
    out_ += levels_.back().map ? '}' : ']';
    levels_.pop_back();
  }
  std::size_t size() const override { return out_.size(); }
  std::string take() override { return std::move(out_); }

private:
  struct Level {
    bool map;
    bool first;
  };
  static std::string text(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }
  void comma() {
    if (!levels_.back().first)
      out_ += ',';
    levels_.back().first = false;
  }
  void before_value() {
    if (!levels_.empty() && !levels_.back().map)
      comma();
  }
  void scalar(std::string_view s) {
    before_value();
    out_ += s;
  }
  void open(char c, bool map) {
    before_value();
    out_ += c;
    levels_.push_back({map, true});
  }
  std::string out_;
  std::vector<Level> levels_;
};

/// How a table will be written.
struct Shape {
  bool array = false;
  lua_Integer length = 0;        ///< arrays: n of 1..n
  std::vector<std::string> keys; ///< maps: sorted string keys
};

/// One walk of one Lua value into one emitter.
class Walker {
public:
  Walker(lua_State *L, Emitter &out, const CodecLimits &limits, std::string_view root, bool json)
      : L_(L), out_(out), limits_(limits), path_(root), json_(json) {}

  Expected<void> value(int idx, std::size_t depth);

private:
  Unexpected<Error> error(std::string_view what) const {
    return fail(fmt::format("{}: {} cannot be {}", path_, what, json_ ? "converted" : "saved"));
  }
  Expected<void> check_size();
  Expected<void> scalar(int idx);
  Expected<void> table(int idx, std::size_t depth);
  Expected<Shape> classify(int idx);
  Expected<void> items(int idx, const Shape &shape, std::size_t depth);

  lua_State *L_;
  Emitter &out_;
  const CodecLimits &limits_;
  std::string path_;
  bool json_;
  /// Tables being written, outermost first, with the length of their path.
  std::vector<std::pair<const void *, std::size_t>> open_;
};

Expected<void> Walker::check_size() {
  if (out_.size() > limits_.max_bytes)
    return fail(fmt::format("{}: the encoded value exceeds the limit of {} bytes", path_,
                            limits_.max_bytes));
  return {};
}

Expected<void> Walker::value(int idx, std::size_t depth) {
  if (lua_type(L_, idx) == LUA_TTABLE)
    return table(idx, depth + 1);
  if (auto r = scalar(idx); !r)
    return r;
  return check_size();
}

Expected<void> Walker::scalar(int idx) {
  switch (lua_type(L_, idx)) {
  case LUA_TNIL:
    out_.nil();
    return {};
  case LUA_TBOOLEAN:
    out_.boolean(lua_toboolean(L_, idx) != 0);
    return {};
  case LUA_TNUMBER: {
    if (lua_isinteger(L_, idx)) {
      out_.integer(lua_tointeger(L_, idx));
      return {};
    }
    const double d = lua_tonumber(L_, idx);
    if (!std::isfinite(d))
      return error(fmt::format("the number {}", detail::format_float(d)));
    out_.real(d);
    return {};
  }
  case LUA_TSTRING: {
    std::size_t len = 0;
    const char *s = lua_tolstring(L_, idx, &len);
    if (out_.size() + len > limits_.max_bytes)
      return fail(fmt::format("{}: the encoded value exceeds the limit of {} bytes", path_,
                              limits_.max_bytes));
    if (json_ && !detail::is_utf8({s, len}))
      return error("a string that is not valid UTF-8");
    out_.string({s, len});
    return {};
  }
  case LUA_TFUNCTION:
    return error("a function");
  case LUA_TUSERDATA:
    return error("a userdata");
  case LUA_TLIGHTUSERDATA:
    return error("a light userdata");
  case LUA_TTHREAD:
    return error("a thread (coroutine)");
  default:
    return error(fmt::format("a {}", lua_typename(L_, lua_type(L_, idx))));
  }
}

Expected<void> Walker::table(int idx, std::size_t depth) {
  if (depth > limits_.max_depth)
    return error(fmt::format("a table nested deeper than {} levels", limits_.max_depth));
  const void *self = lua_topointer(L_, idx);
  for (const auto &[ptr, len] : open_)
    if (ptr == self)
      return error(fmt::format("a reference back to an enclosing table ({})",
                               std::string_view(path_).substr(0, len)));
  if (!lua_checkstack(L_, 4))
    return fail(fmt::format("{}: the Lua stack is exhausted", path_));
  if (lua_getmetatable(L_, idx)) {
    lua_pop(L_, 1);
    return error("a table with a metatable");
  }
  auto shape = classify(idx);
  if (!shape)
    return Unexpected<Error>{shape.error()};
  open_.emplace_back(self, path_.size());
  auto r = items(idx, *shape, depth);
  open_.pop_back();
  return r;
}

Expected<Shape> Walker::classify(int idx) {
  Shape shape;
  lua_Integer count = 0, max = 0;
  lua_pushnil(L_);
  while (lua_next(L_, idx) != 0) {
    const int kt = lua_type(L_, -2);
    if (kt == LUA_TSTRING) {
      std::size_t len = 0;
      const char *k = lua_tolstring(L_, -2, &len);
      shape.keys.emplace_back(k, len);
    } else if (kt == LUA_TNUMBER && lua_isinteger(L_, -2)) {
      const lua_Integer k = lua_tointeger(L_, -2);
      if (k < 1)
        return error(fmt::format("a table with the integer key {}", k));
      ++count;
      max = std::max(max, k);
    } else if (kt == LUA_TNUMBER) {
      return error(
          fmt::format("a table with the float key {}", detail::format_float(lua_tonumber(L_, -2))));
    } else {
      return error(fmt::format("a table with a {} key", lua_typename(L_, kt)));
    }
    lua_pop(L_, 1);
    // Every entry takes at least one byte: refuse huge tables before copying keys.
    if (shape.keys.size() + static_cast<std::size_t>(count) > limits_.max_bytes)
      return fail(fmt::format("{}: the encoded value exceeds the limit of {} bytes", path_,
                              limits_.max_bytes));
  }
  if (count > 0 && !shape.keys.empty())
    return error("a table with both string and integer keys");
  if (count != max)
    return error(fmt::format("an array with holes (key {} but only {} integer keys)", max, count));
  shape.array = count > 0;
  shape.length = count;
  std::sort(shape.keys.begin(), shape.keys.end());
  return shape;
}

Expected<void> Walker::items(int idx, const Shape &shape, std::size_t depth) {
  const std::size_t base = path_.size();
  if (shape.array) {
    out_.begin_array(static_cast<std::size_t>(shape.length));
    for (lua_Integer i = 1; i <= shape.length; ++i) {
      detail::append_index(path_, i);
      lua_rawgeti(L_, idx, i);
      auto r = value(lua_gettop(L_), depth);
      lua_pop(L_, 1);
      if (!r)
        return r;
      path_.resize(base);
    }
  } else {
    out_.begin_map(shape.keys.size());
    for (const auto &k : shape.keys) {
      detail::append_key(path_, k);
      out_.key(k);
      lua_pushlstring(L_, k.data(), k.size());
      lua_rawget(L_, idx);
      auto r = value(lua_gettop(L_), depth);
      lua_pop(L_, 1);
      if (!r)
        return r;
      path_.resize(base);
    }
  }
  out_.end();
  return check_size();
}

/// Runs one walk and checks the Lua stack is as it was.
Expected<std::string> walk(lua_State *L, int idx, std::string_view root, const CodecLimits &limits,
                           Emitter &out, bool json) {
  const int top = lua_gettop(L);
  idx = lua_absindex(L, idx);
  Walker w(L, out, limits, root, json);
  auto r = w.value(idx, 0);
  assert(!r || lua_gettop(L) == top);
  lua_settop(L, top); // error paths may leave a lua_next key/value pair
  if (!r)
    return Unexpected<Error>{r.error()};
  return out.take();
}

} // namespace

Expected<MsgpackBytes> encode_lua(lua_State *L, int idx, std::string_view root,
                                  const CodecLimits &limits) {
  MsgpackEmitter out;
  return walk(L, idx, root, limits, out, false);
}

Expected<std::string> lua_to_json(lua_State *L, int idx, std::string_view root,
                                  const CodecLimits &limits) {
  JsonEmitter out;
  return walk(L, idx, root, limits, out, true);
}

} // namespace switchlua
