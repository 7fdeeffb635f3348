#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/verdict.py: the counts behind scripts/test's last line.

    verdict.py meson BUILD_DIR XML_DIR
        Counts the test cases of one `meson test` run: every executable of
        BUILD_DIR/meson-logs/testlog.json, and for a GoogleTest executable
        that wrote XML_DIR/<executable>.xml (GTEST_OUTPUT=xml:XML_DIR/), each
        of its test cases.  Prints one line "PASSED FAILED SKIPPED", then one
        "# " line per executable that skipped or failed something.

A test case counts as skipped when GoogleTest marks it so (result="skipped"
or a <skipped> child: GoogleTest >= 1.11 writes the per-suite "skipped"
attribute but not the root's, so the root element is never read), as failed
when it has a <failure> or <error>.  An executable that meson reports as
failed (a crash, a timeout, an exit status other than the cases say) adds
one failure of its own when its cases show none: a run never ends with
fewer failures than meson saw.  An executable without XML counts as one
case with meson's result (SKIP: exit 77).
"""
import json
import os
import sys
import xml.etree.ElementTree as ET

MESON_FAILED = {"FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS"}


def gtest_cases(path):
    """(passed, failed, skipped) of one GoogleTest XML report."""
    passed = failed = skipped = 0
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif (case.get("result") == "skipped" or case.find("skipped") is not None
              or case.get("status") == "notrun"):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def meson_counts(build_dir, xml_dir):
    """(passed, failed, skipped, notes) of the last meson test run in build_dir."""
    log = os.path.join(build_dir, "meson-logs", "testlog.json")
    passed = failed = skipped = 0
    notes = []
    with open(log, encoding="utf-8") as f:
        entries = [json.loads(line) for line in f if line.strip()]
    for e in entries:
        name, result = e["name"], e["result"]
        cmd = e.get("command") or [""]
        xml = os.path.join(xml_dir, os.path.basename(cmd[0]) + ".xml")
        if os.path.basename(cmd[0]) and os.path.exists(xml):
            try:
                p, fl, s = gtest_cases(xml)
            except ET.ParseError:  # cut short by a crash
                p, fl, s = 0, 0, 0
            if result in MESON_FAILED and fl == 0:
                fl = 1
        elif result == "SKIP":
            p, fl, s = 0, 0, 1
        elif result in MESON_FAILED:
            p, fl, s = 0, 1, 0
        else:
            p, fl, s = 1, 0, 0
        passed, failed, skipped = passed + p, failed + fl, skipped + s
        if fl or s:
            notes.append(f"# {name}: {p} passed, {fl} failed, {s} skipped ({result})")
    if not entries:
        failed += 1
        notes.append(f"# {log}: no test ran")
    return passed, failed, skipped, notes


def main(argv):
    if len(argv) == 4 and argv[1] == "meson":
        p, f, s, notes = meson_counts(argv[2], argv[3])
        print(p, f, s)
        for n in notes:
            print(n)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
