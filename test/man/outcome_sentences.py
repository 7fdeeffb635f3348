#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks the marked outcome sentences of the man pages against the rules.

The rule table (src/ctld/job_fsm_table.cpp: the job rules and the rules
of teardowns outside a job) is the one place where a rule says what
happens to a job and its nodes.  The man pages say it again in prose; an
outcome sentence of man/switch.lua.5 or man/switch_lua.conf.5 carries a
roff comment just before it, e.g.

    .\\" outcome R_COMPLETE_FAIL: drain release
    .\\" outcome R_COMPLETE_HOST_FAULT: rerun !drain

naming one or more rule ids and what the sentence says happens, in these
words (each is what some actions of the table do):

    drain     the job's nodes are drained     DrainIfConfigured
    requeue   the job is requeued/cancelled   FailSetup*
    rerun     the call runs again later       Schedule*Retry, ScheduleBackoff
    counted   counted against switch_retries  CountRetry
    job_start job_start runs (again)          RunJobStart
    teardown  job_complete runs               RunJobComplete*
    release   the holds are released          Release
    hold      the job (and nodes) are held    Hold*

A word with "!" says the sentence states that this does NOT happen.

For every marker: the words without "!" are exactly what the rows of each
named rule do (the union over its rows), each "!" word is something none
of its rows does, and the sentence (the text up to the next paragraph
macro or marker) says each of them: a positive word needs its verb
("drain", "requeue", "again", "switch_retries", "job_start",
"job_complete", "releas", "hold"/"held"), a "!" word a negation of it
("never drained", "nothing is drained", "no drain", "not requeued" ...).
And every job rule that drains, requeues, or runs a call again has a
marked sentence in switch.lua(5).  A disagreement fails with the page,
the line, the rule and what differs.

usage: outcome_sentences.py SOURCE_ROOT [--list]
"""
import os
import re
import sys

ACTIONS = {
    "DrainIfConfigured": "drain",
    "FailSetup": "requeue",
    "FailSetupHostFault": "requeue",
    "FailSetupFabricDown": "requeue",
    "ScheduleRetry": "rerun",
    "ScheduleBackoff": "rerun",
    "ScheduleFabricRetry": "rerun",
    "CountRetry": "counted",
    "RunJobStart": "job_start",
    "RunJobCompleteNil": "teardown",
    "RunJobCompleteWithJobinfo": "teardown",
    "Release": "release",
    "HoldJob": "hold",
    "HoldJobAndNodes": "hold",
    "HoldAsBlockSays": "hold",
}
WORDS = sorted(set(ACTIONS.values()))

SAYS = {
    "drain": r"\bdrain",
    "requeue": r"requeue",
    "rerun": r"\bagain\b",
    "counted": r"switch_retries|\bretr(y|ies)\b",
    "job_start": r"\bjob_start\b",
    "teardown": r"\bjob_complete\b",
    "release": r"\breleas",
    "hold": r"\bhold|\bheld\b",
}
NEG = r"(never|not|no|nothing( is)?|none( is)?|without( a)?)"
DENIES = {
    "drain": NEG + r" (\w+ )?drain",
    "requeue": NEG + r" (\w+ )?requeue",
    "rerun": NEG + r" (\w+ )?(run|retried|called) again|no retry|not retried",
    "counted": NEG + r" (\w+ )?(counted|spent)|not spent",
    "job_start": NEG + r" (\w+ )?job_start|job_start is not",
    "teardown": NEG + r" (\w+ )?job_complete|job_complete is not",
    "release": NEG + r" (\w+ )?releas",
    "hold": NEG + r" (\w+ )?(hold|held)",
}

# A row's actions, then its optional pools column (P::Keep by default).
TAIL = r'\s*\{([^}]*)\}(?:,\s*P::\w+)?\}'
ROW = re.compile(r'\{"(R_[A-Z_]+)",\s*S::\w+,\s*E::\w+,\s*V::\w+,\s*S::\w+,'
                 + TAIL)
OUTCOME_ROW = re.compile(r'\{"(R_[A-Z_]+)",\s*Teardown::\w+,\s*V::\w+,' + TAIL)
ANY_ROW = re.compile(r'^\s*\{"R_[A-Z_]+",\s*(?:S|Teardown)::', re.M)
MARKER = re.compile(r'^\.\\"\s*outcome\s+((?:R_[A-Z_]+[ ,]*)+):\s*(.*)$')
BREAK = re.compile(r'^\.(TP|PP|SS|SH|IP|RS|RE|P|LP)\b')
PAGES = ("man/switch.lua.5", "man/switch_lua.conf.5")


def rule_outcomes(root):
    """{rule id: set of words} from the table's rows, and the job rules."""
    path = os.path.join(root, "src", "ctld", "job_fsm_table.cpp")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    rules, job_rules = {}, set()
    parsed = 0
    for pattern, is_job in ((ROW, True), (OUTCOME_ROW, False)):
        for m in pattern.finditer(text):
            parsed += 1
            words = rules.setdefault(m.group(1), set())
            if is_job:
                job_rules.add(m.group(1))
            for act in re.findall(r"Do::(\w+)", m.group(2)):
                if act in ACTIONS:
                    words.add(ACTIONS[act])
    if not rules:
        sys.exit("outcome_sentences: no rule rows found in " + path)
    rows = len(ANY_ROW.findall(text))
    if parsed != rows:
        # A new column or layout must not silently drop rows from the check.
        sys.exit(f"outcome_sentences: {path} has {rows} rows, this parser "
                 f"read {parsed}: teach ROW/OUTCOME_ROW the new layout")
    return rules, job_rules


