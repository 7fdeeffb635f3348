# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11,26.05 full=25.05,25.11
#
# t0201-job-start: slurm_switch_job_start in slurmctld, driven by the
# directives of the contract script (a copy with ALLOW_DIRECTIVES = true):
# the default path, skip, defer, start_crash; then a job_start that hangs
# past switch_timeout (test/e2e/lua/hang.lua).  switch.lua(5): job_start,
# R_START_OK, R_START_DECLINE, R_START_FAIL, R_START_TIMEOUT.

# e2e-config: --switch-type switch/lua --script "$E2E_GEN/seed.lua"

# expect_env OUT ID NTASKS: OUT (srun -l ... env | grep ^SWITCHLUA_ | sort)
# holds, for every task 0..NTASKS-1, the environment that the contract
# script's step_init sets for job ID on the default path, and nothing else.
expect_env() {
	local out=$1 id=$2 ntasks=$3 r sluid want=""
	sluid=$(sed -n 's/^0: SWITCHLUA_SLUID=//p' <<<"$out")
	if [ -z "$sluid" ] || [ "$sluid" = nil ]; then fail "task 0 has no SWITCHLUA_SLUID: $out"; fi
	for ((r = 0; r < ntasks; r++)); do
		want+="$r: SWITCHLUA_ENABLED=1"$'\n'
		want+="$r: SWITCHLUA_ENDPOINT=fabric-mgr.example.invalid:8080"$'\n'
		want+="$r: SWITCHLUA_JOB_ID=$id"$'\n'
		want+="$r: SWITCHLUA_RANK_HINT=7"$'\n'
		want+="$r: SWITCHLUA_SLUID=$sluid"$'\n'
		want+="$r: SWITCHLUA_TOKEN=tok-$id"$'\n'
	done
	# (SWITCHLUA_SHOULD_BE_UNSET = false in the script: it must be absent.)
	assert_eq "${want%$'\n'}" "$out" "SWITCHLUA_* variables of the tasks (sorted by task)"
}

# expect_not_drained NODE...: no drain reason, and idle again.
expect_not_drained() {
	local n
	for n in "$@"; do
		assert_eq "" "$(drain_reason "$n")" "drain reason of $n"
		wait_node "$n" idle 10
	done
}

e2e_test "switch/lua: job_start: the default path sets the step environment on both nodes of srun -N2; job_complete succeeds" t_default_srun
t_default_srun() {
	need_seed
	local name id out
	name=e2e-default-$(e2e_uniq)
	out=$(run_srun -N2 -l -J "$name" --network=switchlua:default sh -c 'env | grep "^SWITCHLUA_" | sort' | sort) ||
		fail "srun failed: $out"
	id=$(job_named "$name")
	expect_env "$out" "$id" 2
	wait_job "$id" COMPLETED 15
	ctld_job "$id" ' job_start started \(queued [0-9]+ ms, switch_timeout=10 s\)' >/dev/null || fail "no 'job_start started' line"
	ctld_job "$id" ' job_start: switchlua: job_start\(\): accepted JobId='"$id"', jobinfo=.*"token":"tok-'"$id"'"' >/dev/null ||
		fail "the script's 'accepted' line with the jobinfo is not logged"
	ctld_job "$id" ' job_start returned rc=0 with jobinfo' >/dev/null || fail "no 'returned rc=0 with jobinfo' line"
	ctld_job "$id" ' job_start accepted the job: jobinfo stored, job may launch' >/dev/null || fail "no 'accepted the job' line"
	ctld_job "$id" ' SetupResult -> Running \(R_START_OK\)' >/dev/null || fail "no R_START_OK debug line"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
	ctld_job "$id" ' job_complete returned rc=0 \(slurm.SUCCESS\)' >/dev/null || fail "job_complete did not succeed"
	# Each node ran the three step hooks.
	for n in node1 node2; do
		slurmd_grep "$n" "switch/lua: JobId=$id StepId=$id.0 $n step_preinit returned 0" >/dev/null || fail "$n: no step_preinit line"
		slurmd_grep "$n" "switch/lua: JobId=$id StepId=$id.0 $n step_init returned 0 with 7 environment change\(s\)" >/dev/null ||
			fail "$n: no step_init line"
		slurmd_grep "$n" "switch/lua: JobId=$id StepId=$id.0 $n step_postfini returned 0" >/dev/null || fail "$n: no step_postfini line"
	done
	expect_not_drained node1 node2
}

