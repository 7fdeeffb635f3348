// SPDX-License-Identifier: GPL-2.0-or-later
//
// `switch-lua settings [PARAMS]`: the settings line the plugin logs at
// start-up, from the parser's table (ctld/config.cpp), for the e2e tests and
// for admins; the parser's warnings and errors on stderr.
#include "ctld/config.hpp"
#include "run_cli.hpp"

#include <gtest/gtest.h>

using switchlua::test::run_cli;

TEST(SettingsCli, WithoutParamsPrintsTheDefaultsLine) {
  auto r = run_cli("settings");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, switchlua::describe(switchlua::CtldConfig{}) + "\n");
  EXPECT_TRUE(r.out.starts_with("switch_timeout=10 switch_retries=3 ")) << r.out;
}

TEST(SettingsCli, PrintsTheLineOfTheGivenParametersIgnoringOtherTokens) {
  auto r = run_cli("settings 'enable_configless,Switch_Timeout=3,switch_kill_grace=3'");
  ASSERT_EQ(r.status, 0) << r.out;
  auto c = switchlua::parse_slurmctld_parameters("switch_timeout=3,switch_kill_grace=3");
  ASSERT_TRUE(c);
  EXPECT_EQ(r.out, switchlua::describe(*c) + "\n");
  EXPECT_NE(r.out.find("switch_timeout=3 "), std::string::npos) << r.out;
}

TEST(SettingsCli, AMisspeltKeyGetsThePluginsWarningOnStderr) {
  // stderr only (run_cli merges the last command's stderr: cat's, empty).
  auto r = run_cli("settings switch_timout=3 2>&1 >/dev/null | cat");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, switchlua::slurmctld_parameters_warnings("switch_timout=3").at(0) + "\n");
}

TEST(SettingsCli, ABadValueIsThePluginsErrorAndStatus1) {
  auto r = run_cli("settings switch_timeout=0");
  EXPECT_EQ(WEXITSTATUS(r.status), 1) << r.out;
  EXPECT_EQ(r.out, "SlurmctldParameters: switch_timeout=0: must be an integer number of seconds "
                   "from 1 to 86400\n");
}
