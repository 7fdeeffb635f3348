#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks every example log line of the man pages against the code's words.

An example line is a line of man/*.[15] that shows what switch/lua logs or
sets as a reason: inside .EX/.EE (or .nf/.fi) a line that starts with
"switch/lua: ", "switch setup ", "switch teardown " or "switch postfini "
(a `switch-lua simulate` timeline prefix
"  29 ms  slurmctld  " is skipped), and a quoted one in a font request,
.RB \\(lq "switch/lua: ..." \\(rq (italic arguments are placeholders).

The catalogue is every string literal of src/ (adjacent literals joined;
fmt's {} / {name} and printf's %s, %d, PRIu32... are wildcards) and of the
Lua scripts the project ships or tests with (what a script logs).  A format
covers the parts of a line its literal text matches, in order, wildcards in
between.  Every plain word of the line (letters only) must be covered by a
format; numbers, identifiers (job_start, slurm.EAGAIN), paths, KEY=VALUE
tokens, italic placeholders and "..." need not be.  A line with an
uncovered word fails with the page, the line and the words.

usage: log_examples.py SOURCE_ROOT [--list]
"""
import glob
import os
import re
import sys

PLACEHOLDER = "\x00"

# ----------------------------------------------------------------- catalogue

PRI = re.compile(r"PRI[diouxX](8|16|32|64|MAX|PTR)")
C_ESC = {"n": "\n", "t": "\t", '"': '"', "'": "'", "\\": "\\", "0": "\0", "r": "\r", "a": "\a"}


def c_literals(text):
    """Groups of adjacent C/C++ string literals of `text`, each one string;
    a PRIxNN macro between two literals becomes a %d."""
    groups, cur, i, n = [], None, 0, len(text)
    last_end = 0
    raw = re.compile(r'(?:u8|u|U|L)?R"([^(\s]*)\(')

    def close():
        nonlocal cur
        if cur is not None:
            groups.append(cur)
        cur = None

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        m = raw.match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + m.group(1) + '"', m.end())
            s = text[m.end():end]
            between = text[last_end:i]
            if cur is not None and between.strip() == "":
                cur += s
            else:
                close()
                cur = s
            i = end + len(m.group(1)) + 2
            last_end = i
            continue
        if c == '"':
            j, s = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    s.append(C_ESC.get(text[j + 1], text[j + 1]))
                    j += 2
                else:
                    s.append(text[j])
                    j += 1
            between = text[last_end:i]
            glue = PRI.sub("", between).strip()
            joined = "".join(s)
            if cur is not None and glue == "":
                cur += ("%d" if PRI.search(between) else "") + joined
            else:
                close()
                cur = joined
            i = j + 1
            last_end = i
            continue
        if c == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        pri = PRI.match(text, i)
        if pri:
            i = pri.end()
            continue
        if not c.isspace():
            close()  # a token that is neither a literal nor a PRI macro ends the group
        i += 1
    close()
    return groups


def lua_literals(text):
    """The string literals of a Lua chunk ('...', "...", [[...]])."""
    out = []
    for m in re.finditer(r'--\[\[.*?\]\]|--[^\n]*|\[(=*)\[(.*?)\]\1\]|"((?:\\.|[^"\\\n])*)"|\'((?:\\.|[^\'\\\n])*)\'',
                         text, re.S):
        if m.group(0).startswith("--"):
            continue
        s = m.group(2) if m.group(2) is not None else (m.group(3) if m.group(3) is not None else m.group(4))
        if s is not None:
            out.append(re.sub(r"\\(.)", lambda e: C_ESC.get(e.group(1), e.group(1)), s))
    return out


WILD = re.compile(r"\{[^{}]*\}|%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?[diouxXeEfgGcsp]|%[qs]")


def fragments(fmt):
    """The literal pieces of a format between its wildcards."""
    parts = WILD.split(fmt)
    return [p.replace("{{", "{").replace("}}", "}").replace("%%", "%") for p in parts]


def catalogue(root):
    formats = []
    for path in glob.glob(os.path.join(root, "src", "**", "*.*"), recursive=True):
        if not re.search(r"\.(c|cpp|h|hpp)$", path):
            continue
        with open(path, encoding="utf-8") as f:
            for g in c_literals(f.read()):
                formats.extend(g.split("\n"))
    for pat in ("conf/*.lua", "lua/*.lua", "test/fixtures/*.lua", "test/e2e/lua/*.lua"):
        for path in glob.glob(os.path.join(root, pat)):
            with open(path, encoding="utf-8") as f:
                for s in lua_literals(f.read()):
                    formats.extend(s.split("\n"))
    out = []
    for fmt in set(formats):
        frags = fragments(fmt)
        letters = sum(ch.isalpha() for p in frags for ch in p)
        if letters < 4:
            continue
        pattern = "(.*?)".join("(" + re.escape(p) + ")" for p in frags)
        out.append((fmt, re.compile(pattern)))
    return out


# ----------------------------------------------------------------- man pages

def troff_inline(s):
    """A man page text line as the reader sees it; italic text becomes a
    placeholder."""
    s = re.sub(r"\\f[I](.*?)\\f[PR]", PLACEHOLDER, s)
    s = re.sub(r"\\f[BRPI]", "", s)
    s = s.replace("\\-", "-").replace("\\(lq", "\u201c").replace("\\(rq", "\u201d")
    s = s.replace("\\e", "\\").replace("\\&", "").replace("\\t", "\t").replace("\\ ", " ")
    return s.replace("...", PLACEHOLDER)


def macro_words(rest):
    """The arguments of a font request, quotes honoured."""
    return [a if a[:1] != '"' else a[1:-1] for a in re.findall(r'"[^"]*"|\S+', rest)]


def font_request(line):
    """A line of .RB/.BR/.RI/.IR/... as text, italic arguments placeholders."""
    m = re.match(r"^\.(B|I|BR|RB|BI|IB|RI|IR) (.*)$", line)
    if not m:
        return None
    fonts, words = m.group(1), macro_words(m.group(2))
    out = []
    for k, w in enumerate(words):
        font = fonts[k % len(fonts)] if len(fonts) > 1 else fonts
        out.append(PLACEHOLDER if font == "I" else troff_inline(w))
    return "".join(out)


# The parser's own messages ("SlurmctldParameters: switch_timeout=0: must
# be ...") shown alone are compared with what the parser says for the same
# input by ctld_unit (SettingsMan.EveryParserMessageShownIsTheParsersText).
STARTS = ("switch/lua: ", "switch setup ", "switch teardown ", "switch postfini ")
TIMELINE = re.compile(r"^\s*\d+ ms  \S+\s+")


def examples(root):
    """(page, line number, text) of every example line."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, "man", "*.[15]"))):
        page = os.path.basename(path)
        block = False
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for no, line in enumerate(lines, 1):
            if line in (".EX", ".nf"):
                block = True
                continue
            if line in (".EE", ".fi"):
                block = False
                continue
            if block and not line.startswith("."):
                text = TIMELINE.sub("", troff_inline(line))
                if text.startswith(STARTS):
                    out.append((page, no, text))
                continue
            text = font_request(line)
            if text is None:
                continue
            for q in re.findall("\u201c(.*?)\u201d", text):
                if q.startswith("switch/lua: ") and len(q) > len("switch/lua: "):
                    out.append((page, no, q))
    return out


# ----------------------------------------------------------------- matching

PLAIN = re.compile(r"^[A-Za-z]+(?:'[a-z]+)?$")
ALLCAPS = re.compile(r"^[A-Z][A-Z0-9]+$")

# What a hook's Lua script logs or raises in the man pages' examples, when
# no script of the tree says it: an administrator's own words, not ours.
SCRIPT_TEXTS = ["fabric manager down", "fabric port down", "fabric manager unreachable"]

# What Lua itself says (its parser and its traceback): not in src/.
LUA_TEXTS = ["unexpected symbol near {}", "stack traceback:", "[C]: in function {}",
             "{}: in function {}", "{}: in upvalue {}", "{}: in local {}"]


def extra_formats():
    out = []
    for fmt in SCRIPT_TEXTS + LUA_TEXTS:
        frags = fragments(fmt)
        out.append((fmt, re.compile("(.*?)".join("(" + re.escape(p) + ")" for p in frags))))
    return out


def value_like(core):
    """A token that is not prose: a number, an identifier, a path, a
    KEY=VALUE, a node list, SIGSEGV / EAGAIN."""
    return (not PLAIN.match(core)) or bool(ALLCAPS.match(core))


def uncovered_words(text, formats):
    covered = [ch == PLACEHOLDER for ch in text]
    for _fmt, rx in formats:
        for m in rx.finditer(text):
            # groups alternate: fragment, wildcard, fragment, ...
            for g in range(1, (rx.groups or 0) + 1, 2):
                for k in range(m.start(g), m.end(g)):
                    covered[k] = True
    words = []
    for m in re.finditer(r"\S+", text):
        if all(c or not ch.isalpha() for ch, c in zip(m.group(0), covered[m.start():m.end()])):
            continue
        core = m.group(0).strip("()[],;:.!?\"'\u201c\u201d")
        if core and not value_like(core):
            words.append(core)
    return words


def main(argv):
    root = argv[1]
    formats = catalogue(root) + extra_formats()
    found = examples(root)
    if "--list" in argv:
        for page, no, text in found:
            print(f"{page}:{no}: {text}")
        return 0
    failures = 0
    for page, no, text in found:
        words = uncovered_words(text, formats)
        if words:
            failures += 1
            shown = text.replace(PLACEHOLDER, "...")
            print(f"{page}:{no}: no format of src/ (nor a script's text) says {' '.join(words)!r} "
                  f"in: {shown}")
    print(f"{len(found)} example lines of man/ checked against {len(formats)} formats: "
          f"{failures} failed")
    if len(found) < 60:
        print("fewer than 60 example lines found: the reader of the man pages is broken")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
