# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# test/e2e/lib.sh: helpers for the end-to-end tests (sourced, never run).
#
# The tests drive the live cluster of scripts/cluster: every Slurm command
# runs inside the testbed chroot through `scripts/cluster exec`, as root or
# as the unprivileged tbuser (uid 2000).  Each test runs in its own bash with
# `set -euo pipefail`: any failing command fails the test, and `fail` says
# why.  A test file looks like this:
#
#   e2e_test "switch/lua: job_start: skip declines the job" t_skip
#   t_skip() {
#       local id
#       id=$(submit --network=switchlua:skip --wrap=true)
#       wait_job "$id" COMPLETED
#       assert_eq "0:0" "$(job_field "$id" ExitCode)" "exit code"
#   }
#
# A file can ask for its own cluster config with one line (the options of
# `scripts/cluster config`; paths relative to the repository):
#
#   # e2e-config: --switch-type switch/lua --script test/e2e/lua/basic.lua
#
# A test runs with the nearest such line above its e2e_test line (a test
# above the first one gets the first one), so one file can have sections
# with different configs.  The line is read as shell words after lib.sh is
# sourced: "$E2E_GEN/seed.lua" names a generated script (see below).
#
# Helpers (all print errors to stderr and return non-zero on failure):
#   running commands  c_root CMD...   c_user CMD...   (in the chroot)
#   jobs              submit [-u USER] SBATCH_ARGS...   -> job id
#                     run_srun [-u USER] SRUN_ARGS...   -> srun's output/rc
#                     job_field ID FIELD     job_state ID
#                     wait_job ID STATE_RE [TIMEOUT]   wait_job_done ID [TIMEOUT]
#                     job_output ID  (the job's stdout file)   cancel ID...
#                     restarts_at_least ID N (Restarts >= N)
#   nodes             node_state NODE (sinfo %T: idle, drained, mixed, idle*...)
#                     node_field NODE FIELD (scontrol show node -o)
#                     drain_reason NODE (sinfo -R; empty if not drained/down)
#                     wait_node NODE STATE_RE [TIMEOUT]
#                     drain NODE REASON   resume NODE...   resume_all
#   logs              ctld_log  slurmd_log NODE   (host paths)
#                     ctld_grep RE   slurmd_grep NODE RE   (lines written
#                     since the test began)   job_log ID   wait_log FILE RE [TIMEOUT]
#   cluster           restart_ctld [--kill9] [--lose-jobs]   wait_state_saved [TIMEOUT] [FILE]
#                     ask_job_state_write
#                     e2e_reset (cheap: cancel jobs,
#                     resume nodes, wait idle; the runner calls it between tests)
#   two controllers   (a cluster configured with --backup; scripts/cluster:
#                     BACKUP CONTROLLER)  ctld ACTION primary|backup (start,
#                     stop, kill9)   takeover   wait_backup_control [TIMEOUT]
#                     ha_ledger TAG (the lines of test/e2e/lua/ha.lua's ledger)
#                     ha_ledger_check TAG ID... (its rules, see there)
#   checks            assert_eq EXP ACT MSG   assert_match RE ACT MSG
#                     assert_contains NEEDLE HAYSTACK MSG   fail MSG
#                     assert_not_contains NEEDLE HAYSTACK MSG
#                     skip REASON   note MSG   wait_for TIMEOUT CMD...
#   switch/lua        job_reason ID (the Reason text as squeue %r shows it;
#                     scontrol writes it with '_' for ' ')
#                     assert_job_reason ID RE (both agree, and match RE)
#                     job_named NAME (id of the job called NAME, any state)
#                     ctld_job ID RE (ctld_grep "switch/lua: JobId=ID" RE;
#                     RE begins with a non-digit, e.g. ' job_start started')
#                     ctld_count RE (lines matching, 0 if none)
#                     e2e_uniq (a tag unique to this test run, digits only)
#                     need_seed (skip unless the contract script was found)
#                     switch_lua_cli (the switch-lua under test, chroot path)
#                     settings_line [PARAMS] (the switch_* settings line the
#                     plugin logs for PARAMS, by default the cluster's
#                     SlurmctldParameters; from `switch-lua settings`)
#                     ere_quote TEXT (TEXT as a grep -E pattern that matches it)
#                     our_supervisor (pid of this cluster's switch-lua-supervisor)
#                     proc_state PID (the one-letter state of /proc/PID/stat)
#                     cluster_slurm (X.Y.Z of a --slurm cluster, else debian)
#   generated scripts e2e_generate_scripts (the runner calls it) writes into
#                     $E2E_GEN (host path; $E2E_GEN_CL inside the chroot):
#                       seed.lua        the contract script with
#                                       ALLOW_DIRECTIVES = true
#                       seed-block.lua  the same with BLOCK_JOB_COMPLETE = true
#                       seed-special.lua  seed.lua with SETUP_SPECIAL_STEPS
#                                       = true (step_init for the batch and
#                                       interactive steps too)
#                     from $E2E_SEED (default ../shared/seeds/switch.lua);
#                     without it both are test/e2e/lua/no-seed.lua and the
#                     tests that need them skip (need_seed).
#
# Timeouts are in seconds; polling is every 0.2 s.

