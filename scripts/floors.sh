#!/bin/sh
# The C floor VMM and the Go floor VMM side by side, in one host (run it
# inside a nested host: govmm nested -- scripts/floors.sh ...): the same
# guest loops, each kind run by every floor in turn, REPS times. The Go
# floor's ratio to the C floor is what Go's runtime costs a VMM whose
# exits all come back to user space (bench/gofloor; docs/exit-cost.md).
# Raw lines, each prefixed "LABEL r=N"; scripts/floors-summary.py makes
# the table.
#   scripts/floors.sh GUESTDIR REPS ROUNDS EXITS LABEL=COMMAND...
# e.g. C=floorvmm GO=gofloor "GOY=gofloor -yield 8ms": each COMMAND is
# split at spaces.
set -eu
g=$1 reps=$2 rounds=$3 exits=$4
shift 4
r=1
while [ "$r" -le "$reps" ]; do
	for k in ipi-x2apic ipi-xapic port mmio msr; do
		blob=floorloop.bin n=$exits gap=
		case $k in ipi-*) blob=rttloop.bin n=$rounds gap=100000 ;; esac
		for f in "$@"; do
			label=${f%%=*}
			# shellcheck disable=SC2086
			${f#*=} "$g/$blob" "$k" "$n" $gap | sed "s/^/$label r=$r /"
		done
	done
	r=$((r + 1))
done
