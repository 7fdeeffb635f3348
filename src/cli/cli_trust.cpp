// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: cli/cli_trust.cpp
//
// helper_path() and system_slurm_user() (cli/cli_trust.hpp).
#include "cli/cli_trust.hpp"

#include "cli/status.hpp"
#include "common/safe_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace switchlua {
namespace {

/// The largest slurm.conf read for SlurmUser, bytes.
constexpr std::size_t kMaxSlurmConfBytes = std::size_t{4} << 20;

/// Owned by root or the caller and not writable by group or others.
Expected<void> owned_and_closed(const std::string &what, const std::string &path, bool want_dir) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    return fail(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
  if (want_dir != S_ISDIR(st.st_mode) || (!want_dir && !S_ISREG(st.st_mode)))
    return fail(
        fmt::format("{} {}: not a {}: refused", what, path, want_dir ? "folder" : "regular file"));
  if ((st.st_uid != 0 && st.st_uid != ::geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fail(fmt::format("{} {}: owned by uid {}, mode {:04o}: refused; it must be owned by "
                            "root or uid {} and not writable by group or others (switch-lua(1), "
                            "SECURITY)",
                            what, path, st.st_uid, st.st_mode & 07777, ::geteuid()));
  return {};
}

} // namespace

Expected<std::string> helper_path(const std::string &name) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return fail(fmt::format("cannot find this program (/proc/self/exe): {}", ec.message()));
  const std::filesystem::path bin = self.parent_path();
  const std::filesystem::path dir = bin == std::filesystem::path(SWITCHLUA_BINDIR)
                                        ? std::filesystem::path(SWITCHLUA_LIBEXECDIR)
                                        : bin.parent_path() / "supervisor"; // the build tree
  if (auto ok = owned_and_closed("the helper folder", dir.string(), true); !ok)
    return Unexpected<Error>{ok.error()};
  const std::string file = (dir / name).string();
  if (auto ok = owned_and_closed("the helper", file, false); !ok)
    return Unexpected<Error>{ok.error()};
  return file;
}

Expected<uid_t> system_slurm_user() {
  const char *env = std::getenv("SLURM_CONF");
  const std::string conf = env != nullptr && env[0] != '\0' ? env : "/etc/slurm/slurm.conf";
  const int fd = ::open(conf.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT)
    return uid_t{0};
  if (fd < 0)
    return fail(fmt::format("cannot open the system slurm.conf {}: {}; name SlurmUser with "
                            "--slurm-user",
                            conf, std::strerror(errno)));
  struct stat st{};
  const bool stated = ::fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    ::close(fd);
    return fail(fmt::format("the system slurm.conf {}: owned by uid {}, mode {:04o}: not trusted "
                            "to name SlurmUser (it must be a regular file of root's, not "
                            "writable by group or others); name it with --slurm-user",
                            conf, st.st_uid, st.st_mode & 07777));
  }
  auto text = read_fd_bounded(fd, kMaxSlurmConfBytes, conf);
  ::close(fd);
  if (!text)
    return fail(fmt::format("cannot read the system slurm.conf: {}; name SlurmUser with "
                            "--slurm-user",
                            text.error().message));
  const auto user = slurm_conf_value(*text, "SlurmUser");
  if (!user || *user == "root")
    return uid_t{0};
  if (const struct passwd *pw = ::getpwnam(user->c_str()))
    return pw->pw_uid;
  return fail(fmt::format("{}: SlurmUser={}: no such user", conf, *user));
}

} // namespace switchlua
