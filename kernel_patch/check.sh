#!/usr/bin/env bash
# Per-push check of the rx_prof series: checkpatch, applies to the pinned
# linux-source-6.12, and the touched directories compile with -Werror under
# x86_64 defconfig. Run as root (it installs what it needs). Exit 77 = skipped.
source "$(dirname "$0")/lib.sh"
t0=$SECONDS
kp_need_source
kp_patched_tree
kp_log "checkpatch"
# FILE_PATH_CHANGES only asks whether MAINTAINERS needs an entry for the new
# files; an out-of-tree series has no maintainer entry to add.
for p in $(cat "$KP_DIR/series/series"); do
	"$KP_TREE/scripts/checkpatch.pl" --no-tree --quiet --ignore FILE_PATH_CHANGES "$KP_DIR/series/$p" ||
		{ echo "FAIL: checkpatch on $p"; exit 1; }
done
build=$KP_WORK/build-check
mkdir -p "$build"
kp_log "defconfig + prepare + net/core/ net/ipv4/tcp.o with -Werror (make -j2, under $KP_LOCK)"
kp_locked bash -c "set -e
	make -s -C '$KP_TREE' O='$build' defconfig >/dev/null
	make -s -C '$KP_TREE' O='$build' -j2 prepare >/dev/null
	make -s -C '$KP_TREE' O='$build' -j2 KCFLAGS=-Werror net/core/ net/ipv4/tcp.o" ||
	{ echo "FAIL: the patched tree does not build"; exit 1; }
for o in net/core/rx_prof.o net/core/dev.o net/core/gro.o net/core/sock.o net/ipv4/tcp.o; do
	[ "$build/$o" -nt "$KP_TREE/.hostnet-applied/series" ] || { echo "FAIL: $o was not rebuilt"; exit 1; }
done
echo "CHECK PASS: $KP_SOURCE_PKG $KP_SOURCE_VERSION + $(wc -l <"$KP_DIR/series/series") patches in $((SECONDS - t0)) s"
