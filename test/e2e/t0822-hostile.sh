# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# e2e-tiers: core=24.11 full=26.05
#
# t0822-hostile: user strings are data (issue 21, "Done when"; switch.lua(5):
# SECURITY, Escaping).  A job whose name, account, comment and (for the
# contract script) --network are 1,023-byte strings full of ; $(...)
# backquotes quotes newlines and control characters runs through the
# example conf/switch.lua and through the contract script: no command the
# script did not mean runs (a marker file the strings try to create stays
# absent), and every line switch/lua wrote about the job is one line,
# with those characters shown escaped.

# hostile_string MARKER TAG: 1,023 bytes that try to create MARKER in every
# way a shell would run, and to forge a line "FORGED-TAG ..." in a log.
hostile_string() {
	local s
	# Quotes come in pairs ('q' "q"), so that a shell given the string
	# parses it and runs every command in it: an unbalanced quote would make
	# it a syntax error, nothing would run, and the test could not tell.
	# shellcheck disable=SC2016 # the $(...) and backquotes are the payload
	s=$(printf 'x;touch %s;$(touch %s)`touch %s`'"'q'"'"q"\x1b[31mred\x07\x01\nFORGED-%s switch/lua: JobId=1 job_start returned rc=0\r\t|touch %s&&' \
		"$1" "$1" "$1" "$2" "$1")
	while [ "${#s}" -lt 1023 ]; do s+=A; done
	printf '%s' "${s:0:1023}"
}

# assert_contained ID TAG MARKER: no marker file; no raw control character
# in any switch/lua line about job ID; the forged text only ever inside a
# switch/lua line about ID, never at the start of a line.
assert_contained() {
	local id=$1 tag=$2 marker=$3 f ours
	[ ! -e "$E2E_ROOT$marker" ] || fail "a command in a user string ran: $marker exists"
	for f in "$(ctld_log)" "$(slurmd_log node1)"; do
		ours=$(log_since "$f" | grep -a "switch/lua: JobId=$id " || true)
		if printf '%s\n' "$ours" | LC_ALL=C grep -aq $'[\x01-\x08\x0b-\x1f\x7f]'; then
			fail "${f##*/}: a switch/lua line about JobId=$id holds a raw control character: $(printf '%s\n' "$ours" | LC_ALL=C grep -a $'[\x01-\x08\x0b-\x1f\x7f]' | head -n2 | cat -A)"
		fi
		if log_since "$f" | grep -a "FORGED-$tag" | grep -av "switch/lua: JobId=$id .*FORGED-$tag"; then
			fail "${f##*/}: a line starts with the user's forged text (above)"
		fi
	done
}

# e2e-config: --switch-type switch/lua --script conf/switch.lua

e2e_test "switch/lua: hostile input: name, account and comment of 1,023 bytes with shell metacharacters and control characters through the example: no command runs, its lines are escaped" t_hostile_example
t_hostile_example() {
	local tag marker h id esc
	tag=$(e2e_uniq)
	marker=/tmp/switchlua-pwned-$tag
	h=$(hostile_string "$marker" "$tag")
	assert_eq 1023 "${#h}" "the hostile string's length"
	id=$(submit -N1 --network=vni -J "$h" --comment="$h" -A "$h" --wrap=true)
	wait_job "$id" COMPLETED 30
	# The example logs the job name: escaped, on its own line of switch/lua.
	# shellcheck disable=SC2016 # the payload as the log shows it
	esc='Name=x;touch '"$marker"';$(touch '"$marker"')`touch '"$marker"'`'"'q'"'"q"\x1b[31mred\x07\x01\nFORGED-'"$tag"' switch/lua: JobId=1 job_start returned rc=0\r\t|touch'
	ctld_job "$id" " job_start: JobId=$id: VNI [0-9]+ on node1, $(ere_quote "$esc")" >/dev/null ||
		fail "the example's line does not show the name escaped: $(ctld_grep "switch/lua: JobId=$id job_start: JobId" || true)"
	assert_contained "$id" "$tag" "$marker"
}

# e2e-config: --switch-type switch/lua --script "$E2E_GEN/seed.lua"

e2e_test "switch/lua: hostile input: --network, name, account and comment of 1,023 bytes through the contract script: no command runs, its lines are escaped" t_hostile_seed
t_hostile_seed() {
	local tag marker h id out
	need_seed
	tag=$(e2e_uniq)
	marker=/tmp/switchlua-pwned-$tag
	h=$(hostile_string "$marker" "$tag")
	out=$(run_srun -N1 -J "$h" --comment="$h" -A "$h" --network="$h" true) || fail "srun failed: $out"
	# The newest job (the name cannot be looked up: it spans lines).
	id=$(c_root squeue -h -t all -o %i | sort -n | tail -n1)
	[ -n "$id" ] || fail "no job"
	ctld_job "$id" " job_start: .*Network=x;touch $(ere_quote "$marker");.*\\\\x1b\\[31mred\\\\x07\\\\x01\\\\nFORGED-$tag" >/dev/null ||
		fail "the contract script's Network= line is not escaped: $(ctld_grep "switch/lua: JobId=$id job_start: .*Network=" | head -c 600 || true)"
	assert_contained "$id" "$tag" "$marker"
}
