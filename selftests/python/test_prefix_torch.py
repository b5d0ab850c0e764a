# SPDX-License-Identifier: GPL-2.0
"""Two processes sharing a published prefix see the same bytes through
torch, in the VM, against kvarena.ko and libkvarena as installed
(selftests/install/vm_installed.sh runs it as root where the root carries
torch: one VM kernel, Documentation/python.rst says why only one).

A publisher writes a three-frame prefix's K and V through
torch.from_dlpack() views of its sequence and publishes it; another
process attaches the prefix and reads it through its own torch views:
every element equals what the pattern says (computed again in the
reader, not sent), the tensors are views of the arena (their data_ptr is
the sequence's address: no copy), the frames are the same frames (held
by both: CLIENTS' shared), and the bytes stay after the publisher exits.
"""

import os
import time

t0 = time.monotonic()
import torch  # noqa: E402
IMPORT_S = time.monotonic() - t0

import kvarena  # noqa: E402
import ktap  # noqa: E402
from ktap import eq, wait_clients  # noqa: E402

suite = ktap.Suite("python_prefix_torch")
MiB = 1 << 20
ARENA = "pytorch"
GEO = kvarena.Geometry(layers=2, kv_heads=4, head_dim=128, dtype="bf16",
                       frame_size=MiB)      # 256 tokens per frame
FRAMES = 3
TOKENS = FRAMES * 256


def attach(**kw):
    return kvarena.open(ARENA, mode="device", **kw)


def pattern(layer, kv, shape):
    """What the publisher writes into (layer, kv): distinct per element,
    exact in bf16 (integers below 256, times a power of two)."""
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(n, dtype=torch.int64)
    v = ((i * (7 + 2 * layer + kv)) % 251 - 125).to(torch.float32)
    return (v * 2.0 ** (layer - kv)).to(torch.bfloat16).reshape(shape)


def all_equal(seen):
    """Every tensor of @seen is its pattern; (layer, kv) of the first that
    is not, or None.  (No tensor outlives the call in a local: a live view
    keeps the arena attached.)"""
    return next(((layer, kv) for layer, kv, t in seen
                 if not torch.equal(t, pattern(layer, kv, t.shape))), None)


def views(seq):
    """torch views of every layer's K and V, and a check that each is the
    arena's memory itself."""
    out = []
    for layer in range(GEO.layers):
        for kv in (kvarena.K, kvarena.V):
            v = seq.kv(layer, kv)
            t = torch.from_dlpack(v)
            eq(t.data_ptr(), v.data)            # a view, not a copy
            eq(tuple(t.stride()), v.strides)
            out.append((layer, kv, t[:FRAMES]))
    return out


@suite.test
def torch_imports_in_the_vm():
    print("# import torch %s: %.1f s" % (torch.__version__, IMPORT_S))
    kvarena.create_arena(ARENA, 16, frame_size=MiB)


@suite.test
def two_processes_sharing_a_prefix_see_the_same_bytes_through_torch():
    toks = list(range(5000, 5000 + TOKENS))
    keys = kvarena.prefix_keys(GEO, toks, b"torch-prefix-test")
    r_done, w_done = os.pipe()
    r_go, w_go = os.pipe()

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with attach(label="torch-publisher") as a:
                s = a.seq(GEO, max_tokens=4096)
                s.grow(TOKENS)
                for layer, kv, t in views(s):
                    t.copy_(pattern(layer, kv, t.shape))
                del t
                eq(s.publish(keys, tokens=toks), FRAMES)
                os.write(w_done, b"p")
                os.read(r_go, 1)            # the reader has attached
            code = 0
        except BaseException as e:
            print("# publisher: %r" % (e,), flush=True)
        finally:
            os._exit(code)
    eq(os.read(r_done, 1), b"p")
    with attach(label="torch-reader") as b:
        q = b.seq(GEO, max_tokens=4096)
        eq(q.attach_prefix(keys), FRAMES)
        eq(q.tokens, TOKENS)
        seen = views(q)
        eq(all_equal(seen), None)
        me = [c for c in b.clients() if c.client_id == b.info.client_id][0]
        eq((me.held, me.shared), (FRAMES, FRAMES))
        os.write(w_go, b"x")
        eq(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), 0)
        # The publisher is gone; the frames, and their bytes, are not.
        eq(all_equal(seen), None)
        print("# %d tensors of %s, %d frames shared, equal in both processes"
              % (len(seen), tuple(seen[0][2].shape), FRAMES))
        del seen
        q.free()
    # Over io_uring, the default, the publisher's client may outlive its
    # reaped process for a moment, until io_uring lets go of the file.
    wait_clients(ARENA, 0)
    kvarena.destroy_arena(ARENA)


suite.run()
