/*
 * cmap.c - see cmap.h. The documents are lines of space-separated
 * fields; the first line names the document and its format version.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/cmap.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/net.h"

static const char *const state_names[] = {
	[CMAP_UP] = "up", [CMAP_DOWN] = "down", [CMAP_OUT] = "out",
};

const char *cmap_state_name(unsigned state)
{
	return state < 3 ? state_names[state] : "?";
}

int cmap_node_is_placed(const struct cmap_node *nd)
{
	return nd->state != CMAP_OUT && !nd->drain && nd->weight > 0;
}

const struct cmap_node *cmap_node_peer(const struct cmap_node *nd,
				       struct cmap_node *out)
{
	*out = *nd;
	if (nd->cport) {
		memcpy(out->host, nd->chost, sizeof(out->host));
		out->port = nd->cport;
	}
	return out;
}

static int cmp_node(const void *a, const void *b)
{
	const struct cmap_node *x = a, *y = b;

	return x->node_id < y->node_id ? -1 : x->node_id > y->node_id;
}

int cmap_new(uint64_t epoch, const struct cmap_node *nodes, size_t n,
	     struct cmap **out)
{
	struct cmap *m = calloc(1, sizeof(*m));
	struct ring_node *rn = NULL;
	int ret = -ENOMEM;

	if (!m)
		return -ENOMEM;
	if (n > RING_MAX_NODES) {
		ret = -EINVAL;
		goto out_free;
	}
	m->epoch = epoch;
	m->n = n;
	m->nodes = calloc(n ? n : 1, sizeof(*nodes));
	rn = calloc(n ? n : 1, sizeof(*rn));
	if (!m->nodes || !rn)
		goto out_free;
	if (n)
		memcpy(m->nodes, nodes, n * sizeof(*nodes));
	qsort(m->nodes, n, sizeof(*nodes), cmp_node);
	for (size_t i = 0; i < n; i++)
		rn[i] = (struct ring_node){ m->nodes[i].node_id, m->nodes[i].zone,
			cmap_node_is_placed(&m->nodes[i]) ? m->nodes[i].weight : 0 };
	ret = ring_new(epoch, rn, n, &m->ring);
	if (ret)
		goto out_free;
	free(rn);
	*out = m;
	return 0;
out_free:
	free(rn);
	free(m->nodes);
	free(m);
	return ret;
}

void cmap_free(struct cmap *m)
{
	if (!m)
		return;
	ring_put(m->ring);
	free(m->nodes);
	free(m);
}

const struct cmap_node *cmap_find(const struct cmap *m, uint32_t node_id)
{
	struct cmap_node key = { .node_id = node_id };

	return bsearch(&key, m->nodes, m->n, sizeof(key), cmp_node);
}

/* A growable string for encoders; the first sb_printf allocates it. */
struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

__attribute__((format(printf, 2, 3)))
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	if (!b->p) {
		b->cap = 256;
		b->p = malloc(b->cap);
		if (!b->p) {
			b->err = -ENOMEM;
			return;
		}
	}
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if (b->len + n < b->cap)
			break;
		size_t cap = (b->cap + n + 1) * 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	b->len += n;
}

static int sb_finish(struct sbuf *b, char **out)
{
	if (b->err || b->len > CMAP_MAX_DOC) {
		free(b->p);
		return b->err ? b->err : -E2BIG;
	}
	*out = b->p;
	return 0;
}

static void node_line(struct sbuf *b, const struct cmap_node *nd)
{
	sb_printf(b, "node %" PRIu32 " %s:%u zone=%" PRIu32 " weight=%" PRIu32
		  " state=%s", nd->node_id, nd->host, nd->port, nd->zone,
		  nd->weight, cmap_state_name(nd->state));
	if (nd->down_ms)
		sb_printf(b, " down=%" PRIu64, nd->down_ms);
	if (nd->drain)
		sb_printf(b, " drain=1");
	if (nd->wset)
		sb_printf(b, " wset=1");
	if (nd->full)
		sb_printf(b, " full=1");
	if (nd->cport)
		sb_printf(b, " cluster=%s:%u", nd->chost, nd->cport);
	sb_printf(b, "\n");
}

int cmap_encode(const struct cmap *m, char **out)
{
	struct sbuf b = { 0 };

	sb_printf(&b, "sdfs-map 1\nepoch %" PRIu64 "\n", m->epoch);
	for (size_t i = 0; i < m->n; i++)
		node_line(&b, &m->nodes[i]);
	return sb_finish(&b, out);
}

