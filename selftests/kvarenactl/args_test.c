// SPDX-License-Identifier: GPL-2.0
/*
 * kvarenactl's command line, table-driven: every option with a missing
 * value, a wrong value and a value at the edge of what it takes, every
 * command's arguments, and input made of control characters.  Each row
 * runs the tool and compares its exit status and standard error with the
 * row; every output of every row must be free of control characters
 * (anything below 0x20 but a line feed, and DEL), however the input was
 * made.  The option names in `kvarenactl help COMMAND` must each have a
 * row of every kind, so a new option cannot come without its tests.
 *
 * Runs natively, without the module: $KVA_DEVICE names a node that does
 * not exist, so a command line that is accepted fails with exit status 1
 * at the device (or earlier, at the memory or CUDA checks), and a wrong
 * one fails with exit status 2 before touching anything.
 *
 *   KVARENACTL=build/tools/kvarenactl args_test
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#define DEV	"/nonexistent/kvarena"
#define CUDA	"/nonexistent/libcuda.so.1"

static const char *kvactl;

/* ---- the table ------------------------------------------------------------ */

enum kind {
	OTHER,		/* commands, arguments, names */
	MISSING,	/* an option without its value */
	BAD,		/* an option with a wrong value */
	EDGE,		/* an option with the first or last value it takes */
};

struct row {
	const char *opt;	/* the option the row tests, or NULL */
	enum kind kind;
	int rc;
	const char *err;	/* standard error exactly ... */
	bool prefix;		/* ... or only its start */
	const char *argv[16];
};

#define R(o, k, rc, err, ...)  { o, k, rc, err, false, { __VA_ARGS__, NULL } }
#define RP(o, k, rc, err, ...) { o, k, rc, err, true, { __VA_ARGS__, NULL } }

#define TRY(cmd)	"\nTry 'kvarenactl help " cmd "'.\n"
#define USAGE(cmd, msg)	"kvarenactl: " cmd ": " msg TRY(cmd)
#define NODEV		"kvarenactl: " DEV ": no such "
/* create checks MemAvailable before the device: either may stop it. */
#define CREATE_FAILS	"kvarenactl: "

/* A frame count, or a size of whole frames. */
#define OR_SIZE	", or a size of whole frames (512Mi)"
#define N32	"a whole number from 1 to 16777216" OR_SIZE
#define SIZES	" (bytes, or with K, M, G, T: 64Ki, 2M, 2.0Mi)"
#define FRAME_SIZE "a size from 4Ki to 1Gi" SIZES ", a power of two"
#define BPT	"a size from 1 to 1Gi" SIZES ", at most the frame size"
#define GEO	"a whole number from 1 to 65536"
#define SECS	"seconds from 0.01 to 86400, at most 3 decimals"
#define COUNT	"a whole number from 1 to 18446744073709551615"
#define BACKEND	"host, cuda or cuda:DEVICE (DEVICE 0 to 2147483647)"
#define FRAMES0	"a whole number from 0 to 16777216" OR_SIZE
#define ID	"a whole number from 1 to 4294967295"
#define NAME_RULE "1-31 characters of A-Z a-z 0-9 _ . -, not starting with '.'"

