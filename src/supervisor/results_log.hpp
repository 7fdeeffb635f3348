// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/results_log.hpp
//
// The supervisor's results files (issue 40; switch.lua(5), HIGH
// AVAILABILITY).  switch-lua-supervisor is a process of its own: while its
// slurmctld is stopped (SIGSTOP, a paused VM, a host that hangs) it goes on
// running the calls already queued.  A call that ends then has a result that
// only the stopped slurmctld would read; if that slurmctld is killed instead
// of continued (the usual fencing), the result never reaches the journal
// and the next controller would run the call again: a teardown twice, a
// setup undone with nil and set up again.  So the supervisor records each
// job_start and job_complete that returned, appended and fdatasync'ed,
// BEFORE it sends the outcome, and a slurmctld that takes control reads
// the records and adds to its journal what they prove (ctld/adopt_results.hpp).
//
// Files: <journal>.results.<epoch>.<segment> under StateSaveLocation, one
// per control period and segment; the controller names the file in each
// request (RequestFrame::results_file), starts a new segment every 30 s
// (ctld/core.hpp, CoreOptions::results_segment), and removes a segment once every result in it is
// durable in its journal; a controller that takes control reads every
// results file there is and removes them once their records are durable in
// its journal.  At most a few segments exist while a controller runs.
//
// File layout (no header):
//   record* u32 LE body length, u32 LE CRC-32 (common/crc32.hpp) of the body, body
//   body    msgpack [ "swlr", 1, <hook: str>, <attempt: int>, <job_id: uint>,
//                     <submit_time: int>, <epoch: uint>, <jobinfo given: str>,
//                     <ended: int, Unix ms>, <outcome: bin, an outcome frame's body> ]
// "jobinfo given" is content_hash() of the jobinfo job_complete got, "" for
// nil and for job_start.  A record cut short or failing its checksum ends
// the scan: the records before it count (a crash during an append).
//
//   ResultsWriter w;   // its own thread: an fdatasync never blocks the caller
//   w.write(path, frame_result_record(r), [](std::string err) { ... });
#pragma once

#include "lua/contract.hpp"
#include "supervisor/outcome.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace switchlua {

/// Largest results file a controller reads when it takes control (bytes);
/// a larger one is named in an error line and left in place.
inline constexpr std::size_t kResultsMaxFile = 256u << 20;
/// Largest record body accepted (bytes): an outcome frame fits.
inline constexpr std::size_t kResultsMaxRecord = 2u << 20;

/// One recorded result: a job_start or job_complete that returned.
struct ResultRecord {
  Hook hook = Hook::JobStart;
  std::int64_t attempt = 0;     ///< JobArgs::attempt of the call
  std::uint32_t job_id = 0;     ///< JobId
  std::int64_t submit_time = 0; ///< the job's submit time (Unix s)
  std::uint64_t epoch = 0;      ///< control epoch the call was submitted in
  /// job_complete: content_hash() of the jobinfo it got; "" for nil and for job_start.
  std::string jobinfo_given;
  std::int64_t ended_unix_ms = 0; ///< when the supervisor recorded it
  Outcome outcome;                ///< as sent to slurmctld
};

/// The framed record (length, CRC-32, body).
std::string frame_result_record(const ResultRecord &r);

/// What scan_results() read of one file.
struct ResultsScan {
  std::vector<ResultRecord> records; ///< the good records, in order
  /// "" when the whole file was read; else what stopped the scan and at
  /// which offset ("record at offset 812: cut at 40 of 133 bytes").
  std::string error;
};
/// Parses a whole results file.
ResultsScan scan_results(std::string_view bytes);

/// "<journal_path>.results.<epoch>.<segment>".
std::string results_file_path(const std::string &journal_path, std::uint64_t epoch,
                              std::uint64_t segment);
/// The results files beside `journal_path` (any epoch, any segment), full
/// paths in the order of epoch, then segment (numbers); empty when there are none or the folder
/// cannot be read.
std::vector<std::string> list_results_files(const std::string &journal_path);

/// Appends framed records to results files and makes them durable, on a
/// thread of its own (started at the first write, joined by the
/// destructor): records waiting at the same time are written with one
/// fdatasync per file (group commit).  A file is opened once (O_APPEND,
/// created 0600; common/safe_file.hpp open_own_file(), after check_folder()
/// of its folder) and kept open while it is in use (at most kOpenFiles).  A
/// failed or short write is cut back (ftruncate) so that the next record
/// does not follow a partial one.
class ResultsWriter {
public:
  /// Called on the writer's thread once the record is durable (""), or
  /// could not be written (why: "cannot append to <path>: <strerror>").
  using Done = std::function<void(const std::string &error)>;
  ResultsWriter() = default;
  ~ResultsWriter();
  ResultsWriter(const ResultsWriter &) = delete;
  ResultsWriter &operator=(const ResultsWriter &) = delete;
  /// Queues `framed` for `path`; `done` runs once it is durable or failed.
  void write(std::string path, std::string framed, Done done);
  /// Test seam: replaces ::fdatasync(2) (0, or -1 with errno set).
  void set_fdatasync(int (*fn)(int)) { fdatasync_ = fn; }

private:
  static constexpr std::size_t kOpenFiles = 4;
  struct Item {
    std::string path;
    std::string framed;
    Done done;
  };
  void run();
  /// Writes `items` (all for `path`) and syncs them: "" or why not.
  std::string write_file(const std::string &path, const std::vector<Item *> &items);
  int fd_of(const std::string &path, std::string &error);
  void close_file(const std::string &path);
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
  std::thread thread_;
  // Writer thread only:
  std::map<std::string, std::pair<int, std::uint64_t>> open_; ///< path -> fd, last use
  std::uint64_t uses_ = 0;
  int (*fdatasync_)(int) = nullptr;
};

} // namespace switchlua
