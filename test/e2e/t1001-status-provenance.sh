# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05
#
# t1001-status-provenance: the controller's counters and `switch-lua status`
# after a known sequence of jobs, the periodic summary line; the provenance
# of the script (its content hash) on the outcome lines, in `check`, and
# compared by each slurmstepd with the copy it loads: a warning with both
# hashes, or (switch_script_mismatch=fail) a failed step.  The nodes share
# one /etc/slurm/switch.lua, so a test changes it between job_start and the
# step, which is the real-life race too.  switch-lua(1) STATUS,
# switch.lua(5) PROVENANCE, switch_lua.conf(5).

# e2e-config: --switch-type switch/lua --script test/e2e/lua/provenance.lua --slurmctld-params switch_status_interval=2

SCRIPT_H=$E2E_ROOT/etc/slurm/switch.lua

# jval JSON DOTTED.PATH: one value of a JSON text.
jval() {
	c_root python3 -c 'import json, sys
d = json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    d = d[k]
print(d)' "$1" "$2"
}

# script_hash: the content hash `switch-lua check` prints for the script.
script_hash() {
	local out
	out=$(c_root "$(switch_lua_cli)" check --json --slurm-user slurm /etc/slurm/switch.lua) ||
		fail "check refused the script: $out"
	jval "$out" content
}

# calls_done T0: the status file of a slurmctld that started counting at
# T0 or later says 3 job_complete calls ended and none is in flight (the
# file is rewritten within a second of a change).
calls_done() {
	local j
	j=$(c_root "$(switch_lua_cli)" status --json 2>/dev/null) || return 1
	(("$(jval "$j" counting_since)" >= $1)) &&
		[ "$(jval "$j" hooks.job_complete.calls)" = 3 ] && [ "$(jval "$j" calls.in_flight)" = 0 ] &&
		[ "$(jval "$j" jobs)" = 0 ] # a job leaves the table just after its call's result is counted
}

e2e_test "switch/lua: status: after 3 jobs set up and torn down, 1 whose job_start fails and 1 without --network, switch-lua status shows exactly those calls" t_status_counts
t_status_counts() {
	local j out k t0
	t0=$(date +%s)
	known_job_sequence
	wait_for 15 calls_done "$t0" || fail "the status file never showed 3 finished job_complete calls"
	j=$(c_root "$(switch_lua_cli)" status --json)
	assert_eq 4 "$(jval "$j" hooks.job_start.calls)" "job_start calls"
	assert_eq 3 "$(jval "$j" hooks.job_start.outcomes.ok)" "job_start ok"
	assert_eq 1 "$(jval "$j" hooks.job_start.outcomes.failed)" "job_start failed"
	assert_eq 0 "$(jval "$j" hooks.job_start.outcomes.declined)" "job_start declined"
	assert_eq 3 "$(jval "$j" hooks.job_complete.outcomes.ok)" "job_complete ok"
	assert_eq 4 "$(jval "$j" hooks.job_start.round_trip_ms.count)" "job_start round trips"
	assert_eq 3 "$(jval "$j" hooks.job_complete.round_trip_ms.count)" "job_complete round trips"
	assert_eq 4 "$(jval "$j" lanes.batch.started)" "batch lane: calls started"
	assert_eq 3 "$(jval "$j" lanes.teardown.started)" "teardown lane: calls started"
	assert_eq 0 "$(jval "$j" lanes.interactive.started)" "interactive lane: calls started"
	assert_eq 1 "$(jval "$j" cancels)" "cancels (the --no-requeue job whose setup failed)"
	for k in requeues drains retries timeouts leftovers_killed jobs calls.in_flight calls.running; do
		assert_eq 0 "$(jval "$j" "$k")" "$k"
	done
	assert_eq /etc/slurm/switch.lua "$(jval "$j" script)" "script"
	assert_eq 2 "$(jval "$j" switch_status_interval)" "switch_status_interval"
	out=$(c_root "$(switch_lua_cli)" status)
	assert_match "Cancels: +1"$'\n' "$out" "the human layout"
	assert_match "  job_start +4 calls"$'\n'"    failed +1"$'\n'"    ok +3"$'\n' "$out" "job_start by outcome"
	assert_match "Written: +[0-9T:-]+ \([0-9]+ s ago\)" "$out" "the file's age"
	assert_not_contains "WARNING" "$out" "a fresh file"
	wait_log "$(ctld_log)" "switch/lua: status: job_start 3 ok, 0 declined, 1 failed, 0 other; job_complete 3 ok, 0 eagain, 0 failed, 0 other; in flight 0 \(waiting 0\); jobs 0; timeouts 0, leftovers killed 0, retries 0, drains 0, requeues 0, cancels 1; round trip " 10
}

