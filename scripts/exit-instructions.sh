#!/bin/sh
# govmm's own instructions per exit: BenchmarkExit (package vcpu: the loop
# on a fake vCPU, a real LAPIC, accounting and exit bus) under valgrind's
# callgrind, at two run lengths, the difference divided by the extra exits
# (what every run pays once, start-up and teardown, cancels). Bochs's TSC
# counts instructions, so on the nested VT-x host an exit's excess over
# the floor C VMM's follows this count (docs/exit-cost.md). About 115 of
# each figure are the fake vCPU's own. callgrind cannot follow Go's
# asynchronous preemption signals: GODEBUG turns them off, and GOGC=off
# keeps collections out of the counts.
#   scripts/exit-instructions.sh TESTBIN [KIND...]
set -eu
bin=$1
shift
[ $# -gt 0 ] || set -- port-read mmio-read x2apic-tpr-write
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
short=20000 long=40000
for k in "$@"; do
	for n in $short $long; do
		GODEBUG=asyncpreemptoff=1 GOGC=off valgrind --tool=callgrind --callgrind-out-file="$dir/cg.$n" \
			"$bin" -test.run XXX -test.bench "BenchmarkExit/$k\$" -test.benchtime "${n}x" -test.cpu 1 >"$dir/log.$n" 2>&1 ||
			{ echo "exit-instructions: callgrind failed on $k:" >&2; tail -5 "$dir/log.$n" >&2; exit 1; }
	done
	a=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/log.$short")
	b=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/log.$long")
	[ -n "$a" ] && [ -n "$b" ] || { echo "exit-instructions: no instruction count for $k" >&2; exit 1; }
	echo "$k $(((b - a) / (long - short))) instructions per exit"
done
