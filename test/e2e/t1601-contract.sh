# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core= full=24.11,25.05,25.11,26.05,26.11
#
# t1601-contract: the contract suite (issue 36 item 4).  The directives come
# from the contract script itself: every `d.NAME` its code acts on must be
# documented in its comment and have a row in CONTRACT below, and every row
# must be one of them.  Each row runs once, live, with the settings the
# contract names (the defaults), as an srun -N2 job of tbuser, and the whole
# outcome the seed's comment gives is asserted, nothing more and nothing
# less: how srun ended and what the tasks saw, the job's state and reason,
# how many times job_start and job_complete ran, which step hooks ran on
# each node, and which nodes are drained with which sinfo -R reason (the
# third node, outside the job, never).  A requeue-able batch job runs the
# "defer" path too.  A second pass runs every row again with each setting
# beyond the contract on (switch_breaker_failures=3,
# switch_max_setup_failures=1) and expects what switch_lua.conf(5) says
# they change and nothing else: the start-up line naming them, a batch job
# whose setup failed once requeued held instead of requeued, and the two
# failed teardowns below the breaker's count drained as usual.  The detailed
# log lines of each path are in t0201, t0301 and t0501.

# CONTRACT: one row per directive of the contract script, fields split by
# '|' (spaces around them ignored):
#   DIRECTIVE  the word after "switchlua:" ("default": none of the seed's)
#   STEP       ok (srun exits 0 and both tasks ran), interconnect (srun
#              fails "Error configuring interconnect", no task ran) or setup
#              (srun fails: the setup failed and the job is cancelled)
#   ENV        how many SWITCHLUA_* variables each task saw; - when none ran
#   STATE      the job's final state
#   STARTS     job_start calls for the job
#   COMPLETES  job_complete calls for the job
#   HOOKS      the step hooks each node ran for step 0, in order: p
#              (step_preinit), i (step_init), f (step_postfini); - none
#   DRAIN      the sinfo -R reason of both job nodes; - not drained
#   REASON     the job's Reason; - none asserted
# In DRAIN and REASON, @ID is the JobId, @NODE the node and @LINE a line
# number of switch.lua.
CONTRACT='
default        | ok           | 6 | COMPLETED | 1 | 1 | pif | - | -
skip           | ok           | 0 | COMPLETED | 1 | 0 | -   | - | -
defer          | setup        | - | CANCELLED | 1 | 0 | -   | - | switch setup failed: switch/lua job_start returned rc=-1
start_crash    | setup        | - | CANCELLED | 1 | 0 | -   | - | switch setup failed: switch/lua job_start raised an error: /etc/slurm/switch.lua:@LINE: switchlua: deliberate error in job_start
complete_again | ok           | 6 | COMPLETED | 1 | 1 | pif | switch teardown failed: JobId=@ID switch/lua job_complete returned slurm.EAGAIN but block_job_complete is false | -
complete_crash | ok           | 6 | COMPLETED | 1 | 1 | pif | switch teardown failed: JobId=@ID switch/lua job_complete raised an error: /etc/slurm/switch.lua:@LINE: switchlua: deliberate error in job_complete | -
preinit_warn   | ok           | 6 | COMPLETED | 1 | 1 | pif | - | -
preinit_fail   | interconnect | - | COMPLETED | 1 | 1 | p   | - | -
preinit_crash  | ok           | 6 | COMPLETED | 1 | 1 | pif | - | -
init_warn      | ok           | 6 | COMPLETED | 1 | 1 | pif | - | -
init_fail      | interconnect | - | COMPLETED | 1 | 1 | pif | - | -
init_crash     | ok           | 0 | COMPLETED | 1 | 1 | pif | - | -
noenv          | ok           | 0 | COMPLETED | 1 | 1 | pif | - | -
postfini_warn  | ok           | 6 | COMPLETED | 1 | 1 | pif | - | -
postfini_drain | ok           | 6 | COMPLETED | 1 | 1 | pif | switch postfini failed: rc=-1 (switch/lua step_postfini JobId=@ID StepId=@ID.0 @NODE) | -
postfini_crash | ok           | 6 | COMPLETED | 1 | 1 | pif | - | -
'

