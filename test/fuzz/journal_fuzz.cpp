// SPDX-License-Identifier: GPL-2.0-or-later
//
// libFuzzer target: the journal decoder (a whole journal image and one
// record body) must never crash; a body that decodes re-encodes to one
// that decodes the same; a scan never reports more good bytes than given.
#include "ctld/journal.hpp"

#include <cstdint>
#include <cstdlib>

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
  return 0;
}
