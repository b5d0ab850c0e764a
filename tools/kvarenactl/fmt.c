// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl - numbers in and out, tables and JSON.
 *
 * Parsers take the whole string or fail: no signs, no spaces, no trailing
 * junk.  They return 0, -EINVAL for a malformed string or -ERANGE for one
 * too large.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kvarenactl.h"

int kvactl_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (d > 9)
			return -EINVAL;
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int kvactl_parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;
	int err = kvactl_parse_u64(s, &v);

	if (err)
		return err;
	if (v > UINT32_MAX)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

/*
 * Sizes in every form kvarenactl prints and kvplan takes: "2097152",
 * "512B", "64K", "64Ki", "64KiB", "2M", "2MB", "2.0Mi", "1.5Gi".  A unit
 * is K, M, G, T, P or E (powers of 1024, in any case), then optionally
 * "i", then optionally "B".  A fraction must come to whole bytes.
 */
int kvactl_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGTPE";
	size_t n = strspn(s, "0123456789"), f = 0;
	uint64_t whole = 0, frac = 0, pow10 = 1;
	unsigned __int128 v;
	unsigned int shift = 0;
	const char *u;

	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned int d = (unsigned int)(s[i] - '0');

		if (whole > (UINT64_MAX - d) / 10)
			return -ERANGE;
		whole = whole * 10 + d;
	}
	s += n;
	if (*s == '.') {
		f = strspn(++s, "0123456789");
		if (!f || f > 9)
			return -EINVAL;
		for (size_t i = 0; i < f; i++) {
			frac = frac * 10 + (uint64_t)(s[i] - '0');
			pow10 *= 10;
		}
		s += f;
	}
	if (*s == 'B' || *s == 'b') {
		s++;
	} else if (*s) {
		char c = *s >= 'a' && *s <= 'z' ? (char)(*s - 'a' + 'A') : *s;

		u = strchr(units, c);
		if (!u)
			return -EINVAL;
		shift = 10 * (unsigned int)(u - units + 1);
		s++;
		if (*s == 'i' || *s == 'I')
			s++;
		if (*s == 'B' || *s == 'b')
			s++;
	}
	if (*s)
		return -EINVAL;
	/* whole < 2^64 and shift <= 60: no overflow in 128 bits. */
	v = (unsigned __int128)whole << shift;
	if (frac) {
		unsigned __int128 fb = (unsigned __int128)frac << shift;

		if (fb % pow10)
			return -EINVAL;		/* not whole bytes */
		v += fb / pow10;
	}
	if (v > UINT64_MAX)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

/*
 * "1", "0.5", ".25", "2.125": seconds with up to three decimals, into
 * milliseconds.  -ERANGE beyond 10^9 seconds; the caller checks its own
 * range.
 */
int kvactl_parse_seconds(const char *s, uint64_t *ms)
{
	size_t n = strspn(s, "0123456789"), f = 0;
	uint64_t whole = 0, frac = 0;

	if (n > 9)
		return -ERANGE;
	for (size_t i = 0; i < n; i++)
		whole = whole * 10 + (uint64_t)(s[i] - '0');
	s += n;
	if (*s == '.') {
		s++;
		f = strspn(s, "0123456789");
		if (!f || f > 3)
			return -EINVAL;
		for (size_t i = 0; i < 3; i++)
			frac = frac * 10 + (i < f ? (uint64_t)(s[i] - '0') : 0);
		s += f;
	}
	if (*s || (!n && !f))
		return -EINVAL;
	*ms = whole * 1000 + frac;
	return 0;
}

char *kvactl_fmt_size_exact(char buf[KVACTL_NUM_LEN], uint64_t bytes)
{
	static const char unit[] = "KMGTPE";
	int k = 0;

	while (k < 6 && bytes && !(bytes & 1023)) {
		bytes >>= 10;
		k++;
	}
	if (k)
		snprintf(buf, KVACTL_NUM_LEN, "%llu%ci",
			 (unsigned long long)bytes, unit[k - 1]);
	else
		snprintf(buf, KVACTL_NUM_LEN, "%llu", (unsigned long long)bytes);
	return buf;
}

