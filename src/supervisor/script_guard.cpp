// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/script_guard.cpp
#include "supervisor/script_guard.hpp"

#include "lua/trust.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace switchlua {

namespace {

bool same_file_state(const struct stat &a, const struct stat &b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

} // namespace

std::optional<ScriptGuard::Candidate> ScriptGuard::check(const std::string &path) {
  Entry &e = entries_[path];
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    // Gone or unreadable: a candidate whose validation reports why.
    const std::string hash = fmt::format("missing:{}", std::strerror(errno));
    if (e.seen && e.refused_hash == hash)
      return std::nullopt;
    e.seen = false;
    return Candidate{path, {}, hash};
  }
  if (e.seen && same_file_state(e.st, st))
    return std::nullopt;
  auto trusted = read_trusted_file(path, slurm_user());
  if (!trusted) {
    // Untrusted (or unreadable): refused as it is; the good version stays.
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string hash = "untrusted:" + content_hash(ss.str());
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
    if (before.empty())
      return "";
    return fmt::format("{} changed (content {}, was {}): it loads, calls now run it", c.path,
                       c.hash, before);
  }
  e.refused_hash = c.hash;
  const std::string first = error.substr(0, error.find('\n'));
  if (!e.good)
    return fmt::format("{} (content {}) is refused: {}; no version of it has passed yet, so "
                       "calls fail to load it",
                       c.path, c.hash, first);
  return fmt::format("{} changed (content {}) but is refused: {}; calls keep running the last "
                     "good version (content {})",
                     c.path, c.hash, first, before);
}

const ScriptGuard::Version *ScriptGuard::good(const std::string &path) const {
  auto it = entries_.find(path);
  if (it == entries_.end() || !it->second.good)
    return nullptr;
  return &*it->second.good;
}

} // namespace switchlua