int cmap_member_encode(const struct cmap_node *nd, char **out)
{
	struct sbuf b = { 0 };

	sb_printf(&b, "sdfs-member 1\n");
	node_line(&b, nd);
	return sb_finish(&b, out);
}

/* Strict unsigned parse of a whole token into [0, max]. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EBADMSG;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EBADMSG;
	*out = v;
	return 0;
}

static int parse_kv(const char *tok, const char *key, uint64_t max, uint64_t *out)
{
	size_t kl = strlen(key);

	if (strncmp(tok, key, kl) != 0 || tok[kl] != '=')
		return -EBADMSG;
	return parse_u64(tok + kl + 1, max, out);
}

/*
 * "node ID HOST:PORT zone=Z weight=W state=S [down=MS] [drain=1] [wset=1]
 * [full=1] [cluster=HOST:PORT]",
 * already split into @t.
 */
static int parse_node(char **t, int nt, struct cmap_node *nd)
{
	uint64_t v;

	memset(nd, 0, sizeof(*nd));
	if (nt < 6 || strcmp(t[0], "node") != 0)
		return -EBADMSG;
	if (parse_u64(t[1], UINT32_MAX, &v) || v == 0)
		return -EBADMSG;
	nd->node_id = (uint32_t)v;
	if (net_parse_addr(t[2], nd->host, sizeof(nd->host), &nd->port) ||
	    nd->port == 0)
		return -EBADMSG;
	if (parse_kv(t[3], "zone", UINT32_MAX, &v))
		return -EBADMSG;
	nd->zone = (uint32_t)v;
	if (parse_kv(t[4], "weight", UINT32_MAX, &v))
		return -EBADMSG;
	nd->weight = (uint32_t)v;
	if (strcmp(t[5], "state=up") == 0)
		nd->state = CMAP_UP;
	else if (strcmp(t[5], "state=down") == 0)
		nd->state = CMAP_DOWN;
	else if (strcmp(t[5], "state=out") == 0)
		nd->state = CMAP_OUT;
	else
		return -EBADMSG;
	for (int i = 6; i < nt; i++) {
		if (parse_kv(t[i], "down", UINT64_MAX, &v) == 0 && !nd->down_ms && v)
			nd->down_ms = v;
		else if (!strcmp(t[i], "drain=1") && !nd->drain)
			nd->drain = 1;
		else if (!strcmp(t[i], "wset=1") && !nd->wset)
			nd->wset = 1;
		else if (!strcmp(t[i], "full=1") && !nd->full)
			nd->full = 1;
		else if (!strncmp(t[i], "cluster=", 8) && !nd->cport) {
			if (net_parse_addr(t[i] + 8, nd->chost, sizeof(nd->chost),
					   &nd->cport) || nd->cport == 0)
				return -EBADMSG;
		} else
			return -EBADMSG;
	}
	return 0;
}

/*
 * Calls @fn for each line of @buf split into at most 12 tokens. The copy
 * is NUL-terminated, so input need not be. Stops at the first error.
 */
typedef int (*line_fn)(char **t, int nt, int lineno, void *arg);

static int each_line(const char *buf, size_t len, line_fn fn, void *arg)
{
	char *copy, *save = NULL, *line;
	int lineno = 0, ret = 0;

	if (len > CMAP_MAX_DOC || memchr(buf, '\0', len))
		return -EBADMSG;
	copy = strndup(buf, len);
	if (!copy)
		return -ENOMEM;
	for (line = strtok_r(copy, "\n", &save); line && !ret;
	     line = strtok_r(NULL, "\n", &save)) {
		char *t[12], *s2 = NULL;
		int nt = 0;

		for (char *tok = strtok_r(line, " \t", &s2); tok;
		     tok = strtok_r(NULL, " \t", &s2)) {
			if (nt == 12) {
				ret = -EBADMSG;
				break;
			}
			t[nt++] = tok;
		}
		if (!ret && nt)
			ret = fn(t, nt, lineno++, arg);
	}
	free(copy);
	return ret;
}

struct map_parse {
	uint64_t epoch;
	int have_epoch;
	size_t n, cap;
	struct cmap_node *nodes;
};

