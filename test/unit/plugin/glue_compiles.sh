#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The C glue of switch_lua.so compiles without a warning (-Werror) against
# every configured Slurm tree beside the one this build uses: the trees of
# the other supported series (the rows of src/plugin/slurm_series) that
# `scripts/testbed slurm-tree VERSION` configured next to it.  Each tree
# gets every glue file, switch_ops.c (the switch_p_* hooks of every series)
# included; a tree of a series not in slurm_series is skipped, and a tree
# of a development snapshot (kind "snapshot") is named as one.
#
# usage: glue_compiles.sh PLUGIN_SRC_DIR LIBEXECDIR CC [CC_ARGS...]
# Trees: $SWITCHLUA_GLUE_TREES (space-separated), else every configured
# slurm-*/ in the folder of -Dslurm_src ($SWITCHLUA_SLURM_SRC).
# Exit 0 when every file compiled everywhere, 1 on a failure, 77 (skip)
# when no tree is configured.
set -u
src=$1 libexec=$2
shift 2
trees=${SWITCHLUA_GLUE_TREES:-$(for d in "$(dirname "$SWITCHLUA_SLURM_SRC")"/slurm-*/; do
	[ -f "$d/config.h" ] && [ -f "$d/slurm/slurm_version.h" ] && echo "${d%/}"
done)}
[ -n "$trees" ] || { echo "no configured Slurm tree found: skipped"; exit 77; }

glue="switch_lua.c slurm_ctld.c ctld_launch.c ctld_holds.c ctld_actions.c ctld_restore.c slurm_stepd.c"
rc=0 done_trees=""
for tree in $trees; do
	num=$(sed -n 's/^#define SLURM_VERSION_NUMBER 0x\([0-9a-f]*\).*/\1/p' "$tree/slurm/slurm_version.h")
	major=$(printf '%d' "0x$(echo "$num" | cut -c1-2)")
	minor=$(printf '%02d' "0x$(echo "$num" | cut -c3-4)")
	kind=$(awk -v s="$major.$minor" '$1 == s { print $3; exit }' "$src/slurm_series")
	if [ -z "$kind" ]; then
		echo "$tree: Slurm $major.$minor is no supported series (src/plugin/slurm_series), skipped"
		continue
	fi
	for f in $glue switch_ops.c; do
		if ! out=$("$@" -fsyntax-only -Werror -Wall -Wextra -Wno-sign-compare \
			-Wno-missing-field-initializers -Wno-unused-parameter \
			-DHAVE_CONFIG_H -fno-strict-aliasing -pthread \
			-DSWITCHLUA_LIBEXECDIR="\"$libexec\"" -I"$src" \
			-isystem "$tree/slurm" -isystem "$tree" "$src/$f" 2>&1) || [ -n "$out" ]; then
			echo "FAIL $f against $tree (series $major.$minor):"
			echo "$out"
			rc=1
		fi
	done
	if [ "$kind" = snapshot ]; then
		done_trees="$done_trees $major.$minor (${tree##*/slurm-}, a development snapshot)"
	else
		done_trees="$done_trees $major.$minor"
	fi
done
[ -n "$done_trees" ] || { echo "no tree of a supported series found: skipped"; exit 77; }
[ "$rc" = 0 ] && echo "the glue compiles without a warning against:$done_trees"
exit $rc
