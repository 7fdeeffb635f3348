// SPDX-License-Identifier: GPL-2.0-or-later
//
// The frame codec: round trips of every frame type, and the strict decoder's
// refusals (each an Error, never a crash).
#include "supervisor/protocol.hpp"

#include <gtest/gtest.h>
#include <msgpack.hpp>

using namespace switchlua;

namespace {

/// A frame body built by hand, for the refusal tests: a map of integer or
/// string fields, in the given order.
using Field = std::pair<std::string, std::variant<std::int64_t, std::string>>;
std::string body_of(const std::vector<Field> &fields) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(&buf);
  pk.pack_map(static_cast<std::uint32_t>(fields.size()));
  for (const auto &[k, v] : fields) {
    pk.pack(k);
    std::visit([&pk](const auto &x) { pk.pack(x); }, v);
  }
  return std::string(buf.data(), buf.size());
}

std::string with_prefix(const std::string &body) {
  const auto n = static_cast<std::uint32_t>(body.size());
  std::string out{static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                  static_cast<char>(n)};
  return out + body;
}

Frame round_trip(const Frame &f) {
  FrameDecoder d;
  d.feed(encode_frame(f));
  auto r = d.next();
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  EXPECT_TRUE(r && r->has_value());
  EXPECT_FALSE(d.has_partial());
  return **r;
}

HookReturn sample_return() {
  HookReturn r;
  r.hook = Hook::JobStart;
  r.rc = -1;
  r.jobinfo = std::string("\x81\xa1k\x01", 4);
  r.jobinfo_error = "";
  r.has_env = true;
  r.env = {{EnvOp::Kind::Set, "A", "1"}, {EnvOp::Kind::Unset, "B", ""}};
  r.warnings = {"skipped x"};
  return r;
}

} // namespace

TEST(Protocol, RequestRoundTrips) {
  RequestFrame in{
      7, "/etc/slurm/switch.lua", Hook::JobComplete, std::string("\x80", 1), std::string("\xc0", 1),
      12};
  auto out = std::get<RequestFrame>(round_trip(in));
  EXPECT_EQ(out.id, 7u);
  EXPECT_EQ(out.script, in.script);
  EXPECT_EQ(out.hook, Hook::JobComplete);
  EXPECT_EQ(out.job, in.job);
  EXPECT_EQ(out.jobinfo, in.jobinfo);
  EXPECT_EQ(out.timeout_s, 12u);
  EXPECT_EQ(out.lane, Lane::Batch);
  in.jobinfo.reset();
  EXPECT_FALSE(std::get<RequestFrame>(round_trip(in)).jobinfo.has_value());
  for (Lane l : {Lane::Teardown, Lane::Interactive, Lane::Batch}) {
    in.lane = l;
    EXPECT_EQ(std::get<RequestFrame>(round_trip(in)).lane, l) << lane_name(l);
  }
}

TEST(Protocol, RequestEpochRoundTripsAndIsAbsentWhenZero) {
  RequestFrame in{3, "/s.lua", Hook::JobStart, std::string("\x80", 1), std::nullopt, 5};
  const std::string without = encode_frame(in);
  EXPECT_EQ(without.find("epoch"), std::string::npos); // optional on the wire
  auto plain = std::get<RequestFrame>(round_trip(in));
  EXPECT_EQ(plain.epoch, 0u);
  EXPECT_EQ(plain.epoch_file, "");
  in.epoch = 41;
  in.epoch_file = "/var/spool/slurmctld/switch_lua.journal.epoch";
  auto out = std::get<RequestFrame>(round_trip(in));
  EXPECT_EQ(out.epoch, 41u);
  EXPECT_EQ(out.epoch_file, in.epoch_file);
  EXPECT_EQ(out.timeout_s, 5u);
}

TEST(Protocol, LaneOfACall) {
  EXPECT_EQ(lane_of(Hook::JobStart, true), Lane::Batch);
  EXPECT_EQ(lane_of(Hook::JobStart, false), Lane::Interactive);
  EXPECT_EQ(lane_of(Hook::JobComplete, true), Lane::Teardown);
  EXPECT_EQ(lane_of(Hook::JobComplete, false), Lane::Teardown);
  EXPECT_EQ(lane_of(Hook::BlockJobComplete, false), Lane::Teardown);
  EXPECT_EQ(lane_of(Hook::SetupSpecialSteps, false), Lane::Teardown);
}

