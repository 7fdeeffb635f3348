// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/job_pools.hpp
//
// The `pools` field of the job table (issue 38; switch.lua(5), POOLS): the
// fabric IDs the controller handed to the setup attempt, pool name -> its
// IDs in the order handed out, e.g. job.pools.vni = {1024}.  Empty (nil in
// Lua, absent from the msgpack map) unless a pool is declared
// (switch_pool_NAME, switch_lua.conf(5)).  Its codec is here, not in
// contract.cpp, which uses these overloads for the field.
#pragma once

#include "common/expected.hpp"
#include "common/msgpack_write.hpp"

#include <cstdint>
#include <map>
#include <msgpack.hpp>
#include <string>
#include <vector>

struct lua_State;

namespace switchlua {

/// Pool name -> IDs (each an unsigned 32-bit integer).
using JobPools = std::map<std::string, std::vector<std::uint32_t>>;

namespace job_pools {

/// Pushes the table {name = {id, ...}, ...}; false (nothing pushed) when
/// empty: the field is nil.
bool push_member(lua_State *L, const JobPools &v);
/// Packs a msgpack map of name -> array of unsigned integers.
void pack_member(msgpack::packer<StringSink> &pk, const JobPools &v);
/// Reads what pack_member() wrote (nil: empty).  Errors say what is wrong
/// ("pool vni: element 2: expected an unsigned 32-bit integer, got a string").
Expected<void> read_member(const msgpack::object &o, JobPools &out);

} // namespace job_pools
} // namespace switchlua
