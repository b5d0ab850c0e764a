// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl's parsers and formatters against hand-written expectations:
 * sizes in and out as free -h prints them, percentages, labels, tables
 * and JSON.  Runs natively, also under ASan/UBSan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "kvarenactl.h"

TEST(parse_size_takes_every_form_the_tool_prints)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "3000", 3000 }, { "512B", 512 }, { "64K", 65536 },
		{ "64Ki", 65536 }, { "64KiB", 65536 }, { "64kb", 65536 },
		{ "2M", 2097152 }, { "2Mi", 2097152 }, { "2MiB", 2097152 },
		{ "2mb", 2097152 }, { "2m", 2097152 }, { "2.0Mi", 2097152 },
		{ "1.5Gi", 3ull << 29 }, { "1.5G", 3ull << 29 },
		{ "0.5K", 512 }, { "1g", 1073741824 }, { "3T", 3ull << 40 },
		{ "1P", 1ull << 50 }, { "15Ei", 15ull << 60 },
		{ "2.000000000Mi", 2097152 }, { "1.0", 1 },
		{ "18446744073709551615", UINT64_MAX },
	};
	static const char *const bad[] = {
		"", "M", "-1", "2X", "2 M", "2Mii", "2MiBB", "2iB", ".5M",
		"1.", "1.5", "0.3K", "1.0000000001K", "2M ", "+2M", "1e3",
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 0;
		EXPECT_EQ(0, kvactl_parse_size(ok[i].s, &v)) TH_LOG("%s", ok[i].s);
		EXPECT_EQ(ok[i].v, v) TH_LOG("%s", ok[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, kvactl_parse_size(bad[i], &v)) TH_LOG("%s", bad[i]);
	}
	EXPECT_EQ(-ERANGE, kvactl_parse_size("16777216T", &v));
	EXPECT_EQ(-ERANGE, kvactl_parse_size("16Ei", &v));
	EXPECT_EQ(-ERANGE, kvactl_parse_size("18446744073709551616", &v));
}

TEST(sizes_read_back_what_they_print)
{
	static const uint64_t sizes[] = { 4096, 65536, 2 << 20, 3ull << 29,
					  1ull << 30, 140ull << 30 };
	char buf[KVACTL_NUM_LEN];
	uint64_t v;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ASSERT_EQ(0, kvactl_parse_size(kvactl_fmt_size(buf, sizes[i], false), &v));
		EXPECT_EQ(sizes[i], v) TH_LOG("%s", buf);
		ASSERT_EQ(0, kvactl_parse_size(kvactl_fmt_size(buf, sizes[i], true), &v));
		EXPECT_EQ(sizes[i], v) TH_LOG("%s", buf);
		ASSERT_EQ(0, kvactl_parse_size(kvactl_fmt_size_exact(buf, sizes[i]), &v));
		EXPECT_EQ(sizes[i], v) TH_LOG("%s", buf);
	}
	EXPECT_STREQ("4Ki", kvactl_fmt_size_exact(buf, 4096));
	EXPECT_STREQ("1Gi", kvactl_fmt_size_exact(buf, 1 << 30));
	EXPECT_STREQ("1536Ki", kvactl_fmt_size_exact(buf, 3 << 19));
	EXPECT_STREQ("1000", kvactl_fmt_size_exact(buf, 1000));
	EXPECT_STREQ("0", kvactl_fmt_size_exact(buf, 0));
}

