# Shared by check.sh and boot-test.sh (sourced, not run).
# Sources and builds live outside the repository, in $HOSTNET_KERNEL_WORK.
set -euo pipefail

KP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Pinned: bookworm-security keeps only the last few versions, so a newer pin is
# a one-line change here (and `git apply --check` tells whether the series still fits).
KP_SOURCE_PKG=linux-source-6.12
KP_SOURCE_VERSION=${HOSTNET_KERNEL_VERSION:-6.12.117-1~deb12u1}
KP_WORK=${HOSTNET_KERNEL_WORK:-/var/tmp/hostnet-kernel}
KP_LOCK=${HOSTNET_LIVE_LOCK:-/tmp/hostnet-live.lock}
KP_TREE=$KP_WORK/tree/linux-source-6.12
KP_SKIP=77   # exit status meaning "skipped: this machine cannot do it"

# Heavy steps (compiling, QEMU) hold the shared live-measurement lock, unless the
# caller already holds it for the whole run (HOSTNET_LIVE_LOCK_HELD=1).
kp_locked() {
	if [ "${HOSTNET_LIVE_LOCK_HELD:-0}" = 1 ]; then "$@"; else flock "$KP_LOCK" "$@"; fi
}

kp_log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
kp_skip() { echo "SKIP: $*"; exit $KP_SKIP; }

# Install Debian packages that are missing (idempotent); skip when impossible.
kp_need_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "${p%%=*}" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then return 0; fi
	[ "$(id -u)" -eq 0 ] || kp_skip "needs root to install: ${missing[*]}"
	command -v apt-get >/dev/null || kp_skip "no apt-get to install: ${missing[*]}"
	kp_log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
		--no-install-recommends "${missing[@]}" >"$KP_WORK/apt.log" 2>&1 ||
		kp_skip "cannot install ${missing[*]} (see $KP_WORK/apt.log: $(tail -1 "$KP_WORK/apt.log"))"
}

kp_need_source() {
	mkdir -p "$KP_WORK"
	local have
	have=$(dpkg-query -W -f='${Version}' "$KP_SOURCE_PKG" 2>/dev/null || true)
	if [ "$have" != "$KP_SOURCE_VERSION" ]; then
		kp_need_packages "$KP_SOURCE_PKG=$KP_SOURCE_VERSION"
	fi
	kp_need_packages flex bison libelf-dev bc libssl-dev make gcc perl
}

# Unpack once; later runs reverse the series they applied instead of unpacking again.
kp_patched_tree() {
	local stamp=$KP_TREE/.hostnet-applied p
	if [ -d "$stamp" ]; then
		for p in $(tac "$stamp/series"); do
			patch -s -R -p1 -d "$KP_TREE" <"$stamp/$p" >/dev/null 2>&1 || { rm -rf "$KP_TREE"; break; }
		done
		rm -rf "$stamp"
	fi
	if [ ! -f "$KP_TREE/.hostnet-source-$KP_SOURCE_VERSION" ]; then
		rm -rf "$KP_TREE"
		kp_log "unpacking /usr/src/$KP_SOURCE_PKG.tar.xz"
		mkdir -p "$KP_WORK/tree"
		tar -C "$KP_WORK/tree" -xJf "/usr/src/$KP_SOURCE_PKG.tar.xz"
		touch "$KP_TREE/.hostnet-source-$KP_SOURCE_VERSION"
	fi
	kp_log "applying $(wc -l <"$KP_DIR/series/series") patches"
	mkdir -p "$stamp"
	: >"$stamp/series"
	for p in $(cat "$KP_DIR/series/series"); do
		patch -s -p1 -N -d "$KP_TREE" --dry-run <"$KP_DIR/series/$p" >/dev/null ||
			{ echo "FAIL: $p does not apply to $KP_SOURCE_PKG $KP_SOURCE_VERSION"; exit 1; }
		patch -s -p1 -N -d "$KP_TREE" <"$KP_DIR/series/$p"
		cp "$KP_DIR/series/$p" "$stamp/" && echo "$p" >>"$stamp/series"
	done
}
