// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: test/proc/temp_dir.hpp
//
// A fresh directory for one process test: StateSaveLocation's stand-in
// (the journal, the status file) or a fixture's own files.
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace switchlua::test {

/// mkdtemp of `<system temp dir>/swl-proc.XXXXXX`, removed with all it
/// holds when the object goes.  Throws std::runtime_error (with errno's
/// text) when the directory cannot be made.
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "swl-proc.XXXXXX").string();
    if (!::mkdtemp(t.data()))
      throw std::runtime_error("mkdtemp " + t + ": " + std::strerror(errno));
    dir = t;
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  /// The plugin's journal and status file, as under StateSaveLocation.
  std::string journal() const { return (dir / "switch_lua.journal").string(); }
  std::string status() const { return (dir / "switch_lua.status").string(); }
};

} // namespace switchlua::test