E2E_REPO=${E2E_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
E2E_CLUSTER=${E2E_CLUSTER:-$E2E_REPO/scripts/cluster}
E2E_ROOT=${SWITCHLUA_TESTBED:-/var/tmp/switch-lua-testbed}/root
E2E_CL=${SWITCHLUA_CLUSTER_DIR:-/var/tmp/switch-lua-cluster} # inside the chroot
E2E_CLH=$E2E_ROOT$E2E_CL                                      # host path
E2E_USER=tbuser
E2E_SEED=${SWITCHLUA_SEED:-$(cd "$E2E_REPO/.." && pwd)/shared/seeds/switch.lua}
E2E_GEN_CL=$E2E_CL/e2e-lua # generated scripts, inside the chroot
E2E_GEN=$E2E_ROOT$E2E_GEN_CL # the same, host path

# ------------------------------------------------------------ registration
# e2e_test TITLE FUNCTION: declare a test.  In list mode (the runner reading
# the files) it prints "FUNCTION<TAB>TITLE"; when a test runs it does nothing.
e2e_test() {
	[ "${E2E_MODE:-}" = list ] && printf '%s\t%s\t%s\n' "$2" "$1" "${BASH_LINENO[0]}"
	return 0
}

# ------------------------------------------------------------ messages
note() { printf '# %s\n' "$*" >&2; }
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}
# skip REASON: end the test as skipped (exit 77, as automake does).
skip() {
	printf 'SKIP: %s\n' "$*" >&2
	exit 77
}

assert_eq() {
	[ "$1" = "$2" ] || fail "${3:-values differ}: expected '$1', got '$2'"
}
assert_match() {
	[[ $2 =~ $1 ]] || fail "${3:-no match}: '$2' does not match /$1/"
}
assert_contains() {
	[[ $2 == *"$1"* ]] || fail "${3:-not found}: '$1' not in: $2"
}
# assert_srun_told MESSAGE OUT: srun printed the plugin's MESSAGE (sent by
# srun_user_message() before the job is killed).  Slurm delivers that message
# and the allocation's revocation independently, so srun sometimes prints only
# "Job allocation N has been revoked": then the test goes on, and the job's
# Reason (which the caller asserts) is the authoritative check.
assert_srun_told() {
	[[ $2 == *"$1"* ]] && return 0
	[[ $2 == *"has been revoked"* ]] && {
		note "srun printed the revocation before the plugin's message (a Slurm race); the job's Reason is checked instead"
		return 0
	}
	fail "srun's message: '$1' not in: $2"
}
assert_not_contains() {
	[[ $2 != *"$1"* ]] || fail "${3:-found}: '$1' should not be in: $2"
}

# wait_for TIMEOUT CMD...: poll CMD until it succeeds; 1 after TIMEOUT s.
wait_for() {
	local timeout=$1 deadline
	shift
	deadline=$(($(date +%s%N) + timeout * 1000000000))
	until "$@"; do
		(($(date +%s%N) < deadline)) || return 1
		sleep 0.2
	done
}

# ------------------------------------------------------------ commands
# c_root CMD... / c_user CMD...: run CMD in the chroot, in the cluster's out
# folder (job output lands there), as root / as tbuser.
c_root() { "$E2E_CLUSTER" exec -- "$@"; }
c_user() { "$E2E_CLUSTER" exec -u "$E2E_USER" -- "$@"; }
# c_as USER CMD...
c_as() {
	local user=$1
	shift
	if [ "$user" = root ]; then c_root "$@"; else "$E2E_CLUSTER" exec -u "$user" -- "$@"; fi
}

