#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/bench's and scripts/bench_cluster.py's arguments.

A full `scripts/bench --cluster` run boots clusters for hours: `--help`, a
typo or a bad value must be refused before anything is booted (they were
once ignored, and `--help` started the whole run), and `scripts/bench
CALLS` must refuse what is not a positive number (it once read `--help` as
0 calls and aborted on an empty table).

usage: args_test.py SOURCE_ROOT
"""
import contextlib
import importlib.util
import io
import os
import subprocess
import sys


def load(root):
    path = os.path.join(root, "scripts", "bench_cluster.py")
    spec = importlib.util.spec_from_file_location("bench_cluster", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # definitions only: its main is guarded
    return mod


class WouldBoot(Exception):
    pass


def refuse_boot(*args, **kwargs):
    raise WouldBoot(f"would have run scripts/cluster {args}")


def exit_code(fn, *args):
    """fn(*args)'s SystemExit code; "booted" when it went on to boot a
    cluster (stopped by the stand-ins below), None when it returned."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            fn(*args)
        except SystemExit as e:
            return e.code
        except WouldBoot:
            return "booted"
    return None


def main():
    root = sys.argv[1]
    bench = load(root)
    # A regression must fail here, not boot a cluster for hours.
    bench.boot = bench.cluster = refuse_boot
    failures = []

    def check(what, ok):
        print(f"{'ok' if ok else 'not ok'} - {what}")
        if not ok:
            failures.append(what)

    a = bench.parse_args([])
    check("no arguments: 5 repetitions, A,B,C, every phase",
          (a.reps, a.configs, a.phases) == (5, "A,B,C", ",".join(bench.PHASES)))
    check("--quick: 2 repetitions", bench.parse_args(["--quick"]).reps == 2)
    check("--quick --reps 4: 4", bench.parse_args(["--quick", "--reps", "4"]).reps == 4)
    check("--results F kept", bench.parse_args(["--results", "/x.json"]).results == "/x.json")
    for argv, code in ((["--help"], 0), (["-h"], 0), (["--bogus"], 2), (["--reps", "0"], 2),
                       (["--reps", "x"], 2), (["--reps"], 2), (["extra"], 2)):
        # host() itself: it must stop before it boots anything.
        got = exit_code(bench.host, argv)
        check(f"host({argv}): exits {code} before booting (got {got!r})", got == code)

    script = os.path.join(root, "scripts", "bench")
    for arg in ("foo", "0", "-3", "1x"):
        r = subprocess.run([script, arg], capture_output=True, text=True, timeout=30)
        check(f"scripts/bench {arg}: refused with status 2 (got {r.returncode}: {r.stderr.strip()!r})",
              r.returncode == 2 and "CALLS must be a positive number" in r.stderr)
    r = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=30)
    check("scripts/bench --help: status 0, prints its usage",
          r.returncode == 0 and r.stdout.startswith("scripts/bench [CALLS]"))
    r = subprocess.run([script, "10", "20"], capture_output=True, text=True, timeout=30)
    check("scripts/bench 10 20: refused", r.returncode == 2)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
