# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=26.05 full=25.11,26.11
#
# t1301-special-steps: the part of the contract that needs Slurm 25.11 or
# later, live on a Slurm 26.05.3 cluster (issue 18): with the contract
# script's SETUP_SPECIAL_STEPS = true (and ALLOW_DIRECTIVES = true:
# $E2E_GEN/seed-special.lua), step_init runs for the batch step and the
# interactive step too, and the environment it returns reaches the batch
# script and the interactive step's command; every slurmstepd asks
# block_job_complete() and setup_special_steps() when it starts; a failing
# step_init of a batch step is what Slurm makes of a failed batch launch.
# switch.lua(5): slurm_switch_setup_special_steps, slurm_switch_step_init.
#
# The cluster runs the Slurm that `scripts/testbed slurm-install 26.05.3`
# built from its release tarball (or the one SWITCHLUA_SLURM names, e.g.
# 25.11.7), with the plugin `scripts/testbed plugin-install 26.05.3`
# installed; without that install every test here is skipped with the
# reason (test/e2e/run), and on Debian's 24.11 (SWITCHLUA_SLURM=debian),
# which has no special steps, too.  The interactive step is
# salloc's (LaunchParameters=use_interactive_step) with a command that needs
# no terminal: InteractiveStepOptions runs env(1) instead of a shell.

# e2e-config: --slurm "${SWITCHLUA_SLURM:-26.05.3}" --switch-type switch/lua --script "$E2E_GEN/seed-special.lua" --extra LaunchParameters=use_interactive_step --extra 'InteractiveStepOptions="--interactive --preserve-env env"'

# The endpoint the contract script's job_start puts in every jobinfo
# (jobinfo.fabric.endpoint), which its step_init exports.
T1301_ENDPOINT=fabric-mgr.example.invalid:8080

# need_special: need_seed, and a Slurm that has special steps (25.11+).
need_special() {
	need_seed
	[ "$(cluster_slurm)" != debian ] || skip "Debian's Slurm 24.11 runs no step_init for batch or interactive steps"
}

e2e_test "switch/lua on 25.11+: every slurmstepd asks setup_special_steps() (true) and block_job_complete() (false) when it starts: both lines in every node's slurmd log" t_questions
t_questions() {
	need_special
	local out n
	out=$(run_srun -N3 --network=switchlua:x true) || fail "srun -N3 failed: $out"
	for n in $(node_names); do
		slurmd_grep "$n" 'switchlua: setup_special_steps\(\): returning true$' >/dev/null ||
			fail "$n: no 'setup_special_steps(): returning true' line: $(slurmd_grep "$n" 'returning' || echo none)"
		slurmd_grep "$n" 'switchlua: block_job_complete\(\): returning false$' >/dev/null ||
			fail "$n: no 'block_job_complete(): returning false' line: $(slurmd_grep "$n" 'returning' || echo none)"
	done
}

e2e_test "switch/lua on 25.11+: sbatch --network=switchlua:x --wrap env: step_init runs for the batch step (step.partition nil) and its SWITCHLUA_JOB_ID and SWITCHLUA_ENDPOINT are in the batch output" t_batch_env
t_batch_env() {
	need_special
	local id out node
	id=$(submit -N1 --network=switchlua:x --wrap env)
	wait_job "$id" COMPLETED 30
	out=$(cat "$(job_output "$id")")
	assert_contains "SWITCHLUA_JOB_ID=$id"$'\n' "$out" "the batch output"
	assert_contains "SWITCHLUA_ENDPOINT=$T1301_ENDPOINT"$'\n' "$out" "the batch output"
	node=$(job_field "$id" NodeList)
	# step.sluid is Slurm's own SLUID of the job, as slurmd logs it when it
	# launches the batch step (26.05 also exports it as SLURM_JOB_SLUID,
	# 25.11 does not).
	local sluid
	sluid=$(slurmd_grep "$node" "Launching batch JobId=$id SLUID=" | sed -n 's/.* SLUID=\(s[0-9A-Z]*\) .*/\1/p' | head -n1)
	assert_match '^s[0-9A-Z]{13}$' "$sluid" "the SLUID in $node's 'Launching batch JobId=$id' line"
	assert_contains "SWITCHLUA_SLUID=$sluid"$'\n' "$out" "the batch output"
	slurmd_grep "$node" "\[$id\.batch\].*switchlua: step_init\(\): JobId=$id SLUID=s[0-9A-Z]{13} Partition=nil\$" >/dev/null ||
		fail "$node: no step_init line of the batch step with Partition=nil: $(slurmd_grep "$node" "step_init" || echo none)"
}

