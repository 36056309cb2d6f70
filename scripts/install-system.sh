#!/usr/bin/env bash
# Installs the Debian packages hostnet drives. Idempotent: apt runs only when something
# is missing. Needs root (the embedded testbed needs root anyway).
set -euo pipefail
source "$(dirname "$0")/common.sh"

PACKAGES=(
  iproute2      # ip netns, veth
  ethtool       # offloads
  iperf3        # long flows
  iperf         # iperf2: UDP at a set offered rate (end-host loss, notebook 14)
  sockperf      # RPC ping-pong (netperf, the paper's tool, comes from install-netperf.sh)
  openssh-server netcat-openbsd  # sshd per namespace: the SSH path exercised on one machine
  linux-perf    # perf record/report (cpu-clock sampling)
  sysstat       # mpstat, an independent CPU-accounting cross-check
  procps        # sysctl, pgrep for humans
  nftables      # loss injection
  bpftrace      # receive -> copy latency and post-GRO skb sizes (tracepoints; no kprobes needed)
  chromium chromium-driver  # headless browser for the report test (figures/index.html), offline
  python3 python3-venv python3-pip
  git make
  sudo          # the SSH hosts' sudo path (non-root logins), tested against an sshd in a namespace
  gcc libc6-dev  # builds hostnet's C tools (udpbatch: sendmmsg/recvmmsg; microbench)
  clang         # builds hostnet's XDP program (native/xdp_pass.c, -target bpf): veth in NAPI mode without GRO
  qemu-system-x86 busybox-static  # the NIC rehearsal's guests (testbed/guests.py; virtme-ng's initramfs)
  kmod          # depmod indexes the guest kernel's modules; the guests' modprobe loads e1000e and virtio_net
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-system: all Debian packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-system: missing ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "install-system: installing ${missing[*]}"
hostnet_record_installed "${missing[@]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
