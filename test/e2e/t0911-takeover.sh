# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,25.05,26.05
#
# t0911-takeover: two controllers (scripts/cluster config --backup) sharing
# one StateSaveLocation (switch_lua.conf(5), HIGH AVAILABILITY; issue 24),
# a failed reconfigure, a full StateSaveLocation and a failed fsync of the
# journal (STATESAVELOCATION).
# A standby that starts or restarts never touches the journal; a backup
# taking over (kill -9 of the primary, scontrol takeover) reads the journal
# as it is then; the primary coming back takes control the same way.  Each
# test writes down the expected ledger of test/e2e/lua/ha.lua and checks it
# with ha_ledger_check (lib.sh): one allocation and one release per
# attempt, no setup that returned run again.
#
# Slurm 24.11's backup answers the primary's request for control only once
# that request has waited for itself (CONTROL_TIMEOUT, 30 s), running its
# calls meanwhile: each hand-back to the primary takes about 30 s, and
# only calls longer than that are still in flight when it gives up control;
# hence the timeout.
#
# e2e-timeout: 300
# e2e-config: --backup --switch-type switch/lua --script test/e2e/lua/ha.lua --slurmctld-params switch_timeout=60 --extra 'PartitionName=DEFAULT OverSubscribe=FORCE:4'

HOLDS='switch/lua: this slurmctld holds control at epoch [0-9]+: journal read as it is now$'

ha_cleanup() { rm -f "$E2E_ROOT"/tmp/switch-lua-e2e."$1".*; }


# run_all_to_the_end TAG TIMEOUT ID...: start every PENDING job of IDs now
# (Slurm makes a requeued job wait 2 minutes: BeginTime), wait up to
# TIMEOUT s until all have ended COMPLETED and the ledger TAG shows each
# completed once, then check the ledger's rules and that no journal was set
# aside.
run_all_to_the_end() {
	local tag=$1 timeout=$2 id
	shift 2
	for id in "$@"; do
		if [ "$(job_state "$id" 2>/dev/null)" = PENDING ]; then
			c_root scontrol update JobId="$id" StartTime=now 2>/dev/null || true
		fi
	done
	wait_all_done "$timeout" "$@"
	for id in "$@"; do wait_ha_ledger "$tag" "^completed $id " 1 60; done
	note "ledger: $(ha_ledger "$tag" | tr '\n' ';')"
	ha_ledger_check "$tag" "$@" >&2 || fail "the ledger breaks the rules (above)"
	assert_eq 0 "$(ctld_count 'switch/lua: .*(CORRUPT|set aside)')" "journal lines set aside"
}

# _teardown_waited_or_ran TAG ID: job ID's teardown waits for the journal
# (switch_journal_failure=wait) or has run (the ledger of TAG).
_teardown_waited_or_ran() {
	_log_has "$(ctld_log)" "switch/lua: JobId=$2 job_complete waits for the journal" ||
		ha_ledger "$1" | grep -E "^completed $2 " >/dev/null
}

