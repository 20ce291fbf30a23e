#!/usr/bin/env bash
# Build govmm's guest Linux kernel (Debian linux-source-6.1 + patches/ +
# govmm.config) into CACHE/linux/{vmlinux,bzImage,config}.
#
#   guest/linux/build.sh [CACHE]        (or GOVMM_CACHE=CACHE guest/linux/build.sh)
#
# Idempotent: rebuilds only when the source package version, govmm.config,
# patches/*.patch or this script change (hash stamp in CACHE/linux/stamp).
# Installs its build dependencies with apt-get only when missing (root, Debian 12).
# Environment: GOVMM_LINUX_JOBS (default: nproc), GOVMM_LINUX_FORCE=1 (ignore stamp).
set -euo pipefail

# All in one function: bash reads a script as it runs, so an edit of this
# file during a (long) build must not change what the running build does.
main() {
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${1:-${GOVMM_CACHE:-}}
if [ -z "$CACHE" ]; then
	echo "usage: $0 CACHE_DIR   (or set GOVMM_CACHE)" >&2
	exit 2
fi
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)

PKG=linux-source-6.1
FRAG=$HERE/govmm.config
OUT=$CACHE/linux               # results
WORK=$CACHE/linux-build        # package, source tree, object tree
SRC=$WORK/src
OBJ=$WORK/obj
JOBS=${GOVMM_LINUX_JOBS:-$(nproc)}

log() { echo "linux: $*"; }
die() { echo "linux: ERROR: $*" >&2; exit 1; }

mkdir -p "$OUT" "$WORK"
# One build at a time per cache.
exec 9>"$WORK/.lock"
flock 9

