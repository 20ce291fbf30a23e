#!/bin/sh
# Distinct pages govmm touches per step of an x2APIC IPI round trip, beside
# the Go floor's (bench/gofloor): `govmm bench-rtt` and `gofloor ...
# ipi-x2apic` under valgrind's lackey, their memory traces split by thread
# and cut at each exit (scripts/rtt-pages.py). In the nested AMD-V host
# each page touched between two world switches costs about 500 cycles
# (docs/exit-cost.md): this count, not the host's noisy clock, is what
# govmm's round trip's excess there follows, step by step. Needs a
# /dev/kvm (any: this machine's kvm_pvm will do) and Go (go tool nm).
#   scripts/rtt-pages.sh GOVMM GOFLOOR RTTLOOP [ROUNDS]
set -eu
govmm=$1 gofloor=$2 blob=$3 rounds=${4:-200}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# addr BINARY SYMBOL: the symbol's address, or a message and exit 1.
addr() {
	a=$(go tool nm "$1" | awk -v s="$2" '$3 == s && ($2 == "T" || $2 == "t") { print $1 }')
	[ -n "$a" ] || { echo "rtt-pages: no $2 in $1" >&2; exit 1; }
	echo "$a"
}
# skips BINARY: the Go scheduler's yield and preemption, as skip=ADDR.
skips() {
	for s in runtime.goschedImpl runtime.stoplockedm runtime.newstack runtime.gopreempt_m; do
		a=$(go tool nm "$1" | awk -v s="$s" '$3 == s { print $1 }')
		[ -z "$a" ] || echo "skip=$a"
	done
}
lackey() {
	out=$1
	shift
	valgrind --tool=lackey --trace-mem=yes --trace-sched=yes --log-file="$dir/trace" "$@" >"$dir/log" 2>&1 ||
		{ echo "rtt-pages: $1 under lackey failed:" >&2; tail -5 "$dir/log" >&2; exit 1; }
	mv "$dir/trace" "$out"
}
v=github.com/govmm/govmm
lackey "$dir/govmm.trace" "$govmm" bench-rtt --modes x2apic-phys --delivery plain --lapic govmm --rounds "$rounds" --reps 1 \
	--qemu "" --floor "" --ipi-blob "" --out "$dir/out"
echo "govmm ($rounds round trips each, halted and running receiver, halt polling on and off):"
# shellcheck disable=SC2046
python3 "$(dirname "$0")/rtt-pages.py" "$dir/govmm.trace" "$(addr "$govmm" "$v/vcpu.(*VCPU).handleExit")" \
	"send=$(addr "$govmm" "$v/vlapic.(*LAPIC).sendLocked")" "wake=$(addr "$govmm" "$v/vcpu.(*VCPU).wakeUp")" \
	"halt=$(addr "$govmm" "$v/vcpu.(*VCPU).halt")" "eoi=$(addr "$govmm" "$v/vlapic.(*LAPIC).eoiLocked")" \
	"sig=$(addr "$govmm" runtime.sighandler)" $(skips "$govmm")
rm -f "$dir/govmm.trace"
lackey "$dir/gofloor.trace" "$gofloor" -yield 8ms -raw "$blob" ipi-x2apic "$rounds"
echo "the Go floor ($rounds round trips each, halted and running receiver):"
# shellcheck disable=SC2046
python3 "$(dirname "$0")/rtt-pages.py" "$dir/gofloor.trace" "$(addr "$gofloor" "main.(*ipiVM).handleExit")" \
	"send=$(addr "$gofloor" "main.(*ipiVM).deliver")" "wake=$(addr "$gofloor" main.futex)" \
	"halt=$(addr "$gofloor" "main.(*ipiVM).halt")" \
	"sig=$(addr "$gofloor" runtime.sighandler)" $(skips "$gofloor")
