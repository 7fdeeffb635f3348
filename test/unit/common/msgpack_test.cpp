// SPDX-License-Identifier: GPL-2.0-or-later
//
// common/msgpack_write.hpp and the map reader and type names of
// common/msgpack_read.hpp: the bytes written, and each error the reader
// keeps (the first one only).
#include "common/msgpack_read.hpp"
#include "common/msgpack_write.hpp"

#include <gtest/gtest.h>

using namespace switchlua;

namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

template <typename F> std::string packed(F f) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  f(pk);
  return std::string(buf.data(), buf.size());
}

/// The map {"u": 7, "n": -3, "b": true, "s": "text", "x": bin "\0\1",
/// "nil": nil, "a": [1, 2], 5: "int key"}.
std::string sample() {
  return packed([](Packer &pk) {
    pk.pack_map(8);
    pack_str(pk, "u");
    pk.pack(7);
    pack_str(pk, "n");
    pk.pack(-3);
    pack_str(pk, "b");
    pk.pack(true);
    pack_str(pk, "s");
    pack_str(pk, "text");
    pack_str(pk, "x");
    pack_bin(pk, std::string("\0\1", 2));
    pack_str(pk, "nil");
    pk.pack_nil();
    pack_str(pk, "a");
    pk.pack_array(2);
    pk.pack(1);
    pk.pack(2);
    pk.pack(5);
    pack_str(pk, "int key");
  });
}

msgpack::object_handle unpacked(const std::string &bytes) {
  auto oh = unpack_one(bytes, limits_for_size(bytes.size(), 4), "map");
  EXPECT_TRUE(oh);
  return std::move(*oh);
}

} // namespace

TEST(MsgpackWrite, StrAndBinHaveTheirOwnHeaders) {
  EXPECT_EQ(packed([](Packer &pk) { pack_str(pk, "ab"); }), "\xa2"
                                                            "ab");
  EXPECT_EQ(packed([](Packer &pk) { pack_bin(pk, "ab"); }), "\xc4\x02"
                                                            "ab");
  EXPECT_EQ(packed([](Packer &pk) { pack_opt_bin(pk, std::nullopt); }), "\xc0");
  EXPECT_EQ(packed([](Packer &pk) { pack_opt_bin(pk, std::string("ab")); }), "\xc4\x02"
                                                                             "ab");
  const std::string long_text(300, 'x'); // str 16: 0xda, 2 length bytes
  EXPECT_EQ(packed([&](Packer &pk) { pack_str(pk, long_text); }),
            std::string("\xda\x01\x2c", 3) + long_text);
}

TEST(MapReader, ReadsEachTypedField) {
  auto oh = unpacked(sample());
  MapReader r(oh.get(), "test");
  EXPECT_EQ(r.u64("u"), 7u);
  EXPECT_EQ(r.i64("u"), 7);
  EXPECT_EQ(r.i64("n"), -3);
  EXPECT_EQ(r.i32("n"), -3);
  EXPECT_TRUE(r.flag("b"));
  EXPECT_EQ(r.str("s"), "text");
  EXPECT_EQ(r.bin("x"), std::string("\0\1", 2));
  EXPECT_EQ(r.opt_bin("x"), std::string("\0\1", 2));
  EXPECT_EQ(r.opt_bin("nil"), std::nullopt);
  EXPECT_EQ(r.opt_str("s"), "text");
  EXPECT_EQ(r.opt_str("absent"), std::nullopt);
  ASSERT_EQ(r.array("a").size(), 2u);
  EXPECT_EQ(r.array("a")[1]->via.u64, 2u);
  EXPECT_EQ(r.get("absent", false), nullptr);
  EXPECT_FALSE(r.error) << *r.error;
}

TEST(MapReader, KeepsTheFirstErrorWithItsPrefix) {
  auto oh = unpacked(sample());
  auto first_error = [&](auto read) {
    MapReader r(oh.get(), "switch/lua test");
    read(r);
    r.u64("also-missing"); // a later problem does not replace the first
    return r.error.value_or("(none)");
  };
  EXPECT_EQ(first_error([](MapReader &r) { r.u64("missing"); }),
            "switch/lua test: field 'missing' missing");
  EXPECT_EQ(first_error([](MapReader &r) { r.u64("n"); }),
            "switch/lua test: field 'n' is an integer, expected an unsigned integer");
  EXPECT_EQ(first_error([](MapReader &r) { r.str("x"); }),
            "switch/lua test: field 'x' is binary data, expected a string");
  EXPECT_EQ(first_error([](MapReader &r) { r.opt_bin("s"); }),
            "switch/lua test: field 's' is a string, expected binary data or nil");
  EXPECT_EQ(first_error([](MapReader &r) { r.opt_str("u"); }),
            "switch/lua test: field 'u' is an integer, expected a string");
  EXPECT_EQ(first_error([](MapReader &r) { r.flag("nil"); }),
            "switch/lua test: field 'nil' is nil, expected a boolean");
  EXPECT_EQ(first_error([](MapReader &r) { r.set_error("own words"); }),
            "switch/lua test: own words");
}

TEST(MapReader, RefusesOutOfRangeIntegers) {
  const std::string big = packed([](Packer &pk) {
    pk.pack_map(2);
    pack_str(pk, "huge");
    pk.pack(std::uint64_t{1} << 63);
    pack_str(pk, "wide");
    pk.pack(std::int64_t{1} << 40);
  });
  auto oh = unpacked(big);
  MapReader r(oh.get(), "t");
  EXPECT_EQ(r.i64("huge"), 0);
  EXPECT_EQ(r.error, "t: field 'huge' is out of range");
  MapReader w(oh.get(), "t");
  EXPECT_EQ(w.i64("wide"), std::int64_t{1} << 40);
  EXPECT_EQ(w.i32("wide"), 0);
  EXPECT_EQ(w.error, "t: field 'wide' is out of range");
}

TEST(MapReader, ANonMapIsAnErrorAndEveryGetterADefault) {
  const std::string arr = packed([](Packer &pk) { pk.pack_array(0); });
  auto oh = unpacked(arr);
  MapReader r(oh.get(), "t");
  EXPECT_EQ(r.error, "t: is an array, expected a map");
  EXPECT_EQ(r.str("s"), "");
  EXPECT_EQ(r.get("s"), nullptr);
}

TEST(MsgpackTypeName, OneWordForEachType) {
  using msgpack::type::object_type;
  EXPECT_EQ(msgpack_type_name(object_type::NIL), "nil");
  EXPECT_EQ(msgpack_type_name(object_type::BOOLEAN), "a boolean");
  EXPECT_EQ(msgpack_type_name(object_type::POSITIVE_INTEGER), "an integer");
  EXPECT_EQ(msgpack_type_name(object_type::NEGATIVE_INTEGER), "an integer");
  EXPECT_EQ(msgpack_type_name(object_type::FLOAT64), "a float");
  EXPECT_EQ(msgpack_type_name(object_type::STR), "a string");
  EXPECT_EQ(msgpack_type_name(object_type::BIN), "binary data");
  EXPECT_EQ(msgpack_type_name(object_type::ARRAY), "an array");
  EXPECT_EQ(msgpack_type_name(object_type::MAP), "a map");
  EXPECT_EQ(msgpack_type_name(object_type::EXT), "an extension value");
}
