/*
 * mds_fuzz_test.c - the active sdfs-mds fed raw frames over TCP:
 * a broken frame closes that connection only, a well-framed request
 * with a bad body gets an error reply, bad names create nothing,
 * unknown ops are refused, and thousands of random frames leave the
 * same process active with the namespace untouched.
 *
 * Frames are built with common/proto.h. Random frames derive from a
 * logged seed: SDFS_TEST_SEED=... repeats them.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/proto.h"
#include "tests/cluster/fixture.h"
#include "tests/cluster/wire.h"

#define ROOT 1
#define WAIT_MS 5000
#define NRANDOM 3000
#define FRAME_MAX (SDFS_NS_REQ_SIZE + 2 * SDFS_NAME_MAX + SDFS_XATTR_SIZE_MAX + 4096)
#define NO_INODE (1ull << 40)   /* above every inode number in use */

static struct tcluster *tc;
static char addr[80];           /* the active mds */
static char active[32];
static pid_t active_pid;
static int bystander = -1;      /* a well-behaved connection opened first */
static uint64_t keep_ino, keep_file, link_ino;
static uint64_t req_ids = 5000;

static void up(void)
{
	struct sdfs_mds_status ms;
	struct sdfs *s;
	struct sdfs_stat st;

	tc = tcluster_start(&(struct tcluster_opts){ .auth_none = 1, .blockd = 3, .mds = 1 });
	s = tcluster_client(tc);
	cr_assert_eq(sdfs_mds_status(s, &ms), 0);
	cr_assert(ms.has_active && ms.reachable);
	snprintf(addr, sizeof(addr), "%s", ms.addr);
	snprintf(active, sizeof(active), "%s", ms.active);
	free(ms.list);
	active_pid = tcluster_pid(tc, active);
	cr_assert_gt(active_pid, 0);
	/* something to leave alone */
	cr_assert_eq(sdfs_ns_mkdir(s, ROOT, "keep", 0755, 0, 0, &st), 0);
	keep_ino = st.ino;
	cr_assert_eq(sdfs_ns_mknod(s, keep_ino, "file", S_IFREG | 0644, 0, 0, 0, &st), 0);
	keep_file = st.ino;
	cr_assert_eq(sdfs_ns_symlink(s, ROOT, "link", "keep/file", 0, 0, &st), 0);
	link_ino = st.ino;
	cr_assert_eq(sdfs_ns_setxattr(s, keep_file, "user.x", "value", 5, 0), 0);
	bystander = wire_connect(addr);
}

static void down(void)
{
	if (bystander >= 0)
		close(bystander);
	tcluster_stop(tc);
}

TestSuite(mds_fuzz, .init = up, .fini = down, .timeout = 180);

/* ---- frames ---- */

struct frame {
	uint8_t buf[SDFS_HDR_SIZE + FRAME_MAX];
	size_t len;             /* bytes to send */
	uint64_t req_id;
};

/*
 * An NS frame: @r as given (its length fields may lie), then @nlen,
 * @n2len and @dlen bytes of @name, @name2 and @data as they really
 * are; header and payload checksums right.
 */
static void ns_frame(struct frame *f, unsigned op, const struct sdfs_ns_req *r,
		     const void *name, size_t nlen, const void *name2, size_t n2len,
		     const void *data, size_t dlen)
{
	struct sdfs_hdr h = { .opcode = (uint8_t)op, .req_id = req_ids++, .oid = r->ino };
	uint8_t *p = f->buf + SDFS_HDR_SIZE;

	cr_assert_leq(SDFS_NS_REQ_SIZE + nlen + n2len + dlen, FRAME_MAX);
	proto_ns_req_encode(r, p);
	p += SDFS_NS_REQ_SIZE;
	/* absent parts are (NULL, 0): memcpy's pointers are nonnull */
	if (nlen)
		memcpy(p, name, nlen);
	if (n2len)
		memcpy(p + nlen, name2, n2len);
	if (dlen)
		memcpy(p + nlen + n2len, data, dlen);
	h.payload_len = (uint32_t)(SDFS_NS_REQ_SIZE + nlen + n2len + dlen);
	proto_hdr_encode(&h, f->buf + SDFS_HDR_SIZE, f->buf);
	f->len = SDFS_HDR_SIZE + h.payload_len;
	f->req_id = h.req_id;
}

/* A consistent NS request: lengths from the strings (which may hold NUL). */
static void ns_req(struct frame *f, unsigned op, uint64_t ino, uint64_t ino2,
		   const char *name, size_t nlen, const char *name2, size_t n2len,
		   const char *data, size_t dlen)
{
	struct sdfs_ns_req r = { .client_id = 0x5eed, .seq = req_ids, .ino = ino,
				 .ino2 = ino2, .mode = S_IFREG | 0644,
				 .name_len = (uint16_t)nlen, .name2_len = (uint16_t)n2len,
				 .data_len = (uint32_t)dlen, .max = 4096 };

	ns_frame(f, op, &r, name, nlen, name2, n2len, data, dlen);
}

