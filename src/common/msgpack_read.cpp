// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/msgpack_read.cpp
//
// The type names and the map reader of msgpack_read.hpp.
#include "common/msgpack_read.hpp"

#include <limits>

namespace switchlua {

using msgpack::type::object_type;

std::string_view msgpack_type_name(object_type t) {
  switch (t) {
  case object_type::NIL:
    return "nil";
  case object_type::BOOLEAN:
    return "a boolean";
  case object_type::POSITIVE_INTEGER:
  case object_type::NEGATIVE_INTEGER:
    return "an integer";
  case object_type::FLOAT32:
  case object_type::FLOAT64:
    return "a float";
  case object_type::STR:
    return "a string";
  case object_type::BIN:
    return "binary data";
  case object_type::ARRAY:
    return "an array";
  case object_type::MAP:
    return "a map";
  default:
    return "an extension value";
  }
}

namespace {

/// What typed() says it expected: a positive integer is "an unsigned
/// integer", a negative one stands for either sign.
std::string_view wanted(object_type t) {
  return t == object_type::POSITIVE_INTEGER ? "an unsigned integer" : msgpack_type_name(t);
}

} // namespace

MapReader::MapReader(const msgpack::object &map, std::string what) : what_(std::move(what)) {
  if (map.type != object_type::MAP) {
    set_error(fmt::format("is {}, expected a map", msgpack_type_name(map)));
    return;
  }
  map_ = &map.via.map;
}

void MapReader::set_error(std::string_view what) {
  if (!error)
    error = fmt::format("{}: {}", what_, what);
}

const msgpack::object *MapReader::get(std::string_view key, bool required) {
  if (map_ == nullptr)
    return nullptr;
  for (std::uint32_t i = 0; i < map_->size; ++i) {
    const msgpack::object &k = map_->ptr[i].key;
    if (k.type == object_type::STR && std::string_view(k.via.str.ptr, k.via.str.size) == key)
      return &map_->ptr[i].val;
  }
  if (required)
    set_error(fmt::format("field '{}' missing", key));
  return nullptr;
}

const msgpack::object *MapReader::typed(std::string_view key, object_type t, bool nil_ok) {
  const msgpack::object *o = get(key);
  if (o == nullptr || (nil_ok && o->type == object_type::NIL))
    return nullptr;
  const bool either_sign = t == object_type::NEGATIVE_INTEGER;
  if (o->type == t || (either_sign && o->type == object_type::POSITIVE_INTEGER))
    return o;
  set_error(fmt::format("field '{}' is {}, expected {}{}", key, msgpack_type_name(*o), wanted(t),
                        nil_ok ? " or nil" : ""));
  return nullptr;
}

std::uint64_t MapReader::u64(std::string_view key) {
  const auto *o = typed(key, object_type::POSITIVE_INTEGER);
  return o ? o->via.u64 : 0;
}

std::int64_t MapReader::i64(std::string_view key) {
  const auto *o = typed(key, object_type::NEGATIVE_INTEGER);
  if (o == nullptr)
    return 0;
  if (o->type == object_type::POSITIVE_INTEGER) {
    if (o->via.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      set_error(fmt::format("field '{}' is out of range", key));
      return 0;
    }
    return static_cast<std::int64_t>(o->via.u64);
  }
  return o->via.i64;
}

int MapReader::i32(std::string_view key) {
  const std::int64_t v = i64(key);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    set_error(fmt::format("field '{}' is out of range", key));
    return 0;
  }
  return static_cast<int>(v);
}

bool MapReader::flag(std::string_view key) {
  const auto *o = typed(key, object_type::BOOLEAN);
  return o ? o->via.boolean : false;
}

std::string MapReader::str(std::string_view key) {
  const auto *o = typed(key, object_type::STR);
  return o ? std::string(o->via.str.ptr, o->via.str.size) : std::string();
}

std::string MapReader::bin(std::string_view key) {
  const auto *o = typed(key, object_type::BIN);
  return o ? std::string(o->via.bin.ptr, o->via.bin.size) : std::string();
}

std::optional<std::string> MapReader::opt_bin(std::string_view key) {
  const auto *o = typed(key, object_type::BIN, true);
  if (o == nullptr)
    return std::nullopt;
  return std::string(o->via.bin.ptr, o->via.bin.size);
}

std::optional<std::string> MapReader::opt_str(std::string_view key) {
  if (get(key, false) == nullptr)
    return std::nullopt;
  const auto *o = typed(key, object_type::STR);
  if (o == nullptr)
    return std::nullopt;
  return std::string(o->via.str.ptr, o->via.str.size);
}

std::vector<const msgpack::object *> MapReader::array(std::string_view key) {
  std::vector<const msgpack::object *> out;
  if (const auto *o = typed(key, object_type::ARRAY))
    for (std::uint32_t i = 0; i < o->via.array.size; ++i)
      out.push_back(&o->via.array.ptr[i]);
  return out;
}

} // namespace switchlua
