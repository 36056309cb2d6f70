# Shared by check.sh and boot-test.sh (sourced, not run).
# Sources and builds live outside the repository, in $HOSTNET_KERNEL_WORK.
set -euo pipefail

KP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$KP_DIR/../scripts/common.sh"
# Pinned: bookworm-security keeps only the last few versions. When the pin is no longer
# installable the scripts fall back to the newest installable linux-source-6.12 and say so
# (the series usually applies across 6.12.x); moving the pin is a one-line change here.
KP_SOURCE_PKG=linux-source-6.12
KP_PINNED_VERSION=${HOSTNET_KERNEL_VERSION:-6.12.117-1~deb12u1}
KP_SOURCE_VERSION=   # the version actually installed and unpacked; set by kp_need_source
KP_WORK=${HOSTNET_KERNEL_WORK:-/var/tmp/hostnet-kernel}
KP_LOCK=${HOSTNET_LIVE_LOCK:-/tmp/hostnet-live.lock}
KP_TREE=$KP_WORK/tree/linux-source-6.12
KP_SKIP=77   # exit status meaning "skipped: this machine cannot do it"
# HOSTNET_KERNEL_REQUIRED=1 (CI): the series must be built and tested here, so a skip fails.
KP_REQUIRED=${HOSTNET_KERNEL_REQUIRED:-0}

kp_log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
kp_fail() { echo "FAIL: $*"; exit 1; }
# Skipping is only for a machine that cannot install anything: no root, or no apt/dpkg.
kp_skip() {
	[ "$KP_REQUIRED" != 1 ] || kp_fail "$* (HOSTNET_KERNEL_REQUIRED=1: a skip is a failure)"
	echo "SKIP: $*"
	exit $KP_SKIP
}

# Take $KP_LOCK (the shared live-measurement lock) for the rest of the script: the tree
# in $KP_WORK is patched, un-patched, built and booted under it, so two runs (or a
# live measurement) never see it half-patched. Not taken when the caller already holds
# it for the whole run (HOSTNET_LIVE_LOCK_HELD=1).
kp_hold_lock() {
	[ "${HOSTNET_LIVE_LOCK_HELD:-0}" != 1 ] || return 0
	[ -z "${KP_LOCK_FD:-}" ] || return 0
	[ -e "$KP_LOCK" ] || : >>"$KP_LOCK"
	exec {KP_LOCK_FD}<"$KP_LOCK"
	if ! flock -n "$KP_LOCK_FD"; then
		kp_log "waiting for $KP_LOCK"
		flock "$KP_LOCK_FD"
	fi
}

kp_can_install() {
	[ "$(id -u)" -eq 0 ] || kp_skip "needs root to install: $*"
	command -v apt-get >/dev/null && command -v apt-cache >/dev/null ||
		kp_skip "no apt-get to install: $*"
}

# Installed version of a package, or nothing. Total: a package that is not installed (or not
# known at all) prints nothing and succeeds -- dpkg-query exits 1 for it, and under pipefail
# that status would end the caller's script before it could install the package.
kp_installed_version() {
	{ dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null || true; } |
		awk '$1 == "install" && $2 == "ok" && $3 == "installed" { print $4 }'
}

# Install Debian packages that are missing (idempotent). "pkg=version" also requires that
# version. No root or no apt: skip; apt failing: fail.
kp_need_packages() {
	local missing=() p
	for p in "$@"; do
		case $p in
		*=*) [ "$(kp_installed_version "${p%%=*}")" = "${p#*=}" ] || missing+=("$p") ;;
		*) [ -n "$(kp_installed_version "$p")" ] || missing+=("$p") ;;
		esac
	done
	if [ ${#missing[@]} -eq 0 ]; then return 0; fi
	kp_can_install "${missing[@]}"
	mkdir -p "$KP_WORK"
	kp_log "installing ${missing[*]}"
	hostnet_record_installed "${missing[@]}"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
		--no-install-recommends --allow-downgrades "${missing[@]}" >"$KP_WORK/apt.log" 2>&1 ||
		kp_fail "cannot install ${missing[*]} (see $KP_WORK/apt.log: $(tail -1 "$KP_WORK/apt.log"))"
}

# Whether apt can install version $2 of $1 (a predicate: false, never an exit, when it cannot).
kp_installable() {
	{ apt-cache madison "$1" 2>/dev/null || true; } |
		awk -F'|' -v want="$2" '{ gsub(/ /, "", $2) } $2 == want { found = 1 } END { exit !found }'
}

# The version apt would install, or nothing (total, like kp_installed_version).
kp_candidate() {
	{ apt-cache policy "$1" 2>/dev/null || true; } | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }'
}

