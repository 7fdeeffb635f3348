// SPDX-License-Identifier: GPL-2.0-or-later
//
// libFuzzer target: the journal decoder (a whole journal image and one
// record body) must never crash; a body that decodes re-encodes to one
// that decodes the same; a scan never reports more good bytes than given.
// Damage (issue 24): the good records of the input, framed again, are cut
// at a point the input chooses (a crash during an append: a torn tail that
// keeps exactly the whole records before the cut, never "corrupt"), and
// get one byte of a record's body flipped while more records follow (a bad
// record in the middle: always corrupt, the records before it kept).
#include "ctld/journal.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check_damage(const std::vector<switchlua::JournalRecord> &records, std::size_t seed) {
  if (records.empty())
    return;
  std::string clean(switchlua::kJournalHeader);
  std::vector<std::size_t> ends; // offset after each record
  for (const auto &r : records) {
    clean += switchlua::frame_journal_record(r);
    ends.push_back(clean.size());
  }
  // A torn tail: every cut is Clean (on a record boundary) or TornTail.
  const std::size_t cut = seed % (clean.size() + 1);
  auto torn = switchlua::scan_journal(std::string_view(clean).substr(0, cut));
  if (torn.status == switchlua::JournalScan::Status::Corrupt)
    std::abort();
  std::size_t whole = 0;
  while (whole < ends.size() && ends[whole] <= cut)
    ++whole;
  if (torn.records.size() != whole)
    std::abort();
  for (std::size_t i = 0; i < whole; ++i)
    if (!(torn.records[i] == records[i]))
      std::abort();
  // A bad record in the middle: a body byte of a record that is not the
  // last one.
  if (records.size() < 2)
    return;
  const std::size_t victim = seed % (records.size() - 1);
  const std::size_t start = victim == 0 ? switchlua::kJournalHeader.size() : ends[victim - 1];
  const std::size_t body = start + 8; // u32 length, u32 crc
  const std::size_t len = ends[victim] - body;
  if (len == 0)
    return;
  std::string bad = clean;
  bad[body + (seed / 7) % len] ^= static_cast<char>(1 + seed % 255);
  auto mid = switchlua::scan_journal(bad);
  if (mid.status != switchlua::JournalScan::Status::Corrupt || mid.records.size() != victim)
    std::abort();
}

/// Records of every shape, so that the damage checks run on every input,
/// whether or not it holds whole records of its own.
const std::vector<switchlua::JournalRecord> &samples() {
  static const std::vector<switchlua::JournalRecord> s = [] {
    using switchlua::JournalKind;
    switchlua::JobArgs j;
    j.job_id = 7;
    j.nodes = "node[1-2]";
    j.node_names = {"node1", "node2"};
    j.num_nodes = 2;
    j.network = "fabric";
    j.submit_time = 1700000007;
    j.attempt = 100;
    const std::string info = "\x81\xa1x\x01";
    return std::vector<switchlua::JournalRecord>{
        {.kind = JournalKind::SetupStarted, .attempt = 100, .job_id = 7, .job = j},
        {.kind = JournalKind::SetupAccepted, .attempt = 100, .job_id = 7, .jobinfo = info},
        {.kind = JournalKind::LaunchReleased, .attempt = 100, .job_id = 7},
        {.kind = JournalKind::TeardownStarted, .attempt = 100, .job_id = 7, .jobinfo = info},
        {.kind = JournalKind::Forgotten, .attempt = 100, .job_id = 7},
        {.kind = JournalKind::SetupFailureCounted, .job_id = 8, .failures = 2, .restart_count = 1},
    };
  }();
  return s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  auto d = switchlua::decode_journal_body(bytes);
  if (d) {
    auto again = switchlua::decode_journal_body(switchlua::encode_journal_body(*d));
    if (!again || !(*again == *d))
      std::abort();
  }
  // As a file: the header, then the input as framed records.
  std::string image(switchlua::kJournalHeader);
  image.append(bytes);
  auto scan = switchlua::scan_journal(image);
  if (scan.good_bytes > image.size())
    std::abort();
  switchlua::JournalTable t;
  for (const auto &r : scan.records)
    t.apply(r);
  std::size_t seed = size;
  for (std::size_t i = 0; i < size && i < 8; ++i)
    seed = seed * 131 + data[i];
  check_damage(scan.records, seed);
  check_damage(samples(), seed);
  if (d)
    check_damage({*d, *d, *d}, seed);
  return 0;
}
