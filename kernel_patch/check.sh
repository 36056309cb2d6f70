#!/usr/bin/env bash
# Per-push check of the rx_prof series: checkpatch, applies to the pinned
# linux-source-6.12 (or, with a warning, the newest installable one), and the
# touched files compile with -Werror under x86_64 defconfig. Run as root (it
# installs what it needs). Exit 77 = skipped (no root or no apt; never with
# HOSTNET_KERNEL_REQUIRED=1). The tree is used under $KP_LOCK throughout.
source "$(dirname "$0")/lib.sh"
t0=$SECONDS
kp_need_source
kp_patched_tree
kp_log "checkpatch"
# FILE_PATH_CHANGES only asks whether MAINTAINERS needs an entry for the new
# files; an out-of-tree series has no maintainer entry to add.
for p in $(cat "$KP_DIR/series/series"); do
	"$KP_TREE/scripts/checkpatch.pl" --no-tree --quiet --ignore FILE_PATH_CHANGES "$KP_DIR/series/$p" ||
		kp_fail "checkpatch on $p"
done
build=$KP_WORK/build-check
mkdir -p "$build"
objs="net/core/rx_prof.o net/core/dev.o net/core/gro.o net/core/sock.o net/ipv4/tcp.o net/ipv4/tcp_input.o net/ipv4/tcp_ipv4.o"
kp_log "defconfig + prepare + net/core/ net/ipv4/tcp{,_input,_ipv4}.o with -Werror (make -j2)"
{ make -s -C "$KP_TREE" O="$build" defconfig >/dev/null &&
	make -s -C "$KP_TREE" O="$build" -j2 prepare >/dev/null &&
	make -s -C "$KP_TREE" O="$build" -j2 KCFLAGS=-Werror net/core/ $objs; } ||
	kp_fail "the patched tree does not build"
for o in $objs; do
	[ "$build/$o" -nt "$KP_TREE/.hostnet-applied/series" ] || kp_fail "$o was not rebuilt"
done
echo "CHECK PASS: $(kp_source_label) + $(wc -l <"$KP_DIR/series/series") patches in $((SECONDS - t0)) s"