/* Send @f on @fd and read its reply header (payload skipped). */
static void exchange(int fd, const struct frame *f, struct sdfs_hdr *r, const char *what)
{
	int ret = wire_send(fd, f->buf, f->len);

	cr_assert_eq(ret, 0, "%s: send: %s", what, strerror(-ret));
	ret = wire_recv_hdr(fd, r, WAIT_MS);
	cr_assert_eq(ret, 0, "%s: no reply (%s)", what, strerror(-ret));
	cr_assert(r->flags & SDFS_F_REPLY, "%s: reply without the reply flag", what);
	cr_assert_eq(r->req_id, f->req_id, "%s: the reply must echo req_id", what);
	cr_assert_eq(wire_skip(fd, r->payload_len, WAIT_MS), 0, "%s: short payload", what);
}

/* The errno of an NS reply, 0 on success; -1 if the result is not
 * OK or ERRNO (then @r->result says what). */
static int reply_errno(const struct sdfs_hdr *r)
{
	if (r->result == SDFS_RES_OK)
		return 0;
	return r->result == SDFS_RES_ERRNO ? (int)r->length : -1;
}

/* ---- the mds is fine ---- */

struct listing {
	char names[64][64];
	uint64_t inos[64];
	unsigned n;
};

static int list_fn(void *arg, const char *name, uint64_t ino, uint32_t type,
		   uint64_t cookie, const struct sdfs_stat *st)
{
	struct listing *l = arg;

	(void)type, (void)cookie, (void)st;
	if (l->n < 64) {
		snprintf(l->names[l->n], sizeof(l->names[0]), "%s", name);
		l->inos[l->n] = ino;
	}
	l->n++;
	return 0;
}

struct ns_view {
	struct listing root, keep;
	uint64_t inodes;
};

static void take_view(struct ns_view *v)
{
	struct sdfs *s = tcluster_client(tc);
	struct sdfs_mds_status ms;

	memset(v, 0, sizeof(*v));
	cr_assert_eq(sdfs_ns_readdir(s, ROOT, 0, 0, list_fn, &v->root), 0);
	cr_assert_eq(sdfs_ns_readdir(s, keep_ino, 0, 0, list_fn, &v->keep), 0);
	cr_assert_eq(sdfs_mds_status(s, &ms), 0);
	cr_assert(ms.reachable, "the active did not answer NS_INFO");
	v->inodes = ms.inodes;
	free(ms.list);
}

static void assert_same_listing(const struct listing *a, const struct listing *b,
				const char *what)
{
	cr_assert_eq(a->n, b->n, "%s: %u entries, were %u", what, b->n, a->n);
	for (unsigned i = 0; i < a->n && i < 64; i++) {
		cr_assert_str_eq(a->names[i], b->names[i], "%s: entry %u", what, i);
		cr_assert_eq(a->inos[i], b->inos[i], "%s: inode of %s", what, a->names[i]);
	}
}

/* The same process is still the active, answers everyone, and the
 * namespace is as @before. */
static void assert_unharmed(const struct ns_view *before, const char *what)
{
	struct sdfs_mds_status ms;
	struct ns_view now;
	struct frame *f = malloc(sizeof(*f));
	struct sdfs_hdr r;

	cr_assert(f);
	cr_assert_eq(tcluster_pid(tc, active), active_pid);
	cr_assert_eq(kill(active_pid, 0), 0, "%s: %s (pid %d) is gone", what, active,
		     (int)active_pid);
	cr_assert(tcluster_running(tc, active), "%s: %s is not running", what, active);
	cr_assert_eq(sdfs_mds_status(tcluster_client(tc), &ms), 0);
	cr_assert_str_eq(ms.active, active, "%s: the active changed", what);
	cr_assert(ms.reachable, "%s: the active does not answer", what);
	free(ms.list);
	ns_req(f, SDFS_OP_NS_GETATTR, ROOT, 0, NULL, 0, NULL, 0, NULL, 0);
	exchange(bystander, f, &r, "the bystander's GETATTR");
	cr_assert_eq(r.result, SDFS_RES_OK, "%s: the bystander got result %u", what, r.result);
	take_view(&now);
	assert_same_listing(&before->root, &now.root, "the root");
	assert_same_listing(&before->keep, &now.keep, "keep/");
	cr_assert_eq(now.inodes, before->inodes, "%s: %" PRIu64 " inodes, were %" PRIu64,
		     what, now.inodes, before->inodes);
	free(f);
}

