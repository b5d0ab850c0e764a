// SPDX-License-Identifier: GPL-2.0
/*
 * Strict parsing and formatting of the numbers on the command line.
 *
 * Every parser takes the whole string or fails: no signs, no spaces, no
 * exponents, no trailing junk.  They return 0, -EINVAL for a malformed
 * string or -ERANGE for one too large to hold.
 */
#include <errno.h>
#include <string.h>

#include "kvtools.h"

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Parse leading digits of *sp into *out, advancing *sp. */
static int take_digits(const char **sp, uint64_t *out, int *ndigits)
{
	const char *s = *sp;
	uint64_t v = 0;
	int n = 0;

	for (; is_digit(*s); s++, n++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*sp = s;
	*out = v;
	*ndigits = n;
	return 0;
}

int kvt_parse_u64(const char *s, uint64_t *out)
{
	int n, err;

	err = take_digits(&s, out, &n);
	if (err)
		return err;
	return n && !*s ? 0 : -EINVAL;
}

/*
 * kvt_parse_fixed() - "80", "0.9", ".5", "16.25" into 10^-9 units.
 * At most KVT_FIX_DIGITS decimals.
 */
int kvt_parse_fixed(const char *s, uint64_t *out)
{
	uint64_t ip = 0, fp = 0;
	int ni = 0, nf = 0, err;

	err = take_digits(&s, &ip, &ni);
	if (err)
		return err;
	if (*s == '.') {
		s++;
		err = take_digits(&s, &fp, &nf);
		if (err || nf > KVT_FIX_DIGITS)
			return -EINVAL;
	}
	if (*s || ni + nf == 0)
		return -EINVAL;
	if (ip > UINT64_MAX / KVT_FIX_SCALE - 1)
		return -ERANGE;
	for (; nf < KVT_FIX_DIGITS; nf++)
		fp *= 10;
	*out = ip * KVT_FIX_SCALE + fp;
	return 0;
}

/*
 * kvt_parse_size() - a byte count with an optional binary suffix:
 * "2097152", "64K", "2M", "1G", "2MiB".  Suffixes are powers of 1024 and
 * case-insensitive.
 */
int kvt_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u;
	uint64_t v;
	int n, err, shift = 0;

	err = take_digits(&s, &v, &n);
	if (err)
		return err;
	if (!n)
		return -EINVAL;
	if (*s) {
		char c = *s >= 'a' && *s <= 'z' ? (char)(*s - 'a' + 'A') : *s;

		u = strchr(units, c);
		if (!u || !c)
			return -EINVAL;
		shift = 10 * (int)(u - units + 1);
		s++;
		if (!strcmp(s, "iB") || !strcmp(s, "B"))
			s += strlen(s);
		if (*s)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

/*
 * kvt_parse_list() - "8,16,32" appended to @vals[*n..max), each in
 * [@lo, @hi].  -EINVAL for a malformed or out-of-range item, -E2BIG for
 * more than @max items in all.
 */
int kvt_parse_list(const char *s, uint64_t *vals, int max, int *n,
		   uint64_t lo, uint64_t hi)
{
	for (;;) {
		uint64_t v;
		int nd, err;

		err = take_digits(&s, &v, &nd);
		if (err || !nd || v < lo || v > hi)
			return -EINVAL;
		if (*s && *s != ',')
			return -EINVAL;
		if (*n >= max)
			return -E2BIG;
		vals[(*n)++] = v;
		if (!*s)
			return 0;
		s++;
	}
}

/* kvt_fmt_fixed() - 10^-9 units back to the shortest exact decimal. */
void kvt_fmt_fixed(char *buf, size_t len, uint64_t v)
{
	uint64_t ip = v / KVT_FIX_SCALE, fp = v % KVT_FIX_SCALE;
	int digits = KVT_FIX_DIGITS;

	if (!fp) {
		snprintf(buf, len, "%llu", (unsigned long long)ip);
		return;
	}
	while (fp % 10 == 0) {
		fp /= 10;
		digits--;
	}
	snprintf(buf, len, "%llu.%0*llu", (unsigned long long)ip, digits,
		 (unsigned long long)fp);
}

/* kvt_fmt_bytes() - "512 B", "128.0 KiB", "2.0 MiB", "54.0 GiB". */
void kvt_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	int i = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return;
	}
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[i]);
}

/* kvt_json_str() - a JSON string literal, escaped. */
void kvt_json_str(FILE *f, const char *s)
{
	putc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
	}
	putc('"', f);
}

void kvt_usage_hint(void)
{
	fprintf(stderr, "Try '%s --help'.\n", kvt_prog);
}

int kvt_bad(const char *opt, const char *what, const char *arg)
{
	fprintf(stderr, "%s: %s must be %s: got %s\n", kvt_prog, opt, what,
		arg);
	kvt_usage_hint();
	return KVT_EXIT_USAGE;
}
