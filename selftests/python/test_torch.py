# SPDX-License-Identifier: GPL-2.0
"""torch over kvarena's memory: torch.from_dlpack() views of a sequence's
K and V, torch's scaled-dot-product attention over them, and kvattn (the
CPU attention kernels, reading the same sequence's range by address
arithmetic) on the same memory: the results must agree, and the largest
difference is printed.

torch 1.13 (Debian 12's python3-torch) has the function as
torch.nn.functional._scaled_dot_product_attention, returning (out,
weights); 2.0 made it public as scaled_dot_product_attention.

Environment: KVARENA_LIBRARY, KVA_KVATTN_LIBRARY (libkvattn_test.so).
"""

import ctypes
import math
import os

import torch
import torch.nn.functional as F

import kvarena
import ktap
from ktap import eq

suite = ktap.Suite("python_torch")
KiB = 1 << 10

_TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16,
                 "bf16": torch.bfloat16}


def sdpa(q, k, v, mask=None):
    """torch's scaled-dot-product attention, whichever name it has."""
    fn = getattr(F, "scaled_dot_product_attention", None)
    if fn is not None:
        return fn(q, k, v, attn_mask=mask)
    return F._scaled_dot_product_attention(q, k, v, mask, 0.0, False, False)[0]


# ---- kvattn through ctypes -------------------------------------------------

class _Geometry(ctypes.Structure):
    _fields_ = [("layers", ctypes.c_uint32), ("kv_heads", ctypes.c_uint32),
                ("head_dim", ctypes.c_uint32), ("dtype", ctypes.c_uint32),
                ("frame_size", ctypes.c_uint64),
                ("bytes_per_token", ctypes.c_uint64),
                ("tokens_per_frame", ctypes.c_uint32),
                ("head_stride", ctypes.c_uint32)]


class _Params(ctypes.Structure):
    # qo_dtype 0: q and out in fp32; kv_scale NULL: not an fp8 cache.
    _fields_ = [("geom", ctypes.POINTER(_Geometry)), ("layer", ctypes.c_uint32),
                ("q_heads", ctypes.c_uint32), ("scale", ctypes.c_float),
                ("qo_dtype", ctypes.c_uint32),
                ("kv_scale", ctypes.POINTER(ctypes.c_float))]


class _DecodeSeq(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("tokens", ctypes.c_uint64)]


class _PrefillSeq(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("tokens", ctypes.c_uint64),
                ("q_tokens", ctypes.c_uint32), ("q_start", ctypes.c_uint32)]


class _Config(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_uint), ("isa", ctypes.c_int),
                ("split_tokens", ctypes.c_uint32)]


_kv = ctypes.CDLL(os.environ["KVA_KVATTN_LIBRARY"])
_fptr = ctypes.POINTER(ctypes.c_float)
_kv.kva_attn_create.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                ctypes.POINTER(_Config)]
_kv.kva_attn_destroy.argtypes = [ctypes.c_void_p]
_kv.kva_attn_destroy.restype = None
_kv.kva_attn_decode.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Params),
                                ctypes.POINTER(_DecodeSeq), ctypes.c_uint32,
                                _fptr, _fptr]
_kv.kva_attn_decode_ref.argtypes = [ctypes.POINTER(_Params),
                                    ctypes.POINTER(_DecodeSeq), ctypes.c_uint32,
                                    _fptr, _fptr]
_kv.kva_attn_prefill.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Params),
                                 ctypes.POINTER(_PrefillSeq), ctypes.c_uint32,
                                 _fptr, _fptr]