/* ---- framing errors ---- */

static void edit_magic(uint8_t *w) { w[0] ^= 0xff; }
static void edit_hdr_csum(uint8_t *w) { w[61] ^= 0x01; }
static void edit_reply_flag(uint8_t *w) { w[7] = SDFS_F_REPLY; }
static void edit_payload_csum(uint8_t *w) { w[50] ^= 0x10; }
static void edit_huge_payload(uint8_t *w) { w[44] = 0xff; w[45] = 0xff; w[46] = 0xff; w[47] = 0x0f; }

/* Send a GETATTR frame edited by @edit (re-checksummed if @fix_csum):
 * the mds must close the connection and go on serving. */
static void send_broken(void (*edit)(uint8_t *), int fix_csum, const char *what,
			const struct ns_view *before)
{
	struct frame *f = malloc(sizeof(*f));
	int fd = wire_connect(addr), ret;

	cr_assert(f);
	ns_req(f, SDFS_OP_NS_GETATTR, ROOT, 0, NULL, 0, NULL, 0, NULL, 0);
	edit(f->buf);
	if (fix_csum)
		wire_fix_hdr_csum(f->buf);
	cr_assert_eq(wire_send(fd, f->buf, f->len), 0);
	ret = wire_wait_closed(fd, WAIT_MS);
	close(fd);
	cr_assert_eq(ret, 0, "%s: connection still open after %d ms (%s)", what, WAIT_MS,
		     strerror(-ret));
	cr_log_info("%s: connection closed", what);
	assert_unharmed(before, what);
	free(f);
}

Test(mds_fuzz, broken_frames_close_the_connection_and_the_mds_serves_on)
{
	struct ns_view before;

	take_view(&before);
	send_broken(edit_magic, 0, "bad magic", &before);
	send_broken(edit_magic, 1, "bad magic, header checksum fixed", &before);
	send_broken(edit_hdr_csum, 0, "bad header checksum", &before);
	send_broken(edit_reply_flag, 1, "a request flagged as a reply", &before);
	send_broken(edit_payload_csum, 1, "bad payload checksum", &before);
	send_broken(edit_huge_payload, 1, "a 256 MiB payload announced", &before);

	/* a newer major version: told so, then closed */
	struct frame *f = malloc(sizeof(*f));
	struct sdfs_hdr r;
	int fd = wire_connect(addr);

	cr_assert(f);
	ns_req(f, SDFS_OP_NS_GETATTR, ROOT, 0, NULL, 0, NULL, 0, NULL, 0);
	f->buf[4] = SDFS_PROTO_MAJOR + 1;
	wire_fix_hdr_csum(f->buf);
	cr_assert_eq(wire_send(fd, f->buf, f->len), 0);
	cr_assert_eq(wire_recv_hdr(fd, &r, WAIT_MS), 0, "no reply to a new major version");
	cr_assert_eq(r.result, SDFS_RES_BAD_VERSION, "result %u", r.result);
	cr_assert_eq(r.req_id, f->req_id);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0);
	close(fd);

	/* a payload cut short by the sender closing */
	fd = wire_connect(addr);
	ns_req(f, SDFS_OP_NS_MKNOD, ROOT, 0, "cut", 3, NULL, 0, NULL, 0);
	cr_assert_eq(wire_send(fd, f->buf, f->len - 2), 0);
	shutdown(fd, SHUT_WR);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0);
	close(fd);
	assert_unharmed(&before, "a truncated payload");
	free(f);
}

/* ---- bodies that do not add up ---- */