# The settings beyond the contract of the second pass, and the start-up
# line that must name them (config::beyond_contract).
OPT_IN=switch_breaker_failures=3,switch_max_setup_failures=1

# contract_row DIRECTIVE: the row's fields in R_STEP, R_ENV, ... (trimmed).
contract_row() {
	local line
	line=$(awk -F'|' -v d="$1" '{ w = $1; gsub(/ /, "", w) } w == d' <<<"$CONTRACT")
	[ -n "$line" ] || fail "t1601: no CONTRACT row for '$1'"
	IFS='|' read -r _ R_STEP R_ENV R_STATE R_STARTS R_COMPLETES R_HOOKS R_DRAIN R_REASON <<<"$line"
	local v
	for v in R_STEP R_ENV R_STATE R_STARTS R_COMPLETES R_HOOKS R_DRAIN R_REASON; do
		printf -v "$v" '%s' "$(sed 's/^ *//; s/ *$//' <<<"${!v}")"
	done
}

# seed_directives: the directives the contract script's code acts on (each
# `d.NAME`), sorted, one per line.
seed_directives() { grep -oE '\bd\.[a-z_]+' "$E2E_SEED" | sed 's/^d\.//' | sort -u; }

# expected_re TEXT ID NODE: TEXT as an anchored grep -E pattern, with @ID,
# @NODE and @LINE put in.
expected_re() {
	local re
	re=$(ere_quote "$1")
	re=${re//@ID/$2}
	re=${re//@NODE/$3}
	printf '^%s$' "${re//@LINE/[0-9]+}"
}

# hooks_of ID NODE: the step hooks NODE's slurmd logged for step ID.0, as
# letters in order (p, i, f); "-" for none.
hooks_of() {
	local h
	h=$(log_since "$(slurmd_log "$2")" |
		grep -oE "switch/lua: JobId=$1 StepId=$1\.0 $2 step_(preinit|init|postfini) (returned|raised)" |
		awk '{ print ($5 == "step_preinit") ? "p" : ($5 == "step_init") ? "i" : "f" }' | tr -d '\n') || true
	echo "${h:--}"
}
_hooks_are() { [ "$(hooks_of "$1" "$2")" = "$3" ]; }

# teardowns_ended ID: how many job_complete calls of job ID have ended (the
# state machine's debug line of each result).
teardowns_ended() { ctld_count "switch/lua: JobId=$1 TeardownResult -> "; }
_teardowns_at_least() { (($(teardowns_ended "$1") >= $2)); }
_reason_is_set() { [ -n "$(drain_reason "$1")" ]; }

# run_row DIRECTIVE: run the row's job and assert its whole outcome.
run_row() {
	need_seed
	local d=$1 name id out tasks rc=0 n want
	contract_row "$d"
	name=e2e-contract-$d-$(e2e_uniq)
	# shellcheck disable=SC2016 # expanded by the task's shell
	out=$(run_srun -N2 -l -J "$name" --network="switchlua:$d" sh -c 'echo "ran $(env | grep -c "^SWITCHLUA_" || true)"' | sort) || rc=$?
	id=$(job_named "$name")
	# srun also prints the error-level lines of the step's slurmstepd (a
	# hook's warning): only the tasks' own lines are compared.
	tasks=$(grep -E '^[0-9]+: ran ' <<<"$out" || true)
	case $R_STEP in
	ok)
		assert_eq 0 "$rc" "srun's exit status (output: $out)"
		assert_eq $'0: ran '"$R_ENV"$'\n1: ran '"$R_ENV" "$tasks" "what the tasks saw (srun's output: $out)"
		;;
	interconnect)
		[ "$rc" != 0 ] || fail "srun succeeded: $out"
		assert_contains "launch failed: Error configuring interconnect" "$out" "srun's message"
		assert_eq "" "$tasks" "task output"
		;;
	setup)
		[ "$rc" != 0 ] || fail "srun succeeded although the setup failed: $out"
		assert_eq "" "$tasks" "task output"
		;;
	*) fail "t1601: row $d: STEP '$R_STEP'" ;;
	esac
	wait_job "$id" "$R_STATE" 20
	if [ "$R_REASON" != - ]; then
		assert_job_reason "$id" "$(expected_re "$R_REASON" "$id" '')"
	fi
	# Every call has ended before anything is counted: a late call or a
	# late drain would otherwise go unseen.
	wait_for 20 _teardowns_at_least "$id" "$R_COMPLETES" ||
		fail "$(teardowns_ended "$id") of $R_COMPLETES job_complete calls ended"
	for n in node1 node2; do
		wait_for 20 _hooks_are "$id" "$n" "$R_HOOKS" ||
			fail "step hooks on $n: expected '$R_HOOKS', got '$(hooks_of "$id" "$n")'"
	done
	if [ "$R_DRAIN" != - ]; then
		for n in node1 node2; do
			wait_for 20 _reason_is_set "$n" || fail "$n was not drained: $(node_state "$n")"
			want=$(expected_re "$R_DRAIN" "$id" "$n")
			assert_match "$want" "$(drain_reason "$n")" "sinfo -R reason of $n"
		done
	else
		for n in node1 node2; do
			wait_node "$n" idle 20
			assert_eq "" "$(drain_reason "$n")" "drain reason of $n"
		done
	fi
	assert_eq "" "$(drain_reason node3)" "drain reason of node3 (not in the job)"
	assert_eq "$R_STARTS" "$(ctld_count "switch/lua: JobId=$id job_start started")" "job_start calls"
	assert_eq "$R_COMPLETES" "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
	assert_eq 0 "$(ctld_count "switch/lua: JobId=$id .*(requeued|held)")" "requeue or hold lines for an srun job"
	[ "$R_DRAIN" = - ] || resume node1 node2
}

