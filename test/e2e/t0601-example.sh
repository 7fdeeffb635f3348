# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05
#
# t0601-example: the project's own example, conf/switch.lua, as installed:
# a job with --network=vni gets a VNI (claimed by an exclusive mkdir in the
# state folder the package created, /var/lib/slurm-switch-lua/example) in
# job_start, every task sees it as FABRIC_VNI, and job_complete releases it
# with the nodes held (its block_job_complete is true).  Other jobs are
# declined.

# e2e-config: --switch-type switch/lua --script conf/switch.lua

e2e_test "switch/lua: example conf/switch.lua: --network=vni gives every task of srun -N2 FABRIC_VNI; job_complete releases it" t_example_vni
t_example_vni() {
	local name id vni out n
	grep -F "switch/lua: script /etc/slurm/switch.lua ($(settings_line), block_job_complete=true)" \
		"$(ctld_log)" >/dev/null || fail "slurmctld did not log the example's block_job_complete=true"
	# The example's "fabric manager" is a folder the package's postinst
	# made for SlurmUser: nothing to set up by hand (issue 35).
	assert_eq "root 755 slurm 700" \
		"$(c_root stat -c '%U %a' /var/lib/slurm-switch-lua /var/lib/slurm-switch-lua/example | tr '\n' ' ' | sed 's/ $//')" \
		"owner and mode of the example's state folders"
	name=e2e-vni-$(e2e_uniq)
	# shellcheck disable=SC2016 # expanded by the task's shell
	out=$(run_srun -N2 -l -J "$name" --network=vni sh -c 'echo "$SLURMD_NODENAME FABRIC_VNI=$FABRIC_VNI FABRIC_ENABLED=$FABRIC_ENABLED"' | sort) ||
		fail "srun --network=vni failed: $out; Reason: $(job_reason "$(job_named "$name")")"
	id=$(job_named "$name")
	vni=$(sed -n '1s/.*FABRIC_VNI=\([0-9]*\) .*/\1/p' <<<"$out")
	if ! [[ $vni =~ ^[0-9]+$ ]] || [ "$vni" -lt 1000 ] || [ "$vni" -ge 4000 ]; then
		fail "no VNI in 1000-3999: $out"
	fi
	assert_eq "0: node1 FABRIC_VNI=$vni FABRIC_ENABLED=1"$'\n'"1: node2 FABRIC_VNI=$vni FABRIC_ENABLED=1" "$out" "the tasks' fabric environment"
	ctld_job "$id" " job_start: JobId=$id: VNI $vni on node\\[1-2\\], Name=$name\$" >/dev/null || fail "the example's job_start line is missing"
	wait_job "$id" COMPLETED 15
	ctld_job "$id" ": holding the job and nodes node\\[1-2\\]" >/dev/null || fail "the nodes were not held during job_complete"
	ctld_job "$id" " job_complete: JobId=$id: VNI $vni released\$" >/dev/null || fail "the example's job_complete line is missing"
	ctld_job "$id" ' job_complete returned rc=0 \(slurm.SUCCESS\)' >/dev/null || fail "job_complete did not succeed"
	# The "fabric manager" (a state folder in the chroot) has nothing left.
	! compgen -G "$E2E_ROOT/var/lib/slurm-switch-lua/example/*-job-$id-*.vni*" >/dev/null || fail "the VNI file of job $id is still there"
	[ ! -e "$E2E_ROOT/var/lib/slurm-switch-lua/example/vni-$vni" ] || fail "the claim of VNI $vni is still there"
	for n in node1 node2; do
		wait_node "$n" idle 10
		assert_eq "" "$(drain_reason "$n")" "drain reason of $n"
	done
}

e2e_test "switch/lua: example conf/switch.lua: a job with another --network is declined: no FABRIC_VNI, no job_complete" t_example_other
t_example_other() {
	local name id out
	name=e2e-other-$(e2e_uniq)
	# shellcheck disable=SC2016 # expanded by the task's shell
	out=$(run_srun -N2 -l -J "$name" --network=other sh -c 'echo "FABRIC_VNI=${FABRIC_VNI-unset}"' | sort) ||
		fail "srun --network=other failed: $out"
	id=$(job_named "$name")
	assert_eq $'0: FABRIC_VNI=unset\n1: FABRIC_VNI=unset' "$out" "the tasks' environment"
	wait_job "$id" COMPLETED 10
	ctld_job "$id" ' job_start declined the job \(nil jobinfo\): not managed by switch/lua' >/dev/null || fail "no 'declined' line"
	if ctld_job "$id" ' job_complete'; then fail "job_complete ran for a declined job"; fi
}
