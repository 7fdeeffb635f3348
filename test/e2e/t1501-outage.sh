# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,26.05
#
# t1501-outage: the fabric and the nodes fail under running jobs (issue 20).
# The ledger fixture test/e2e/lua/outage.lua stands for a fabric manager
# whose allocations are marker files and ledger lines in the chroot's
# $OUT_DIR; the test switches that fabric off and on.  switch.lua(5):
# Fabric outages, R_COMPLETE_FABRIC_DOWN, R_START_FABRIC_DOWN;
# switch_lua.conf(5): switch_breaker_failures, switch_breaker_window.
#
# e2e-timeout: 240

OUT_DIR=/tmp/switch-lua-e2e-outage # the fixture's DIR, inside the chroot
OUT_DIR_H=$E2E_ROOT$OUT_DIR

# ledger_reset: an empty ledger, the fabric up.
ledger_reset() {
	c_root sh -c "rm -rf $OUT_DIR && mkdir -p $OUT_DIR/alloc $OUT_DIR/ports && touch $OUT_DIR/ledger.log && chmod -R 0777 $OUT_DIR && chmod 0666 $OUT_DIR/ledger.log"
}

# fabric STATE: up, down (hooks return slurm.FABRIC_DOWN) or unreachable
# (hooks raise an error).
fabric() { c_root sh -c "echo $1 >$OUT_DIR/fabric.new && chmod 0666 $OUT_DIR/fabric.new && mv $OUT_DIR/fabric.new $OUT_DIR/fabric"; }

# ledger_count KIND: ledger lines of that kind.
ledger_count() { awk -v k="$1" '$1 == k' "$OUT_DIR_H/ledger.log" 2>/dev/null | wc -l; }

