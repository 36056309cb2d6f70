#!/usr/bin/env bash
# The NIC rehearsal's guest kernel (hostnet/testbed/guests.py): Debian's packaged kernel, downloaded
# and unpacked into $HOSTNET_GUEST_KERNEL (default /var/tmp/hostnet-guest-kernel), never installed
# on the host. Its modules are indexed (depmod -b) so the guests' modprobe finds e1000e, virtio_net
# and the IOMMU's. Idempotent: nothing is downloaded when a kernel is unpacked there already.
# Needs apt (the package registry) and kmod's depmod (scripts/install-system.sh installs kmod).
set -euo pipefail
source "$(dirname "$0")/common.sh"

dest=${HOSTNET_GUEST_KERNEL:-/var/tmp/hostnet-guest-kernel}
if compgen -G "$dest/boot/vmlinuz-*" >/dev/null && compgen -G "$dest/lib/modules/*/modules.dep" >/dev/null; then
  echo "install-guest-kernel: $(basename "$dest"/boot/vmlinuz-*) already in $dest"
  exit 0
fi
depmod=$(command -v depmod || echo /usr/sbin/depmod)
[ -x "$depmod" ] || { echo "install-guest-kernel: depmod not found: run scripts/install-system.sh (kmod)" >&2; exit 1; }
# The kernel Debian's meta-package points at today (the archive keeps only the current ABI's).
package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$package" ] || { echo "install-guest-kernel: apt knows no linux-image-amd64 (apt-get update?)" >&2; exit 1; }
work=$(mktemp -d /var/tmp/hostnet-guest-kernel-dl.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "install-guest-kernel: downloading $package"
# apt's sandbox user cannot write a root-owned mktemp directory; it downloads there as root instead
(cd "$work" && apt-get download -q "$package" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
deb=$(compgen -G "$work/*.deb" | head -1) || true
[ -n "$deb" ] || { echo "install-guest-kernel: apt-get download $package fetched nothing" >&2; exit 1; }
rm -rf "$dest.new"
mkdir -p "$dest.new"
dpkg-deb -x "$deb" "$dest.new"
version=$(basename "$(compgen -G "$dest.new/lib/modules/*" | head -1)")
"$depmod" -a -b "$dest.new" "$version"
rm -rf "$dest"
mv "$dest.new" "$dest"
echo "install-guest-kernel: $package ($version) unpacked in $dest"
