// SPDX-License-Identifier: GPL-2.0-or-later
//
// The supervisor's results files: encoding, scanning, listing, and the
// writer thread (results_log.hpp).
#include "supervisor/results_log.hpp"

#include "common/crc32.hpp"
#include "common/msgpack_write.hpp"
#include "common/record.hpp"
#include "common/safe_file.hpp"
#include "supervisor/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace switchlua {
namespace {

constexpr std::string_view kMagic = "swlr";
constexpr std::size_t kFrameHead = 8; // u32 length + u32 crc

Expected<ResultRecord> decode_result_body(std::string_view bytes) {
  auto bad = [](std::string what) { return fail("switch/lua results file: " + what); };
  auto rec = unpack_record(
      bytes, {.what = "switch/lua results file",
              .magic = kMagic,
              .max_version = 1,
              .fields = 10,
              .limit = msgpack::unpack_limit(16, 16, 4096, kResultsMaxRecord, 16, 4)});
  if (!rec)
    return Unexpected<Error>{rec.error()};
  const msgpack::object *a = rec->fields;
  ResultRecord r;
  if (a[2].type != msgpack::type::STR)
    return bad("field 'hook' is not a string");
  auto h = hook_from_name(std::string_view(a[2].via.str.ptr, a[2].via.str.size));
  if (!h)
    return bad("unknown hook");
  r.hook = *h;
  if (!int64_of(a[3], r.attempt))
    return bad("field 'attempt' is not an integer");
  if (a[4].type != msgpack::type::POSITIVE_INTEGER || a[4].via.u64 > UINT32_MAX)
    return bad("field 'job_id' is not a 32-bit unsigned integer");
  r.job_id = static_cast<std::uint32_t>(a[4].via.u64);
  if (!int64_of(a[5], r.submit_time))
    return bad("field 'submit_time' is not an integer");
  if (a[6].type != msgpack::type::POSITIVE_INTEGER)
    return bad("field 'epoch' is not an unsigned integer");
  r.epoch = a[6].via.u64;
  if (a[7].type != msgpack::type::STR)
    return bad("field 'jobinfo given' is not a string");
  r.jobinfo_given.assign(a[7].via.str.ptr, a[7].via.str.size);
  if (!int64_of(a[8], r.ended_unix_ms))
    return bad("field 'ended' is not an integer");
  if (a[9].type != msgpack::type::BIN)
    return bad("field 'outcome' is not binary");
  auto f = decode_body(std::string_view(a[9].via.bin.ptr, a[9].via.bin.size));
  if (!f)
    return bad("field 'outcome': " + f.error().message);
  const auto *o = std::get_if<OutcomeFrame>(&*f);
  if (o == nullptr)
    return bad("field 'outcome' is not an outcome frame");
  r.outcome = o->outcome;
  return r;
}

} // namespace

std::string frame_result_record(const ResultRecord &r) {
  const std::string outcome = encode_frame(OutcomeFrame{0, r.outcome}).substr(4); // no length
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(10);
  pack_str(pk, kMagic);
  pk.pack(static_cast<std::uint32_t>(1));
  pack_str(pk, hook_name(r.hook));
  pk.pack_int64(r.attempt);
  pk.pack_uint32(r.job_id);
  pk.pack_int64(r.submit_time);
  pk.pack_uint64(r.epoch);
  pack_str(pk, r.jobinfo_given);
  pk.pack_int64(r.ended_unix_ms);
  pack_bin(pk, outcome);
  const std::string_view body(buf.data(), buf.size());
  std::string out;
  out.reserve(kFrameHead + body.size());
  put_u32_le(out, static_cast<std::uint32_t>(body.size()));
  put_u32_le(out, crc32_of(body));
  out += body;
  return out;
}

ResultsScan scan_results(std::string_view bytes) {
  ResultsScan s;
  std::size_t off = 0;
  while (off < bytes.size()) {
    const std::size_t left = bytes.size() - off;
    auto stop = [&](const std::string &why) {
      s.error = fmt::format("record at offset {}: {}", off, why);
    };
    if (left < kFrameHead) {
      stop(fmt::format("cut inside its length and checksum ({} bytes)", left));
      return s;
    }
    const std::uint32_t len = get_u32_le(bytes, off);
    const std::uint32_t crc = get_u32_le(bytes, off + 4);
    if (len > kResultsMaxRecord) {
      stop(fmt::format("length {} exceeds {}", len, kResultsMaxRecord));
      return s;
    }
    if (left - kFrameHead < len) {
      stop(fmt::format("cut at {} of {} bytes", left - kFrameHead, len));
      return s;
    }
    const std::string_view body = bytes.substr(off + kFrameHead, len);
    if (crc32_of(body) != crc) {
      stop("checksum mismatch");
      return s;
    }
    auto r = decode_result_body(body);
    if (!r) {
      stop(r.error().message);
      return s;
    }
    s.records.push_back(std::move(*r));
    off += kFrameHead + len;
  }
  return s;
}

