#!/usr/bin/env bash
# Fetch one of Debian's stock kernels, whatever version its meta-package
# names today, without installing anything into the system:
#   debian-kernel.sh CACHE_DIR            linux-image-cloud-amd64 -> CACHE_DIR/debian-kernel/vmlinuz
#   debian-kernel.sh CACHE_DIR amd64      linux-image-amd64       -> CACHE_DIR/debian-kernel-amd64/vmlinuz
# The cloud flavour's payload is LZ4; the default flavour's is xz with the
# x86 BCJ filter (what loader/xzbcj.go decompresses). Idempotent: a kernel
# already there for the same package version is kept.
set -euo pipefail
cache=${1:?usage: debian-kernel.sh CACHE_DIR [cloud-amd64|amd64]}
flavour=${2:-cloud-amd64}
case $flavour in
  cloud-amd64) out=$cache/debian-kernel ;;
  amd64)       out=$cache/debian-kernel-amd64 ;;
  *) echo "debian-kernel.sh: unknown flavour $flavour (cloud-amd64 or amd64)" >&2; exit 1 ;;
esac
meta=linux-image-$flavour
mkdir -p "$out"
resolve() { apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'; }
pkg=$(resolve)
if [ -z "$pkg" ]; then
  apt-get update -qq
  pkg=$(resolve)
fi
[ -n "$pkg" ] || { echo "debian-kernel.sh: cannot resolve $meta" >&2; exit 1; }
if [ -f "$out/vmlinuz" ] && [ "$(cat "$out/package" 2>/dev/null)" = "$pkg" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "$pkg" 2>/dev/null)
dpkg-deb --fsys-tarfile "$tmp"/"$pkg"_*.deb | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*'
cp "$tmp"/boot/vmlinuz-* "$out/vmlinuz"
echo "$pkg" > "$out/package"
echo "debian-kernel: $pkg"
