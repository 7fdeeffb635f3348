// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/script_guard.cpp
#include "supervisor/script_guard.hpp"

#include "common/safe_file.hpp"
#include "lua/trust.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace switchlua {

namespace {

bool same_file_state(const struct stat &a, const struct stat &b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

/// Bytes of a refused script hashed for its log line, at most.
constexpr std::size_t kRefusedHashBytes = std::size_t{1} << 20;

/// The content hash of a refused script, read without blocking and with a
/// bound (issue 35: a FIFO or a link to /dev/zero must neither hang nor
/// exhaust the supervisor); a file that is not a regular one, or is larger,
/// is named by its type, inode and size instead of its content.
std::string refused_content_hash(const std::string &path, const struct stat &st) {
  if (S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) <= kRefusedHashBytes) {
    auto bytes = read_file_bounded(path, kRefusedHashBytes);
    if (bytes)
      return content_hash(*bytes);
  }
  return content_hash(fmt::format("mode {:o} dev {} inode {} size {} mtime {}.{}", st.st_mode,
                                  st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                                  st.st_mtim.tv_nsec));
}

} // namespace

std::optional<ScriptGuard::Candidate> ScriptGuard::check(const std::string &path) {
  Entry &e = entries_[path];
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    // Gone or unreadable: a candidate whose validation reports why.
    // Refused already (settle()): not again, or every dispatch would start
    // another validation of the same missing file.  `seen` stays false, so
    // the file is looked at afresh when it is back.
    const std::string hash = fmt::format("missing:{}", std::strerror(errno));
    e.seen = false;
    if (e.refused_hash == hash)
      return std::nullopt;
    return Candidate{path, {}, hash};
  }
  if (e.seen && same_file_state(e.st, st))
    return std::nullopt;
  auto trusted = read_trusted_file(path, slurm_user());
  if (!trusted) {
    // Untrusted (or unreadable): refused as it is; the good version stays.
    const std::string hash = "untrusted:" + refused_content_hash(path, st);
    const std::string why = trusted.error().message;
    e.seen = true;
    e.st = st;
    if (e.refused_hash == hash)
      return std::nullopt;
    return Candidate{path, {}, hash, why};
  }
  std::string bytes = std::move(*trusted);
  std::string hash = content_hash(bytes);
  if (e.good && e.good->hash == hash && e.refused_hash.rfind("untrusted:", 0) == 0)
    e.refused_hash.clear(); // trusted again: a new breach is logged again
  if ((e.good && e.good->hash == hash) || e.refused_hash == hash) {
    e.seen = true;
    e.st = st;
    return std::nullopt;
  }
  e.seen = true;
  e.st = st;
  return Candidate{path, std::move(bytes), std::move(hash)};
}

std::string ScriptGuard::settle(const Candidate &c, const std::string &error) {
  Entry &e = entries_[c.path];
  const std::string before = e.good ? e.good->hash : std::string();
  if (error.empty()) {
    e.good = Version{c.bytes, c.hash};
    e.refused_hash.clear();
    const std::string copy_error = save_copy(c.path, e);
    if (before.empty())
      return copy_error;
    return fmt::format("{} changed (content {}, was {}): it loads, calls now run it{}{}", c.path,
                       c.hash, before, copy_error.empty() ? "" : "; ", copy_error);
  }
  e.refused_hash = c.hash;
  const std::string copy_error = save_copy(c.path, e);
  const std::string first = error.substr(0, error.find('\n'));
  if (!e.good)
    return fmt::format("{} (content {}) is refused: {}; no version of it has passed yet, so "
                       "calls fail to load it",
                       c.path, c.hash, first);
  return fmt::format("{} changed (content {}) but is refused: {}; calls keep running the last "
                     "good version (content {}){}{}",
                     c.path, c.hash, first, before, copy_error.empty() ? "" : "; ", copy_error);
}

std::string ScriptGuard::save_copy(const std::string &path, const Entry &e) const {
  if (copy_.empty() || !e.good)
    return "";
  auto w = write_good_copy(copy_, GoodCopy{path, e.good->hash, e.refused_hash, e.good->bytes});
  if (!w)
    return fmt::format("the copy of the last good version for a reconfigure is not kept: {}",
                       w.error().message);
  return "";
}