std::string results_file_path(const std::string &journal_path, std::uint64_t epoch,
                              std::uint64_t segment) {
  return fmt::format("{}.results.{}.{}", journal_path, epoch, segment);
}

std::vector<std::string> list_results_files(const std::string &journal_path) {
  std::vector<std::string> out;
  const std::string dir = folder_of(journal_path);
  const auto slash = journal_path.rfind('/');
  const std::string prefix =
      (slash == std::string::npos ? journal_path : journal_path.substr(slash + 1)) + ".results.";
  DIR *d = ::opendir(dir.c_str());
  if (d == nullptr)
    return out;
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> found; // epoch, segment
  while (const dirent *e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (!name.starts_with(prefix))
      continue;
    // <epoch>.<segment>: digits, one dot, digits (never a temp or other file).
    const std::string_view rest = name.substr(prefix.size());
    const auto dot = rest.find('.');
    auto digits = [](std::string_view v) {
      return !v.empty() &&
             std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot == std::string_view::npos || !digits(rest.substr(0, dot)) ||
        !digits(rest.substr(dot + 1)))
      continue;
    const auto number = [](std::string_view v) {
      std::uint64_t n = 0;
      for (char c : v)
        n = n > (UINT64_MAX - 9) / 10 ? UINT64_MAX : n * 10 + static_cast<unsigned>(c - '0');
      return n;
    };
    found.push_back({number(rest.substr(0, dot)), number(rest.substr(dot + 1)),
                     dir == "/" ? "/" + std::string(name) : dir + "/" + std::string(name)});
  }
  ::closedir(d);
  std::sort(found.begin(), found.end());
  for (auto &f : found)
    out.push_back(std::move(std::get<2>(f)));
  return out;
}

ResultsWriter::~ResultsWriter() {
  {
    std::lock_guard g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
  for (auto &[path, f] : open_)
    ::close(f.first);
}

void ResultsWriter::write(std::string path, std::string framed, Done done) {
  {
    std::lock_guard g(mu_);
    queue_.push_back({std::move(path), std::move(framed), std::move(done)});
    if (!thread_.joinable())
      thread_ = std::thread([this] { run(); });
  }
  cv_.notify_one();
}

void ResultsWriter::run() {
  for (;;) {
    std::deque<Item> batch;
    {
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty())
        return; // stop_, nothing left to write
      batch.swap(queue_);
    }
    std::map<std::string, std::vector<Item *>> by_path;
    for (Item &i : batch)
      by_path[i.path].push_back(&i);
    for (auto &[path, items] : by_path) {
      const std::string err = write_file(path, items);
      for (Item *i : items)
        if (i->done)
          i->done(err);
    }
  }
}

int ResultsWriter::fd_of(const std::string &path, std::string &error) {
  if (auto it = open_.find(path); it != open_.end()) {
    it->second.second = ++uses_;
    return it->second.first;
  }
  if (auto ok = check_folder(folder_of(path)); !ok) {
    error = ok.error().message;
    return -1;
  }
  auto fd = open_own_file(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
  if (!fd) {
    error = fd.error().message;
    return -1;
  }
  if (open_.size() >= kOpenFiles) { // the least recently used one
    auto lru = std::min_element(open_.begin(), open_.end(), [](const auto &a, const auto &b) {
      return a.second.second < b.second.second;
    });
    ::close(lru->second.first);
    open_.erase(lru);
  }
  open_[path] = {*fd, ++uses_};
  return *fd;
}

void ResultsWriter::close_file(const std::string &path) {
  if (auto it = open_.find(path); it != open_.end()) {
    ::close(it->second.first);
    open_.erase(it);
  }
}

std::string ResultsWriter::write_file(const std::string &path, const std::vector<Item *> &items) {
  std::string error;
  const int fd = fd_of(path, error);
  if (fd < 0)
    return error;
  struct stat st{};
  const off_t before = ::fstat(fd, &st) == 0 ? st.st_size : -1;
  std::string all;
  for (const Item *i : items)
    all += i->framed;
  std::size_t done = 0;
  while (done < all.size()) {
    const ssize_t n = ::write(fd, all.data() + done, all.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // No later record may follow a partial one.  Should the cut fail
      // too, the scan stops at the partial record (results_log.hpp).
      if (before >= 0 && ::ftruncate(fd, before) != 0)
        error = fmt::format("; cannot cut {} back: {}", path, std::strerror(errno));
      close_file(path);
      return fmt::format("cannot append to {}: {}{}", path, std::strerror(err), error);
    }
    done += static_cast<std::size_t>(n);
  }
  const int rc = fdatasync_ ? fdatasync_(fd) : ::fdatasync(fd);
  if (rc != 0) {
    const int err = errno;
    close_file(path); // reopened (and checked) for the next record
    return fmt::format("cannot fdatasync {}: {}", path, std::strerror(err));
  }
  return {};
}

} // namespace switchlua
