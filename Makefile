# govmm: everything the build and the tests need is made here, idempotently,
# under one directory outside the source tree ($(CACHE)), so that clean
# clones (CI) reuse what an earlier build made, above all the guest kernel.
CACHE   ?= $(if $(GOVMM_CACHE),$(GOVMM_CACHE),$(HOME)/.cache/govmm)
GUESTS  := $(CACHE)/guest
BIN     := $(CACHE)/bin/govmm
GO      ?= go
export GOVMM_CACHE     := $(CACHE)
export GOVMM_GUEST_DIR := $(GUESTS)
export GOVMM_BIN       := $(BIN)

.PHONY: exit-instructions exit-pages rtt-pages floors floors-vtx gofloor seeds seeds-288 seeds-512 seeds-vtx bench-rtt-vtx guestfuzz-vtx bench-exits-vtx lint nested-vtx-full test-tools nested-deps nested-shell nested-test nested-vtx all deps disk bench-blk test-deps guests build run shell ustress run-baremetal storm guestfuzz bench-ipi bench-rtt bench-exits floorvmm boot-big boot-no-tsc-deadline boot-debian boot-debian-default test vet fuzz bench clean initramfs kernel debian-kernel

all: build guests

# Debian packages, installed only when missing. BUILD_DEBS are what the
# main job ('make run': govmm, the guests, the guest kernel, the initramfs)
# needs: gcc/binutils/make build the guests (the kernel's own build
# dependencies are guest/linux/build.sh's), e2fsprogs makes the demonstration
# disk (make disk). TEST_DEBS are the tests' alone:
# gcc checks the KVM ABI and builds the floor VMM (bench/floor: libc6-dev
# and linux-libc-dev's <linux/kvm.h>); acpica-tools' iasl/acpiexec check the ACPI tables;
# chromium renders the dashboard in the browser test; xz-utils, lz4, zstd
# and bzip2 make the kernel-payload round trips the loader tests check;
# e2fsprogs' mke2fs and debugfs write and read the virtio-blk tests' ext2 disks;
# cpio reads back the nested hosts' initramfs (nested's TestCPIO).
BUILD_DEBS := gcc binutils make e2fsprogs
TEST_DEBS  := acpica-tools chromium xz-utils lz4 zstd bzip2 libc6-dev linux-libc-dev e2fsprogs cpio
# BENCH_DEBS are the benchmarks' alone: QEMU runs bench-rtt's guest under
# KVM's in-kernel LAPIC, the reference its round trips are compared with.
BENCH_DEBS := qemu-system-x86

# install-missing installs those of the packages $(1) that are missing,
# then touches the target (a stamp under $(CACHE)).
define install-missing
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi
	@mkdir -p $(CACHE) && touch $@
endef

deps: $(CACHE)/.deps
$(CACHE)/.deps: Makefile
	$(call install-missing,$(BUILD_DEBS))

# The nested hosts (package nested, govmm nested): on a machine with no
# usable /dev/kvm, make run and make test run govmm inside a Linux L1 that
# loads KVM's own SVM code under QEMU's TCG (-cpu max offers AMD-V); the
# VT-x host is Bochs. Their L1 image (Debian's kernel and KVM modules,
# busybox) is fetched with apt-get download by govmm nested itself and
# cached under $(CACHE)/nested; these are the emulators.
NESTED_DEBS := qemu-system-x86 bochs bochsbios vgabios grub-pc-bin grub-common xorriso mtools
nested-deps: $(CACHE)/.nested-deps
$(CACHE)/.nested-deps: Makefile
	$(call install-missing,$(NESTED_DEBS))

# Where KVM is: NESTED=auto (the default) runs in the nested AMD-V host
# unless this machine has a /dev/kvm on hardware virtualization (vmx or
# svm in /proc/cpuinfo). A KVM without it (kvm_pvm, which these machines
# have now and then) interprets guest kernel code: not KVM's SVM or VMX
# code, which is the judge (docs/hosts.md). NESTED=amd forces the nested
# host on any machine, NESTED=off runs on whatever /dev/kvm there is.
NESTED ?= auto
KVM_OK := $(shell (exec 3<>/dev/kvm) 2>/dev/null && grep -qw -e vmx -e svm /proc/cpuinfo && echo yes)
USE_NESTED := $(if $(filter amd,$(NESTED)),amd,$(if $(filter off,$(NESTED)),,$(if $(KVM_OK),,amd)))
NESTED_RUN = $(BIN) nested --host amd --timeout $(NESTED_TIMEOUT) --
NESTED_TIMEOUT ?= 2h
NO_KVM_RUN_NOTE = echo "make $@: no /dev/kvm on hardware virtualization here: running inside the nested AMD-V host (QEMU TCG -cpu max, Debian's kernel with kvm_amd: govmm nested; docs/hosts.md)"
test-deps: $(CACHE)/.test-deps
$(CACHE)/.test-deps: Makefile
	$(call install-missing,$(TEST_DEBS))

guests: deps
	@$(MAKE) -s -C guest/baremetal OUT=$(GUESTS)