# ------------------------------------------------------------ jobs
# submit [-u USER] SBATCH_ARGS...: sbatch (as tbuser unless -u root), print
# the job id.
submit() {
	local user=$E2E_USER out
	if [ "${1:-}" = -u ]; then
		user=$2
		shift 2
	fi
	out=$(c_as "$user" sbatch --parsable "$@") || fail "sbatch $* failed: $out"
	out=${out%%;*} # --parsable prints "id" or "id;cluster"
	[[ $out =~ ^[0-9]+$ ]] || fail "sbatch $*: no job id in '$out'"
	echo "$out"
}

# run_srun [-u USER] SRUN_ARGS...: srun (as tbuser unless -u root); its
# output on stdout (stderr merged) and its exit status.
run_srun() {
	local user=$E2E_USER
	if [ "${1:-}" = -u ]; then
		user=$2
		shift 2
	fi
	c_as "$user" srun "$@" 2>&1
}

cancel() { c_root scancel "$@"; }

# job_line ID: `scontrol show job -o ID` (empty if the record is gone:
# finished jobs live MinJobAge=30 s).
job_line() { c_root scontrol show job -o "$1" 2>/dev/null || true; }

# field_of LINE FIELD: the value of FIELD=... in a `scontrol -o` line.  A
# value ends where the next " Key=" begins, so values with spaces (Reason,
# Command) come out whole.  Status 1 if there is no such field.
field_of() {
	awk -v key="$2" '{
		n = split($0, t, " ")
		for (i = 1; i <= n; i++) {
			if (t[i] ~ /^[A-Z][A-Za-z0-9_:\/]*=/) {
				cur = substr(t[i], 1, index(t[i], "=") - 1)
				if (cur == key) { found = 1; val = substr(t[i], index(t[i], "=") + 1) }
			} else if (cur == key) {
				val = val " " t[i]
			}
		}
	} END { if (!found) exit 1; print val }' <<<"$1"
}

# job_field ID FIELD: e.g. job_field 12 Reason
job_field() {
	local line
	line=$(job_line "$1")
	[ -n "$line" ] || {
		echo "job_field: job $1 not known to slurmctld" >&2
		return 1
	}
	field_of "$line" "$2"
}
job_state() { job_field "$1" JobState; }

# wait_job ID STATE_RE [TIMEOUT=30]: until JobState matches ^(STATE_RE)$.
wait_job() {
	local id=$1 re=$2 timeout=${3:-30} st="" deadline
	deadline=$(($(date +%s%N) + timeout * 1000000000))
	while :; do
		st=$(job_state "$id" 2>/dev/null || echo "(gone)")
		[[ $st =~ ^($re)$ ]] && return 0
		if (($(date +%s%N) >= deadline)); then
			echo "wait_job: job $id is $st, not $re, after ${timeout}s" >&2
			return 1
		fi
		sleep 0.2
	done
}

# wait_job_done ID [TIMEOUT=30]: until the job has ended (any final state).
E2E_FINAL_STATES='COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED'
wait_job_done() { wait_job "$1" "$E2E_FINAL_STATES" "${2:-30}"; }
# restarts_at_least ID N: the job's Restarts is N or more (for wait_for).
restarts_at_least() {
	local r
	r=$(job_field "$1" Restarts 2>/dev/null) || return 1
	[ -n "$r" ] && [ "$r" -ge "$2" ]
}

# job_output ID: the host path of the job's stdout file.
job_output() {
	local f
	f=$(job_field "$1" StdOut) || return 1
	echo "$E2E_ROOT$f"
}