class Kvattn:
    def __init__(self):
        self.h = ctypes.c_void_p()
        cfg = _Config(threads=2, isa=0, split_tokens=0)
        rc = _kv.kva_attn_create(ctypes.byref(self.h), ctypes.byref(cfg))
        assert rc == 0, rc

    def close(self):
        _kv.kva_attn_destroy(self.h)

    @staticmethod
    def params(seq, layer, q_heads):
        g = seq._c.geo
        geo = _Geometry(*(getattr(g, f) for f, _ in _Geometry._fields_))
        p = _Params(ctypes.pointer(geo), layer, q_heads,
                    1.0 / math.sqrt(g.head_dim))
        return p, geo

    def decode(self, seqs, layer, q, ref=False):
        """q: (len(seqs), q_heads, head_dim) fp32; returns the same shape."""
        p, _geo = self.params(seqs[0], layer, q.shape[1])
        arr = (_DecodeSeq * len(seqs))(*[_DecodeSeq(s.base, s.tokens)
                                         for s in seqs])
        q = q.contiguous()
        out = torch.empty_like(q)
        qp = ctypes.cast(q.data_ptr(), _fptr)
        op = ctypes.cast(out.data_ptr(), _fptr)
        if ref:
            rc = _kv.kva_attn_decode_ref(ctypes.byref(p), arr, len(seqs), qp, op)
        else:
            rc = _kv.kva_attn_decode(self.h, ctypes.byref(p), arr, len(seqs),
                                     qp, op)
        assert rc == 0, rc
        return out

    def prefill(self, seq, layer, q):
        """q: (q_tokens, q_heads, head_dim), the last q_tokens of seq."""
        p, _geo = self.params(seq, layer, q.shape[1])
        arr = (_PrefillSeq * 1)(_PrefillSeq(seq.base, seq.tokens, q.shape[0], 0))
        q = q.contiguous()
        out = torch.empty_like(q)
        rc = _kv.kva_attn_prefill(self.h, ctypes.byref(p), arr, 1,
                                  ctypes.cast(q.data_ptr(), _fptr),
                                  ctypes.cast(out.data_ptr(), _fptr))
        assert rc == 0, rc
        return out


# ---- helpers ------------------------------------------------------------------

def fill(seq, layer, kv, values):
    """Write values (kv_heads, tokens, head_dim) into the sequence through
    its torch view, token by frame."""
    t = torch.from_dlpack(seq.kv(layer, kv))
    T = t.shape[2]
    for f in range(t.shape[0]):
        n = min(T, values.shape[1] - f * T)
        t[f, :, :n, :] = values[:, f * T:f * T + n, :]


def gather(seq, layer, kv):
    """(kv_heads, tokens, head_dim) read through the torch view."""
    t = torch.from_dlpack(seq.kv(layer, kv))
    h, d = t.shape[1], t.shape[3]
    return t.permute(1, 0, 2, 3).reshape(h, -1, d)[:, :seq.tokens]


def make_seq(arena, g, tokens, seed):
    s = arena.seq(g, max_tokens=4096)
    s.grow(tokens)
    gen = torch.Generator().manual_seed(seed)
    dt = _TORCH_DTYPES[g.dtype]
    for layer in range(g.layers):
        for kv in (kvarena.K, kvarena.V):
            vals = torch.randn(g.kv_heads, tokens, g.head_dim, generator=gen)
            fill(s, layer, kv, vals.to(dt))
    return s


# ---- tests ----------------------------------------------------------------------

@suite.test
def from_dlpack_is_a_view_of_the_arena():
    g = kvarena.Geometry(layers=2, kv_heads=2, head_dim=64, dtype="fp32",
                         frame_size=256 * KiB)
    with kvarena.open(mode="embedded", nr_frames=16, frame_size=256 * KiB) as a:
        s = a.seq(g, max_tokens=1024)
        s.grow(300)
        view = s.layer(1).k
        t = torch.from_dlpack(view)
        eq(t.data_ptr(), view.data)
        eq(tuple(t.shape), (3, 2, 128, 64))
        eq(t.stride(), view.strides)
        eq(t.dtype, torch.float32)
        t[2, 1, 43, 5] = 3.25
        addr = s.kv_addr(1, kvarena.K, 1, 2 * 128 + 43) + 5 * 4
        eq(ctypes.c_float.from_address(addr).value, 3.25)
        ctypes.c_float.from_address(s.kv_addr(1, kvarena.K, 0, 0)).value = -2.0
        eq(t[0, 0, 0, 0].item(), -2.0)
        del t, view
        s.free()