Test(mds_fuzz, lengths_that_do_not_add_up_get_bad_msg_and_the_connection_stays)
{
	struct frame *f = malloc(sizeof(*f));
	struct ns_view before;
	struct sdfs_hdr r;
	uint8_t big[600];
	int fd = wire_connect(addr);
	struct {
		const char *what;
		uint16_t nlen, n2len;
		uint32_t dlen;
		size_t real_n, real_n2, real_d;
	} cases[] = {
		{ "name_len 5, 3 bytes", 5, 0, 0, 3, 0, 0 },
		{ "name_len 3, 5 bytes", 3, 0, 0, 5, 0, 0 },
		{ "name2_len 10, none", 1, 10, 0, 1, 0, 0 },
		{ "data_len 1 too many", 1, 0, 9, 1, 0, 8 },
		{ "data_len 1 too few", 1, 0, 7, 1, 0, 8 },
		{ "name_len 65535", 0xffff, 0, 0, 4, 0, 0 },
		{ "data_len 4 GiB - 1", 1, 0, 0xffffffffu, 1, 0, 0 },
		{ "all lengths max", 0xffff, 0xffff, 0xffffffffu, 100, 100, 100 },
		{ "lengths wrap to the payload", 0xffff, 0xffff, 0xfffe0002u + 3, 1, 1, 1 },
		{ "zero lengths, 600 bytes", 0, 0, 0, 0, 0, 600 },
	};

	cr_assert(f);
	tfill_random(big, sizeof(big), 11);
	take_view(&before);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sdfs_ns_req q = { .client_id = 77, .seq = i + 1, .ino = ROOT,
					 .mode = S_IFREG | 0644, .name_len = cases[i].nlen,
					 .name2_len = cases[i].n2len, .data_len = cases[i].dlen };
		static const unsigned ops[] = { SDFS_OP_NS_MKNOD, SDFS_OP_NS_RENAME,
						SDFS_OP_NS_SYMLINK, SDFS_OP_NS_LOOKUP };

		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
			ns_frame(f, ops[k], &q, big, cases[i].real_n, big, cases[i].real_n2,
				 big, cases[i].real_d);
			exchange(fd, f, &r, cases[i].what);
			cr_assert_eq(r.result, SDFS_RES_BAD_MSG, "%s (%s): result %u length %u",
				     cases[i].what, proto_op_name(ops[k]), r.result, r.length);
		}
	}
	/* shorter than an ns_req, and empty */
	for (size_t len = 0; len < SDFS_NS_REQ_SIZE; len += 29) {
		struct sdfs_hdr h = { .opcode = SDFS_OP_NS_MKDIR, .req_id = req_ids++,
				      .payload_len = (uint32_t)len };

		proto_hdr_encode(&h, big, f->buf);
		memcpy(f->buf + SDFS_HDR_SIZE, big, len);
		f->len = SDFS_HDR_SIZE + len;
		f->req_id = h.req_id;
		exchange(fd, f, &r, "a short ns_req");
		cr_assert_eq(r.result, SDFS_RES_BAD_MSG, "%zu-byte ns_req: result %u", len,
			     r.result);
	}
	/* the same connection still works */
	ns_req(f, SDFS_OP_NS_LOOKUP, ROOT, 0, "keep", 4, NULL, 0, NULL, 0);
	exchange(fd, f, &r, "a good LOOKUP after them");
	cr_assert_eq(r.result, SDFS_RES_OK, "result %u", r.result);
	close(fd);
	assert_unharmed(&before, "inconsistent lengths");
	free(f);
}

/* ---- names ---- */

Test(mds_fuzz, bad_names_get_errno_replies_and_create_nothing)
{
	static const struct {
		const char *what;
		const char *name;
		size_t len;
		int err;
	} names[] = {
		{ "a/b", "a/b", 3, EINVAL },
		{ "/", "/", 1, EINVAL },
		{ "trailing slash", "keep/", 5, EINVAL },
		{ "a NUL inside", "a\0b", 3, EINVAL },
		{ "a NUL at the end", "ab\0", 3, EINVAL },
		{ "empty", "", 0, EINVAL },
		{ "256 bytes", NULL, 256, ENAMETOOLONG },
		{ "1000 bytes", NULL, 1000, ENAMETOOLONG },
	};
	struct frame *f = malloc(sizeof(*f));
	struct ns_view before;
	struct sdfs_hdr r;
	char longname[1000];
	int fd = wire_connect(addr);

	cr_assert(f);
	memset(longname, 'q', sizeof(longname));
	take_view(&before);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *n = names[i].name ? names[i].name : longname;
		size_t nl = names[i].len;
		char what[96];
		struct outcome {
			const char *op;
			int e;
		} got[8];
		int k = 0;

		ns_req(f, SDFS_OP_NS_MKNOD, ROOT, 0, n, nl, NULL, 0, NULL, 0);
		exchange(fd, f, &r, "MKNOD");
		got[k++] = (struct outcome){ "MKNOD", reply_errno(&r) };
		ns_req(f, SDFS_OP_NS_MKDIR, ROOT, 0, n, nl, NULL, 0, NULL, 0);
		exchange(fd, f, &r, "MKDIR");
		got[k++] = (struct outcome){ "MKDIR", reply_errno(&r) };
		ns_req(f, SDFS_OP_NS_SYMLINK, ROOT, 0, n, nl, NULL, 0, "keep", 4);
		exchange(fd, f, &r, "SYMLINK");
		got[k++] = (struct outcome){ "SYMLINK", reply_errno(&r) };
		ns_req(f, SDFS_OP_NS_LINK, keep_file, ROOT, NULL, 0, n, nl, NULL, 0);
		exchange(fd, f, &r, "LINK");
		got[k++] = (struct outcome){ "LINK", reply_errno(&r) };
		ns_req(f, SDFS_OP_NS_RENAME, ROOT, ROOT, "link", 4, n, nl, NULL, 0);
		exchange(fd, f, &r, "RENAME to");
		got[k++] = (struct outcome){ "RENAME to", reply_errno(&r) };
		ns_req(f, SDFS_OP_NS_RENAME, ROOT, keep_ino, n, nl, "x", 1, NULL, 0);
		exchange(fd, f, &r, "RENAME from");
		got[k++] = (struct outcome){ "RENAME from", reply_errno(&r) };
		ns_req(f, SDFS_OP_NS_LOOKUP, ROOT, 0, n, nl, NULL, 0, NULL, 0);
		exchange(fd, f, &r, "LOOKUP");
		got[k++] = (struct outcome){ "LOOKUP", reply_errno(&r) };
		ns_req(f, SDFS_OP_NS_UNLINK, ROOT, 0, n, nl, NULL, 0, NULL, 0);
		exchange(fd, f, &r, "UNLINK");
		got[k++] = (struct outcome){ "UNLINK", reply_errno(&r) };
		for (int j = 0; j < k; j++) {
			snprintf(what, sizeof(what), "%s with a name %s", got[j].op,
				 names[i].what);
			cr_assert_eq(got[j].e, names[i].err, "%s: errno %d (%s), want %s", what,
				     got[j].e, got[j].e > 0 ? strerrorname_np(got[j].e) : "-",
				     strerrorname_np(names[i].err));
		}
	}
	close(fd);
	assert_unharmed(&before, "bad names");
	free(f);
}

