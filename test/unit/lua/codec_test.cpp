// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/unit/lua/codec_test.cpp
//
// lua/codec.hpp: Lua <-> msgpack and Lua -> JSON.  Each rejection is
// asserted with its full message, path included.
#include "lua/codec.hpp"
#include "lua_test_util.hpp"

#include <gtest/gtest.h>

#include <string>

namespace switchlua {
namespace {

using test::LuaState;

/// Encodes `expr` (root "jobinfo"); the error message or the bytes.
Expected<MsgpackBytes> encode(const LuaState &L, const std::string &expr,
                              const CodecLimits &limits = {}) {
  L.push(expr);
  const int top = lua_gettop(L);
  auto r = encode_lua(L, -1, "jobinfo", limits);
  EXPECT_EQ(lua_gettop(L), top) << "stack height changed";
  lua_pop(L, 1);
  return r;
}

/// The encode error for `expr`, or "" if it encoded.
std::string encode_error(const LuaState &L, const std::string &expr,
                         const CodecLimits &limits = {}) {
  auto r = encode(L, expr, limits);
  return r ? "" : r.error().message;
}

/// lua_to_json of `expr` (root "value"): the text or the error message.
std::string to_json(const LuaState &L, const std::string &expr) {
  L.push(expr);
  const int top = lua_gettop(L);
  auto r = lua_to_json(L, -1, "value");
  EXPECT_EQ(lua_gettop(L), top) << "stack height changed";
  lua_pop(L, 1);
  return r ? *r : r.error().message;
}

/// encode -> push_msgpack -> lua_to_json.
std::string round_trip_json(const LuaState &L, const std::string &expr) {
  auto bytes = encode(L, expr);
  if (!bytes)
    return "encode: " + bytes.error().message;
  if (auto r = push_msgpack(L, *bytes); !r)
    return "decode: " + r.error().message;
  auto json = lua_to_json(L, -1, "value");
  lua_pop(L, 1);
  return json ? *json : json.error().message;
}

/// push_msgpack of raw bytes: "" when decoded (value popped), else the error.
std::string decode_error(const LuaState &L, const std::string &bytes) {
  const int top = lua_gettop(L);
  auto r = push_msgpack(L, bytes);
  if (r) {
    EXPECT_EQ(lua_gettop(L), top + 1);
    lua_settop(L, top);
    return "";
  }
  EXPECT_EQ(lua_gettop(L), top) << "stack height changed on error";
  return r.error().message;
}

/// `n` tables nested: {{{...{1}...}}}.
std::string nested(int n) {
  return std::string(n, '{') + "1" + std::string(n, '}');
}

TEST(Codec, RoundTripKeepsIntegersIntegersAndFloatsFloats) {
  LuaState L;
  EXPECT_EQ(round_trip_json(L, "{i = 1, f = 2.0, neg = -5, half = 0.5, big = math.maxinteger}"),
            R"({"big":9223372036854775807,"f":2.0,"half":0.5,"i":1,"neg":-5})");
  auto bytes = encode(L, "{i = 1, f = 2.0}");
  ASSERT_TRUE(bytes);
  ASSERT_TRUE(push_msgpack(L, *bytes));
  lua_setglobal(L, "t");
  L.push("math.type(t.i) .. ' ' .. math.type(t.f)");
  EXPECT_STREQ(lua_tostring(L, -1), "integer float");
}

TEST(Codec, RoundTripKeepsNestedTablesAndArrays) {
  LuaState L;
  EXPECT_EQ(round_trip_json(L, R"({fabric = {endpoint = "e", vlans = {101, 102, 103}},
                                   list = {"x", {y = true}, false}})"),
            R"({"fabric":{"endpoint":"e","vlans":[101,102,103]},"list":["x",{"y":true},false]})");
}

TEST(Codec, RoundTripKeepsBinaryStrings) {
  LuaState L;
  auto bytes = encode(L, R"({blob = "\0\255\1\128abc"})");
  ASSERT_TRUE(bytes);
  ASSERT_TRUE(push_msgpack(L, *bytes));
  lua_getfield(L, -1, "blob");
  std::size_t len = 0;
  const char *s = lua_tolstring(L, -1, &len);
  EXPECT_EQ(std::string(s, len), std::string("\0\377\1\200abc", 7));
  lua_pop(L, 2);
}

TEST(Codec, EmptyTableIsAnEmptyMap) {
  LuaState L;
  auto bytes = encode(L, "{}");
  ASSERT_TRUE(bytes);
  EXPECT_EQ(*bytes, "\x80");
  EXPECT_EQ(to_json(L, "{}"), "{}");
}

TEST(Codec, TopLevelNilIsMsgpackNil) {
  LuaState L;
  auto bytes = encode(L, "nil");
  ASSERT_TRUE(bytes);
  EXPECT_EQ(*bytes, "\xc0");
  EXPECT_EQ(decode_error(L, "\xc0"), "");
}

TEST(Codec, MapKeysAreSortedSoEqualTablesGiveEqualBytes) {
  LuaState L;
  auto a = encode(L, "{b = 1, a = 2, c = 3}");
  auto b = encode(L, "{c = 3, a = 2, b = 1}");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
}

TEST(Codec, RejectsFunctionWithPath) {
  LuaState L;
  EXPECT_EQ(encode_error(L, "{fabric = {handler = function() end}}"),
            "jobinfo.fabric.handler: a function cannot be saved");
  EXPECT_EQ(encode_error(L, "{fabric = {vlans = {101, print}}}"),
            "jobinfo.fabric.vlans[2]: a function cannot be saved");
}

TEST(Codec, RejectsWithBracketPathForNonIdentifierKey) {
  LuaState L;
  EXPECT_EQ(encode_error(L, R"({["a b"] = print})"),
            R"(jobinfo["a b"]: a function cannot be saved)");
  EXPECT_EQ(encode_error(L, R"({["1x"] = {["q\""] = print}})"),
            R"(jobinfo["1x"]["q\""]: a function cannot be saved)");
}