TEST(Protocol, ReservedSlotsLeaveRoomForTeardownAndInteractive) {
  EXPECT_EQ(reserved_slots(1), 0u);
  EXPECT_EQ(reserved_slots(2), 1u);
  EXPECT_EQ(reserved_slots(16), 2u);
  EXPECT_EQ(reserved_slots(512), 64u);
  EXPECT_EQ(reserved_slots(4096), 512u);
}

TEST(Protocol, StartedRoundTrips) {
  auto out = std::get<StartedFrame>(round_trip(StartedFrame{5, 1234}));
  EXPECT_EQ(out.id, 5u);
  EXPECT_EQ(out.queued_ms, 1234);
}

TEST(DecodeBody, UnknownLaneIsRefused) {
  RequestFrame in{1, "/s.lua", Hook::JobStart, std::string("\x80", 1), std::nullopt, 5};
  std::string body = encode_frame(in).substr(4);
  const auto at = body.find("batch");
  ASSERT_NE(at, std::string::npos);
  body.replace(at, 5, "bulky");
  auto r = decode_body(body);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "protocol: request frame: unknown lane 'bulky'");
}

TEST(Protocol, LogRoundTrips) {
  auto out = std::get<LogFrame>(round_trip(LogFrame{3, LogLevel::Debug2, "a\0b"}));
  EXPECT_EQ(out.id, 3u);
  EXPECT_EQ(out.level, LogLevel::Debug2);
  EXPECT_EQ(out.text, "a\0b");
}

TEST(Protocol, ResultRoundTripsWithEveryHookReturnField) {
  ResultFrame in;
  in.kind = ResultFrame::Kind::Returned;
  in.ret = sample_return();
  auto out = std::get<ResultFrame>(round_trip(in));
  EXPECT_EQ(out.kind, ResultFrame::Kind::Returned);
  EXPECT_EQ(out.ret.rc, -1);
  EXPECT_EQ(out.ret.jobinfo, in.ret.jobinfo);
  EXPECT_TRUE(out.ret.has_env);
  EXPECT_EQ(out.ret.env, in.ret.env);
  EXPECT_EQ(out.ret.warnings, in.ret.warnings);
  in.kind = ResultFrame::Kind::LoadFailed;
  in.message = "x.lua:1: unexpected symbol";
  out = std::get<ResultFrame>(round_trip(in));
  EXPECT_EQ(out.kind, ResultFrame::Kind::LoadFailed);
  EXPECT_EQ(out.message, in.message);
}

// Issue 20: job_complete's nodes travel only when it named some; an
// empty list is not nil.
TEST(Protocol, JobCompleteNodesRoundTripAndAreAbsentWhenNil) {
  ResultFrame in;
  in.kind = ResultFrame::Kind::Returned;
  in.ret.hook = Hook::JobComplete;
  in.ret.rc = -1;
  EXPECT_EQ(encode_frame(in).find("nodes"), std::string::npos);
  EXPECT_EQ(std::get<ResultFrame>(round_trip(in)).ret.nodes, std::nullopt);
  in.ret.nodes = std::vector<std::string>{};
  EXPECT_EQ(std::get<ResultFrame>(round_trip(in)).ret.nodes, std::vector<std::string>{});
  in.ret.nodes = std::vector<std::string>{"node2", "node3"};
  EXPECT_EQ(std::get<ResultFrame>(round_trip(in)).ret.nodes, in.ret.nodes);
}

TEST(Protocol, ResultSaysWhetherTheRunnerWasChildlessAndAnOlderFrameSaysNo) {
  ResultFrame in;
  in.childless = true;
  EXPECT_TRUE(std::get<ResultFrame>(round_trip(in)).childless);
  in.childless = false; // not on the wire: what an older runner sends
  const std::string wire = encode_frame(in);
  EXPECT_EQ(wire.find("childless"), std::string::npos);
  EXPECT_FALSE(std::get<ResultFrame>(round_trip(in)).childless);
}

TEST(Protocol, OutcomeRoundTripsWithEveryField) {
  OutcomeFrame in;
  in.id = 99;
  in.outcome.kind = OutcomeKind::TimedOut;
  in.outcome.late_return = sample_return();
  in.outcome.late_exit = false;
  in.outcome.exit_status = 3;
  in.outcome.signal = 9;
  in.outcome.message = "m";
  in.outcome.escapees = {10, 20};
  in.outcome.elapsed = std::chrono::milliseconds(2001);
  in.outcome.queued = std::chrono::milliseconds(77);
  auto out = std::get<OutcomeFrame>(round_trip(in));
  EXPECT_EQ(out.id, 99u);
  EXPECT_EQ(out.outcome.kind, OutcomeKind::TimedOut);
  ASSERT_TRUE(out.outcome.late_return.has_value());
  EXPECT_EQ(out.outcome.late_return->env, in.outcome.late_return->env);
  EXPECT_EQ(out.outcome.exit_status, 3);
  EXPECT_EQ(out.outcome.signal, 9);
  EXPECT_EQ(out.outcome.escapees, (std::vector<pid_t>{10, 20}));
  EXPECT_EQ(out.outcome.elapsed.count(), 2001);
  EXPECT_EQ(out.outcome.queued.count(), 77);
  EXPECT_EQ(out.outcome.script_hash, "") << "absent on the wire: unknown";
  in.outcome.script_hash = "fnv1a64:0123456789abcdef";
  out = std::get<OutcomeFrame>(round_trip(in));
  EXPECT_EQ(out.outcome.script_hash, "fnv1a64:0123456789abcdef");
}