/* ---- the invalidation channel ---- */

/* A subscription with no client id is refused; a good one is answered
 * and turns the connection into the client's channel, on which anything
 * but an answer to a notification closes it — and nothing else. */
Test(mds_fuzz, garbage_on_an_invalidation_channel_closes_only_it)
{
	struct frame *f = malloc(sizeof(*f));
	struct sdfs_ns_req q = { .client_id = 0, .seq = 1, .arg = 1000 };
	struct ns_view before;
	struct sdfs_hdr r;
	uint8_t junk[200];
	int fd = wire_connect(addr);

	cr_assert(f);
	take_view(&before);
	ns_frame(f, SDFS_OP_NS_SUBSCRIBE, &q, NULL, 0, NULL, 0, NULL, 0);
	exchange(fd, f, &r, "subscribe without a client id");
	cr_assert_eq(reply_errno(&r), EINVAL, "client id 0: result %u", r.result);
	q.client_id = 0xfeed;
	q.arg = 1ull << 40;
	ns_frame(f, SDFS_OP_NS_SUBSCRIBE, &q, NULL, 0, NULL, 0, NULL, 0);
	exchange(fd, f, &r, "subscribe with a cache time over 2^32 ms");
	cr_assert_eq(reply_errno(&r), EINVAL, "huge cache time: result %u", r.result);
	q.arg = 1000;
	ns_frame(f, SDFS_OP_NS_SUBSCRIBE, &q, NULL, 0, NULL, 0, NULL, 0);
	exchange(fd, f, &r, "subscribe");
	cr_assert_eq(r.result, SDFS_RES_OK, "subscribe: result %u", r.result);
	tfill_random(junk, sizeof(junk), 77);
	cr_assert_eq(wire_send(fd, junk, sizeof(junk)), 0);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0, "garbage left the channel open");
	close(fd);

	/* a request on the channel instead of an answer: closed too */
	fd = wire_connect(addr);
	exchange(fd, f, &r, "subscribe again");
	cr_assert_eq(r.result, SDFS_RES_OK);
	ns_req(f, SDFS_OP_NS_GETATTR, ROOT, 0, NULL, 0, NULL, 0, NULL, 0);
	cr_assert_eq(wire_send(fd, f->buf, f->len), 0);
	cr_assert_eq(wire_wait_closed(fd, WAIT_MS), 0, "a request on the channel was "
		     "taken");
	close(fd);
	assert_unharmed(&before, "invalidation channel");
	free(f);
}

/* ---- unknown ops ---- */

