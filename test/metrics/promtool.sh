#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# test/metrics/promtool.sh CLI SRCDIR: Prometheus' own linter on the output
# of `switch-lua status --format prometheus` for the status fixture and for
# a document with every counter non-zero (test/fixtures/status): `promtool
# check metrics` must accept it without a problem.  Skipped (77) when
# promtool (Debian: prometheus) is not installed.
set -u
cli=$1 src=$2
if ! command -v promtool >/dev/null 2>&1; then
	echo "SKIP: promtool is not installed (Debian: prometheus)"
	exit 77
fi
rc=0
for f in "$src/test/fixtures/status/switch_lua.status" "$src/test/fixtures/status/every-counter.status"; do
	out=$("$cli" status --format prometheus --file "$f") || {
		echo "FAIL: switch-lua status --format prometheus --file $f: exit $?"
		rc=1
		continue
	}
	n=$(printf '%s\n' "$out" | grep -c '^# TYPE ')
	if lint=$(printf '%s\n' "$out" | promtool check metrics 2>&1) && [ -z "$lint" ]; then
		echo "ok: $f: $n families, promtool check metrics: no problem"
	else
		echo "FAIL: promtool check metrics on the output for $f:"
		printf '%s\n' "$lint"
		rc=1
	fi
done
[ "$rc" = 0 ] && echo PASS
exit "$rc"