TEST(FrameDecoder, ByteByByteFeedingYieldsFramesInOrder) {
  const std::string wire = encode_frame(LogFrame{1, LogLevel::Info, "one"}) +
                           encode_frame(LogFrame{2, LogLevel::Error, "two"});
  FrameDecoder d;
  std::vector<std::string> texts;
  for (char c : wire) {
    d.feed(std::string_view(&c, 1));
    auto r = d.next();
    ASSERT_TRUE(r.has_value());
    if (*r)
      texts.push_back(std::get<LogFrame>(**r).text);
  }
  EXPECT_EQ(texts, (std::vector<std::string>{"one", "two"}));
  EXPECT_FALSE(d.has_partial());
}

TEST(FrameDecoder, TruncatedFrameWaitsAndReportsPartial) {
  const std::string wire = encode_frame(LogFrame{1, LogLevel::Info, "hello"});
  FrameDecoder d;
  d.feed(wire.substr(0, wire.size() - 1));
  auto r = d.next();
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->has_value());
  EXPECT_TRUE(d.has_partial());
}

TEST(FrameDecoder, OversizedLengthIsRefusedBeforeBuffering) {
  FrameDecoder d;
  d.feed(std::string("\x7f\xff\xff\xff", 4));
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("limit"), std::string::npos);
}

TEST(DecodeBody, TruncatedBodyIsAnError) {
  std::string body = encode_frame(LogFrame{1, LogLevel::Info, "hello"}).substr(4);
  body.pop_back();
  auto r = decode_body(body);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "protocol: truncated frame (35 bytes)");
}

TEST(DecodeBody, OtherVersionIsRefused) {
  auto r = decode_body(body_of({{"v", 1}, {"t", std::string("log")}}));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "protocol: frame version 1, expected 2");
}

TEST(DecodeBody, UnknownTypeIsRefused) {
  auto r = decode_body(body_of({{"v", 2}, {"t", std::string("hello")}}));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "protocol: unknown frame type 'hello'");
}

TEST(DecodeBody, MissingFieldIsNamed) {
  auto r = decode_body(body_of({{"v", 2}, {"t", std::string("log")}, {"id", 1}}));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "protocol: log frame: field 'level' missing");
}

TEST(DecodeBody, WrongFieldTypeIsNamed) {
  auto r = decode_body(body_of({{"v", 2},
                                {"t", std::string("log")},
                                {"id", std::string("7")},
                                {"level", std::string("info")},
                                {"text", std::string("x")}}));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "protocol: log frame: field 'id' is a string, expected an unsigned integer");
}

TEST(DecodeBody, NonMapAndGarbageAndTrailingBytesAreErrors) {
  msgpack::sbuffer arr;
  msgpack::pack(arr, std::vector<int>{1, 2});
  EXPECT_FALSE(decode_body(std::string(arr.data(), arr.size())).has_value());
  EXPECT_FALSE(decode_body(std::string("\xc1\xc1\xc1", 3)).has_value()); // reserved byte
  EXPECT_FALSE(decode_body("").has_value());
  const std::string ok = encode_frame(LogFrame{1, LogLevel::Info, "x"}).substr(4);
  auto r = decode_body(ok + "\x01");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "protocol: 1 trailing bytes after the frame");
}

TEST(DecodeBody, HugeDeclaredContainerIsRefusedWithoutAllocating) {
  // A map header announcing 2^32-1 entries in a 5-byte body.
  auto r = decode_body(std::string("\xdf\xff\xff\xff\xff", 5));
  EXPECT_FALSE(r.has_value());
}

TEST(DecodeBody, PrefixedWrongTypeStreamClosesWithError) {
  FrameDecoder d;
  d.feed(with_prefix(body_of({{"v", 2}, {"t", std::string("outcome")}})));
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("outcome frame"), std::string::npos);
}