Test(mds_fuzz, unknown_ops_get_unknown_op)
{
	static const unsigned ops[] = { 0x40, 0x7f, SDFS_OP_OBJ_READ, SDFS_OP_OBJ_WRITE,
					SDFS_OP_NODE_INFO, SDFS_OP_MDS_FENCE, 0x00,
					SDFS_OP_NS_SYNC + 1, 0x80, 0xff };
	struct frame *f = malloc(sizeof(*f));
	struct ns_view before;
	struct sdfs_hdr r;
	int fd = wire_connect(addr);

	cr_assert(f);
	take_view(&before);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		/* with a valid ns_req, and with no payload */
		ns_req(f, ops[i], ROOT, 0, "keep", 4, NULL, 0, NULL, 0);
		exchange(fd, f, &r, proto_op_name(ops[i]));
		cr_assert_eq(r.result, SDFS_RES_UNKNOWN_OP, "op 0x%02x: result %u", ops[i],
			     r.result);
		cr_assert_eq(r.opcode, ops[i], "the reply must echo the opcode");
		struct sdfs_hdr h = { .opcode = (uint8_t)ops[i], .req_id = req_ids++,
				      .oid = 1, .length = 4096 };
		proto_hdr_encode(&h, NULL, f->buf);
		f->len = SDFS_HDR_SIZE;
		f->req_id = h.req_id;
		exchange(fd, f, &r, proto_op_name(ops[i]));
		cr_assert_eq(r.result, SDFS_RES_UNKNOWN_OP, "op 0x%02x without payload: "
			     "result %u", ops[i], r.result);
	}
	close(fd);
	assert_unharmed(&before, "unknown ops");
	free(f);
}

/* ---- random frames ---- */

enum fuzz_kind {
	FZ_RANDOM_BODY,         /* valid header, NS op, random payload */
	FZ_RANDOM_FIELDS,       /* consistent ns_req, random fields, no inode */
	FZ_RANDOM_OP,           /* valid header, any opcode, random payload */
	FZ_RANDOM_HEADER,       /* 64 random bytes */
	FZ_FLIPPED_HEADER,      /* a valid header with one bit flipped */
	FZ_TRUNCATED,           /* payload cut short, then the sender closes */
	FZ_BAD_PAYLOAD_CSUM,
	FZ_TOO_BIG,             /* payload_len over the mds's cap */
	FZ_KINDS
};

static const char *const kind_names[] = {
	"random body", "random fields", "random op", "random header", "flipped header bit",
	"truncated payload", "bad payload checksum", "payload too big",
};

/* A valid header for @payload[@len] with @op into @f. */
static void framed(struct frame *f, unsigned op, const uint8_t *payload, size_t len)
{
	struct sdfs_hdr h = { .opcode = (uint8_t)op, .req_id = req_ids++,
			      .payload_len = (uint32_t)len };

	memmove(f->buf + SDFS_HDR_SIZE, payload, len);
	proto_hdr_encode(&h, f->buf + SDFS_HDR_SIZE, f->buf);
	f->len = SDFS_HDR_SIZE + len;
	f->req_id = h.req_id;
}

/* NS_SUBSCRIBE too: random frames never pick it (a subscription turns
 * the connection into a channel; its own test is below). NS_OPEN (1.8)
 * NS_OBJCAP (2.0) and NS_SYNC (2.1) are known too: a random op is never
 * one. */
static int is_ns_op(unsigned op)
{
	return (op >= SDFS_OP_NS_LOOKUP && op <= SDFS_OP_NS_SUBSCRIBE) ||
	       op == SDFS_OP_NS_OPEN || op == SDFS_OP_NS_OBJCAP || op == SDFS_OP_NS_SYNC;
}

static int is_mutation(unsigned op)
{
	switch (op) {
	case SDFS_OP_NS_SETATTR: case SDFS_OP_NS_MKNOD: case SDFS_OP_NS_MKDIR:
	case SDFS_OP_NS_UNLINK: case SDFS_OP_NS_RMDIR: case SDFS_OP_NS_RENAME:
	case SDFS_OP_NS_LINK: case SDFS_OP_NS_SYMLINK: case SDFS_OP_NS_SETXATTR:
	case SDFS_OP_NS_RMXATTR: case SDFS_OP_NS_VOL_CREATE: case SDFS_OP_NS_VOL_SNAP:
	case SDFS_OP_NS_VOL_SNAPDEL: case SDFS_OP_NS_VOL_ROLLBACK: case SDFS_OP_NS_VOL_CLONE:
	case SDFS_OP_NS_LOCK_SET: case SDFS_OP_NS_LOCK_UNLOCK: case SDFS_OP_NS_LOCK_RELEASE:
		return 1;
	}
	return 0;
}

/* Small lengths mostly, sometimes up to the cap. */
static size_t rand_len(uint64_t *rng, size_t max)
{
	uint64_t r = trand(rng);

	switch (r % 4) {
	case 0: return (size_t)(r >> 8) % 16;
	case 1: return SDFS_NS_REQ_SIZE - 4 + (size_t)(r >> 8) % 16;
	case 2: return (size_t)(r >> 8) % 1024;
	}
	return (size_t)(r >> 8) % max;
}

/* What the mds must do with the frame. */
enum expect { EX_REPLY, EX_CLOSE };

struct fuzz_stats {
	unsigned kinds[FZ_KINDS];
	unsigned replies, closes, ok_replies;
};