char *kvactl_quote(char buf[KVACTL_QUOTE_LEN], const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t o = 0, chars = 0;

	buf[o++] = '"';
	while (*s && chars < 64) {
		size_t n = kvactl_utf8_len(s);

		if (n == 1 && *s >= 0x20 && *s != 0x7f && *s != '"' &&
		    *s != '\\') {
			buf[o++] = (char)*s;
		} else if (n > 1) {
			memcpy(buf + o, s, n);
			o += n;
		} else {
			static const char hex[] = "0123456789abcdef";

			n = 1;
			buf[o++] = '\\';
			if (*s == '"' || *s == '\\') {
				buf[o++] = (char)*s;
			} else {
				buf[o++] = 'x';
				buf[o++] = hex[*s >> 4];
				buf[o++] = hex[*s & 15];
			}
		}
		s += n;
		chars++;
	}
	if (*s) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

char *kvactl_fmt_u64(char buf[KVACTL_NUM_LEN], uint64_t v)
{
	snprintf(buf, KVACTL_NUM_LEN, "%llu", (unsigned long long)v);
	return buf;
}

/*
 * As free -h: bytes below 1 KiB as "512B"; otherwise the largest binary
 * unit that leaves a number below 1024, with one decimal below 10
 * ("1.5Gi") and none above ("640Mi").
 */
char *kvactl_fmt_size(char buf[KVACTL_NUM_LEN], uint64_t bytes, bool exact)
{
	static const char unit[] = "KMGTPE";
	unsigned int k;

	if (exact || bytes < 1024) {
		snprintf(buf, KVACTL_NUM_LEN, "%llu%s",
			 (unsigned long long)bytes, exact ? "" : "B");
		return buf;
	}
	for (k = 1; k <= 6; k++) {
		unsigned __int128 div = (unsigned __int128)1 << (10 * k);
		unsigned __int128 tenths = ((unsigned __int128)bytes * 10 +
					    div / 2) / div;
		uint64_t whole = (uint64_t)(((unsigned __int128)bytes +
					     div / 2) / div);

		if (tenths < 100) {
			snprintf(buf, KVACTL_NUM_LEN, "%u.%u%ci",
				 (unsigned int)(tenths / 10),
				 (unsigned int)(tenths % 10), unit[k - 1]);
			return buf;
		}
		if (whole < 1024 || k == 6) {
			snprintf(buf, KVACTL_NUM_LEN, "%llu%ci",
				 (unsigned long long)whole, unit[k - 1]);
			return buf;
		}
	}
	return buf;
}

/* Tenths of num / den, rounded half up. */
static uint64_t tenths(uint64_t num, uint64_t den, unsigned int scale)
{
	unsigned __int128 n = (unsigned __int128)num * scale * 10;

	return (uint64_t)((n + den / 2) / den);
}

char *kvactl_fmt_pct(char buf[KVACTL_NUM_LEN], uint64_t num, uint64_t den)
{
	uint64_t t;

	if (!den) {
		snprintf(buf, KVACTL_NUM_LEN, "-");
		return buf;
	}
	t = tenths(num, den, 100);
	snprintf(buf, KVACTL_NUM_LEN, "%llu.%llu%%",
		 (unsigned long long)(t / 10), (unsigned long long)(t % 10));
	return buf;
}

char *kvactl_fmt_ratio(char buf[KVACTL_NUM_LEN], uint64_t num, uint64_t den)
{
	uint64_t t = den ? tenths(num, den, 1) : 0;

	snprintf(buf, KVACTL_NUM_LEN, "%llu.%llu",
		 (unsigned long long)(t / 10), (unsigned long long)(t % 10));
	return buf;
}

size_t kvactl_utf8_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return s[0] ? 1 : 0;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and beyond U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/*
 * Labels are whatever a client passed: keep valid UTF-8, show control
 * characters and invalid bytes as '?', as ls -q does.
 */
void kvactl_fmt_label(char *out, size_t size, const char *label)
{
	const unsigned char *s = (const unsigned char *)label;
	size_t o = 0;

	if (!*s) {
		snprintf(out, size, "-");
		return;
	}
	while (*s && o + 5 < size) {
		size_t n = kvactl_utf8_len(s);

		if (n == 1 && (*s < 0x20 || *s == 0x7f))
			n = 0;
		if (!n) {
			out[o++] = '?';
			s++;
			continue;
		}
		memcpy(out + o, s, n);
		o += n;
		s += n;
	}
	out[o] = '\0';
}

/* ---- arena names ------------------------------------------------------------- */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

int kvactl_split_names(const char *s, char sep,
		       char (*out)[KVARENA_NAME_LEN], uint32_t max)
{
	size_t len = strlen(s);
	uint32_t n = 0;

	if (len && s[len - 1] == '\n')
		len--;
	if (!len)
		return 0;
	for (size_t i = 0; i <= len; n++) {
		size_t k = 0;

		/* One name: up to the next separator or the end. */
		while (i + k < len && s[i + k] != sep)
			k++;
		if (!k || k >= KVARENA_NAME_LEN || s[i] == '.')
			return -EINVAL;
		for (size_t c = 0; c < k; c++)
			if (!name_char(s[i + c]))
				return -EINVAL;
		if (n == max)
			return -ERANGE;
		memcpy(out[n], s + i, k);
		out[n][k] = '\0';
		/* Past the separator: one at the very end leaves "" next. */
		i += k + 1;
	}
	return (int)n;
}

/* ---- tables ---------------------------------------------------------------- */

void kvactl_table_init(struct kvactl_table *t, unsigned int ncols,
		       const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->align = align;
}

void kvactl_table_add(struct kvactl_table *t, const char *fmt, ...)
{
	va_list ap;
	char *cell;

	va_start(ap, fmt);
	if (vasprintf(&cell, fmt, ap) < 0)
		cell = NULL;
	va_end(ap);
	if (!cell)
		abort();
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->cells = realloc(t->cells, t->cap * sizeof(*t->cells));
		if (!t->cells)
			abort();
	}
	t->cells[t->n++] = cell;
}

