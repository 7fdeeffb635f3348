// SPDX-License-Identifier: GPL-2.0-or-later
//
// The job table's `pools` field (lua/job_pools.hpp; issue 38): Lua and
// msgpack forms.
#include "lua/job_pools.hpp"

#include "common/msgpack_read.hpp"

#include <fmt/format.h>
#include <lua.hpp>

namespace switchlua::job_pools {

using msgpack::type::object_type;

bool push_member(lua_State *L, const JobPools &v) {
  if (v.empty())
    return false;
  luaL_checkstack(L, 3, "job.pools");
  lua_createtable(L, 0, static_cast<int>(v.size()));
  for (const auto &[name, ids] : v) {
    lua_createtable(L, static_cast<int>(ids.size()), 0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      lua_pushinteger(L, static_cast<lua_Integer>(ids[i]));
      lua_rawseti(L, -2, static_cast<lua_Integer>(i) + 1);
    }
    lua_setfield(L, -2, name.c_str());
  }
  return true;
}

void pack_member(msgpack::packer<StringSink> &pk, const JobPools &v) {
  pk.pack_map(static_cast<std::uint32_t>(v.size()));
  for (const auto &[name, ids] : v) {
    pack_str(pk, name);
    pk.pack_array(static_cast<std::uint32_t>(ids.size()));
    for (std::uint32_t id : ids)
      pk.pack_uint32(id);
  }
}

Expected<void> read_member(const msgpack::object &o, JobPools &out) {
  out.clear();
  if (o.type == object_type::NIL)
    return {};
  if (o.type != object_type::MAP)
    return fail(
        fmt::format("expected a map of pool names to arrays of IDs, got {}", msgpack_type_name(o)));
  for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
    const msgpack::object_kv &kv = o.via.map.ptr[i];
    if (kv.key.type != object_type::STR)
      return fail(fmt::format("a pool name that is {}", msgpack_type_name(kv.key)));
    const std::string name(kv.key.via.str.ptr, kv.key.via.str.size);
    if (kv.val.type != object_type::ARRAY)
      return fail(fmt::format("pool {}: expected an array of IDs, got {}", name,
                              msgpack_type_name(kv.val)));
    std::vector<std::uint32_t> ids;
    for (std::uint32_t j = 0; j < kv.val.via.array.size; ++j) {
      const msgpack::object &e = kv.val.via.array.ptr[j];
      if (e.type != object_type::POSITIVE_INTEGER || e.via.u64 > UINT32_MAX)
        return fail(fmt::format("pool {}: element {}: expected an unsigned 32-bit integer, got {}",
                                name, j + 1, msgpack_type_name(e)));
      ids.push_back(static_cast<std::uint32_t>(e.via.u64));
    }
    if (!out.emplace(name, std::move(ids)).second)
      return fail(fmt::format("pool {} appears twice", name));
  }
  return {};
}

} // namespace switchlua::job_pools