/*
 * Build random frame @i of kind @kind into @f; its expected outcome
 * and, for a reply, the result it must have (-1: any but OK for a
 * mutation, -2: any).
 */
static enum expect random_frame(struct frame *f, uint64_t *rng, enum fuzz_kind kind,
				int *want_res, int *mutation)
{
	uint8_t *pl = malloc(FRAME_MAX);
	size_t len;
	unsigned op;
	struct sdfs_ns_req q;
	enum expect ex = EX_CLOSE;

	cr_assert(pl);
	*want_res = -2;
	*mutation = 0;
	switch (kind) {
	case FZ_RANDOM_BODY:
		op = SDFS_OP_NS_LOOKUP + (unsigned)(trand(rng) % (SDFS_OP_NS_INFO -
							       SDFS_OP_NS_LOOKUP + 2));
		if (op > SDFS_OP_NS_INFO)       /* 2.0: garbage asking for caps */
			op = SDFS_OP_NS_OBJCAP;
		len = rand_len(rng, FRAME_MAX);
		tfill_random(pl, len, trand(rng));
		framed(f, op, pl, len);
		/* the mds decodes it as we do; the rare body that adds up
		 * gets some reply */
		*want_res = proto_ns_req_decode(pl, len, &q) ? SDFS_RES_BAD_MSG : -2;
		if (*want_res == -2 && is_mutation(op))
			*mutation = 1;
		ex = EX_REPLY;
		break;
	case FZ_RANDOM_FIELDS: {
		size_t nl = (size_t)(trand(rng) % 300), n2 = (size_t)(trand(rng) % 300);
		size_t dl = (size_t)(trand(rng) % 3) ? (size_t)(trand(rng) % 300)
						      : (size_t)(trand(rng) % (SDFS_XATTR_SIZE_MAX + 2));

		op = SDFS_OP_NS_LOOKUP + (unsigned)(trand(rng) % (SDFS_OP_NS_LOCK_RELEASE -
							       SDFS_OP_NS_LOOKUP + 1));
		tfill_random(&q, sizeof(q), trand(rng));
		/* Mutations never name an inode that exists, so nothing can
		 * change; reads often do, to get past the inode lookup. */
		q.ino = NO_INODE | trand(rng);
		q.ino2 = NO_INODE | trand(rng);
		if (!is_mutation(op) && trand(rng) % 2) {
			const uint64_t real[] = { ROOT, keep_ino, keep_file, link_ino };

			q.ino = real[trand(rng) % 4];
			q.max = (uint32_t)(trand(rng) % 3 ? trand(rng) % 70000 : trand(rng));
			q.arg = trand(rng) % 2 ? trand(rng) % 8 : trand(rng);
		}
		q.name_len = (uint16_t)nl;
		q.name2_len = (uint16_t)n2;
		q.data_len = (uint32_t)dl;
		tfill_random(pl, nl + n2 + dl, trand(rng));
		if (trand(rng) % 2 && nl)       /* sometimes a plausible name */
			memcpy(pl, "user.x", nl < 6 ? nl : 6);
		ns_frame(f, op, &q, pl, nl, pl + nl, n2, pl + nl + n2, dl);
		*want_res = is_mutation(op) ? -1 : -2;
		*mutation = is_mutation(op);
		ex = EX_REPLY;
		break;
	}
	case FZ_RANDOM_OP:
		do
			op = (unsigned)(trand(rng) % 256);
		while (is_ns_op(op));
		len = rand_len(rng, 4096);
		tfill_random(pl, len, trand(rng));
		framed(f, op, pl, len);
		*want_res = SDFS_RES_UNKNOWN_OP;
		ex = EX_REPLY;
		break;
	case FZ_RANDOM_HEADER:
		tfill_random(f->buf, SDFS_HDR_SIZE, trand(rng));
		if (trand(rng) % 2) {   /* the right magic, the rest random */
			uint32_t m = SDFS_PROTO_MAGIC;

			memcpy(f->buf, &m, 4);
		}
		len = (size_t)(trand(rng) % 200);
		tfill_random(f->buf + SDFS_HDR_SIZE, len, trand(rng));
		f->len = SDFS_HDR_SIZE + len;
		break;
	case FZ_FLIPPED_HEADER: {
		unsigned bit = (unsigned)(trand(rng) % (SDFS_HDR_SIZE * 8));

		ns_req(f, SDFS_OP_NS_GETATTR, ROOT, 0, NULL, 0, NULL, 0, NULL, 0);
		f->buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		break;
	}
	case FZ_TRUNCATED:
		len = 1 + rand_len(rng, FRAME_MAX - 1);
		tfill_random(pl, len, trand(rng));
		framed(f, SDFS_OP_NS_LOOKUP + (unsigned)(trand(rng) % 18), pl, len);
		f->len -= 1 + (size_t)(trand(rng) % len);
		break;
	case FZ_BAD_PAYLOAD_CSUM:
		len = 1 + rand_len(rng, 4096);
		tfill_random(pl, len, trand(rng));
		framed(f, SDFS_OP_NS_LOOKUP + (unsigned)(trand(rng) % 18), pl, len);
		f->buf[SDFS_HDR_SIZE + (size_t)(trand(rng) % len)] ^= 0x5a;
		break;
	case FZ_TOO_BIG: {
		struct sdfs_hdr h = { .opcode = SDFS_OP_NS_SETXATTR, .req_id = req_ids++ };
		uint32_t plen = htole32(FRAME_MAX + 1 + (uint32_t)(trand(rng) % 0x7fffffffu));
		uint64_t c = trand(rng) | 1;

		/* encoded without payload, then given a length over the cap
		 * and some payload checksum */
		proto_hdr_encode(&h, NULL, f->buf);
		memcpy(f->buf + 44, &plen, 4);
		memcpy(f->buf + 48, &c, 8);
		wire_fix_hdr_csum(f->buf);
		f->len = SDFS_HDR_SIZE + (size_t)(trand(rng) % 100);
		tfill_random(f->buf + SDFS_HDR_SIZE, f->len - SDFS_HDR_SIZE, trand(rng));
		break;
	}
	default:
		break;
	}
	free(pl);
	return ex;
}