TEST(quote_escapes_control_bytes_and_cuts_long_input)
{
	char buf[KVACTL_QUOTE_LEN];
	char longer[200];

	EXPECT_STREQ("\"gpu0\"", kvactl_quote(buf, "gpu0"));
	EXPECT_STREQ("\"\"", kvactl_quote(buf, ""));
	EXPECT_STREQ("\"a\\x1b[2J\\x07\\x7f\"", kvactl_quote(buf, "a\x1b[2J\a\x7f"));
	EXPECT_STREQ("\"q\\\"b\\\\\"", kvactl_quote(buf, "q\"b\\"));
	EXPECT_STREQ("\"caf\xc3\xa9\\xff\\xc3\"", kvactl_quote(buf, "caf\xc3\xa9\xff\xc3"));
	memset(longer, 0xff, sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	kvactl_quote(buf, longer);
	EXPECT_EQ(1 + 64 * 4 + 3 + 1, strlen(buf));
	EXPECT_EQ(0, strcmp(buf + strlen(buf) - 4, "...\""));
}

TEST(parse_u32_is_strict)
{
	uint32_t v;

	ASSERT_EQ(0, kvactl_parse_u32("4294967295", &v));
	EXPECT_EQ(UINT32_MAX, v);
	ASSERT_EQ(0, kvactl_parse_u32("0", &v));
	EXPECT_EQ(0, v);
	EXPECT_EQ(-ERANGE, kvactl_parse_u32("4294967296", &v));
	EXPECT_EQ(-EINVAL, kvactl_parse_u32("+1", &v));
	EXPECT_EQ(-EINVAL, kvactl_parse_u32("1k", &v));
	EXPECT_EQ(-EINVAL, kvactl_parse_u32("", &v));
}

TEST(parse_seconds_takes_up_to_milliseconds)
{
	uint64_t ms;

	ASSERT_EQ(0, kvactl_parse_seconds("1", &ms));
	EXPECT_EQ(1000, ms);
	ASSERT_EQ(0, kvactl_parse_seconds("0.5", &ms));
	EXPECT_EQ(500, ms);
	ASSERT_EQ(0, kvactl_parse_seconds(".25", &ms));
	EXPECT_EQ(250, ms);
	ASSERT_EQ(0, kvactl_parse_seconds("2.125", &ms));
	EXPECT_EQ(2125, ms);
	ASSERT_EQ(0, kvactl_parse_seconds("0.009", &ms));
	EXPECT_EQ(9, ms);
	ASSERT_EQ(0, kvactl_parse_seconds("0", &ms));
	EXPECT_EQ(0, ms);
	ASSERT_EQ(0, kvactl_parse_seconds("999999999.999", &ms));
	EXPECT_EQ(999999999999ull, ms);
	EXPECT_EQ(-EINVAL, kvactl_parse_seconds("1.2345", &ms));
	EXPECT_EQ(-EINVAL, kvactl_parse_seconds("1.", &ms));
	EXPECT_EQ(-EINVAL, kvactl_parse_seconds(".", &ms));
	EXPECT_EQ(-EINVAL, kvactl_parse_seconds("", &ms));
	EXPECT_EQ(-EINVAL, kvactl_parse_seconds("1s", &ms));
	EXPECT_EQ(-ERANGE, kvactl_parse_seconds("1000000000", &ms));
}

static const char *size(uint64_t bytes)
{
	static char buf[KVACTL_NUM_LEN];

	return kvactl_fmt_size(buf, bytes, false);
}

TEST(sizes_print_as_free_h_does)
{
	char buf[KVACTL_NUM_LEN];

	EXPECT_STREQ("0B", size(0));
	EXPECT_STREQ("1023B", size(1023));
	EXPECT_STREQ("1.0Ki", size(1024));
	EXPECT_STREQ("1.5Ki", size(1536));
	/* 9.95Ki rounds to 10 and loses its decimal. */
	EXPECT_STREQ("9.9Ki", size(10188));	/* 9.949 */
	EXPECT_STREQ("10Ki", size(10189));	/* 9.950 */
	EXPECT_STREQ("356Ki", size(364544));
	EXPECT_STREQ("512Ki", size(524288));
	/* 1023.999Ki is 1024Ki: one unit up. */
	EXPECT_STREQ("1.0Mi", size(1048575));
	EXPECT_STREQ("1.0Mi", size(1048576));
	EXPECT_STREQ("2.0Mi", size(2 << 20));
	EXPECT_STREQ("640Mi", size(640ull << 20));
	EXPECT_STREQ("1.0Gi", size(1ull << 30));
	EXPECT_STREQ("140Gi", size(140ull << 30));
	EXPECT_STREQ("16Ei", size(UINT64_MAX));
	EXPECT_STREQ("65536", kvactl_fmt_size(buf, 65536, true));
	EXPECT_STREQ("0", kvactl_fmt_size(buf, 0, true));
}

TEST(percentages_and_ratios_round_to_one_decimal)
{
	char buf[KVACTL_NUM_LEN];

	EXPECT_STREQ("30.5%", kvactl_fmt_pct(buf, 159744, 524288)); /* 30.47 */
	EXPECT_STREQ("33.3%", kvactl_fmt_pct(buf, 1, 3));
	EXPECT_STREQ("66.7%", kvactl_fmt_pct(buf, 2, 3));
	EXPECT_STREQ("0.0%", kvactl_fmt_pct(buf, 0, 7));
	EXPECT_STREQ("100.0%", kvactl_fmt_pct(buf, 7, 7));
	EXPECT_STREQ("-", kvactl_fmt_pct(buf, 0, 0));
	/* No overflow at the largest arena: 2^24 frames of 2^30 bytes. */
	EXPECT_STREQ("50.0%", kvactl_fmt_pct(buf, 1ull << 53, 1ull << 54));
	EXPECT_STREQ("5.6", kvactl_fmt_ratio(buf, 364544, 65536)); /* 5.5625 */
	EXPECT_STREQ("0.0", kvactl_fmt_ratio(buf, 0, 65536));
	EXPECT_STREQ("16.0", kvactl_fmt_ratio(buf, 16 * 65536, 65536));
}

TEST(labels_keep_utf8_and_hide_control_bytes)
{
	char buf[4 * KVARENA_LABEL_LEN];

	kvactl_fmt_label(buf, sizeof(buf), "");
	EXPECT_STREQ("-", buf);
	kvactl_fmt_label(buf, sizeof(buf), "vllm-a");
	EXPECT_STREQ("vllm-a", buf);
	kvactl_fmt_label(buf, sizeof(buf), "a\nb\x1b[2J");
	EXPECT_STREQ("a?b?[2J", buf);
	kvactl_fmt_label(buf, sizeof(buf), "caf\xc3\xa9");
	EXPECT_STREQ("caf\xc3\xa9", buf);
	/* A lone continuation byte, an overlong '/', a surrogate. */
	kvactl_fmt_label(buf, sizeof(buf), "\x80x\xc0\xafy\xed\xa0\x80");
	EXPECT_STREQ("?x??y???", buf);
}

/* Run @fn with a memory stream and return what it wrote. */
static char *capture(void (*fn)(FILE *f, void *arg), void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fn(f, arg);
	fclose(f);
	return buf;
}

static void table_fn(FILE *f, void *arg)
{
	struct kvactl_table t;

	kvactl_table_init(&t, 3, "lrl");
	kvactl_table_add(&t, "NAME");
	kvactl_table_add(&t, "N");
	kvactl_table_add(&t, "LABEL");
	kvactl_table_add(&t, "a");
	kvactl_table_add(&t, "%d", 1234);
	kvactl_table_add(&t, "caf\xc3\xa9");
	kvactl_table_add(&t, "longer");
	kvactl_table_add(&t, "5");
	kvactl_table_add(&t, "x");
	kvactl_table_print(&t, f);
	kvactl_table_free(&t);
}

TEST(tables_align_on_the_widest_cell_counting_characters)
{
	char *out = capture(table_fn, NULL);

	EXPECT_STREQ("NAME       N  LABEL\n"
		     "a       1234  caf\xc3\xa9\n"
		     "longer     5  x\n", out);
	free(out);
}

static void fit_fn(FILE *f, void *arg)
{
	static const int drop[] = { 1, 2, -1 };
	struct kvactl_table t;

	kvactl_table_init(&t, 4, "lrrl");
	kvactl_table_add(&t, "NAME");
	kvactl_table_add(&t, "SIZE");
	kvactl_table_add(&t, "PEAK");
	kvactl_table_add(&t, "FAILS");
	kvactl_table_add(&t, "gpu0");
	kvactl_table_add(&t, "1024");
	kvactl_table_add(&t, "2048");
	kvactl_table_add(&t, "7");
	kvactl_table_print_fit(&t, f, *(unsigned int *)arg, drop);
	kvactl_table_free(&t);
}

TEST(a_table_in_a_width_hides_columns_in_order_and_says_which)
{
	unsigned int cols = 0;
	char *out = capture(fit_fn, &cols);

	/* 4 + 2 + 4 + 2 + 4 + 2 + 5 = 23 columns */
	EXPECT_STREQ("NAME  SIZE  PEAK  FAILS\n"
		     "gpu0  1024  2048  7\n", out);
	free(out);
	cols = 23;
	out = capture(fit_fn, &cols);
	EXPECT_STREQ("NAME  SIZE  PEAK  FAILS\n"
		     "gpu0  1024  2048  7\n", out);
	free(out);
	cols = 22;
	out = capture(fit_fn, &cols);
	EXPECT_STREQ("NAME  PEAK  FAILS\n"
		     "gpu0  2048  7\n"
		     "hidden: SIZE (-w 23 for all)\n", out);
	free(out);
	/* Never the columns not in the list, however narrow. */
	cols = 5;
	out = capture(fit_fn, &cols);
	EXPECT_STREQ("NAME  FAILS\n"
		     "gpu0  7\n"
		     "hidden: SIZE, PEAK (-w 23 for all)\n", out);
	free(out);
}

static void json_fn(FILE *f, void *arg)
{
	struct kvactl_json j;

	kvactl_json_init(&j, f, *(bool *)arg);
	kvactl_json_arr(&j, NULL);
	kvactl_json_obj(&j, NULL);
	kvactl_json_str(&j, "label", "q\"b\\s\n\x01\xff\xc3\xa9");
	kvactl_json_u64(&j, "n", 18446744073709551615ull);
	kvactl_json_i64(&j, "pid", -1);
	kvactl_json_bool(&j, "ok", true);
	kvactl_json_pct(&j, "pct", 1, 3);
	kvactl_json_pct(&j, "none", 1, 0);
	kvactl_json_obj(&j, "empty");
	kvactl_json_end(&j);
	kvactl_json_arr(&j, "list");
	kvactl_json_u64(&j, NULL, 1);
	kvactl_json_u64(&j, NULL, 2);
	kvactl_json_end(&j);
	kvactl_json_end(&j);
	kvactl_json_obj(&j, NULL);
	kvactl_json_end(&j);
	kvactl_json_end(&j);
	kvactl_json_done(&j);
}

TEST(json_is_compact_escaped_and_numbers_are_numbers)
{
	bool pretty = false;
	char *out = capture(json_fn, &pretty);

	EXPECT_STREQ("[{\"label\":\"q\\\"b\\\\s\\u000a\\u0001\\ufffd\xc3\xa9\","
		     "\"n\":18446744073709551615,\"pid\":-1,\"ok\":true,"
		     "\"pct\":33.3,\"none\":null,\"empty\":{},"
		     "\"list\":[1,2]},{}]\n", out);
	free(out);
}

TEST(json_pretty_indents_two_spaces)
{
	bool pretty = true;
	char *out = capture(json_fn, &pretty);

	EXPECT_STREQ("[\n"
		     "  {\n"
		     "    \"label\": \"q\\\"b\\\\s\\u000a\\u0001\\ufffd\xc3\xa9\",\n"
		     "    \"n\": 18446744073709551615,\n"
		     "    \"pid\": -1,\n"
		     "    \"ok\": true,\n"
		     "    \"pct\": 33.3,\n"
		     "    \"none\": null,\n"
		     "    \"empty\": {},\n"
		     "    \"list\": [\n"
		     "      1,\n"
		     "      2\n"
		     "    ]\n"
		     "  },\n"
		     "  {}\n"
		     "]\n", out);
	free(out);
}

TEST(available_is_unreserved_free_plus_cached)
{
	struct kvarena_stat s = { .nr_free = 8, .nr_reserved = 1,
				  .nr_cached = 2 };

	EXPECT_EQ(9, kvactl_available(&s));
	s.nr_reserved = 9;	/* never below zero */
	EXPECT_EQ(2, kvactl_available(&s));
	s.frame_size = 65536;
	EXPECT_EQ(0, kvactl_tokens_per_frame(&s));
	s.bytes_per_token = 1000;	/* a partial token does not count */
	EXPECT_EQ(65, kvactl_tokens_per_frame(&s));
}

TEST(names_split_on_commas_and_spaces_and_only_valid_ones)
{
	char n[KVARENA_GANG_MAX][KVARENA_NAME_LEN];
	static const char *const bad[] = {
		",", "a,", ",a", "a,,b", ".a,b", "a,b c", "a,b\n\n",
		"a,\x1b[2J", "a,abcdefghijabcdefghijabcdefghij12",
	};

	/* The command line's --gang: in rank order. */
	ASSERT_EQ(3, kvactl_split_names("gpu0,gpu1,-x_y.z", ',', n, 16));
	EXPECT_STREQ("gpu0", n[0]);
	EXPECT_STREQ("gpu1", n[1]);
	EXPECT_STREQ("-x_y.z", n[2]);
	/* sysfs's members: one line, spaces between. */
	ASSERT_EQ(2, kvactl_split_names("gm0 gm1\n", ' ', n, 16));
	EXPECT_STREQ("gm0", n[0]);
	EXPECT_STREQ("gm1", n[1]);
	/* A member's gang: one name, or an empty line for none. */
	EXPECT_EQ(1, kvactl_split_names("tp\n", ' ', n, 1));
	EXPECT_STREQ("tp", n[0]);
	EXPECT_EQ(0, kvactl_split_names("\n", ' ', n, 1));
	EXPECT_EQ(0, kvactl_split_names("", ',', n, 16));
	ASSERT_EQ(1, kvactl_split_names("abcdefghijabcdefghijabcdefghij1", ',', n, 16));
	EXPECT_STREQ("abcdefghijabcdefghijabcdefghij1", n[0]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, kvactl_split_names(bad[i], ',', n, 16))
			TH_LOG("%s", bad[i]);
	}
	EXPECT_EQ(-ERANGE, kvactl_split_names("a,b,c", ',', n, 2));
	EXPECT_EQ(2, kvactl_split_names("a,b", ',', n, 2));
}