# The u-root initramfs (u-root pinned in go.mod as a tool): a shell, basic
# commands and govmm's guest programs (guest/cmd). goshsmall: gosh reads
# plain lines after a "$ " prompt instead of running a full-screen line
# editor, which suits a serial console (and scripted input) better.
INITRAMFS  := $(CACHE)/initramfs.cpio
UROOT_CMDS := $(addprefix github.com/u-root/u-root/cmds/core/,init gosh ls cat echo shutdown poweroff dmesg uname mount umount mkdir sync) \
	$(addprefix ./,$(wildcard guest/cmd/*))
initramfs: $(INITRAMFS)
$(INITRAMFS): Makefile go.mod go.sum $(shell find guest/cmd guest/internal -name "*.go" -o -name "*.s")
	@mkdir -p $(dir $@)
	$(GO) tool u-root -go-build-tags goshsmall -o $@.tmp $(UROOT_CMDS)
	@mv $@.tmp $@

# govmm's guest kernel: Debian's linux-source-6.1, guest/linux/govmm.config
# and guest/linux/patches; rebuilt only when one of them changes.
kernel: deps
	@guest/linux/build.sh $(CACHE)

# Debian's stock cloud kernel, booted in CI beside govmm's own.
debian-kernel: deps
	@scripts/debian-kernel.sh $(CACHE)

# Debian's stock cloud kernel in all three modes stock Linux has (CI boots
# it in cluster mode only), side by side, one vCPU each.
boot-debian: build initramfs debian-kernel test-deps
	GOVMM_DEBIAN_MODES=off,physical,cluster GOVMM_LINUX_BOOT_LIMIT=80m \
	  $(if $(USE_NESTED),$(MAKE) -s nested-test RUN='^TestBootDebianKernel$$$$' NESTED_TEST_TIMEOUT=180m NESTED_TIMEOUT=200m,\
	  $(GO) test -count=1 -timeout 180m -v -run 'TestBootDebianKernel' ./tests/)

# Debian's default kernel (linux-image-amd64, xz+BCJ payload) in off,
# physical and cluster mode to the u-root shell, one vCPU each, the three
# boots side by side (not part of 'make test': about a quarter of an hour
# per boot on an emulating host, longer on a loaded one: each boot may run
# 80 minutes).
boot-debian-default: build initramfs deps
	@scripts/debian-kernel.sh $(CACHE) amd64
	GOVMM_DEBIAN_DEFAULT_KERNEL=$(CACHE)/debian-kernel-amd64/vmlinuz GOVMM_LINUX_BOOT_LIMIT=80m \
	  $(if $(USE_NESTED),$(MAKE) -s nested-test RUN='^TestBootDebianDefaultKernel$$$$' NESTED_TEST_TIMEOUT=180m NESTED_TIMEOUT=200m,\
	  $(GO) test -count=1 -timeout 180m -v -run 'TestBootDebianDefaultKernel' ./tests/)

build: deps
	@mkdir -p $(dir $(BIN))
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/govmm

# The minimal C VMM that is the floor of 'govmm bench-exits' and of
# 'govmm bench-rtt' (bench/floor: the exit floor and the IPI floor).
FLOORVMM := $(CACHE)/bin/floorvmm
FLOOR_SRC := $(wildcard bench/floor/*.c)
floorvmm: $(FLOORVMM)
$(FLOORVMM): $(FLOOR_SRC) $(wildcard bench/floor/*.h) $(CACHE)/.test-deps
	@mkdir -p $(dir $@)
	gcc -O2 -Wall -Wextra -pthread -o $@ $(FLOOR_SRC)

# The main job: boot govmm's Linux guest (x2APIC cluster mode with
# interrupt remapping, 2 vCPUs) on govmm's own APICs and print the boot
# phases and the exit accounting. MODE=off|physical|cluster|mixed, CPUS=N.
MODE ?= cluster
CPUS ?= 2
# Whose local APIC: govmm's own (the default) or KVM's in-kernel one
# (LAPIC=kvm: KVM's split irqchip, everything else govmm's), the reference.
LAPIC ?= govmm
# What "make run" types at the guest's u-root shell before powering it off:
# the IPI counters and microbenchmark, then the virtio-blk disk mounted
# and read, and blkbench's 4 KiB reads and writes on every CPU at once in
# the disk's scratch area (after its 16 MiB filesystem).
EXEC ?= irqstat; ipibench -n 20; mkdir /mnt; mount -t ext2 /dev/vda /mnt; cat /mnt/README; umount /mnt; blkbench -n 50 -rw both -offset 16777216 -size 8388608
run: build kernel initramfs disk $(if $(USE_NESTED),nested-deps)
	@$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE))
	$(if $(USE_NESTED),$(NESTED_RUN)) $(BIN) boot --x2apic=$(MODE) --lapic=$(LAPIC) --cpus $(CPUS) --disk $(DISK) --exec '$(EXEC)'

# The demonstration disk of make run and make shell: 24 MiB, an ext2
# filesystem of 16 MiB holding a README (mke2fs -d, e2fsprogs), a scratch
# area after it. Made once; the guest may change it.
DISK := $(CACHE)/disk.img
disk: $(DISK)
$(DISK): $(CACHE)/.deps
	@mkdir -p $(CACHE)/disk-root && echo "govmm's demonstration disk: virtio-blk, one queue per vCPU" > $(CACHE)/disk-root/README
	@PATH=$$PATH:/usr/sbin:/sbin; rm -f $@.tmp && truncate -s 24M $@.tmp && mke2fs -q -F -t ext2 -b 1024 -d $(CACHE)/disk-root $@.tmp 16M && mv $@.tmp $@

# The same guest with its u-root shell on this terminal (Ctrl-A x quits).
# It needs a /dev/kvm here (hardware virtualization, or a kvm_pvm that
# interprets guest kernel code): the nested host passes no terminal in.
shell: build kernel initramfs disk
	$(BIN) boot --x2apic=$(MODE) --cpus $(CPUS) --disk $(DISK) --timeout 0

# A shell command inside the nested AMD-V host, e.g.
#   make nested-shell CMD='$(BIN) host'
nested-shell: build nested-deps
	$(BIN) nested --host amd -- sh -c '$(CMD)'

# Guest user-space integrity (guest/cmd/ustress), not part of 'make test':
# Go code recursing (stack growth), heap patterns across GC, copies into
# fresh pages, registers (general, XMM, YMM, ZMM, opmask) held across
# interrupts, context switches and signals, discarded pages, child
# processes; once per vCPU count of USTRESS_CPUS, each boot required to
# end with "ustress: ok". It must pass on every host: on emulating ones the
# guest kernel's XSAVE family is completed by govmm (complete/xsave.go). The
# issue-12 proof is the default, 30 minutes on 2 and on 4 vCPUs.
USTRESS      ?= -t 30m
USTRESS_CPUS ?= 2 4
ustress: build kernel initramfs $(if $(USE_NESTED),nested-deps)
	@$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE);) for n in $(USTRESS_CPUS); do \
	  echo "== ustress $(USTRESS) on $$n vCPUs"; \
	  $(if $(USE_NESTED),$(NESTED_RUN)) $(BIN) boot --x2apic=$(MODE) --cpus $$n --console-input none --timeout 0 --exec 'ustress $(USTRESS)' | tee $(CACHE)/ustress-$$n.log; \
	  grep -q '^ustress: ok' $(CACHE)/ustress-$$n.log || { echo "ustress on $$n vCPUs did not end with 'ustress: ok'"; exit 1; }; \
	done

# Slow: govmm's kernel with BIG_CPUS vCPUs (16 and 64; BIG_CPUS=288 for
# x2APIC IDs above 255, reached through interrupt remapping) in cluster
# and mixed mode, to the u-root shell, irqstat, then poweroff (not part
# of 'make test'; nested AMD-V host: 288 vCPUs reach the shell in 3-4
# minutes per mode), with the exits per IPI and the IPIs' latencies of the
# whole run. Inside the nested AMD-V host without hardware
# virtualization.
BIG_CPUS ?= 16 64
boot-big: build kernel initramfs $(if $(USE_NESTED),nested-deps)
	@$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE);) for n in $(BIG_CPUS); do for m in cluster mixed; do \
	  echo "== $$m, $$n vCPUs"; \
	  $(if $(USE_NESTED),$(NESTED_RUN)) $(BIN) boot --quiet --exec irqstat --x2apic=$$m --cpus $$n --mem 1G --json $(CACHE)/boot-$$m-$$n.json | sed -n '/^govmm boot/,/^kernel log/p;/^exits per IPI/,/^$$/p' || exit 1; \
	done; done

# govmm's kernel in all four modes with TSC-deadline mode not advertised
# (what govmm does on VMX hosts whose KVM drops TSC_DEADLINE writes, see
# govmm host): each must reach the u-root shell on its one-shot LAPIC timer.
boot-no-tsc-deadline: build kernel initramfs $(if $(USE_NESTED),nested-deps)
	@$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE);) for m in off physical cluster mixed; do \
	  echo "== $$m, --tsc-deadline=off"; \
	  $(if $(USE_NESTED),$(NESTED_RUN)) $(BIN) boot --quiet --tsc-deadline=off --exec irqstat --x2apic=$$m --cpus 2 | sed -n '/^govmm boot/,/^kernel log/p;/msr_x2apic_timer_icr_write\|msr_tsc_deadline_write/p' || exit 1; \
	done

# The bare-metal IPI guest in x2APIC cluster mode on 4 vCPUs, with its
# measured sections (govmm exits with the guest's status: 1 is PASS).
run-baremetal: build guests
	@$(BIN) run --cpus 4 --timeout 5m $(GUESTS)/ipi.elf mode=x2apic-cluster rounds=2; \
	s=$$?; [ $$s -eq 1 ] || { echo "guest status $$s (1 is PASS)"; exit 1; }

# Slow (not part of 'make test'): the IPI storm guest with a million IPIs
# in each mode on 4 vCPUs, each checked exactly against govmm's accounting
# (TestStorm sends 100,000 per mode). Inside the nested AMD-V host 100,000
# IPIs take 2.5-5 minutes per mode, so a million in each of the 12 modes
# and delivery paths takes 5-10 hours (NESTED_TEST_TIMEOUT 12h).
# STORM_COUNT=N for another count, STORM_RUN=TestStorm/plain/x2apic-phys
# for one mode, STORM_CPUS=C for C vCPUs instead of 4 (up to 1024: 128 of
# them send, all receive; above 255 the x2APIC and PV modes only).
STORM_COUNT ?= 1000000
STORM_RUN   ?= TestStorm
STORM_ENV    = GOVMM_STORM_COUNT=$(STORM_COUNT) $(if $(STORM_CPUS),GOVMM_STORM_CPUS=$(STORM_CPUS))
storm: guests
	$(if $(USE_NESTED),$(STORM_ENV) $(MAKE) -s nested-test RUN='$(STORM_RUN)' NESTED_TEST_TIMEOUT=12h NESTED_TIMEOUT=13h,\
	  $(STORM_ENV) $(GO) test -race -count=1 -timeout 4h -run '$(STORM_RUN)' -v ./tests/)

# Slow (not part of 'make test', which fuzzes for 2 minutes from seed 1):
# the in-guest fuzzer (guest/baremetal/fuzz.c, TestGuestFuzz) on 4 vCPUs
# under the race detector, one seed after another (FUZZ_SEEDTIME seconds
# each, from FUZZ_SEED) for FUZZTIME (60s unless given: FUZZTIME=30m for
# the long run), INIT and SIPI included, as in make test's run
# (FUZZ_ARGS=init=0 leaves them out). Inside the nested AMD-V host
# without hardware virtualization. A failing seed
# is printed with the govmm run command that replays it.
FUZZ_SEED     ?= 1000
FUZZ_SEEDTIME ?= 60s
FUZZ_ARGS     ?=
guestfuzz: guests
	GOVMM_FUZZTIME=$(FUZZTIME) GOVMM_FUZZ_SEED=$(FUZZ_SEED) GOVMM_FUZZ_SEEDTIME=$(FUZZ_SEEDTIME) GOVMM_FUZZ_ARGS='$(FUZZ_ARGS)' \
		$(if $(USE_NESTED),$(MAKE) -s nested-test RUN='^TestGuestFuzz$$$$' NESTED_TEST_TIMEOUT=24h NESTED_TIMEOUT=25h,\
		$(GO) test -race -count=1 -timeout 24h -run TestGuestFuzz -v ./tests/)

# The same fuzz inside the nested VT-x host (Bochs, kvm_intel), for
# FUZZTIME_VTX (10m) of the L1's time, INIT and SIPI included. Bochs's
# clock runs by instruction count (ips=50000000, sync=none) and Bochs runs
# slower than that here, so L1 time runs several times slower than the
# wall's: 10 minutes of fuzzing take hours (4 seeds, 2.2 minutes of L1
# time, took ~20 minutes on 2026-12-04), hence the long timeout. The
# tests binary there is built static without the race detector (Bochs's
# L1 is a busybox; -race needs cgo); the AMD-V run above is the one under
# -race.
FUZZTIME_VTX ?= 10m
guestfuzz-vtx: guests
	@GOVMM_FUZZTIME=$(FUZZTIME_VTX) GOVMM_FUZZ_SEED=$(FUZZ_SEED) GOVMM_FUZZ_SEEDTIME=$(FUZZ_SEEDTIME) GOVMM_FUZZ_ARGS='$(FUZZ_ARGS)' \
		$(MAKE) -s nested-vtx VTX_RUN='^TestGuestFuzz$$$$' VTX_SKIP= VTX_MODES= VTX_TIMEOUT=6h

# The exits-per-IPI table of the bare-metal IPI guest (docs/figures.md's "Exits per
# IPI (bare metal)"): every mode, delivery path and multicast size on 65
# vCPUs, about a minute here. BENCH_IPI_FLAGS adds flags (e.g. --cpus 1024
# --modes x2apic-cluster,pv --dests 1,16,1023).
bench-ipi: build guests $(if $(USE_NESTED),nested-deps)
	@$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE); $(NESTED_RUN)) $(BIN) bench-ipi --out $(CACHE)/bench-ipi $(BENCH_IPI_FLAGS)

# The IPI round trip of the bare-metal round-trip guest (docs/figures.md's "IPI
# round trips and halt polling"): modes x delivery paths, halted and
# spinning receiver, halt polling on and off side by side. BENCH_RTT_FLAGS
# adds flags (e.g. --rounds 2000 --gap 20000).
bench-rtt: build guests floorvmm $(CACHE)/.bench-deps $(if $(USE_NESTED),nested-deps)
	@$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE); $(NESTED_RUN)) $(BIN) bench-rtt --out $(CACHE)/bench-rtt $(BENCH_RTT_FLAGS)

# The three upstream experiments behind govmm's modes (docs/seeds.md), each in
# the post's own shape with its statistics, at their default sizes (mixed
# mode on 64 vCPUs, the PV send-IPI against the native IPI on 2, x2APIC
# without remapping on 32). SEEDS picks one (mixed, pv-ipi, x2apic);
# SEEDS_FLAGS adds flags (e.g. --samples 12 --loops 50).
SEEDS ?= all
seeds: build kernel initramfs $(if $(USE_NESTED),nested-deps)
	@$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE); $(NESTED_RUN)) $(BIN) bench-seeds $(SEEDS) --out $(CACHE)/seeds$(SEEDS_OUT) $(SEEDS_FLAGS)

# Mixed mode at the sizes of the post's machine class: 288 and 512 vCPUs
# (APIC IDs above 255: cluster and mixed through the remapping unit,
# physical too, told x2apic_phys). As long as they take: hours in the
# nested host.
seeds-288:
	@$(MAKE) -s seeds SEEDS=mixed SEEDS_OUT=-288 SEEDS_FLAGS='--cpus 288 --samples 5 --loops 5 --timeout 6h $(SEEDS_FLAGS)' NESTED_TIMEOUT=12h
seeds-512:
	@$(MAKE) -s seeds SEEDS=mixed SEEDS_OUT=-512 SEEDS_FLAGS='--cpus 512 --samples 5 --loops 5 --timeout 8h $(SEEDS_FLAGS)' NESTED_TIMEOUT=24h

$(CACHE)/.bench-deps: Makefile
	$(call install-missing,$(BENCH_DEBS))

# The cost of one exit under govmm over the floor of a minimal C VMM
# (docs/figures.md's "The exit floor"): a port read, an MMIO read and an x2APIC MSR
# write, 20,000 each, five repetitions alternating between the two.
# BENCH_EXITS_FLAGS adds flags (e.g. --count 100000 --reps 9).
bench-exits: build guests floorvmm $(if $(USE_NESTED),nested-deps)
	@$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE); $(NESTED_RUN)) $(BIN) bench-exits --out $(CACHE)/bench-exits $(BENCH_EXITS_FLAGS)

# govmm's own instructions per exit (BenchmarkExit under valgrind's
# callgrind; scripts/exit-instructions.sh): what a nested VT-x exit's
# excess over the floor follows, on any machine, no KVM needed.
exit-instructions: $(CACHE)/.valgrind
	@mkdir -p $(CACHE)/bin && $(GO) test -c -o $(CACHE)/bin/vcpu.test ./vcpu
	@scripts/exit-instructions.sh $(CACHE)/bin/vcpu.test
$(CACHE)/.valgrind: Makefile
	$(call install-missing,valgrind)

# The distinct pages govmm touches per exit (bench-exits under valgrind's
# lackey; scripts/exit-pages.sh): what a nested AMD-V exit's excess over
# the floor follows (QEMU's TCG flushes its software TLB at each world
# switch). Needs a /dev/kvm, any (this machine's kvm_pvm will do).
exit-pages: build guests floorvmm $(CACHE)/.valgrind
	@scripts/exit-pages.sh $(BIN) $(CACHE)/bin/floorvmm

# The same per step of an x2APIC IPI round trip, beside the Go floor's
# (bench-rtt and gofloor under lackey, the trace split by thread;
# scripts/rtt-pages.sh): the sender's ICR exit, the receiver's HLT exit
# and wake-up, its EOI exit, the kicked entry.
# govmm is built static for it, as gofloor is: under valgrind the cgo
# build's bench-rtt took ten minutes to exit, spinning in the runtime's
# locks, where the static one's whole run takes two.
rtt-pages: guests gofloor $(CACHE)/.valgrind
	@mkdir -p $(CACHE)/rtt-pages && CGO_ENABLED=0 $(GO) build -o $(CACHE)/rtt-pages/govmm ./cmd/govmm
	@scripts/rtt-pages.sh $(CACHE)/rtt-pages/govmm $(CACHE)/nested/vtx/gofloor $(GUESTS)/rttloop.bin

# bench-exits inside the nested VT-x host (Bochs, kvm_intel): govmm and the
# floor VMM built static (Bochs's L1 is a busybox), side by side there.
bench-exits-vtx: build guests nested-deps
	@mkdir -p $(VTX_DIR) && CGO_ENABLED=0 $(GO) build -o $(VTX_DIR)/govmm ./cmd/govmm
	@gcc -O2 -static -pthread -o $(VTX_DIR)/floorvmm $(FLOOR_SRC)
	@$(BIN) nested --host intel --timeout 60m --file $(VTX_DIR) --file $(GUESTS) -- \
	  $(VTX_DIR)/govmm bench-exits --floor $(VTX_DIR)/floorvmm --blob $(GUESTS)/floorloop.bin --guest $(GUESTS)/floor.elf \
	  --out /tmp/bench-exits $(or $(BENCH_EXITS_FLAGS),--count 2000 --reps 3)

# bench-rtt inside the nested VT-x host, govmm and the floor VMM built
# static as above; Bochs's L1 has no QEMU, so no in-kernel LAPIC
# reference there. BENCH_RTT_FLAGS replaces the small default.
bench-rtt-vtx: build guests nested-deps
	@mkdir -p $(VTX_DIR) && CGO_ENABLED=0 $(GO) build -o $(VTX_DIR)/govmm ./cmd/govmm
	@gcc -O2 -static -pthread -o $(VTX_DIR)/floorvmm $(FLOOR_SRC)
	@$(BIN) nested --host intel --timeout 120m --file $(VTX_DIR) --file $(GUESTS) -- \
	  $(VTX_DIR)/govmm bench-rtt --qemu '' --floor $(VTX_DIR)/floorvmm --blob $(GUESTS)/floorloop.bin --ipi-blob $(GUESTS)/rttloop.bin \
	  --guest $(GUESTS)/rtt.elf --out /tmp/bench-rtt $(or $(BENCH_RTT_FLAGS),--modes x2apic-phys,xapic-phys --delivery plain --rounds 200 --reps 1)

# The C floor and the Go floor (bench/gofloor: the same least VMM in Go,
# nothing of govmm's but its ioctl package) side by side on the same guest
# loops (scripts/floors.sh, FLOORS_REPS runs): what Go's runtime costs a
# VMM whose exits all come back to user space, with no yield (GO), with
# govmm's 8 ms yield (GOY) and with that and KVM_RUN without entersyscall
# (GOYR, a measurement only: docs/exit-cost.md). floors runs them in the
# nested AMD-V host (or on this machine's KVM), floors-vtx in the nested
# VT-x host; each ends with the table (scripts/floors-summary.py).
FLOORS_REPS ?= 3
FLOORS_ARGS = $(GUESTS) $(FLOORS_REPS) 1000 $(2) C=$(1)/floorvmm GO=$(1)/gofloor "GOY=$(1)/gofloor -yield 8ms" "GOYR=$(1)/gofloor -yield 8ms -raw"
gofloor: $(CACHE)/nested/vtx/gofloor
$(CACHE)/nested/vtx/gofloor: $(wildcard bench/gofloor/*.go) $(wildcard kvm/*.go)
	@mkdir -p $(CACHE)/nested/vtx && CGO_ENABLED=0 $(GO) build -o $@ ./bench/gofloor
floors floors-vtx: build guests gofloor nested-deps
	@gcc -O2 -static -pthread -o $(CACHE)/nested/vtx/floorvmm $(FLOOR_SRC)
	@$(if $(filter floors-vtx,$@),$(BIN) nested --host intel --timeout 120m --file $(CACHE)/nested/vtx --file $(GUESTS) --file scripts/floors.sh --,$(if $(USE_NESTED),$(NESTED_RUN))) \
	  sh scripts/floors.sh $(call FLOORS_ARGS,$(CACHE)/nested/vtx,$(if $(filter floors-vtx,$@),2000,20000)) | tee $(CACHE)/$@.log
	@scripts/floors-summary.py $(CACHE)/$@.log

# virtio-blk against the image read directly on the host, same pattern, one
# run (scripts/bench-blk.sh): IOPS ratio, exits and device-interrupt exits
# per I/O at queue depth 1 and 32. MODE as for make run.
bench-blk: build kernel initramfs disk $(if $(USE_NESTED),nested-deps)
	@$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE);) GO=$(GO) GUEST_RUN='$(if $(USE_NESTED),$(NESTED_RUN))' scripts/bench-blk.sh $(CACHE) $(BIN) $(MODE)

vet:
	$(GO) vet ./...

# staticcheck (its default checks, all clean) and the function-length
# limit (scripts/funclen.go: functions over FUNCLEN_MAX lines must be
# listed, with why, in scripts/funclen-exceptions.txt); make test runs
# both. staticcheck is installed once into the cache from the Go module
# proxy, at a pinned version.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CACHE)/bin/staticcheck-$(STATICCHECK_VERSION)
FUNCLEN_MAX := 60
$(STATICCHECK):
	@mkdir -p $(CACHE)/bin/sc && GOBIN=$(CACHE)/bin/sc $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && mv $(CACHE)/bin/sc/staticcheck $@
lint: $(STATICCHECK)
	@echo "== staticcheck ./..." && $(STATICCHECK) ./...
	@echo "== funclen: functions over $(FUNCLEN_MAX) lines" && $(GO) run scripts/funclen.go -max $(FUNCLEN_MAX) -exceptions scripts/funclen-exceptions.txt .

# The test command (README, .ci/run): unit tests, fuzz seeds and the
# integration tests that run every bare-metal guest and Linux boot on
# KVM, every package (vCPU threads share the APIC, accounting and device
# state) under the race detector; then short fuzzing runs of the register
# interfaces; then one summary line: tests run, where, skipped and why.
# With no usable /dev/kvm here the packages that need KVM are built here
# (go test -c -race) and run again inside the nested AMD-V host, where
# none of their tests skips for want of KVM (make nested-test alone).
# When this machine's /dev/kvm is kvm_pvm's (it interprets guest kernel
# code, docs/hosts.md), the tests of the paths govmm takes only on such a
# host (PVM_RUN: they skip in the nested hosts, which run guest kernels on
# KVM's SVM and VMX code) run here on it as well, logged to pvm.json, and
# the summary says how many passed where; GOVMM_EXPECT_EMULATION=1 makes
# them fail there if govmm's own probe finds no emulation. A test skipped for want of
# /dev/kvm fails make test, whatever NESTED says, unless asked for in so
# many words: ALLOW_NO_KVM=1 (e.g. NESTED=off on a machine without KVM,
# where every guest test skips).
ALLOW_NO_KVM ?=
KVM_PVM := $(shell (exec 3<>/dev/kvm) 2>/dev/null && [ -d /sys/module/kvm_pvm ] && echo yes)
PVM_HERE := $(if $(USE_NESTED),$(KVM_PVM))
PVM_RUN ?= ^(TestDoorbellForgery|TestUnhandledInstruction|TestSyscallDoorbell|TestInt3Recovery|TestXSAVEFamily)$$
NESTED_PKGS := ./tests/ ./kvm/ ./hostprobe/ ./cmd/govmm/ ./bench/gofloor/
# The rest run here (the nested packages run whole inside the nested host).
MACHINE_PKGS = $(filter-out $(patsubst ./%/,$(MODULE)/%,$(NESTED_PKGS)),$(shell $(GO) list ./...))
MODULE      := github.com/govmm/govmm
TESTBIN     := $(CACHE)/nested/testbin
TESTLOG     := $(CACHE)/test-log
T2J         := $(CACHE)/bin/test2json
SUMMARY     := $(CACHE)/bin/testsummary
RUN         ?=
$(T2J):
	@mkdir -p $(dir $@) && $(GO) build -o $@ cmd/test2json
$(SUMMARY): scripts/testsummary/main.go
	@mkdir -p $(dir $@) && $(GO) build -o $@ ./scripts/testsummary
test-tools: $(T2J) $(SUMMARY)

test: test-deps build guests floorvmm initramfs kernel debian-kernel vet lint test-tools $(if $(USE_NESTED),nested-deps)
	@rm -rf $(TESTLOG) && mkdir -p $(TESTLOG); rc=0; \
	$(if $(USE_NESTED),$(NO_KVM_RUN_NOTE) for the packages that need KVM;) \
	echo "== go test -race $(if $(USE_NESTED),(all but $(NESTED_PKGS)),./...) (here)"; \
	$(GO) test -race -count=1 -timeout 75m -json $(if $(USE_NESTED),$(MACHINE_PKGS),./...) | $(SUMMARY) filter $(TESTLOG)/machine.json || rc=1; \
	$(if $(PVM_HERE),echo "== go test -race -run '$(PVM_RUN)' ./tests/ (here, on this machine's kvm_pvm: the paths govmm takes only where KVM interprets guest kernel code)"; \
	  GOVMM_EXPECT_EMULATION=1 $(GO) test -race -count=1 -timeout 30m -json -run '$(PVM_RUN)' ./tests/ | $(SUMMARY) filter -tests $(TESTLOG)/pvm.json || rc=1;) \
	$(if $(USE_NESTED),$(MAKE) -s nested-test NESTED_VTX=1 TESTLOG=$(TESTLOG) || rc=1;) \
	echo "== fuzzing"; $(MAKE) -s fuzz FUZZTIME=10s || rc=1; \
	$(SUMMARY) total -nested-host "the nested hosts" $(if $(PVM_HERE),-pvm $(TESTLOG)/pvm.json) $(if $(filter 1,$(ALLOW_NO_KVM)),-allow-no-kvm) \
	  $(TESTLOG)/machine.json $(if $(USE_NESTED),$(TESTLOG)/nested.json $(TESTLOG)/vtx.json) || rc=1; \
	exit $$rc

# The tests of the packages that need KVM, built here and run inside the
# nested AMD-V host under the race detector, in two L1s side by side (one
# core each: QEMU's TCG runs single-threaded), split by their measured
# times (about 48 minutes in one L1, 38 of them TestStorm's matrix): the
# storm's plain half with everything else, its avic half alone, then,
# with NESTED_VTX=1 (make test), the VT-x subset after it. RUN=regexp runs
# some tests only, in one L1. Each L1's JSON events go to its own log;
# nested.json is all of them.
NESTED_SHARD = { RUN='$(2)' SKIP='$(3)' $(NESTED_RUN) scripts/nested-tests.sh $(TESTLOG)/nested-$(1).json $(T2J) $(NESTED_TEST_TIMEOUT) $(TESTBIN) $(MODULE)/ $(4); \
	   echo $$? > $(TESTLOG)/nested-$(1).rc; } | $(SUMMARY) filter -tests /dev/null
NESTED_VTX ?=
NESTED_TEST_TIMEOUT ?= 60m
# The second L1's tests (go test's -run syntax, whose top-level
# alternatives each split at slashes; the first L1 skips them): TestStorm's
# avic half (18 minutes there) and three snapshot tests (3 minutes). Debian's default kernel stays
# on request (make boot-debian-default): in the nested host its three
# boots once took 4-9 minutes and once had not ended after 39 (open).
SECOND_SHARD := ^TestStorm$$/^avic$$|^(TestSnapshotOnSignal|TestFuzzSnapshot|TestSnapshotCLI)$$
nested-test: build guests floorvmm initramfs kernel debian-kernel test-deps test-tools nested-deps
	@case '$(abspath $(TESTLOG))/' in '$(abspath $(CACHE))'/*) ;; /tmp/*) echo "make nested-test: TESTLOG=$(TESTLOG) is under /tmp, which is the nested host's own tmpfs: its logs would not come back (use a directory under $(CACHE) or the checkout)"; exit 2;; esac
	@mkdir -p $(TESTLOG) $(TESTBIN) && rm -f $(TESTLOG)/nested*.json $(TESTLOG)/nested*.rc
	$(GO) test -c -race -o $(TESTBIN)/ $(NESTED_PKGS)
	@echo "== the guest tests inside the nested AMD-V host: $(NESTED_PKGS)"
	@if [ -n '$(RUN)' ]; then \
	  $(call NESTED_SHARD,all,$(RUN),,$(patsubst ./%/,$(MODULE)/%,$(NESTED_PKGS))); \
	else \
	  { $(call NESTED_SHARD,second,$(SECOND_SHARD),,$(MODULE)/tests); \
	    $(if $(NESTED_VTX),$(MAKE) -s nested-vtx TESTLOG=$(TESTLOG) || echo 1 > $(TESTLOG)/nested-vtx.rc;) } & \
	  $(call NESTED_SHARD,first,,$(SECOND_SHARD),$(patsubst ./%/,$(MODULE)/%,$(NESTED_PKGS))); \
	  wait; \
	fi; \
	cat $(TESTLOG)/nested-*.json > $(TESTLOG)/nested.json; rc=0; \
	for f in $(TESTLOG)/nested-*.rc; do s=$$(cat $$f); [ "$$s" = 0 ] || { echo "make nested-test: $$(basename $$f .rc) ended with status $$s"; rc=1; }; done; \
	exit $$rc

# The nested VT-x host (Bochs, kvm_intel; govmm nested --host intel):
# govmm host with VMX's preemption timer on and off, the bare-metal guests
# of VTX_RUN (the tests package, built static: Bochs's L1 is a busybox
# initramfs with no shared files) and govmm's kernel to the u-root shell
# in VTX_MODES. CI runs this subset (make test, after the AMD-V suite);
# make nested-vtx-full runs every bare-metal guest test and all four modes.
# The seeds' PV send-IPI experiment inside the nested VT-x host (Bochs,
# kvm_intel; the others are too large for its one slow CPU): govmm's
# kernel and initramfs copied in at their own paths.
seeds-vtx: build kernel initramfs nested-deps
	@mkdir -p $(VTX_DIR) && CGO_ENABLED=0 $(GO) build -o $(VTX_DIR)/govmm ./cmd/govmm
	@GOVMM_CACHE=$(CACHE) $(BIN) nested --host intel --timeout 240m --file $(VTX_DIR) --file $(CACHE)/linux/vmlinux --file $(CACHE)/initramfs.cpio -- \
	  $(VTX_DIR)/govmm bench-seeds pv-ipi --out /tmp/seeds $(or $(SEEDS_FLAGS),--loops 500)

VTX_DIR   := $(CACHE)/nested/vtx
VTX_RUN   ?= ^(TestTimerModes|TestTimerWithoutTSCDeadline|TestIOAPIC|TestSMPBringUp|TestAPICBase|TestLAPICDifferential|TestKVMLAPICRefuses|TestPauseMidStorm|TestHandoverMidStorm|TestLinuxHandover)$$
# Left out of CI's subset: on the VT-x host an NMI is now and then never
# delivered though KVM_NMI took it (ipi.elf's section 5 in
# TestIPIExitCounts, the first round of nmi.elf in TestMultipleNMI):
# Bochs 2.7 keeps virtual-NMI blocking in one flag per CPU, not per VMCS,
# fixed in Bochs 2.8 (docs/hosts.md); make nested-vtx-full runs them.
VTX_SKIP  ?=
VTX_MODES ?= cluster
# cmd/govmm's tests the VT-x host runs (the package runs whole in the
# nested AMD-V host): those whose KVM-LAPIC side counts IPIs exactly,
# which KVM's LAPIC there delivers twice now and then (docs/hosts.md).
VTX_CMD_RUN ?= ^TestBenchRTTOnKVMLAPIC$$
VTX_TIMEOUT ?= 80m
VTX_FULL_RUN := ^(TestLAPICDifferential|TestKVMLAPICRefuses|TestMultipleNMI|TestIPIExitCounts|TestIPIExitCountsAVIC|TestTimerModes|TestTimerWithoutTSCDeadline|TestIOAPIC|TestInterruptRemapping|TestPVEOI|TestSMPBringUp|TestAPICBase|TestMultibootCommandLine|TestNoInterruptLostToMSRFault|TestInt3Recovery|TestXSAVEFamily|TestStorm|TestBusMap|TestCLIRunJSON|TestHostSignalsCostNoExit)$$
nested-vtx: guests kernel initramfs build nested-deps test-tools
	@mkdir -p $(VTX_DIR) $(TESTLOG) && rm -f $(TESTLOG)/vtx.json
	@CGO_ENABLED=0 $(GO) build -o $(VTX_DIR)/govmm ./cmd/govmm
	@CGO_ENABLED=0 $(GO) build -o $(VTX_DIR)/test2json cmd/test2json
	@CGO_ENABLED=0 $(GO) test -c -o $(VTX_DIR)/tests.test ./tests/
	@CGO_ENABLED=0 $(GO) test -c -o $(VTX_DIR)/govmm.test ./cmd/govmm/
	@echo "== inside the nested VT-x host (Bochs, kvm_intel): govmm host, $(VTX_RUN), cmd/govmm's $(VTX_CMD_RUN), boots in $(VTX_MODES)"
	@{ GOVMM_BIN=$(VTX_DIR)/govmm GOVMM_STORM_COUNT=$(or $(STORM_COUNT_VTX),10000) $(BIN) nested --host intel --timeout $(VTX_TIMEOUT) \
	  --file $(VTX_DIR) --file $(GUESTS) --file $(CACHE)/linux/vmlinux --file $(CACHE)/initramfs.cpio --file scripts/vtx-suite.sh \
	  -- sh scripts/vtx-suite.sh $(VTX_DIR)/govmm $(VTX_DIR)/tests.test $(VTX_DIR)/test2json '$(VTX_RUN)' '$(VTX_SKIP)' '$(VTX_MODES)' \
	  $(VTX_DIR)/govmm.test '$(VTX_CMD_RUN)'; \
	  echo $$? > $(TESTLOG)/vtx.rc; } | $(SUMMARY) filter -tests $(TESTLOG)/vtx.json; \
	  rc=$$(cat $(TESTLOG)/vtx.rc); [ "$$rc" = 0 ] || { echo "make nested-vtx: the VT-x run ended with status $$rc"; exit 1; }
nested-vtx-full:
	@$(MAKE) -s nested-vtx VTX_RUN='$(VTX_FULL_RUN)' VTX_SKIP= VTX_MODES='off physical cluster mixed'

FUZZTIME ?= 60s
FUZZ_PKGS := ./vlapic/ ./vioapic/ ./vintremap/ ./pci/ ./virtio/
fuzz:
	@for p in $(FUZZ_PKGS); do FUZZTIME=$(FUZZTIME) scripts/fuzz.sh $$p || exit 1; done

bench:
	$(GO) test -run=NONE -bench=. -benchmem ./vlapic/

clean:
	rm -rf $(CACHE)