# prov_job: a batch job (--network=prov) whose step starts only once
# /tmp/prov-TAG exists in the chroot; sets ID, FLAG (host path) and NODE.
prov_job() {
	local tag
	tag=$(e2e_uniq)
	FLAG=$E2E_ROOT/tmp/prov-$tag
	CLEANUP+=("$FLAG")
	ID=$(submit -N1 --network=prov --wrap="while [ ! -e /tmp/prov-$tag ]; do sleep 0.2; done; srun -N1 true")
	wait_job "$ID" RUNNING 30
	ctld_job "$ID" ' job_start accepted the job' >/dev/null || wait_log "$(ctld_log)" "switch/lua: JobId=$ID job_start accepted the job" 15
	NODE=$(job_field "$ID" NodeList)
}

# edit_script: append a comment to the script (another version, still
# valid); prints nothing.  The test's EXIT trap restores it and removes the
# flag files.
edit_script() {
	cp -p "$SCRIPT_H" "$E2E_ROOT/tmp/provenance.lua.orig"
	# shellcheck disable=SC2064 # the paths are fixed now
	trap "mv '$E2E_ROOT/tmp/provenance.lua.orig' '$SCRIPT_H'; rm -f ${CLEANUP[*]}" EXIT
	printf -- '-- edited by t1001 %s\n' "$(e2e_uniq)" >>"$SCRIPT_H"
}
CLEANUP=()

e2e_test "switch/lua: provenance: the outcome lines name the script and the content hash switch-lua check prints" t_outcome_hash
t_outcome_hash() {
	local id h
	h=$(script_hash)
	assert_match '^fnv1a64:[0-9a-f]{16}$' "$h" "check's content hash"
	id=$(submit -N1 --network=prov --wrap=true)
	wait_job "$id" COMPLETED 30
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\) \(script /etc/slurm/switch.lua content $h\)$" 15
	ctld_job "$id" " job_start returned rc=0 with jobinfo \(queued [0-9]+ ms, ran [0-9]+ ms; script /etc/slurm/switch.lua content $h\)$" >/dev/null ||
		fail "the job_start outcome line does not name the script and $h"
	id=$(submit -N1 --no-requeue --network=prov:fail --wrap=true)
	wait_job "$id" CANCELLED 30
	ctld_job "$id" " job_start returned rc=-1 .*; script /etc/slurm/switch.lua content $h\)$" >/dev/null ||
		fail "the failed job_start's outcome line does not name the script and $h"
}

e2e_test "switch/lua: provenance: a step whose node loads another version of the script than job_start ran logs both hashes, the node and the step, and runs (switch_script_mismatch=warn)" t_mismatch_warn
t_mismatch_warn() {
	local ha hb
	ha=$(script_hash)
	prov_job
	edit_script
	hb=$(script_hash)
	[ "$ha" != "$hb" ] || fail "the edit did not change the hash"
	touch "$FLAG"
	wait_job "$ID" COMPLETED 30
	wait_log "$(slurmd_log "$NODE")" "switch/lua: JobId=$ID StepId=$ID.0 $NODE: script mismatch: /etc/slurm/switch.lua here has content $hb, but job_start ran content $ha on slurmctld; the step runs with this node's copy \(switch_script_mismatch=warn\)" 15
	assert_eq 1 "$(log_since "$(slurmd_log "$NODE")" | grep -c "JobId=$ID StepId=$ID.0 .*script mismatch")" "one warning per step"
}

e2e_test "switch/lua: provenance: the same script on slurmctld and the node: no mismatch line" t_match
t_match() {
	prov_job
	touch "$FLAG"
	wait_job "$ID" COMPLETED 30
	rm -f "$FLAG"
	if log_since "$(slurmd_log "$NODE")" | grep "JobId=$ID .*script mismatch" >/dev/null; then fail "a mismatch was logged for the same script"; fi
}

# e2e-config: --switch-type switch/lua --script test/e2e/lua/provenance.lua --slurmctld-params switch_script_mismatch=fail

e2e_test "switch/lua: provenance: with switch_script_mismatch=fail, a step whose node loads another version fails (Error configuring interconnect)" t_mismatch_fail
t_mismatch_fail() {
	local ha hb
	ha=$(script_hash)
	prov_job
	edit_script
	hb=$(script_hash)
	touch "$FLAG"
	wait_job "$ID" FAILED 30
	wait_log "$(slurmd_log "$NODE")" "switch/lua: JobId=$ID StepId=$ID.0 $NODE: script mismatch: /etc/slurm/switch.lua here has content $hb, but job_start ran content $ha on slurmctld; the step fails \(switch_script_mismatch=fail\)" 15
	assert_contains "Error configuring interconnect" "$(cat "$(job_output "$ID")" 2>/dev/null || true)" "srun's message in the job output"
}
