#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# `meson setup -Dslurm_src=TREE` refuses a tree of a Slurm series switch/lua
# does not support (here a configured-looking 24.05.8 tree), naming the
# supported series, and accepts nothing silently.
#
# usage: series_refused.sh MESON PROJECT_SOURCE_ROOT
set -u
meson=$1 root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/slurm-24.05.8
mkdir -p "$tree/src/slurmctld" "$tree/slurm"
: >"$tree/src/slurmctld/slurmctld.h"
cat >"$tree/slurm/slurm_version.h" <<'H'
#define SLURM_VERSION_NUMBER 0x180508
#define SLURM_VERSION_MAJOR(a) (((a) >> 16) & 0xff)
#define SLURM_VERSION_MINOR(a) (((a) >> 8) & 0xff)
#define SLURM_VERSION_MICRO(a) ((a) & 0xff)
H
printf '#define SLURM_VERSION_NUMBER 0x180508\n#define SLURM_PREFIX "%s"\n' "$tmp/prefix" >"$tree/config.h"

if out=$("$meson" setup "$tmp/build" "$root" -Dslurm_src="$tree" -Dtests=false 2>&1); then
	echo "FAIL: meson setup accepted a 24.05 tree"
	exit 1
fi
# The supported series: the rows of src/plugin/slurm_series, in order.
series=$(awk '!/^#/ && NF { print $1 }' "$root/src/plugin/slurm_series" | sort | paste -sd, - | sed 's/,/, /g')
want="is Slurm 24.05.8 (series 24.05): switch/lua supports the Slurm series $series only"
if ! printf '%s\n' "$out" | grep -qF "$want"; then
	echo "FAIL: meson setup failed without the expected message: $want"
	printf '%s\n' "$out" | tail -n 20
	exit 1
fi
echo "refused: $(printf '%s\n' "$out" | grep -F "$want")"