# expect_ledger_balanced IDS...: every allocation was given back exactly
# once (one FREE first=yes per ALLOC, no FREE first=no, no FREE of an
# allocation never made), none is left, and each job of IDS took one.
expect_ledger_balanced() {
	local bad id
	bad=$(awk '
		$1 == "ALLOC" { alloc[$2]++ }
		$1 == "FREE" && $4 == "first=yes" { freed[$2]++ }
		$1 == "FREE" && $4 != "first=yes" { print "released again: " $0 }
		END {
			for (a in alloc) if (freed[a] != 1) print "allocation " a " released " (freed[a] + 0) " times"
			for (f in freed) if (!(f in alloc)) print "released but never allocated: " f
		}' "$OUT_DIR_H/ledger.log")
	[ -z "$bad" ] || fail "ledger: $bad"
	assert_eq "" "$(ls -A "$OUT_DIR_H/alloc")" "allocations left in the ledger"
	for id in "$@"; do
		awk -v j="job=$id" '$1 == "ALLOC" && $3 == j' "$OUT_DIR_H/ledger.log" | grep -q . ||
			fail "JobId=$id never got an allocation"
	done
}

# expect_no_drain: no node drained or down, and no drain line.
expect_no_drain() {
	local n
	for n in node1 node2 node3; do
		assert_eq "" "$(drain_reason "$n")" "drain reason of $n"
	done
	if ctld_grep 'switch/lua: drained node|switch/lua: JobId=[0-9]+ draining '; then
		fail "a node was drained"
	fi
}

# breaker_opens: how many times switch-lua status says the breaker opened.
breaker_opens() {
	c_root "$(switch_lua_cli)" status --json | c_root python3 -c 'import json, sys
print(json.load(sys.stdin)["fabric_breaker"]["opens"])'
}

# jobs_left IDS...: how many of IDS slurmctld still has in a state that is
# not final (or at all, for the pending ones).
_jobs_done() {
	[ -z "$(c_root squeue -h -t PENDING,RUNNING,CONFIGURING,COMPLETING,REQUEUED,SUSPENDED -j "$(
		IFS=,
		echo "$*"
	)" -o %i 2>/dev/null)" ]
}

# release_begin_times IDS...: a job requeued by a failed setup waits
# Slurm's BeginTime of 121 s (cred_expire + 1); start those of IDS now, so
# that the test does not wait for it.
release_begin_times() {
	local id
	for id in $(c_root squeue -h -t PENDING -j "$(
		IFS=,
		echo "$*"
	)" -o '%i %r' 2>/dev/null | awk '$2 == "BeginTime" { print $1 }'); do
		c_root scontrol update jobid="$id" StartTime=now || :
	done
}

# e2e-config: --switch-type switch/lua --script test/e2e/lua/outage.lua --slurmctld-params switch_breaker_failures=3,switch_breaker_window=60,switch_retries=10

# (a) The issue asks for 60 jobs and a 3-minute outage; 30 jobs and a 30 s
# outage take the same path: the first slurm.FABRIC_DOWN opens the breaker
# (3 minutes would only add the back-off steps of 40 and 60 s to the kept
# teardowns' retries, the 5, 10 and 20 s ones run here), every job that
# ends meanwhile is kept with its nodes held, and the jobs that start
# meanwhile are requeued naming the outage.
e2e_test "switch/lua: fabric breaker: 30 short jobs flowing through a 30 s slurm.FABRIC_DOWN outage: no node drained, every allocation released once, the breaker's lines and counter" t_outage_fabric_down
t_outage_fabric_down() {
	local ids=() id i opens0 st
	ledger_reset
	# A slurmctld that has not changed a counter yet has no status file.
	if [ -e "$E2E_CLH/state/switch_lua.status" ]; then opens0=$(breaker_opens); else opens0=0; fi
	# Each job runs 4 s: some still run when the fabric goes down, so their
	# teardowns come during the outage.  With 1 s they had all ended by then
	# once on a busy machine (the ledger poll is slow there), and the 8 jobs
	# left only had their setups requeued: "no teardown was kept".
	for i in $(seq 1 30); do
		ids+=("$(submit -N1 --network=outage --wrap='sleep 4' -o /dev/null)")
	done
	wait_for 60 _allocs_and_running 6 || fail "the jobs did not start: $(ledger_count ALLOC) allocations, running: $(c_root squeue -h -t RUNNING -o %i | tr '\n' ' ')"
	fabric down
	wait_log "$(ctld_log)" 'switch/lua: fabric breaker OPEN: JobId=[0-9]+ job_(complete|start) returned slurm.FABRIC_DOWN: the fabric as a whole is taken to be unavailable' 30
	sleep 30
	# During the outage: nothing drained; the teardowns are kept.
	expect_no_drain
	((${#ids[@]} > 0))
	ctld_grep ' TeardownResult -> TeardownRetryWait \(R_COMPLETE_FABRIC_DOWN\)' >/dev/null ||
		fail "no teardown was kept (R_COMPLETE_FABRIC_DOWN)"
	st=$(c_root "$(switch_lua_cli)" status)
	assert_match 'Fabric breaker: +OPEN since ' "$(grep -F 'Fabric breaker:' <<<"$st")" "switch-lua status during the outage"
	assert_eq "$((opens0 + 1))" "$(breaker_opens)" "breaker opens in switch-lua status"
	fabric up
	wait_log "$(ctld_log)" 'switch/lua: fabric breaker closed after [0-9]+ s open: JobId=[0-9]+ job_(complete|start) succeeded; running the [0-9]+ kept teardowns? now' 90
	for i in 1 2 3 4 5 6; do
		release_begin_times "${ids[@]}"
		if wait_for 20 _jobs_done "${ids[@]}"; then break; fi
	done
	_jobs_done "${ids[@]}" || fail "jobs still not done: $(c_root squeue -h -t all -o '%i %T %r')"
	for id in "${ids[@]}"; do
		ctld_grep "_job_complete: JobId=$id WEXITSTATUS 0\$" >/dev/null || fail "JobId=$id did not end with exit status 0"
	done
	expect_ledger_balanced "${ids[@]}"
	expect_no_drain
	for i in node1 node2 node3; do wait_node "$i" idle 20; done
	assert_eq 1 "$(ctld_count 'switch/lua: fabric breaker OPEN: ')" "breaker OPEN lines"
	assert_eq 1 "$(ctld_count 'switch/lua: fabric breaker closed after ')" "breaker closed lines"
	assert_eq "$((opens0 + 1))" "$(breaker_opens)" "breaker opens in switch-lua status"
	assert_match 'Fabric breaker: +closed \(opened [0-9]+ times?, last closed ' \
		"$(c_root "$(switch_lua_cli)" status | grep -F 'Fabric breaker:')" "switch-lua status after the outage"
	note "ledger: $(ledger_count ALLOC) allocations, $(ledger_count FREE) releases, $(ledger_count DOWN) calls refused during the outage; $(ctld_count 'R_START_FABRIC_DOWN') setups requeued for the outage"
}
_allocs_at_least() { (($(ledger_count ALLOC) >= $1)); }
# _allocs_and_running N: at least N allocations so far, and a job running.
_allocs_and_running() { _allocs_at_least "$1" && (($(c_root squeue -h -t RUNNING -o %i | wc -l) >= 1)); }

# (c) A node DOWN and back while its job's teardown is held (job_complete
# returns slurm.EAGAIN with block_job_complete true; the plugin re-asserts
# its node holds every 5 s), with a job waiting for that node: the waiting
# job is not set up, nor does it run, before the teardown reported.
# Expected ledger order: the first job's FREE before the second job's
# ALLOC.  HOW: resume (ReturnToService=1: DOWN until scontrol resumes it)
# or back (ReturnToService=2: Slurm returns it to service as soon as its
# slurmd answers, a second later, COMPLETING gone; before R_SETUP_WAIT_HELD
# the waiting job got the node and ran at once).
t_down_held() {
	local how=$1 a b first_free b_alloc st
	ledger_reset
	fabric eagain
	a=$(submit -N1 -w node2 --network=outage --wrap=true -o /dev/null)
	wait_log "$(ctld_log)" "switch/lua: JobId=$a job_complete returned slurm.EAGAIN: nodes stay held, retry 1 of 10" 30
	b=$(submit -N1 -w node2 --network=outage --wrap=true -o /dev/null)
	c_root scontrol update nodename=node2 state=down reason="e2e: node2 down during a held teardown"
	sleep 2
	if [ "$how" = resume ]; then
		c_root scontrol update nodename=node2 state=resume
	fi
	sleep 7 # past one re-assertion of the holds (every 5 s) and a retry
	st=$(job_state "$b")
	assert_match '^(PENDING|CONFIGURING)$' "$st" "state of JobId=$b while node2's teardown is held"
	if _ledger_has FREE; then fail "JobId=$a's allocation was given back while its teardown was failing"; fi
	if awk -v j="job=$b" '$1 == "ALLOC" && $3 == j' "$OUT_DIR_H/ledger.log" | grep -q .; then
		fail "JobId=$b was set up on node2 before JobId=$a's teardown reported"
	fi
	if [ "$st" = CONFIGURING ]; then
		ctld_job "$b" " job_start waits: the teardown of JobId=$a still holds one of its nodes" >/dev/null ||
			fail "JobId=$b is CONFIGURING without the R_SETUP_WAIT_HELD line"
	fi
	fabric up
	wait_job "$b" COMPLETED 60
	first_free=$(grep -n "^FREE .* job=$a " "$OUT_DIR_H/ledger.log" | head -n1 | cut -d: -f1)
	b_alloc=$(grep -n "^ALLOC .* job=$b " "$OUT_DIR_H/ledger.log" | head -n1 | cut -d: -f1)
	if [ -z "$first_free" ] || [ -z "$b_alloc" ]; then
		fail "ledger: no FREE of JobId=$a or no ALLOC of JobId=$b"
	fi
	((first_free < b_alloc)) || fail "JobId=$b got its allocation (line $b_alloc) before JobId=$a gave back its own (line $first_free)"
	ctld_job "$a" ': released the job and its nodes' >/dev/null || fail "JobId=$a's nodes were not released"
	if [ "$st" = CONFIGURING ]; then
		ctld_job "$b" " the teardown of JobId=$a has reported: running job_start now" >/dev/null ||
			fail "no R_SETUP_AFTER_HELD line for JobId=$b"
	fi
	expect_ledger_balanced "$a" "$b"
	expect_no_drain
	resume_all
}

e2e_test "switch/lua: node hold: node2 set DOWN during a held teardown (slurm.EAGAIN) and back at once (ReturnToService=2): the job waiting for node2 is set up and runs only after the teardown reported (R_SETUP_WAIT_HELD)" t_down_back_held
t_down_back_held() { t_down_held back; }

# The counting path: a script that cannot tell (the hooks raise "fabric
# manager unreachable").  switch_breaker_failures=3: the first 2 failed
# teardowns are handled as usual, their nodes drained and their
# allocations not given back (switch.lua(5): "the N-1 failures before it
# opens are handled as usual, drained included"); the 3rd opens the
# breaker and is kept, and so is every later one, until the fabric is
# back.  This pins today's documented rule; see the note of issue 20 on
# deferring those N-1 drains.
e2e_test "switch/lua: fabric breaker: hooks that raise \"fabric manager unreachable\": the 3rd failed teardown of different jobs opens it (switch_breaker_failures=3); only the first 2 drain, the later ones are kept and released when the fabric is back" t_outage_counting
t_outage_counting() {
	local ids=() id i drained=0 n reason kept_job
	ledger_reset
	for i in 1 2 3; do
		ids+=("$(submit -N1 --network=outage --wrap='sleep 3' -o /dev/null)")
	done
	wait_for 30 _allocs_at_least 3 || fail "the jobs did not start: $(ledger_count ALLOC) allocations"
	fabric unreachable
	wait_log "$(ctld_log)" "switch/lua: fabric breaker OPEN: 3 teardowns of different jobs failed within 60 s \(switch_breaker_failures=3, switch_breaker_window=60\), the last JobId=[0-9]+: " 40
	kept_job=$(ctld_grep 'switch/lua: fabric breaker OPEN: 3 teardowns' | sed -n 's/.*the last JobId=\([0-9]*\):.*/\1/p' | head -n1)
	ctld_job "$kept_job" ' TeardownResult -> TeardownRetryWait \(R_COMPLETE_FABRIC_DOWN\)' >/dev/null ||
		fail "the teardown that opened the breaker (JobId=$kept_job) was not kept"
	for n in node1 node2 node3; do
		reason=$(drain_reason "$n")
		if [ -n "$reason" ]; then
			assert_match '^switch teardown failed: JobId=[0-9]+ switch/lua job_complete raised an error: fabric manager unreachable$' "$reason" "drain reason of $n"
			drained=$((drained + 1))
		fi
	done
	# Two jobs on one node drain one node: count the jobs, not the nodes.
	assert_eq 2 "$(ctld_count 'switch/lua: JobId=[0-9]+ TeardownResult -> Done \(R_COMPLETE_FAIL\)')" "teardowns failed and drained before the breaker opened"
	((drained >= 1 && drained <= 2)) || fail "$drained nodes drained, expected those of 2 jobs"
	fabric up
	wait_log "$(ctld_log)" "switch/lua: fabric breaker closed after [0-9]+ s open: JobId=$kept_job job_complete succeeded; running the 0 kept teardowns now" 90
	for id in "${ids[@]}"; do wait_job_done "$id" 30; done
	# The ledger: the 2 drained jobs' allocations were never given back
	# (their teardown is over, failed), the kept one's was, once.
	assert_eq 2 "$(find "$OUT_DIR_H/alloc" -type f | wc -l)" "allocations left by the 2 failed teardowns"
	[ ! -e "$OUT_DIR_H/alloc/$(awk -v j="job=$kept_job" '$1 == "ALLOC" && $3 == j { print $2 }' "$OUT_DIR_H/ledger.log")" ] ||
		fail "the kept teardown of JobId=$kept_job did not give its allocation back"
	assert_eq 0 "$(awk '$1 == "FREE" && $4 != "first=yes"' "$OUT_DIR_H/ledger.log" | wc -l)" "allocations released twice"
	resume_all
}

# The node tests need a DOWN node to stay DOWN until it is resumed:
# ReturnToService=1 (the cluster's default, 2, returns a DOWN node to
# service as soon as its slurmd answers, which is Slurm's doing).
# switch_retries=10 keeps a teardown that returns slurm.EAGAIN held for
# 50 s; switch_timeout=60 lets a host fault last that long (t_pids_limit).
# e2e-config: --switch-type switch/lua --script test/e2e/lua/outage.lua --slurmctld-params switch_retries=10,switch_timeout=60 --extra ReturnToService=1

e2e_test "switch/lua: node hold: node2 set DOWN and RESUMEd during a held teardown (slurm.EAGAIN, ReturnToService=1): the job waiting for node2 starts only after the teardown reported" t_down_resume_held
t_down_resume_held() { t_down_held resume; }

# (b) A node fails under a running 3-node job.  Expected: the job ends
# (NODE_FAIL), job_complete runs once with the job's three nodes and gives
# the allocation back once, the failed node stays out of service with its
# own state and reason (no switch/lua drain), the other two go back to
# idle, and job_complete's job table names the failed node
# (job.failed_nodes=node2, issue 20 per-node attribution), as the
# controller's line does.
t_node_fails() {
	local how=$1 id n line
	ledger_reset
	id=$(submit -N3 --no-requeue --network=outage --wrap='sleep 300' -o /dev/null)
	wait_job "$id" RUNNING 30
	wait_for 10 _allocs_at_least 1 || fail "no allocation for JobId=$id"
	if [ "$how" = down ]; then
		c_root scontrol update nodename=node2 state=down reason="e2e: node2 set down"
	else
		kill -9 "$(cat "$E2E_CLH/run/slurmd-node2.pid")"
	fi
	wait_job "$id" 'NODE_FAIL' 60
	wait_for 20 _ledger_has FREE || fail "job_complete did not give the allocation back: $(cat "$OUT_DIR_H/ledger.log")"
	wait_node node1 idle 30
	wait_node node3 idle 30
	assert_match '^down' "$(node_state node2)" "state of node2"
	if [ "$how" = down ]; then
		assert_eq "e2e: node2 set down" "$(drain_reason node2)" "reason of node2"
	fi
	if ctld_grep 'switch/lua: drained node|switch/lua: JobId=[0-9]+ draining '; then
		fail "switch/lua drained a node"
	fi
	assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
	expect_ledger_balanced "$id"
	line=$(awk '$1 == "COMPLETE"' "$OUT_DIR_H/ledger.log")
	assert_eq 1 "$(wc -l <<<"$line")" "job_complete calls in the ledger"
	assert_contains "nodes=node[1-3]" "$line" "job_complete's job.nodes"
	# The failed nodes are node2 and, on a loaded machine where another node
	# also missed Slurm's pings, that node too: what Slurm itself recorded.
	local failed want
	failed=$(sed -n 's/.*failed_nodes=\([^ ]*\).*/\1/p' <<<"$line")
	want=$( (echo node2; _slurm_not_responding) | sort -u)
	_each_in "$(c_root scontrol show hostnames "$failed")" "$want" ||
		fail "job.failed_nodes=$failed names a node Slurm did not find failed (node2, and not responding: $(_slurm_not_responding | paste -sd, -))"
	grep -qx node2 < <(c_root scontrol show hostnames "$failed") || fail "job.failed_nodes=$failed does not name node2"
	ctld_job "$id" " ended with failed nodes ${failed//[/\\[}\]* \(DOWN, NOT_RESPONDING or FAIL, or removed from the job\): job_complete is told \(job.failed_nodes\)" >/dev/null ||
		fail "no line names the failed nodes ($failed) of JobId=$id"
	if [ "$how" = kill ]; then
		"$E2E_CLUSTER" start >/dev/null 2>&1 || fail "node2's slurmd did not start again"
	fi
	resume_all
	wait_node node2 idle 30
}
_ledger_has() { grep -q "^$1 " "$OUT_DIR_H/ledger.log" 2>/dev/null; }
# _slurm_not_responding: the nodes slurmctld logged as not responding
# during the test ("Nodes node[1-2] not responding"), one a line.
_slurm_not_responding() {
	local hl
	# None is the usual case: grep's status 1 is no failure here.
	{ ctld_grep 'Nodes? [^ ]+ not responding' || true; } | sed -nE 's/.*Nodes? ([^ ]+) not responding.*/\1/p' |
		while read -r hl; do c_root scontrol show hostnames "${hl%,}"; done | sort -u
}
# _each_in LINES SET: every line of LINES is a line of SET.
_each_in() { [ -z "$(comm -23 <(sort -u <<<"$1") <(sort -u <<<"$2"))" ]; }

e2e_test "switch/lua: node failure: node2 set DOWN (scontrol) under a running 3-node job: one job_complete, told job.failed_nodes=node2, the allocation released once, only node2 out of service" t_node_down
t_node_down() { t_node_fails down; }

e2e_test "switch/lua: node failure: node2's slurmd killed under a running 3-node job: one job_complete, told job.failed_nodes=node2 (and any node Slurm also found not responding), the allocation released once, only node2 out of service" t_node_killed
t_node_killed() { t_node_fails kill; }

# Issue 20, per-node attribution, the other way: a teardown that fails for
# one node says so (job_complete returns slurm.ERROR, "port 7 did not
# clear", "node3").  Expected: node3 alone drained, with the script's
# message in the reason; node1 and node2 back to idle; the allocation
# released once (the fixture gave it back before failing).
e2e_test "switch/lua: node attribution: job_complete fails naming node3 of a 3-node job: only node3 is drained, with the script's message; the other nodes go back to service" t_named_node_drained
t_named_node_drained() {
	local id reason
	ledger_reset
	fabric portfail
	id=$(submit -N3 --network=outage --wrap=true -o /dev/null)
	wait_job_done "$id" 30
	wait_log "$(ctld_log)" "switch/lua: JobId=$id draining node3: switch teardown failed: JobId=$id switch/lua job_complete returned rc=-1: port 7 did not clear\$" 20
	reason=$(drain_reason node3)
	assert_eq "switch teardown failed: JobId=$id switch/lua job_complete returned rc=-1: port 7 did not clear" "$reason" "drain reason of node3"
	wait_node node1 idle 20
	wait_node node2 idle 20
	assert_eq "" "$(drain_reason node1)" "drain reason of node1"
	assert_eq "" "$(drain_reason node2)" "drain reason of node2"
	expect_ledger_balanced "$id"
	fabric up
	resume_all
}

# (d) A stale step after a requeue (issue 20, attempts in the step hooks).
# The node of a running batch job is cut off: its slurmd and the job's
# slurmstepds are stopped (SIGSTOP), the node set DOWN (as SlurmdTimeout
# would, sooner), so the job is requeued, torn down (attempt A) and runs
# again elsewhere (attempt B); then the node's daemons continue, and its
# step of run 1, killed only now (slurmctld's kill reaches the node late,
# or slurmctld aborts the job there), runs step_postfini.  The fixture's
# step hooks take a port per node keyed by step.attempt (a postfini told
# no attempt can only release by job id: every port of the job).
# Expected ledger, in this order for the job J:
#   ALLOC J-S-A, PORT J-A@X, FREE J-S-A (run 1 torn down at the requeue),
#   ALLOC J-S'-B, PORT J-B@Y (run 2 on another node Y),
#   UNPORT J-A@X first=yes (the stale postfini: only its own port),
#   then, after scancel: UNPORT J-B@Y first=yes, FREE J-S'-B.
# Node X's slurmd log names the postfini as that of attempt A, which is
# over (the job was requeued since); run 2's port is untouched until its
# own postfini.  Fails on a plugin that does not give the step its
# attempt (the fixture's postfini then takes run 2's port) or that does
# not log the stale postfini.
e2e_test "switch/lua: step hooks: a stale postfini after a requeue (the node's slurmd and slurmstepds stopped, the job requeued and run again elsewhere, then continued): logged as of an attempt that is over; run 2's port untouched" t_stale_postfini
t_stale_postfini() {
	local id x y a b p pids root
	ledger_reset
	id=$(submit -N1 --requeue --network=outage -o /dev/null --wrap='srun sleep 300')
	wait_for 30 _ledger_has PORT || fail "the step of JobId=$id took no port: $(cat "$OUT_DIR_H/ledger.log")"
	x=$(c_root squeue -h -j "$id" -o %N)
	a=$(awk -v j="job=$id" '$1 == "ALLOC" && $3 == j { sub("attempt=", "", $4); print $4 }' "$OUT_DIR_H/ledger.log")
	if [ -z "$x" ] || [ -z "$a" ]; then fail "no node or attempt for JobId=$id"; fi
	root=$(realpath "$E2E_ROOT")
	pids="$(cat "$E2E_CLH/run/slurmd-$x.pid")"
	for p in $(pgrep -f "slurmstepd: \[$id\." || true); do
		[ "$(readlink "/proc/$p/root" 2>/dev/null)" = "$root" ] && pids="$pids $p"
	done
	STALE_PIDS=$pids
	trap _stale_continue EXIT
	# shellcheck disable=SC2086 # a list of pids
	kill -STOP $pids
	c_root scontrol update nodename="$x" state=down reason="e2e: $x cut off"
	wait_for 30 _ledger_has FREE || fail "run 1 of JobId=$id was not torn down at the requeue"
	wait_for 60 _run2_started "$id" "$a" || fail "run 2 of JobId=$id took no port: $(cat "$OUT_DIR_H/ledger.log")"
	y=$(c_root squeue -h -j "$id" -o %N)
	b=$(awk -v j="job=$id" -v a="$a" '$1 == "PORT" && $3 == j && $4 != "attempt=" a { sub("attempt=", "", $4); print $4 }' "$OUT_DIR_H/ledger.log" | head -n1)
	note "run 1: attempt $a on $x; run 2: attempt $b on $y"
	[ "$y" != "$x" ] || fail "run 2 of JobId=$id runs on $x, which is DOWN"
	_stale_continue
	c_root scontrol update nodename="$x" state=resume
	wait_log "$(slurmd_log "$x")" "switch/lua: JobId=$id StepId=$id\.0 step_postfini on $x: the step was killed, and its attempt $a is over: the job was requeued since \(restart_count 0 at that setup, 1 now, RUNNING\); step_postfini runs with step.attempt=$a \(release only what carries it\)" 60
	wait_for 10 _ledger_has UNPORT || fail "the stale postfini gave nothing back"
	grep -q "^UNPORT $id-$a@$x job=$id attempt=$a first=yes\$" "$OUT_DIR_H/ledger.log" ||
		fail "the stale postfini did not give back its own port: $(grep '^UNPORT' "$OUT_DIR_H/ledger.log")"
	[ -e "$OUT_DIR_H/ports/$id-$b@$y" ] || fail "run 2's port $id-$b@$y was taken by the stale postfini: $(grep '^UNPORT' "$OUT_DIR_H/ledger.log")"
	assert_eq 1 "$(ledger_count UNPORT)" "ports given back before run 2 ends"
	c_root scancel "$id"
	wait_job_done "$id" 30
	wait_for 20 _no_allocs || fail "allocations left: $(ls -A "$OUT_DIR_H/alloc")"
	grep -q "^UNPORT $id-$b@$y job=$id attempt=$b first=yes\$" "$OUT_DIR_H/ledger.log" ||
		fail "run 2's postfini did not give back its port: $(grep '^UNPORT' "$OUT_DIR_H/ledger.log")"
	expect_ledger_balanced "$id"
	assert_eq 2 "$(ledger_count ALLOC)" "allocations (one per run)"
	resume_all
}
# _run2_started ID ATTEMPT: a port of another attempt of job ID (its
# requeue's BeginTime released first).
_run2_started() {
	release_begin_times "$1"
	awk -v j="job=$1" -v a="attempt=$2" '$1 == "PORT" && $3 == j && $4 != a { f = 1 } END { exit !f }' "$OUT_DIR_H/ledger.log"
}
_stale_continue() {
	# shellcheck disable=SC2086 # a list of pids
	if [ -n "${STALE_PIDS:-}" ]; then kill -CONT $STALE_PIDS 2>/dev/null || :; fi
	STALE_PIDS=
}

# A node whose copy of switch.lua is broken while the controller's is good
# (issue 20, 7): node2's slurmd, and the slurmstepd it starts, read their
# own configuration folder (scripts/cluster restart-slurmd --conf) with a
# switch.lua that does not load.  Expected: a --network step there fails
# with "Error configuring interconnect", and node2's log names the node,
# the step and why (the script's load error); the same step on node1 (the
# good copy) runs; the job's allocation is released once; nothing drained.
e2e_test "switch/lua: step hooks: a broken switch.lua on node2 only (the controller's copy good): a --network step there fails with a line naming node2 and the load error, never runs without its hooks; on node1 it runs" t_broken_node_script
t_broken_node_script() {
	local d=/etc/slurm-e2e-node2 name out rc id
	c_root sh -c "rm -rf $d && cp -a /etc/slurm $d && printf 'this is not Lua (\\n' >$d/switch.lua"
	trap _node2_conf_restore EXIT
	"$E2E_CLUSTER" restart-slurmd node2 --conf "$d" >&2
	ledger_reset
	name=e2e-broken-$(e2e_uniq)
	rc=0
	out=$(run_srun -N1 -w node2 -J "$name" --network=outage echo ran-on-node2) || rc=$?
	[ "$rc" != 0 ] || fail "the step ran on node2 without its step hooks: $out"
	assert_contains "Error configuring interconnect" "$out" "srun's message"
	assert_not_contains "ran-on-node2" "$out" "task output"
	wait_log "$(slurmd_log node2)" "$d/switch.lua:1: .*; the step hooks will not run" 10
	wait_log "$(slurmd_log node2)" "switch/lua: .*on node2: the job is managed by switch/lua \(its step has a stepinfo\) but .*: the step fails \(Error configuring interconnect\)" 10
	id=$(job_named "$name")
	wait_job_done "$id" 30
	out=$(run_srun -N1 -w node1 --network=outage echo ran-on-node1) || fail "the step on node1 failed: $out"
	assert_contains "ran-on-node1" "$out" "task output on node1"
	wait_for 20 _no_allocs || fail "allocations left: $(ls -A "$OUT_DIR_H/alloc")"
	expect_ledger_balanced "$id"
	expect_no_drain
}
_no_allocs() { [ -z "$(ls -A "$OUT_DIR_H/alloc")" ]; }
_node2_conf_restore() {
	"$E2E_CLUSTER" restart-slurmd node2 >&2 || :
	c_root rm -rf /etc/slurm-e2e-node2 || :
}

# (e) The controller host runs out of processes.  The issue asks for
# slurmctld itself under a pids limit a few above its task count; that
# cannot be done here without killing it: Slurm's slurm_thread_create()
# calls fatal() when pthread_create fails, so the first RPC thread past
# the limit ends slurmctld, whatever the plugin does.  The limit is set on
# the plugin's side instead, the switch-lua-supervisor, its fork server and
# every runner they start (a cgroup v1 pids.max of their task count + 2), which is where a
# fork fails first.  Expected: runners that cannot be started are host
# faults (retried within switch_timeout=60, never counted against the job,
# never a drain); once the limit is lifted every one of the 100 array tasks
# is set up and torn down once and ends with exit status 0.
e2e_test "switch/lua: host faults: the supervisor under a pids limit (pids.max = its tasks + 2) while 100 jobs whose hooks each start a process run: no drain, no job failed, all done once the limit is lifted" t_pids_limit
t_pids_limit() {
	local cg sup id i n done_n
	[ -d /sys/fs/cgroup/pids ] || skip "no cgroup v1 pids controller at /sys/fs/cgroup/pids on this host"
	ledger_reset
	id=$(submit -N1 --network=outage --wrap=true -o /dev/null) # the supervisor runs from the first call on
	wait_job "$id" COMPLETED 30
	sup=$(our_supervisor)
	[ -n "$sup" ] || fail "no switch-lua-supervisor of this cluster"
	cg=/sys/fs/cgroup/pids/switch-lua-e2e-$$
	mkdir "$cg" 2>/dev/null || skip "cannot make a pids cgroup ($cg) here"
	PIDS_CG=$cg
	trap _pids_cg_remove EXIT
	ledger_reset
	# The supervisor and what it has started (its fork server, which forks
	# the runners: a process is born in its parent's cgroup).
	for p in "$sup" $(pgrep -P "$sup"); do echo "$p" >"$cg/cgroup.procs"; done
	n=$(cat "$cg/pids.current")
	echo $((n + 2)) >"$cg/pids.max"
	note "the supervisor (pid $sup) and its children ($(pgrep -P "$sup" | tr '\n' ' ')) have $n tasks; pids.max=$((n + 2))"
	id=$(submit --array=1-100 -N1 --network=outage:fork --wrap=true -o /dev/null)
	wait_for 60 _host_faults_seen || fail "no host fault under pids.max=$((n + 2)): the limit did not bite"
	sleep 5
	echo max >"$cg/pids.max"
	done_n=0
	for i in $(seq 1 12); do
		done_n=$(ctld_count "_job_complete: JobId=${id}_[0-9]+\\([0-9]+\\) WEXITSTATUS 0\$")
		((done_n >= 100)) && break
		sleep 10
	done
	assert_eq 100 "$done_n" "array tasks that ended with exit status 0"
	if ctld_grep "_job_complete: JobId=${id}_[0-9]+\\([0-9]+\\) WEXITSTATUS [1-9]"; then fail "a task failed"; fi
	wait_for 30 _jobs_gone "$id" || fail "tasks left: $(c_root squeue -h -t all -o '%i %T %r')"
	assert_eq 100 "$(ledger_count ALLOC)" "allocations (one per task)"
	expect_ledger_balanced
	expect_no_drain
	assert_eq 0 "$(ctld_count 'switch/lua: JobId=[0-9_()]+ .*(requeue|cancel)')" "jobs requeued or cancelled by switch/lua"
	note "$(c_root "$(switch_lua_cli)" status | grep -F 'Host faults:'); $(ledger_count FORKFAIL) os.execute calls in hooks failed under the limit"
}
_pids_cg_remove() {
	local p
	[ -n "${PIDS_CG:-}" ] && [ -d "$PIDS_CG" ] || return 0
	echo max >"$PIDS_CG/pids.max" 2>/dev/null || :
	while read -r p; do echo "$p" >/sys/fs/cgroup/pids/cgroup.procs 2>/dev/null || :; done <"$PIDS_CG/cgroup.procs"
	rmdir "$PIDS_CG" 2>/dev/null || :
}
_host_faults_seen() {
	c_root "$(switch_lua_cli)" status --json | c_root python3 -c 'import json, sys
sys.exit(0 if json.load(sys.stdin).get("host_faults", 0) > 0 else 1)'
}
_jobs_gone() { [ -z "$(c_root squeue -h -j "$1" -t PENDING,RUNNING,CONFIGURING,COMPLETING -o %i 2>/dev/null)" ]; }
