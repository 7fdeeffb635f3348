# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05
#
# t1101-guard: issue 11 items 3 and 4 on the live cluster
# (test/e2e/lua/guard.lua).  switch_lua.conf(5): switch_max_setup_failures;
# switch.lua(5): R_SETUP_FAILURES_HELD, job_start "Returns" (rc, message),
# THE JOB AND STEP TABLES.
#
# AuthInfo=cred_expire=5: Slurm delays a requeued job by the credential
# lifetime + 1 s (BeginTime), 121 s by default.

# e2e-config: --switch-type switch/lua --script test/e2e/lua/guard.lua --slurmctld-params switch_max_setup_failures=3 --extra AuthInfo=cred_expire=5

# _waiting_with_comment ID COMMENT: Slurm shows Reason=BeginTime (the
# requeue delay) and the job's SystemComment is COMMENT.
_waiting_with_comment() {
	local line
	line=$(job_line "$1")
	[ "$(field_of "$line" Reason)" = BeginTime ] && [ "$(field_of "$line" SystemComment)" = "$2" ]
}

e2e_test "switch/lua: switch_max_setup_failures=3: a batch job whose job_start always fails is requeued twice, then held with the count and the script's message; between requeues SystemComment keeps the message; the count survives a slurmctld restart; scontrol release lets it try again" t_guard
t_guard() {
	local id once held
	once="switch setup failed: switch/lua job_start returned rc=-1: fabric manager unreachable"
	held="switch setup failed 3 times (switch_max_setup_failures=3): switch/lua job_start returned rc=-1: fabric manager unreachable"
	id=$(submit -N1 --requeue --network=guard:fail --wrap='echo the batch script ran')
	wait_for 30 restarts_at_least "$id" 1 || fail "job $id was not requeued: $(job_line "$id")"
	ctld_job "$id" " requeued: $once" >/dev/null || fail "no 'requeued' line with the script's message"
	# Slurm replaces the reason with BeginTime while the requeued job waits;
	# the message stays readable in SystemComment.
	wait_for 20 _waiting_with_comment "$id" "$once" ||
		fail "never Reason=BeginTime with SystemComment='$once': $(job_line "$id")"
	# The count is in the journal: a restart does not reset it.
	wait_state_saved
	restart_ctld
	wait_for 60 restarts_at_least "$id" 3 || fail "job $id was not requeued 3 times: $(job_line "$id")"
	wait_job "$id" PENDING 10
	assert_eq "$held" "$(job_reason "$id")" "Reason of the held job (squeue %r)"
	assert_eq "${held// /_}" "$(job_field "$id" Reason)" "Reason of the held job (scontrol)"
	assert_eq 0 "$(job_field "$id" Priority)" "Priority of the held job"
	assert_eq "$held" "$(job_field "$id" SystemComment)" "SystemComment of the held job"
	assert_eq 3 "$(job_field "$id" Restarts)" "Restarts of the held job"
	assert_eq 3 "$(ctld_count "switch/lua: JobId=$id job_start started")" "job_start calls before the hold"
	assert_eq 2 "$(ctld_count "switch/lua: JobId=$id requeued: $once")" "plain requeues"
	ctld_job "$id" " requeued held \(scontrol release\): switch setup failed 3 times" >/dev/null || fail "no 'requeued held' line"
	ctld_job "$id" " not requeued again: .*; held until .scontrol release." >/dev/null || fail "no R_SETUP_FAILURES_HELD line"
	# An admin hold: the job's user cannot release it.
	if c_user scontrol release "$id" >/dev/null 2>&1; then fail "the job's user released the admin hold"; fi
	# Held means no new setup, past the requeue delay (cred_expire=5).
	sleep 8
	assert_eq PENDING "$(job_state "$id")" "state of the held job 8 s later"
	assert_eq 3 "$(ctld_count "switch/lua: JobId=$id job_start started")" "job_start calls while held"
	# An operator releases it: the count starts again (one plain requeue).
	c_root scontrol release "$id" >/dev/null || fail "scontrol release $id failed"
	wait_for 40 restarts_at_least "$id" 4 || fail "job $id did not run again after the release: $(job_line "$id")"
	assert_eq 4 "$(ctld_count "switch/lua: JobId=$id job_start started")" "job_start calls after the release"
	assert_eq 3 "$(ctld_count "switch/lua: JobId=$id requeued: $once")" "plain requeues after the release"
	assert_eq "$once" "$(job_field "$id" SystemComment)" "SystemComment after the release"
	cancel "$id"
	wait_job "$id" CANCELLED 15
	local outf=$E2E_CLH/out/slurm-$id.out
	if [ -s "$outf" ] && grep -q 'the batch script ran' "$outf"; then fail "the batch script ran after a failed setup"; fi
}

# _dump TAG WHAT: the JSON a hook of guard.lua wrote (host path).
_dump() { echo "$E2E_ROOT/tmp/switch-lua-e2e-args.$1.$2.json"; }

# _json FILE KEY: the value of KEY in FILE (a JSON object), "<absent>" when
# the key is not there; strings bare, the rest as JSON.
_json() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
v = d.get(sys.argv[2], "<absent>")
print(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))' "$1" "$2"
}

# _field_or_absent LINE FIELD: the scontrol field, "<absent>" when missing.
_field_or_absent() { field_of "$1" "$2" || echo "<absent>"; }