e2e_test "switch/lua on 25.11+: salloc --network=switchlua:x (use_interactive_step): step_init runs for the interactive step and the step's command sees SWITCHLUA_JOB_ID and SWITCHLUA_ENDPOINT" t_interactive_env
t_interactive_env() {
	need_special
	local out id
	out=$(c_user salloc -N1 --network=switchlua:x 2>&1) || fail "salloc failed: $out"
	id=$(sed -n 's/^salloc: Granted job allocation \([0-9]*\)$/\1/p' <<<"$out")
	[ -n "$id" ] || fail "no 'Granted job allocation' line in: $out"
	assert_contains "SWITCHLUA_JOB_ID=$id"$'\n' "$out" "the interactive step's environment"
	assert_contains "SWITCHLUA_ENDPOINT=$T1301_ENDPOINT"$'\n' "$out" "the interactive step's environment"
	# The step that ran env is the interactive step, and step_init ran for it.
	local node
	node=$(job_field "$id" NodeList)
	slurmd_grep "$node" "\[$id\.interactive\] switch/lua: JobId=$id StepId=$id\.interactive $node step_init returned 0 with 7 environment change\(s\)\$" >/dev/null ||
		fail "$node: no step_init line of step $id.interactive: $(slurmd_grep "$node" "step_init" || echo none)"
}

# What Slurm 26.05.3 makes of a batch step whose step_init fails (observed
# here; switch.lua(5) says the same): slurmstepd ends the batch step with
# ESLURM_INTERCONNECT_FAILURE ("Error configuring interconnect"), and
# slurmctld drains the node with the reason "batch job complete failure".
# A job that may be requeued (sbatch's default) is requeued: PENDING,
# Restarts=1, held back by the requeue delay (Reason BeginTime).  A job that
# may not (--no-requeue) FAILS; Slurm reports the error code as a signal:
# WTERMSIG of 2022 is 102, so ExitCode 0:102 and Reason
# RaisedSignal:102(Unknown_signal_102).
t1301_init_fail_common() {
	local id=$1
	wait_node node1 'drained|draining|drain' 30 || fail "node1 was not drained: $(node_state node1)"
	assert_eq "batch job complete failure" "$(drain_reason node1)" "node1's drain reason"
	slurmd_grep node1 "\[$id\.batch\] error: switch/lua: JobId=$id StepId=$id\.batch node1 step_init returned -1: the step fails \(Error configuring interconnect\)\$" >/dev/null ||
		fail "node1: no 'step_init returned -1' line of step $id.batch: $(slurmd_grep node1 "\[$id\.batch\]" || echo none)"
	ctld_grep "slurmd error running JobId=$id SLUID=s[0-9A-Z]{13} on Node\(s\)=node1: Error configuring interconnect\$" >/dev/null ||
		fail "slurmctld did not log the batch launch failure: $(ctld_grep "JobId=$id" | tail -n 5 || echo none)"
}

e2e_test "switch/lua on 25.11+: sbatch --network=switchlua:init_fail (requeue allowed): the batch step fails, node1 is drained 'batch job complete failure', the job is requeued (PENDING, Restarts=1)" t_init_fail_requeue
t_init_fail_requeue() {
	need_special
	local id
	id=$(submit -N1 -w node1 --network=switchlua:init_fail --wrap true)
	t1301_init_fail_common "$id"
	ctld_grep "_job_complete: requeue JobId=$id per user/system request\$" >/dev/null ||
		fail "slurmctld did not requeue job $id: $(ctld_grep "JobId=$id" | tail -n 5 || echo none)"
	wait_job "$id" PENDING 10
	assert_eq 1 "$(job_field "$id" Restarts)" "Restarts of job $id"
	# (Reason None until the scheduler's next pass sets it.)
	wait_for 15 t1301_reason_is "$id" BeginTime ||
		fail "Reason of the requeued job $id: expected BeginTime, got $(job_field "$id" Reason)"
}
t1301_reason_is() { [ "$(job_field "$1" Reason)" = "$2" ]; }

e2e_test "switch/lua on 25.11+: sbatch --no-requeue --network=switchlua:init_fail: the batch step fails, node1 is drained 'batch job complete failure', the job FAILS with ExitCode 0:102" t_init_fail_no_requeue
t_init_fail_no_requeue() {
	need_special
	local id
	id=$(submit --no-requeue -N1 -w node1 --network=switchlua:init_fail --wrap true)
	t1301_init_fail_common "$id"
	wait_job "$id" FAILED 15
	assert_eq 0 "$(job_field "$id" Restarts)" "Restarts of job $id"
	assert_eq 0:102 "$(job_field "$id" ExitCode)" "ExitCode of job $id"
	assert_eq "RaisedSignal:102(Unknown_signal_102)" "$(job_field "$id" Reason)" "Reason of job $id"
}
