# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11
#
# t1502-old-node: a rolling upgrade, slurmctld first, then the nodes
# (issue 20, 7: "a stepinfo of a newer version on an older node").  node2
# runs a plugin one release behind slurmctld's: this tree built with
# meson's -Dstepinfo_version=1 (it reads and writes stepinfo version 1 only,
# as a plugin from before the provenance did), found first through node2's
# own PluginDir (scripts/cluster restart-slurmd --conf).  switch.lua(5):
# Reading it back, SLURM VERSIONS.
#
# The build of that plugin takes 2 to 4 minutes on two cores, so the test
# runs on the Debian 24.11.5 cluster only: the check it shows (the node's
# stepinfo decoder against the record slurmctld built) is the same code on
# every Slurm series.
#
# e2e-timeout: 600

OLD=/var/tmp/switch-lua-old-node # the older plugin's build, inside the chroot
NODE2_CONF=/etc/slurm-e2e-old-node2

# e2e-config: --switch-type switch/lua --script conf/switch.lua

# Expected: a --network step on node2 fails with "Error configuring
# interconnect" and no task output; node2's slurmd log names the step,
# node2 and both versions ("record version 2 is newer than this plugin's 1;
# this node reads stepinfo versions 1 to 1"); the same step on node1 gets
# its fabric environment (FABRIC_VNI); once node2 is back on the installed
# plugin (upgraded) the step runs there too; nothing is drained.
e2e_test "switch/lua: rolling upgrade: node2's plugin reads stepinfo version 1 only (a release behind slurmctld): a --network step there fails with a line naming node2 and both versions, never runs without its hooks; on node1, and on node2 once upgraded, it gets its fabric" t_old_node
t_old_node() {
	local src pdir out rc name id
	[ "$(cluster_slurm)" = debian ] ||
		skip "the older node's plugin is built for Debian's Slurm only (minutes per build); its check is the same code on every series"
	src=$("$E2E_REPO/scripts/testbed" slurm-src) || fail "no configured Slurm tree in the testbed"
	note "building this tree's plugin with -Dstepinfo_version=1 in $OLD (2 to 4 minutes)"
	c_root sh -c "rm -rf $OLD && mkdir -p $OLD/lib &&
		meson setup $OLD/build /repo --prefix=/usr -Dslurm_src=$src -Dtests=false -Dstepinfo_version=1 >$OLD/build.log 2>&1 &&
		ninja -C $OLD/build src/plugin/switch_lua.so >>$OLD/build.log 2>&1 &&
		cp $OLD/build/src/plugin/switch_lua.so $OLD/lib/" ||
		fail "the older plugin did not build: $(tail -n 20 "$E2E_ROOT$OLD/build.log")"
	pdir=$(c_root scontrol show config | awk '$1 == "PluginDir" { print $3 }')
	[ -n "$pdir" ] || fail "no PluginDir in scontrol show config"
	c_root sh -c "rm -rf $NODE2_CONF && cp -a /etc/slurm $NODE2_CONF &&
		sed -i '/^PluginDir=/d' $NODE2_CONF/slurm.conf &&
		echo PluginDir=$OLD/lib:$pdir >>$NODE2_CONF/slurm.conf"
	trap _old_node_restore EXIT
	"$E2E_CLUSTER" restart-slurmd node2 --conf "$NODE2_CONF" >&2
	name=e2e-old-node-$(e2e_uniq)
	rc=0
	out=$(run_srun -N1 -w node2 -J "$name" --network=vni printenv FABRIC_VNI) || rc=$?
	[ "$rc" != 0 ] || fail "the step ran on node2, whose plugin cannot read its stepinfo: $out"
	assert_contains "Error configuring interconnect" "$out" "srun's message"
	[[ ! $out =~ (^|$'\n')[0-9]+($'\n'|$) ]] || fail "the task ran on node2: $out"
	wait_log "$(slurmd_log node2)" "switch/lua: .*on node2: the job is managed by switch/lua \(its step has a stepinfo\) but this node cannot read its stepinfo \(switch/lua stepinfo: record version 2 is newer than this plugin's 1; this node reads stepinfo versions 1 to 1: upgrade it to slurmctld's version\): the step fails \(Error configuring interconnect\)" 10
	id=$(job_named "$name")
	wait_job_done "$id" 30
	out=$(run_srun -N1 -w node1 --network=vni printenv FABRIC_VNI) ||
		fail "the step on node1 failed: $out"
	assert_match "^[0-9]+$" "$out" "FABRIC_VNI of the step on node1"
	# node2 upgraded: the installed plugin, the cluster's own configuration.
	"$E2E_CLUSTER" restart-slurmd node2 >&2
	out=$(run_srun -N1 -w node2 --network=vni printenv FABRIC_VNI) ||
		fail "the step on the upgraded node2 failed: $out"
	assert_match "^[0-9]+$" "$out" "FABRIC_VNI of the step on the upgraded node2"
	expect_no_drain_any
}
_old_node_restore() {
	"$E2E_CLUSTER" restart-slurmd node2 >&2 || :
	c_root rm -rf "$NODE2_CONF" || :
}

# expect_no_drain_any: no node is drained or down.
expect_no_drain_any() {
	local bad
	bad=$(c_root sinfo -h -N -o '%N %T' | awk '$2 ~ /drain|down/')
	[ -z "$bad" ] || fail "nodes out of service: $bad"
}
