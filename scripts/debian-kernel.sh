#!/usr/bin/env bash
# Fetch Debian's stock cloud kernel (linux-image-cloud-amd64, whatever version
# the meta-package names today) into $1/debian-kernel/vmlinuz, without
# installing anything into the system. Idempotent: a kernel already there
# for the same package version is kept.
set -euo pipefail
cache=${1:?usage: debian-kernel.sh CACHE_DIR}
out=$cache/debian-kernel
mkdir -p "$out"
pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$pkg" ]; then
  apt-get update -qq
  pkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
fi
[ -n "$pkg" ] || { echo "debian-kernel.sh: cannot resolve linux-image-cloud-amd64" >&2; exit 1; }
if [ -f "$out/vmlinuz" ] && [ "$(cat "$out/package" 2>/dev/null)" = "$pkg" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "$pkg" 2>/dev/null)
dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/x"
cp "$tmp"/x/boot/vmlinuz-* "$out/vmlinuz"
echo "$pkg" > "$out/package"
echo "debian-kernel: $pkg"