@suite.test
def sdpa_on_dlpack_views_matches_kvattn_decode():
    kvattn = Kvattn()
    try:
        for dtype in ("fp32", "fp16", "bf16"):
            frame = 64 * KiB
            g = kvarena.Geometry(layers=2, kv_heads=2, head_dim=64,
                                 dtype=dtype, frame_size=frame)
            T = g.tokens_per_frame
            with kvarena.open(mode="embedded", nr_frames=64,
                              frame_size=frame) as a:
                # Ends mid-frame, exactly on a frame, just past one.
                lens = (300, 2 * T, 2 * T + 1)
                seqs = [make_seq(a, g, n, seed) for seed, n in enumerate(lens)]
                q_heads = 4               # GQA: 2 query heads per KV head
                gen = torch.Generator().manual_seed(99)
                worst = 0.0
                for layer in range(g.layers):
                    q = torch.randn(len(seqs), q_heads, g.head_dim,
                                    generator=gen)
                    got = kvattn.decode(seqs, layer, q)
                    ref = kvattn.decode(seqs, layer, q, ref=True)
                    for i, s in enumerate(seqs):
                        k = gather(s, layer, kvarena.K).float()
                        v = gather(s, layer, kvarena.V).float()
                        k = k.repeat_interleave(q_heads // g.kv_heads, 0)
                        v = v.repeat_interleave(q_heads // g.kv_heads, 0)
                        out = sdpa(q[i][:, None, :][None], k[None], v[None])
                        out = out[0, :, 0, :]
                        err = (out - got[i]).abs().max().item()
                        err_ref = (out - ref[i]).abs().max().item()
                        worst = max(worst, err, err_ref)
                print("# decode %s, tokens %s, GQA 4/2, head_dim 64: "
                      "max abs error sdpa vs kvattn %.3g" %
                      (dtype, "/".join(map(str, lens)), worst))
                # bf16: where the CPU has AVX512-BF16, the decode rounds
                # q and the softmax weights to bf16 (kernels.rst): the
                # bound of selftests/kernels/test_attn.c, 6e-3 of max |V|
                tol = 1e-5
                if dtype == "bf16":
                    tol = 6e-3 * max(gather(s, l, kvarena.V).float().abs()
                                     .max().item()
                                     for s in seqs for l in range(g.layers))
                assert worst < tol, (worst, tol)
                for s in seqs:
                    s.free()
    finally:
        kvattn.close()


@suite.test
def causal_sdpa_matches_kvattn_prefill_after_a_cached_prefix():
    kvattn = Kvattn()
    try:
        frame = 64 * KiB
        g = kvarena.Geometry(layers=1, kv_heads=2, head_dim=64, dtype="bf16",
                             frame_size=frame)
        with kvarena.open(mode="embedded", nr_frames=32, frame_size=frame) as a:
            s = make_seq(a, g, 333, seed=5)
            q_tokens, q_heads = 45, 6        # GQA 3
            q = torch.randn(q_tokens, q_heads, g.head_dim,
                            generator=torch.Generator().manual_seed(3))
            got = kvattn.prefill(s, 0, q)
            k = gather(s, 0, kvarena.K).float().repeat_interleave(3, 0)
            v = gather(s, 0, kvarena.V).float().repeat_interleave(3, 0)
            pos = torch.arange(s.tokens - q_tokens, s.tokens)[:, None]
            seen = torch.arange(s.tokens)[None, :] <= pos   # (q, keys)
            # An additive mask: bool masks changed meaning between torch
            # versions, -inf has not.
            mask = torch.zeros(seen.shape).masked_fill(~seen, float("-inf"))
            out = sdpa(q.permute(1, 0, 2)[None], k[None], v[None], mask)
            out = out[0].permute(1, 0, 2)
            err = (out - got).abs().max().item()
            print("# prefill bf16, 333 tokens (the last 45 queried), GQA 6/2: "
                  "max abs error causal sdpa vs kvattn %.3g" % err)
            assert err < 1e-5, err
            s.free()
    finally:
        kvattn.close()


@suite.test
def a_torch_tensor_keeps_its_sequence_mapped():
    g = kvarena.Geometry(layers=1, kv_heads=1, head_dim=64, dtype="fp16",
                         frame_size=64 * KiB)
    with kvarena.open(mode="embedded", nr_frames=4, frame_size=64 * KiB) as a:
        s = a.seq(g, max_tokens=1024)
        s.grow(10)
        t = torch.from_dlpack(s.layer(0).v)
        t[0, 0, 9, 63] = 1.5
        s.free()
        eq(a.stat().held, 1)
        eq(t[0, 0, 9, 63].item(), 1.5)
        del t
        eq(a.stat().held, 0)


@suite.test
def views_alive_at_exit_end_the_process_cleanly():
    # Tensors over a sequence of an arena closed under them, left for the
    # interpreter's exit: the garbage collector may finalize the arena
    # (and with it its sequences) before the sequence's last view.
    import subprocess
    import sys
    prog = """if True:
        import kvarena, torch
        g = kvarena.Geometry(layers=2, kv_heads=4, head_dim=128,
                             dtype="bf16", frame_size=1 << 20)
        def views(seq, n):
            return [torch.from_dlpack(seq.kv(i // 2, i % 2))
                    for i in range(n)]
        with kvarena.open(mode="embedded", nr_frames=8,
                          frame_size=1 << 20) as a:
            s = a.seq(g, max_tokens=4096)
            s.grow(768)
            t = views(s, 2)
            t[0].fill_(1)
        print("done")
    """
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True,
                       text=True, timeout=120)
    eq((r.returncode, r.stdout, r.stderr), (0, "done\n", ""))


suite.run()
