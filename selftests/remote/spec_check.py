#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""kvarena's block format (tools/common/kvblock.c, by block_vector) and
kvblock_spec.py (written from Documentation/remote.rst) read each other:
the value C writes is whole by the specification - its key, MAC, CRC32C,
fields and payload - and the values Python writes, right and wrong, get
from C the answer the specification gives.  TAP output.

usage: spec_check.py BLOCK_VECTOR
"""

import hashlib
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvblock_spec as spec  # noqa: E402

SECRET = b"spec-test-secret-0123456789"
GEO = dict(frame_size=65536, layers=2, kv_heads=2, head_dim=16, dtype=1,
           tokens=256)
CHAIN = hashlib.sha256(b"chain").digest()
PARENT = hashlib.sha256(b"parent").digest()
PAYLOAD = bytes((i * 7 + 3) & 0xff for i in range(65536))


def main():
    prog = sys.argv[1]
    d = tempfile.mkdtemp()
    path = os.path.join(d, "v")
    fails = 0
    n = 0

    def report(ok, what):
        nonlocal fails, n
        n += 1
        print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
        fails += not ok

    print("TAP version 13")
    print("1..9")
    key = subprocess.run([prog, "encode", path], check=True,
                         capture_output=True, text=True).stdout.strip()
    with open(path, "rb") as f:
        v = f.read()
    report(key == spec.store_key(SECRET, GEO, CHAIN), "the store key, computed by both")
    report(spec.check(v, SECRET, GEO, CHAIN) == "ok",
           "C's value passes the specification's checks")
    h, payload = spec.decode(v)
    report(payload == PAYLOAD and h["parent"] == PARENT and
           h["flags"] == spec.F_PARENT and h["writer"] == b"node-c" and
           h["written_ms"] == 1234567 and h["domain_id"] == spec.domain_id(SECRET),
           "C's header says what was written")

    def c_check(value):
        with open(path, "wb") as f:
            f.write(value)
        return subprocess.run([prog, "check", path], check=True,
                              capture_output=True, text=True).stdout.strip()

    ok = spec.encode(SECRET, GEO, CHAIN, PAYLOAD, parent=PARENT)
    report(c_check(ok) == "ok", "Python's value passes C's checks")
    report(c_check(spec.encode(SECRET, dict(GEO, head_dim=8, tokens=512),
                               CHAIN, PAYLOAD)) == "geometry",
           "another geometry: C says geometry")
    report(c_check(spec.encode(b"another-secret-of-the-other-domain", GEO,
                               CHAIN, PAYLOAD)) == "mac",
           "another domain's secret: C says mac")
    report(c_check(spec.encode(SECRET, GEO, hashlib.sha256(b"x").digest(),
                               PAYLOAD)) == "key",
           "another key's block: C says key")
    report(c_check(spec.encode(SECRET, GEO, CHAIN, PAYLOAD,
                               crc=spec.crc32c(PAYLOAD) ^ 1)) == "checksum",
           "a wrong CRC32C: C says checksum")
    report(c_check(ok[:-1]) == "size", "one byte short: C says size")
    os.unlink(path)
    os.rmdir(d)
    print("# %d/%d passed" % (n - fails, n))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
