# tools/bench/lib-fuse.sh - libfuse's passthrough_ll example as the FUSE
# ceiling, for bench scripts that source it (tools/bench/vol; the fs
# bench has the same code inline).
#
# The caller sets $tmp (its private temp dir) and defines die(); then
#   pt_check          dies unless the example sources and fusermount3 exist
#   pt_build          compiles $tmp/pt/passthrough_ll and
#                     $tmp/pt/passthrough_ll_nodirect (O_DIRECT dropped from
#                     the backing open: stock passthrough_ll gets EINVAL on
#                     O_DIRECT writes, the kernel's buffer is not aligned)
#   pt_mount BIN SRC MNT   mounts BIN with -o source=SRC at MNT, in the
#                     background, waits until it is mounted
#   pt_umount_all     unmounts what pt_mount mounted, waits for the daemons
#   pt_cleanup        for an EXIT trap: the same, lazily if busy, never fails
# Nothing is copied into the repository; processes are stopped by pid.

pt_examples=/usr/share/doc/libfuse3-dev/examples
pt_pids=() pt_mnts=()

pt_check() {
	[ -r "$pt_examples/passthrough_ll.c" ] ||
		die "no $pt_examples/passthrough_ll.c (Debian package libfuse3-dev)"
	command -v fusermount3 >/dev/null || die "no fusermount3 (Debian package fuse3)"
}

pt_build() {
	mkdir -p "$tmp/pt"
	cp "$pt_examples/passthrough_ll.c" "$pt_examples/passthrough_helpers.h" "$tmp/pt/"
	sed -e 's/(fi->flags | O_CREAT) & ~O_NOFOLLOW/(fi->flags | O_CREAT) \& ~(O_NOFOLLOW | O_DIRECT)/' \
	    -e 's/open(buf, fi->flags & ~O_NOFOLLOW)/open(buf, fi->flags \& ~(O_NOFOLLOW | O_DIRECT))/' \
		"$tmp/pt/passthrough_ll.c" >"$tmp/pt/passthrough_ll_nodirect.c"
	[ "$(grep -c 'O_NOFOLLOW | O_DIRECT' "$tmp/pt/passthrough_ll_nodirect.c")" = 2 ] ||
		die "the O_DIRECT sed no longer matches $pt_examples/passthrough_ll.c"
	local f
	for f in passthrough_ll passthrough_ll_nodirect; do
		# shellcheck disable=SC2046
		gcc -O2 -o "$tmp/pt/$f" "$tmp/pt/$f.c" $(pkg-config --cflags --libs fuse3) ||
			die "cannot compile $f (needs libfuse3-dev, pkg-config)"
	done
}

pt_mount() {    # BINARY SRC MNT
	mkdir -p "$2" "$3"
	"$1" -f -o source="$2" "$3" >"$tmp/pt/$(basename "$3").log" 2>&1 &
	pt_pids+=($!)
	pt_mnts+=("$3")
	local i
	for i in $(seq 100); do
		[ "$(findmnt -n -M "$3" -o FSTYPE 2>/dev/null)" = "fuse.$(basename "$1")" ] && return 0
		kill -0 "${pt_pids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	die "$1 did not mount at $3: $(tail -2 "$tmp/pt/$(basename "$3").log")"
}

pt_umount_all() {
	local m p
	for m in "${pt_mnts[@]}"; do
		fusermount3 -u "$m" || die "cannot unmount $m"
	done
	for p in "${pt_pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	pt_pids=() pt_mnts=()
}

pt_cleanup() {
	local m p i
	for m in "${pt_mnts[@]}"; do
		if mountpoint -q "$m"; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || true
		fi
	done
	for p in "${pt_pids[@]}"; do
		for i in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	pt_pids=() pt_mnts=()
}