TEST(Codec, RejectsUserdataThreadAndLightUserdata) {
  LuaState L;
  EXPECT_EQ(encode_error(L, "{f = io.stdout}"), "jobinfo.f: a userdata cannot be saved");
  EXPECT_EQ(encode_error(L, "{co = coroutine.create(print)}"),
            "jobinfo.co: a thread (coroutine) cannot be saved");
  lua_pushlightuserdata(L, &L);
  auto r = encode_lua(L, -1, "jobinfo");
  lua_pop(L, 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "jobinfo: a light userdata cannot be saved");
}

TEST(Codec, RejectsNanAndInfinities) {
  LuaState L;
  EXPECT_EQ(encode_error(L, "{x = 0/0}"), "jobinfo.x: the number nan cannot be saved");
  EXPECT_EQ(encode_error(L, "{x = 1/0}"), "jobinfo.x: the number inf cannot be saved");
  EXPECT_EQ(encode_error(L, "{x = {-1/0}}"), "jobinfo.x[1]: the number -inf cannot be saved");
}

TEST(Codec, RejectsTableWithMetatable) {
  LuaState L;
  EXPECT_EQ(encode_error(L, "{t = setmetatable({}, {})}"),
            "jobinfo.t: a table with a metatable cannot be saved");
}

TEST(Codec, RejectsMixedTable) {
  LuaState L;
  EXPECT_EQ(encode_error(L, "{t = {1, a = 2}}"),
            "jobinfo.t: a table with both string and integer keys cannot be saved");
}

TEST(Codec, RejectsSparseArray) {
  LuaState L;
  EXPECT_EQ(encode_error(L, "{t = {[1] = 1, [3] = 3}}"),
            "jobinfo.t: an array with holes (key 3 but only 2 integer keys) cannot be saved");
}

TEST(Codec, RejectsNonPositiveIntegerKey) {
  LuaState L;
  EXPECT_EQ(encode_error(L, "{t = {[0] = 1}}"),
            "jobinfo.t: a table with the integer key 0 cannot be saved");
  EXPECT_EQ(encode_error(L, "{t = {[-2] = 1}}"),
            "jobinfo.t: a table with the integer key -2 cannot be saved");
}

TEST(Codec, RejectsFloatBooleanAndTableKeys) {
  LuaState L;
  EXPECT_EQ(encode_error(L, "{t = {[1.5] = 1}}"),
            "jobinfo.t: a table with the float key 1.5 cannot be saved");
  EXPECT_EQ(encode_error(L, "{t = {[true] = 1}}"),
            "jobinfo.t: a table with a boolean key cannot be saved");
  EXPECT_EQ(encode_error(L, "{t = {[{}] = 1}}"),
            "jobinfo.t: a table with a table key cannot be saved");
}