std::string ScriptGuard::load_copy() {
  if (copy_.empty())
    return "";
  auto c = read_good_copy(copy_);
  if (!c)
    return c.error().message == "missing" ? "" : c.error().message;
  Entry &e = entries_[c->script];
  e.seen = false; // the file itself is looked at by the next check()
  e.good = Version{std::move(c->bytes), c->hash};
  e.refused_hash = c->refused;
  return "";
}

namespace {
constexpr std::string_view kCopyMagic = "switch-lua last good script 1\n";

/// The value of "<key> <value>\n" at `pos`, advancing it; nullopt if absent.
std::optional<std::string> header_field(std::string_view s, std::size_t &pos,
                                        std::string_view key) {
  const std::size_t nl = s.find('\n', pos);
  if (nl == std::string_view::npos || s.substr(pos, key.size() + 1) != fmt::format("{} ", key))
    return std::nullopt;
  std::string v(s.substr(pos + key.size() + 1, nl - pos - key.size() - 1));
  pos = nl + 1;
  return v;
}
} // namespace

Expected<GoodCopy> read_good_copy(const std::string &copy) {
  struct stat st{};
  if (::lstat(copy.c_str(), &st) != 0 && errno == ENOENT)
    return fail("missing");
  auto bytes = read_trusted_file(copy, slurm_user());
  if (!bytes)
    return fail(
        fmt::format("the copy of the last good script is not used: {}", bytes.error().message));
  const std::string_view s = *bytes;
  auto bad = [&](std::string_view what) {
    return fail(fmt::format("the copy of the last good script {} is not used: {}", copy, what));
  };
  if (s.substr(0, kCopyMagic.size()) != kCopyMagic)
    return bad("not a copy written by switch/lua");
  std::size_t pos = kCopyMagic.size();
  auto script = header_field(s, pos, "script");
  auto good = header_field(s, pos, "good");
  auto refused = header_field(s, pos, "refused");
  if (!script || !good || !refused || s.substr(pos, 1) != "\n")
    return bad("malformed header");
  GoodCopy c{*script, *good, *refused == "-" ? std::string() : *refused,
             std::string(s.substr(pos + 1))};
  if (content_hash(c.bytes) != c.hash)
    return bad(fmt::format("its content is {}, its header says {}", content_hash(c.bytes), c.hash));
  return c;
}

Expected<void> write_good_copy(const std::string &copy, const GoodCopy &c) {
  if (c.script.find('\n') != std::string::npos || c.refused.find('\n') != std::string::npos)
    return fail("a newline in the script's path");
  const std::string text = fmt::format("{}script {}\ngood {}\nrefused {}\n\n", kCopyMagic, c.script,
                                       c.hash, c.refused.empty() ? "-" : c.refused) +
                           c.bytes;
  auto w = write_file_atomically(copy, text);
  if (!w && !w.error().replaced)
    return fail(w.error().message);
  // Replaced but the folder not synced: the copy is in place for this run;
  // a power loss may bring back the previous one, which is still a good
  // version whose hash the header states.
  return {};
}

std::string keep_good_copy_at_init(const std::string &copy, const std::string &script,
                                   bool reconfigured, const char *told_hash) {
  if (reconfigured && told_hash != nullptr && told_hash[0] != '\0') {
    auto c = read_good_copy(copy);
    if (c && c->script == script && c->hash == told_hash)
      return fmt::format("reconfigure: {} keeps its last good version (content {}) from the "
                         "previous slurmctld",
                         script, c->hash);
    std::string why = !c ? (c.error().message == "missing" ? fmt::format("{} is missing", copy)
                                                           : c.error().message)
                      : c->script != script
                          ? fmt::format("{} is a copy of {}", copy, c->script)
                          : fmt::format("{} holds content {}, not {}", copy, c->hash, told_hash);
    ::unlink(copy.c_str());
    return fmt::format("reconfigure: the last good version of {} (content {}) is lost ({}); "
                       "calls run the file as it is",
                       script, told_hash, why);
  }
  ::unlink(copy.c_str()); // a cold start: no version has passed yet
  return "";
}

void export_good_copy(const std::string &copy) {
  auto c = read_good_copy(copy);
  if (c)
    ::setenv(kGoodScriptEnv, c->hash.c_str(), 1);
  else
    ::unsetenv(kGoodScriptEnv);
}

const ScriptGuard::Version *ScriptGuard::good(const std::string &path) const {
  auto it = entries_.find(path);
  if (it == entries_.end() || !it->second.good)
    return nullptr;
  return &*it->second.good;
}

} // namespace switchlua
