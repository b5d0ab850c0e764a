// SPDX-License-Identifier: GPL-2.0
/*
 * A model's geometry from its Hugging Face config.json (--model-config):
 *
 *   num_hidden_layers                      layers
 *   num_key_value_heads                    KV heads (num_attention_heads
 *                                          where absent: no GQA)
 *   head_dim                               elements per head (hidden_size /
 *                                          num_attention_heads where absent)
 *   torch_dtype                            bfloat16, float16 or float32
 *
 * and, from model.safetensors.index.json beside it, the weights' bytes
 * (metadata.total_size: what the checkpoint's tensors take, as loaded in
 * their own dtype), or else model.safetensors's size.  Only the top level
 * of config.json is read (a multimodal model's text_config is not: give
 * --layers and the rest there).
 *
 * The reader is a small JSON scanner: it checks the syntax of the whole
 * file (objects, arrays, strings with escapes, numbers, literals, nesting
 * up to 64) and keeps the top level's numbers and strings; anything else
 * is an error naming the file and the byte.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvtools.h"

#define CONF_MAX	(1 << 20)	/* config.json is a few KiB */
#define DEPTH_MAX	64

struct scan {
	const char *s, *end, *start;
	const char *err;
	int depth;
};

/* A top-level key's value, as given (numbers as text). */
struct field {
	const char *key;
	char val[64];
	int is_str, found;
};

static void skip_ws(struct scan *c)
{
	while (c->s < c->end && strchr(" \t\r\n", *c->s))
		c->s++;
}

static int fail(struct scan *c, const char *what)
{
	if (!c->err)
		c->err = what;
	return -1;
}

/* A string at c->s into @out (@len bytes, may be 0: skipped). */
static int string(struct scan *c, char *out, size_t len)
{
	size_t n = 0;

	if (c->s >= c->end || *c->s != '"')
		return fail(c, "a string expected");
	c->s++;
	while (c->s < c->end && *c->s != '"') {
		char ch = *c->s++;

		if ((unsigned char)ch < 0x20)
			return fail(c, "a control character in a string");
		if (ch == '\\') {
			if (c->s >= c->end || !strchr("\"\\/bfnrtu", *c->s))
				return fail(c, "a bad escape in a string");
			if (*c->s == 'u') {
				if (c->end - c->s < 5 ||
				    strspn(c->s + 1, "0123456789abcdefABCDEF") < 4)
					return fail(c, "a bad \\u escape");
				c->s += 4;
			}
			ch = *c->s++;
		}
		if (len && n + 1 < len)
			out[n++] = ch;
	}
	if (c->s >= c->end)
		return fail(c, "an unterminated string");
	c->s++;
	if (len)
		out[n] = 0;
	return 0;
}

static int value(struct scan *c, char *out, size_t len, int *is_str);

static int number(struct scan *c, char *out, size_t len)
{
	const char *p = c->s;
	size_t n;

	if (p < c->end && *p == '-')
		p++;
	if (p >= c->end || *p < '0' || *p > '9')
		return fail(c, "a value expected");
	while (p < c->end && strchr("0123456789+-.eE", *p))
		p++;
	n = p - c->s;
	if (len) {
		if (n >= len)
			n = len - 1;
		memcpy(out, c->s, n);
		out[n] = 0;
	}
	c->s = p;
	return 0;
}

static int literal(struct scan *c, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(c->end - c->s) < n || memcmp(c->s, word, n))
		return fail(c, "a value expected");
	c->s += n;
	return 0;
}