Test(mds_fuzz, thousands_of_random_frames_leave_the_same_active_and_namespace)
{
	uint64_t seed = tseed("frames"), rng = seed;
	struct frame *f = malloc(sizeof(*f));
	struct fuzz_stats fs = { 0 };
	struct ns_view before;
	struct sdfs_hdr r;
	int fd = -1;
	int64_t t0 = tnow_ms();

	cr_assert(f);
	take_view(&before);
	for (unsigned i = 0; i < NRANDOM; i++) {
		enum fuzz_kind kind = (enum fuzz_kind)(trand(&rng) % FZ_KINDS);
		int want_res, mutation, ret;
		enum expect ex = random_frame(f, &rng, kind, &want_res, &mutation);

		fs.kinds[kind]++;
		if (fd < 0)
			fd = wire_connect(addr);
		ret = wire_send(fd, f->buf, f->len);
		if (ex == EX_CLOSE) {
			/* the mds may close before reading it all: a send error
			 * is fine, an open connection is not */
			if (kind == FZ_TRUNCATED || kind == FZ_TOO_BIG)
				shutdown(fd, SHUT_WR);
			ret = wire_wait_closed(fd, WAIT_MS);
			cr_assert_eq(ret, 0, "frame %u (%s, seed %" PRIu64 "): connection "
				     "still open (%s)", i, kind_names[kind], seed, strerror(-ret));
			close(fd);
			fd = -1;
			fs.closes++;
			continue;
		}
		cr_assert_eq(ret, 0, "frame %u (%s, seed %" PRIu64 "): send: %s", i,
			     kind_names[kind], seed, strerror(-ret));
		ret = wire_recv_hdr(fd, &r, WAIT_MS);
		cr_assert_eq(ret, 0, "frame %u (%s, seed %" PRIu64 "): no reply (%s)", i,
			     kind_names[kind], seed, strerror(-ret));
		cr_assert_eq(r.req_id, f->req_id, "frame %u: req_id not echoed", i);
		cr_assert_eq(wire_skip(fd, r.payload_len, WAIT_MS), 0);
		if (want_res >= 0)
			cr_assert_eq(r.result, (uint32_t)want_res, "frame %u (%s, seed %" PRIu64
				     "): result %u, want %d", i, kind_names[kind], seed,
				     r.result, want_res);
		if (want_res == -1 || mutation)
			cr_assert_neq(r.result, SDFS_RES_OK, "frame %u (%s, seed %" PRIu64 "): "
				      "a random %s succeeded", i, kind_names[kind], seed,
				      proto_op_name(f->buf[6]));
		fs.replies++;
		fs.ok_replies += r.result == SDFS_RES_OK;
	}
	if (fd >= 0)
		close(fd);
	cr_log_info("%u random frames in %" PRId64 " ms: %u replies (%u OK), %u closed "
		    "connections", NRANDOM, tnow_ms() - t0, fs.replies, fs.ok_replies,
		    fs.closes);
	for (int k = 0; k < FZ_KINDS; k++)
		cr_log_info("  %-22s %u", kind_names[k], fs.kinds[k]);
	assert_unharmed(&before, "random frames");
	free(f);
}