TEST(Codec, RejectsCycleNamingTheEnclosingTable) {
  LuaState L;
  L.run("t = {a = {}}; t.a.self = t.a; u = {}; u.me = u");
  EXPECT_EQ(encode_error(L, "t"),
            "jobinfo.a.self: a reference back to an enclosing table (jobinfo.a) cannot be saved");
  EXPECT_EQ(encode_error(L, "u"),
            "jobinfo.me: a reference back to an enclosing table (jobinfo) cannot be saved");
}

TEST(Codec, AcceptsTheSameTableOnTwoBranches) {
  LuaState L;
  L.run("s = {1, 2}");
  EXPECT_EQ(round_trip_json(L, "{x = s, y = s}"), R"({"x":[1,2],"y":[1,2]})");
}

TEST(Codec, RejectsDepthBeyondLimit) {
  LuaState L;
  EXPECT_EQ(encode_error(L, nested(32)), "");
  std::string path = "jobinfo";
  for (int i = 0; i < 32; ++i)
    path += "[1]";
  EXPECT_EQ(encode_error(L, nested(33)),
            path + ": a table nested deeper than 32 levels cannot be saved");
  EXPECT_EQ(encode_error(L, nested(3), {.max_depth = 2}),
            "jobinfo[1][1]: a table nested deeper than 2 levels cannot be saved");
}

TEST(Codec, RejectsOutputBeyondSizeLimit) {
  LuaState L;
  EXPECT_EQ(encode_error(L, "{s = string.rep('x', 70000)}"),
            "jobinfo.s: the encoded value exceeds the limit of 65536 bytes");
  // More entries than bytes allowed: refused before walking them.
  EXPECT_EQ(encode_error(L, "{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}", {.max_bytes = 8}),
            "jobinfo: the encoded value exceeds the limit of 8 bytes");
  EXPECT_EQ(encode_error(L, "{'aaaa', 'bbbb', 'cccc'}", {.max_bytes = 10}),
            "jobinfo[2]: the encoded value exceeds the limit of 10 bytes");
  EXPECT_EQ(encode_error(L, "{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}", {.max_bytes = 11}), "");
}

TEST(Codec, StackHeightUnchangedOnEveryReturn) {
  LuaState L;
  lua_pushinteger(L, 7); // something below, must survive
  for (const char *expr : {"{a = {1, 2, {b = 3}}}", "{a = {1, print}}", "{t = {1, x = 1}}"}) {
    L.push(expr);
    (void)encode_lua(L, -1, "jobinfo");
    (void)lua_to_json(L, -1, "value");
    EXPECT_EQ(lua_gettop(L), 2) << expr;
    lua_pop(L, 1);
  }
  EXPECT_EQ(lua_tointeger(L, 1), 7);
}

TEST(Codec, ToJsonIsCompactWithSortedKeys) {
  LuaState L;
  EXPECT_EQ(to_json(L, R"({b = 1, a = {true, false}, c = "x\"y\n", d = 2.0})"),
            R"({"a":[true,false],"b":1,"c":"x\"y\n","d":2.0})");
  EXPECT_EQ(to_json(L, "nil"), "null");
  EXPECT_EQ(to_json(L, "'héllo'"), "\"héllo\"");
}

TEST(Codec, ToJsonRejectsInvalidUtf8WithPath) {
  LuaState L;
  EXPECT_EQ(to_json(L, R"({a = {"ok", "\255"}})"),
            "value.a[2]: a string that is not valid UTF-8 cannot be converted");
  EXPECT_EQ(to_json(L, R"("\xed\xa0\x80")"),
            "value: a string that is not valid UTF-8 cannot be converted"); // a surrogate
  EXPECT_EQ(to_json(L, R"("\xc0\x80")"),
            "value: a string that is not valid UTF-8 cannot be converted"); // overlong NUL
}

TEST(Codec, ToJsonRejectsFunctionWithPath) {
  LuaState L;
  EXPECT_EQ(to_json(L, "{a = {1, print}}"), "value.a[2]: a function cannot be converted");
}

TEST(Codec, PushMsgpackRejectsEmptyTruncatedAndTrailingInput) {
  LuaState L;
  auto bytes = encode(L, "{a = 'hello', b = {1, 2}}");
  ASSERT_TRUE(bytes);
  EXPECT_EQ(decode_error(L, ""), "msgpack: empty input");
  EXPECT_EQ(decode_error(L, bytes->substr(0, bytes->size() - 1)),
            "msgpack: truncated value (13 bytes)");
  EXPECT_EQ(decode_error(L, *bytes + "\x01"), "msgpack: 1 trailing bytes after the value");
  EXPECT_EQ(decode_error(L, *bytes), "");
}