/* An object (@fields: the top level's keys to keep) or an array. */
static int compound(struct scan *c, struct field *fields)
{
	char close = *c->s == '{' ? '}' : ']';
	int first = 1;

	if (++c->depth > DEPTH_MAX)
		return fail(c, "nested too deep");
	c->s++;
	for (;;) {
		char key[64] = "", val[64];
		int is_str = 0;

		skip_ws(c);
		if (c->s < c->end && *c->s == close && first)
			break;
		if (close == '}') {
			if (string(c, key, sizeof(key)))
				return -1;
			skip_ws(c);
			if (c->s >= c->end || *c->s != ':')
				return fail(c, "':' expected");
			c->s++;
			skip_ws(c);
		}
		if (value(c, val, sizeof(val), &is_str))
			return -1;
		for (struct field *f = fields; f && f->key; f++) {
			if (strcmp(f->key, key) || is_str < 0)
				continue;
			memcpy(f->val, val, sizeof(f->val));
			f->is_str = is_str;
			f->found = 1;
		}
		skip_ws(c);
		first = 0;
		if (c->s < c->end && *c->s == ',') {
			c->s++;
			continue;
		}
		if (c->s < c->end && *c->s == close)
			break;
		return fail(c, close == '}' ? "',' or '}' expected" :
			    "',' or ']' expected");
	}
	c->s++;
	c->depth--;
	return 0;
}

