#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# test/typecheck/run.sh CHECKER SRCDIR [clean|bad|seed]: the editor-support
# test.  switch-lua-typecheck (with the definitions lua-meta/slurm.lua) must
#   clean: find no diagnostic in the example conf/switch.lua;
#   seed:  find none in the contract script (../shared/seeds/switch.lua, or
#          $SWITCHLUA_SEED); skipped (77) when it is absent;
#   bad:   find exactly one in test/typecheck/bad-return.lua, naming the
#          file, line 16, the hook and the wrong type (a string as rc).
set -u
checker=$1 src=$2 what=$3
meta=$src/lua/switch-lua-meta/slurm.lua
run() { lua5.4 "$checker" --meta "$meta" "$@"; }
case "$what" in
clean | seed)
	if [ "$what" = clean ]; then f=$src/conf/switch.lua; else f=${SWITCHLUA_SEED:-$src/../shared/seeds/switch.lua}; fi
	if [ ! -r "$f" ]; then
		echo "SKIP: no contract script at $f"
		exit 77
	fi
	out=$(run "$f")
	rc=$?
	echo "$out"
	[ "$rc" = 0 ] || { echo "FAIL: exit $rc, expected 0 (no diagnostic)"; exit 1; }
	case "$out" in "$f: ok ("*) ;; *) echo "FAIL: expected one '$f: ok (...)' line"; exit 1 ;; esac
	;;
bad)
	f=$src/test/typecheck/bad-return.lua
	out=$(run "$f")
	rc=$?
	echo "$out"
	[ "$rc" = 1 ] || { echo "FAIL: exit $rc, expected 1"; exit 1; }
	n=$(printf '%s\n' "$out" | grep -c .)
	[ "$n" = 1 ] || { echo "FAIL: $n lines, expected exactly one diagnostic"; exit 1; }
	want="$f:16: slurm_switch_job_complete: returns \"0\" (a string) as rc, expected integer (the hook returns rc, message, nodes)"
	[ "$out" = "$want" ] || { echo "FAIL: expected: $want"; exit 1; }
	;;
*) echo "usage: run.sh CHECKER SRCDIR clean|bad|seed" >&2; exit 2 ;;
esac
echo PASS
