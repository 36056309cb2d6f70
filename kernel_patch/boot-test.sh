#!/usr/bin/env bash
# Functional test of the rx_prof series: a reduced-config bzImage booted under
# QEMU (TCG) with a busybox initramfs (boot/init) that enables each feature,
# moves data over loopback and prints /proc/net/rx_prof; check_console.py
# checks the serial console. Run as root. Exit 77 = skipped (no root or no apt;
# never with HOSTNET_KERNEL_REQUIRED=1). The tree is used under $KP_LOCK throughout.
source "$(dirname "$0")/lib.sh"
t0=$SECONDS
kp_need_source
kp_need_packages qemu-system-x86 busybox-static cpio gcc libc6-dev python3
kp_patched_tree
build=$KP_WORK/build-boot
out=${HOSTNET_BOOT_OUT:-$KP_WORK/boot-test}
mkdir -p "$build" "$out"
# ACPI: without it the guest finds no HPET or ACPI PM timer, so when TCG's timing makes the PIT
# calibration of the TSC fail (a busy host) it falls back to jiffies, and the 4 ms clock steps
# leave the latency histogram nothing but 0 and 2-4 ms buckets.
kp_log "tinyconfig + networking, bzImage (make -j2)"
t_build=$SECONDS
bash -c "set -e
	make -s -C '$KP_TREE' O='$build' tinyconfig >/dev/null
	'$KP_TREE/scripts/config' --file '$build/.config' $(printf -- '-e %s ' 64BIT NET INET UNIX \
		PRINTK PRINTK_TIME EARLY_PRINTK TTY SERIAL_8250 SERIAL_8250_CONSOLE BLK_DEV_INITRD RD_GZIP \
		DEVTMPFS PROC_FS PROC_SYSCTL SYSCTL SYSFS BINFMT_ELF BINFMT_SCRIPT MULTIUSER FUTEX \
		POSIX_TIMERS TMPFS SHMEM ACPI)
	make -s -C '$KP_TREE' O='$build' olddefconfig >/dev/null
	make -s -C '$KP_TREE' O='$build' -j2 KCFLAGS=-Werror bzImage" >"$out/build.log" 2>&1 ||
	{ tail -30 "$out/build.log"; kp_fail "bzImage does not build"; }
grep -q '^CONFIG_ACPI=y' "$build/.config" ||
	kp_fail "the boot kernel's .config has no CONFIG_ACPI=y (olddefconfig dropped it): the guest would find no HPET"
build_s=$((SECONDS - t_build))
kp_log "bzImage built in ${build_s} s"

root=$out/initramfs
rm -rf "$root" && mkdir -p "$root"/{bin,sbin,proc,sys,dev}
cp /bin/busybox "$root/bin/busybox"
for a in sh mount cat echo ip sleep reboot uname; do ln -s busybox "$root/bin/$a"; done
gcc -static -O2 -Wall -Werror -o "$root/rxload" "$KP_DIR/boot/rxload.c"
install -m 0755 "$KP_DIR/boot/init" "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -9) >"$out/initramfs.cpio.gz"

kp_log "booting under QEMU (TCG)"
t_boot=$SECONDS
timeout 600 qemu-system-x86_64 -accel tcg -m 256M -nographic -no-reboot \
	-kernel "$build/arch/x86/boot/bzImage" -initrd "$out/initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1" >"$out/serial.log" 2>&1 || true
boot_s=$((SECONDS - t_boot))
kp_log "QEMU exited after ${boot_s} s; console in $out/serial.log"
python3 "$KP_DIR/check_console.py" "$out/serial.log" ||
	kp_fail "the boot test's checks (console: $out/serial.log)"
echo "BOOT TEST PASS: $(kp_source_label) + $(wc -l <"$KP_DIR/series/series") patches in $((SECONDS - t0)) s" \
	"(bzImage ${build_s} s, QEMU ${boot_s} s)"
