# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t1203-simonly-steps: slurmstepd rules that only `switch-lua simulate` had
# shown, on the live cluster (issue 19 item 7): the step environment rules
# (SLURM_* names, values that are not UTF-8), no step hook for the batch and
# the extern step on 24.11, float, boolean and integer values of the jobinfo
# across the step credential, and a broken pipe in a step hook inside the
# real slurmstepd.  switch.lua(5): slurm_switch_step_init (env),
# slurm_switch_step_preinit ("Never for the batch step ... or the extern
# step"), JOBINFO AND STEPINFO, and lua/broken_pipe.hpp.  Fixture:
# test/e2e/lua/simonly.lua.  PrologFlags=Contain gives every job an extern
# step.

# e2e-config: --switch-type switch/lua --script test/e2e/lua/simonly.lua --extra PrologFlags=Contain

e2e_test "switch/lua: step_init: SLURM_* names are skipped and logged (SLURM_JOB_ID stays Slurm's), a lower-case slurm_ name is set, a value that is not UTF-8 reaches the task with U+FFFD for each bad byte" t_env_rules
t_env_rules() {
	local name id out want fffd
	name=e2e-env-$(e2e_uniq)
	out=$(run_srun -N1 -w node1 -J "$name" --network="e2e:env:$(e2e_uniq)" \
		sh -c 'env | grep -E "^(SLURM_JOB_ID|SLURM_SWL_EXTRA|slurm_swl_lower|SWL_)" | LC_ALL=C sort') ||
		fail "srun failed: $out"
	id=$(job_named "$name")
	fffd=$(printf '\357\277\275')
	want="SLURM_JOB_ID=$id"$'\n'"SWL_GOOD=ok"$'\n'"SWL_NOT_UTF8=a${fffd}b${fffd}"$'\n'"slurm_swl_lower=lower case is not SLURM_"
	assert_eq "$want" "$out" "the task's environment"
	local pre="switch/lua: JobId=$id StepId=$id.0 node1 step_init"
	slurmd_grep node1 "\] error: $pre: env.SLURM_JOB_ID skipped: SLURM_\* names belong to Slurm\$" >/dev/null ||
		fail "no line for env.SLURM_JOB_ID: $(slurmd_grep node1 "$pre" || true)"
	slurmd_grep node1 "\] error: $pre: env.SLURM_SWL_EXTRA skipped: SLURM_\* names belong to Slurm\$" >/dev/null ||
		fail "no line for env.SLURM_SWL_EXTRA"
	slurmd_grep node1 "$pre: env.SWL_NOT_UTF8: the value is not valid UTF-8; invalid bytes replaced by U\+FFFD\$" >/dev/null ||
		fail "no line for env.SWL_NOT_UTF8"
	slurmd_grep node1 "$pre returned 0 with 3 environment change\(s\)" >/dev/null ||
		fail "no 'returned 0 with 3 environment change(s)' line: $(slurmd_grep node1 "$pre" || true)"
	wait_job "$id" COMPLETED 15
}

e2e_test "switch/lua: step hooks: the batch step and the extern step of an accepted sbatch -N2 job run no step hook and get no step_init environment; its srun step runs all three on both nodes" t_batch_extern
t_batch_extern() {
	local tag id out n bnode
	tag=$(e2e_uniq)
	# shellcheck disable=SC2016 # expanded by the batch script
	id=$(submit -N2 --network="e2e:plain:$tag" \
		--wrap='echo "batch: ${SWL_STEP:-unset}"; srun -l sh -c "echo step: \$SWL_STEP" | LC_ALL=C sort')
	wait_job "$id" COMPLETED 30
	out=$(cat "$(job_output "$id")")
	assert_eq "batch: unset"$'\n'"0: step: $id.0"$'\n'"1: step: $id.0" "$out" "the output of the batch script and of its step"
	bnode=$(job_field "$id" BatchHost)
	# The batch and the extern step did run (slurmstepd's own lines) ...
	slurmd_grep "$bnode" "\[$id\.batch\]" >/dev/null || fail "$bnode: no slurmstepd line of step $id.batch"
	for n in node1 node2; do
		slurmd_grep "$n" "\[$id\.extern\]" >/dev/null || fail "$n: no slurmstepd line of step $id.extern"
		# ... with no step hook; the srun step ran all three.
		if slurmd_grep "$n" "switch/lua: JobId=$id StepId=$id\.(batch|extern) |e2e simonly: step_[a-z]+ step $id\.(batch|extern)"; then
			fail "$n: a step hook ran for the batch or the extern step"
		fi
		for h in step_preinit step_init step_postfini; do
			slurmd_grep "$n" "switch/lua: JobId=$id StepId=$id.0 $n $h: e2e simonly: $h step $id.0\$" >/dev/null ||
				fail "$n: $h did not run for step $id.0"
			slurmd_grep "$n" "switch/lua: JobId=$id StepId=$id.0 $n $h returned 0" >/dev/null ||
				fail "$n: no '$h returned 0' line for step $id.0"
		done
		assert_eq 3 "$(log_since "$(slurmd_log "$n")" | grep -cE "e2e simonly: step_[a-z]+ step $id\.")" "$n: step hook calls for job $id"
	done
}