# defer_batch MODE: a requeue-able batch job whose setup fails (defer):
# requeued (MODE contract) or requeued held (MODE opt-in,
# switch_max_setup_failures=1); nothing drained, job_complete never called.
defer_batch() {
	need_seed
	local id once held n
	once="switch setup failed: switch/lua job_start returned rc=-1"
	held="switch setup failed 1 time (switch_max_setup_failures=1): switch/lua job_start returned rc=-1"
	id=$(submit -N2 --requeue --network=switchlua:defer --wrap='echo the batch script ran')
	wait_for 20 restarts_at_least "$id" 1 || fail "job $id was not requeued: $(job_line "$id")"
	if [ "$1" = contract ]; then
		ctld_job "$id" " requeued: $(ere_quote "$once")\$" >/dev/null || fail "no 'requeued' line"
		if ctld_job "$id" " requeued held"; then fail "held under the contract's settings"; fi
		assert_match '^(PENDING|CONFIGURING|RUNNING|REQUEUED)' "$(job_state "$id")" "state after the requeue"
		assert_match "^($(ere_quote "$once")|BeginTime)\$" "$(job_reason "$id")" "Reason after the requeue"
	else
		ctld_job "$id" " requeued held \(scontrol release\): $(ere_quote "$held")" >/dev/null || fail "no 'requeued held' line"
		wait_job "$id" PENDING 10
		assert_eq "$held" "$(job_reason "$id")" "Reason of the held job"
		assert_eq 0 "$(job_field "$id" Priority)" "Priority of the held job"
		assert_eq 1 "$(ctld_count "switch/lua: JobId=$id job_start started")" "job_start calls"
	fi
	assert_eq 0 "$(ctld_count "switch/lua: JobId=$id job_complete started")" "job_complete calls"
	cancel "$id"
	wait_job "$id" CANCELLED 15
	for n in node1 node2 node3; do assert_eq "" "$(drain_reason "$n")" "drain reason of $n"; done
	local outf=$E2E_CLH/out/slurm-$id.out
	if [ -s "$outf" ] && grep -q 'the batch script ran' "$outf"; then fail "the batch script ran after a failed setup"; fi
}

