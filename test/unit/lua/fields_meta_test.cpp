// SPDX-License-Identifier: GPL-2.0-or-later
//
// The fields of the job and step tables are defined once, by the code
// (kJobFields / kStepFields of lua/contract.cpp, job_fields() and
// step_fields()); their two descriptions are checked against it here:
//   - switch.lua(5) "The job table" / "The step table": one entry per field;
//   - the LuaLS definitions lua/switch-lua-meta/slurm.lua (switchlua.Job,
//     switchlua.Step): one ---@field per field, with its Lua type, "?"
//     exactly when the field may be nil.
#include "../source_lines.hpp"
#include "lua/contract.hpp"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace switchlua;

namespace {

const fs::path kRoot = SWITCHLUA_SOURCE_ROOT;

using switchlua::test::read_lines;

/// The field names that switch.lua(5) gives an entry (".TP" or ".TQ", then
/// ".B name") in the subsection `title`, with their line numbers.
std::map<std::string, std::size_t> man_fields(const std::string &title) {
  const auto lines = read_lines(kRoot / "man" / "switch.lua.5");
  std::map<std::string, std::size_t> out;
  static const std::regex entry(R"(^\.BR? ([a-z_]+)\b.*$)");
  bool in = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].starts_with(".SS") || lines[i].starts_with(".SH")) {
      in = lines[i] == ".SS " + title;
      continue;
    }
    std::smatch m;
    if (in && i > 0 && (lines[i - 1].starts_with(".TP") || lines[i - 1] == ".TQ") &&
        std::regex_match(lines[i], m, entry))
      out[m[1].str()] = i + 1;
  }
  return out;
}

/// One ---@field of a class of slurm.lua.
struct MetaField {
  std::string type;
  bool optional;
  std::size_t line;
};

std::map<std::string, MetaField> meta_fields(const std::string &cls) {
  const auto lines = read_lines(kRoot / "lua" / "switch-lua-meta" / "slurm.lua");
  std::map<std::string, MetaField> out;
  static const std::regex field(R"(^---@field ([a-z_]+)(\??) (\S+).*$)");
  bool in = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (lines[i].starts_with("---@class "))
      in = lines[i] == "---@class " + cls;
    else if (in && std::regex_match(lines[i], m, field))
      out[m[1].str()] = MetaField{m[3].str(), m[2].length() > 0, i + 1};
    else if (in && !lines[i].starts_with("---"))
      in = false;
  }
  return out;
}

void expect_man_matches(const std::vector<ArgField> &code, const std::string &title) {
  auto man = man_fields(title);
  ASSERT_FALSE(man.empty()) << "switch.lua(5) has no .SS " << title;
  for (const ArgField &f : code) {
    EXPECT_TRUE(man.count(std::string(f.name)))
        << "switch.lua(5) " << title << " has no entry for the field " << f.name
        << " of lua/contract.cpp";
    man.erase(std::string(f.name));
  }
  for (const auto &[name, line] : man)
    ADD_FAILURE() << "switch.lua.5:" << line << ": " << title << " describes " << name
                  << ", which is not a field of lua/contract.cpp";
}

void expect_meta_matches(const std::vector<ArgField> &code, const std::string &cls) {
  auto meta = meta_fields(cls);
  ASSERT_FALSE(meta.empty()) << "slurm.lua has no ---@class " << cls;
  for (const ArgField &f : code) {
    auto it = meta.find(std::string(f.name));
    if (it == meta.end()) {
      ADD_FAILURE() << "slurm.lua ---@class " << cls << " has no ---@field " << f.name;
      continue;
    }
    const std::string where =
        "slurm.lua:" + std::to_string(it->second.line) + ": " + cls + "." + std::string(f.name);
    EXPECT_EQ(it->second.type, f.lua_type) << where;
    EXPECT_EQ(it->second.optional, f.may_be_nil)
        << where << (f.may_be_nil ? ": may be nil, write " : ": is never nil, drop the ? of ")
        << f.name << "?";
    meta.erase(it);
  }
  for (const auto &[name, m] : meta)
    ADD_FAILURE() << "slurm.lua:" << m.line << ": " << cls << " declares " << name
                  << ", which is not a field of lua/contract.cpp";
}

} // namespace

TEST(FieldsMeta, TheJobTableOfTheManPageIsTheCodes) {
  expect_man_matches(job_fields(), "The job table");
}

TEST(FieldsMeta, TheStepTableOfTheManPageIsTheCodes) {
  expect_man_matches(step_fields(), "The step table");
}