e2e_test "switch/lua: jobinfo: 1.5 and 7.0 stay floats, true and false booleans, 3 an integer, in job_complete and in step_init on both nodes across the step credential; the environment gets 1.5, 7, 1 and 3" t_types
t_types() {
	local name id out want="" r n types
	name=e2e-types-$(e2e_uniq)
	out=$(run_srun -N2 -l -J "$name" --network="e2e:types:$(e2e_uniq)" sh -c 'env | grep "^SWL_" | LC_ALL=C sort' | LC_ALL=C sort) ||
		fail "srun failed: $out"
	id=$(job_named "$name")
	for r in 0 1; do want+="$r: SWL_B=1"$'\n'"$r: SWL_F=1.5"$'\n'"$r: SWL_I=3"$'\n'"$r: SWL_W=7"$'\n'; done
	assert_eq "${want%$'\n'}" "$out" "SWL_* variables of the tasks"
	types="b=boolean:true f=float:1.5 i=integer:3 n=boolean:false nested.x=float:2.5 nested.y=boolean:true w=float:7.0"
	for n in node1 node2; do
		slurmd_grep "$n" "switch/lua: JobId=$id StepId=$id.0 $n step_init: e2e simonly: step_init types: $types\$" >/dev/null ||
			fail "$n: step_init did not see the types: $(slurmd_grep "$n" "step_init types" || true)"
	done
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete: e2e simonly: job_complete types: $types\$" 15 ||
		fail "job_complete did not see the types: $(ctld_grep "JobId=$id job_complete: e2e simonly" || true)"
	ctld_job "$id" ' job_complete: e2e simonly: job_complete jobinfo=\{"b":true,"f":1\.5,"i":3,"n":false,"nested":\{"x":2\.5,"y":true\},"w":7\.0\}$' >/dev/null ||
		fail "job_complete's jobinfo as JSON: $(ctld_grep "JobId=$id job_complete: e2e simonly: job_complete jobinfo" || true)"
}

e2e_test "switch/lua: step_init: a write of 1 MiB to io.popen(\"true\", \"w\") in slurmstepd returns nil, \"Broken pipe\", 32; the step, its postfini and slurmstepd go on" t_broken_pipe
t_broken_pipe() {
	local name id out rc=0
	name=e2e-pipe-$(e2e_uniq)
	# shellcheck disable=SC2016 # expanded by the task
	out=$(run_srun -N1 -w node1 -J "$name" --network="e2e:pipe:$(e2e_uniq)" sh -c 'echo "pipe: $SWL_PIPE"') || rc=$?
	id=$(job_named "$name")
	assert_eq 0 "$rc" "srun's exit status (output: $out)"
	assert_eq "pipe: nil:Broken pipe:32" "$out" "what the task was told"
	slurmd_grep node1 "switch/lua: JobId=$id StepId=$id.0 node1 step_init: e2e simonly: step_init pipe write gave nil:Broken pipe:32\$" >/dev/null ||
		fail "no step_init line with the write's result"
	slurmd_grep node1 "switch/lua: JobId=$id StepId=$id.0 node1 step_postfini returned 0" >/dev/null ||
		fail "step_postfini did not run after the broken pipe"
	wait_job "$id" COMPLETED 15
	assert_eq "0:0" "$(job_field "$id" ExitCode)" "ExitCode"
	if job_log "$id" | grep -Ei 'signal 13|SIGPIPE.*(died|killed)|Segmentation|core dumped'; then
		fail "a process of step $id.0 died of the broken pipe"
	fi
	# The SIGPIPE was raised in slurmstepd, which catches it itself (its
	# handler, not the plugin's: lua/broken_pipe.hpp leaves a handler alone,
	# test/unit/stepd).  Its "Caught SIGPIPE. Ignoring." line is not asserted:
	# conmgr handles the signal later, in its own thread, and a step that ends
	# at once can be gone before it does (seen in a run of scripts/test).
}