# wait_all_done TIMEOUT ID...: until every job has ended (or its record is
# gone: a finished job lives MinJobAge=30 s), failing at once on a job that
# ended in another state than COMPLETED.  A job that Slurm requeued itself
# after the takeover (on a loaded machine: "Batch JobId=N missing from
# batch node ... Requeuing job") waits PENDING Reason=BeginTime for
# Slurm's credential lifetime (120 s by default) before it runs again: the
# deadline then grows once by 130 s.
wait_all_done() {
	local timeout=$1 deadline id st extended=0
	local -a left
	shift
	deadline=$(($(date +%s) + timeout))
	while :; do
		left=()
		for id in "$@"; do
			st=$(job_state "$id" 2>/dev/null || echo gone)
			case "$st" in
			COMPLETED | gone) ;;
			FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
				fail "job $id ended $st"
				;;
			*)
				left+=("$id=$st")
				if [ "$st" = PENDING ] && [ "$extended" = 0 ] && [ "$(job_reason "$id")" = BeginTime ]; then
					extended=1
					deadline=$((deadline + 130))
					note "JobId=$id PENDING Reason=BeginTime (requeued by Slurm): the wait grows by 130 s"
				fi
				;;
			esac
		done
		[ ${#left[@]} -eq 0 ] && return 0
		(($(date +%s) < deadline)) || fail "jobs not over after ${timeout}s: ${left[*]}"
		sleep 0.5
	done
}

e2e_test "switch/lua: HA: a standby started and restarted while the primary sets up 10 jobs, then the primary killed -9: the backup takes over, one allocation and one release per attempt" t_standby_then_kill9
t_standby_then_kill9() {
	local tag id i
	local -a ids=()
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "ha_cleanup $tag" EXIT
	ctld stop backup
	for ((i = 0; i < 10; i++)); do
		ids+=("$(submit -n1 --network="e2e:s2e1:$tag" --wrap="sleep 25")")
	done
	# The standby starts while the primary sets up, and restarts.
	wait_ha_ledger "$tag" '^start ' 1 30
	ctld start backup
	wait_ha_ledger "$tag" '^started ' 4 60
	ctld stop backup
	ctld start backup
	wait_ha_ledger "$tag" '^started ' 10 60
	for id in "${ids[@]}"; do wait_job "$id" RUNNING 30; done
	wait_state_saved
	# Written by the primary after both starts of the standby.
	note "ledger before the kill: $(ha_ledger_count "$tag" '^started ') setups returned"
	ctld kill9 primary
	wait_backup_control 40
	wait_all_done 90 "${ids[@]}"
	wait_ha_ledger "$tag" '^completed ' 10 60
	note "ledger: $(ha_ledger "$tag" | tr '\n' ';')"
	ha_ledger_check "$tag" "${ids[@]}" >&2 || fail "the ledger breaks the rules (above)"
	assert_eq 10 "$(ha_ledger_count "$tag" '^start ')" "job_start calls begun"
	assert_eq 10 "$(ha_ledger_count "$tag" '^complete ')" "job_complete calls begun"
	assert_eq 0 "$(ctld_count 'switch/lua: .*(CORRUPT|set aside|another slurmctld holds)')" "journal lines set aside or refused"
	# The standby's two starts took nothing: the backup took control once.
	assert_eq 1 "$(ctld_count "$HOLDS")" "controllers taking control"
	# The primary back for the next test (without the hand-back's 30 s:
	# the backup stops first, giving up control in its switch save).
	ctld stop backup
	ctld start primary
	ctld start backup
}

e2e_test "switch/lua: HA: three cycles of scontrol takeover and hand-back with setups and teardowns in flight at every switch: no double setup, no double or missing teardown" t_takeover_cycles
t_takeover_cycles() {
	local tag cycle to id_t id_s id secs
	local -a ids=()
	tag=$(e2e_uniq)
	# shellcheck disable=SC2064 # $tag is fixed now
	trap "ha_cleanup $tag" EXIT
	for cycle in 1 2 3; do
		for to in backup primary; do
			# A teardown in flight (the job ends at once, its job_complete
			# takes SECS) and a setup in flight (job_start takes SECS):
			# 12 s for a takeover, 40 s for a hand-back, which the
			# backup performs 30 s after the primary asked (header).
			secs=12
			[ "$to" = primary ] && secs=40
			id_t=$(submit -n1 --network="e2e:s0e$secs:$tag" --wrap=true)
			id_s=$(submit -n1 --network="e2e:s${secs}e0:$tag" --wrap="sleep 1")
			ids+=("$id_t" "$id_s")
			wait_ha_ledger "$tag" "^complete $id_t " 1 40
			wait_ha_ledger "$tag" "^start $id_s " 1 40
			note "cycle $cycle: control to the $to, JobId=$id_t tearing down, JobId=$id_s setting up"
			if [ "$to" = backup ]; then takeover; else ctld start primary; fi
		done
	done
	wait_all_done 150 "${ids[@]}"
	# Every job has its completed teardown (the last ones may still run).
	for id in "${ids[@]}"; do wait_ha_ledger "$tag" "^completed $id " 1 60; done
	note "ledger: $(ha_ledger "$tag" | tr '\n' ';')"
	ha_ledger_check "$tag" "${ids[@]}" >&2 || fail "the ledger breaks the rules (above)"
	# The switches did find calls in flight: they were begun again.
	(($(ha_ledger_count "$tag" '^start ') >= $(ha_ledger_count "$tag" '^started ') + 6)) ||
		fail "fewer than 6 job_start calls killed in flight by the 6 switches"
	(($(ha_ledger_count "$tag" '^complete ') >= $(ha_ledger_count "$tag" '^completed ') + 6)) ||
		fail "fewer than 6 job_complete calls killed in flight by the 6 switches"
	assert_eq 6 "$(ctld_count "$HOLDS")" "controllers taking control (3 takeovers, 3 hand-backs)"
	assert_eq 0 "$(ctld_count 'switch/lua: .*(CORRUPT|set aside|another slurmctld holds)')" "journal lines set aside or refused"
	# Issue 40, item 4: nothing of one period of control in the next.  The
	# backup process took control three times; no hold of an earlier
	# period is re-asserted on a node: none stays COMPLETING with no job,
	# and a job with and one without --network both run to their end.
	wait_for 60 _no_node_completing ||
		fail "nodes left COMPLETING with no job: $(c_root sinfo -h -N -o '%N=%T' | tr '\n' ' ')"
	id=$(submit -n1 --network="e2e:s0e0:$tag" --wrap=true)
	id_s=$(submit -n1 --wrap=true)
	wait_all_done 60 "$id" "$id_s"
	_no_node_completing || fail "a node COMPLETING after the probes: $(c_root sinfo -h -N -o '%N=%T' | tr '\n' ' ')"
}

# _no_node_completing: no node's state says COMPLETING (sinfo %T "completing").
_no_node_completing() { ! c_root sinfo -h -N -o '%T' | grep -q 'completing'; }

# A reconfigure on a slurmctld run as a daemon (as under systemd: with -D
# it execs itself in place and there is no old process to resume).  The new
# process initialises switch/lua and takes control (switch restore), then
# dies in read_slurm_conf: slurm.conf names a JobCompType that does not
# exist ("Failed to initialize jobcomp plugin", fatal).  The old process
# resumes without reading slurm.conf again.  (A broken burst_buffer.lua
# would kill both: the resuming process initialises burst_buffer again.)
# e2e-config: --ctld-detached --switch-type switch/lua --script test/e2e/lua/ha.lua --slurmctld-params switch_timeout=60 --extra 'PartitionName=DEFAULT OverSubscribe=FORCE:4'

ctld_pid() { head -n1 "$E2E_CLH/run/slurmctld.slurm.pid"; }

e2e_test "switch/lua: HA: a reconfigure whose new slurmctld dies after the switch plugin's init and restore (fatal in read_slurm_conf), jobs in flight: the old slurmctld carries on, nothing lost" t_failed_reconfigure
t_failed_reconfigure() {
	local tag pid id_r id_t id_s id_n id conf
	tag=$(e2e_uniq)
	conf=$E2E_ROOT/etc/slurm/slurm.conf
	cp "$conf" "$E2E_TMP/slurm.conf.good"
	# shellcheck disable=SC2064 # fixed now
	trap "cp '$E2E_TMP/slurm.conf.good' '$conf'; ha_cleanup $tag" EXIT
	pid=$(ctld_pid)
	id_r=$(submit -n1 --network="e2e:s0e0:$tag" --wrap="sleep 15")
	wait_job "$id_r" RUNNING 30
	# A teardown and a setup in flight (8 s each) at the reconfigure.
	id_t=$(submit -n1 --network="e2e:s0e8:$tag" --wrap=true)
	id_s=$(submit -n1 --network="e2e:s8e0:$tag" --wrap="sleep 1")
	wait_ha_ledger "$tag" "^complete $id_t " 1 40
	wait_ha_ledger "$tag" "^start $id_s " 1 40
	echo "JobCompType=jobcomp/e2e_no_such_plugin" >>"$conf"
	c_root scontrol reconfigure || note "scontrol reconfigure: exit $? (the reply may be lost)"
	wait_log "$(ctld_log)" "Resuming operation, reconfigure failed" 60
	cp "$E2E_TMP/slurm.conf.good" "$conf"
	assert_eq "$pid" "$(ctld_pid)" "the slurmctld that carries on (pid)"
	# The new process had initialised switch/lua and taken control.
	log_since "$(ctld_log)" | awk -v holds="$HOLDS" '
		/Attempting to reconfigure/ { on = 1 }
		on && /switch\/lua: active in slurmctld/ { init = 1 }
		on && $0 ~ holds { took = 1 }
		on && /Failed to initialize jobcomp plugin/ { died = 1 }
		/Resuming operation, reconfigure failed/ && !seen { ok = init && took && died; seen = 1 }
		END { exit !ok }' ||
		fail "no switch/lua init, control and jobcomp fatal between the reconfigure and its failure: $(log_since "$(ctld_log)" | grep -E 'reconfigure|switch/lua: (active|this slurmctld)|fatal' | tail -n 12)"
	assert_eq 1 "$(ctld_count 'switch/lua: this slurmctld holds control at epoch [0-9]+: journal read as it is now \(resuming after a failed reconfigure\)$')" \
		"the old slurmctld taking control again"
	id_n=$(submit -n1 --network="e2e:s1e1:$tag" --wrap=true)
	wait_all_done 90 "$id_r" "$id_t" "$id_s" "$id_n"
	for id in "$id_r" "$id_t" "$id_s" "$id_n"; do wait_ha_ledger "$tag" "^completed $id " 1 60; done
	note "ledger: $(ha_ledger "$tag" | tr '\n' ';')"
	ha_ledger_check "$tag" "$id_r" "$id_t" "$id_s" "$id_n" >&2 || fail "the ledger breaks the rules (above)"
	assert_eq 0 "$(ctld_count 'switch/lua: .*(CORRUPT|set aside|another slurmctld holds)')" "journal lines set aside or refused"
}

# StateSaveLocation full (a tmpfs of 16 MiB filled to the last byte) during
# a burst of setups and a teardown, then freed (switch_lua.conf(5),
# STATESAVELOCATION): setups are refused with a reason that names the
# journal and errno 28, their jobs requeued as for any failed setup; a
# teardown whose record cannot be written waits, its job COMPLETING
# (switch_journal_failure=wait); nothing is set aside; once there is room a
# fresh snapshot makes the journal trusted again, the teardown runs once and
# every job runs, without a restart.
# e2e-config: --state-tmpfs 16m --switch-type switch/lua --script test/e2e/lua/ha.lua --slurmctld-params switch_timeout=60 --extra 'PartitionName=DEFAULT OverSubscribe=FORCE:4'

e2e_test "switch/lua: StateSaveLocation full during a burst of setups and a teardown, then freed: setups refused naming the journal and errno 28, no allocation leaked, normal again without a restart" t_state_full
t_state_full() {
	local tag id_r id filler k fails
	local -a held=() rest=()
	tag=$(e2e_uniq)
	filler=$E2E_CLH/state/e2e-filler
	fails="switch/lua: journal [^ ]+: cannot append: No space left on device \(errno 28\); "
	# shellcheck disable=SC2064 # fixed now
	trap "rm -f '$filler'; ha_cleanup $tag" EXIT
	# Its teardown comes while the disk is full.
	id_r=$(submit -n1 --network="e2e:s0e1:$tag" --wrap="sleep 8")
	wait_job "$id_r" RUNNING 30
	for ((k = 0; k < 14; k++)); do held+=("$(submit -H -n1 --network="e2e:s1e1:$tag" --wrap=true)"); done
	wait_state_saved
	dd if=/dev/zero of="$filler" bs=4k 2>/dev/null || true
	note "StateSaveLocation: $(df --output=avail "$E2E_CLH/state" | tail -n1) KiB left"
	# The journal's last page still has room for a few records: setups go
	# on (each writes a record as it starts and one as it returns) until an
	# append finds no room, one job at a time.
	for ((k = 0; k < ${#held[@]}; k++)); do
		c_root scontrol release "${held[k]}"
		if wait_for 3 _log_has "$(ctld_log)" "$fails"; then break; fi
	done
	((k + 3 < ${#held[@]})) || fail "the journal never failed to append (or failed only with the last jobs)"
	note "the first append failed with job $((k + 1)) of ${#held[@]} released"
	rest=("${held[@]:k+1}")
	c_root scontrol release "$(
		IFS=,
		echo "${rest[*]}"
	)"
	for id in "${rest[@]}"; do
		wait_log "$(ctld_log)" "switch/lua: JobId=$id job_start could not be started: journal [^ ]+: cannot append: No space left on device \(errno 28\): no setup starts without its record" 30
	done
	if ha_ledger "$tag" | grep -qE "^start ($(
		IFS='|'
		echo "${rest[*]}"
	)) "; then fail "a job_start ran while the journal could not be written"; fi
	# Its teardown: waiting for the journal if its record found the disk full.
	wait_for 30 _teardown_waited_or_ran "$tag" "$id_r" || fail "job $id_r: its teardown neither waited for the journal nor ran: $(ha_ledger "$tag" | grep " $id_r " | tr '\n' ';')"
	if _log_has "$(ctld_log)" "switch/lua: JobId=$id_r job_complete waits for the journal"; then
		sleep 2
		if ha_ledger "$tag" | grep -E "^complete $id_r " >/dev/null; then fail "job $id_r: job_complete ran while the journal could not record it"; fi
		note "job $id_r: its teardown waits for the journal, the job $(job_state "$id_r")"
	fi
	rm -f "$filler"
	wait_log "$(ctld_log)" "switch/lua: journal [^ ]+: writable again after 'cannot append: No space left on device \(errno 28\)'" 60
	wait_all_done 60 "$id_r"
	# The refused ones, and the one whose setup found the disk full first.
	run_all_to_the_end "$tag" 90 "$id_r" "${held[@]}"
	# One error line at the first failure, whatever the number of refusals.
	assert_eq 1 "$(ctld_count "$fails")" "the journal's error lines"
}

# A failed fsync of the journal (switch_lua.conf(5), STATESAVELOCATION;
# PostgreSQL's "fsyncgate": after a failed fsync the kernel may have
# dropped the pages, and the next fsync reports success for them).  The
# shim test/e2e/shim/fail_fsync.c, preloaded into slurmctld, makes the
# journal's fsync and fdatasync fail with EIO while its control file says
# so, and logs every sync of the journal's files.  A setup whose record did
# not reach the disk does not run (refused naming the journal and errno 5,
# requeued); the journal stays untrusted, a teardown waits for its record
# (its job COMPLETING, switch_journal_failure=wait), and `switch-lua
# status` says FAILING, until a fresh snapshot has been written
# and synced: after a single failed sync the very next sync of the journal
# is that snapshot's (its temp file), never an append to the file the
# failed sync left behind; then the teardown runs, once.  Normal again
# without a restart.
# e2e-config: --ctld-preload test/e2e/shim/fail_fsync.c --switch-type switch/lua --script test/e2e/lua/ha.lua --slurmctld-params switch_timeout=60 --extra 'PartitionName=DEFAULT OverSubscribe=FORCE:4'

FSYNC_CTL=$E2E_ROOT/tmp/switch-lua-fail-fsync # the shim's control file (host path)

# fsync_fault always|N|off: what the shim does from now on (see its header).
fsync_fault() {
	if [ "$1" = off ]; then
		rm -f "$FSYNC_CTL"
		return
	fi
	(umask 000 && printf '%s\n' "$1" >"$FSYNC_CTL.new")
	mv -f "$FSYNC_CTL.new" "$FSYNC_CTL"
}
# shim_log: the syncs of the journal's files the shim saw ("CALL PATH RESULT").
shim_log() { cat "$FSYNC_CTL.log" 2>/dev/null || true; }
_shim_failed() { (($(shim_log | grep -c ' EIO$') >= $1)); }
status_journal() { c_root "$(switch_lua_cli)" status 2>/dev/null | grep -E '^Journal: ' || true; }
_status_is() { [[ $(status_journal) =~ $1 ]]; }
_ctld_count_is() { [ "$(ctld_count "$1")" = "$2" ]; }
# _sync_after_eio N: the shim's line after the first EIO past its line N.
_sync_after_eio() {
	shim_log | tail -n +"$(($1 + 1))" | awk '$3 == "EIO" { if ((getline l) > 0) { print l; found = 1 } exit }
		END { exit !found }'
}

e2e_test "switch/lua: a failed fsync of the journal: setups refused naming the journal and errno 5, a teardown waits for its record (job COMPLETING), status FAILING; a fresh snapshot is the next sync before it is trusted again; normal again without a restart" t_failed_fsync
t_failed_fsync() {
	local tag id_r id b c d e j ino0 refused eio again next n
	local -a held=()
	tag=$(e2e_uniq)
	j=$E2E_CLH/state/switch_lua.journal
	eio='fdatasync failed: Input/output error \(errno 5\)'
	refused="job_start could not be started: journal [^ ]+: $eio: no setup starts without its record"
	again="switch/lua: journal [^ ]+: writable again after '$eio'"
	# shellcheck disable=SC2064 # fixed now
	trap "rm -f '$FSYNC_CTL' '$FSYNC_CTL.new' '$FSYNC_CTL.log'; ha_cleanup $tag" EXIT
	rm -f "$FSYNC_CTL" "$FSYNC_CTL.log"
	grep -q fail_fsync "/proc/$(head -n1 "$E2E_CLH/run/slurmctld.pid")/maps" ||
		fail "slurmctld has not loaded the shim (scripts/cluster config --ctld-preload)"
	# Its teardown comes while the journal cannot be synced.
	id_r=$(submit -n1 --network="e2e:s0e1:$tag" --wrap="sleep 6")
	for ((n = 0; n < 4; n++)); do held+=("$(submit -H -n1 --network="e2e:s1e1:$tag" --wrap=true)"); done
	b=${held[0]} c=${held[1]} d=${held[2]} e=${held[3]}
	wait_job "$id_r" RUNNING 30
	wait_ha_ledger "$tag" "^started $id_r " 1 30
	sleep 1 # its launch record written
	[ -n "$(shim_log)" ] || fail "the shim saw no sync of the journal: $(ls -l "$E2E_CLH/state")"
	ino0=$(stat -c %i "$j")

	# 1. Every sync of the journal fails.
	fsync_fault always
	c_root scontrol release "$b"
	wait_log "$(ctld_log)" "switch/lua: JobId=$b $refused" 30
	c_root scontrol release "$c"
	wait_log "$(ctld_log)" "switch/lua: JobId=$c $refused" 30
	# The teardown of id_r: not run without its record; its job COMPLETING.
	wait_log "$(ctld_log)" "switch/lua: JobId=$id_r job_complete waits for the journal \($eio\): its 'teardown started' record is not on disk" 30
	wait_for 10 _status_is "^Journal: +FAILING: $eio \(new setups fail until it is written again; 1 teardown waits for it, their jobs COMPLETING\)" ||
		fail "switch-lua status during the failure: '$(status_journal)'"
	sleep 1
	if ha_ledger "$tag" | grep -E "^complete $id_r " >/dev/null; then fail "job_complete of $id_r ran while the journal could not record it"; fi
	assert_eq COMPLETING "$(job_state "$id_r")" "job $id_r while its teardown waits"
	if ha_ledger "$tag" | grep -qE "^start ($b|$c) "; then fail "a job_start ran while the journal could not be synced"; fi
	# 2. Lifted: the retry writes the snapshot, no restart; then the
	# teardown runs, once.
	fsync_fault off
	wait_log "$(ctld_log)" "$again" 30
	wait_log "$(ctld_log)" "switch/lua: journal [^ ]+: written again: running the 1 teardown that waited for it" 10
	wait_ha_ledger "$tag" "^completed $id_r " 1 30
	[ "$(stat -c %i "$j")" != "$ino0" ] || fail "the journal is trusted again, but no snapshot replaced the file"
	wait_for 10 _status_is '^Journal: +writable$' || fail "switch-lua status after the failure: '$(status_journal)'"

	# 3. One failed sync, then syncs succeed again (the trap): of the two
	# setups released together the first one's record fails its sync and
	# it is refused, and so is the second when its record was written
	# before that sync (one fdatasync covers the records written since the
	# last: group commit); the next sync of the journal must be a fresh
	# snapshot's, not an append behind the record that may be lost.
	n=$(shim_log | wc -l)
	fsync_fault 1
	c_root scontrol release "$d,$e"
	wait_log "$(ctld_log)" "switch/lua: JobId=($d|$e) $refused" 30
	wait_for 10 _sync_after_eio "$n" || fail "no sync of the journal after the failed one"
	note "the shim's log from the single failure on: $(shim_log | tail -n +"$((n + 1))" | head -n 4 | tr '\n' ';')"
	next=$(_sync_after_eio "$n")
	[[ $next =~ ^fsync\ .*/switch_lua\.journal\.tmp\.[0-9]+\ ok$ ]] ||
		fail "the first sync of the journal after the failed one is '$next', not a fresh snapshot's"
	wait_for 20 _ctld_count_is "$again" 2 || fail "no line 'writable again' after the single failed sync"
	n=$(ctld_count "switch/lua: JobId=($d|$e) $refused")
	[[ $n =~ ^[12]$ ]] || fail "setups refused after the single failed sync: expected 1 or 2 (those whose record the failed sync covered), got '$n'"
	note "setups refused after the single failed sync: $n of 2"

	# Every job runs now.
	run_all_to_the_end "$tag" 60 "$id_r" "${held[@]}"
	# One error line per failure, whatever the number of refusals.
	assert_eq 2 "$(ctld_count "switch/lua: journal [^ ]+: $eio; ")" "the journal's error lines"
}
