#!/bin/busybox sh
# The nested host's /init (L1): load KVM, mount the machine's files, run
# one command and report its exit status on the serial console, then power
# off. /run.conf (written per run by package nested) sets:
#   NONCE     the marker that tags this script's own lines
#   MODULES   the kernel modules to load, in order (files under /lib/modules)
#   KVMPARAMS parameters for the vendor module (kvm_amd or kvm_intel)
#   ROOTTAG   the 9p tag of the machine's / (empty: run in this initramfs)
#   SHARES    "tag:path ..." read-write 9p shares mounted over the root
#             (the rest of / is the machine's, read-only, under an overlay)
# and /cmd.sh is the command, run in the chroot (or here) by /bin/sh.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
. /run.conf

say() { echo "@@$NONCE $*"; }
# off powers L1 off once the console has sent everything written to it: the
# tty layer may still hold the last lines (the status among them) when
# poweroff -f stops the machine, and on the nested VT-x host (Bochs' UART)
# a run once lost its status line so, the command having passed. stty's
# set waits for the output to drain (tcsetattr TCSADRAIN); the second is
# for the UART's own FIFO.
off() {
	stty -F /dev/console "$(stty -F /dev/console -g 2>/dev/null)" 2>/dev/null
	sleep 1
	sync
	poweroff -f
	sleep 10
}
fail() { say "error $*"; off; }

ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
for m in $MODULES; do
	p=""
	case $m in kvm-amd.ko|kvm-intel.ko) p=$KVMPARAMS ;; esac
	if ! out=$(insmod /lib/modules/$m $p 2>&1); then
		why=$(dmesg | grep -i -E 'kvm|svm|vmx|virtualiz' | tail -n 1)
		fail "insmod ${m%.ko} refused: ${why:-$out}"
	fi
done
[ -c /dev/kvm ] || fail "no /dev/kvm after loading KVM: $(dmesg | grep -i kvm | tail -n 1)"
say "kvm $(cat /sys/module/kvm_amd/parameters/nested 2>/dev/null || cat /sys/module/kvm_intel/parameters/nested 2>/dev/null)"

root=/
if [ -n "$ROOTTAG" ]; then
	# The machine's / read-only over 9p, under an overlay whose upper
	# layer is L1's RAM: programs may write anywhere (Chromium insists on
	# $HOME), and what they write there is gone with L1.
	root=/host
	mkdir -p /host /lower /rw
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro "$ROOTTAG" /lower ||
		fail "cannot mount the machine's / over 9p"
	mount -t tmpfs rw /rw && mkdir -p /rw/upper /rw/work
	mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /host ||
		fail "cannot mount an overlay over the machine's /: $(dmesg | grep -i overlay | tail -n 1)"
	# No tmpfs over /tmp or /run: the overlay keeps what is written there
	# in RAM already, and a work tree or cache under /tmp must stay seen.
	for s in $SHARES; do
		tag=${s%%:*} dir=${s#*:}
		mkdir -p "/host$dir"
		mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=mmap "$tag" "/host$dir" ||
			fail "cannot mount $dir over 9p (tag $tag)"
	done
	mount -t proc proc /host/proc
	mount -t sysfs sys /host/sys
	mount -t devtmpfs dev /host/dev
	mkdir -p /host/dev/pts /host/dev/shm
	mount -t devpts devpts /host/dev/pts
	mount -t tmpfs tmp /host/dev/shm
	cp /cmd.sh /host/.govmm-nested-cmd.sh
	cmd=/.govmm-nested-cmd.sh
else
	# The initramfs is RAM already; the files the run brought (under
	# /tmp too, maybe) are in it.
	mkdir -p /tmp /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	cmd=/cmd.sh
fi
say "start"
chroot $root /bin/sh $cmd </dev/null
rc=$?
dmesg | grep -E 'kvm|SVM|VMX|vmx|svm' | grep -v -E 'kvm: (Nested|Virtual|Nested Paging)|SVM: (kvm: )?(Nested|Virtual|TSC|AVIC|LBR|Hyper|PMU virtualization is disabled)' | tail -n 20 | sed "s/^/@@$NONCE kernel /"
say "status $rc"
off
