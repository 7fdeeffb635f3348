// SPDX-License-Identifier: GPL-2.0-or-later
//
// common/atomic_file.hpp: the file is replaced whole or not at all, no temp
// file is left behind, the mode is the one asked for, and both the file and
// its folder are fsynced (seen through the fsync seam).
#include "common/atomic_file.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace switchlua;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/atomic-file-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string &name = "f") const { return path + "/" + name; }
  /// The names in the folder, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto &e : fs::directory_iterator(path))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// What the fsync seam saw: for each call, whether the fd was a folder and
/// its inode; `fail_at` (1-based) makes that call fail with EIO.
struct SyncLog {
  struct Call {
    bool folder;
    ino_t ino;
  };
  std::vector<Call> calls;
  int fail_at = 0;
};
SyncLog *g_sync = nullptr;

int logged_fsync(int fd) {
  struct stat st{};
  ::fstat(fd, &st);
  g_sync->calls.push_back({S_ISDIR(st.st_mode), st.st_ino});
  if (static_cast<int>(g_sync->calls.size()) == g_sync->fail_at) {
    errno = EIO;
    return -1;
  }
  return ::fsync(fd);
}

struct SyncSeam {
  SyncLog log;
  SyncSeam() { g_sync = &log; }
  ~SyncSeam() { g_sync = nullptr; }
};

ino_t inode_of(const std::string &path) {
  struct stat st{};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

} // namespace

TEST(AtomicFile, ReplacesTheFileAndLeavesNoTempFile) {
  TempDir d;
  ASSERT_TRUE(write_file_atomically(d.file(), "old"));
  ASSERT_TRUE(write_file_atomically(d.file(), std::string("new\0bytes", 9)));
  EXPECT_EQ(read_file(d.file()), std::string("new\0bytes", 9));
  EXPECT_EQ(d.names(), std::vector<std::string>{"f"});
}

TEST(AtomicFile, SetsTheModeAskedForWhateverTheUmask) {
  TempDir d;
  const mode_t old = ::umask(077);
  auto r = write_file_atomically(d.file(), "x", {.mode = 0644});
  ::umask(old);
  ASSERT_TRUE(r) << r.error().message;
  struct stat st{};
  ASSERT_EQ(::stat(d.file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST(AtomicFile, FsyncsTheFileThenItsFolder) {
  TempDir d;
  SyncSeam seam;
  ASSERT_TRUE(write_file_atomically(d.file(), "data", {.fsync_fn = logged_fsync}));
  ASSERT_EQ(seam.log.calls.size(), 2u);
  EXPECT_FALSE(seam.log.calls[0].folder);
  EXPECT_EQ(seam.log.calls[0].ino, inode_of(d.file())) << "the temp file, renamed afterwards";
  EXPECT_TRUE(seam.log.calls[1].folder);
  EXPECT_EQ(seam.log.calls[1].ino, inode_of(d.path));
}

TEST(AtomicFile, AFailedFileSyncKeepsTheOldFileAndRemovesTheTempFile) {
  TempDir d;
  ASSERT_TRUE(write_file_atomically(d.file(), "old"));
  SyncSeam seam;
  seam.log.fail_at = 1;
  auto r = write_file_atomically(d.file(), "new", {.fsync_fn = logged_fsync});
  ASSERT_FALSE(r);
  EXPECT_FALSE(r.error().replaced);
  EXPECT_EQ(r.error().err, EIO);
  EXPECT_EQ(r.error().message, "cannot sync " + d.file() + ".tmp." + std::to_string(::getpid()) +
                                   ": " + std::strerror(EIO));
  EXPECT_EQ(read_file(d.file()), "old");
  EXPECT_EQ(d.names(), std::vector<std::string>{"f"});
}

TEST(AtomicFile, AFailedRenameKeepsTheTargetAndRemovesTheTempFile) {
  TempDir d;
  fs::create_directory(d.file("target"));
  std::ofstream(d.file("target") + "/keep") << "x"; // a non-empty folder cannot be replaced
  auto r = write_file_atomically(d.file("target"), "new");
  ASSERT_FALSE(r);
  EXPECT_FALSE(r.error().replaced);
  EXPECT_NE(r.error().message.find("cannot rename " + d.file("target") + ".tmp."),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find(" to " + d.file("target") + ": "), std::string::npos);
  EXPECT_TRUE(fs::is_directory(d.file("target")));
  EXPECT_EQ(d.names(), std::vector<std::string>{"target"});
}

TEST(AtomicFile, AFailedFolderSyncSaysTheFileIsReplaced) {
  TempDir d;
  SyncSeam seam;
  seam.log.fail_at = 2;
  auto r = write_file_atomically(d.file(), "new", {.fsync_fn = logged_fsync});
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().replaced);
  EXPECT_EQ(r.error().message,
            "cannot sync the folder " + d.path + ": " + std::string(std::strerror(EIO)));
  EXPECT_EQ(read_file(d.file()), "new");
}

TEST(AtomicFile, AMissingFolderIsAnErrorNamingTheTempFile) {
  auto r = write_file_atomically("/nonexistent-dir/f", "x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, ENOENT);
  EXPECT_EQ(r.error().message, "cannot create /nonexistent-dir/f.tmp." +
                                   std::to_string(::getpid()) + ": No such file or directory");
}

TEST(AtomicFile, DoesNotWriteThroughASymlinkedTempFile) {
  TempDir d;
  std::ofstream(d.file("victim")) << "victim";
  fs::create_symlink(d.file("victim"), d.file() + ".tmp." + std::to_string(::getpid()));
  auto r = write_file_atomically(d.file(), "x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err, ELOOP);
  EXPECT_EQ(read_file(d.file("victim")), "victim");
}

TEST(AtomicFile, FolderOf) {
  EXPECT_EQ(folder_of("a"), ".");
  EXPECT_EQ(folder_of("/a"), "/");
  EXPECT_EQ(folder_of("/x/y/a"), "/x/y");
  EXPECT_EQ(folder_of("x/a"), "x");
}