/* Display width: characters, counting a UTF-8 sequence once. */
static size_t width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* Print the columns @shown (one bool per column; NULL: all). */
static void table_print(const struct kvactl_table *t, FILE *f,
			const size_t *w, const bool *shown)
{
	unsigned int c, last = 0;
	bool first = true;

	for (c = 0; c < t->ncols; c++)
		if (!shown || shown[c])
			last = c;
	for (size_t i = 0; i < t->n; i++) {
		const char *s = t->cells[i];
		size_t pad;

		c = (unsigned int)(i % t->ncols);
		if (shown && !shown[c])
			continue;
		pad = w[c] - width(s);
		if (!first)
			fputs("  ", f);
		first = false;
		if (t->align[c] == 'r')
			fprintf(f, "%*s%s", (int)pad, "", s);
		else if (c == last)
			fputs(s, f);
		else
			fprintf(f, "%s%*s", s, (int)pad, "");
		if (c == last) {
			putc('\n', f);
			first = true;
		}
	}
}

static void column_widths(const struct kvactl_table *t, size_t *w)
{
	for (unsigned int c = 0; c < t->ncols; c++)
		w[c] = 0;
	for (size_t i = 0; i < t->n; i++) {
		size_t cw = width(t->cells[i]);
		unsigned int c = (unsigned int)(i % t->ncols);

		if (cw > w[c])
			w[c] = cw;
	}
}

void kvactl_table_print(struct kvactl_table *t, FILE *f)
{
	size_t w[KVACTL_TABLE_MAX_COLS];

	column_widths(t, w);
	table_print(t, f, w, NULL);
}

