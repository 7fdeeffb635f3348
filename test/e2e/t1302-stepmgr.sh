# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=26.05 full=25.11,26.11
#
# t1302-stepmgr: SlurmctldParameters=enable_stepmgr (issue 18): the job's
# steps are created by its stepmgr slurmstepd (the extern step's, on the
# batch host), not by slurmctld, so that slurmstepd builds their stepinfo
# from the jobinfo it unpacked with the job record.  Every step of a
# --network job still gets its stepinfo: step_init exports what job_start
# put in the jobinfo.  On a Slurm 25.11+ cluster, by default 26.05.3 (or the
# one SWITCHLUA_SLURM names); skipped on Debian's 24.11, and when that Slurm
# or the plugin built for it is not installed (test/e2e/run).  Slurm needs
# PrologFlags=Contain for a stepmgr (read_config.c refuses to start
# without it).

# e2e-config: --slurm "${SWITCHLUA_SLURM:-26.05.3}" --switch-type switch/lua --script "$E2E_GEN/seed.lua" --slurmctld-params enable_stepmgr --extra PrologFlags=Contain

# The endpoint the contract script's job_start puts in every jobinfo.
T1302_ENDPOINT=fabric-mgr.example.invalid:8080

# t1302_stepmgr_line NODE ID: the stepmgr line of job ID's extern step.
t1302_stepmgr_line() {
	slurmd_grep "$1" "\[$2\.extern stepmgr\] .*switch/lua: (stepmgr_init: this slurmstepd builds the stepinfo of the steps it creates|JobId=$2: stepmgr_fini: this slurmstepd builds no more stepinfo)" >/dev/null
}

e2e_test "switch/lua on 25.11+ with enable_stepmgr: the stepmgr slurmstepd builds the stepinfo of every step of a --network job: two sruns in a batch job see SWITCHLUA_JOB_ID and SWITCHLUA_ENDPOINT on every task" t_stepmgr_steps
t_stepmgr_steps() {
	need_seed
	[ "$(cluster_slurm)" != debian ] || skip "this test is for Slurm 25.11+ (the stepmgr hooks of the 25.11 and 26.05 switch ABI)"
	local id out node
	id=$(submit -N2 --network=switchlua:x \
		--wrap='srun -N2 -l printenv SWITCHLUA_JOB_ID | sort; srun -N1 -l printenv SWITCHLUA_ENDPOINT')
	wait_job "$id" COMPLETED 40
	out=$(cat "$(job_output "$id")")
	assert_eq "0: $id"$'\n'"1: $id"$'\n'"0: $T1302_ENDPOINT" "$out" "the steps' SWITCHLUA_JOB_ID and SWITCHLUA_ENDPOINT"
	# The steps were the stepmgr's: its slurmstepd (the job's extern step on
	# the batch host, "[ID.extern stepmgr]" in its log lines) says it builds
	# their stepinfo (25.11: stepmgr_init at its first stepinfo_build) or,
	# on 26.05, whose slurmstepd calls stepmgr_init while it unpacks its
	# launch message, before its log reaches the slurmd log file, that it
	# stops building it when the extern step ends (stepmgr_fini).
	node=$(job_field "$id" BatchHost)
	wait_for 10 t1302_stepmgr_line "$node" "$id" ||
		fail "$node: no stepmgr line of job $id's extern step: $(slurmd_grep "$node" "switch/lua: .*stepmgr" || echo none)"
	if slurmd_grep "$node" "stepmgr_init: this slurmstepd cannot build stepinfo" >&2; then
		fail "the stepmgr slurmstepd could not build stepinfo"
	fi
	# And every step's step_init ran with that stepinfo.
	local step n
	for step in 0 1; do
		n=$(grep -h -c -E "\[$id\.$step\] switch/lua: JobId=$id StepId=$id\.$step node[0-9] step_init returned 0" "$E2E_CLH"/log/slurmd-node*.log | awk '{ s += $1 } END { print s + 0 }')
		[ "$n" -ge 1 ] || fail "no step_init line of step $id.$step on any node"
	done
}
