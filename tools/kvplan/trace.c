// SPDX-License-Identifier: GPL-2.0
/*
 * kvplan - request traces: each request's final length, context plus
 * generated tokens.
 *
 * Two formats, told apart by the first non-blank line:
 *
 *   Azure LLM inference trace, CSV with a header naming the columns:
 *       TIMESTAMP,ContextTokens,GeneratedTokens
 *       2023-11-16 18:15:46.6805900,374,44
 *   Mooncake, one JSON object per line:
 *       {"timestamp": 0, "input_length": 40160, "output_length": 6, ...}
 *
 * Blank lines are skipped; CRLF line ends and a last line without a
 * newline are accepted.  Anything else is an error naming the line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvplan.h"

/* One request longer than this is a malformed trace, not a long prompt. */
#define TRACE_LEN_MAX	(1ull << 40)

struct reader {
	const char *path;
	unsigned long lineno;
	int ctx_col, gen_col;		/* CSV columns */
};

static void trace_err(const struct reader *r, const char *what)
{
	fprintf(stderr, "%s: %s:%lu: %s\n", kvp_prog, r->path, r->lineno,
		what);
}

static char *skip_ws(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static void chomp(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' ||
		     s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

/* A whole field "  123 " as a count. */
static int field_u64(char *s, uint64_t *out)
{
	char *end;

	s = skip_ws(s);
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return kvp_parse_u64(s, out);
}

static int csv_header(struct reader *r, char *line)
{
	char *save = NULL, *f;
	int col = 0;

	r->ctx_col = r->gen_col = -1;
	for (f = strtok_r(line, ",", &save); f;
	     f = strtok_r(NULL, ",", &save), col++) {
		f = skip_ws(f);
		chomp(f);
		if (!strcmp(f, "ContextTokens"))
			r->ctx_col = col;
		else if (!strcmp(f, "GeneratedTokens"))
			r->gen_col = col;
	}
	if (r->ctx_col < 0 || r->gen_col < 0) {
		trace_err(r, "not a trace: the CSV header names no ContextTokens and GeneratedTokens columns, and the line is not JSON");
		return -EINVAL;
	}
	return 0;
}

static int csv_row(struct reader *r, char *line, uint64_t *ctx,
		   uint64_t *gen)
{
	int col = 0, got = 0;
	char *f = line, *comma;

	for (;;) {
		comma = strchr(f, ',');
		if (comma)
			*comma = '\0';
		if (col == r->ctx_col || col == r->gen_col) {
			uint64_t *v = col == r->ctx_col ? ctx : gen;

			if (field_u64(f, v)) {
				trace_err(r, col == r->ctx_col ?
					  "ContextTokens is not a token count" :
					  "GeneratedTokens is not a token count");
				return -EINVAL;
			}
			got++;
		}
		if (!comma)
			break;
		f = comma + 1;
		col++;
	}
	if (got != 2) {
		trace_err(r, "too few fields");
		return -EINVAL;
	}
	return 0;
}

/* The number after "key": in a JSON object line. */
static int json_count(struct reader *r, char *line, const char *key,
		      uint64_t *out)
{
	char quoted[64], *p, *end;
	char msg[96];

	snprintf(quoted, sizeof(quoted), "\"%s\"", key);
	p = strstr(line, quoted);
	if (p) {
		p = skip_ws(p + strlen(quoted));
		if (*p == ':') {
			p = skip_ws(p + 1);
			for (end = p; *end >= '0' && *end <= '9'; end++)
				;
			if (end > p && end - p < 20) {
				char save = *end;

				*end = '\0';
				if (!kvp_parse_u64(p, out)) {
					*end = save;
					return 0;
				}
				*end = save;
			}
		}
	}
	snprintf(msg, sizeof(msg), "no token count under \"%s\"", key);
	trace_err(r, msg);
	return -EINVAL;
}

static int push(struct kvp_trace *t, size_t *cap, uint64_t len)
{
	if (t->nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 4096;
		uint64_t *n = realloc(t->len, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->len = n;
		*cap = ncap;
	}
	t->len[t->nr++] = len;
	return 0;
}

/*
 * kvp_trace_read() - every request's final length, in trace order.
 * Returns 0, or -errno after printing what was wrong; @t is then empty.
 */
int kvp_trace_read(const char *path, struct kvp_trace *t)
{
	struct reader r = { .path = path };
	char *line = NULL;
	size_t linecap = 0, cap = 0;
	int err = 0, started = 0, json = 0;
	FILE *f;

	memset(t, 0, sizeof(*t));
	f = fopen(path, "r");
	if (!f) {
		err = -errno;
		fprintf(stderr, "%s: %s: %s\n", kvp_prog, path,
			strerror(errno));
		return err;
	}
	errno = 0;
	while (getline(&line, &linecap, f) != -1) {
		uint64_t ctx, gen;
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
		if (json)
			err = json_count(&r, s, "input_length", &ctx) ?:
			      json_count(&r, s, "output_length", &gen);
		else
			err = csv_row(&r, s, &ctx, &gen);
		if (err)
			break;
		if (ctx > TRACE_LEN_MAX || gen > TRACE_LEN_MAX) {
			trace_err(&r, "a request longer than 2^40 tokens");
			err = -ERANGE;
			break;
		}
		err = push(t, &cap, ctx + gen);
		if (err) {
			fprintf(stderr, "%s: %s: out of memory\n", kvp_prog,
				path);
			break;
		}
	}
	if (!err && ferror(f)) {
		err = errno ? -errno : -EIO;
		fprintf(stderr, "%s: %s: %s\n", kvp_prog, path, strerror(-err));
	}
	if (!err && !t->nr) {
		err = -ENODATA;
		fprintf(stderr, "%s: %s: no requests in the trace\n", kvp_prog,
			path);
	}
	free(line);
	fclose(f);
	if (err)
		kvp_trace_free(t);
	return err;
}

void kvp_trace_free(struct kvp_trace *t)
{
	free(t->len);
	t->len = NULL;
	t->nr = 0;
}
