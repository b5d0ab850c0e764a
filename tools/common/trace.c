// SPDX-License-Identifier: GPL-2.0
/*
 * Request traces: Azure CSV and Mooncake JSON lines (see kvtools.h).
 *
 * The CSV columns are found by their header names, in any order.  A
 * Mooncake line must be one complete JSON object; the keys looked at are
 * timestamp, input_length, output_length and hash_ids, and the others are
 * skipped whatever they hold.  Every error names the file, the line and
 * the field, and nothing of a trace with an error is kept.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kvtools.h"

/* One request longer than this is a malformed trace, not a long prompt. */
#define TRACE_LEN_MAX	(1ull << 40)
#define JSON_DEPTH_MAX	32

struct reader {
	const char *path;
	unsigned long lineno;
	unsigned int flags;
	int ts_col, ctx_col, gen_col;	/* CSV columns */
	size_t req_cap, hash_cap;
};

static void trace_err(const struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void trace_err(const struct reader *r, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s:%lu: ", kvt_prog, r->path, r->lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static char *skip_ws(char *s)
{
	while (is_ws(*s))
		s++;
	return s;
}

static void chomp(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || is_ws(s[n - 1])))
		s[--n] = '\0';
}

/* A whole field "  123 " as a count. */
static int field_u64(char *s, uint64_t *out)
{
	char *end;

	s = skip_ws(s);
	end = s + strlen(s);
	while (end > s && is_ws(end[-1]))
		*--end = '\0';
	return kvt_parse_u64(s, out);
}

static int digits(const char *s, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar. */
static int64_t days_from_civil(int y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * "2023-11-16 18:15:46.6805900" (UTC, fraction optional, digits beyond
 * the microsecond dropped) into microseconds since the epoch.
 */
static int parse_datetime(char *s, int64_t *us)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
				     30, 31 };
	int y, mo, d, h, mi, sec, frac = 0, nf = 0;
	char *end;

	s = skip_ws(s);
	end = s + strlen(s);
	while (end > s && is_ws(end[-1]))
		*--end = '\0';
	if (end - s < 19 || s[4] != '-' || s[7] != '-' ||
	    (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':')
		return -EINVAL;
	if (digits(s, 4, &y) || digits(s + 5, 2, &mo) ||
	    digits(s + 8, 2, &d) || digits(s + 11, 2, &h) ||
	    digits(s + 14, 2, &mi) || digits(s + 17, 2, &sec))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
	    mi > 59 || sec > 60)
		return -EINVAL;
	s += 19;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, nf++)
			if (nf < 6)
				frac = frac * 10 + (*s - '0');
		if (!nf)
			return -EINVAL;
		for (; nf < 6; nf++)
			frac *= 10;
	}
	if (*s == 'Z')
		s++;
	if (*s)
		return -EINVAL;
	*us = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec;
	*us = *us * 1000000 + frac;
	return 0;
}

static int csv_header(struct reader *r, char *line)
{
	char *save = NULL, *f;
	int col = 0;

	r->ts_col = r->ctx_col = r->gen_col = -1;
	for (f = strtok_r(line, ",", &save); f;
	     f = strtok_r(NULL, ",", &save), col++) {
		f = skip_ws(f);
		chomp(f);
		if (!strcmp(f, "TIMESTAMP"))
			r->ts_col = col;
		else if (!strcmp(f, "ContextTokens"))
			r->ctx_col = col;
		else if (!strcmp(f, "GeneratedTokens"))
			r->gen_col = col;
	}
	if (r->ctx_col < 0 || r->gen_col < 0) {
		trace_err(r, "not a trace: the CSV header names no ContextTokens and GeneratedTokens columns, and the line is not JSON");
		return -EINVAL;
	}
	if ((r->flags & KVT_TRACE_TIMES) && r->ts_col < 0) {
		trace_err(r, "the CSV header names no TIMESTAMP column");
		return -EINVAL;
	}
	return 0;
}

static const char *csv_col_name(const struct reader *r, int col)
{
	return col == r->ctx_col ? "ContextTokens" :
	       col == r->gen_col ? "GeneratedTokens" : "TIMESTAMP";
}

