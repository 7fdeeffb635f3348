# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05
#
# t0701-failsafe: one mistake never takes the cluster down (issue 12).  A
# broken edit of switch.lua is refused and the last good version keeps
# running; a huge log line or a flood of lines leaves the outcome right and
# the log bounded; a bad switch_* value at reconfigure leaves slurmctld up
# with its previous settings; a timed-out call's helpers get SIGTERM and the
# kill grace (switch.lua(5): Last known good version, Bounds, Timeout;
# switch_lua.conf(5): switch_kill_grace, CHANGING THE SETTINGS).

# Its 30-job watchdog case waits up to 60 s for each round on a loaded
# machine: more than the default 120 s per test in all.
# e2e-timeout: 300
# e2e-config: --switch-type switch/lua --script test/e2e/lua/failsafe.lua --slurmctld-params switch_timeout=3,switch_kill_grace=3

SCRIPT_H=$E2E_ROOT/etc/slurm/switch.lua
CONF_H=$E2E_ROOT/etc/slurm/slurm.conf

e2e_test "switch/lua: failsafe: a broken edit of switch.lua is refused once, jobs keep running the last good version; nothing drained, requeued or cancelled" t_bad_edit
t_bad_edit() {
	local id1 id2 good
	good=$(mktemp)
	cp -p "$SCRIPT_H" "$good"
	# shellcheck disable=SC2064 # $good is fixed now
	trap "cp -p '$good' '$SCRIPT_H'; rm -f '$good'" EXIT
	id1=$(submit -N2 --network=fs:ok --wrap=true)
	wait_job "$id1" COMPLETED 30
	printf 'local x = = 1\n' >>"$SCRIPT_H"
	id1=$(submit -N2 --network=fs:ok --wrap=true)
	id2=$(submit -N2 --network=fs:ok --wrap=true)
	wait_job "$id1" COMPLETED 30
	wait_job "$id2" COMPLETED 30
	for n in node1 node2; do assert_eq "" "$(drain_reason "$n")" "drain reason of $n"; done
	assert_eq 1 "$(ctld_count "switch/lua: JobId=[0-9]+ job_(start|complete): /etc/slurm/switch.lua changed \(content fnv1a64:[0-9a-f]{16}\) but is refused: /etc/slurm/switch.lua:[0-9]+: unexpected symbol near '='; calls keep running the last good version \(content fnv1a64:[0-9a-f]{16}\)")" \
		"error lines for the broken edit"
	if ctld_grep "JobId=($id1|$id2) (requeued|cancelled)"; then fail "a job was requeued or cancelled"; fi
	# The fix is picked up by the next call.
	cp -p "$good" "$SCRIPT_H"
	printf '\n-- fixed\n' >>"$SCRIPT_H"
	id1=$(submit -N2 --network=fs:ok --wrap=true)
	wait_job "$id1" COMPLETED 30
	ctld_grep "switch/lua: JobId=[0-9]+ job_(start|complete): /etc/slurm/switch.lua changed \(content fnv1a64:[0-9a-f]{16}, was fnv1a64:[0-9a-f]{16}\): it loads, calls now run it" >/dev/null ||
		fail "no line saying the fixed version runs"
}

