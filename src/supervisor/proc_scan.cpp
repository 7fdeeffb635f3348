// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: supervisor/proc_scan.cpp
#include "supervisor/proc_scan.hpp"

#include <charconv>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <string>
#include <unistd.h>

namespace switchlua {

std::string read_proc_file(const std::string &path, std::size_t cap) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buf[4096];
  while (out.size() < cap) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0)
      break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

namespace {

/// Parses "pid (comm) S ppid pgrp ...".  comm may hold spaces and ')'.
std::optional<ProcEntry> parse_stat(std::string_view s) {
  const auto close = s.rfind(')');
  if (close == std::string_view::npos || close + 2 >= s.size())
    return std::nullopt;
  ProcEntry e;
  std::from_chars(s.data(), s.data() + s.size(), e.pid);
  e.state = s[close + 2];
  const char *p = s.data() + close + 3;
  const char *end = s.data() + s.size();
  while (p < end && *p == ' ')
    ++p;
  auto r = std::from_chars(p, end, e.ppid);
  p = r.ptr;
  while (p < end && *p == ' ')
    ++p;
  r = std::from_chars(p, end, e.pgrp);
  if (r.ec != std::errc() || e.pid <= 0)
    return std::nullopt;
  return e;
}

} // namespace

std::vector<ProcEntry> scan_processes() {
  std::vector<ProcEntry> out;
  std::unique_ptr<DIR, int (*)(DIR *)> dir(::opendir("/proc"), ::closedir);
  if (!dir)
    return out;
  while (const dirent *d = ::readdir(dir.get())) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9')
      continue;
    const std::string stat = read_proc_file(std::string("/proc/") + d->d_name + "/stat", 1024);
    if (auto e = parse_stat(stat))
      out.push_back(*e);
  }
  return out;
}

std::optional<ProcEntry> read_proc_entry(pid_t pid) {
  return parse_stat(read_proc_file("/proc/" + std::to_string(pid) + "/stat", 1024));
}

std::optional<std::vector<pid_t>> child_pids() {
  const std::string path = "/proc/self/task/" + std::to_string(::getpid()) + "/children";
  if (::access(path.c_str(), R_OK) != 0)
    return std::nullopt;
  std::vector<pid_t> out;
  const std::string list = read_proc_file(path, 1 << 20);
  const char *p = list.data();
  const char *end = p + list.size();
  while (p < end) {
    pid_t pid = 0;
    auto r = std::from_chars(p, end, pid);
    if (r.ec != std::errc())
      break;
    out.push_back(pid);
    p = r.ptr;
    while (p < end && *p == ' ')
      ++p;
  }
  return out;
}

std::vector<ProcEntry> scan_children() {
  const pid_t self = ::getpid();
  const auto pids = child_pids();
  if (!pids) {
    std::vector<ProcEntry> all = scan_processes();
    std::erase_if(all, [self](const ProcEntry &e) { return e.ppid != self; });
    return all;
  }
  std::vector<ProcEntry> out;
  for (pid_t pid : *pids)
    if (auto e = read_proc_entry(pid); e && e->ppid == self)
      out.push_back(*e);
  return out;
}

std::optional<std::uint64_t> read_call_tag(pid_t pid) {
  const std::string env = read_proc_file("/proc/" + std::to_string(pid) + "/environ", 256 * 1024);
  const std::string key = std::string(kCallTagVar) + "=";
  std::size_t pos = 0;
  while (pos < env.size()) {
    const std::size_t end = env.find('\0', pos);
    const std::string_view entry =
        std::string_view(env).substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (entry.substr(0, key.size()) == key) {
      std::uint64_t v = 0;
      const auto value = entry.substr(key.size());
      auto r = std::from_chars(value.data(), value.data() + value.size(), v);
      if (r.ec == std::errc() && r.ptr == value.data() + value.size())
        return v;
      return std::nullopt;
    }
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  return std::nullopt;
}

} // namespace switchlua
