#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Every wait and period of src/ measures a monotonic clock (issue 20): no
# CLOCK_REALTIME, no pthread_cond_timedwait() but the one in
# src/plugin/mono_wait.c (on a condition whose clock is CLOCK_MONOTONIC), no
# wall-clock (system_clock) deadline in a wait_until/sleep_until, no
# std::condition_variable_any or timed mutex fed a system_clock time.
# Prints each offending line; exit 1 if there is one.
#
#   $1  the source root (meson.project_source_root())
set -u
src="$1/src"
bad=0
# grep -rn output without comment lines (" * ...", "// ...", "/* ...").
code() {
	grep -v -E '^[^:]+:[0-9]+:[[:space:]]*(\*|//|/\*)'
}
report() {
	if [ -n "$2" ]; then
		printf '%s\n%s\n' "$1" "$2" >&2
		bad=1
	fi
}
report "CLOCK_REALTIME in src/ (a wait or a period must use CLOCK_MONOTONIC):" \
	"$(grep -rn 'CLOCK_REALTIME' "$src" | code || true)"
report "pthread_cond_timedwait outside src/plugin/mono_wait.c (use sl_mono_timedwait):" \
	"$(grep -rn 'pthread_cond_timedwait' "$src" | code | grep -v '^[^:]*/plugin/mono_wait\.c:' || true)"
report "a wall-clock deadline in a wait:" \
	"$(grep -rnE '(wait_until|sleep_until|try_lock_until).*system_clock' "$src" || true)"
report "pthread_condattr_setclock other than CLOCK_MONOTONIC:" \
	"$(grep -rn 'pthread_condattr_setclock' "$src" | grep -v 'CLOCK_MONOTONIC' || true)"
grep -q 'pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)' "$src/plugin/mono_wait.c" ||
	report "src/plugin/mono_wait.c does not set CLOCK_MONOTONIC on its condition:" "mono_wait.c"
[ "$bad" = 0 ] && echo "clock audit: every timed wait of src/ is on CLOCK_MONOTONIC"
exit "$bad"