e2e_test "switch/lua: failsafe: a broken edit then scontrol reconfigure: the re-executed slurmctld keeps the last good version; nothing drained, requeued or cancelled; the error is logged once; a fix and a reconfigure run the new version" t_bad_edit_reconfigure
t_bad_edit_reconfigure() {
	local good ids id v
	good=$(mktemp)
	cp -p "$SCRIPT_H" "$good"
	# shellcheck disable=SC2064 # $good is fixed now
	trap "cp -p '$good' '$SCRIPT_H'; rm -f '$good'" EXIT
	v=$(e2e_uniq)
	# Version A: every call logs its chunk's line "failsafe version A<v>",
	# and block_job_complete is true (the fixture's default is false).
	printf '\nslurm.log_info("failsafe version %%s", "A%s")\n' "$v" >>"$SCRIPT_H"
	printf 'function slurm_switch_block_job_complete() return true end\n' >>"$SCRIPT_H"
	id=$(submit -N2 --network=fs:ok --wrap=true)
	wait_job "$id" COMPLETED 30
	ctld_job "$id" " job_start: failsafe version A$v" >/dev/null || fail "version A did not run"
	# The broken edit, and a reconfigure before any call sees it.
	printf 'local x = = 1\n' >>"$SCRIPT_H"
	c_root scontrol reconfigure || fail "scontrol reconfigure failed"
	wait_log "$(ctld_log)" "switch/lua: reconfigure: /etc/slurm/switch.lua keeps its last good version \(content fnv1a64:[0-9a-f]{16}\) from the previous slurmctld" 30
	wait_for 20 sh -c "'$E2E_CLUSTER' exec -- scontrol ping | grep -q UP" || fail "slurmctld is not UP after the reconfigure"
	ids=""
	for _ in 1 2 3; do ids="$ids $(submit -N2 --network=fs:ok --wrap=true)"; done
	for id in $ids; do
		wait_job "$id" COMPLETED 30
		ctld_job "$id" " job_start: failsafe version A$v" >/dev/null || fail "JobId=$id did not run version A"
		ctld_job "$id" " job_complete: failsafe version A$v" >/dev/null || fail "JobId=$id's teardown did not run version A"
		if ctld_grep "JobId=$id (requeued|cancelled)"; then fail "JobId=$id was requeued or cancelled"; fi
	done
	for n in node1 node2; do assert_eq "" "$(drain_reason "$n")" "drain reason of $n"; done
	assert_eq 1 "$(ctld_count "switch/lua: .*/etc/slurm/switch.lua changed \(content fnv1a64:[0-9a-f]{16}\) but is refused: /etc/slurm/switch.lua:[0-9]+: unexpected symbol near '='; calls keep running the last good version \(content fnv1a64:[0-9a-f]{16}\)$")" \
		"error lines for the broken edit"
	assert_eq 0 "$(ctld_count "switch/lua: .*(could not load the script|no version of it has passed yet|block_job_complete taken as false)")" \
		"lines of a script that does not load"
	ctld_grep "switch/lua: script /etc/slurm/switch.lua \(.*, block_job_complete=true\)" >/dev/null ||
		fail "block_job_complete did not keep the last good version's answer (true) across the reconfigure"
	# The fix (version B) and a reconfigure: B runs.
	cp -p "$good" "$SCRIPT_H"
	printf '\nslurm.log_info("failsafe version %%s", "B%s")\n' "$v" >>"$SCRIPT_H"
	c_root scontrol reconfigure || fail "scontrol reconfigure failed"
	wait_for 20 sh -c "'$E2E_CLUSTER' exec -- scontrol ping | grep -q UP" || fail "slurmctld is not UP after the reconfigure"
	id=$(submit -N2 --network=fs:ok --wrap=true)
	wait_job "$id" COMPLETED 30
	ctld_job "$id" " job_start: failsafe version B$v" >/dev/null || fail "version B did not run after the fix"
	ctld_grep "switch/lua: .*/etc/slurm/switch.lua changed \(content fnv1a64:[0-9a-f]{16}, was fnv1a64:[0-9a-f]{16}\): it loads, calls now run it" >/dev/null ||
		fail "no line saying the fixed version runs"
}

e2e_test "switch/lua: failsafe: a broken switch.lua at a cold slurmctld start is refused as before: the last good version does not carry over a restart" t_bad_edit_cold_start
t_bad_edit_cold_start() {
	local good id
	good=$(mktemp)
	cp -p "$SCRIPT_H" "$good"
	# shellcheck disable=SC2064 # $good is fixed now
	trap "cp -p '$good' '$SCRIPT_H'; rm -f '$good'; restart_ctld >/dev/null 2>&1 || true" EXIT
	id=$(submit -N1 --network=fs:ok --wrap=true)
	wait_job "$id" COMPLETED 30
	printf 'local x = = 1\n' >>"$SCRIPT_H"
	restart_ctld
	wait_log "$(ctld_log)" "switch/lua: /etc/slurm/switch.lua \(content fnv1a64:[0-9a-f]{16}\) is refused: /etc/slurm/switch.lua:[0-9]+: unexpected symbol near '='; no version of it has passed yet, so calls fail to load it" 30
	id=$(submit -N1 --no-requeue --network=fs:ok --wrap=true)
	wait_job "$id" CANCELLED 30
	assert_job_reason "$id" "^switch setup failed: switch/lua job_start could not load the script: /etc/slurm/switch.lua:[0-9]+: unexpected symbol near '='"
	if ctld_grep "keeps its last good version" >/dev/null; then fail "the last good version carried over a cold start"; fi
}

