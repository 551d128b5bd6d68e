#!/bin/sh
# tests/vol/vm_guest.sh OUTDIR - build the small Linux guest that
# vol_vm_test boots from a volume file (docs/volumes.md, "Booting a VM
# from a volume file"), from Debian packages (tools/install-deps --tests:
# busybox-static, e2fsprogs, and linux-image-amd64's kernel unpacked):
#
#   OUTDIR/kernel      that kernel's vmlinuz: its ELF vmlinux
#                      unpacked when the kernel has PVH (CONFIG_PVH, Debian's
#                      has), so QEMU enters it directly, without SeaBIOS's
#                      real-mode boot and the guest unpacking itself, which
#                      takes 30 s and more under TCG; else the bzImage
#   OUTDIR/initrd      a cpio of busybox and the kernel modules the guest
#                      needs for its disks (Debian builds virtio_pci,
#                      virtio_blk and ext4 as modules): /init loads them,
#                      mounts /dev/vda read-only and switch_roots to it
#   OUTDIR/root.img    an ext2 image (mke2fs -d) of the root filesystem:
#                      busybox, its applets, and /sbin/init, which does
#                      what the kernel command line's sdfsvm= says on the
#                      second disk, /dev/vdb:
#       sdfsvm=write   mount the ext4 filesystem the host made there,
#                      write files of assorted sizes, fsync each file,
#                      SUMS (their sha256) and the directory, print
#                      "SDFSVM SUM <sha256> <name>" lines and "SDFSVM
#                      WROTE"; then print "SDFSVM LOOP" and rewrite and
#                      fsync small files g0..g7 in a loop, printing
#                      "SDFSVM G <sha256>  g<k>" after each fsync, until
#                      the mailbox says SNAP (the host took a snapshot and
#                      migrated the VM meanwhile), print "SDFSVM LOOPED
#                      <n>" and power off without a global sync or umount
#       sdfsvm=probe   print "SDFSVM BOOTED ..." and power off (KVM probe)
#       sdfsvm=verify  mount it read-only, print the SUM lines of what it
#                      reads, "SDFSVM GSUM <sha256>  g<k>" for the g
#                      files, then "SDFSVM PASS" if sha256sum -c SUMS
#                      accepts every file, else "SDFSVM FAIL"
#       sdfsvm=trim    mount it read-write (the journal replays), check
#                      SUMS as verify does ("SDFSVM SUM" lines, "SDFSVM
#                      CHECKED"); write a 32 MiB file, fsync it, print
#                      "SDFSVM FILLED" and wait for MEAS in the mailbox
#                      (the host measured); remove it and g*, fstrim -v
#                      ("SDFSVM TRIM <what fstrim said>"), check SUMS
#                      again, umount, print "SDFSVM PASS" and power off
#
# The mailbox: the 4 KiB at 24 MiB of /dev/vda (past the root image, in
# the volume file vm.img), which the guest reads with O_DIRECT and the
# host writes through the mount.
#
# Every line the guest prints for the test starts with "SDFSVM ". Exit 0
# when built; otherwise a message on stderr and exit 1 (exit 77: a
# package is missing, the test skips).
set -eu
out=$1
bb=/bin/busybox
for f in "$bb" /sbin/mke2fs /usr/bin/cpio; do
	[ -x "$f" ] || { echo "vm_guest: $f missing" >&2; exit 77; }