# ------------------------------------------------------------ nodes
node_names() { c_root sinfo -h -N -o '%N' | sort -u; }
# node_state NODE: sinfo's long state, e.g. idle, mixed, drained, idle*, down*
# Asks for every node: slurmctld answers `sinfo -n NODE` (one node) without
# recounting the allocated CPUs, so a node freed a moment ago can show
# "mixed" there for up to about 10 s.
node_state() { c_root sinfo -h -N -o '%N %T' | awk -v n="$1" '$1 == n { print $2; exit }'; }
node_field() {
	local line
	line=$(c_root scontrol show node -o "$1") || return 1
	field_of "$line" "$2"
}
# drain_reason NODE: the reason sinfo -R shows; empty if none.
drain_reason() { c_root sinfo -R -h -n "$1" -o '%E' | head -n1; }
wait_node() {
	local node=$1 re=$2 timeout=${3:-30} st deadline
	deadline=$(($(date +%s%N) + timeout * 1000000000))
	while :; do
		st=$(node_state "$node" 2>/dev/null || true)
		[[ $st =~ ^($re)$ ]] && return 0
		if (($(date +%s%N) >= deadline)); then
			echo "wait_node: $node is '$st', not $re, after ${timeout}s" >&2
			return 1
		fi
		sleep 0.2
	done
}
drain() { c_root scontrol update nodename="$1" state=drain reason="$2"; }
resume() {
	local n
	for n in "$@"; do c_root scontrol update nodename="$n" state=resume; done
}
# resume_all: resume every node that is drained, draining or down.
resume_all() {
	local n st
	while read -r n st; do
		case "$st" in
		drain* | down* | fail*) c_root scontrol update nodename="$n" state=resume 2>/dev/null || true ;;
		esac
	done < <(c_root sinfo -h -N -o '%N %T')
}

# ------------------------------------------------------------ logs
ctld_log() { echo "$E2E_CLH/log/slurmctld.log"; }
slurmd_log() { echo "$E2E_CLH/log/slurmd-$1.log"; }

# e2e_mark_logs: remember the size of every log (the runner calls it when a
# test begins), so that *_grep see only what the test caused.
e2e_mark_logs() {
	local f
	: >"$E2E_TMP/log-marks"
	for f in "$E2E_CLH"/log/*.log; do
		[ -e "$f" ] && printf '%s %s\n' "$(stat -c %s "$f")" "$f" >>"$E2E_TMP/log-marks"
	done
	return 0
}
# log_since FILE: the lines FILE got since the test began.
log_since() {
	local f=$1 off=0
	[ -e "$f" ] || return 0
	if [ -n "${E2E_TMP:-}" ] && [ -r "$E2E_TMP/log-marks" ]; then
		off=$(awk -v f="$f" '$2 == f { print $1 }' "$E2E_TMP/log-marks")
	fi
	tail -c +$((${off:-0} + 1)) "$f"
}
ctld_grep() { log_since "$(ctld_log)" | grep -E "$1"; }
slurmd_grep() { log_since "$(slurmd_log "$1")" | grep -E "$2"; }

# job_log ID: every log line about job ID (slurmctld: JobId=ID; slurmd and
# slurmstepd: JobId=ID, [ID.step], "job ID").
job_log() {
	local id=$1 f
	for f in "$E2E_CLH"/log/*.log; do
		grep -E "JobId=$id([^0-9]|$)|\[$id\.|[Jj]ob $id([^0-9]|$)" "$f" | sed "s|^|${f##*/}: |"
	done
	return 0
}

# wait_log FILE RE [TIMEOUT=30]: until a line matching RE appears in FILE
# (since the test began).
wait_log() {
	local f=$1 re=$2
	wait_for "${3:-30}" _log_has "$f" "$re" ||
		{
			echo "wait_log: /$re/ not in ${f##*/} after ${3:-30}s" >&2
			return 1
		}
}
# Not grep -q: it stops reading at the first match, log_since then dies of
# SIGPIPE once the log since the mark is over a pipe's 64 KiB (a debug
# log), and pipefail turns the match into a failure.
_log_has() { log_since "$1" | grep -E "$2" >/dev/null; }

# ------------------------------------------------------------ cluster
# restart_ctld [--kill9] [--lose-jobs]: stop slurmctld (SIGTERM, or SIGKILL as a crash
# would) and start it again on its saved state; waits until it answers and
# every node responds.  Before a --kill9, call wait_state_saved: slurmctld
# writes its state at most every 5 s, and a change it has not written yet
# (a job that just started, a node just resumed) is lost with the kill.
# shellcheck disable=SC2120 # the test files pass its options (--kill9, --lose-jobs)
restart_ctld() { "$E2E_CLUSTER" restart-ctld "$@" >&2; }