e2e_test "switch/lua: job_start: the default path reaches every task of an sbatch -N3 job's srun step" t_default_sbatch_n3
t_default_sbatch_n3() {
	need_seed
	local id out
	id=$(submit -N3 --network=switchlua:default --wrap='srun -l sh -c "env | grep ^SWITCHLUA_ | sort" | sort')
	wait_job "$id" COMPLETED 30
	assert_eq "0:0" "$(job_field "$id" ExitCode)" "ExitCode"
	out=$(cat "$(job_output "$id")")
	expect_env "$out" "$id" 3
	ctld_job "$id" ' job_start: switchlua: job_start\(\): JobId='"$id"' User=tbuser Nodes=node\[1-3\] Network=switchlua:default' >/dev/null ||
		fail "the script did not see Nodes=node[1-3]"
	ctld_job "$id" ' job_complete returned rc=0 \(slurm.SUCCESS\)' >/dev/null || fail "job_complete did not succeed"
	expect_not_drained node1 node2 node3
}

e2e_test "switch/lua: job_start: skip declines the job: it runs without SWITCHLUA_* and without step hooks or job_complete" t_skip
t_skip() {
	need_seed
	local name id out n
	name=e2e-skip-$(e2e_uniq)
	out=$(run_srun -N2 -l -J "$name" --network=switchlua:skip sh -c 'env | grep "^SWITCHLUA_" || echo none' | sort) ||
		fail "srun failed: $out"
	assert_eq $'0: none\n1: none' "$out" "SWITCHLUA_* variables of a declined job"
	id=$(job_named "$name")
	wait_job "$id" COMPLETED 10
	ctld_job "$id" ' job_start: switchlua: job_start\(\): declining JobId='"$id" >/dev/null || fail "the script's 'declining' line is missing"
	ctld_job "$id" ' job_start declined the job \(nil jobinfo\): not managed by switch/lua' >/dev/null ||
		fail "no 'declined the job' line"
	ctld_job "$id" ' SetupResult -> Declined \(R_START_DECLINE\)' >/dev/null || fail "no R_START_DECLINE debug line"
	if ctld_job "$id" ' job_complete'; then fail "job_complete ran for a declined job"; fi
	for n in node1 node2; do
		if slurmd_grep "$n" "switch/lua: JobId=$id StepId="; then fail "$n: a step hook ran for a declined job"; fi
	done
	expect_not_drained node1 node2
}

e2e_test "switch/lua: job_start: defer cancels an srun job with \"switch setup failed\"; srun prints it; nothing drained" t_defer_srun
t_defer_srun() {
	need_seed
	local name id out
	name=e2e-defer-$(e2e_uniq)
	if out=$(run_srun -N2 -J "$name" --network=switchlua:defer true); then
		fail "srun succeeded although job_start deferred: $out"
	fi
	id=$(job_named "$name")
	assert_srun_told "srun: switch setup failed: switch/lua job_start returned rc=-1" "$out"
	wait_job "$id" CANCELLED 10
	assert_job_reason "$id" '^switch setup failed: switch/lua job_start returned rc=-1$'
	assert_eq 0 "$(job_field "$id" Restarts)" "Restarts"
	ctld_job "$id" ' cancelled: switch setup failed: switch/lua job_start returned rc=-1' >/dev/null || fail "no 'cancelled' line"
	ctld_job "$id" ' SetupResult -> SetupFailed \(R_START_FAIL\)' >/dev/null || fail "no R_START_FAIL debug line"
	if ctld_job "$id" ' job_complete'; then fail "job_complete ran after a failed setup"; fi
	expect_not_drained node1 node2
}

e2e_test "switch/lua: job_start: defer cancels an sbatch --no-requeue job with \"switch setup failed\"" t_defer_norequeue
t_defer_norequeue() {
	need_seed
	local id
	id=$(submit -N1 --no-requeue --network=switchlua:defer --wrap='echo the batch script ran')
	wait_job "$id" CANCELLED 15
	assert_job_reason "$id" '^switch setup failed: switch/lua job_start returned rc=-1$'
	assert_eq 0 "$(job_field "$id" Restarts)" "Restarts"
	assert_eq 0 "$(job_field "$id" Requeue)" "Requeue"
	ctld_job "$id" ' cancelled: switch setup failed: switch/lua job_start returned rc=-1' >/dev/null || fail "no 'cancelled' line"
	local outf
	outf=$E2E_CLH/out/slurm-$id.out
	if [ -s "$outf" ] && grep -q 'the batch script ran' "$outf"; then fail "the batch script ran after a failed setup"; fi
	expect_not_drained node1
}