done
# The guest's kernel: the newest one whose modules are there too, from
# the Debian kernel package tools/install-deps --tests unpacked (without
# installing it: the host's boot is left alone) under $SDFS_GUEST_KERNELS,
# else one installed on the host.
kroots="${SDFS_GUEST_KERNELS:-/var/cache/sdfs/guest-kernel}"
kroot= kver=
for r in $(ls -d "$kroots"/*/ 2>/dev/null) /; do
	r=${r%/}
	for k in $(ls "$r"/boot/vmlinuz-* 2>/dev/null | sort -V); do
		v=${k#"$r"/boot/vmlinuz-}
		[ -f "$r/lib/modules/$v/modules.dep" ] && kroot=$r kver=$v
	done
	[ -z "$kver" ] || break
done
[ -n "$kver" ] || { echo "vm_guest: no kernel with its modules under $kroots or /boot (tools/install-deps --tests)" >&2; exit 77; }
mods=$kroot/lib/modules/$kver
rm -rf "$out/initrd.d" "$out/root.d"
mkdir -p "$out/initrd.d/bin" "$out/initrd.d/lib" "$out/root.d/bin" "$out/root.d/sbin"

# ---- the kernel: vmlinux from the bzImage's payload (boot protocol:
# setup_sects at 0x1f1, payload_offset/length at 0x248/0x24c, from the
# protected-mode code at (setup_sects + 1) * 512) ----
bz=$kroot/boot/vmlinuz-$kver
rm -f "$out/kernel"
if grep -qx CONFIG_PVH=y "$kroot/boot/config-$kver" 2>/dev/null; then
	u() { od -An -tu"$1" -j "$2" -N "$1" "$bz" | tr -d ' '; }
	start=$((($(u 1 497) + 1) * 512))
	tail -c +$((start + $(u 4 584) + 1)) "$bz" | head -c "$(u 4 588)" > "$out/payload"
	for d in "xz -dc --single-stream" "zstd -qdc" "gzip -dc"; do
		$d < "$out/payload" > "$out/kernel" 2> /dev/null || true
		[ "$(head -c 4 "$out/kernel" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] && break
		rm -f "$out/kernel"
	done
	rm -f "$out/payload"
fi
[ -f "$out/kernel" ] || ln -s "$bz" "$out/kernel"

# ---- initrd: modules in dependency order, then /init ----
# modules.dep lines are "path: dep dep ..."; a module goes after its deps.
want="virtio_pci virtio_blk ext4 crc32c_generic"
order=
add() {	# add MODULE-PATH after its dependencies
	case " $order " in *" $1 "*) return ;; esac
	for d in $(sed -n "s|^$1: *||p" "$mods/modules.dep"); do add "$d"; done
	order="$order $1"
}
for m in $want; do
	p=$(grep -E "/$m\.ko(\.xz|\.zst)?:" "$mods/modules.dep" | cut -d: -f1 | head -n 1)
	if [ -z "$p" ]; then
		# built into this kernel: nothing to load
		grep -qE "/$m\.ko" "$mods/modules.builtin" && continue
		echo "vm_guest: module $m not in $mods" >&2
		exit 1
	fi
	add "$p"
done
list=
for p in $order; do
	n=$(basename "$p")
	case $n in
	*.xz) xz -dc "$mods/$p" > "$out/initrd.d/lib/${n%.xz}"; n=${n%.xz} ;;
	*.zst) zstd -qdc "$mods/$p" > "$out/initrd.d/lib/${n%.zst}"; n=${n%.zst} ;;
	*) cp "$mods/$p" "$out/initrd.d/lib/$n" ;;
	esac
	list="$list $n"
done
cp "$bb" "$out/initrd.d/bin/busybox"
ln -s busybox "$out/initrd.d/bin/sh"
cat > "$out/initrd.d/init" <<EOF
#!/bin/sh
export PATH=/bin
busybox mkdir -p /proc /sys /dev /newroot
busybox mount -t proc proc /proc
busybox mount -t devtmpfs dev /dev
for m in$list; do
	busybox insmod /lib/\$m || echo "SDFSVM initrd: insmod \$m failed"
done
i=0
while [ ! -b /dev/vda ] && [ \$i -lt 300 ]; do busybox usleep 100000; i=\$((i + 1)); done
if ! busybox mount -t ext4 -o ro /dev/vda /newroot; then
	echo "SDFSVM FAIL initrd: cannot mount /dev/vda"
	busybox poweroff -f
fi
busybox umount /proc
busybox umount /dev
exec busybox switch_root /newroot /sbin/init
EOF
chmod 755 "$out/initrd.d/init"
(cd "$out/initrd.d" && find . | cpio -o -H newc --quiet) > "$out/initrd"

# ---- the root filesystem ----
cp "$bb" "$out/root.d/bin/busybox"
for a in $("$bb" --list); do
	[ "$a" = busybox ] || ln -s busybox "$out/root.d/bin/$a"
done
mkdir -p "$out/root.d/proc" "$out/root.d/sys" "$out/root.d/dev" "$out/root.d/data"
cat > "$out/root.d/sbin/init" <<'EOF'
#!/bin/sh
# the guest's init (tests/vol/vm_guest.sh): see there
export PATH=/bin
mount -t proc proc /proc
mount -t devtmpfs dev /dev
mode=
for w in $(cat /proc/cmdline); do
	case $w in sdfsvm=*) mode=${w#sdfsvm=} ;; esac
done
echo "SDFSVM BOOTED mode=$mode uptime=$(cut -d' ' -f1 /proc/uptime)s root=$(grep ' / ' /proc/mounts | cut -d' ' -f1)"
fail() {
	echo "SDFSVM FAIL $*"
	poweroff -f
}
[ "$mode" = probe ] && poweroff -f
i=0
while [ ! -b /dev/vdb ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
[ -b /dev/vdb ] || fail "no /dev/vdb"
# the host's word in the mailbox (4 KiB at 24 MiB of /dev/vda), or ""
mbox() {
	dd if=/dev/vda bs=4096 skip=6144 count=1 iflag=direct 2> /dev/null | head -c 4
}
check() {
	[ -s SUMS ] || fail "no SUMS on /dev/vdb"
	sha256sum f* | sed 's/^/SDFSVM SUM /'
	sha256sum -c SUMS > /dev/null || fail "checksums differ"
}
case $mode in
write)
	mount -t ext4 /dev/vdb /data || fail "mount /dev/vdb"
	cd /data || fail "cd /data"
	n=0
	# sizes around block and page boundaries, and a few MiB in one file
	for kb in 0 1 4 5 64 1024 4096; do
		n=$((n + 1))
		dd if=/dev/urandom of=f$n bs=1024 count=$kb 2> /dev/null || fail "dd f$n"
		printf 'tail of f%s\n' "$n" >> f$n
		sync f$n || fail "fsync f$n"
	done
	sha256sum f* > SUMS || fail "sha256sum"
	sync SUMS . || fail "fsync SUMS, /data"
	sed 's/^/SDFSVM SUM /' SUMS
	echo "SDFSVM WROTE $n files, uptime=$(cut -d' ' -f1 /proc/uptime)s"
	# writes going on while the host takes a snapshot
	echo "SDFSVM LOOP"
	i=0
	while [ "$(mbox)" != SNAP ]; do
		i=$((i + 1))
		[ $i -le 3000 ] || fail "no SNAP in the mailbox after $i writes"
		dd if=/dev/urandom of=g$((i % 8)) bs=4096 count=$((i % 64 + 1)) 2> /dev/null ||
			fail "dd g$((i % 8))"
		sync g$((i % 8)) || fail "fsync g$((i % 8))"
		echo "SDFSVM G $(sha256sum g$((i % 8)))"
	done
	echo "SDFSVM LOOPED $i writes, uptime=$(cut -d' ' -f1 /proc/uptime)s"
	# no umount and no sync: what is on the volume is what fsync put there
	poweroff -n -f
	;;
trim)
	mount -t ext4 /dev/vdb /data || fail "mount /dev/vdb read-write"
	cd /data || fail "cd /data"
	check
	echo "SDFSVM CHECKED uptime=$(cut -d' ' -f1 /proc/uptime)s"
	dd if=/dev/urandom of=big bs=1048576 count=32 2> /dev/null || fail "dd big"
	sync big || fail "fsync big"
	echo "SDFSVM FILLED"
	i=0
	while [ "$(mbox)" != MEAS ]; do
		i=$((i + 1))
		[ $i -le 1500 ] || fail "no MEAS in the mailbox"
		usleep 200000
	done
	rm -f big g*
	sync
	echo "SDFSVM TRIM $(fstrim -v /data 2>&1)"
	check
	cd /
	umount /data || fail "umount /data"
	echo "SDFSVM PASS uptime=$(cut -d' ' -f1 /proc/uptime)s"
	poweroff -f
	;;
verify)
	mount -t ext4 -o ro /dev/vdb /data || fail "mount /dev/vdb"
	cd /data || fail "cd /data"
	[ -s SUMS ] || fail "no SUMS on /dev/vdb"
	sha256sum f* | sed 's/^/SDFSVM SUM /'
	sha256sum g* 2> /dev/null | sed 's/^/SDFSVM GSUM /'
	if sha256sum -c SUMS; then
		echo "SDFSVM PASS uptime=$(cut -d' ' -f1 /proc/uptime)s"
	else
		echo "SDFSVM FAIL checksums differ"
	fi
	cd /
	umount /data
	poweroff -f
	;;
*)
	fail "sdfsvm=$mode: write, verify or trim"
	;;
esac
EOF
chmod 755 "$out/root.d/sbin/init"
rm -f "$out/root.img"
/sbin/mke2fs -q -F -t ext2 -d "$out/root.d" -L sdfsroot "$out/root.img" 16M > /dev/null
rm -rf "$out/initrd.d" "$out/root.d"