# wait_state_saved [TIMEOUT=7] [FILE=job_state]: return once slurmctld has
# written FILE of its StateSaveLocation after this call, or after TIMEOUT s.
# A change that schedules a write has it at most SAVE_MAX_WAIT (5 s,
# state_save.c) later; so if none comes within 7 s, no such change was
# pending.  Not every change schedules one: a job that the backfill
# scheduler started is on disk as PENDING until something else writes
# job_state (at the latest PERIODIC_CHECKPOINT, 300 s); a caller that needs
# a started job on disk calls ask_job_state_write instead.  Each file has
# its own flag and is written on its own: node_state written first says
# nothing of job_state (a kill -9 between the two loses the job's change),
# so the caller names the file it relies on.
wait_state_saved() { state_written_since "$(date +%s.%N)" "${1:-7}" "${2:-job_state}"; }

# ask_job_state_write: has slurmctld write job_state now, with every job
# as it is, and returns once it is written (or after 7 s).  A submission
# schedules the write (of a held job, cancelled at once); a start by
# sched/backfill does not (backfill.c; the main scheduler's does,
# job_scheduler.c), nor does a signal (scancel --signal=CONT: checked on
# 26.05.3, no write).  Seen on 26.05.3 in t0001: a batch job seen RUNNING,
# wait_state_saved's 7 s over with no write, slurmctld killed -9: the job
# came back PENDING ("Registered PENDING JobId=6 StepId=6.batch").
ask_job_state_write() {
	local t0
	t0=$(date +%s.%N)
	cancel "$(submit -H --wrap=true)"
	state_written_since "$t0" 7 job_state
}

# state_written_since T0 TIMEOUT FILE: returns once FILE of StateSaveLocation
# is newer than T0 (seconds since the epoch), or after TIMEOUT s.
state_written_since() {
	local deadline latest
	deadline=$(($(date +%s%N) + $2 * 1000000000))
	while (($(date +%s%N) < deadline)); do
		# (|| true: slurmctld renames its state files as it writes them, so
		# one named by the glob may be gone when stat looks.)
		latest=$(stat -c %.9Y "$E2E_CLH/state/$3" 2>/dev/null) || true
		awk -v a="${latest:-0}" -v b="$1" 'BEGIN { exit !(a > b) }' && return 0
		sleep 0.2
	done
	return 0
}

# e2e_reset: bring the cluster back to "no jobs, every node idle" without
# restarting daemons.  Returns non-zero if that did not happen in 30 s.
e2e_reset() {
	local ids
	ids=$(c_root squeue -h -o %i 2>/dev/null) || return 1
	if [ -n "$ids" ]; then
		# shellcheck disable=SC2086
		c_root scancel $ids 2>/dev/null || true
		wait_for 30 _no_jobs || {
			echo "e2e_reset: jobs left after 30 s: $(c_root squeue -h -o '%i %T' | tr '\n' ' ')" >&2
			return 1
		}
	fi
	resume_all
	wait_for 30 _all_idle || {
		echo "e2e_reset: nodes not idle after 30 s: $(c_root sinfo -h -N -o '%N=%T' | tr '\n' ' ')" >&2
		return 1
	}
}
_no_jobs() { [ -z "$(c_root squeue -h -o %i 2>/dev/null)" ]; }
_all_idle() { ! c_root sinfo -h -N -o '%T' | grep -qv '^idle$'; }

# ------------------------------------------------------------ two controllers
# ctld ACTION WHICH: scripts/cluster ctld: start, stop (SIGTERM) or kill9 the
# primary or the backup controller; start waits until it answers (the
# primary: until it holds control again and every node responds).
ctld() { "$E2E_CLUSTER" ctld "$@" >&2; }
# takeover: scontrol takeover; returns once the backup holds control and the
# primary has exited (Slurm's primary does not stay as a standby).
takeover() { "$E2E_CLUSTER" takeover >&2; }

# wait_backup_control [TIMEOUT=40]: after the primary stopped answering,
# until the backup holds control: it answers a request other than ping (a
# standby refuses them) and has logged that it took over.  SlurmctldTimeout
# of the cluster is 10 s.
wait_backup_control() {
	if wait_log "$(ctld_log)" "BackupController1 .* taking over" "${1:-40}" &&
		wait_for "${1:-40}" _ctld_answers; then
		return 0
	fi
	echo "wait_backup_control: the backup did not take control in ${1:-40}s: $(c_root scontrol ping 2>&1 | tr '\n' ' ')" >&2
	return 1
}
_ctld_answers() { c_root sinfo -h -o %D >/dev/null 2>&1; }

