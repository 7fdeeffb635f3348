#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# test/luacheck/run.sh LUACHECKRC SRCDIR CASE: luacheck with the switchlua
# standard (lua/switchlua.luacheckrc.in, built from the API definitions)
#   clean:   no warning on the example conf/switch.lua;
#   seed:    none on the contract script (../shared/seeds/switch.lua, or
#            $SWITCHLUA_SEED); skipped (77) when it is absent;
#   misspelt, global, unused: exactly the one warning each fixture of
#            test/luacheck/ was written with (a misspelt slurm.log_inf, a
#            global written by accident, an unused local).
# Skipped (77) when luacheck (Debian: lua-check) is not installed.
set -u
rc_file=$1 src=$2 what=$3
if ! command -v luacheck >/dev/null 2>&1; then
	echo "SKIP: luacheck is not installed (Debian: lua-check)"
	exit 77
fi
case "$what" in
clean) f=$src/conf/switch.lua want= ;;
seed) f=${SWITCHLUA_SEED:-$src/../shared/seeds/switch.lua} want= ;;
misspelt)
	f=$src/test/luacheck/misspelt-slurm-name.lua
	want="$f:6:2: (W143) accessing undefined field 'log_inf' of global 'slurm'"
	;;
global)
	f=$src/test/luacheck/accidental-global.lua
	want="$f:6:2: (W111) setting non-standard global variable 'tries'"
	;;
unused)
	f=$src/test/luacheck/unused-local.lua
	want="$f:6:8: (W211) unused variable 'nodes'"
	;;
*) echo "usage: run.sh LUACHECKRC SRCDIR clean|seed|misspelt|global|unused" >&2; exit 2 ;;
esac
if [ ! -r "$f" ]; then
	echo "SKIP: no contract script at $f"
	exit 77
fi
out=$(luacheck --config "$rc_file" --std lua54+switchlua --formatter plain --codes --no-color "$f" 2>&1)
status=$?
echo "$out"
if [ -z "$want" ]; then
	if [ "$status" != 0 ] || [ -n "$out" ]; then
		echo "FAIL: exit $status, expected 0 and no warning"
		exit 1
	fi
else
	[ "$status" = 1 ] || { echo "FAIL: exit $status, expected 1 (warnings)"; exit 1; }
	[ "$out" = "$want" ] || { echo "FAIL: expected exactly: $want"; exit 1; }
fi
echo PASS