TEST(a_gangs_frame_is_a_frame_in_every_member)
{
	/* Two members of 64Ki frames, 1Ki of each token's KV in each. */
	struct kvarena_stat s = { .frame_size = 65536, .bytes_per_token = 2048,
				  .nr_frames = 16, .nr_backed = 16,
				  .nr_free = 10, .nr_reserved = 1 };

	EXPECT_EQ(131072, kvactl_frame_bytes(&s, 2));
	EXPECT_EQ(64, kvactl_gang_tokens_per_frame(&s, 2));
	/* Not a gang: STAT's frame, STAT's tokens. */
	EXPECT_EQ(65536, kvactl_frame_bytes(&s, 0));
	EXPECT_EQ(65536, kvactl_frame_bytes(&s, 1));
	EXPECT_EQ(32, kvactl_gang_tokens_per_frame(&s, 0));
	EXPECT_EQ(kvactl_tokens_per_frame(&s), kvactl_gang_tokens_per_frame(&s, 1));
	s.bytes_per_token = 0;
	EXPECT_EQ(0, kvactl_gang_tokens_per_frame(&s, 4));
}

TEST(a_members_free_frames_are_ganged_not_free)
{
	struct kvarena_stat s = { .nr_frames = 16, .nr_backed = 16,
				  .nr_free = 16 };
	struct kvactl_gang g = { .rank = -1 };

	EXPECT_FALSE(kvactl_is_member(&g));
	EXPECT_FALSE(kvactl_is_gang(&g));
	EXPECT_EQ(0, kvactl_ganged(&s, &g));
	strcpy(g.gang, "tp");
	EXPECT_TRUE(kvactl_is_member(&g));
	EXPECT_EQ(16, kvactl_ganged(&s, &g));
	/* A gang is not a member: its frames are its own. */
	memset(&g, 0, sizeof(g));
	g.nr_members = 2;
	EXPECT_TRUE(kvactl_is_gang(&g));
	EXPECT_EQ(0, kvactl_ganged(&s, &g));
}

TEST_HARNESS_MAIN