def plain(line):
    """The words of one roff line, without its macro and escapes."""
    line = re.sub(r"^\.[A-Za-z]+\s?", "", line)
    line = line.replace("\\-", "-").replace("\\&", "")
    line = re.sub(r"\\\([a-z]{2}|\\f[A-Z]|\\\*?\(?\w", " ", line)
    return line.replace('"', "")


def markers(root, page):
    """(line number, rule ids, words, the sentence) of each marker."""
    with open(os.path.join(root, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    for i, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        ids = re.findall(r"R_[A-Z_]+", m.group(1))
        words = m.group(2).split()
        text = []
        for nxt in lines[i + 1:]:
            if BREAK.match(nxt) or MARKER.match(nxt):
                break
            if not nxt.startswith('.\\"'):
                text.append(plain(nxt))
        out.append((i + 1, ids, words, " ".join(" ".join(text).split())))
    return out


def check(root, listing=False):
    rules, job_rules = rule_outcomes(root)
    errors, marked = [], set()
    count = 0
    for page in PAGES:
        for lineno, ids, words, text in markers(root, page):
            count += 1
            where = "%s:%d" % (page, lineno)
            say = {w for w in words if not w.startswith("!")}
            deny = {w[1:] for w in words if w.startswith("!")}
            for w in say | deny:
                if w not in WORDS:
                    errors.append("%s: unknown outcome word %r (known: %s)"
                                  % (where, w, " ".join(WORDS)))
            for rid in ids:
                if rid not in rules:
                    errors.append("%s: %s is not a rule of the table"
                                  % (where, rid))
                    continue
                if page == PAGES[0]:
                    marked.add(rid)
                does = rules[rid]
                if say != does:
                    errors.append(
                        "%s: %s does %s, the marker says %s"
                        % (where, rid, " ".join(sorted(does)) or "nothing",
                           " ".join(sorted(say)) or "nothing"))
                for w in deny & does:
                    errors.append("%s: %s does %s, the marker says it does not"
                                  % (where, rid, w))
            low = text.lower()
            for w in say & set(WORDS):
                if not re.search(SAYS[w], low):
                    errors.append("%s: the sentence does not say %s (%s): %s"
                                  % (where, w, ", ".join(ids), text))
            for w in deny & set(WORDS):
                if not re.search(DENIES[w], low):
                    errors.append("%s: the sentence does not say that no %s "
                                  "happens (%s): %s"
                                  % (where, w, ", ".join(ids), text))
            if listing:
                print("%s %s: %s" % (where, " ".join(ids), " ".join(words)))
    for rid in sorted(job_rules):
        if rules[rid] & {"drain", "requeue", "rerun"} and rid not in marked:
            errors.append("%s: %s (%s) has no marked outcome sentence"
                          % (PAGES[0], rid, " ".join(sorted(rules[rid]))))
    for e in errors:
        print(e)
    print("%d marked outcome sentences of man/ checked against %d rules: "
          "%d failed" % (count, len(rules), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(check(sys.argv[1], "--list" in sys.argv[2:]))
