# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t1201-simonly-timeouts: rules that only `switch-lua simulate` had shown,
# on the live cluster (issue 19 item 7): a late result of a timed-out
# job_start, a job_start that exits without returning, and slurm.EAGAIN from
# the teardown of an abandoned setup with block_job_complete false and true.
# switch.lua(5): R_START_TIMEOUT, R_START_LATE, R_LATE_RESULT, R_START_EXIT,
# R_END_AFTER_ABANDON, R_COMPLETE_EAGAIN_UNHELD, R_COMPLETE_EAGAIN, R_RETRY.
# Fixtures: test/e2e/lua/simonly.lua, test/e2e/lua/simonly-block.lua.

# e2e-config: --switch-type switch/lua --script test/e2e/lua/simonly.lua --slurmctld-params switch_timeout=2

rm_markers() { rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*; }

# expect_drained_with ID NODE REASON: NODE is drained with REASON.
expect_drained_with() {
	wait_node "$2" 'drained|draining' 15
	assert_eq "$3" "$(drain_reason "$2")" "sinfo -R reason of $2 after JobId=$1"
	ctld_grep "switch/lua: drained $2: $3\$" >/dev/null || fail "no 'switch/lua: drained $2: $3' line"
}

e2e_test "switch/lua: job_start: a SUCCESS+table read after switch_timeout=2 (late result): the job fails as timed out, job_complete runs with nil and once more with the late table, whose result is only logged (R_LATE_RESULT)" t_late_result
t_late_result() {
	local tag id pid sup st
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N1 -w node1 --no-requeue --network="e2e:late:$tag" --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start: e2e simonly: late: pid [0-9]+ ready" 20
	pid=$(cat "$E2E_ROOT/tmp/switch-lua-e2e.$tag.pid")
	sup=$(our_supervisor)
	[ -n "$sup" ] || fail "no supervisor process of this cluster"
	# The race made deterministic as in test/proc/late_test.cpp: the
	# supervisor is stopped, then the hook is told to finish (the go marker),
	# and the supervisor is resumed after the deadline (2 s after the call
	# began: "ready" came at its start, and the supervisor stays stopped 2.5 s
	# after the runner's end), so it reads the result late.  3.5 s at most:
	# the watchdog's bound is 5 s.
	kill -STOP "$sup"
	# shellcheck disable=SC2064 # $sup and $tag are fixed now
	trap "kill -CONT $sup; rm_markers $tag" EXIT
	st=$(proc_state "$pid")
	case "$st" in
	Z | gone) fail "precondition: job_start had ended before the supervisor was stopped (runner $pid: $st)" ;;
	esac
	touch "$E2E_ROOT/tmp/switch-lua-e2e.$tag.go"
	# The runner reports and exits; its parent, stopped, leaves it a zombie.
	wait_for 5 sh -c "[ \"\$(sed 's/.*) //' /proc/$pid/stat | cut -d' ' -f1)\" = Z ]" ||
		fail "the runner $pid did not end while the supervisor was stopped: $(proc_state "$pid")"
	sleep 2.5 # now past the deadline
	kill -CONT "$sup"
	wait_job "$id" CANCELLED 15
	ctld_job "$id" " job_start timed out after [0-9]+ ms \(late result: rc=0 with jobinfo\) \(queued [0-9]+ ms, ran [0-9]+ ms; script [^)]+\)\$" >/dev/null ||
		fail "no 'timed out ... (late result: rc=0 with jobinfo)' line: $(ctld_job "$id" " job_start")"
	ctld_job "$id" ' SetupResult -> SetupAbandoned \(R_START_TIMEOUT\)' >/dev/null || fail "no R_START_TIMEOUT debug line"
	# (The reason is that of any timeout: the late result is in the log.)
	assert_job_reason "$id" '^switch setup timed out: switch/lua job_start timed out after [0-9]+ ms and was killed with its process group$'
	# Two teardowns: the regular one of the abandoned setup (nil), and the
	# extra one with the late table, whose result is one line.
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete for the late setup result returned rc=0 \(slurm.SUCCESS\) \(only logged\)\$" 15
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete: e2e simonly: job_complete jobinfo=nil\$" 15
	ctld_job "$id" " job_complete: e2e simonly: job_complete jobinfo=\{\"token\":\"late-$tag\"\}\$" >/dev/null ||
		fail "the late job_complete did not get the late table"
	ctld_job "$id" " job_complete started for a late setup result \(queued [0-9]+ ms, switch_timeout=2 s\)" >/dev/null ||
		fail "no 'job_complete started for a late setup result' line"
	wait_node node1 idle 15
	assert_eq 2 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete: e2e simonly: job_complete jobinfo=nil\$")" "job_complete(nil) calls"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_start started")" "job_start calls"
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
}