TEST(Codec, PushMsgpackRejectsMalformedInput) {
  LuaState L;
  EXPECT_EQ(decode_error(L, "\xc1"), "msgpack: malformed value (parse error)");
  // An array header claiming 4 billion elements: refused, not allocated.
  EXPECT_EQ(decode_error(L, std::string("\xdd\xff\xff\xff\xff\x01", 6)),
            "msgpack: malformed value (array size overflow)");
}

TEST(Codec, PushMsgpackRejectsNonStringMapKey) {
  LuaState L;
  EXPECT_EQ(decode_error(L, "\x81\x01\x02"), "msgpack: value: a map key that is not a string");
  EXPECT_EQ(decode_error(L, "\x81\xa1"
                            "a\x81\xc3\x01"),
            "msgpack: value.a: a map key that is not a string");
}

TEST(Codec, PushMsgpackRejectsDuplicateKey) {
  LuaState L;
  EXPECT_EQ(decode_error(L, "\x82\xa1"
                            "a\x01\xa1"
                            "a\x02"),
            "msgpack: value: the key \"a\" appears twice");
}

TEST(Codec, PushMsgpackAllowsNilOnlyAsTheWholeValue) {
  LuaState L;
  EXPECT_EQ(decode_error(L, "\xc0"), "");
  EXPECT_EQ(decode_error(L, "\x92\x01\xc0"),
            "msgpack: value[2]: nil is only allowed as the whole value");
  EXPECT_EQ(decode_error(L, "\x81\xa1k\xc0"),
            "msgpack: value.k: nil is only allowed as the whole value");
}

TEST(Codec, PushMsgpackRejectsExtensionNanAndHugeUnsigned) {
  LuaState L;
  EXPECT_EQ(decode_error(L, std::string("\xd4\x01\x00", 3)),
            "msgpack: value: an extension value is not allowed");
  EXPECT_EQ(decode_error(L, std::string("\xcb\x7f\xf8\0\0\0\0\0\0", 9)),
            "msgpack: value: the number nan is not allowed");
  EXPECT_EQ(decode_error(L, "\xcf\xff\xff\xff\xff\xff\xff\xff\xff"),
            "msgpack: value: the integer 18446744073709551615 is out of Lua's range");
}

TEST(Codec, PushMsgpackRejectsDepthBeyondLimit) {
  LuaState L;
  auto arrays = [](int n) { return std::string(n, '\x91') + "\x01"; };
  EXPECT_EQ(decode_error(L, arrays(32)), "");
  std::string path = "value";
  for (int i = 0; i < 32; ++i)
    path += "[1]";
  EXPECT_EQ(decode_error(L, arrays(33)), "msgpack: " + path + ": nested deeper than 32 levels");
  EXPECT_EQ(decode_error(L, arrays(200)), "msgpack: nested deeper than 32 levels");
}

TEST(Codec, PushMsgpackDecodesBinAsStringAndFloat32AsFloat) {
  LuaState L;
  ASSERT_TRUE(push_msgpack(L, std::string("\x92\xc4\x02\x00\xff\xca\x3f\x00\x00\x00", 10)));
  lua_setglobal(L, "t");
  L.push("#t[1] .. ' ' .. math.type(t[2]) .. ' ' .. t[2]");
  EXPECT_STREQ(lua_tostring(L, -1), "2 float 0.5");
}

TEST(Codec, MsgpackToJsonShowsEncodedValue) {
  LuaState L;
  auto bytes = encode(L, "{fabric = {vlans = {101, 102}}, f = 2.0, s = 'x'}");
  ASSERT_TRUE(bytes);
  auto json = msgpack_to_json(*bytes);
  ASSERT_TRUE(json);
  EXPECT_EQ(*json, R"({"f":2.0,"fabric":{"vlans":[101,102]},"s":"x"})");
}

TEST(Codec, MsgpackToJsonReplacesInvalidUtf8AndShowsOtherKeys) {
  auto json = msgpack_to_json("\x82\x01\xa1"
                              "a\xa1"
                              "b\xa1\xff");
  ASSERT_TRUE(json);
  EXPECT_EQ(*json, "{\"1\":\"a\",\"b\":\"\xef\xbf\xbd\"}");
  auto bad = msgpack_to_json("\x92\x01");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "msgpack: truncated value (2 bytes)");
}

} // namespace
} // namespace switchlua