e2e_test "switch/lua: failsafe: a 2 MiB log line in job_start and job_complete leaves the outcome right; the line is cut at 4096 bytes" t_huge_line
t_huge_line() {
	local id len
	id=$(submit -N2 --network=fs:hugelog --wrap=true)
	wait_job "$id" COMPLETED 30
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_complete returned rc=0 \(slurm.SUCCESS\)" 15
	for n in node1 node2; do assert_eq "" "$(drain_reason "$n")" "drain reason of $n"; done
	len=$(ctld_grep "switch/lua: JobId=$id job_start: hugelog start" | awk '{ print length($0) }' | head -n1)
	[ -n "$len" ] || fail "the job_start line is not in the log"
	[ "$len" -lt 4400 ] || fail "the logged line has $len bytes"
	ctld_job "$id" ' job_complete: hugelog complete y+ \[\.\.\. line truncated: 2097169 bytes in all\]' >/dev/null ||
		fail "the job_complete line is not cut with its marker"
}

e2e_test "switch/lua: failsafe: a 50 MB flood from job_start keeps the log bounded and the job runs" t_flood
t_flood() {
	local id before after sup
	before=$(stat -c %s "$(ctld_log)")
	id=$(submit -N2 --network=fs:flood --wrap=true)
	wait_job "$id" COMPLETED 60
	after=$(stat -c %s "$(ctld_log)")
	note "slurmctld.log grew by $((after - before)) bytes for a 50 MB flood"
	[ $((after - before)) -lt 3000000 ] || fail "slurmctld.log grew by $((after - before)) bytes"
	ctld_job "$id" ' job_start: [0-9]+ lines suppressed \(log budget: 1000 lines or 1048576 bytes per call\)' >/dev/null ||
		fail "no 'lines suppressed' line"
	sup=$(our_supervisor)
	if [ -n "$sup" ]; then note "supervisor peak RSS: $(awk '/VmHWM/ { print $2, $3 }' "/proc/$sup/status")"; fi
}