e2e_test "switch/lua: job_start: defer requeues an sbatch --requeue job (Restarts >= 1, logged as requeued)" t_defer_requeue
t_defer_requeue() {
	need_seed
	local id
	id=$(submit -N1 --requeue --network=switchlua:defer --wrap='echo the batch script ran')
	wait_for 20 restarts_at_least "$id" 1 || fail "job $id was not requeued: Restarts=$(job_field "$id" Restarts) $(job_state "$id")"
	ctld_job "$id" ' requeued: switch setup failed: switch/lua job_start returned rc=-1' >/dev/null || fail "no 'requeued' line"
	if ctld_job "$id" ' cancelled:'; then fail "a requeue-able job was cancelled"; fi
	# Requeued jobs wait for a new begin time; the setup would fail again
	# on every run, so end it here.
	assert_match '^(PENDING|CONFIGURING|RUNNING|REQUEUED)' "$(job_state "$id")" "state after the requeue"
	# The reason stays until Slurm replaces it with BeginTime (the delay it
	# gives a requeued job).
	assert_match '^(switch setup failed: switch/lua job_start returned rc=-1|BeginTime)$' "$(job_reason "$id")" "Reason after the requeue"
	note "after the requeue: $(job_state "$id") Reason=$(job_field "$id" Reason) Restarts=$(job_field "$id" Restarts)"
	cancel "$id"
	wait_job "$id" CANCELLED 10
	expect_not_drained node1
}

e2e_test "switch/lua: job_start: start_crash (a Lua error) cancels the job with \"switch setup failed: ... raised an error\"" t_start_crash
t_start_crash() {
	need_seed
	local name id out
	name=e2e-crash-$(e2e_uniq)
	if out=$(run_srun -N2 -J "$name" --network=switchlua:start_crash true); then
		fail "srun succeeded although job_start raised an error: $out"
	fi
	id=$(job_named "$name")
	assert_srun_told "srun: switch setup failed: switch/lua job_start raised an error: /etc/slurm/switch.lua:" "$out"
	wait_job "$id" CANCELLED 10
	assert_job_reason "$id" '^switch setup failed: switch/lua job_start raised an error: /etc/slurm/switch.lua:[0-9]+: switchlua: deliberate error in job_start'
	ctld_job "$id" ' job_start raised an error: /etc/slurm/switch.lua:[0-9]+: switchlua: deliberate error in job_start' >/dev/null ||
		fail "no 'raised an error' line"
	if ctld_job "$id" ' job_complete'; then fail "job_complete ran after a failed setup"; fi
	expect_not_drained node1 node2
}

# e2e-config: --switch-type switch/lua --script test/e2e/lua/hang.lua --slurmctld-params switch_timeout=3

e2e_test "switch/lua: job_start: a hanging job_start is killed with its grandchildren at switch_timeout=3; \"switch setup timed out\"; job_complete(nil); nodes idle" t_hang_timeout
t_hang_timeout() {
	local tag name id out t0 t1 left
	tag=$(e2e_uniq)
	name=e2e-hang-$tag
	t0=$(date +%s)
	if out=$(run_srun -N2 -J "$name" --network="e2e:hang:$tag" true); then
		fail "srun succeeded although job_start hung: $out"
	fi
	t1=$(date +%s)
	id=$(job_named "$name")
	assert_srun_told "srun: switch setup timed out: switch/lua job_start timed out after" "$out"
	# How long srun waited is printed, not asserted (issue 39): the Reason
	# below says the call was killed no sooner than switch_timeout=3 s.
	note "srun ended $((t1 - t0)) s after it began (switch_timeout=3 s)"
	wait_job "$id" CANCELLED 10
	assert_job_reason "$id" '^switch setup timed out: switch/lua job_start timed out after ([3-9][0-9]{3}|[1-9][0-9]{4,}) ms and was killed with its process group$'
	ctld_job "$id" ' job_start started \(queued [0-9]+ ms, switch_timeout=3 s\)' >/dev/null || fail "no 'job_start started' line"
	ctld_job "$id" ' job_start: e2e hang: ' >/dev/null || fail "the hook did not start"
	ctld_job "$id" " job_start timed out after ([3-9][0-9]{3}|[1-9][0-9]{4,}) ms; killed 1 process\(es\) that had left its process group" >/dev/null ||
		fail "no line about the grandchild that left the process group"
	ctld_job "$id" ' SetupResult -> SetupAbandoned \(R_START_TIMEOUT\)' >/dev/null || fail "no R_START_TIMEOUT debug line"
	if ctld_job "$id" ' job_start: e2e hang: .* returned: the call was not killed'; then fail "the hanging call was not killed"; fi
	# The setup is abandoned: job_complete runs with a nil jobinfo.
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\)" 15
	ctld_job "$id" " job_complete: e2e hang: job_complete JobId=$id jobinfo=nil\$" >/dev/null ||
		fail "job_complete was not called with a nil jobinfo"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
	# Nothing the hook started survives it (two grandchildren, one of them
	# in a new session, and the foreground sleep).
	if left=$(pgrep -af "sleep 300\\.$tag"); then fail "processes of the killed job_start survive: $left"; fi
	expect_not_drained node1 node2
}