# ha_ledger TAG: the ledger of test/e2e/lua/ha.lua for TAG (empty if none).
ha_ledger() { cat "$E2E_ROOT/tmp/switch-lua-e2e.$1.ledger" 2>/dev/null || true; }
# ha_ledger_count TAG RE: how many lines of ha_ledger TAG match RE.
ha_ledger_count() {
	local n
	n=$(ha_ledger "$1" | grep -cE "$2") || true
	echo "${n:-0}"
}
_ha_ledger_at_least() { (($(ha_ledger_count "$1" "$2") >= $3)); }
# wait_ha_ledger TAG RE N [TIMEOUT=60]: until at least N lines of ha_ledger TAG
# match RE (t0911, t0912).
wait_ha_ledger() {
	wait_for "${4:-60}" _ha_ledger_at_least "$1" "$2" "$3" ||
		fail "ledger of $1: fewer than $3 lines /$2/ after ${4:-60}s: $(ha_ledger "$1" | tr '\n' ';')"
}

# ha_ledger_check TAG ID...: the ledger of ha.lua obeys, for every attempt
# (JobId, attempt) of the jobs ID...: a job_start that returned ("started")
# is never begun again, nor returns twice; an attempt set up gets exactly
# one completed teardown, with the token its setup returned (its release);
# a teardown with nil jobinfo (the undo of a job_start killed in flight,
# switch.lua(5) Restart) comes at most once per killed job_start; every job
# ID was set up at least once; the ledger names no other job.  Prints each
# violation and returns 1 if there is any.
ha_ledger_check() {
	local tag=$1
	shift
	ha_ledger "$tag" | awk -v ids="$*" '
		BEGIN { n = split(ids, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
		{ k = $2 " " $3 }
		!($2 in want) { print "a ledger line for a job not of this test: " $0; bad = 1; next }
		$1 == "start" {
			if (k in set_up) { print "JobId=" $2 " attempt " $3 ": job_start begun again after it had returned (line " NR ")"; bad = 1 }
			starts[k]++; next
		}
		$1 == "started" {
			if (k in set_up) { print "JobId=" $2 " attempt " $3 ": job_start returned twice (line " NR ")"; bad = 1 }
			set_up[k] = $4; job_set_up[$2] = 1; next
		}
		$1 == "completed" && $4 == "nil" { undo[k]++; next }
		$1 == "completed" {
			if (!(k in set_up)) { print "JobId=" $2 " attempt " $3 ": torn down with token " $4 " before its setup returned (line " NR ")"; bad = 1 }
			else if ($4 != set_up[k]) { print "JobId=" $2 " attempt " $3 ": torn down with token " $4 ", set up with " set_up[k]; bad = 1 }
			rel[k]++; next
		}
		END {
			for (k in set_up) if (rel[k] != 1) { print "attempt " k ": set up, " (rel[k] + 0) " completed teardowns with its jobinfo (want 1)"; bad = 1 }
			for (k in undo) {
				killed = starts[k] - ((k in set_up) ? 1 : 0)
				if (undo[k] > killed) { print "attempt " k ": " undo[k] " teardowns with nil jobinfo for " killed " job_start calls killed in flight"; bad = 1 }
			}
			for (j in want) if (!(j in job_set_up)) { print "JobId=" j ": never set up"; bad = 1 }
			exit bad
		}'
}

# ------------------------------------------------------------ switch/lua
# job_reason ID: the job's Reason as text.  scontrol show job writes the
# reason with '_' for every space; squeue %r keeps it as the plugin set it.
job_reason() { c_root squeue -h -t all -j "$1" -o %r 2>/dev/null; }

# assert_job_reason ID RE: the job's Reason matches RE (an extended regexp,
# anchored by the caller if need be) as squeue prints it, and scontrol show
# job prints the same text with '_' for ' '.
assert_job_reason() {
	local r
	r=$(job_reason "$1")
	assert_match "$2" "$r" "Reason of job $1 (squeue %r)"
	assert_eq "${r// /_}" "$(job_field "$1" Reason)" "Reason of job $1 in scontrol show job"
}

# job_named NAME: the id of the (newest) job called NAME, in any state.
job_named() {
	local id
	id=$(c_root squeue -h -t all -n "$1" -o %i 2>/dev/null | sort -n | tail -n1)
	[ -n "$id" ] || {
		echo "job_named: no job called $1" >&2
		return 1
	}
	echo "$id"
}

# ctld_job ID RE: the plugin's slurmctld lines for job ID (since the test
# began) that continue with RE right after "JobId=ID"; RE must begin with a
# non-digit (' job_start started', ': released').  Status 1 if none.
ctld_job() { ctld_grep "switch/lua: JobId=$1$2"; }

# ctld_count RE: how many slurmctld lines since the test began match RE.
ctld_count() {
	local n
	n=$(log_since "$(ctld_log)" | grep -cE "$1") || true
	echo "${n:-0}"
}

# e2e_uniq: digits unique enough to tag this test's processes and files.
e2e_uniq() { printf '%d%04d' "$$" "$((RANDOM % 10000))"; }

# need_seed: skip the test unless e2e_generate_scripts found the contract
# script (fail if it was found but could not be turned into a test copy).
need_seed() {
	local st
	st=$(cat "$E2E_GEN/seed.status" 2>/dev/null || echo "missing: no $E2E_GEN/seed.status (run the tests with test/e2e/run)")
	case "$st" in
	ok) return 0 ;;
	absent:*) skip "no contract script at $E2E_SEED" ;;
	*) fail "the contract script cannot be used: $st" ;;
	esac
}

