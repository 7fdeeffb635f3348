#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Tests of scripts/verdict.py, the counts behind scripts/test's last line,
on hand-made GoogleTest XML and meson test logs shaped as GoogleTest 1.15
and meson 1.7 write them."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import verdict  # noqa: E402

# GoogleTest writes "skipped" per <testsuite>, never on the root element.
XML_WITH_SKIPS = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" failures="1" disabled="0" errors="0" name="AllTests">
  <testsuite name="Seed" tests="3" failures="0" disabled="0" skipped="2" errors="0">
    <testcase name="A" status="run" result="skipped" classname="Seed"><skipped message="no seed"/></testcase>
    <testcase name="B" status="run" result="skipped" classname="Seed"><skipped message="no seed"/></testcase>
    <testcase name="C" status="run" result="completed" classname="Seed"/>
  </testsuite>
  <testsuite name="Other" tests="1" failures="1" disabled="0" skipped="0" errors="0">
    <testcase name="D" status="run" result="completed" classname="Other"><failure message="x"/></testcase>
  </testsuite>
</testsuites>
"""


def entry(name, result, cmd):
    return {"name": name, "result": result, "command": cmd}


class Verdict(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.build = self.dir.name
        self.xml = os.path.join(self.build, "gtest-xml")
        os.makedirs(os.path.join(self.build, "meson-logs"))
        os.makedirs(self.xml)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, entries, xml=None):
        with open(os.path.join(self.build, "meson-logs", "testlog.json"), "w") as f:
            for e in entries:
                f.write(json.dumps(e) + "\n")
        for name, text in (xml or {}).items():
            with open(os.path.join(self.xml, name + ".xml"), "w") as f:
                f.write(text)

    def test_skips_are_counted_per_test_case_not_read_from_the_root(self):
        self.write([entry("cli_acceptance", "FAIL", ["/b/test/cli/cli_acceptance"])],
                   {"cli_acceptance": XML_WITH_SKIPS})
        p, f, s, notes = verdict.meson_counts(self.build, self.xml)
        self.assertEqual((p, f, s), (1, 1, 2))
        self.assertIn("cli_acceptance", notes[0])

    def test_a_crashed_executable_is_a_failure_even_when_its_cases_passed(self):
        passing = XML_WITH_SKIPS.replace('<failure message="x"/>', "")
        self.write([entry("proc", "TIMEOUT", ["/b/proc"])], {"proc": passing})
        self.assertEqual(verdict.meson_counts(self.build, self.xml)[:3], (2, 1, 2))

    def test_a_crash_that_cut_the_xml_short_is_a_failure(self):
        self.write([entry("proc", "FAIL", ["/b/proc"])], {"proc": XML_WITH_SKIPS[:200]})
        self.assertEqual(verdict.meson_counts(self.build, self.xml)[:3], (0, 1, 0))

    def test_executables_without_xml_count_once_with_meson_s_result(self):
        self.write([entry("typecheck seed", "SKIP", ["/b/run.sh"]),
                    entry("chaos_analyze", "OK", ["/usr/bin/python3", "x.py"]),
                    entry("exports", "FAIL", ["/usr/bin/sh", "-c"])])
        self.assertEqual(verdict.meson_counts(self.build, self.xml)[:3], (1, 1, 1))

    def test_a_log_with_no_test_is_a_failure(self):
        self.write([])
        self.assertEqual(verdict.meson_counts(self.build, self.xml)[:3], (0, 1, 0))


if __name__ == "__main__":
    unittest.main()
