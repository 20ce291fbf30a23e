#!/bin/sh
# Distinct pages govmm touches per exit (port read, MMIO read, x2APIC TPR
# write): `govmm bench-exits` under valgrind's lackey, its memory trace cut
# at each entry of vcpu.(*VCPU).handleExit (scripts/exit-pages.py). In the
# nested AMD-V host each page touched between two entries costs an exit
# about 500 cycles (QEMU's TCG flushes its software TLB at each world
# switch; docs/exit-cost.md), so this count, not instructions, is what
# govmm's excess there follows. Needs a /dev/kvm (any: this machine's
# kvm_pvm will do) and Go (go tool nm).
#   scripts/exit-pages.sh GOVMM FLOORVMM [COUNT]
set -eu
govmm=$1 floor=$2 count=${3:-3000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
entry=$(go tool nm "$govmm" | awk '$3 == "github.com/govmm/govmm/vcpu.(*VCPU).handleExit" { print $1 }')
[ -n "$entry" ] || { echo "exit-pages: no vcpu.(*VCPU).handleExit in $govmm" >&2; exit 1; }
valgrind --tool=lackey --trace-mem=yes --log-file="$dir/trace" \
	"$govmm" bench-exits --count "$count" --reps 1 --floor "$floor" --out "$dir/out" >"$dir/log" 2>&1 ||
	{ echo "exit-pages: bench-exits under lackey failed:" >&2; tail -5 "$dir/log" >&2; exit 1; }
python3 "$(dirname "$0")/exit-pages.py" "$dir/trace" "$entry" "$count"