# The kernel source: the pinned version, or else the newest installable one (loudly).
# Sets KP_SOURCE_VERSION to the version actually installed.
kp_need_source() {
	mkdir -p "$KP_WORK"
	local have want=$KP_PINNED_VERSION
	have=$(kp_installed_version "$KP_SOURCE_PKG")
	if [ "$have" != "$want" ]; then
		kp_can_install "$KP_SOURCE_PKG=$want"
		if ! kp_installable "$KP_SOURCE_PKG" "$want"; then
			kp_log "$KP_SOURCE_PKG $want is not in the package lists: apt-get update"
			apt-get -o DPkg::Lock::Timeout=600 update -q >"$KP_WORK/apt-update.log" 2>&1 ||
				kp_log "apt-get update failed (see $KP_WORK/apt-update.log); using the lists as they are"
		fi
		if ! kp_installable "$KP_SOURCE_PKG" "$want"; then
			local newest
			newest=$(kp_candidate "$KP_SOURCE_PKG")
			newest=${newest:-$have}
			[ -n "$newest" ] ||
				kp_fail "$KP_SOURCE_PKG: the pinned $want is not installable and neither is any other version"
			echo "WARNING: the pinned $KP_SOURCE_PKG $KP_PINNED_VERSION is not installable here;" \
				"using $newest, the newest installable one (set KP_PINNED_VERSION in kernel_patch/lib.sh)"
			want=$newest
		fi
		kp_need_packages "$KP_SOURCE_PKG=$want"
	fi
	KP_SOURCE_VERSION=$(kp_installed_version "$KP_SOURCE_PKG")
	[ "$KP_SOURCE_VERSION" = "$want" ] ||
		kp_fail "$KP_SOURCE_PKG $KP_SOURCE_VERSION is installed, not $want"
	kp_need_packages flex bison libelf-dev bc libssl-dev make gcc perl
}

# "6.12.117" from the tree's Makefile.
kp_tree_kernelversion() {
	awk '$2 == "=" && $1 ~ /^(VERSION|PATCHLEVEL|SUBLEVEL)$/ { v[$1] = $3 }
	     END { if (v["VERSION"] != "") print v["VERSION"] "." v["PATCHLEVEL"] "." v["SUBLEVEL"] }' \
		"$KP_TREE/Makefile" 2>/dev/null || true
}

# "linux-source-6.12 6.12.117-1~deb12u1", plus the pin when it differs.
kp_source_label() {
	local s="$KP_SOURCE_PKG $KP_SOURCE_VERSION"
	[ "$KP_SOURCE_VERSION" = "$KP_PINNED_VERSION" ] || s="$s (pinned $KP_PINNED_VERSION, not installable)"
	echo "$s"
}

# Unpack once per installed version; later runs reverse the series they applied instead
# of unpacking again. Takes $KP_LOCK for the rest of the script (see kp_hold_lock).
kp_patched_tree() {
	local stamp=$KP_TREE/.hostnet-applied p upstream=${KP_SOURCE_VERSION%%-*}
	[ -n "$KP_SOURCE_VERSION" ] || kp_fail "kp_need_source must run first"
	kp_hold_lock
	if [ -d "$stamp" ]; then
		for p in $(tac "$stamp/series"); do
			patch -s -R -p1 -d "$KP_TREE" <"$stamp/$p" >/dev/null 2>&1 || { rm -rf "$KP_TREE"; break; }
		done
		rm -rf "$stamp"
	fi
	if [ ! -f "$KP_TREE/.hostnet-source-$KP_SOURCE_VERSION" ] || [ "$(kp_tree_kernelversion)" != "$upstream" ]; then
		rm -rf "$KP_TREE"
		kp_log "unpacking /usr/src/$KP_SOURCE_PKG.tar.xz ($KP_SOURCE_VERSION)"
		mkdir -p "$KP_WORK/tree"
		tar -C "$KP_WORK/tree" -xJf "/usr/src/$KP_SOURCE_PKG.tar.xz"
		[ "$(kp_tree_kernelversion)" = "$upstream" ] ||
			kp_fail "/usr/src/$KP_SOURCE_PKG.tar.xz unpacked to Linux $(kp_tree_kernelversion), not $upstream"
		touch "$KP_TREE/.hostnet-source-$KP_SOURCE_VERSION"
	fi
	kp_log "applying $(wc -l <"$KP_DIR/series/series") patches to $(kp_source_label)"
	mkdir -p "$stamp"
	: >"$stamp/series"
	for p in $(cat "$KP_DIR/series/series"); do
		patch -s -p1 -N -d "$KP_TREE" --dry-run <"$KP_DIR/series/$p" >/dev/null ||
			kp_fail "$p does not apply to $(kp_source_label)"
		patch -s -p1 -N -d "$KP_TREE" <"$KP_DIR/series/$p"
		cp "$KP_DIR/series/$p" "$stamp/" && echo "$p" >>"$stamp/series"
	done
}
