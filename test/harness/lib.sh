# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# test/harness/lib.sh: what test/harness/run and test/harness/cluster share.
# The sourcing script sets TMP (a folder; a case's output in $TMP/out).
#   check NAME CMD...  one case: "ok - NAME" when CMD succeeds, else
#                      "not ok - NAME" and the last 15 lines of $TMP/out
#   summary            "N passed, N failed"; status 0 when none failed
pass=0
fail=0
check() {
	local name=$1
	shift
	if "$@"; then
		pass=$((pass + 1))
		echo "ok - $name"
	else
		fail=$((fail + 1))
		echo "not ok - $name"
		sed 's/^/# /' "$TMP/out" | tail -n 15
	fi
}
summary() {
	echo "$pass passed, $fail failed"
	[ "$fail" = 0 ]
}