# switch_lua_cli: the switch-lua of the plugin under test, as a path inside
# the chroot: that of the source build whose lib/slurm is the first folder
# of the cluster's PluginDir (SWITCHLUA_PLUGIN_DIR, or /opt/switch-lua-X.Y.Z
# of a --slurm X.Y.Z cluster), else the package's.
switch_lua_cli() {
	local first
	first=$(sed -n 's/^PluginDir=//p' "$E2E_ROOT/etc/slurm/slurm.conf" 2>/dev/null | tail -n1)
	first=${first%%:*}
	if [[ $first == */lib/slurm ]] && [ -x "$E2E_ROOT${first%/lib/slurm}/bin/switch-lua" ]; then
		echo "${first%/lib/slurm}/bin/switch-lua"
	else
		echo switch-lua
	fi
}

# pool_field FIELD: pool vni's FIELD (size, free, taken, quarantined,
# refusals, waiting) in `switch-lua status --json`, or nothing (t1701,
# t1702).
pool_field() {
	local j
	j=$(c_root "$(switch_lua_cli)" status --json 2>/dev/null) || return 0
	c_root python3 -c 'import json, sys
print(json.loads(sys.argv[1]).get("pools", {}).get("vni", {}).get(sys.argv[2], ""))' "$j" "$1"
}

# pool_shows FIELD N: pool_field FIELD is N (for wait_for).
pool_shows() { [ "$(pool_field "$1")" = "$2" ]; }

# cluster_slurm: the Slurm the cluster runs, as scripts/cluster config
# recorded it: X.Y.Z for a --slurm cluster, "debian" for Debian's package.
# known_job_sequence: slurmctld restarted (its counters start from zero),
# then 3 jobs set up and torn down (--network=prov), 1 whose job_start fails
# (prov:fail, --no-requeue: CANCELLED) and 1 without --network, all ended;
# the status tests' sequence (t1001, t1002: their fixture's prov network).
known_job_sequence() {
	local id ids=() failed plain _
	# shellcheck disable=SC2119 # no option: a plain restart
	restart_ctld
	for _ in 1 2 3; do
		ids+=("$(submit -N1 --network=prov --wrap=true)")
	done
	failed=$(submit -N1 --no-requeue --network=prov:fail --wrap=true)
	plain=$(submit -N1 --wrap=true)
	for id in "${ids[@]}"; do wait_job "$id" COMPLETED 30; done
	wait_job "$failed" CANCELLED 30
	wait_job "$plain" COMPLETED 30
}