static const struct row rows[] = {
	/* ---- commands and arguments ---- */
	R(NULL, OTHER, 2, "kvarenactl: no command\nTry 'kvarenactl help'.\n",
	  "-j"),
	R(NULL, OTHER, 2, "kvarenactl: unknown command \"frobnicate\"\nTry 'kvarenactl help'.\n",
	  "frobnicate"),
	R(NULL, OTHER, 2, "kvarenactl: unknown command \"\\x1b[2J\\x07\"\nTry 'kvarenactl help'.\n",
	  "\x1b[2J\a"),
	R(NULL, OTHER, 2, "kvarenactl: unknown command \"caf\xc3\xa9\\xff\"\nTry 'kvarenactl help'.\n",
	  "caf\xc3\xa9\xff"),
	R(NULL, OTHER, 2, USAGE("stat", "unknown option \"--frobnicate\""),
	  "stat", "--frobnicate"),
	R(NULL, OTHER, 2, USAGE("stat", "unknown option \"--\\x05\""),
	  "stat", "--\x05"),
	R(NULL, OTHER, 2, USAGE("stat", "unknown option \"-\\x05\""),
	  "stat", "-\x05"),
	R(NULL, OTHER, 2, USAGE("stat", "unknown option \"-Z\""),
	  "stat", "-jZ"),
	R(NULL, OTHER, 2, "kvarenactl: unknown option \"--frames-size\"\nTry 'kvarenactl help'.\n",
	  "--frames-size", "2M", "create", "x"),
	R(NULL, OTHER, 2, USAGE("stat", "--frames does not apply to stat"),
	  "stat", "--frames", "4"),
	R(NULL, OTHER, 2, USAGE("metrics", "--json does not apply to metrics"),
	  "metrics", "--json"),
	R(NULL, OTHER, 2, USAGE("stat", "unexpected argument \"b\""),
	  "stat", "a", "b"),
	R(NULL, OTHER, 2, USAGE("stat", "unexpected argument \"-y\""),
	  "stat", "--", "-x", "-y"),
	R(NULL, OTHER, 2, "kvarenactl: no command before \"stat\"\nTry 'kvarenactl help'.\n",
	  "--", "stat"),
	R(NULL, OTHER, 2, USAGE("stat", "--pretty goes with --json"),
	  "stat", "--pretty"),
	R(NULL, OTHER, 2, "kvarenactl: stat: bad arena name \"bad name\": " NAME_RULE "\n",
	  "stat", "bad name"),
	R(NULL, OTHER, 2, "kvarenactl: stat: bad arena name \"a\\x1b]0;x\\x07\": " NAME_RULE "\n",
	  "stat", "a\x1b]0;x\a"),
	R(NULL, OTHER, 2, "kvarenactl: stat: bad arena name \"\": " NAME_RULE "\n",
	  "stat", ""),
	R(NULL, OTHER, 2, "kvarenactl: stat: bad arena name \"abcdefghijabcdefghijabcdefghij12\": " NAME_RULE "\n",
	  "stat", "abcdefghijabcdefghijabcdefghij12"),
	RP(NULL, OTHER, 1, NODEV, "stat", "abcdefghijabcdefghijabcdefghij1"),
	/* Another tool may have made "-x": viewing reaches it after --. */
	RP(NULL, OTHER, 1, NODEV, "stat", "--", "-x"),
	R(NULL, OTHER, 2, "kvarenactl: create: bad arena name \"-x\": " NAME_RULE " or '-'\n",
	  "create", "--frames", "1", "--", "-x"),
	R(NULL, OTHER, 2, USAGE("create", "usage: kvarenactl create NAME --frames N [options] | NAME --gang M0,M1,... [policy options]"),
	  "create", "--frames", "1"),
	R(NULL, OTHER, 2, USAGE("create", "--frames is required"),
	  "create", "x"),
	R(NULL, OTHER, 2, USAGE("create", "--hugepages is for host memory"),
	  "create", "x", "--frames", "1", "--backend", "cuda", "--hugepages"),
	R(NULL, OTHER, 2, USAGE("create", "--hugepages needs a --frame-size that is a multiple of 2Mi"),
	  "create", "x", "--frames", "1", "--frame-size", "64K", "--hugepages"),
	R(NULL, OTHER, 2, USAGE("create", "give --bytes-per-token or the model geometry, not both"),
	  "create", "x", "--frames", "1", "--bytes-per-token", "1K", "--layers", "2"),
	R(NULL, OTHER, 2, USAGE("create", "one token (1310720 bytes) is more than a frame (64Ki): a token must fit in a frame"),
	  "create", "x", "--frames", "1", "--frame-size", "64K", "--layers", "320",
	  "--kv-heads", "8", "--head-dim", "128"),
	/* fp8: one byte an element, half of fp16's */
	R(NULL, OTHER, 2, USAGE("create", "one token (655360 bytes) is more than a frame (64Ki): a token must fit in a frame"),
	  "create", "x", "--frames", "1", "--frame-size", "64K", "--layers", "320",
	  "--kv-heads", "8", "--head-dim", "128", "--dtype", "fp8"),
	R(NULL, OTHER, 2, USAGE("create", "the model geometry needs --layers, --kv-heads and --head-dim, each 1 to 65536"),
	  "create", "x", "--frames", "1", "--layers", "32"),
	R(NULL, OTHER, 2, USAGE("limit", "name the client: a label, or --id ID (kvarenactl clients x)"),
	  "limit", "x", "--max", "2"),
	R(NULL, OTHER, 2, USAGE("limit", "name the client once: CLIENT or --id, not both"),
	  "limit", "x", "vllm", "--id", "2", "--max", "2"),
	R(NULL, OTHER, 2, USAGE("limit", "client \"#0\": #ID wants an id from 1 to 4294967295"),
	  "limit", "x", "#0", "--max", "1"),
	R(NULL, OTHER, 2, USAGE("limit", "client \"#\": #ID wants an id from 1 to 4294967295"),
	  "limit", "x", "#", "--max", "1"),
	R(NULL, OTHER, 2, USAGE("limit", "client \"#4294967296\": #ID wants an id from 1 to 4294967295"),
	  "limit", "x", "#4294967296", "--max", "1"),
	RP(NULL, OTHER, 1, NODEV, "limit", "x", "#4294967295", "--max", "1"),
	R(NULL, OTHER, 2, USAGE("limit", "give --min, --max or both"),
	  "limit", "x", "#1"),
	R(NULL, OTHER, 2, USAGE("limit", "--min 5 is above --max 2"),
	  "limit", "x", "#1", "--min", "5", "--max", "2"),
	RP(NULL, OTHER, 1, NODEV, "limit", "x", "#1", "--min", "5", "--max", "0"),
	/* A label of digits is a label: the module is asked. */
	RP(NULL, OTHER, 1, NODEV, "limit", "x", "12", "--max", "3"),
	R(NULL, OTHER, 2, "kvarenactl: help: unknown command \"x\\x01\"\nTry 'kvarenactl help'.\n",
	  "help", "x\x01"),
	R(NULL, OTHER, 2, "kvarenactl: help: unexpected argument \"b\"\nTry 'kvarenactl help'.\n",
	  "help", "a", "b"),
	R(NULL, OTHER, 0, "", "help"),
	R(NULL, OTHER, 0, "", "help", "create"),

	/* ---- every option: missing, wrong, at the edges ---- */
	R("json", BAD, 2, USAGE("stat", "--json takes no value"),
	  "stat", "--json=1"),
	RP("json", EDGE, 1, NODEV, "stat", "-j"),
	R("pretty", BAD, 2, USAGE("stat", "--pretty takes no value"),
	  "stat", "--pretty=yes"),
	RP("pretty", EDGE, 1, NODEV, "stat", "-jp"),
	R("bytes", BAD, 2, USAGE("clients", "--bytes takes no value"),
	  "clients", "--bytes="),
	RP("bytes", EDGE, 1, NODEV, "-b", "clients"),

	R("interval", MISSING, 2, USAGE("top", "-d (--interval) needs a value: " SECS),
	  "top", "-d"),
	R("interval", MISSING, 2, USAGE("top", "--interval needs a value: " SECS),
	  "top", "--interval", "-n", "1"),
	R("interval", BAD, 2, USAGE("top", "--interval \"1.5555\": want " SECS),
	  "top", "-d", "1.5555"),
	R("interval", BAD, 2, USAGE("top", "--interval \"0.009\": out of range: want " SECS),
	  "top", "-d0.009"),
	R("interval", BAD, 2, USAGE("top", "--interval \"86400.001\": out of range: want " SECS),
	  "top", "--interval=86400.001"),
	R("interval", BAD, 2, USAGE("top", "--interval \"-1\": want " SECS),
	  "top", "-d", "-1"),
	RP("interval", EDGE, 1, NODEV, "top", "-d", "0.01"),
	RP("interval", EDGE, 1, NODEV, "top", "-d", "86400"),

	R("iterations", MISSING, 2, USAGE("top", "-n (--iterations) needs a value: " COUNT),
	  "top", "-n"),
	R("iterations", BAD, 2, USAGE("top", "--iterations \"0\": out of range: want " COUNT),
	  "top", "-n", "0"),
	R("iterations", BAD, 2, USAGE("top", "--iterations \"18446744073709551616\": out of range: want " COUNT),
	  "top", "-n", "18446744073709551616"),
	R("iterations", BAD, 2, USAGE("top", "--iterations \"1x\": want " COUNT),
	  "top", "-n", "1x"),
	RP("iterations", EDGE, 1, NODEV, "top", "-n", "1"),
	RP("iterations", EDGE, 1, NODEV, "top", "-n", "18446744073709551615"),

	R("width", MISSING, 2, USAGE("top", "-w (--width) needs a value: a whole number from 40 to 10000"),
	  "top", "-w"),
	R("width", BAD, 2, USAGE("top", "--width \"39\": out of range: want a whole number from 40 to 10000"),
	  "top", "-w", "39"),
	R("width", BAD, 2, USAGE("top", "--width \"10001\": out of range: want a whole number from 40 to 10000"),
	  "top", "--width=10001"),
	R("width", BAD, 2, USAGE("top", "--width \"wide\": want a whole number from 40 to 10000"),
	  "top", "-w", "wide"),
	RP("width", EDGE, 1, NODEV, "top", "-w", "40"),
	RP("width", EDGE, 1, NODEV, "top", "-w10000"),

	R("frames", MISSING, 2, USAGE("create", "--frames needs a value: " N32),
	  "create", "x", "--frames"),
	R("frames", MISSING, 2, USAGE("create", "--frames needs a value: " N32),
	  "create", "x", "--frames", "--frame-size", "2M"),
	R("frames", BAD, 2, USAGE("create", "--frames \"0\": out of range: want " N32),
	  "create", "x", "--frames", "0"),
	R("frames", BAD, 2, USAGE("create", "--frames \"16777217\": out of range: want " N32),
	  "create", "x", "--frames", "16777217"),
	R("frames", BAD, 2, USAGE("create", "--frames \"99999999999\": out of range: want " N32),
	  "create", "x", "--frames", "99999999999"),
	R("frames", BAD, 2, USAGE("create", "--frames \"12\\x1b[31m\": want " N32),
	  "create", "x", "--frames", "12\x1b[31m"),
	R("frames", BAD, 2, USAGE("create", "--frames \"-1\": want " N32),
	  "create", "x", "--frames", "-1"),
	RP("frames", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K"),
	RP("frames", EDGE, 1, CREATE_FAILS, "create", "x", "--frames", "16777216",
	   "--frame-size", "4K"),

	R("frame-size", MISSING, 2, USAGE("create", "--frame-size needs a value: " FRAME_SIZE),
	  "create", "x", "--frames", "1", "--frame-size"),
	R("frame-size", BAD, 2, USAGE("create", "--frame-size \"3000\": out of range: want " FRAME_SIZE),
	  "create", "x", "--frames", "1", "--frame-size", "3000"),
	R("frame-size", BAD, 2, USAGE("create", "--frame-size \"5000\": want " FRAME_SIZE),
	  "create", "x", "--frames", "1", "--frame-size", "5000"),
	R("frame-size", BAD, 2, USAGE("create", "--frame-size \"2Gi\": out of range: want " FRAME_SIZE),
	  "create", "x", "--frames", "1", "--frame-size", "2Gi"),
	R("frame-size", BAD, 2, USAGE("create", "--frame-size \"2X\": want " FRAME_SIZE),
	  "create", "x", "--frames", "1", "--frame-size", "2X"),
	R("frame-size", BAD, 2, USAGE("create", "--frame-size \"4.5K\": want " FRAME_SIZE),
	  "create", "x", "--frames", "1", "--frame-size", "4.5K"),
	RP("frame-size", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4Ki"),
	RP("frame-size", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "64Ki"),
	RP("frame-size", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "2.0Mi"),
	RP("frame-size", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "2MiB"),
	RP("frame-size", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "2097152"),
	RP("frame-size", EDGE, 1, CREATE_FAILS, "create", "x", "--frames", "1",
	   "--frame-size", "1Gi"),

	R("backend", MISSING, 2, USAGE("create", "--backend needs a value: " BACKEND),
	  "create", "x", "--frames", "1", "--backend"),
	R("backend", BAD, 2, USAGE("create", "--backend \"tape\": want " BACKEND),
	  "create", "x", "--frames", "1", "--backend", "tape"),
	R("backend", BAD, 2, USAGE("create", "--backend \"cuda:\": want " BACKEND),
	  "create", "x", "--frames", "1", "--backend", "cuda:"),
	R("backend", BAD, 2, USAGE("create", "--backend \"cuda:2147483648\": out of range: want " BACKEND),
	  "create", "x", "--frames", "1", "--backend", "cuda:2147483648"),
	R("backend", BAD, 2, USAGE("create", "--backend \"\\x07\": want " BACKEND),
	  "create", "x", "--frames", "1", "--backend", "\a"),
	RP("backend", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K", "--backend", "host"),
	RP("backend", EDGE, 1, "kvarenactl: cuda backend: " CUDA " not found: ",
	   "create", "x", "--frames", "1", "--backend", "cuda:2147483647"),

	/* The device is opened before the file: nothing is made here. */
#define FILE_WANT "a path of a regular file, or of one to make"
	R("file", MISSING, 2, USAGE("create", "--file needs a value: " FILE_WANT),
	  "create", "x", "--frames", "1", "--file"),
	R("file", BAD, 2, USAGE("create", "--file \"\": want " FILE_WANT),
	  "create", "x", "--frames", "1", "--file="),
	R("file", BAD, 2, USAGE("create", "--file or --backend, not both: a file arena's frames are its file"),
	  "create", "x", "--frames", "1", "--file", "/nonexistent/f",
	  "--backend", "cuda"),
	R("file", BAD, 2, USAGE("create", "--file or --backend, not both: a file arena's frames are its file"),
	  "create", "x", "--frames", "1", "--backend", "host", "--file",
	  "/nonexistent/f"),
	R("file", BAD, 2, USAGE("create", "--max-frames 8 is above --frames 4: a file arena is not resized"),
	  "create", "x", "--frames", "4", "--max-frames", "8", "--file",
	  "/nonexistent/f"),
	R("file", BAD, 2, USAGE("create", "--clear-always is for host arenas: nobody but the agent reads a file arena's frames"),
	  "create", "x", "--frames", "1", "--file", "/nonexistent/f",
	  "--clear-always"),
	R("file", BAD, 2, USAGE("create", "--hugepages is for host memory"),
	  "create", "x", "--frames", "1", "--file", "/nonexistent/f",
	  "--hugepages"),
	R("file", BAD, 2, USAGE("create", "--headroom is for host memory without --hugepages"),
	  "create", "x", "--frames", "1", "--file", "/nonexistent/f",
	  "--headroom", "1G"),
	R("file", BAD, 2, USAGE("stat", "--file does not apply to stat"),
	  "stat", "--file", "/nonexistent/f"),
	RP("file", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--max-frames", "4", "--file", "/nonexistent/f"),
	RP("file", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--file", "f\x1b[2J"),
	/* No MemAvailable check: 16Pi on a disk is the disk's business. */
	RP("file", EDGE, 1, NODEV, "create", "x", "--frames", "16777216",
	   "--frame-size", "1G", "--file", "/nonexistent/f"),

	/* ---- create --gang: the members as they are, the policy only ---- */
#define GANG_WANT "2 to 16 arena names, comma-separated, in rank order (gpu0,gpu1)"
#define NOT_WITH_GANG(o) USAGE("create", "--" o " does not go with --gang: a gang's frames are its members', as they are")
#define G16 "g0,g1,g2,g3,g4,g5,g6,g7,g8,g9,g10,g11,g12,g13,g14,g15"
#define N31 "abcdefghijabcdefghijabcdefghij1"
	R("gang", MISSING, 2, USAGE("create", "--gang needs a value: " GANG_WANT),
	  "create", "x", "--gang"),
	R("gang", MISSING, 2, USAGE("create", "--gang needs a value: " GANG_WANT),
	  "create", "x", "--gang", "--mode", "0660"),
	R("gang", BAD, 2, USAGE("create", "--gang \"g0\": out of range: want " GANG_WANT),
	  "create", "x", "--gang", "g0"),
	R("gang", BAD, 2, USAGE("create", "--gang \"" G16 ",g16\": out of range: want " GANG_WANT),
	  "create", "x", "--gang", G16 ",g16"),
	R("gang", BAD, 2, USAGE("create", "--gang \"\": want " GANG_WANT),
	  "create", "x", "--gang="),
	R("gang", BAD, 2, USAGE("create", "--gang \"g0,,g1\": want " GANG_WANT),
	  "create", "x", "--gang", "g0,,g1"),
	R("gang", BAD, 2, USAGE("create", "--gang \"g0,g1,\": want " GANG_WANT),
	  "create", "x", "--gang", "g0,g1,"),
	R("gang", BAD, 2, USAGE("create", "--gang \",g0,g1\": want " GANG_WANT),
	  "create", "x", "--gang", ",g0,g1"),
	R("gang", BAD, 2, USAGE("create", "--gang \"g0,.g1\": want " GANG_WANT),
	  "create", "x", "--gang", "g0,.g1"),
	R("gang", BAD, 2, USAGE("create", "--gang \"g0, g1\": want " GANG_WANT),
	  "create", "x", "--gang", "g0, g1"),
	R("gang", BAD, 2, USAGE("create", "--gang \"g0,g\\x1b[2J\": want " GANG_WANT),
	  "create", "x", "--gang", "g0,g\x1b[2J"),
	R("gang", BAD, 2, USAGE("create", "--gang \"g0," N31 "2\": want " GANG_WANT),
	  "create", "x", "--gang", "g0," N31 "2"),
	R("gang", BAD, 2, USAGE("create", "--gang names \"g1\" twice: each member is the memory of one rank"),
	  "create", "x", "--gang", "g0,g1,g2,g1"),
	R("gang", BAD, 2, USAGE("create", "--gang names \"x\", the gang itself: its members are other arenas"),
	  "create", "x", "--gang", "g0,x"),
	R("gang", BAD, 2, NOT_WITH_GANG("frames"),
	  "create", "x", "--gang", "g0,g1", "--frames", "4"),
	R("gang", BAD, 2, NOT_WITH_GANG("max-frames"),
	  "create", "x", "--max-frames", "8", "--gang", "g0,g1"),
	R("gang", BAD, 2, NOT_WITH_GANG("frame-size"),
	  "create", "x", "--gang", "g0,g1", "--frame-size", "64K"),
	R("gang", BAD, 2, NOT_WITH_GANG("backend"),
	  "create", "x", "--gang", "g0,g1", "--backend", "host"),
	R("gang", BAD, 2, NOT_WITH_GANG("file"),
	  "create", "x", "--gang", "g0,g1", "--file", "/nonexistent/f"),
	R("gang", BAD, 2, NOT_WITH_GANG("low-watermark"),
	  "create", "x", "--gang", "g0,g1", "--low-watermark", "1"),
	R("gang", BAD, 2, NOT_WITH_GANG("bytes-per-token"),
	  "create", "x", "--gang", "g0,g1", "--bytes-per-token", "1K"),
	R("gang", BAD, 2, NOT_WITH_GANG("layers"),
	  "create", "x", "--gang", "g0,g1", "--layers", "32"),
	R("gang", BAD, 2, NOT_WITH_GANG("hugepages"),
	  "create", "x", "--gang", "g0,g1", "--hugepages"),
	R("gang", BAD, 2, NOT_WITH_GANG("headroom"),
	  "create", "x", "--gang", "g0,g1", "--headroom", "1G"),
	R("gang", BAD, 2, NOT_WITH_GANG("clear-always"),
	  "create", "x", "--gang", "g0,g1", "--clear-always"),
	R("gang", BAD, 2, USAGE("stat", "--gang does not apply to stat"),
	  "stat", "--gang", "g0,g1"),
	R("gang", BAD, 2, "kvarenactl: create: bad arena name \"-x\": " NAME_RULE " or '-'\n",
	  "create", "--gang", "g0,g1", "--", "-x"),
	RP("gang", EDGE, 1, NODEV, "create", "x", "--gang", "g0,g1"),
	RP("gang", EDGE, 1, NODEV, "create", "x", "--gang", G16),
	RP("gang", EDGE, 1, NODEV, "create", "x", "--gang=-g0,g1"),
	RP("gang", EDGE, 1, NODEV, "create", N31, "--gang",
	   "abcdefghijabcdefghijabcdefghij2,abcdefghijabcdefghijabcdefghij3"),
	/* The policy goes with it, sizes in the first member's frames. */
	RP("gang", EDGE, 1, NODEV, "create", "x", "--gang", "g0,g1",
	   "--owner", "0", "--group", "0", "--mode", "0660",
	   "--client-max-limit", "64Mi", "--cache-domains", "arena"),

	R("low-watermark", MISSING, 2, USAGE("create", "--low-watermark needs a value: " FRAMES0 ", at most --max-frames, or --frames"),
	  "create", "x", "--frames", "1", "--low-watermark"),
	R("low-watermark", BAD, 2, USAGE("create", "--low-watermark 5 is above --frames 4"),
	  "create", "x", "--frames", "4", "--low-watermark", "5"),
	R("low-watermark", BAD, 2, USAGE("create", "--low-watermark \"16777217\": out of range: want " FRAMES0 ", at most --max-frames, or --frames"),
	  "create", "x", "--frames", "4", "--low-watermark", "16777217"),
	RP("low-watermark", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--frame-size", "4K", "--low-watermark", "4"),
	/* Limits in frames are against the most the arena may become. */
	RP("low-watermark", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--max-frames", "8", "--frame-size", "4K", "--low-watermark", "8"),
	R("low-watermark", BAD, 2, USAGE("create", "--low-watermark 9 is above --max-frames 8"),
	  "create", "x", "--frames", "4", "--max-frames", "8",
	  "--low-watermark", "9"),
	RP("low-watermark", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--frame-size", "4K", "--low-watermark", "0"),

	R("bytes-per-token", MISSING, 2, USAGE("create", "--bytes-per-token needs a value: " BPT),
	  "create", "x", "--frames", "1", "--bytes-per-token"),
	R("bytes-per-token", BAD, 2, USAGE("create", "--bytes-per-token \"0\": out of range: want " BPT),
	  "create", "x", "--frames", "1", "--bytes-per-token", "0"),
	R("bytes-per-token", BAD, 2, USAGE("create", "--bytes-per-token 2Mi is more than a frame (64Ki): a token must fit in a frame"),
	  "create", "x", "--frames", "1", "--frame-size", "64K",
	  "--bytes-per-token", "2M"),
	R("bytes-per-token", BAD, 2, USAGE("create", "--bytes-per-token \"0.3K\": want " BPT),
	  "create", "x", "--frames", "1", "--bytes-per-token", "0.3K"),
	RP("bytes-per-token", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "64K", "--bytes-per-token", "64Ki"),
	RP("bytes-per-token", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "64K", "--bytes-per-token", "1"),

	R("layers", MISSING, 2, USAGE("create", "--layers needs a value: " GEO),
	  "create", "x", "--frames", "1", "--layers"),
	R("layers", BAD, 2, USAGE("create", "--layers \"65537\": out of range: want " GEO),
	  "create", "x", "--frames", "1", "--layers", "65537"),
	RP("layers", EDGE, 1, CREATE_FAILS, "create", "x", "--frames", "1",
	   "--frame-size", "1G", "--layers", "65536", "--kv-heads", "1",
	   "--head-dim", "1"),
	R("kv-heads", MISSING, 2, USAGE("create", "--kv-heads needs a value: " GEO),
	  "create", "x", "--frames", "1", "--kv-heads"),
	R("kv-heads", BAD, 2, USAGE("create", "--kv-heads \"0\": out of range: want " GEO),
	  "create", "x", "--frames", "1", "--kv-heads", "0"),
	RP("kv-heads", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K", "--layers", "1", "--kv-heads", "1",
	   "--head-dim", "1"),
	R("head-dim", MISSING, 2, USAGE("create", "--head-dim needs a value: " GEO),
	  "create", "x", "--frames", "1", "--head-dim"),
	R("head-dim", BAD, 2, USAGE("create", "--head-dim \"x\": want " GEO),
	  "create", "x", "--frames", "1", "--head-dim", "x"),
	RP("head-dim", EDGE, 1, CREATE_FAILS, "create", "x", "--frames", "1",
	   "--frame-size", "1G", "--layers", "1", "--kv-heads", "1",
	   "--head-dim", "65536"),
	R("dtype", MISSING, 2, USAGE("create", "--dtype needs a value: fp16, bf16, fp32 or fp8"),
	  "create", "x", "--frames", "1", "--dtype"),
	R("dtype", BAD, 2, USAGE("create", "--dtype \"int8\": want fp16, bf16, fp32 or fp8"),
	  "create", "x", "--frames", "1", "--dtype", "int8"),
	RP("dtype", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--layers", "32", "--kv-heads", "8", "--head-dim", "128",
	   "--dtype", "fp32"),
	R("hugepages", BAD, 2, USAGE("create", "--hugepages takes no value"),
	  "create", "x", "--frames", "1", "--hugepages=2M"),
	RP("hugepages", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--hugepages"),

#define HEADROOM "a size (1Gi) or a share of MemTotal from 0% to 100% (12.5%)"
	R("headroom", MISSING, 2, USAGE("create", "--headroom needs a value: " HEADROOM),
	  "create", "x", "--frames", "1", "--headroom"),
	R("headroom", BAD, 2, USAGE("create", "--headroom \"12.55%\": want " HEADROOM),
	  "create", "x", "--frames", "1", "--headroom", "12.55%"),
	R("headroom", BAD, 2, USAGE("create", "--headroom \"100.1%\": out of range: want " HEADROOM),
	  "create", "x", "--frames", "1", "--headroom", "100.1%"),
	R("headroom", BAD, 2, USAGE("create", "--headroom \"%\": want " HEADROOM),
	  "create", "x", "--frames", "1", "--headroom", "%"),
	R("headroom", BAD, 2, USAGE("create", "--headroom is for host memory without --hugepages"),
	  "create", "x", "--frames", "1", "--headroom", "1G", "--backend", "cuda"),
	RP("headroom", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K", "--headroom", "0%"),
	RP("headroom", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K", "--headroom", "0"),
	RP("headroom", EDGE, 1, "kvarenactl: create: 4.0Ki of host memory asked for, but MemAvailable is ",
	   "create", "x", "--frames", "1", "--frame-size", "4K", "--headroom", "100%"),

	R("id", MISSING, 2, USAGE("limit", "--id needs a value: " ID),
	  "limit", "x", "--max", "1", "--id"),
	R("id", BAD, 2, USAGE("limit", "--id \"0\": out of range: want " ID),
	  "limit", "x", "--id", "0", "--max", "1"),
	R("id", BAD, 2, USAGE("limit", "--id \"4294967296\": out of range: want " ID),
	  "limit", "x", "--id", "4294967296", "--max", "1"),
	RP("id", EDGE, 1, NODEV, "limit", "x", "--id", "1", "--max", "1"),
	RP("id", EDGE, 1, NODEV, "limit", "x", "--id=4294967295", "--max", "1"),
	R("min", MISSING, 2, USAGE("limit", "--min needs a value: " FRAMES0 ", at most the arena's frames"),
	  "limit", "x", "#1", "--min"),
	R("min", BAD, 2, USAGE("limit", "--min \"16777217\": out of range: want " FRAMES0 ", at most the arena's frames"),
	  "limit", "x", "#1", "--min", "16777217"),
	RP("min", EDGE, 1, NODEV, "limit", "x", "#1", "--min", "0"),
	RP("min", EDGE, 1, NODEV, "limit", "x", "#1", "--min", "16777216"),
	R("max", MISSING, 2, USAGE("limit", "--max needs a value: " FRAMES0 ", at most the arena's frames"),
	  "limit", "x", "#1", "--max"),
	R("max", BAD, 2, USAGE("limit", "--max \"2.5\": want " FRAMES0 ", at most the arena's frames"),
	  "limit", "x", "#1", "--max", "2.5"),
	RP("max", EDGE, 1, NODEV, "limit", "x", "#1", "--max", "0"),
	RP("max", EDGE, 1, NODEV, "limit", "x", "#1", "--max", "16777216"),

#define OWNER	"a user name or a uid from 0 to 4294967294"
#define GROUP	"a group name or a gid from 0 to 4294967294"
#define MODE	"octal bits of 0666: r views, w attaches (0660)"
#define PFRAMES	FRAMES0 ", at most the arena's frames"
	R("owner", MISSING, 2, USAGE("create", "--owner needs a value: " OWNER),
	  "create", "x", "--frames", "1", "--owner"),
	R("owner", BAD, 2, USAGE("create", "--owner \"4294967295\": out of range: want " OWNER),
	  "create", "x", "--frames", "1", "--owner", "4294967295"),
	R("owner", BAD, 2, USAGE("limit", "--owner \"no such user\": want " OWNER),
	  "limit", "x", "--owner", "no such user"),
	RP("owner", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K", "--owner", "4294967294"),
	RP("owner", EDGE, 1, NODEV, "limit", "x", "--owner", "0"),
	R("group", MISSING, 2, USAGE("limit", "--group needs a value: " GROUP),
	  "limit", "x", "--group"),
	R("group", BAD, 2, USAGE("limit", "--group \"-1\": want " GROUP),
	  "limit", "x", "--group", "-1"),
	RP("group", EDGE, 1, NODEV, "limit", "x", "--group", "4294967294"),
	RP("group", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K", "--group", "0"),
	R("mode", MISSING, 2, USAGE("create", "--mode needs a value: " MODE),
	  "create", "x", "--frames", "1", "--mode"),
	R("mode", BAD, 2, USAGE("create", "--mode \"0777\": want " MODE),
	  "create", "x", "--frames", "1", "--mode", "0777"),
	R("mode", BAD, 2, USAGE("limit", "--mode \"rw\": want " MODE),
	  "limit", "x", "--mode", "rw"),
	RP("mode", EDGE, 1, NODEV, "limit", "x", "--mode", "0"),
	RP("mode", EDGE, 1, NODEV, "limit", "x", "--mode", "0666"),
	R("client-min-limit", MISSING, 2, USAGE("limit", "--client-min-limit needs a value: " PFRAMES),
	  "limit", "x", "--client-min-limit"),
	R("client-min-limit", BAD, 2, USAGE("create", "--client-min-limit 3 is above the clients' max, 2"),
	  "create", "x", "--frames", "4", "--client-max-limit", "2",
	  "--client-min-limit", "3"),
	R("client-min-limit", BAD, 2, USAGE("limit", "the arena's policy or a client's limits, not both"),
	  "limit", "x", "vllm", "--client-min-limit", "1"),
	RP("client-min-limit", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--frame-size", "4K", "--client-min-limit", "4"),
	RP("client-min-limit", EDGE, 1, NODEV, "limit", "x",
	   "--client-min-limit", "0"),
	R("client-max-default", MISSING, 2, USAGE("create", "--client-max-default needs a value: " PFRAMES),
	  "create", "x", "--frames", "4", "--client-max-default"),
	R("client-max-default", BAD, 2, USAGE("create", "--client-max-default 5 is above the clients' max, 4"),
	  "create", "x", "--frames", "4", "--client-max-default", "5"),
	RP("client-max-default", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--frame-size", "4K", "--client-max-default", "4"),
	RP("client-max-default", EDGE, 1, NODEV, "limit", "x",
	   "--client-max-default", "16777216"),
	R("client-max-limit", MISSING, 2, USAGE("limit", "--client-max-limit needs a value: " PFRAMES),
	  "limit", "x", "--client-max-limit"),
	R("client-max-limit", BAD, 2, USAGE("create", "--client-max-limit 5 is above --frames 4"),
	  "create", "x", "--frames", "4", "--client-max-limit", "5"),
	R("client-max-limit", BAD, 2, USAGE("limit", "--client-max-limit \"16777217\": out of range: want " PFRAMES),
	  "limit", "x", "--client-max-limit", "16777217"),
	RP("client-max-limit", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--frame-size", "4K", "--client-max-limit", "4"),
	RP("client-max-limit", EDGE, 1, NODEV, "limit", "x",
	   "--client-max-limit", "0"),
	R("cache-domains", MISSING, 2, USAGE("limit", "--cache-domains needs a value: uid, gid or arena"),
	  "limit", "x", "--cache-domains"),
	R("cache-domains", BAD, 2, USAGE("create", "--cache-domains \"user\": want uid, gid or arena"),
	  "create", "x", "--frames", "1", "--cache-domains", "user"),
	RP("cache-domains", EDGE, 1, NODEV, "limit", "x",
	   "--cache-domains", "arena"),
	RP("cache-domains", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K", "--cache-domains", "uid"),
	R("domain-cached-max", MISSING, 2, USAGE("limit", "--domain-cached-max needs a value: " PFRAMES),
	  "limit", "x", "--domain-cached-max"),
	R("domain-cached-max", BAD, 2, USAGE("create", "--domain-cached-max 5 is above --frames 4"),
	  "create", "x", "--frames", "4", "--domain-cached-max", "5"),
	RP("domain-cached-max", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--frame-size", "4K", "--domain-cached-max", "4"),
	RP("domain-cached-max", EDGE, 1, NODEV, "limit", "x",
	   "--domain-cached-max", "0"),
	R("clear-always", BAD, 2, USAGE("create", "--clear-always takes no value"),
	  "create", "x", "--frames", "1", "--clear-always=yes"),
	R(NULL, OTHER, 1, "kvarenactl: create: --clear-always is for host arenas: the module cannot clear GPU memory\n",
	  "create", "x", "--frames", "1", "--backend", "cuda", "--clear-always"),
	RP("clear-always", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K", "--clear-always"),

	R("wait", MISSING, 2, USAGE("destroy", "--wait needs a value: seconds from 0 to 86400, at most 3 decimals"),
	  "destroy", "x", "--wait"),
	R("wait", BAD, 2, USAGE("destroy", "--wait \"86400.001\": out of range: want seconds from 0 to 86400, at most 3 decimals"),
	  "destroy", "x", "--wait", "86400.001"),
	R("wait", BAD, 2, USAGE("destroy", "--wait \"5s\": want seconds from 0 to 86400, at most 3 decimals"),
	  "destroy", "x", "--wait", "5s"),
	RP("wait", EDGE, 1, NODEV, "destroy", "x", "--wait", "0"),
	RP("wait", EDGE, 1, NODEV, "destroy", "x", "--wait=86400"),

#define ENDPOINT "a ZeroMQ endpoint: tcp://HOST:PORT, ipc://PATH, ..."
#define ZPUB "tcp://127.0.0.1:1"	/* connected, not bound: no port taken */
	R("zmq", MISSING, 2, USAGE("events", "--zmq needs a value: " ENDPOINT),
	  "events", "x", "--zmq"),
	R("zmq", BAD, 2, USAGE("events", "--zmq \"127.0.0.1:5557\": want " ENDPOINT),
	  "events", "x", "--zmq", "127.0.0.1:5557"),
	R("zmq", BAD, 2, USAGE("events", "--zmq \"tcp://\": want " ENDPOINT),
	  "events", "x", "--zmq", "tcp://"),
	R("zmq", BAD, 2, USAGE("events", "--zmq \"TCP://a:1\": want " ENDPOINT),
	  "events", "x", "--zmq=TCP://a:1"),
	R("zmq", BAD, 2, USAGE("events", "--zmq \"tcp://a:1\\x1b[2J\": want " ENDPOINT),
	  "events", "x", "--zmq", "tcp://a:1\x1b[2J"),
	RP("zmq", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB),
	RP("zmq", EDGE, 1, NODEV, "events", "x", "--zmq=inproc://k"),
	R("replay", MISSING, 2, USAGE("events", "--replay needs a value: " ENDPOINT),
	  "events", "x", "--zmq", ZPUB, "--replay"),
	R("replay", BAD, 2, USAGE("events", "--replay \"5558\": want " ENDPOINT),
	  "events", "x", "--zmq", ZPUB, "--replay", "5558"),
	R("replay", BAD, 2, USAGE("events", "--replay goes with --zmq"),
	  "events", "x", "--replay", "inproc://r"),
	RP("replay", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB,
	   "--replay", "inproc://r"),
	R("topic", MISSING, 2, USAGE("events", "--topic needs a value: 0 to 255 bytes"),
	  "events", "x", "--zmq", ZPUB, "--topic"),
	R("topic", BAD, 2, USAGE("events", "--topic goes with --zmq"),
	  "events", "x", "--topic", "kv"),
	RP("topic", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--topic="),
	RP("topic", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--topic",
	   "kv-events"),
#define MEDIUM "1 to 31 characters of A-Z a-z 0-9 _ . -"
	R("medium", MISSING, 2, USAGE("events", "--medium needs a value: " MEDIUM),
	  "events", "x", "--medium"),
	R("medium", BAD, 2, USAGE("events", "--medium \"\": want " MEDIUM),
	  "events", "x", "--medium="),
	R("medium", BAD, 2, USAGE("events", "--medium \"G PU\": want " MEDIUM),
	  "events", "x", "--medium", "G PU"),
	R("medium", BAD, 2, USAGE("events", "--medium \"12345678901234567890123456789012\": want " MEDIUM),
	  "events", "x", "--medium", "12345678901234567890123456789012"),
	RP("medium", EDGE, 1, NODEV, "events", "x", "--medium", "G"),
	RP("medium", EDGE, 1, NODEV, "events", "x", "--medium",
	   "1234567890123456789012345678901"),
	R("hashes", MISSING, 2, USAGE("events", "--hashes needs a value: int or bytes"),
	  "events", "x", "--zmq", ZPUB, "--hashes"),
	R("hashes", BAD, 2, USAGE("events", "--hashes \"hex\": want int or bytes"),
	  "events", "x", "--zmq", ZPUB, "--hashes", "hex"),
	RP("hashes", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--hashes",
	   "bytes"),
	RP("hashes", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--hashes",
	   "int"),
	R("oldest", BAD, 2, USAGE("events", "--oldest takes no value"),
	  "events", "x", "--oldest=1"),
	R("oldest", BAD, 2, USAGE("top", "--oldest does not apply to top"),
	  "top", "--oldest"),
	RP("oldest", EDGE, 1, NODEV, "events", "x", "--oldest"),
#define LAYOUTS "vllm, vllm-array, vllm-medium or vllm-first"
	R("layout", MISSING, 2, USAGE("events", "--layout needs a value: " LAYOUTS),
	  "events", "x", "--zmq", ZPUB, "--layout"),
	R("layout", BAD, 2, USAGE("events", "--layout \"map\": want " LAYOUTS),
	  "events", "x", "--zmq", ZPUB, "--layout", "map"),
	R("layout", BAD, 2, USAGE("events", "--layout \"vllm-\": want " LAYOUTS),
	  "events", "x", "--zmq", ZPUB, "--layout", "vllm-"),
	R("layout", BAD, 2, USAGE("events", "--layout goes with --zmq"),
	  "events", "x", "--layout", "vllm"),
	RP("layout", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--layout",
	   "vllm-first"),
	RP("layout", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--layout",
	   "vllm"),
	R("dp-rank", MISSING, 2, USAGE("events", "--dp-rank needs a value: a whole number from 0 to 2147483647"),
	  "events", "x", "--zmq", ZPUB, "--dp-rank"),
	R("dp-rank", BAD, 2, USAGE("events", "--dp-rank \"2147483648\": out of range: want a whole number from 0 to 2147483647"),
	  "events", "x", "--zmq", ZPUB, "--dp-rank", "2147483648"),
	R("dp-rank", BAD, 2, USAGE("events", "--dp-rank goes with --zmq"),
	  "events", "x", "--dp-rank", "1"),
	RP("dp-rank", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--dp-rank",
	   "2147483647"),
	R("bind", BAD, 2, USAGE("events", "--bind takes no value"),
	  "events", "x", "--zmq", ZPUB, "--bind=1"),
	R("bind", BAD, 2, USAGE("events", "--bind goes with --zmq"),
	  "events", "x", "--bind"),
	R("bind", BAD, 2, USAGE("events", "--bind and --connect: one or the other"),
	  "events", "x", "--zmq", ZPUB, "--bind", "--connect"),
	RP("bind", EDGE, 1, NODEV, "events", "x", "--zmq", "inproc://b", "--bind"),
	R("connect", BAD, 2, USAGE("events", "--connect goes with --zmq"),
	  "events", "x", "--connect"),
	RP("connect", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--connect"),
	R(NULL, OTHER, 1, "kvarenactl: events: --zmq tcp://*:1: Invalid argument\n",
	  "events", "x", "--zmq", "tcp://*:1", "--connect"),
	R("wait-subscribers", MISSING, 2, USAGE("events", "--wait-subscribers needs a value: a whole number from 0 to 1000"),
	  "events", "x", "--zmq", ZPUB, "--wait-subscribers"),
	R("wait-subscribers", BAD, 2, USAGE("events", "--wait-subscribers \"1001\": out of range: want a whole number from 0 to 1000"),
	  "events", "x", "--zmq", ZPUB, "--wait-subscribers", "1001"),
	RP("wait-subscribers", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB,
	   "--wait-subscribers", "1000"),
	R("salt", MISSING, 2, USAGE("events", "--salt needs a value: domain or none"),
	  "events", "x", "--zmq", ZPUB, "--salt"),
	R("salt", BAD, 2, USAGE("events", "--salt \"uid\": want domain or none"),
	  "events", "x", "--zmq", ZPUB, "--salt", "uid"),
	R("salt", BAD, 2, USAGE("events", "--salt goes with --zmq"),
	  "events", "x", "--salt", "none"),
	RP("salt", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--salt",
	   "none"),
#define LISTEN "PORT, :PORT, HOST:PORT or [IPV6]:PORT, PORT from 0 to 65535"
	R("listen", MISSING, 2, USAGE("exporter", "-l (--listen) needs a value: " LISTEN),
	  "exporter", "-l"),
	R("listen", MISSING, 2, USAGE("exporter", "--listen needs a value: " LISTEN),
	  "exporter", "--listen"),
	R("listen", BAD, 2, USAGE("exporter", "--listen \"65536\": want " LISTEN),
	  "exporter", "--listen", "65536"),
	R("listen", BAD, 2, USAGE("exporter", "--listen \"localhost:\": want " LISTEN),
	  "exporter", "--listen", "localhost:"),
	R("listen", BAD, 2, USAGE("exporter", "--listen \"::1:9847\": want " LISTEN),
	  "exporter", "--listen", "::1:9847"),
	R("listen", BAD, 2, USAGE("exporter", "--listen \"a b:1\": want " LISTEN),
	  "exporter", "--listen", "a b:1"),
	R("listen", BAD, 2, USAGE("exporter", "--listen \"x:\\x1b[2J\": want " LISTEN),
	  "exporter", "--listen", "x:\x1b[2J"),
	R("listen", BAD, 2, USAGE("metrics", "--listen does not apply to metrics"),
	  "metrics", "--listen", "9847"),
	RP("listen", EDGE, 1, NODEV, "exporter", "--listen", "0"),
	RP("listen", EDGE, 1, NODEV, "exporter", "-l", ":65535"),
	RP("listen", EDGE, 1, NODEV, "exporter", "x", "--listen=[::1]:9847"),
	RP("listen", EDGE, 1, NODEV, "exporter", "--listen", "localhost:9847"),
	R("per-client", BAD, 2, USAGE("exporter", "--per-client takes no value"),
	  "exporter", "--per-client=1"),
	R("per-client", BAD, 2, USAGE("metrics", "--per-client does not apply to metrics"),
	  "metrics", "--per-client"),
	RP("per-client", EDGE, 1, NODEV, "exporter", "--per-client"),
	R("by-label", BAD, 2, USAGE("metrics", "--by-label takes no value"),
	  "metrics", "--by-label=yes"),
	R("by-label", BAD, 2, USAGE("exporter", "--by-label does not apply to exporter"),
	  "exporter", "--by-label"),
	RP("by-label", EDGE, 1, NODEV, "metrics", "x", "--by-label"),
	R("check", BAD, 2, USAGE("apply", "--check takes no value"),
	  "apply", "--check=yes"),
	R("check", BAD, 2, USAGE("stat", "--check does not apply to stat"),
	  "stat", "--check"),
	RP("check", EDGE, 1, "kvarenactl: apply: /nonexistent/arenas.conf: No such file or directory",
	   "apply", "/nonexistent/arenas.conf", "--check"),
	R("config", MISSING, 2, USAGE("remote", "--config needs a value: a file's path"),
	  "remote", "x", "--config"),
	R("config", BAD, 2, USAGE("remote", "--config \"\": want a file's path"),
	  "remote", "x", "--config="),
	R("config", BAD, 2, USAGE("agent", "--config does not apply to agent"),
	  "agent", "x", "--config", "/etc/kvarena/remote.conf"),
	RP("config", EDGE, 1, "kvarenactl: remote: /nonexistent/remote.conf: No such file or directory",
	   "remote", "x", "--config", "/nonexistent/remote.conf"),
	/* The agent's stream takes events' options, with --zmq only. */
	R("topic", BAD, 2, USAGE("remote", "--topic goes with --zmq"),
	  "remote", "x", "--topic", "kv"),
	R("medium", BAD, 2, USAGE("remote", "--medium goes with --zmq"),
	  "remote", "x", "--medium", "REMOTE"),
	R("bind", BAD, 2, USAGE("remote", "--bind and --connect: one or the other"),
	  "remote", "x", "--zmq", ZPUB, "--bind", "--connect"),
	R("linger", BAD, 2, USAGE("remote", "--linger does not apply to remote"),
	  "remote", "x", "--zmq", ZPUB, "--linger", "1"),
	RP("zmq", EDGE, 1, "kvarenactl: remote: /nonexistent/remote.conf: No such file or directory",
	   "remote", "x", "--config", "/nonexistent/remote.conf", "--zmq", ZPUB,
	   "--topic", "kv@n@m", "--layout", "vllm-array"),
	R("linger", MISSING, 2, USAGE("events", "--linger needs a value: seconds from 0 to 86400, at most 3 decimals"),
	  "events", "x", "--zmq", ZPUB, "--linger"),
	R("linger", BAD, 2, USAGE("events", "--linger \"86400.001\": out of range: want seconds from 0 to 86400, at most 3 decimals"),
	  "events", "x", "--zmq", ZPUB, "--linger", "86400.001"),
	R("linger", BAD, 2, USAGE("events", "--linger goes with --zmq"),
	  "events", "x", "--linger", "1"),
	RP("linger", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB, "--linger",
	   "0"),
	RP("linger", EDGE, 1, NODEV, "events", "x", "--zmq", ZPUB,
	   "--linger=86400"),
	R(NULL, OTHER, 2, USAGE("events", "usage: kvarenactl events NAME [--zmq ENDPOINT [--replay ENDPOINT] [options]]"),
	  "events"),
	R(NULL, OTHER, 2, USAGE("events", "unexpected argument \"y\""),
	  "events", "x", "y"),
	RP("iterations", EDGE, 1, NODEV, "events", "x", "-n", "1"),

#define SIGNAL "a name (TERM, SIGKILL, hup) or a number from 1 to 64"
	R("signal", MISSING, 2, USAGE("kill", "-s (--signal) needs a value: " SIGNAL),
	  "kill", "x", "vllm", "-s"),
	R("signal", BAD, 2, USAGE("kill", "--signal \"FOO\": want " SIGNAL),
	  "kill", "x", "vllm", "-s", "FOO"),
	R("signal", BAD, 2, USAGE("kill", "--signal \"0\": out of range: want " SIGNAL),
	  "kill", "x", "vllm", "-s", "0"),
	R("signal", BAD, 2, USAGE("kill", "--signal \"65\": out of range: want " SIGNAL),
	  "kill", "x", "vllm", "--signal=65"),
	R("signal", BAD, 2, USAGE("kill", "--signal \"SIG\": want " SIGNAL),
	  "kill", "x", "vllm", "-s", "SIG"),
	RP("signal", EDGE, 1, NODEV, "kill", "x", "vllm", "-s", "1"),
	RP("signal", EDGE, 1, NODEV, "kill", "x", "vllm", "-s", "64"),
	RP("signal", EDGE, 1, NODEV, "kill", "x", "vllm", "-s", "KILL"),
	RP("signal", EDGE, 1, NODEV, "kill", "x", "vllm", "-s", "sigterm"),
	RP("signal", EDGE, 1, NODEV, "kill", "x", "vllm", "-shup"),
	R(NULL, OTHER, 2, USAGE("kill", "name the client: a label, or --id ID (kvarenactl clients x)"),
	  "kill", "x"),
	R(NULL, OTHER, 2, USAGE("kill", "client \"#x\": #ID wants an id from 1 to 4294967295"),
	  "kill", "x", "#x"),
	R(NULL, OTHER, 2, USAGE("kill", "--min does not apply to kill"),
	  "kill", "x", "vllm", "--min", "1"),
	RP("id", EDGE, 1, NODEV, "kill", "x", "--id", "1"),

	/* ---- frame counts as sizes: whole frames of the frame size ---- */
	R("frames", BAD, 2, USAGE("create", "--frames \"3Mi\": not a whole number of 2Mi frames"),
	  "create", "x", "--frames", "3Mi"),
	R("frames", BAD, 2, USAGE("create", "--frames \"1.5Mi\": not a whole number of 1Mi frames"),
	  "create", "x", "--frame-size", "1M", "--frames", "1.5Mi"),
	R("frames", BAD, 2, USAGE("create", "--frames \"64Ti\": out of range: 17179869184 frames of 4Ki; want " N32),
	  "create", "x", "--frames", "64Ti", "--frame-size", "4K"),
	R("frames", BAD, 2, USAGE("create", "--frames \"0K\": out of range: 0 frames of 2Mi; want " N32),
	  "create", "x", "--frames", "0K"),
	R("frames", BAD, 2, USAGE("create", "--frames \"2.5\": want " N32),
	  "create", "x", "--frames", "2.5"),
	RP("frames", EDGE, 1, NODEV, "create", "x", "--frames", "256Ki",
	   "--frame-size", "64K"),
	RP("frames", EDGE, 1, NODEV, "create", "x", "--frame-size", "4K",
	   "--frames", "4KiB"),
	R("low-watermark", BAD, 2, USAGE("create", "--low-watermark 5 is above --frames 4"),
	  "create", "x", "--frames", "256K", "--frame-size", "64K",
	  "--low-watermark", "320K"),
	RP("low-watermark", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--frame-size", "64K", "--low-watermark", "256Ki"),
	R("client-max-limit", BAD, 2, USAGE("create", "--client-max-limit 5 is above --frames 4"),
	  "create", "x", "--frames", "4", "--frame-size", "64K",
	  "--client-max-limit", "320K"),
	R("client-min-limit", BAD, 2, USAGE("create", "--client-min-limit \"100K\": not a whole number of 64Ki frames"),
	  "create", "x", "--frames", "4", "--frame-size", "64K",
	  "--client-min-limit", "100K"),
	RP("client-max-default", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--frame-size", "64K", "--client-max-default", "128Ki"),
	R("domain-cached-max", BAD, 2, USAGE("create", "--domain-cached-max \"1X\": want " PFRAMES),
	  "create", "x", "--frames", "4", "--domain-cached-max", "1X"),
	/* limit: in the arena's frames, once STAT said their size. */
	RP("min", EDGE, 1, NODEV, "limit", "x", "#1", "--min", "1Gi",
	   "--max", "2"),
	RP("max", EDGE, 1, NODEV, "limit", "x", "#1", "--max", "2.5Gi"),
	R("max", BAD, 2, USAGE("limit", "--max \"2.5Q\": want " PFRAMES),
	  "limit", "x", "#1", "--max", "2.5Q"),
	RP("client-max-limit", EDGE, 1, NODEV, "limit", "x",
	   "--client-max-limit", "1Ti"),

#define MAXF	N32 ", at least --frames"
	R("max-frames", MISSING, 2, USAGE("create", "--max-frames needs a value: " MAXF),
	  "create", "x", "--frames", "4", "--max-frames"),
	R("max-frames", BAD, 2, USAGE("create", "--max-frames 3 is below --frames 4"),
	  "create", "x", "--frames", "4", "--max-frames", "3"),
	R("max-frames", BAD, 2, USAGE("create", "--max-frames \"0\": out of range: want " MAXF),
	  "create", "x", "--frames", "4", "--max-frames", "0"),
	R("max-frames", BAD, 2, USAGE("create", "--max-frames \"16777217\": out of range: want " MAXF),
	  "create", "x", "--frames", "4", "--max-frames", "16777217"),
	R("max-frames", BAD, 2, USAGE("create", "--max-frames \"3Mi\": not a whole number of 2Mi frames"),
	  "create", "x", "--frames", "1", "--max-frames", "3Mi"),
	R("max-frames", BAD, 2, USAGE("create", "--max-frames 2 is below --frames 4"),
	  "create", "x", "--frames", "4", "--max-frames", "4Mi"),
	R("max-frames", BAD, 2, USAGE("resize", "--max-frames does not apply to resize"),
	  "resize", "x", "--max-frames", "4"),
	RP("max-frames", EDGE, 1, NODEV, "create", "x", "--frames", "1",
	   "--frame-size", "4K", "--max-frames", "16777216"),
	RP("max-frames", EDGE, 1, NODEV, "create", "x", "--frames", "4",
	   "--frame-size", "4K", "--max-frames", "4"),
	RP("max-frames", EDGE, 1, NODEV, "create", "x", "--frames", "4Mi",
	   "--max-frames", "1Gi"),

	/* ---- resize ---- */
#define RSIZE	N32 ", at most the arena's --max-frames"
#define RBYTES	"a size of 1 to 16777216 whole frames (bytes, or with K, M, G, T: 512Mi, 1.5Gi), at most the arena's --max-frames"
	R(NULL, OTHER, 2, USAGE("resize", "usage: kvarenactl resize NAME --frames N | --bytes SIZE [--wait SECONDS] | NAME --cancel"),
	  "resize", "--frames", "1"),
	R(NULL, OTHER, 2, USAGE("resize", "give the new size: --frames N or --bytes SIZE (or --cancel)"),
	  "resize", "x"),
	R(NULL, OTHER, 2, USAGE("resize", "give the new size: --frames N or --bytes SIZE (or --cancel)"),
	  "resize", "x", "--wait", "1"),
	R(NULL, OTHER, 2, USAGE("resize", "--frames or --bytes, not both"),
	  "resize", "x", "--frames", "2", "--bytes", "4M"),
	R(NULL, OTHER, 2, USAGE("resize", "unexpected argument \"y\""),
	  "resize", "x", "y", "--frames", "2"),
	R(NULL, OTHER, 2, "kvarenactl: resize: bad arena name \"a b\": " NAME_RULE "\n",
	  "resize", "a b", "--frames", "2"),
	R(NULL, OTHER, 0, "", "help", "resize"),
	R("frames", MISSING, 2, USAGE("resize", "--frames needs a value: " RSIZE),
	  "resize", "x", "--frames"),
	R("frames", BAD, 2, USAGE("resize", "--frames \"0\": out of range: want " RSIZE),
	  "resize", "x", "--frames", "0"),
	R("frames", BAD, 2, USAGE("resize", "--frames \"1x\": want " RSIZE),
	  "resize", "x", "--frames", "1x"),
	RP("frames", EDGE, 1, NODEV, "resize", "x", "--frames", "1"),
	RP("frames", EDGE, 1, NODEV, "resize", "x", "--frames", "16777216"),
	RP("frames", EDGE, 1, NODEV, "resize", "x", "--frames", "512Mi"),
	/* resize's --bytes is a size; the views' -b, --bytes a flag. */
	R("bytes", MISSING, 2, USAGE("resize", "--bytes needs a value: " RBYTES),
	  "resize", "x", "--bytes"),
	R("bytes", BAD, 2, USAGE("resize", "--bytes \"1X\": want " RBYTES),
	  "resize", "x", "--bytes", "1X"),
	R("bytes", BAD, 2, USAGE("resize", "--bytes \"2.5\": want " RBYTES),
	  "resize", "x", "--bytes=2.5"),
	R("bytes", BAD, 2, USAGE("resize", "--bytes \"-1\": want " RBYTES),
	  "resize", "x", "--bytes", "-1"),
	R("bytes", BAD, 2, USAGE("resize", "--bytes does not apply to resize"),
	  "-b", "resize", "x", "--frames", "2"),
	R("bytes", BAD, 2, USAGE("clients", "unexpected argument \"1G\""),
	  "clients", "x", "--bytes", "1G"),
	RP("bytes", EDGE, 1, NODEV, "resize", "x", "--bytes", "1Gi"),
	RP("bytes", EDGE, 1, NODEV, "resize", "x", "--bytes", "4096"),
	RP("bytes", EDGE, 1, NODEV, "--bytes", "stat"),
	RP("bytes", EDGE, 1, NODEV, "stat", "--bytes"),
	RP("bytes", EDGE, 1, NODEV, "-jb", "top", "-n", "1"),
	R("wait", MISSING, 2, USAGE("resize", "--wait needs a value: seconds from 0 to 86400, at most 3 decimals"),
	  "resize", "x", "--frames", "2", "--wait"),
	R("wait", BAD, 2, USAGE("resize", "--wait \"1m\": want seconds from 0 to 86400, at most 3 decimals"),
	  "resize", "x", "--frames", "2", "--wait", "1m"),
	RP("wait", EDGE, 1, NODEV, "resize", "x", "--frames", "2", "--wait",
	   "86400"),
	R("cancel", BAD, 2, USAGE("resize", "--cancel takes no value"),
	  "resize", "x", "--cancel=1"),
	R("cancel", BAD, 2, USAGE("resize", "--cancel goes alone: no --frames, --bytes or --wait"),
	  "resize", "x", "--cancel", "--frames", "2"),
	R("cancel", BAD, 2, USAGE("resize", "--cancel goes alone: no --frames, --bytes or --wait"),
	  "resize", "x", "--wait", "1", "--cancel"),
	R("cancel", BAD, 2, USAGE("stat", "--cancel does not apply to stat"),
	  "stat", "--cancel"),
	RP("cancel", EDGE, 1, NODEV, "resize", "x", "--cancel"),

	/* ---- tier, agent ---- */
#define TIER_USAGE "usage: kvarenactl tier NAME --lower LOWER [--free-target N] | NAME --none"
#define LOWER	"an arena name: " NAME_RULE
#define TARGET	FRAMES0 ", at most the arena's frames"
	R(NULL, OTHER, 2, USAGE("tier", TIER_USAGE), "tier", "--none"),
	R(NULL, OTHER, 2, USAGE("tier", TIER_USAGE), "tier"),
	R(NULL, OTHER, 2, USAGE("tier", "give --lower LOWER, or --none to take the lower tier away"),
	  "tier", "x"),
	R(NULL, OTHER, 2, USAGE("tier", "give --lower LOWER, or --none to take the lower tier away"),
	  "tier", "x", "--free-target", "4"),
	R(NULL, OTHER, 2, USAGE("tier", "unexpected argument \"y\""),
	  "tier", "x", "y", "--none"),
	R(NULL, OTHER, 2, "kvarenactl: tier: bad arena name \"a b\": " NAME_RULE "\n",
	  "tier", "a b", "--none"),
	R(NULL, OTHER, 2, "kvarenactl: tier: bad arena name \".x\": " NAME_RULE "\n",
	  "tier", ".x", "--lower", "y"),
	R(NULL, OTHER, 2, USAGE("tier", "--iterations does not apply to tier"),
	  "tier", "x", "--none", "-n", "1"),
	R(NULL, OTHER, 0, "", "help", "tier"),
	R(NULL, OTHER, 2, USAGE("agent", "usage: kvarenactl agent NAME [-n COUNT] [--wait SECONDS]"),
	  "agent", "-n", "1"),
	R(NULL, OTHER, 2, USAGE("agent", "unexpected argument \"y\""),
	  "agent", "x", "y"),
	R(NULL, OTHER, 2, "kvarenactl: agent: bad arena name \"a\\x1b[2J\": " NAME_RULE "\n",
	  "agent", "a\x1b[2J"),
	RP(NULL, OTHER, 1, NODEV, "agent", "x"),
	RP(NULL, OTHER, 1, NODEV, "agent", "--", "-x"),
	R(NULL, OTHER, 0, "", "help", "agent"),
	R("lower", MISSING, 2, USAGE("tier", "--lower needs a value: " LOWER),
	  "tier", "x", "--lower"),
	R("lower", MISSING, 2, USAGE("tier", "--lower needs a value: " LOWER),
	  "tier", "x", "--lower", "--none"),
	R("lower", BAD, 2, USAGE("tier", "--lower \"a b\": want " LOWER),
	  "tier", "x", "--lower", "a b"),
	R("lower", BAD, 2, USAGE("tier", "--lower \"\": want " LOWER),
	  "tier", "x", "--lower="),
	R("lower", BAD, 2, USAGE("tier", "--lower \".lo\": want " LOWER),
	  "tier", "x", "--lower", ".lo"),
	R("lower", BAD, 2, USAGE("tier", "--lower \"abcdefghijabcdefghijabcdefghij12\": want " LOWER),
	  "tier", "x", "--lower", "abcdefghijabcdefghijabcdefghij12"),
	R("lower", BAD, 2, USAGE("tier", "--lower \"lo\\x1b]0;x\\x07\": want " LOWER),
	  "tier", "x", "--lower", "lo\x1b]0;x\a"),
	R("lower", BAD, 2, USAGE("tier", "--lower \"x\": an arena cannot be its own lower tier"),
	  "tier", "x", "--lower", "x"),
	R("lower", BAD, 2, USAGE("tier", "--lower or --none, not both"),
	  "tier", "x", "--lower", "y", "--none"),
	R("lower", BAD, 2, USAGE("agent", "--lower does not apply to agent"),
	  "agent", "x", "--lower", "y"),
	RP("lower", EDGE, 1, NODEV, "tier", "x", "--lower", "y"),
	RP("lower", EDGE, 1, NODEV, "tier", "x", "--lower",
	   "abcdefghijabcdefghijabcdefghij1"),
	/* A name another tool made may start with '-': after =. */
	RP("lower", EDGE, 1, NODEV, "tier", "x", "--lower=-y"),
	R("none", BAD, 2, USAGE("tier", "--none takes no value"),
	  "tier", "x", "--none=1"),
	R("none", BAD, 2, USAGE("stat", "--none does not apply to stat"),
	  "stat", "--none"),
	RP("none", EDGE, 1, NODEV, "tier", "x", "--none"),
	RP("none", EDGE, 1, NODEV, "--none", "tier", "x"),
	R("free-target", MISSING, 2, USAGE("tier", "--free-target needs a value: " TARGET),
	  "tier", "x", "--lower", "y", "--free-target"),
	R("free-target", BAD, 2, USAGE("tier", "--free-target \"16777217\": out of range: want " TARGET),
	  "tier", "x", "--lower", "y", "--free-target", "16777217"),
	R("free-target", BAD, 2, USAGE("tier", "--free-target \"-1\": want " TARGET),
	  "tier", "x", "--lower", "y", "--free-target", "-1"),
	R("free-target", BAD, 2, USAGE("tier", "--free-target \"1X\": want " TARGET),
	  "tier", "x", "--lower", "y", "--free-target", "1X"),
	R("free-target", BAD, 2, USAGE("tier", "--free-target goes with --lower"),
	  "tier", "x", "--none", "--free-target", "1"),
	R("free-target", BAD, 2, USAGE("agent", "--free-target does not apply to agent"),
	  "agent", "x", "--free-target", "1"),
	RP("free-target", EDGE, 1, NODEV, "tier", "x", "--lower", "y",
	   "--free-target", "0"),
	RP("free-target", EDGE, 1, NODEV, "tier", "x", "--lower", "y",
	   "--free-target", "16777216"),
	/* A size: whole frames of the arena's, once STAT said their size. */
	RP("free-target", EDGE, 1, NODEV, "tier", "x", "--lower", "y",
	   "--free-target", "64Mi"),
	R("iterations", BAD, 2, USAGE("agent", "--iterations \"0\": out of range: want " COUNT),
	  "agent", "x", "-n", "0"),
	RP("iterations", EDGE, 1, NODEV, "agent", "x", "-n", "18446744073709551615"),
	R("wait", BAD, 2, USAGE("agent", "--wait \"-1\": want seconds from 0 to 86400, at most 3 decimals"),
	  "agent", "x", "--wait", "-1"),
	RP("wait", EDGE, 1, NODEV, "agent", "x", "--wait", "0"),
	RP("wait", EDGE, 1, NODEV, "agent", "x", "--wait", "86400", "-n", "1"),

	R("help", BAD, 2, "kvarenactl: --help takes no value\nTry 'kvarenactl help'.\n",
	  "--help=me"),
	R("help", EDGE, 0, "", "stat", "--help"),
	R("version", BAD, 2, "kvarenactl: --version takes no value\nTry 'kvarenactl help'.\n",
	  "--version=2"),
	R("version", EDGE, 0, "", "-V"),
};

#define NR_ROWS (sizeof(rows) / sizeof(rows[0]))

/* ---- running the tool --------------------------------------------------------- */

struct result {
	int rc;
	char *out, *err;
	size_t out_len, err_len;
};

static char *slurp(int fd, size_t *len)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf = calloc(1, (size_t)(size > 0 ? size : 0) + 1);

	if (buf && size > 0 && pread(fd, buf, (size_t)size, 0) != size)
		size = 0;
	*len = size > 0 ? (size_t)size : 0;
	close(fd);
	return buf;
}

static void run(struct result *r, const char *const *args)
{
	char *argv[20] = { (char *)"kvarenactl" };
	char *envp[] = { (char *)"KVA_DEVICE=" DEV,
			 (char *)"KVA_CUDA_LIBRARY=" CUDA,
			 (char *)"LC_ALL=C", NULL };
	int out = memfd_create("out", 0), err = memfd_create("err", 0);
	posix_spawn_file_actions_t fa;
	int n = 1, status = 0;
	pid_t pid;

	for (; args[n - 1] && n < 19; n++)
		argv[n] = (char *)args[n - 1];
	argv[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_adddup2(&fa, err, 2);
	r->rc = -1;
	if (!posix_spawn(&pid, kvactl, &fa, NULL, argv, envp) &&
	    waitpid(pid, &status, 0) == pid)
		r->rc = WIFEXITED(status) ? WEXITSTATUS(status) :
			128 + WTERMSIG(status);
	posix_spawn_file_actions_destroy(&fa);
	r->out = slurp(out, &r->out_len);
	r->err = slurp(err, &r->err_len);
}

static void result_free(struct result *r)
{
	free(r->out);
	free(r->err);
}

/* The first control character of @s (@len bytes), or -1. */
static long control_char(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\n') || c == 0x7f)
			return (long)i;
	}
	return -1;
}

/* @s with control characters as \xHH, for the log. */
static const char *printable(const char *s)
{
	static char buf[1024];
	size_t o = 0;

	for (; *s && o < sizeof(buf) - 8; s++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o,
				      ((unsigned char)*s < 0x20 && *s != '\n') ||
				      *s == 0x7f ? "\\x%02x" : "%c",
				      (unsigned char)*s);
	buf[o] = '\0';
	return buf;
}

/* The row's command line, printable, for the log. */
static const char *show(const struct row *w)
{
	static char buf[512];
	size_t o = 0;

	for (int i = 0; w->argv[i] && o < sizeof(buf) - 8; i++) {
		for (const char *c = w->argv[i]; *c && o < sizeof(buf) - 8; c++)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o,
					      (unsigned char)*c < 0x20 ? "\\x%02x" : "%c",
					      (unsigned char)*c);
		buf[o++] = ' ';
	}
	buf[o ? o - 1 : 0] = '\0';
	return buf;
}

/* ---- the tests ------------------------------------------------------------------ */

/*
 * The tests that run every row: a few hundred runs of the tool, which
 * under ASan take longer than the harness's default 30 s.
 */
#define ROWS_TIMEOUT 300

FIXTURE(rows) {};
FIXTURE_SETUP(rows) {}
FIXTURE_TEARDOWN(rows) {}

TEST_F_TIMEOUT(rows, every_row_exits_and_says_what_the_table_says, ROWS_TIMEOUT)
{
	for (size_t i = 0; i < NR_ROWS; i++) {
		const struct row *w = &rows[i];
		struct result r;
		bool err_ok;

		run(&r, w->argv);
		err_ok = w->prefix ? !strncmp(r.err, w->err, strlen(w->err)) :
			 !strcmp(r.err, w->err);
		EXPECT_EQ(w->rc, r.rc)
			TH_LOG("row %zu: kvarenactl %s: %s", i, show(w),
			       printable(r.err));
		EXPECT_TRUE(err_ok)
			TH_LOG("row %zu: kvarenactl %s:\nwant %s%s\ngot  %s", i,
			       show(w), w->err, w->prefix ? "..." : "",
			       printable(r.err));
		/* A wrong command line changes nothing and prints no output. */
		if (w->rc == 2) {
			EXPECT_EQ(0, r.out_len)
				TH_LOG("row %zu: kvarenactl %s: %s", i, show(w),
				       printable(r.out));
		}
		result_free(&r);
	}
}

TEST_F_TIMEOUT(rows, no_output_has_a_control_character, ROWS_TIMEOUT)
{
	for (size_t i = 0; i < NR_ROWS; i++) {
		struct result r;
		long at_out, at_err;

		run(&r, rows[i].argv);
		at_out = control_char(r.out, r.out_len);
		at_err = control_char(r.err, r.err_len);
		EXPECT_EQ(-1, at_out)
			TH_LOG("row %zu: kvarenactl %s: stdout byte %ld", i,
			       show(&rows[i]), at_out);
		EXPECT_EQ(-1, at_err)
			TH_LOG("row %zu: kvarenactl %s: stderr byte %ld: %s", i,
			       show(&rows[i]), at_err, printable(r.err));
		result_free(&r);
	}
}

/* Has the table a row of @kind for option @opt? */
static bool has_row(const char *opt, enum kind kind)
{
	for (size_t i = 0; i < NR_ROWS; i++)
		if (rows[i].opt && !strcmp(rows[i].opt, opt) &&
		    rows[i].kind == kind)
			return true;
	return false;
}

/*
 * The commands `kvarenactl help` lists ("  stat [NAME]   ..."), so that
 * a command added later is scanned too.  Returns how many, at most @max.
 */
static size_t listed_commands(char (*cmds)[32], size_t max)
{
	const char *argv[] = { "help", NULL };
	char *line, *save = NULL;
	struct result r;
	size_t n = 0;

	run(&r, argv);
	for (line = strtok_r(r.out, "\n", &save); line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		int end = 0;

		if (!strncmp(line, "  ", 2) && line[2] != ' ' &&
		    sscanf(line + 2, "%31[a-z]%n", cmds[n], &end) == 1 &&
		    line[2 + end] == ' ') {
			bool dup = false;

			/* "limit" has two lines. */
			for (size_t k = 0; k < n; k++)
				dup |= !strcmp(cmds[k], cmds[n]);
			n += !dup;
		}
	}
	result_free(&r);
	return n;
}

TEST(every_option_in_the_help_has_rows_of_every_kind)
{
	char cmds[32][32];
	size_t nr_cmds = listed_commands(cmds, 32);
	int seen = 0;

	/* stat clients top metrics create destroy limit kill evict events help */
	ASSERT_LE(11, nr_cmds);
	for (size_t c = 0; c < nr_cmds; c++) {
		const char *argv[] = { "help", cmds[c], NULL };
		struct result r;
		char *line, *save = NULL;

		run(&r, argv);
		ASSERT_EQ(0, r.rc);
		for (line = strtok_r(r.out, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char name[32];
			const char *dd = strstr(line, "--");
			bool flag;

			/* "  -j, --json   ..." or "      --frames N   ..." */
			if (strncmp(line, "  ", 2) || !dd || dd > line + 12 ||
			    sscanf(dd + 2, "%31[a-z-]", name) != 1)
				continue;
			flag = dd[2 + strlen(name)] != ' ' ||
			       dd[3 + strlen(name)] == ' ';
			seen++;
			if (!flag)
				EXPECT_TRUE(has_row(name, MISSING))
					TH_LOG("--%s: no row for a missing value", name);
			EXPECT_TRUE(has_row(name, BAD))
				TH_LOG("--%s: no row for a wrong value", name);
			EXPECT_TRUE(has_row(name, EDGE))
				TH_LOG("--%s: no row for an edge value", name);
		}
		result_free(&r);
	}
	/* The help lists something: the parse above did find options. */
	EXPECT_LE(15, seen);
	EXPECT_TRUE(has_row("help", BAD) && has_row("version", BAD));
}

TEST(help_fits_one_screen)
{
	const char *argv[] = { "help", NULL };
	struct result r;
	int lines = 0, col = 0, widest = 0;

	run(&r, argv);
	ASSERT_EQ(0, r.rc);
	for (size_t i = 0; i < r.out_len; i++) {
		if (r.out[i] == '\n') {
			lines++;
			col = 0;
		} else if (((unsigned char)r.out[i] & 0xc0) != 0x80 &&
			   ++col > widest) {
			widest = col;
		}
	}
	EXPECT_GE(24, lines);
	EXPECT_GE(80, widest);
	EXPECT_EQ(0, strncmp(r.out, "Usage: kvarenactl ", 18));
	result_free(&r);
}

static void __attribute__((constructor)) find_kvarenactl(void)
{
	kvactl = getenv("KVARENACTL");
	if (!kvactl || !*kvactl) {
		fprintf(stderr, "args_test: set $KVARENACTL to the tool to test\n");
		exit(2);
	}
}

TEST_HARNESS_MAIN
