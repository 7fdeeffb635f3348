// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/epoch_file.hpp"

#include "common/safe_file.hpp"

#include <charconv>
#include <sys/stat.h>

namespace switchlua {

std::uint64_t read_epoch_file(const std::string &path) {
  auto text = read_file_bounded(path, 64);
  std::uint64_t v = 0;
  if (text && !text->empty())
    std::from_chars(text->data(), text->data() + text->size(), v);
  return v;
}

std::uint64_t EpochWatch::current(const std::string &path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    path_.clear(); // read again once it is back
    return 0;
  }
  if (path == path_ && st.st_dev == dev_ && st.st_ino == ino_ && st.st_size == size_ &&
      st.st_mtim.tv_sec == mtime_.tv_sec && st.st_mtim.tv_nsec == mtime_.tv_nsec)
    return value_;
  path_ = path;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  size_ = st.st_size;
  mtime_ = st.st_mtim;
  value_ = read_epoch_file(path);
  return value_;
}

} // namespace switchlua