shopt -s nullglob
PATCHES=("$HERE"/patches/*.patch)
shopt -u nullglob

# --- build dependencies (only the missing ones) -----------------------------
# gcc/libc6-dev/make: compiler; bc: timeconst; bison/flex: kconfig and dtc
# parsers; libelf-dev: objtool (always on for x86-64: static calls, ORC);
# lz4: bzImage compression; xz-utils: the source tarball; patch: patches/.
# Not needed by this configuration: libssl-dev (no module signing, no
# trusted keys), dwarves (no BTF), cpio (no IKHEADERS), python3, perl.
DEPS=(gcc libc6-dev make bc bison flex libelf-dev lz4 xz-utils)
[ ${#PATCHES[@]} -gt 0 ] && DEPS+=(patch)
apt_updated=0
apt_update() {
	if [ $apt_updated = 0 ]; then
		apt-get update -qq
		apt_updated=1
	fi
}
missing=()
for p in "${DEPS[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing build dependencies: ${missing[*]}"
	apt_update
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- which source package version ---------------------------------------------
candidate() { apt-cache policy "$PKG" 2>/dev/null | awk '/Candidate:/ {print $2}'; }
VER=$(candidate)
if [ -z "$VER" ] || [ "$VER" = "(none)" ]; then
	apt_update
	VER=$(candidate)
fi
if [ -z "$VER" ] || [ "$VER" = "(none)" ]; then
	# No package lists (offline): fall back to the tarball we already have.
	VER=$(cat "$WORK/tarball.version" 2>/dev/null || true)
	[ -n "$VER" ] || die "apt knows no $PKG and no cached copy exists"
	log "apt has no $PKG; using the cached $VER"
fi

# --- stamp: package version + fragment + patches + this script -------------------
STAMP=$( {
	echo "$PKG $VER"
	sha256sum "$FRAG" "${BASH_SOURCE[0]}" | awk '{print $1}'
	for p in "${PATCHES[@]}"; do echo "$(basename "$p") $(sha256sum <"$p" | awk '{print $1}')"; done
} | sha256sum | awk '{print $1}')

if [ "${GOVMM_LINUX_FORCE:-0}" != 1 ] && [ -f "$OUT/stamp" ] && [ "$(cat "$OUT/stamp")" = "$STAMP" ] &&
	[ -s "$OUT/vmlinux" ] && [ -s "$OUT/bzImage" ] && [ -s "$OUT/config" ]; then
	log "up to date ($PKG $VER, $(cat "$OUT/release" 2>/dev/null)): $OUT"
	exit 0
fi

T0=$(date +%s)

# --- source tarball (apt-get download + dpkg-deb -x; nothing is installed) ------
TARBALL=$WORK/linux-source-6.1.tar.xz
if [ "$(cat "$WORK/tarball.version" 2>/dev/null)" != "$VER" ] || [ ! -s "$TARBALL" ]; then
	log "downloading $PKG $VER"
	dl=$(mktemp -d "$WORK/dl.XXXXXX")
	chown _apt "$dl" 2>/dev/null || true # apt's sandbox user writes there
	(cd "$dl" && apt-get download -q "$PKG=$VER" >/dev/null) || { rm -rf "$dl"; die "apt-get download $PKG=$VER failed"; }
	dpkg-deb -x "$dl"/"${PKG}"_*.deb "$dl/x"
	mv -f "$dl/x/usr/src/linux-source-6.1.tar.xz" "$TARBALL"
	rm -rf "$dl"
	echo "$VER" >"$WORK/tarball.version"
fi

# --- source tree: unpacked once per (version, patch series) ------------------------
SRCKEY=$( {
	echo "$VER"
	for p in "${PATCHES[@]}"; do sha256sum <"$p"; done
} | sha256sum | awk '{print $1}')
if [ "$(cat "$SRC/.govmm-src" 2>/dev/null)" != "$SRCKEY" ]; then
	log "unpacking the kernel tree"
	rm -rf "$SRC" "$WORK/src.new"
	mkdir -p "$WORK/src.new"
	tar -xJf "$TARBALL" -C "$WORK/src.new" --strip-components=1
	for p in "${PATCHES[@]}"; do
		log "applying $(basename "$p")"
		patch -d "$WORK/src.new" -p1 --forward --batch --quiet <"$p" || die "patch $(basename "$p") does not apply"
	done
	echo "$SRCKEY" >"$WORK/src.new/.govmm-src"
	mv "$WORK/src.new" "$SRC"
	rm -rf "$OBJ" # new sources: start the object tree afresh
fi

# --- configuration --------------------------------------------------------------
mkdir -p "$OBJ"
KMAKE=(make -C "$SRC" O="$OBJ" KBUILD_BUILD_USER=govmm KBUILD_BUILD_HOST=govmm)
log "configuring: allnoconfig + govmm.config + olddefconfig"
"${KMAKE[@]}" -s allnoconfig KCONFIG_ALLCONFIG="$FRAG" >/dev/null
"${KMAKE[@]}" -s olddefconfig >/dev/null

# Every option of the fragment must have made it into .config.
bad=()
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*) sym=${line%%=*} want=${line#*=} ;;
	"# CONFIG_"*" is not set") sym=${line#\# } sym=${sym%% *} want=n ;;
	*) continue ;;
	esac
	got=$(grep -E "^$sym=" "$OBJ/.config" | head -1 || true)
	have=n
	[ -n "$got" ] && have=${got#*=}
	[ "$have" = "$want" ] || bad+=("$sym (want $want, got $have)")
done <"$FRAG"
if [ ${#bad[@]} -gt 0 ]; then
	printf 'linux: ERROR: not in .config as govmm.config asks:\n' >&2
	printf '  %s\n' "${bad[@]}" >&2
	exit 1
fi

# --- build ----------------------------------------------------------------------
log "building vmlinux and bzImage with -j$JOBS"
TB=$(date +%s)
# The build takes minutes: say how far it is every 30 s (files compiled,
# against the last full build's count when there was one).
"${KMAKE[@]}" -j"$JOBS" vmlinux bzImage >"$WORK/build.log" 2>&1 &
BUILD_PID=$!
LAST=$(cat "$WORK/compiled" 2>/dev/null || true)
while kill -0 "$BUILD_PID" 2>/dev/null; do
	for _ in $(seq 30); do kill -0 "$BUILD_PID" 2>/dev/null && sleep 1; done
	kill -0 "$BUILD_PID" 2>/dev/null || break
	n=$(grep -c '^  CC' "$WORK/build.log" || true)
	log "building: $n files compiled${LAST:+ of about $LAST}, $(($(date +%s) - TB)) s"
done
wait "$BUILD_PID" || {
	tail -40 "$WORK/build.log" >&2
	die "kernel build failed (full log: $WORK/build.log)"
}
n=$(grep -c '^  CC' "$WORK/build.log" || true)
[ "${n:-0}" -gt 500 ] && echo "$n" >"$WORK/compiled"
TE=$(date +%s)
RELEASE=$(cat "$OBJ/include/config/kernel.release")

# --- results (replaced together; stamp last) --------------------------------------
rm -f "$OUT/stamp"
install -m 644 "$OBJ/vmlinux" "$OUT/vmlinux.tmp" && mv -f "$OUT/vmlinux.tmp" "$OUT/vmlinux"
install -m 644 "$OBJ/arch/x86/boot/bzImage" "$OUT/bzImage.tmp" && mv -f "$OUT/bzImage.tmp" "$OUT/bzImage"
install -m 644 "$OBJ/.config" "$OUT/config.tmp" && mv -f "$OUT/config.tmp" "$OUT/config"
echo "$RELEASE ($PKG $VER)" >"$OUT/release"
echo "$STAMP" >"$OUT/stamp"

log "built $RELEASE from $PKG $VER: compile $((TE - TB)) s, total $((TE - T0)) s"
log "  $OUT/vmlinux $(stat -c %s "$OUT/vmlinux") bytes, bzImage $(stat -c %s "$OUT/bzImage") bytes"
}

main "$@"
exit
