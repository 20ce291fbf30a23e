#!/bin/sh
# Runs inside the nested VT-x host (govmm nested --host intel: Bochs,
# kvm_intel), from the module's root. Arguments:
#   GOVMM TESTBIN TEST2JSON RUN SKIP MODES [CMDBIN CMDRUN]
# 1. govmm host with VMX's preemption timer on (TSC_DEADLINE writes must
#    be dropped by KVM's fast path) and, kvm_intel reloaded with
#    preemption_timer=0, off (they must reach govmm);
# 2. the tests package's binary (built static: Bochs's L1 has only a
#    busybox) with -test.run RUN and -test.skip SKIP, its events as JSON (test2json) under the
#    package name "github.com/govmm/govmm/tests (nested VT-x)";
# 3. cmd/govmm's test binary (CMDBIN, static too) with -test.run CMDRUN,
#    under "github.com/govmm/govmm/cmd/govmm (nested VT-x)";
# 4. govmm's kernel to the u-root shell and irqstat in each of MODES.
# Exit status: 0 when every step passed.
govmm=$1 testbin=$2 t2j=$3 run=$4 skip=$5 modes=$6 cmdbin=${7:-} cmdrun=${8:-}
fail=0
no() { echo "vtx: FAIL: $*"; fail=1; }

host() {
	out=$("$govmm" host 2>&1)
	echo "$out"
	echo "$out" | grep -q "TSC_DEADLINE writes *$1" || no "govmm host: TSC_DEADLINE writes do not say \"$1\""
}
echo "== vtx: govmm host, preemption_timer=$(cat /sys/module/kvm_intel/parameters/preemption_timer)"
host "dropped by KVM"
rmmod kvm_intel && insmod /lib/modules/kvm-intel.ko preemption_timer=0 || no "cannot reload kvm_intel"
echo "== vtx: govmm host, preemption_timer=$(cat /sys/module/kvm_intel/parameters/preemption_timer)"
host "reach govmm"
rmmod kvm_intel && insmod /lib/modules/kvm-intel.ko || no "cannot reload kvm_intel"

if [ -n "$run" ]; then
	echo "== vtx: go test ./tests/ -run '$run' (preemption_timer=$(cat /sys/module/kvm_intel/parameters/preemption_timer))"
	mkdir -p tests && (cd tests && "$t2j" -p "github.com/govmm/govmm/tests (nested VT-x)" -t "$testbin" \
		-test.v=test2json -test.count=1 -test.timeout=50m -test.run "$run" ${skip:+-test.skip "$skip"}) || no "tests"
fi
if [ -n "$cmdrun" ]; then
	echo "== vtx: go test ./cmd/govmm/ -run '$cmdrun'"
	mkdir -p cmd/govmm && (cd cmd/govmm && "$t2j" -p "github.com/govmm/govmm/cmd/govmm (nested VT-x)" -t "$cmdbin" \
		-test.v=test2json -test.count=1 -test.timeout=20m -test.run "$cmdrun") || no "cmd/govmm tests"
fi

for m in $modes; do
	echo "== vtx: govmm boot --x2apic=$m --cpus 2 (govmm's kernel to the u-root shell)"
	"$govmm" boot --quiet --x2apic="$m" --cpus 2 --exec irqstat || no "boot --x2apic=$m"
done
# Linux on KVM's in-kernel LAPIC (--lapic=kvm) in every mode: here, since
# in the nested AMD-V host KVM's LAPIC delivers an interrupt twice now and
# then, which crashes Linux (docs/hosts.md; TestBootOnKVMLAPIC skips there).
if [ -n "$modes" ]; then
	# Cluster mode with --pv-ipi: KVM's own PV send-IPI, which boot
	# requires the kernel to have switched to.
	for m in off physical cluster mixed; do
		pv=; [ "$m" = cluster ] && pv=--pv-ipi
		echo "== vtx: govmm boot --lapic=kvm --x2apic=$m $pv --cpus 2 (KVM's LAPIC, to the u-root shell)"
		"$govmm" boot --quiet --lapic=kvm --x2apic="$m" $pv --cpus 2 --exec 'irqstat; ipibench -n 10' || no "boot --lapic=kvm --x2apic=$m $pv"
	done
fi
[ $fail = 0 ] && echo "== vtx: PASS" || echo "== vtx: FAILED"
exit $fail
