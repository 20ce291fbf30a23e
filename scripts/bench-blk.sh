#!/usr/bin/env bash
# bench-blk: virtio-blk against the image file read directly on the host,
# with the same pattern, in one run (make bench-blk).
#
# blkbench (guest/cmd/blkbench) runs first on this host against a scratch
# copy of the demonstration disk (O_DIRECT, one thread per CPU and
# queue-depth slot, 4 KiB random reads and writes in the scratch area),
# then in the guest against the same image as its virtio-blk disk, at
# queue depth 1 and 32, then on the host again; the ratio is the guest's
# IOPS over the mean of the two host runs. Times on an emulating host say
# little about real hardware (the guest kernel is interpreted): the exit
# and interrupt counts per I/O are the portable figures.
# GUEST_RUN, if set, is the command the guest's boot runs under (make's
# nested host prefix where there is no hardware virtualization).
set -euo pipefail
cache=$1 bin=$2 mode=${3:-cluster} n=${4:-64}
work=$cache/bench-blk
mkdir -p "$work"
"${GO:-go}" build -o "$work/blkbench" ./guest/cmd/blkbench
cp "$cache/disk.img" "$work/disk.img"
off=$((16 << 20)) size=$((8 << 20))
host() { "$work/blkbench" -marker=false -dev "$work/disk.img" -n "$n" -depth "$1" -rw both -offset $off -size $size 2>/dev/null | grep -E 'iops|seconds'; }
iops() { awk '/iops/ {print $3}'; }
declare -A h1 h2 g
for d in 1 32; do h1[$d]=$(host $d | iops); done
out=$work/guest.log
# The console (with blkbench's lines) and the report go to the log.
${GUEST_RUN:-} "$bin" boot --x2apic="$mode" --cpus 2 --disk "$work/disk.img" --exec \
	"blkbench -n $((n / 4)) -depth 1 -rw both -offset $off -size $size; blkbench -n $((n / 4)) -depth 32 -rw both -offset $off -size $size" \
	> "$out" 2>&1 || { tail -40 "$out"; exit 1; }
for d in 1 32; do h2[$d]=$(host $d | iops); done
tr -d '\r' < "$out" | grep -E '^blkbench: ' > "$work/guest.txt" || true
printf '%-6s %12s %12s %10s %10s %12s\n' depth host-iops guest-iops ratio exits/io irq-exits/io
for d in 1 32; do
	blk=$(awk -v d=$d '/^blkbench: dev/ {cur=($9==d)} cur' "$work/guest.txt")
	gi=$(echo "$blk" | awk '/iops/ {print $3}')
	ex=$(echo "$blk" | awk '/exits\/io/ && !/irq/ {print $3}')
	ix=$(echo "$blk" | awk '/irq-exits\/io/ {print $3}')
	hm=$(awk -v a="${h1[$d]}" -v b="${h2[$d]}" 'BEGIN {print (a + b) / 2}')
	printf '%-6s %12.0f %12s %10s %10s %12s\n' "$d" "$hm" "$gi" "$(awk -v g="$gi" -v h="$hm" 'BEGIN {printf "%.5f", g / h}')" "$ex" "$ix"
done
echo "guest blkbench output: $work/guest.txt; the boot's report: $out"