static int csv_row(struct reader *r, char *line, struct kvt_req *q)
{
	int col = 0, got = 0, want = 2, need_ts = r->flags & KVT_TRACE_TIMES;
	char *f = line, *comma;

	if (need_ts)
		want++;
	for (;;) {
		comma = strchr(f, ',');
		if (comma)
			*comma = '\0';
		if (col == r->ctx_col || col == r->gen_col) {
			uint64_t *v = col == r->ctx_col ? &q->ctx : &q->gen;

			if (field_u64(f, v)) {
				trace_err(r, "%s is not a token count",
					  csv_col_name(r, col));
				return -EINVAL;
			}
			got++;
		} else if (need_ts && col == r->ts_col) {
			if (parse_datetime(f, &q->arrival_us)) {
				trace_err(r, "TIMESTAMP is not a date and time (YYYY-MM-DD HH:MM:SS[.fraction])");
				return -EINVAL;
			}
			got++;
		}
		if (!comma)
			break;
		f = comma + 1;
		col++;
	}
	if (got != want) {
		int cols[3] = { need_ts ? r->ts_col : -1, r->ctx_col,
				r->gen_col };
		int i, missing = -1;

		for (i = 0; i < 3; i++)
			if (cols[i] > col && (missing < 0 || cols[i] < missing))
				missing = cols[i];

		trace_err(r, "%s is missing: the line has %d fields",
			  csv_col_name(r, missing), col + 1);
		return -EINVAL;
	}
	return 0;
}

/* ---- one JSON object per line ------------------------------------------ */

enum { K_TS, K_IN, K_OUT, K_HASH, NR_KEYS };
static const char *const key_names[NR_KEYS] = {
	"timestamp", "input_length", "output_length", "hash_ids",
};

struct jline {
	struct reader *r;
	char *start, *p;
	char *val[NR_KEYS];	/* where each key's value starts */
	const char *in_key;	/* the key whose value is being read */
};

static int jerr(struct jline *j, const char *what)
{
	if (!*j->p)
		trace_err(j->r, "truncated: the JSON object ends early%s%s%s",
			  j->in_key ? " (in \"" : "", j->in_key ? j->in_key : "",
			  j->in_key ? "\")" : "");
	else if (j->in_key)
		trace_err(j->r, "malformed JSON at column %d in \"%s\": %s",
			  (int)(j->p - j->start) + 1, j->in_key, what);
	else
		trace_err(j->r, "malformed JSON at column %d: %s",
			  (int)(j->p - j->start) + 1, what);
	return -EINVAL;
}

static void jws(struct jline *j)
{
	while (*j->p == ' ' || *j->p == '\t')
		j->p++;
}

static int jstring(struct jline *j, char **s, size_t *n)
{
	char *b;

	if (*j->p != '"')
		return jerr(j, "a string was expected");
	b = ++j->p;
	while (*j->p && *j->p != '"') {
		if (*j->p == '\\' && j->p[1])
			j->p++;
		j->p++;
	}
	if (*j->p != '"')
		return jerr(j, "the string does not end");
	*s = b;
	*n = (size_t)(j->p - b);
	j->p++;
	return 0;
}

static int jvalue(struct jline *j, int depth);

static int jnumber(struct jline *j)
{
	char *b = j->p;

	if (*j->p == '-')
		j->p++;
	while (*j->p >= '0' && *j->p <= '9')
		j->p++;
	if (*j->p == '.')
		for (j->p++; *j->p >= '0' && *j->p <= '9'; j->p++)
			;
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p == b || (j->p == b + 1 && *b == '-')) {
		j->p = b;
		return jerr(j, "a value was expected");
	}
	return 0;
}

static int jlist(struct jline *j, int depth, char open, char close)
{
	int err;

	j->p++;
	jws(j);
	if (*j->p == close) {
		j->p++;
		return 0;
	}
	for (;;) {
		if (open == '{') {
			char *k;
			size_t n;

			err = jstring(j, &k, &n);
			if (err)
				return err;
			jws(j);
			if (*j->p != ':')
				return jerr(j, "':' was expected");
			j->p++;
			jws(j);
		}
		err = jvalue(j, depth + 1);
		if (err)
			return err;
		jws(j);
		if (*j->p == close) {
			j->p++;
			return 0;
		}
		if (*j->p != ',')
			return jerr(j, open == '{' ? "',' or '}' was expected" :
				    "',' or ']' was expected");
		j->p++;
		jws(j);
	}
}