unsigned int kvactl_table_print_fit(struct kvactl_table *t, FILE *f,
				    unsigned int cols, const int *drop)
{
	size_t w[KVACTL_TABLE_MAX_COLS], total = 0, all;
	bool shown[KVACTL_TABLE_MAX_COLS];
	unsigned int c, hidden = 0;

	column_widths(t, w);
	for (c = 0; c < t->ncols; c++) {
		shown[c] = true;
		total += w[c] + (c ? 2 : 0);
	}
	all = total;
	for (; cols && total > cols && *drop >= 0; drop++) {
		shown[*drop] = false;
		total -= w[*drop] + 2;
		hidden++;
	}
	table_print(t, f, w, shown);
	if (hidden) {
		bool first = true;

		fputs("hidden:", f);
		for (c = 0; c < t->ncols; c++) {
			if (shown[c])
				continue;
			fprintf(f, "%s %s", first ? "" : ",", t->cells[c]);
			first = false;
		}
		fprintf(f, " (-w %zu for all)\n", all);
	}
	return hidden;
}

void kvactl_table_free(struct kvactl_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

/* ---- JSON ------------------------------------------------------------------- */

void kvactl_json_init(struct kvactl_json *j, FILE *f, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->pretty = pretty;
}

static void indent(struct kvactl_json *j)
{
	if (j->pretty && j->depth) {
		putc('\n', j->f);
		fprintf(j->f, "%*s", 2 * j->depth, "");
	}
}

/* A string literal: escaped, invalid UTF-8 as U+FFFD. */
static void json_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	putc('"', f);
	while (*s) {
		size_t n = kvactl_utf8_len(s);

		if (!n) {
			fputs("\\ufffd", f);
			s++;
		} else if (*s == '"' || *s == '\\') {
			fprintf(f, "\\%c", *s++);
		} else if (*s < 0x20 || *s == 0x7f) {
			fprintf(f, "\\u%04x", *s++);
		} else {
			fwrite(s, 1, n, f);
			s += n;
		}
	}
	putc('"', f);
}

/* Comma, newline and indentation, then the key if in an object. */
static void member(struct kvactl_json *j, const char *key)
{
	if (j->any[j->depth])
		putc(',', j->f);
	j->any[j->depth] = true;
	indent(j);
	if (key) {
		json_string(j->f, key);
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void open_nested(struct kvactl_json *j, const char *key, char c)
{
	member(j, key);
	putc(c, j->f);
	j->close[j->depth] = c == '{' ? '}' : ']';
	j->depth++;
	j->any[j->depth] = false;
}

void kvactl_json_obj(struct kvactl_json *j, const char *key)
{
	open_nested(j, key, '{');
}

void kvactl_json_arr(struct kvactl_json *j, const char *key)
{
	open_nested(j, key, '[');
}

void kvactl_json_end(struct kvactl_json *j)
{
	bool any = j->any[j->depth];

	j->depth--;
	if (any && j->pretty)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	putc(j->close[j->depth], j->f);
}

void kvactl_json_u64(struct kvactl_json *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void kvactl_json_i64(struct kvactl_json *j, const char *key, int64_t v)
{
	member(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void kvactl_json_str(struct kvactl_json *j, const char *key, const char *s)
{
	member(j, key);
	json_string(j->f, s);
}

void kvactl_json_bool(struct kvactl_json *j, const char *key, bool v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void kvactl_json_null(struct kvactl_json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

void kvactl_json_pct(struct kvactl_json *j, const char *key, uint64_t num,
		     uint64_t den)
{
	uint64_t t;

	if (!den) {
		kvactl_json_null(j, key);
		return;
	}
	t = tenths(num, den, 100);
	member(j, key);
	fprintf(j->f, "%llu.%llu", (unsigned long long)(t / 10),
		(unsigned long long)(t % 10));
}

void kvactl_json_done(struct kvactl_json *j)
{
	putc('\n', j->f);
}