e2e_test "switch/lua: job and step tables: every field job_start and step_init get matches scontrol show job and the step's own SLURM_* variables" t_args
t_args() {
	local tag id line f st
	tag=a$(e2e_uniq)
	rm -f "$E2E_ROOT"/tmp/switch-lua-e2e-args."$tag".*
	# shellcheck disable=SC2016 # expanded by the step's shell
	id=$(submit -N2 -n4 -c1 -t 7 --array=3 -A e2eacct -J "e2e-args-$tag" --network="guard:dump:$tag" \
		--wrap='srun -l sh -c "echo \$SLURM_STEP_ID \$SLURM_STEP_NUM_TASKS \$SLURM_NODEID \$SLURM_STEP_NODELIST \$SLURMD_NODENAME"')
	wait_job "$id" COMPLETED 40
	line=$(job_line "$id")
	f=$(_dump "$tag" job)
	[ -s "$f" ] || fail "job_start wrote no dump $f"
	note "job table: $(cat "$f")"
	assert_eq "$(field_of "$line" JobId)" "$(_json "$f" job_id)" "job_id"
	assert_eq "$(field_of "$line" ArrayJobId)" "$(_json "$f" array_job_id)" "array_job_id"
	assert_eq 3 "$(_json "$f" array_task_id)" "array_task_id"
	assert_eq "$(field_of "$line" ArrayTaskId)" "$(_json "$f" array_task_id)" "array_task_id (scontrol)"
	assert_eq "<absent>" "$(_json "$f" het_job_id)" "het_job_id of a job that is not heterogeneous"
	assert_eq "<absent>" "$(_json "$f" het_job_offset)" "het_job_offset"
	assert_eq "e2e-args-$tag" "$(_json "$f" name)" "name"
	assert_eq "$(field_of "$line" UserId)" "$(_json "$f" user_name)($(_json "$f" user_id))" "user_name(user_id)"
	assert_eq "$(field_of "$line" Account)" "$(_json "$f" account)" "account"
	assert_eq e2eacct "$(_json "$f" account)" "account as submitted"
	local qos
	qos=$(field_of "$line" QOS)
	[ "$qos" = "(null)" ] && qos="<absent>"
	assert_eq "$qos" "$(_json "$f" qos)" "qos"
	assert_eq "$(field_of "$line" Partition)" "$(_json "$f" partition)" "partition"
	assert_eq "00:07:00" "$(field_of "$line" TimeLimit)" "TimeLimit"
	assert_eq 7 "$(_json "$f" time_limit)" "time_limit (minutes)"
	assert_eq "$(field_of "$line" NumTasks)" "$(_json "$f" num_tasks)" "num_tasks"
	assert_eq "$(field_of "$line" NumCPUs)" "$(_json "$f" num_cpus)" "num_cpus"
	assert_eq "$(_field_or_absent "$line" TresPerNode)" "$(_json "$f" tres_per_node)" "tres_per_node"
	assert_eq "$(_field_or_absent "$line" TresPerTask)" "$(_json "$f" tres_per_task)" "tres_per_task"
	assert_eq "$(field_of "$line" NodeList)" "$(_json "$f" nodes)" "nodes"
	assert_eq '["node1","node2"]' "$(_json "$f" node_names)" "node_names"
	assert_eq "$(field_of "$line" NumNodes)" "$(_json "$f" num_nodes)" "num_nodes"
	assert_eq "$(field_of "$line" Restarts)" "$(_json "$f" restart_count)" "restart_count"
	assert_eq true "$(_json "$f" batch)" "batch"
	assert_eq "guard:dump:$tag" "$(_json "$f" network)" "network"
	st=$(c_root date -d "$(field_of "$line" SubmitTime)" +%s)
	assert_eq "$st" "$(_json "$f" submit_time)" "submit_time (Unix seconds of SubmitTime)"
	# The step: each node's step_init table against what the step's tasks
	# on that node were told by Slurm.
	local out n sid ntasks nodeid nodelist node
	out=$(cat "$(job_output "$id")")
	note "step output: $out"
	for n in node1 node2; do
		read -r sid ntasks nodeid nodelist node < <(grep " $n\$" <<<"$out" | head -1 | cut -d' ' -f2-)
		[ "$node" = "$n" ] || fail "no task output from $n: $out"
		f=$(_dump "$tag" "step.$id.$sid.$n")
		[ -s "$f" ] || fail "step_init wrote no dump $f"
		assert_eq "$id.$sid" "$(_json "$f" id)" "$n: step id (JobId.StepId)"
		assert_eq "$sid" "$(_json "$f" step_id)" "$n: step_id"
		assert_eq "$ntasks" "$(_json "$f" num_tasks)" "$n: num_tasks"
		assert_eq "$nodeid" "$(_json "$f" node_id)" "$n: node_id (the node's rank in the step)"
		assert_eq "$nodelist" "$(_json "$f" nodes)" "$n: nodes"
		assert_eq "$n" "$(_json "$f" node_name)" "$n: node_name"
		assert_eq 2 "$(_json "$f" num_nodes)" "$n: num_nodes"
	done
	rm -f "$E2E_ROOT"/tmp/switch-lua-e2e-args."$tag".*
}