cluster_slurm() {
	local v
	v=$(sed -n 's/^SLURM=//p' "$E2E_CLH/cluster.env" 2>/dev/null | tail -n1)
	v=${v//\'/}
	echo "${v:-debian}"
}

# settings_line [PARAMS]: "switch_timeout=10 switch_retries=3 ...", the
# settings as the plugin logs them at start-up for SlurmctldParameters=PARAMS
# (default: the value in the cluster's slurm.conf now), printed by
# `switch-lua settings` from the parser's own table (src/ctld/config.cpp).
settings_line() {
	local params
	if [ $# -gt 0 ]; then
		params=$1
	else
		params=$(sed -n 's/^SlurmctldParameters=//p' "$E2E_ROOT/etc/slurm/slurm.conf" | tail -n1)
	fi
	c_root "$(switch_lua_cli)" settings "$params" 2>/dev/null ||
		fail "switch-lua settings '$params' failed"
}

# ere_quote TEXT: TEXT with every character special to grep -E escaped.
ere_quote() { printf '%s' "$1" | sed 's/[][\\.^$*+?(){}|]/\\&/g'; }

# our_supervisor: the pid of this cluster's switch-lua-supervisor.  Other
# testbeds may run their own on the same host: only a process whose root is
# this testbed's chroot is ours.
our_supervisor() {
	local p root
	root=$(realpath "$E2E_ROOT")
	# Only ours (other testbeds may run clusters); never a failing status.
	for p in $(pgrep -f 'switch-lua-supervisor --channel-fd' || true); do
		if [ "$(readlink "/proc/$p/root" 2>/dev/null)" = "$root" ]; then echo "$p"; fi
	done | head -n1
}

# proc_state PID: the state letter of /proc/PID/stat (R, S, T, Z, ...);
# "gone" when there is no such process.
proc_state() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || {
		echo gone
		return 0
	}
	st=${st##*) } # after the command name, which may hold spaces
	echo "${st%% *}"
}

# e2e_generate_scripts: write the generated switch.lua copies into $E2E_GEN
# (see the header) and seed.status: "ok", "absent: PATH", or what is wrong.
e2e_generate_scripts() {
	local dir=$E2E_GEN seed=$E2E_SEED f
	mkdir -p "$dir"
	if [ ! -r "$seed" ]; then
		for f in seed.lua seed-block.lua seed-special.lua; do
			install -m 0644 "$E2E_REPO/test/e2e/lua/no-seed.lua" "$dir/$f"
		done
		echo "absent: $seed" >"$dir/seed.status"
		echo "no contract script at $seed: the tests that need it will be skipped"
		return 0
	fi
	sed 's/^local ALLOW_DIRECTIVES = false$/local ALLOW_DIRECTIVES = true/' \
		"$seed" >"$dir/seed.lua.new"
	sed 's/^local BLOCK_JOB_COMPLETE = false$/local BLOCK_JOB_COMPLETE = true/' \
		"$dir/seed.lua.new" >"$dir/seed-block.lua.new"
	sed 's/^local SETUP_SPECIAL_STEPS = false$/local SETUP_SPECIAL_STEPS = true/' \
		"$dir/seed.lua.new" >"$dir/seed-special.lua.new"
	chmod 0644 "$dir/seed.lua.new" "$dir/seed-block.lua.new" "$dir/seed-special.lua.new"
	mv "$dir/seed.lua.new" "$dir/seed.lua"
	mv "$dir/seed-block.lua.new" "$dir/seed-block.lua"
	mv "$dir/seed-special.lua.new" "$dir/seed-special.lua"
	if ! grep -qx 'local ALLOW_DIRECTIVES = true' "$dir/seed.lua"; then
		echo "no line 'local ALLOW_DIRECTIVES = false' to flip in $seed" >"$dir/seed.status"
	elif ! grep -qx 'local BLOCK_JOB_COMPLETE = true' "$dir/seed-block.lua"; then
		echo "no line 'local BLOCK_JOB_COMPLETE = false' to flip in $seed" >"$dir/seed.status"
	elif ! grep -qx 'local SETUP_SPECIAL_STEPS = true' "$dir/seed-special.lua"; then
		echo "no line 'local SETUP_SPECIAL_STEPS = false' to flip in $seed" >"$dir/seed.status"
	else
		echo ok >"$dir/seed.status"
	fi
	echo "test copies of $seed in ${dir#"$E2E_ROOT"}: $(cat "$dir/seed.status")"
}
