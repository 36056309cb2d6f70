#!/usr/bin/env bash
# Fresh-machine rehearsal: take this machine back to what it was before hostnet came, then run
# CI (.ci/run) from a fresh clone, as a new user's first `make test` would. Run it before calling
# any install, script or CI change done: a step that only works because something is already
# installed fails here.
#
# It removes what the project installs: the checkout's .venv and native builds, the kernel
# work dir ($HOSTNET_KERNEL_WORK), the NIC rehearsal's guest kernel ($HOSTNET_GUEST_KERNEL),
# linux-source-6.12, every Debian package the project's scripts recorded installing
# (scripts/common.sh: /var/lib/hostnet/installed-packages) with the dependencies they pulled in,
# and the netperf apt source. Packages the machine had before are never on that list, so they stay.
# apt's and pip's download caches stay: they only save downloads and cannot stand in for a missing
# install step.
#
# Usage (root): scripts/fresh-machine.sh [--dry-run] [REF]
# REF defaults to HEAD (what CI would test); uncommitted changes are not in a fresh clone, so
# commit first. Prints the wall time and exits with .ci/run's status; the clone is kept under
# /var/tmp when CI fails. --dry-run prints what would be removed and cloned, and changes nothing.
set -euo pipefail
source "$(dirname "$0")/common.sh"

dry_run=0
[ "${1:-}" != --dry-run ] || { dry_run=1; shift; }
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine: run as root (it removes Debian packages)" >&2; exit 1; }
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
ref=${1:-HEAD}
commit=$(git -C "$repo" rev-parse --verify --quiet "$ref^{commit}") ||
	{ echo "fresh-machine: $ref is not a commit of $repo" >&2; exit 2; }
kernel_work=${HOSTNET_KERNEL_WORK:-/var/tmp/hostnet-kernel}
log() { printf '[fresh-machine %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

packages=(linux-source-6.12)
[ ! -f "$HOSTNET_INSTALLED" ] || mapfile -t -O 1 packages <"$HOSTNET_INSTALLED"
installed=()
for p in $(printf '%s\n' "${packages[@]}" | awk '!seen[$0]++'); do
	{ dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true; } | grep -q "install ok installed" &&
		installed+=("$p")
done
guest_kernel=${HOSTNET_GUEST_KERNEL:-/var/tmp/hostnet-guest-kernel}
paths=("$repo/.venv" "$repo/.venv-floors" "$repo/hostnet/native/build" "$kernel_work" "$guest_kernel")
if [ "$dry_run" = 1 ]; then
	echo "would remove: ${paths[*]}"
	echo "would purge: ${installed[*]:-(no package)}"
	echo "would run: .ci/run in a fresh clone of $commit"
	exit 0
fi

log "removing what the project installs"
rm -rf "${paths[@]}"
export DEBIAN_FRONTEND=noninteractive
# sudo's removal script refuses without this (it guards machines where sudo is the only way to
# root); sudo is on the list only when the project installed it, and this script runs as root.
export SUDO_FORCE_REMOVE=yes
apt_log=$(mktemp /var/tmp/hostnet-fresh-apt.XXXXXX)
apt_quiet() {
	apt-get -o DPkg::Lock::Timeout=600 "$@" >>"$apt_log" 2>&1 ||
		{ tail -15 "$apt_log" >&2; echo "fresh-machine: apt-get $1 failed (log: $apt_log)" >&2; return 1; }
}
if [ ${#installed[@]} -gt 0 ]; then
	log "purging ${installed[*]}"
	apt_quiet purge -y -q "${installed[@]}"
	apt_quiet autoremove --purge -y -q
fi
rm -f "$HOSTNET_INSTALLED"
if [ -f /etc/apt/sources.list.d/hostnet-nonfree.sources ]; then
	rm -f /etc/apt/sources.list.d/hostnet-nonfree.sources
	apt_quiet update -qq
fi
rm -f "$apt_log"

clone=$(mktemp -d /var/tmp/hostnet-fresh.XXXXXX)
log "cloning $commit into $clone"
git clone -q --no-local "$repo" "$clone/hostnet"
git -C "$clone/hostnet" checkout -q "$commit"
t0=$SECONDS
rc=0
(cd "$clone/hostnet" && .ci/run) || rc=$?
wall=$((SECONDS - t0))
if [ "$rc" -eq 0 ]; then
	rm -rf "$clone"
	log "PASS: .ci/run from a fresh clone of $commit in ${wall} s ($((wall / 60)) min $((wall % 60)) s)"
else
	log "FAIL: .ci/run exited $rc after ${wall} s; the clone is kept in $clone/hostnet"
fi
exit "$rc"