e2e_test "switch/lua: failsafe: at the deadline a helper that traps SIGTERM cleans up within switch_kill_grace; the setup is timed out" t_term_grace
t_term_grace() {
	local tag marker id
	tag=$(e2e_uniq)
	marker=/tmp/switch-lua-e2e.$tag.cleaned
	# shellcheck disable=SC2064 # $marker is fixed now
	trap "rm -f '$E2E_ROOT$marker'" EXIT
	id=$(submit -N1 --no-requeue --network="fs:trap:$marker" --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start timed out" 20
	wait_for 10 test -e "$E2E_ROOT$marker" || fail "the helper's cleanup did not run"
	assert_eq "cleaned up" "$(cat "$E2E_ROOT$marker")" "the helper's marker"
	assert_job_reason "$id" '^switch setup timed out'
}

e2e_test "switch/lua: failsafe: a bad switch_* value at scontrol reconfigure leaves slurmctld up with its previous settings, and says so" t_bad_reconfigure
t_bad_reconfigure() {
	local saved id kept error
	kept=$(settings_line)
	error=$(c_root "$(switch_lua_cli)" settings switch_timeout=0 2>&1) && fail "switch-lua settings accepted switch_timeout=0"
	saved=$(mktemp)
	cp -p "$CONF_H" "$saved"
	# shellcheck disable=SC2064 # $saved is fixed now
	trap "cp -p '$saved' '$CONF_H'; rm -f '$saved'; c_root scontrol reconfigure >/dev/null 2>&1 || true" EXIT
	sed -i 's/^SlurmctldParameters=.*/SlurmctldParameters=switch_timeout=0,switch_kill_grace=3/' "$CONF_H"
	c_root scontrol reconfigure || fail "scontrol reconfigure failed"
	wait_log "$(ctld_log)" "$(ere_quote "switch/lua: $error at reconfigure; keeping the previous settings ($kept)")" 20
	wait_for 20 sh -c "'$E2E_CLUSTER' exec -- scontrol ping | grep -q UP" || fail "slurmctld is not UP after the reconfigure"
	id=$(submit -N2 --network=fs:ok --wrap=true)
	wait_job "$id" COMPLETED 30
}

# OverSubscribe=FORCE:20 (the default of the partition line that follows
# the --extra lines) lets 20 jobs share a core, so that 30 jobs can be in
# CONFIGURING at once on the 3 nodes of 2 CPUs.
# e2e-config: --switch-type switch/lua --script test/e2e/lua/failsafe.lua --slurmctld-params switch_timeout=40 --extra 'PartitionName=DEFAULT OverSubscribe=FORCE:20'

# A stopped supervisor is not the job's failure (issue 20, switch.lua(5)
# R_START_LOST): the watchdog kills it within its bound (a ping every 1 s,
# killed after 5 s without an answer), and each job_start it ran is undone
# with job_complete(nil) and run again on the new supervisor; the job stays
# CONFIGURING (fs:hang hangs again: the test cancels it).
# t0801_lost ID SUP: JobId=ID's job_start was found lost with supervisor SUP.
t0801_lost() {
	ctld_job "$1" " job_start .*switch-lua-supervisor \(pid $2\) stopped answering for [0-9]+ ms \(watchdog bound 5 s\).*: the supervisor that ran it is gone \(replaced\); not the job's failure: running job_complete with nil jobinfo for attempt [0-9]+, then job_start again" >/dev/null
}
# t0801_rerun ID: JobId=ID's job_start runs again (a second "hanging" line).
t0801_rerun() { [ "$(ctld_count "switch/lua: JobId=$1 job_start: hanging")" -ge 2 ]; }

e2e_test "switch/lua: failsafe: a stopped supervisor (SIGSTOP) is replaced by the watchdog; its job_start is undone with nil and run again on the new one, the job not failed (R_START_LOST)" t_watchdog
t_watchdog() {
	local id sup id2 new
	id=$(submit -N1 --no-requeue --network=fs:hang --wrap=true)
	wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start: hanging" 15
	sup=$(our_supervisor)
	[ -n "$sup" ] || fail "no supervisor process of this cluster"
	kill -STOP "$sup"
	wait_for 15 t0801_lost "$id" "$sup" || fail "JobId=$id: no R_START_LOST line naming the watchdog and supervisor $sup: $(ctld_job "$id" "job_start" | tail -n 3)"
	wait_for 15 t0801_rerun "$id" || fail "JobId=$id: job_start did not run again on the new supervisor"
	if kill -0 "$sup" 2>/dev/null; then fail "the stopped supervisor $sup still exists"; fi
	new=$(our_supervisor)
	if [ -z "$new" ] || [ "$new" = "$sup" ]; then fail "no new supervisor (had $sup, now '${new}')"; fi
	assert_eq CONFIGURING "$(job_state "$id")" "state of JobId=$id (not failed for the host's fault)"
	cancel "$id"
	id2=$(submit -N2 --network=fs:ok --wrap=true)
	wait_job "$id2" COMPLETED 30
}

e2e_test "switch/lua: failsafe: 30 jobs configuring when the supervisor is stopped (SIGSTOP): the watchdog replaces it and every job's job_start is undone and run again on the new one within the watchdog bound, none failed" t_watchdog_many
# _hanging N: at least N job_start calls logged "hanging" since the test began.
_hanging() { [ "$(ctld_count 'switch/lua: JobId=[0-9]+ job_start: hanging')" -ge "$1" ]; }
# _all_lost SUP IDS...: every job's job_start was found lost with SUP.
_all_lost() {
	local sup=$1 id
	shift
	for id in "$@"; do t0801_lost "$id" "$sup" || return 1; done
}
t_watchdog_many() {
	local ids=() id sup n t0 t1
	for _ in $(seq 30); do
		ids+=("$(submit -n1 --no-requeue --network=fs:hang --wrap=true)")
	done
	wait_for 60 _hanging 30 ||
		fail "not every job's job_start runs: $(ctld_count 'job_start: hanging') of 30"
	n=0
	for id in "${ids[@]}"; do
		[ "$(job_state "$id")" = CONFIGURING ] && n=$((n + 1))
	done
	assert_eq 30 "$n" "jobs in CONFIGURING before the stop"
	sup=$(our_supervisor)
	[ -n "$sup" ] || fail "no supervisor process of this cluster"
	t0=$(date +%s%N)
	kill -STOP "$sup"
	wait_for 60 _all_lost "$sup" "${ids[@]}" || fail "not every job_start was found lost with supervisor $sup: $(ctld_count "stopped answering for") lines name the watchdog"
	t1=$(date +%s%N)
	note "30 job_start calls found lost and undone $(((t1 - t0) / 1000000)) ms after the SIGSTOP (switch_timeout=40 s)"
	wait_for 60 _hanging 60 || fail "not every job_start ran again: $(ctld_count 'job_start: hanging') of 60"
	for id in "${ids[@]}"; do
		assert_eq CONFIGURING "$(job_state "$id")" "state of JobId=$id (not failed for the host's fault)"
	done
	if kill -0 "$sup" 2>/dev/null; then fail "the stopped supervisor $sup still exists"; fi
	cancel "${ids[@]}"
	id=$(submit -N2 --network=fs:ok --wrap=true)
	wait_job "$id" COMPLETED 30
}