static int jvalue(struct jline *j, int depth)
{
	static const char *const lits[] = { "true", "false", "null" };
	size_t i, n;
	char *s;

	if (depth > JSON_DEPTH_MAX)
		return jerr(j, "nested too deeply");
	switch (*j->p) {
	case '"':
		return jstring(j, &s, &n);
	case '[':
		return jlist(j, depth, '[', ']');
	case '{':
		return jlist(j, depth, '{', '}');
	}
	for (i = 0; i < 3; i++) {
		if (!strncmp(j->p, lits[i], strlen(lits[i]))) {
			j->p += strlen(lits[i]);
			return 0;
		}
	}
	return jnumber(j);
}

/* The top-level object: every key's value is checked, ours remembered. */
static int jobject(struct jline *j)
{
	int err, k;

	memset(j->val, 0, sizeof(j->val));
	if (*j->p != '{')
		return jerr(j, "a JSON object was expected");
	j->p++;
	jws(j);
	if (*j->p == '}') {
		j->p++;
		goto end;
	}
	for (;;) {
		char *key;
		size_t n;

		err = jstring(j, &key, &n);
		if (err)
			return err;
		jws(j);
		if (*j->p != ':')
			return jerr(j, "':' was expected");
		j->p++;
		jws(j);
		for (k = 0; k < NR_KEYS; k++) {
			if (strlen(key_names[k]) == n &&
			    !strncmp(key, key_names[k], n))
				break;
		}
		if (k < NR_KEYS) {
			if (j->val[k]) {
				trace_err(j->r, "\"%s\" is given twice",
					  key_names[k]);
				return -EINVAL;
			}
			j->val[k] = j->p;
			j->in_key = key_names[k];
		}
		err = jvalue(j, 1);
		if (err)
			return err;
		j->in_key = NULL;
		jws(j);
		if (*j->p == '}') {
			j->p++;
			break;
		}
		if (*j->p != ',')
			return jerr(j, "',' or '}' was expected");
		j->p++;
		jws(j);
	}
end:
	jws(j);
	if (*j->p)
		return jerr(j, "text after the object");
	return 0;
}

/* A non-negative integer at @s, ending where a JSON value may end. */
static int jcount(const char *s, uint64_t *out, const char **end)
{
	char buf[24];
	size_t n = 0;

	while (s[n] >= '0' && s[n] <= '9')
		n++;
	if (!n || n >= sizeof(buf) || (s[n] && !strchr(" \t,]}", s[n])))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (end)
		*end = s + n;
	return kvt_parse_u64(buf, out);
}

/* Milliseconds, "1022025" or "12.5", into microseconds. */
static int jmillis(const char *s, int64_t *us)
{
	char buf[32];
	uint64_t fx;
	size_t n = 0;

	while ((s[n] >= '0' && s[n] <= '9') || s[n] == '.')
		n++;
	if (!n || n >= sizeof(buf) || (s[n] && !strchr(" \t,}", s[n])))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (kvt_parse_fixed(buf, &fx) || fx / KVT_FIX_SCALE > (1ull << 40))
		return -EINVAL;
	*us = (int64_t)(fx / 1000000);
	return 0;
}

static int push_hash(struct kvt_trace *t, struct reader *r, uint64_t id)
{
	if (t->nr_hash == r->hash_cap) {
		size_t ncap = r->hash_cap ? r->hash_cap * 2 : 4096;
		uint64_t *n = realloc(t->hash, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->hash = n;
		r->hash_cap = ncap;
	}
	t->hash[t->nr_hash++] = id;
	return 0;
}

static int json_hashes(struct reader *r, struct kvt_trace *t,
		       struct kvt_req *q, const char *s)
{
	const char *p = s;
	uint64_t id, need;
	int err;

	q->hash = t->nr_hash;
	q->nr_hash = 0;
	if (*p++ != '[')
		goto bad;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == ']')
		goto done;
	for (;;) {
		if (jcount(p, &id, &p))
			goto bad;
		err = push_hash(t, r, id);
		if (err)
			return err;
		q->nr_hash++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == ']')
			break;
		if (*p++ != ',')
			goto bad;
		while (*p == ' ' || *p == '\t')
			p++;
	}
done:
	need = (q->ctx + KVT_HASH_BLOCK - 1) / KVT_HASH_BLOCK;
	if (q->nr_hash != need) {
		trace_err(r, "\"hash_ids\" has %u ids; input_length %llu needs %llu (%d tokens each)",
			  q->nr_hash, (unsigned long long)q->ctx,
			  (unsigned long long)need, KVT_HASH_BLOCK);
		return -EINVAL;
	}
	return 0;
