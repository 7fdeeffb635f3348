// SPDX-License-Identifier: GPL-2.0-or-later
//
// switch-lua pool release (cli/pool.hpp).
#include "cli/pool.hpp"

#include "cli/cli_trust.hpp"
#include "cli/status.hpp"
#include "common/safe_file.hpp"
#include "ctld/pool_release.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <iostream>
#include <sys/random.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace switchlua {

namespace {

constexpr std::string_view kWho = "switch-lua pool release";

std::string random_token() {
  unsigned char b[12];
  std::size_t got = 0;
  while (got < sizeof b) {
    const ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
    if (n > 0)
      got += static_cast<std::size_t>(n);
    else if (errno != EINTR)
      break;
  }
  std::string t;
  for (unsigned char c : b)
    t += fmt::format("{:02x}", c);
  return t;
}

/// "" when the folder `dir` may hold a request: owned by root, by the
/// caller or by SlurmUser (`slurm_uid`), and not writable by group or others
/// (unless sticky); else why not.
std::string folder_refused(const std::string &dir, uid_t slurm_uid) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0)
    return fmt::format("cannot check the folder {}: {}", dir, std::strerror(errno));
  const bool owner_ok = st.st_uid == 0 || st.st_uid == ::geteuid() || st.st_uid == slurm_uid;
  if (S_ISDIR(st.st_mode) && owner_ok &&
      ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0 || (st.st_mode & S_ISVTX) != 0))
    return "";
  return fmt::format("{}: owned by uid {}, mode {:04o}: refused; StateSaveLocation must be a "
                     "folder of root or SlurmUser (uid {}) not writable by group or others",
                     dir, st.st_uid, st.st_mode & 07777, slurm_uid);
}

/// Creates `dir`/kPoolReleaseRequest holding `text`, only if there is none:
/// written whole under a name of its own, then linked into place (link(2)
/// never replaces a file), so slurmctld never reads half a request and two
/// administrators never overwrite each other's.  Run as root, the file is
/// given to SlurmUser (`slurm_uid`), whom slurmctld runs as.  "" or the
/// error.
std::string write_request(const std::string &dir, uid_t slurm_uid, const std::string &token,
                          const std::string &text) {
  if (std::string why = folder_refused(dir, slurm_uid); !why.empty())
    return why;
  const std::string tmp = fmt::format("{}/.{}.{}", dir, kPoolReleaseRequest, token);
  const std::string path = fmt::format("{}/{}", dir, kPoolReleaseRequest);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return fmt::format("cannot create {}: {}", tmp, std::strerror(errno));
  bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (written && ::geteuid() == 0 && slurm_uid != 0)
    written = ::fchown(fd, slurm_uid, static_cast<gid_t>(-1)) == 0;
  const int werr = errno;
  ::close(fd);
  std::string error;
  if (!written)
    error =
        fmt::format("cannot write or give to uid {} {}: {}", slurm_uid, tmp, std::strerror(werr));
  else if (::link(tmp.c_str(), path.c_str()) != 0)
    error = errno == EEXIST ? fmt::format("another request is pending ({}): try again once it is "
                                          "answered, within a few seconds",
                                          path)
                            : fmt::format("cannot create {}: {}", path, std::strerror(errno));
  ::unlink(tmp.c_str());
  return error;
}

/// Whether the request file at `path` is still the one of `token` (not
/// taken by slurmctld, nor replaced by another administrator's since).
bool ours(const std::string &path, const std::string &token) {
  auto text = read_file_bounded(path, kPoolReleaseMaxBytes);
  std::string error;
  auto r = text ? parse_pool_release_request(*text, error) : std::nullopt;
  return r && r->token == token;
}

int print_answer(const PoolReleaseAnswer &a, const PoolReleaseOptions &o) {
  const std::string what = o.job_id != 0 ? fmt::format("JobId={}", o.job_id)
                                         : fmt::format("pool {} ID {}", o.pool, o.id);
  if (!a.error.empty() && a.released.empty()) {
    std::cerr << fmt::format("{}: {}: refused by switch/lua: {}\n", kWho, what, a.error);
    return 1;
  }
  for (const PoolReleased &r : a.released)
    fmt::print("{}: JobId={}: released {} (quarantined since {})\n", kWho, r.job_id,
               pool_ids_text(r.ids), utc_text(r.since));
  if (!a.error.empty())
    std::cerr << fmt::format("{}: {}: {}\n", kWho, what, a.error);
  if (a.released.empty()) {
    std::cerr << fmt::format("{}: {}: no quarantined IDs: nothing released\n", kWho, what);
    return 1;
  }
  return 0;
}

} // namespace

int run_pool_release(const PoolReleaseOptions &o) {
  std::string dir = o.dir;
  if (dir.empty()) {
    auto status = status_file_path("");
    if (!status)
      return 1;
    dir = folder_of(*status);
  }
  auto slurm_uid = system_slurm_user(); // whom slurmctld runs as: it reads the request
  if (!slurm_uid) {
    std::cerr << fmt::format("{}: {}\n", kWho, slurm_uid.error().message);
    return 1;
  }
  const std::string token = random_token();
  PoolReleaseRequest req{.token = token, .job_id = o.job_id, .pool = o.pool, .id = o.id};
  if (std::string e = write_request(dir, *slurm_uid, token, encode_pool_release_request(req));
      !e.empty()) {
    std::cerr << fmt::format("{}: {}\n", kWho, e);
    return 1;
  }
  // Polled, not watched: StateSaveLocation is often NFS, where the answer
  // of a controller on another host raises no inotify event here.
  const std::string answer = fmt::format("{}/{}", dir, kPoolReleaseAnswer);
  const std::string request = fmt::format("{}/{}", dir, kPoolReleaseRequest);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_s);
  bool withdrawn = false;
  for (;;) {
    if (auto text = read_file_bounded(answer, kPoolReleaseMaxBytes)) {
      std::string error;
      auto a = parse_pool_release_answer(*text, error);
      if (a && a->token == token) {
        ::unlink(answer.c_str());
        return print_answer(*a, o);
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      if (!withdrawn && ours(request, token) && ::unlink(request.c_str()) == 0) {
        std::cerr << fmt::format("{}: no answer from slurmctld within {} s (is it running and in "
                                 "control, with a switch_pool_NAME setting?): the request is "
                                 "withdrawn, nothing was released\n",
                                 kWho, o.timeout_s);
        return 2;
      }
      if (withdrawn) {
        std::cerr << fmt::format("{}: slurmctld took the request but did not answer: see "
                                 "slurmctld.log for 'pool IDs released'\n",
                                 kWho);
        return 2;
      }
      withdrawn = true; // taken by slurmctld: its answer comes soon
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

} // namespace switchlua