/* *@is_str: 1 a string, 0 a number or literal, -1 an object or array. */
static int value(struct scan *c, char *out, size_t len, int *is_str)
{
	skip_ws(c);
	if (c->s >= c->end)
		return fail(c, "a value expected");
	*out = 0;
	*is_str = 0;
	switch (*c->s) {
	case '{':
	case '[':
		*is_str = -1;
		return compound(c, NULL);
	case '"':
		*is_str = 1;
		return string(c, out, len);
	case 't':
		return literal(c, "true");
	case 'f':
		return literal(c, "false");
	case 'n':
		return literal(c, "null");
	default:
		return number(c, out, len);
	}
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(CONF_MAX + 1);
	*len = buf ? fread(buf, 1, CONF_MAX + 1, f) : 0;
	if (!buf || ferror(f) || *len > CONF_MAX) {
		if (buf && !ferror(f))
			errno = EFBIG;
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	return buf;
}

/* @path's top-level @fields; 0, or -1 after saying what was wrong. */
static int read_fields(const char *path, struct field *fields)
{
	struct scan c = { 0 };
	size_t len;
	char *buf = slurp(path, &len);

	if (!buf) {
		fprintf(stderr, "%s: %s: %s\n", kvt_prog, path,
			errno == EFBIG ? "larger than 1 MiB: not a config.json" :
			strerror(errno));
		return -1;
	}
	c.s = c.start = buf;
	c.end = buf + len;
	skip_ws(&c);
	if (c.s >= c.end || *c.s != '{')
		fail(&c, "a JSON object expected");
	else if (!compound(&c, fields)) {
		skip_ws(&c);
		if (c.s != c.end)
			fail(&c, "text after the object");
	}
	if (c.err) {
		fprintf(stderr, "%s: %s: not valid JSON at byte offset %zu: %s\n",
			kvt_prog, path, (size_t)(c.s - c.start), c.err);
		free(buf);
		return -1;
	}
	free(buf);
	return 0;
}

static int get_u32(const char *path, const struct field *f, uint32_t *out)
{
	uint64_t v;

	if (f->is_str || kvt_parse_u64(f->val, &v) || !v || v > (1u << 16)) {
		fprintf(stderr, "%s: %s: \"%s\" is %s%s%s, want a whole number from 1 to 65536\n",
			kvt_prog, path, f->key, f->is_str ? "\"" : "", f->val,
			f->is_str ? "\"" : "");
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/*
 * The checkpoint's bytes beside @config: model.safetensors.index.json's
 * "total_size" (under "metadata"; the file is checked as JSON first), or
 * model.safetensors's size; 0 if neither is there.
 */
static uint64_t weights_beside(const char *config)
{
	const char *slash = strrchr(config, '/');
	char path[4200];
	struct stat st;
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%.*s/model.safetensors.index.json",
		 slash ? (int)(slash - config) : 1, slash ? config : ".");
	if (!access(path, R_OK) && !read_fields(path, NULL)) {
		size_t len;
		char *buf = slurp(path, &len), *p;

		if (buf) {
			buf[len] = 0;
			p = strstr(buf, "\"total_size\"");
			if (p) {
				p += strlen("\"total_size\"");
				p += strspn(p, " \t\r\n");
				if (*p == ':')
					v = strtoull(p + 1, NULL, 10);
			}
			free(buf);
			if (v)
				return v;
		}
	}
	snprintf(path, sizeof(path), "%.*s/model.safetensors",
		 slash ? (int)(slash - config) : 1, slash ? config : ".");
	if (!stat(path, &st) && S_ISREG(st.st_mode))
		return (uint64_t)st.st_size;
	return 0;
}

int kvt_model_config(const char *path, struct kvt_model *m)
{
	enum { LAYERS, KV, HEADS, HEAD_DIM, HIDDEN, DTYPE, TYPE };
	struct field f[] = {
		[LAYERS] = { "num_hidden_layers" },
		[KV] = { "num_key_value_heads" },
		[HEADS] = { "num_attention_heads" },
		[HEAD_DIM] = { "head_dim" },
		[HIDDEN] = { "hidden_size" },
		[DTYPE] = { "torch_dtype" },
		[TYPE] = { "model_type" },
		{ NULL },
	};
	static char name[64];
	uint32_t hidden;

	memset(m, 0, sizeof(*m));
	if (read_fields(path, f))
		return KVT_EXIT_USAGE;
	if (!f[LAYERS].found || !f[HEADS].found) {
		fprintf(stderr, "%s: %s: no \"%s\" at its top level (a multimodal model's is in text_config: give --layers, --kv-heads and --head-dim)\n",
			kvt_prog, path, f[LAYERS].found ? "num_attention_heads" :
			"num_hidden_layers");
		return KVT_EXIT_USAGE;
	}
	if (get_u32(path, &f[LAYERS], &m->layers) ||
	    get_u32(path, &f[HEADS], &m->q_heads) ||
	    get_u32(path, f[KV].found ? &f[KV] : &f[HEADS], &m->kv_heads))
		return KVT_EXIT_USAGE;
	if (f[HEAD_DIM].found) {
		if (get_u32(path, &f[HEAD_DIM], &m->head_dim))
			return KVT_EXIT_USAGE;
	} else if (f[HIDDEN].found) {
		if (f[HIDDEN].is_str ||
		    kvt_parse_u64(f[HIDDEN].val, &(uint64_t){ 0 })) {
			fprintf(stderr, "%s: %s: \"hidden_size\" is not a whole number\n",
				kvt_prog, path);
			return KVT_EXIT_USAGE;
		}
		hidden = (uint32_t)strtoul(f[HIDDEN].val, NULL, 10);
		if (!hidden || hidden % m->q_heads || hidden / m->q_heads > (1u << 16)) {
			fprintf(stderr, "%s: %s: hidden_size %u is not a multiple of num_attention_heads %u\n",
				kvt_prog, path, hidden, m->q_heads);
			return KVT_EXIT_USAGE;
		}
		m->head_dim = hidden / m->q_heads;
	} else {
		fprintf(stderr, "%s: %s: neither \"head_dim\" nor \"hidden_size\"\n",
			kvt_prog, path);
		return KVT_EXIT_USAGE;
	}
	if (m->kv_heads > m->q_heads || m->q_heads % m->kv_heads) {
		fprintf(stderr, "%s: %s: num_key_value_heads %u does not divide num_attention_heads %u\n",
			kvt_prog, path, m->kv_heads, m->q_heads);
		return KVT_EXIT_USAGE;
	}
	m->dtype = KVA_DTYPE_BF16;
	if (f[DTYPE].found) {
		if (!strcmp(f[DTYPE].val, "bfloat16"))
			m->dtype = KVA_DTYPE_BF16;
		else if (!strcmp(f[DTYPE].val, "float16"))
			m->dtype = KVA_DTYPE_FP16;
		else if (!strcmp(f[DTYPE].val, "float32"))
			m->dtype = KVA_DTYPE_FP32;
		else {
			fprintf(stderr, "%s: %s: torch_dtype \"%s\": want bfloat16, float16 or float32 (or --dtype)\n",
				kvt_prog, path, f[DTYPE].val);
			return KVT_EXIT_USAGE;
		}
	}
	snprintf(name, sizeof(name), "%s", f[TYPE].found && f[TYPE].is_str &&
		 f[TYPE].val[0] ? f[TYPE].val : "config.json");
	m->name = name;
	m->weights_bytes = weights_beside(path);
	return 0;
}