TEST(FieldsMeta, TheLuaLSJobClassIsTheCodesWithItsTypes) {
  expect_meta_matches(job_fields(), "switchlua.Job");
}

TEST(FieldsMeta, TheLuaLSStepClassIsTheCodesWithItsTypes) {
  expect_meta_matches(step_fields(), "switchlua.Step");
}

TEST(FieldsMeta, TheCodesTablesHaveTheFieldsTheContractNames) {
  // A sanity floor: the parse above must not pass on an empty table.
  std::set<std::string> job, step;
  for (const ArgField &f : job_fields())
    job.insert(std::string(f.name));
  for (const ArgField &f : step_fields())
    step.insert(std::string(f.name));
  for (const char *n : {"job_id", "user_id", "nodes", "network", "batch", "node_names"})
    EXPECT_TRUE(job.count(n)) << n;
  for (const char *n : {"job_id", "step_id", "node_name", "network"})
    EXPECT_TRUE(step.count(n)) << n;
}

// The trust table of switch.lua(5) SECURITY ("Who sets each field", issue
// 21): every field of the job and step tables has a row (a row names one
// or more fields, "job.nodes, node_names, num_nodes"; "job.array_*" names
// every field with that prefix), and no row names a field the code lacks.
TEST(FieldsMeta, TheTrustTableHasARowForEveryJobAndStepField) {
  const auto lines = read_lines(kRoot / "man" / "switch.lua.5");
  std::map<std::string, std::set<std::string>> named; // "job" / "step" -> names
  bool in = false;
  for (const std::string &l : lines) {
    if (l.starts_with(".SS "))
      in = l == ".SS Who sets each field";
    if (!in || !(l.starts_with("job.") || l.starts_with("step.")))
      continue;
    const std::string table = l.substr(0, l.find('.'));
    std::string names = l.substr(table.size() + 1, l.find('|') - table.size() - 1);
    for (std::size_t p = 0; p != std::string::npos;) {
      const std::size_t comma = names.find(',', p);
      std::string n = names.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
      n.erase(0, n.find_first_not_of(' '));
      named[table].insert(n);
      p = comma == std::string::npos ? comma : comma + 1;
    }
  }
  auto check = [&](const std::vector<ArgField> &code, const std::string &table) {
    std::set<std::string> rows = named[table];
    ASSERT_FALSE(rows.empty()) << "switch.lua(5) Who sets each field has no " << table << " row";
    for (const ArgField &f : code) {
      const std::string name(f.name);
      bool found = rows.erase(name) > 0;
      for (const std::string &r : named[table])
        if (r.ends_with("*") && name.starts_with(r.substr(0, r.size() - 1)))
          found = true;
      EXPECT_TRUE(found) << "switch.lua(5) Who sets each field: no row for " << table << "."
                         << name;
    }
    for (const std::string &r : rows)
      if (!r.ends_with("*"))
        ADD_FAILURE() << "switch.lua(5) Who sets each field names " << table << "." << r
                      << ", which is not a field of lua/contract.cpp";
  };
  check(job_fields(), "job");
  check(step_fields(), "step");
}

// The hooks: each row of the hook table (hook_info()) has its subsection
// ".SS slurm_switch_job_start(job)" in switch.lua(5) and its declaration
// "function slurm_switch_job_start(job) end" in slurm.lua, with the same
// arguments, and neither describes a hook the table does not have.
TEST(HooksMeta, EveryHookOfTheTableHasItsManSectionAndItsLuaLSDeclaration) {
  std::set<std::string> man, meta, code;
  for (const std::string &l : read_lines(kRoot / "man" / "switch.lua.5"))
    if (l.starts_with(".SS slurm_switch_"))
      man.insert(l.substr(4));
  static const std::regex decl(R"(^function (slurm_switch_[a-z_]+\([^)]*\)) end$)");
  for (const std::string &l : read_lines(kRoot / "lua" / "switch-lua-meta" / "slurm.lua")) {
    std::smatch m;
    if (std::regex_match(l, m, decl))
      meta.insert(m[1].str());
  }
  for (Hook h : kAllHooks) {
    const HookInfo &i = hook_info(h);
    code.insert(std::string(i.function) + std::string(i.arguments));
  }
  EXPECT_EQ(code.size(), std::size(kAllHooks));
  EXPECT_EQ(man, code) << "switch.lua(5) .SS slurm_switch_* against the hook table";
  EXPECT_EQ(meta, code) << "slurm.lua function slurm_switch_* against the hook table";
}
