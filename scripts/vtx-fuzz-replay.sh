#!/bin/sh
# Replays one in-guest fuzz seed (guest/baremetal/fuzz.c) with INIT and
# SIPI in, inside the nested VT-x host, and dumps every vCPU (SIGUSR2:
# registers, RIPs named, each vCPU's last events) twice while it runs:
# the open VT-x seeds of docs/guest-attacks.md (1004, 1005 did not end
# there within 4 minutes of the L1's time). Run from the module's root:
#
#   make guests && mkdir -p $CACHE/nested/vtx && \
#   CGO_ENABLED=0 go build -o $CACHE/nested/vtx/govmm ./cmd/govmm && \
#   cp scripts/vtx-fuzz-replay.sh $CACHE/nested/vtx/ && \
#   $CACHE/bin/govmm nested --host intel --timeout 40m --file $CACHE/nested/vtx \
#     --file $CACHE/guest -- sh $CACHE/nested/vtx/vtx-fuzz-replay.sh $CACHE/guest \
#     $CACHE/nested/vtx/govmm 1004
#
# ($CACHE is ~/.cache/govmm unless GOVMM_CACHE says otherwise.) The whole
# console is printed: the fuzz writes garbage to the serial port, so the
# guest's own "# t=Ns" lines may start mid-line.
G=$1 B=$2 s=$3
dd if=/dev/zero of=/tmp/scratch.img bs=1M count=4 2>/dev/null
echo "== vtx fuzz seed $s"
"$B" run --cpus 4 --iommu --pv-ipi --pv-eoi --virtio-console --disk /tmp/scratch.img,rw \
	--timeout 170s --stall-dump 30s "$G/fuzz.elf" seed="$s" secs=60 >/tmp/seed.log 2>&1 &
p=$!
sleep 100 && kill -USR2 $p 2>/dev/null
sleep 40 && kill -USR2 $p 2>/dev/null
wait $p
echo "== vtx fuzz seed $s: govmm's status $?"
cat -v /tmp/seed.log