bad:
	trace_err(r, "\"hash_ids\" is not a list of block ids (whole numbers)");
	return -EINVAL;
}

static int json_row(struct reader *r, struct kvt_trace *t, char *line,
		    struct kvt_req *q)
{
	struct jline j = { .r = r, .start = line, .p = line };
	int err = jobject(&j);

	if (err)
		return err;
	if (!j.val[K_IN] || jcount(j.val[K_IN], &q->ctx, NULL)) {
		trace_err(r, "no token count under \"input_length\"");
		return -EINVAL;
	}
	if (!j.val[K_OUT] || jcount(j.val[K_OUT], &q->gen, NULL)) {
		trace_err(r, "no token count under \"output_length\"");
		return -EINVAL;
	}
	if ((r->flags & KVT_TRACE_TIMES) &&
	    (!j.val[K_TS] || jmillis(j.val[K_TS], &q->arrival_us))) {
		trace_err(r, "no time in milliseconds under \"timestamp\"");
		return -EINVAL;
	}
	if (!(r->flags & KVT_TRACE_HASHES))
		return 0;
	if (!j.val[K_HASH]) {
		if (t->has_hash) {
			trace_err(r, "no \"hash_ids\", which earlier lines have");
			return -EINVAL;
		}
		return 0;
	}
	if (t->nr && !t->has_hash) {
		trace_err(r, "\"hash_ids\" here but not on earlier lines");
		return -EINVAL;
	}
	t->has_hash = 1;
	return json_hashes(r, t, q, j.val[K_HASH]);
}

static int push_req(struct kvt_trace *t, struct reader *r,
		    const struct kvt_req *q)
{
	if (t->nr == r->req_cap) {
		size_t ncap = r->req_cap ? r->req_cap * 2 : 4096;
		struct kvt_req *n = realloc(t->req, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->req = n;
		r->req_cap = ncap;
	}
	t->req[t->nr++] = *q;
	return 0;
}

int kvt_trace_read(const char *path, unsigned int flags, struct kvt_trace *t)
{
	struct reader r = { .path = path, .flags = flags };
	char *line = NULL;
	size_t linecap = 0;
	int err = 0, started = 0, json = 0;
	FILE *f;

	memset(t, 0, sizeof(*t));
	t->path = path;
	f = fopen(path, "r");
	if (!f) {
		err = -errno;
		fprintf(stderr, "%s: %s: %s\n", kvt_prog, path,
			strerror(errno));
		return err;
	}
	errno = 0;
	while (getline(&line, &linecap, f) != -1) {
		struct kvt_req q = { 0 };
		char *s;

		r.lineno++;
		chomp(line);
		s = skip_ws(line);
		if (!*s)
			continue;
		if (!started) {
			started = 1;
			json = *s == '{';
			t->format = json ? "mooncake-jsonl" : "azure-csv";
			if (!json) {
				err = csv_header(&r, s);
				if (err)
					break;
				continue;
			}
		}
		q.line = (uint32_t)r.lineno;
		err = json ? json_row(&r, t, s, &q) : csv_row(&r, s, &q);
		if (err)
			break;
		if (q.ctx > TRACE_LEN_MAX || q.gen > TRACE_LEN_MAX) {
			trace_err(&r, "a request longer than 2^40 tokens");
			err = -ERANGE;
			break;
		}
		err = push_req(t, &r, &q);
		if (err)
			break;
	}
	if (err == -ENOMEM)
		fprintf(stderr, "%s: %s: out of memory\n", kvt_prog, path);
	if (!err && ferror(f)) {
		err = errno ? -errno : -EIO;
		fprintf(stderr, "%s: %s: %s\n", kvt_prog, path, strerror(-err));
	}
	if (!err && !t->nr) {
		err = -ENODATA;
		fprintf(stderr, "%s: %s: no requests in the trace\n", kvt_prog,
			path);
	}
	free(line);
	fclose(f);
	if (err)
		kvt_trace_free(t);
	return err;
}

void kvt_trace_free(struct kvt_trace *t)
{
	free(t->req);
	free(t->hash);
	t->req = NULL;
	t->hash = NULL;
	t->nr = t->nr_hash = 0;
	t->has_hash = 0;
}