# e2e-config: --switch-type switch/lua --script "$E2E_GEN/seed.lua"

e2e_test "switch/lua: contract: every directive the contract script acts on is documented in its comment and has a row here, and every row is one of them" t_rows_are_the_seed
t_rows_are_the_seed() {
	need_seed
	local d rows seed
	seed=$(seed_directives)
	[ "$(wc -l <<<"$seed")" -ge 10 ] || fail "only $(wc -l <<<"$seed") directives found in $E2E_SEED: $seed"
	rows=$(awk -F'|' 'NF > 1 { w = $1; gsub(/ /, "", w); if (w != "default") print w }' <<<"$CONTRACT" | sort -u)
	assert_eq "$seed" "$rows" "the seed's directives (left) and t1601's rows (right)"
	for d in $seed; do
		grep -qE "^-- $d " "$E2E_SEED" || fail "directive $d is not documented in the comment of $E2E_SEED"
	done
	grep -F 'switch/lua: beyond the switch.lua contract' "$(ctld_log)" | grep -v 'beyond the switch.lua contract, as SlurmctldParameters set: $' >/dev/null &&
		fail "a setting beyond the contract is logged with the default settings"
	return 0
}

e2e_test "switch/lua: contract: the default path (no directive): SWITCHLUA_* set, three step hooks per node, one job_start and one job_complete, nothing drained" t_c_default
t_c_default() { run_row default; }
e2e_test "switch/lua: contract: skip declines the job: no SWITCHLUA_*, no step hook, no job_complete" t_c_skip
t_c_skip() { run_row skip; }
e2e_test "switch/lua: contract: defer cancels an srun job with \"switch setup failed\"; no job_complete, nothing drained" t_c_defer
t_c_defer() { run_row defer; }
e2e_test "switch/lua: contract: defer requeues a requeue-able batch job, not held; no job_complete, nothing drained" t_c_defer_batch
t_c_defer_batch() { defer_batch contract; }
e2e_test "switch/lua: contract: start_crash is a failed setup, as defer" t_c_start_crash
t_c_start_crash() { run_row start_crash; }
e2e_test "switch/lua: contract: complete_again with block_job_complete false is a failure at once: both nodes drained, one call" t_c_complete_again
t_c_complete_again() { run_row complete_again; }
e2e_test "switch/lua: contract: complete_crash drains both nodes, one call" t_c_complete_crash
t_c_complete_crash() { run_row complete_crash; }
e2e_test "switch/lua: contract: preinit_warn: the step runs, nothing drained" t_c_preinit_warn
t_c_preinit_warn() { run_row preinit_warn; }
e2e_test "switch/lua: contract: preinit_fail: \"Error configuring interconnect\", no step_init or step_postfini, nothing drained" t_c_preinit_fail
t_c_preinit_fail() { run_row preinit_fail; }
e2e_test "switch/lua: contract: preinit_crash: fail-open, the step runs" t_c_preinit_crash
t_c_preinit_crash() { run_row preinit_crash; }
e2e_test "switch/lua: contract: init_warn: the step runs with its environment" t_c_init_warn
t_c_init_warn() { run_row init_warn; }
e2e_test "switch/lua: contract: init_fail: \"Error configuring interconnect\", nothing drained" t_c_init_fail
t_c_init_fail() { run_row init_fail; }
e2e_test "switch/lua: contract: init_crash: fail-open, the step runs without SWITCHLUA_*" t_c_init_crash
t_c_init_crash() { run_row init_crash; }
e2e_test "switch/lua: contract: noenv: the step runs without SWITCHLUA_*" t_c_noenv
t_c_noenv() { run_row noenv; }
e2e_test "switch/lua: contract: postfini_warn: nothing drained" t_c_postfini_warn
t_c_postfini_warn() { run_row postfini_warn; }
e2e_test "switch/lua: contract: postfini_drain drains both nodes, each with its own reason" t_c_postfini_drain
t_c_postfini_drain() { run_row postfini_drain; }
e2e_test "switch/lua: contract: postfini_crash: fail-open, nothing drained" t_c_postfini_crash
t_c_postfini_crash() { run_row postfini_crash; }