e2e_test "switch/lua: job_start: os.exit(0) (exit without return) fails the setup with \"exited with status 0 without returning\"; job_complete(nil) runs at the job's end (R_START_EXIT)" t_exit
t_exit() {
	local tag id
	tag=$(e2e_uniq)
	id=$(submit -N1 -w node1 --requeue --network="e2e:exit:$tag" --wrap='echo the batch script ran')
	# Requeued (a failed setup of a batch job that may be requeued) ...
	wait_log "$(ctld_log)" "switch/lua: JobId=$id requeued: switch setup failed: switch/lua job_start exited with status 0 without returning\$" 20
	ctld_job "$id" " job_start: e2e simonly: calling os.exit\(0\)" >/dev/null || fail "the hook did not run"
	ctld_job "$id" " job_start exited with status 0 without returning" >/dev/null || fail "no outcome line"
	ctld_job "$id" ' SetupResult -> SetupAbandoned \(R_START_EXIT\)' >/dev/null || fail "no R_START_EXIT debug line"
	# ... and this run of the job, now over, is torn down with nil.
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\)" 15
	ctld_job "$id" " job_complete: e2e simonly: job_complete jobinfo=nil\$" >/dev/null || fail "job_complete did not get nil"
	ctld_job "$id" ' JobEnded -> TeardownRunning \(R_END_AFTER_ABANDON\)' >/dev/null || fail "no R_END_AFTER_ABANDON debug line"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls for the first run"
	assert_match '^switch setup failed: switch/lua job_start exited with status 0 without returning$' \
		"$(job_field "$id" SystemComment)" "SystemComment"
	cancel "$id"
	wait_job "$id" CANCELLED 15
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
	local outf=$E2E_CLH/out/slurm-$id.out
	if [ -s "$outf" ] && grep -q 'the batch script ran' "$outf"; then fail "the batch script ran after a failed setup"; fi
}

e2e_test "switch/lua: job_complete: slurm.EAGAIN after a timed-out setup with block_job_complete false drains the node at once (\"returned slurm.EAGAIN but block_job_complete is false\"); one call" t_abandon_again_unheld
t_abandon_again_unheld() {
	local tag id
	tag=$(e2e_uniq)
	id=$(submit -N1 -w node1 --no-requeue --network="e2e:hangagain:$tag" --wrap=true)
	wait_job "$id" CANCELLED 20
	assert_job_reason "$id" '^switch setup timed out: switch/lua job_start timed out after 2[0-9]{3} ms and was killed with its process group$'
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=11 \(slurm.EAGAIN\)" 15
	expect_drained_with "$id" node1 "switch teardown failed: JobId=$id switch/lua job_complete returned slurm.EAGAIN but block_job_complete is false"
	ctld_job "$id" " job_complete: e2e simonly: job_complete jobinfo=nil\$" >/dev/null || fail "job_complete did not get nil"
	ctld_job "$id" ' TeardownResult -> Done \(R_COMPLETE_EAGAIN_UNHELD\)' >/dev/null || fail "no R_COMPLETE_EAGAIN_UNHELD debug line"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
	assert_eq 0 "$(ctld_count "switch/lua: JobId=$id job_complete returned slurm.EAGAIN: nodes stay held")" "retries"
	# The nodes were never held for it: the node list is not in a hold line.
	assert_eq 0 "$(ctld_count "switch/lua: JobId=$id: holding the job and nodes")" "hold lines"
}

# e2e-config: --switch-type switch/lua --script test/e2e/lua/simonly-block.lua --slurmctld-params switch_timeout=2,switch_retries=2

e2e_test "switch/lua: job_complete: slurm.EAGAIN after a timed-out setup with block_job_complete true keeps the node COMPLETING and runs job_complete(nil) again; released, not drained" t_abandon_again_held
t_abandon_again_held() {
	local tag id
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "rm_markers $tag" EXIT
	id=$(submit -N1 -w node1 --no-requeue --network="e2e:hangagain:$tag" --wrap=true)
	wait_job "$id" 'CANCELLED|COMPLETING' 20
	assert_job_reason "$id" '^switch setup timed out: switch/lua job_start timed out after 2[0-9]{3} ms and was killed with its process group$'
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\)" 25
	wait_log "$(ctld_log)" "switch/lua: JobId=$id: released the job and its nodes\$" 10
	# In the log's order: the node held, the EAGAIN (R_COMPLETE_EAGAIN), the
	# retry (R_RETRY) and its success, and only then the release.  (The
	# retry comes at the next periodic check, so the node's COMPLETING state
	# in between is read from the log, not raced with sinfo.)
	local held again retry ok released
	held=$(_first_line "switch/lua: JobId=$id: holding the job and nodes node1\$")
	again=$(_first_line "switch/lua: JobId=$id job_complete returned slurm.EAGAIN: nodes stay held, retry 1 of 2 at the next periodic check \(script [^)]+\)\$")
	retry=$(_first_line "switch/lua: JobId=$id .*\(R_RETRY\)\$")
	ok=$(_first_line "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\)")
	released=$(_first_line "switch/lua: JobId=$id: released the job and its nodes\$")
	note "log lines: held $held, EAGAIN $again, R_RETRY $retry, success $ok, released $released"
	((held > 0 && held < again && again < retry && retry < ok && ok < released)) ||
		fail "not in the order hold < EAGAIN < retry < success < release: $held $again $retry $ok $released"
	ctld_job "$id" ' TeardownResult -> TeardownRetryWait \(R_COMPLETE_EAGAIN\)' >/dev/null || fail "no R_COMPLETE_EAGAIN debug line"
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id: released the job")" "release lines"
	wait_job "$id" CANCELLED 15
	wait_node node1 idle 15
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
	assert_eq 2 "$(ctld_count "switch/lua: JobId=$id job_complete: e2e simonly: job_complete jobinfo=nil\$")" "job_complete(nil) calls"
	assert_eq 2 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
}

# _first_line RE: the number of the first slurmctld line since the test
# began that matches RE; 0 if none.
_first_line() {
	local n
	n=$(log_since "$(ctld_log)" | grep -nE -m1 "$1" | cut -d: -f1) || true
	echo "${n:-0}"
}