static int map_line(char **t, int nt, int lineno, void *arg)
{
	struct map_parse *p = arg;

	if (lineno == 0)
		return nt == 2 && !strcmp(t[0], "sdfs-map") && !strcmp(t[1], "1")
			? 0 : -EBADMSG;
	if (!strcmp(t[0], "epoch")) {
		if (nt != 2 || p->have_epoch || parse_u64(t[1], UINT32_MAX, &p->epoch))
			return -EBADMSG;
		p->have_epoch = 1;
		return 0;
	}
	if (p->n == RING_MAX_NODES)
		return -EBADMSG;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct cmap_node *nn = realloc(p->nodes, cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		p->nodes = nn;
		p->cap = cap;
	}
	return parse_node(t, nt, &p->nodes[p->n++]);
}

int cmap_decode(const char *buf, size_t len, struct cmap **out)
{
	struct map_parse p = { 0 };
	int ret = each_line(buf, len, map_line, &p);

	if (!ret && (!p.have_epoch || p.epoch == 0))
		ret = -EBADMSG;
	if (!ret) {
		ret = cmap_new(p.epoch, p.nodes, p.n, out);
		if (ret == -EINVAL)
			ret = -EBADMSG;   /* duplicate node ids */
	}
	free(p.nodes);
	return ret;
}

struct member_parse {
	struct cmap_node *nd;
	int have;
};

static int member_line(char **t, int nt, int lineno, void *arg)
{
	struct member_parse *p = arg;

	if (lineno == 0)
		return nt == 2 && !strcmp(t[0], "sdfs-member") && !strcmp(t[1], "1")
			? 0 : -EBADMSG;
	if (p->have)
		return -EBADMSG;
	p->have = 1;
	return parse_node(t, nt, p->nd);
}

int cmap_member_decode(const char *buf, size_t len, struct cmap_node *nd)
{
	struct member_parse p = { .nd = nd };
	int ret = each_line(buf, len, member_line, &p);

	return ret ? ret : p.have ? 0 : -EBADMSG;
}

int cluster_config_encode(const struct cluster_config *c, char **out)
{
	struct sbuf b = { 0 };

	sb_printf(&b, "sdfs-config 1\nuuid %s\ncopies %u\nobj_size %" PRIu32
		  "\ncreated %" PRIu64 "\nout_grace_ms %" PRIu32 "\nauth %s\n", c->uuid,
		  c->copies, c->obj_size, c->created, c->out_grace_ms,
		  c->auth == CMAP_AUTH_REQUIRED ? "required" : "none");
	return sb_finish(&b, out);
}

static int config_line(char **t, int nt, int lineno, void *arg)
{
	struct cluster_config *c = arg;
	uint64_t v;

	if (lineno == 0)
		return nt == 2 && !strcmp(t[0], "sdfs-config") && !strcmp(t[1], "1")
			? 0 : -EBADMSG;
	if (nt != 2)
		return -EBADMSG;
	if (!strcmp(t[0], "uuid")) {
		if (strlen(t[1]) >= sizeof(c->uuid))
			return -EBADMSG;
		strcpy(c->uuid, t[1]);
	} else if (!strcmp(t[0], "copies")) {
		if (parse_u64(t[1], RING_MAX_COPIES, &v) || v == 0)
			return -EBADMSG;
		c->copies = (unsigned)v;
	} else if (!strcmp(t[0], "obj_size")) {
		if (parse_u64(t[1], 64u << 20, &v) || v == 0 || v % 4096)
			return -EBADMSG;
		c->obj_size = (uint32_t)v;
	} else if (!strcmp(t[0], "created")) {
		if (parse_u64(t[1], UINT64_MAX, &c->created))
			return -EBADMSG;
	} else if (!strcmp(t[0], "out_grace_ms")) {
		if (parse_u64(t[1], 7 * 86400 * 1000u, &v))
			return -EBADMSG;
		c->out_grace_ms = (uint32_t)v;
	} else if (!strcmp(t[0], "auth")) {
		if (!strcmp(t[1], "required"))
			c->auth = CMAP_AUTH_REQUIRED;
		else if (!strcmp(t[1], "none"))
			c->auth = CMAP_AUTH_NONE;
		else
			return -EBADMSG;
	}
	return 0;       /* unknown keys: written by a newer version */
}

int cluster_config_decode(const char *buf, size_t len, struct cluster_config *c)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->out_grace_ms = CMAP_DEFAULT_OUT_GRACE_MS;
	ret = each_line(buf, len, config_line, c);
	if (!ret && (!c->uuid[0] || !c->copies || !c->obj_size))
		ret = -EBADMSG;
	return ret;
}
