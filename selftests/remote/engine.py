#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A stand-in serving engine for test_remote.py, run as a tenant's uid:
it computes (writes) a prefix's KV and publishes it, or looks a prefix up
and says how much of it it found and whether each frame holds exactly
the bytes the writer put there.  libkvarena does the rest (the Python
binding): kva_seq_publish_tokens(), kva_seq_attach_prefix() - which asks
the node's remote agent for what the arena lacks.

usage: engine.py publish|attach ARENA NAMESPACE FRAMES
prints one JSON line: {"found": N, "exact": bool, "ms": T}
"""

import ctypes
import hashlib
import json
import sys
import time

import kvarena

GEO = dict(layers=2, kv_heads=2, head_dim=16, dtype="fp16",
           frame_size=64 << 10)


def frame_bytes(ns, i, size):
    """Frame @i of prefix @ns: 32 bytes of hash, repeated."""
    d = hashlib.sha256(b"%s/%d" % (ns, i)).digest()
    return d * (size // len(d))


def tokens(ns, n):
    h = int.from_bytes(hashlib.sha256(ns).digest()[:4], "little")
    return [(h + 7919 * i) % 32000 for i in range(n)]


def main():
    op, arena, ns, frames = sys.argv[1], sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
    g = kvarena.Geometry(**GEO)
    T, FS = g.tokens_per_frame, g.frame_size
    ids = tokens(ns, frames * T)
    keys = kvarena.prefix_keys(g, ids, ns)
    a = kvarena.open(arena, mode="device", label="engine-" + op)
    s = a.seq(g, frames * T)
    t0 = time.monotonic()
    if op == "publish":
        s.grow(frames * T)
        for i in range(frames):
            ctypes.memmove(s.base + i * FS, frame_bytes(ns, i, FS), FS)
        found = s.publish(keys, ids)
        exact = True
    else:
        found = s.attach_prefix(keys)
        exact = all(ctypes.string_at(s.base + i * FS, FS) == frame_bytes(ns, i, FS)
                    for i in range(found))
    ms = (time.monotonic() - t0) * 1000
    s.free()
    a.close()
    print(json.dumps({"found": found, "exact": exact, "ms": round(ms, 1)}))


if __name__ == "__main__":
    main()
