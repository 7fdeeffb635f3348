#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/bench_cluster.py's RUNNER_ENV against the runners' environment.

The benchmark measures the setup's commands alone "as a runner starts
them": in the environment src/supervisor/spawn.cpp's base_child_env()
gives every runner (and so every command a hook starts with os.execute).
That environment is stated in two places; this checks that they agree, so
a change to one fails here until the other follows.

usage: runner_env_test.py SOURCE_ROOT
"""
import importlib.util
import os
import re
import sys


def base_child_env(root):
    """The NAME=VALUE strings base_child_env() returns, from its source."""
    with open(os.path.join(root, "src", "supervisor", "spawn.cpp")) as f:
        text = f.read()
    m = re.search(r"std::vector<std::string>\s+base_child_env\(\)\s*\{\s*return\s*\{(.*?)\};",
                  text, re.S)
    if not m:
        raise SystemExit("runner_env_test: base_child_env() { return {...}; } not found in "
                         "src/supervisor/spawn.cpp: update this test with it")
    return re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))


def bench_runner_env(root):
    path = os.path.join(root, "scripts", "bench_cluster.py")
    spec = importlib.util.spec_from_file_location("bench_cluster", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # definitions only: its main is guarded
    return mod.RUNNER_ENV


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    want = {}
    for kv in base_child_env(root):
        name, sep, value = kv.partition("=")
        if not sep:
            raise SystemExit(f"runner_env_test: base_child_env() entry {kv!r} has no '='")
        want[name] = value
    got = bench_runner_env(root)
    if not want:
        print("FAIL: base_child_env() returns no variable: the parse is wrong")
        return 1
    if got != want:
        print("FAIL: scripts/bench_cluster.py RUNNER_ENV is", got)
        print("      src/supervisor/spawn.cpp base_child_env() gives", want)
        return 1
    print(f"ok: RUNNER_ENV matches base_child_env(): {sorted(want)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
