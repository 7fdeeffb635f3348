// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/log_stamp.hpp"

#include <gtest/gtest.h>

using namespace switchlua;

TEST(LogStamp, StepIdIsWrittenAsSlurmWritesIt) {
  EXPECT_EQ(step_id_text(42, 0), "42.0");
  EXPECT_EQ(step_id_text(42, 7), "42.7");
  EXPECT_EQ(step_id_text(42, 0xFFFFFFFB), "42.batch");
  EXPECT_EQ(step_id_text(42, 0xFFFFFFFC), "42.extern");
  EXPECT_EQ(step_id_text(42, 0xFFFFFFFA), "42.interactive");
  EXPECT_EQ(step_id_text(42, 0xFFFFFFFD), "42.TBD");
}

TEST(LogStamp, SubjectNamesJobStepNodeAndHookInThatOrder) {
  EXPECT_EQ(log_subject({}), "");
  EXPECT_EQ(log_subject({.job_id = 42}), "JobId=42");
  EXPECT_EQ(log_subject({.job_id = 42, .hook = "job_start"}), "JobId=42 job_start");
  EXPECT_EQ(
      log_subject({.job_id = 42, .step_id = 0xFFFFFFFB, .node = "node1", .hook = "step_init"}),
      "JobId=42 StepId=42.batch node1 step_init");
  EXPECT_EQ(log_subject({.job_id = 42, .step_id = 0}), "JobId=42 StepId=42.0");
  // A step without a job is not a step Slurm would name: the step is left out.
  EXPECT_EQ(log_subject({.step_id = 3, .hook = "step_init"}), "step_init");
}

TEST(LogStamp, LineStartsWithThePrefixAndJoinsTheText) {
  EXPECT_EQ(log_line({}, "journal /x: compacted"), "switch/lua: journal /x: compacted");
  EXPECT_EQ(log_line({.job_id = 42, .hook = "job_start"}, "started"),
            "switch/lua: JobId=42 job_start started");
  // Text that starts with ':' attaches to the stamp.
  EXPECT_EQ(log_line({.job_id = 42}, ": holding the job"), "switch/lua: JobId=42: holding the job");
  EXPECT_EQ(log_line({.job_id = 42}, ""), "switch/lua: JobId=42");
  EXPECT_EQ(log_line({}, ": odd"), "switch/lua: : odd");
}

TEST(LogStamp, FormattedLineFormatsOnlyTheText) {
  EXPECT_EQ(log_line({.job_id = 7, .hook = "job_complete"}, "retry {} of {}", 1, 3),
            "switch/lua: JobId=7 job_complete retry 1 of 3");
  // A runtime string is never taken as a format: braces stay as they are.
  std::string odd = "value {x}";
  EXPECT_EQ(log_line({.job_id = 7}, odd), "switch/lua: JobId=7 value {x}");
}
