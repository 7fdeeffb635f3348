// SPDX-License-Identifier: GPL-2.0-or-later
//
// One outcome, one wording: the call's log line (describe(),
// supervisor/outcome.cpp) and the job's reason or drain reason
// (outcome_text(), ctld/job_fsm_names.cpp) both begin with outcome_words()
// (supervisor/outcome_words.hpp), for every outcome kind (issue 19: the log
// said "killed by signal", the reason "died on signal").
#include "ctld/job_fsm.hpp"
#include "supervisor/outcome.hpp"
#include "supervisor/outcome_words.hpp"

#include <csignal>
#include <gtest/gtest.h>
#include <vector>

using namespace switchlua;

namespace {

/// One outcome of each kind, with a detail that shows in the words.
std::vector<Outcome> one_of_each() {
  std::vector<Outcome> out;
  for (int k = 0; k <= static_cast<int>(OutcomeKind::LoadFailed); ++k) {
    Outcome o;
    o.kind = static_cast<OutcomeKind>(k);
    o.message = "switch.lua:12: boom\nstack traceback:\n\t[C]: in ?";
    o.exit_status = 3;
    o.signal = SIGSEGV;
    o.elapsed = std::chrono::milliseconds(10004);
    o.ret.hook = Hook::JobComplete;
    o.ret.rc = -1;
    out.push_back(o);
  }
  return out;
}

} // namespace

TEST(OutcomeWords, TheLogLineAndTheReasonBeginWithTheSameWords) {
  for (const Outcome &o : one_of_each()) {
    const std::string words = outcome_words(o);
    SCOPED_TRACE(std::string(outcome_kind_name(o.kind)) + ": " + words);
    EXPECT_TRUE(describe(o).starts_with(words)) << "log: " << describe(o);
    EXPECT_TRUE(outcome_text(o).starts_with(words)) << "reason: " << outcome_text(o);
  }
}

TEST(OutcomeWords, EachKindHasItsOwnWordsWithItsDetail) {
  std::vector<std::string> seen;
  for (const Outcome &o : one_of_each()) {
    const std::string words = outcome_words(o);
    for (const std::string &w : seen)
      EXPECT_NE(words, w) << outcome_kind_name(o.kind);
    seen.push_back(words);
    // Only the first line of a message: the traceback is logged apart.
    EXPECT_EQ(words.find('\n'), std::string::npos) << words;
  }
  Outcome s;
  s.kind = OutcomeKind::Signaled;
  s.signal = SIGSEGV;
  EXPECT_EQ(outcome_words(s), "died on signal 11 (SIGSEGV)");
  EXPECT_EQ(describe(s), "died on signal 11 (SIGSEGV), not sent by the supervisor");
  EXPECT_EQ(outcome_text(s), "died on signal 11 (SIGSEGV)");
}

TEST(OutcomeWords, AJobinfoThatCannotBeSavedReadsTheSameInTheLogAndTheReason) {
  Outcome o;
  o.kind = OutcomeKind::Returned;
  o.ret.hook = Hook::JobStart;
  o.ret.rc = 0;
  o.ret.jobinfo_error = "jobinfo: a function cannot be saved";
  const std::string words = jobinfo_unsaved_words(o.ret.jobinfo_error);
  EXPECT_EQ(describe(o), "returned rc=0 with " + words);
  EXPECT_EQ(outcome_text(o), "returned " + words);
}
