#!/usr/bin/env bash
# netperf (the paper's RPC tool) is in Debian's non-free component. This opt-in step adds a
# separate apt source for it (hostnet-nonfree.sources), installs netperf, and leaves the
# machine's own sources alone. Without netperf, hostnet uses sockperf (Debian main).
set -euo pipefail
source "$(dirname "$0")/common.sh"
if command -v netperf >/dev/null; then echo "install-netperf: netperf present"; exit 0; fi
[ "$(id -u)" -eq 0 ] || { echo "install-netperf: run as root" >&2; exit 1; }
. /etc/os-release
src=/etc/apt/sources.list.d/hostnet-nonfree.sources
cat > "$src" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME}
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
hostnet_record_installed netperf
apt-get install -y -qq --no-install-recommends netperf
echo "install-netperf: installed $(netperf -V 2>&1 | head -1) from $src"
