#!/bin/sh
# Runs inside the nested VT-x host (govmm nested --host intel): bare-metal
# guests one after another on 2 vCPUs, each under KVM's NMI tracepoints and
# kprobes (tracefs), and one line per run saying what KVM did with the NMIs:
# how often process_nmi found the vCPU NMI-blocked (vmx_get_nmi_mask ret=1)
# or not, vmx_inject_nmi, vmx_set_nmi_mask, KVM_SET_VCPU_EVENTS, NMI windows
# asked for and NMI_WINDOW exits taken. It shows Bochs 2.7's erratum in
# docs/hosts.md ("blocked" though nothing blocked NMIs in that VM, and a
# window that never opens). From the module's root, e.g.:
#   D=$GOVMM_CACHE/nested/vtx G=$GOVMM_CACHE/guest
#   CGO_ENABLED=0 go build -o $D/govmm ./cmd/govmm
#   govmm nested --host intel --file $D --file $G --file scripts/vtx-nmi-trace.sh -- \
#     sh scripts/vtx-nmi-trace.sh $D/govmm $G 'nmi.elf rounds=5' 'ipi.elf mode=x2apic-phys rounds=2' 'ipi.elf mode=x2apic-phys rounds=2'
# usage: vtx-nmi-trace.sh GOVMM GUESTDIR 'GUEST ARGS' ...
govmm=$1 g=$2; shift 2
mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
T=/sys/kernel/tracing
mount -t tracefs nodev $T 2>/dev/null || T=/sys/kernel/debug/tracing
echo 4000 > $T/buffer_size_kb
echo 1 > $T/events/kvm/kvm_exit/enable
echo 'exit_reason == 8' > $T/events/kvm/kvm_exit/filter
for p in 'p:k_process_nmi kvm:process_nmi' 'p:v_inject_nmi kvm_intel:vmx_inject_nmi' 'p:v_set_nmi_mask kvm_intel:vmx_set_nmi_mask masked=%si:u8' 'p:v_enable_nmi_window kvm_intel:vmx_enable_nmi_window' 'r:v_get_nmi_mask kvm_intel:vmx_get_nmi_mask ret=$retval:u8' 'p:k_set_events kvm:kvm_vcpu_ioctl_x86_set_vcpu_events'; do
	echo "$p" >> $T/kprobe_events || echo "kprobe failed: $p"
done
echo 1 > $T/events/kprobes/enable
i=0
for run in "$@"; do
	i=$((i+1))
	echo > $T/trace; echo 1 > $T/tracing_on
	out=$("$govmm" run --timeout 600s --cpus 2 $g/$run 2>&1)
	echo 0 > $T/tracing_on
	cp $T/trace /tmp/t
	r=pass; echo "$out" | grep -q FAIL && r=FAIL
	echo "== run $i: $run: $r; process_nmi $(grep -c k_process_nmi /tmp/t), get_nmi_mask ret=1 $(grep -c 'v_get_nmi_mask.*ret=1' /tmp/t) ret=0 $(grep -c 'v_get_nmi_mask.*ret=0' /tmp/t), vmx_inject_nmi $(grep -c v_inject_nmi /tmp/t), set_nmi_mask(1) $(grep -c 'masked=1' /tmp/t) set_nmi_mask(0) $(grep -c 'masked=0' /tmp/t), SET_VCPU_EVENTS $(grep -c k_set_events /tmp/t), enable_nmi_window $(grep -c v_enable_nmi_window /tmp/t), NMI_WINDOW exits $(grep -c NMI_WINDOW /tmp/t)"
	echo "$out" | grep -E "^FAIL|^PASS" | head -3
	grep -v "^#" /tmp/t | head -8 | cut -c1-200
done
