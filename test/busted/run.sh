#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# test/busted/run.sh SRCDIR CASE: busted (Debian: lua-busted) with Lua 5.4,
# the plugin's Lua, and the switchlua modules of the source tree (lua/):
#   module:  test/busted/testing_spec.lua, switchlua.testing itself;
#   example: test/busted/switch_spec.lua on conf/switch.lua: must pass;
#   broken:  the same spec on a copy of conf/switch.lua whose job_start is
#            broken on purpose (the VNI returned as a string): must fail,
#            naming the test that saw it.
# Skipped (77) when busted or lua5.4 is not installed.
set -u
src=$1 what=$2
busted=$(command -v busted) || { echo "SKIP: busted is not installed (Debian: lua-busted)"; exit 77; }
command -v lua5.4 >/dev/null 2>&1 || { echo "SKIP: lua5.4 is not installed"; exit 77; }
cd "$src" || exit 1
export LUA_PATH="$src/lua/?.lua;;"
run() { lua5.4 "$busted" --output=plainTerminal --no-auto-insulate "$@"; }
case "$what" in
module) run test/busted/testing_spec.lua ;;
example) SWITCHLUA_EXAMPLE=$src/conf/switch.lua run test/busted/switch_spec.lua ;;
broken)
	tmp=$(mktemp -d) || exit 1
	trap 'rm -rf "$tmp"' EXIT
	sed 's/return slurm.SUCCESS, { vni = vni }/return slurm.SUCCESS, { vni = tostring(vni) }/' \
		conf/switch.lua >"$tmp/switch.lua"
	if cmp -s conf/switch.lua "$tmp/switch.lua"; then
		echo "FAIL: the edit that breaks job_start no longer applies to conf/switch.lua"
		exit 1
	fi
	out=$(SWITCHLUA_EXAMPLE=$tmp/switch.lua run test/busted/switch_spec.lua 2>&1)
	status=$?
	printf '%s\n' "$out"
	[ "$status" != 0 ] || { echo "FAIL: the spec passed on a broken job_start"; exit 1; }
	case "$out" in
	*"4 successes / 1 failure / 0 errors"*"gives a --network=vni job a VNI"*)
		echo "PASS: the spec failed on the broken job_start, in that test only, as it must"
		;;
	*) echo "FAIL: expected 4 successes and 1 failure, the job_start test's"; exit 1 ;;
	esac
	;;
*) echo "usage: run.sh SRCDIR module|example|broken" >&2; exit 2 ;;
esac
