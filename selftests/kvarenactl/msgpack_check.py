# SPDX-License-Identifier: GPL-2.0
"""kvarenactl's msgpack encoder against Debian's python3-msgpack: each
case msgpack_test writes must decode to the value listed here, in order,
and be byte for byte what msgpack.packb() makes of it (both write every
value in its shortest form; floats as float64).  KTAP.

    msgpack_check.py MSGPACK_TEST
"""

import struct
import subprocess
import sys

import msgpack

CASES = (
    [None, True, False] +
    [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1] +
    [-1, -32, -33, -128, -129, -32768, -32769, -2**31, -2**31 - 1, -2**63] +
    [0.0, 1.5, 1732968000.123456, -2.5e-300] +
    ["a" * n for n in (0, 31, 32, 255, 256, 65535, 65536)] +
    [b"a" * n for n in (0, 1, 32, 255, 256, 65536)] +
    [[j % 200 for j in range(n)] for n in (0, 15, 16, 65535, 65536)] +
    [{}] + [{"k%d" % e: e for e in range(n)} for n in (15, 16)] +
    [[[1, [2]], "x"],
     [1732968000.5, [["BlockStored", [123, 2**64 - 1], None, [1, 2, 3], 16,
                      None, "GPU"],
                     ["BlockRemoved", [b"\x01\x02"], "GPU"],
                     ["AllBlocksCleared"]]],
     {"ts": 1732968000.5,
      "events": [{"type": "BlockStored", "block_hashes": [123],
                  "parent_block_hash": None, "token_ids": [],
                  "block_size": 16, "lora_id": None, "medium": "GPU",
                  "lora_name": None}],
      "data_parallel_rank": 0}]
)


def main():
    out = subprocess.run([sys.argv[1]], check=True, capture_output=True).stdout
    docs = []
    while out:
        (n,) = struct.unpack("<I", out[:4])
        docs.append(out[4:4 + n])
        out = out[4 + n:]
    print("TAP version 13")
    print("1..%d" % (len(CASES) + 1))
    fails = 0
    ok = len(docs) == len(CASES)
    print("%sok 1 as_many_documents_as_cases" % ("" if ok else "not "))
    fails += not ok
    for i, (want, got) in enumerate(zip(CASES, docs), 2):
        name = "case_%d_%s" % (i - 2, type(want).__name__)
        try:
            value = msgpack.unpackb(got, raw=False, strict_map_key=False)
            good = value == want and type(value) is type(want)
            same = got == msgpack.packb(want, use_bin_type=True)
        except Exception as e:        # a malformed document
            print("# %s: %r" % (name, e))
            good = same = False
        if not (good and same):
            fails += 1
            print("# %s: decoded %s, same bytes %s (%s)" %
                  (name, good, same, got[:24].hex()))
        print("%sok %d %s" % ("" if good and same else "not ", i, name))
    print("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0" %
          (len(CASES) + 1 - fails, fails))
    sys.exit(1 if fails else 0)


main()