# e2e-config: --switch-type switch/lua --script "$E2E_GEN/seed.lua" --slurmctld-params switch_breaker_failures=3,switch_max_setup_failures=1

e2e_test "switch/lua: contract, settings beyond it on: the start-up line names each of them" t_o_named
t_o_named() {
	need_seed
	local line
	line=$(grep -F 'switch/lua: beyond the switch.lua contract, as SlurmctldParameters set: ' "$(ctld_log)" | tail -n1)
	[ -n "$line" ] || fail "no 'beyond the switch.lua contract' line with $OPT_IN"
	assert_contains "switch_breaker_failures=3: failed teardowns counted into a fabric outage are kept and run again, not drained" "$line" "the start-up line"
	assert_contains "switch_max_setup_failures=1: a job whose setup failed that many times in a row is requeued held" "$line" "the start-up line"
}
e2e_test "switch/lua: contract, settings beyond it on: the default path is unchanged" t_o_default
t_o_default() { run_row default; }
e2e_test "switch/lua: contract, settings beyond it on: skip is unchanged" t_o_skip
t_o_skip() { run_row skip; }
e2e_test "switch/lua: contract, settings beyond it on: defer still cancels an srun job (not requeue-able: no hold)" t_o_defer
t_o_defer() { run_row defer; }
e2e_test "switch/lua: contract, settings beyond it on: defer requeues a requeue-able batch job held (switch_max_setup_failures=1): the one documented difference" t_o_defer_batch
t_o_defer_batch() { defer_batch opt-in; }
e2e_test "switch/lua: contract, settings beyond it on: start_crash is unchanged" t_o_start_crash
t_o_start_crash() { run_row start_crash; }
e2e_test "switch/lua: contract, settings beyond it on: complete_again still drains (the 1st failed teardown, below switch_breaker_failures=3)" t_o_complete_again
t_o_complete_again() { run_row complete_again; }
e2e_test "switch/lua: contract, settings beyond it on: complete_crash still drains (the 2nd failed teardown, below switch_breaker_failures=3)" t_o_complete_crash
t_o_complete_crash() { run_row complete_crash; }
e2e_test "switch/lua: contract, settings beyond it on: preinit_warn is unchanged" t_o_preinit_warn
t_o_preinit_warn() { run_row preinit_warn; }
e2e_test "switch/lua: contract, settings beyond it on: preinit_fail is unchanged" t_o_preinit_fail
t_o_preinit_fail() { run_row preinit_fail; }
e2e_test "switch/lua: contract, settings beyond it on: preinit_crash is unchanged" t_o_preinit_crash
t_o_preinit_crash() { run_row preinit_crash; }
e2e_test "switch/lua: contract, settings beyond it on: init_warn is unchanged" t_o_init_warn
t_o_init_warn() { run_row init_warn; }
e2e_test "switch/lua: contract, settings beyond it on: init_fail is unchanged" t_o_init_fail
t_o_init_fail() { run_row init_fail; }
e2e_test "switch/lua: contract, settings beyond it on: init_crash is unchanged" t_o_init_crash
t_o_init_crash() { run_row init_crash; }
e2e_test "switch/lua: contract, settings beyond it on: noenv is unchanged" t_o_noenv
t_o_noenv() { run_row noenv; }
e2e_test "switch/lua: contract, settings beyond it on: postfini_warn is unchanged" t_o_postfini_warn
t_o_postfini_warn() { run_row postfini_warn; }
e2e_test "switch/lua: contract, settings beyond it on: postfini_drain is unchanged (a node drain, not a teardown: the breaker does not count it)" t_o_postfini_drain
t_o_postfini_drain() { run_row postfini_drain; }
e2e_test "switch/lua: contract, settings beyond it on: postfini_crash is unchanged" t_o_postfini_crash
t_o_postfini_crash() { run_row postfini_crash; }
