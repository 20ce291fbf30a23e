#!/bin/sh
# A/B of the IPI round trip: 'govmm bench-rtt' of each binary in turn,
# REPS times, in one host (run it inside a nested host: govmm nested --
# scripts/ab-rtt.sh ...). Each bench-rtt run measures the IPI floor (the C
# VMM) beside govmm, so each row's "vs the IPI floor" is a side-by-side
# ratio of its own; the summary lists them per binary, run after run.
#   scripts/ab-rtt.sh OUT REPS "BENCH-RTT FLAGS" GOVMM...
set -eu
out=$1 reps=$2 flags=$3
shift 3
mkdir -p "$out"
r=1
while [ "$r" -le "$reps" ]; do
	for bin in "$@"; do
		name=$(basename "$bin")
		# shellcheck disable=SC2086
		"$bin" bench-rtt $flags --out "$out/$name-$r" >"$out/$name-$r.log" 2>&1 || { echo "$name run $r failed:"; tail -20 "$out/$name-$r.log"; exit 1; }
		echo "== $name run $r done"
	done
	r=$((r + 1))
done
"$(dirname "$0")/rtt-summary.py" "$out"
