# shellcheck shell=bash
# criterion_tally NAME LOG RC: add a criterion run's counts (its "Synthesis:" line in LOG) to the
# caller's $pass and $fail. No synthesis line, or an exit code other than 0 with nothing
# failing, is one failure; under CI=true (or CORDON_REQUIRE_ALL=1, as tests/lib/testutil.h) a
# skipped test is a failure too. Crashes are counted
# in criterion's Failing already. Messages go through $criterion_say (default: echo), which
# tests/run-all.sh points at its failure recap.
criterion_tally() {
	local name=$1 log=$2 rc=$3 line t p f skipped say=${criterion_say:-echo}

	line=$(grep -a 'Synthesis:' "$log" | tail -1)
	if [ -z "$line" ]; then
		$say "$name: no synthesis line (exit $rc)"
		fail=$((fail + 1))
		return
	fi
	t=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' <<<"$line")
	p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
	f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
	pass=$((pass + p))
	fail=$((fail + f))
	skipped=$((t - p - f))
	if [ "$skipped" -gt 0 ] && { [ "${CI:-}" = true ] || [ "${CORDON_REQUIRE_ALL:-}" = 1 ]; }; then
		$say "$name: $skipped skipped test(s): a skip is a failure under CI=true"
		fail=$((fail + skipped))
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		$say "$name: exited $rc"
		fail=$((fail + 1))
	fi
}
