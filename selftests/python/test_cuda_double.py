# SPDX-License-Identifier: GPL-2.0
"""A CUDA arena's views, over the test double of the CUDA driver
(selftests/lib/cuda_double.c: the VMM entry points over host memory, so
a "device" address can be read here).  What a CUDA consumer - torch.cuda,
cupy, numba - would be handed: DLPack's CUDA device type with the arena's
device ordinal, a __cuda_array_interface__ over the sequence's range, and
no __array_interface__ (the memory is not the CPU's).  The same views run
on a GPU in selftests/gpu.

Environment: KVARENA_LIBRARY, KVA_CUDA_DOUBLE (libcuda_double.so).
"""

import ctypes
import os

import kvarena
import ktap
from ktap import eq

suite = ktap.Suite("python_cuda_double")
FS = 64 << 10          # the double's allocation granularity
DOUBLE = os.environ["KVA_CUDA_DOUBLE"]


def cuda_arena():
    return kvarena.open(mode="embedded", backend="cuda", nr_frames=16,
                        frame_size=FS, cuda_library=DOUBLE)


@suite.test
def a_cuda_arena_exports_cuda_views():
    g = kvarena.Geometry(layers=2, kv_heads=2, head_dim=32, dtype="fp16",
                         frame_size=FS)
    with cuda_arena() as a:
        eq(a.info.backend, "cuda")
        s = a.seq(g, max_tokens=2048)
        s.grow(300)
        v = s.layer(1).v
        eq(v.__dlpack_device__(), (2, 0))          # kDLCUDA, device 0
        assert not hasattr(v, "__array_interface__")
        cai = v.__cuda_array_interface__
        T = g.tokens_per_frame
        eq(cai["shape"], (-(-300 // T), 2, T, 32))
        eq(cai["typestr"], "<f2")
        eq(cai["version"], 3)
        eq(cai["stream"], None)
        eq(cai["data"], (s.kv_addr(1, kvarena.V, 0, 0), False))
        eq(cai["strides"], (FS, T * 32 * 2, 32 * 2, 2))
        # The double's device memory is host memory: a store at the
        # element the interface's arithmetic names lands at kv_addr.
        f, h, t, d = 1, 1, 17, 3
        addr = cai["data"][0] + sum(i * st for i, st in
                                    zip((f, h, t, d), cai["strides"]))
        eq(addr, s.kv_addr(1, kvarena.V, h, f * T + t) + d * 2)
        ctypes.c_uint16.from_address(addr).value = 0x3c00
        eq(ctypes.c_uint16.from_address(s.kv_addr(1, kvarena.V, h, f * T + t)
                                        + d * 2).value, 0x3c00)
        cap = v.__dlpack__()
        assert type(cap).__name__ == "PyCapsule"
        del cap, v
        s.free()


@suite.test
def a_cuda_arena_names_its_gpu_and_frees_after_the_stream():
    g = kvarena.Geometry(layers=2, kv_heads=2, head_dim=32, dtype="fp16",
                         frame_size=FS)
    with cuda_arena() as a:
        eq(len(a.info.mem_uuid), 16)
        assert a.info.mem_uuid != bytes(16)
        a.set_stream(None)          # the legacy stream
        s = a.seq(g, max_tokens=2048)
        s.grow(300)
        held = a.stat().held
        assert held > 0
        s.free()
        a.sync()                    # the arena's thread has returned them
        eq(a.stat().held, 0)


suite.run()
