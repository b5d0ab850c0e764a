# SPDX-License-Identifier: GPL-2.0
"""The Python binding against an embedded arena (no module needed):
the API, errors as kvarena.Error with the library's errno, zero-copy views
through the array interface and DLPack (numpy), and the rule that a view
keeps its sequence's memory mapped.

Environment: KVARENA_LIBRARY (the libkvarena.so.1 under test) and
KVA_LAYOUT_DUMP (selftests/python/layout_dump, built by make).
"""

import ctypes
import errno
import json
import os
import subprocess

import numpy as np

import kvarena
import ktap
from ktap import eq, expect_error

suite = ktap.Suite("python_embedded")
MiB = 1 << 20


def arena(nr_frames=8, frame_size=MiB, **kw):
    return kvarena.open(mode="embedded", nr_frames=nr_frames,
                        frame_size=frame_size, **kw)


def geo(dtype="fp16", frame_size=MiB, layers=2, kv_heads=4, head_dim=128):
    return kvarena.Geometry(layers=layers, kv_heads=kv_heads,
                            head_dim=head_dim, dtype=dtype,
                            frame_size=frame_size)


def read_at(addr, ctype):
    return ctype.from_address(addr).value


@suite.test
def structs_and_ioctls_match_the_c_headers():
    from kvarena import _lib, _uapi
    out = subprocess.run([os.environ["KVA_LAYOUT_DUMP"]], check=True,
                         capture_output=True, text=True).stdout
    c = json.loads(out)
    mine = {
        "kva_open_opts": _lib.OpenOpts, "kva_arena_info": _lib.ArenaInfo,
        "kva_stat": _lib.Stat, "kva_arena_params": _lib.ArenaParams,
        "kva_geometry": _lib.Geometry, "kva_seq": _lib.Seq,
        "kva_grow": _lib.Grow, "kva_rank_opts": _lib.RankOpts,
    }
    mine.update(_uapi.STRUCTS)
    eq(sorted(mine), sorted(c["structs"]), "structs")
    for name, py in mine.items():
        want = c["structs"][name]
        eq(ctypes.sizeof(py), want["size"], name + " size")
        eq([f for f, _ in py._fields_], list(want["fields"]), name + " fields")
        for f, off in want["fields"].items():
            eq(getattr(py, f).offset, off, "%s.%s offset" % (name, f))
    for name, num in c["ioctls"].items():
        eq(_uapi.IOCTLS[name], num, name)


@suite.test
def a_missing_device_node_is_said_with_its_fix():
    e = expect_error(errno.ENODEV, kvarena.open, "x", mode="device",
                     device="/nonexistent/kvarena")
    if os.path.exists("/sys/module/kvarena"):
        why = ("kvarena.ko is loaded but /nonexistent/kvarena is missing: a "
               "container or chroot without the device node?")
    else:
        why = ("/nonexistent/kvarena does not exist: is kvarena.ko loaded? "
               "modprobe kvarena loads it")
    eq(str(e), "[Errno 19] kva_open: No such device (%s)" % why)


@suite.test
def open_embedded_reports_what_it_made():
    with arena(nr_frames=6, label="py") as a:
        eq(a.info.mode, "embedded")
        eq(a.info.backend, "host")
        eq(a.info.transport, "none")
        eq(a.info.nr_frames, 6)
        eq(a.info.frame_size, MiB)
        s = a.stat()
        eq((s.nr_frames, s.nr_free, s.held, s.nr_seqs), (6, 6, 0, 0))
        eq(len(a.clients()), 1)
        eq(a.clients()[0].label, "py")


@suite.test
def bad_options_raise_before_the_library_runs():
    for kw in ({"mode": "gpu"}, {"backend": "tpu"}, {"transport": "pigeon"}):
        try:
            kvarena.open(**kw)
        except ValueError:
            continue
        raise AssertionError("%r accepted" % kw)


@suite.test
def library_errors_carry_the_errno():
    e = expect_error(errno.EINVAL, kvarena.open, mode="embedded",
                     nr_frames=4, frame_size=3000)
    assert isinstance(e, kvarena.Error) and isinstance(e, OSError)
    eq(e.call, "kva_open")
    assert "kva_open" in str(e), str(e)


@suite.test
def geometry_derives_the_frame_layout():
    g = geo()
    eq(g.bytes_per_token, 2 * 2 * 4 * 128 * 2)
    eq(g.tokens_per_frame, MiB // 4096)
    eq(g.head_stride, 256 * 128 * 2)
    eq(g.kv_offset(1, kvarena.V, 3, 300),
       1 * MiB + ((1 * 2 + 1) * 4 + 3) * g.head_stride + 44 * 128 * 2)


@suite.test
def geometry_that_does_not_fit_says_why():
    try:
        geo(frame_size=4096, layers=80, kv_heads=8)
    except ValueError as e:
        assert "does not fit" in str(e) or "fit" in str(e), str(e)
        return
    raise AssertionError("accepted a token larger than a frame")


@suite.test
def grow_maps_frames_and_counts_them():
    with arena() as a, a.seq(geo(), max_tokens=2048) as s:
        eq((s.tokens, s.room), (0, 0))
        s.grow(300)
        eq((s.tokens, s.room), (300, 512))
        eq(len(s.handles()), 2)
        s.grow(100)                 # inside mapped frames: no new frame
        eq((s.tokens, s.room, len(s.handles())), (400, 512, 2))
        s.grow(1, ahead=600)
        eq((s.tokens, s.room), (401, 1024))
        st = a.stat()
        eq((st.held, st.nr_free, st.nr_seqs, st.seq_tokens), (4, 4, 1, 401))


@suite.test
def grow_beyond_max_tokens_raises_efbig_and_changes_nothing():
    with arena() as a, a.seq(geo(), max_tokens=1000) as s:
        s.grow(10)
        expect_error(errno.EFBIG, s.grow, 991)
        eq((s.tokens, s.room), (10, 256))


@suite.test
def grow_batch_is_all_or_nothing():
    with arena(nr_frames=4) as a:
        s1, s2 = a.seq(geo(), 4096), a.seq(geo(), 4096)
        s1.grow(10)
        expect_error(errno.ENOSPC, a.grow, [(s1, 600), (s2, 600)])
        eq((s1.tokens, s2.tokens, a.stat().held), (10, 0, 1))
        a.grow([(s1, 246), (s2, 512, 1)])
        eq((s1.tokens, s1.room, s2.tokens, s2.room), (256, 256, 512, 768))
        expect_error(errno.EINVAL, a.grow, [(s1, 1), (s1, 1)])


@suite.test
def raw_frames_alloc_and_free():
    with arena(nr_frames=4) as a:
        h = a.alloc(3)
        eq(len(set(h)), 3)
        expect_error(errno.ENOSPC, a.alloc, 2)
        eq(len(a.alloc(2, partial=True)), 1)
        a.free(h)
        expect_error(errno.ESTALE, a.free, h[:1])
        eq(a.stat().held, 1)


@suite.test
def view_addresses_follow_the_layout():
    g = geo()
    with arena() as a, a.seq(g, max_tokens=2048) as s:
        s.grow(700)
        k = s.layer(1).k
        eq(k.shape, (3, 4, 256, 128))
        eq(k.strides, (MiB // 2, 256 * 128, 128, 1))
        eq(k.data, s.kv_addr(1, kvarena.K, 0, 0))
        arr = np.asarray(k)
        eq(arr.dtype, np.float16)
        assert arr.ctypes.data == k.data
        # Element (token 699, head 3, dim 5) of K, layer 1.
        arr[699 // 256, 3, 699 % 256, 5] = 2.5
        addr = s.kv_addr(1, kvarena.K, 3, 699) + 5 * 2
        eq(np.frombuffer(ctypes.string_at(addr, 2), np.float16)[0], 2.5)
        v = np.asarray(s.layer(0).v)
        v[0, 0, 0, 0] = -1.0
        eq(np.frombuffer(ctypes.string_at(s.kv_addr(0, kvarena.V, 0, 0), 2),
                         np.float16)[0], -1.0)


@suite.test
def dlpack_gives_numpy_the_same_memory():
    with arena() as a, a.seq(geo(dtype="fp32"), max_tokens=1024) as s:
        s.grow(200)
        view = s.layer(0).v
        eq(view.__dlpack_device__(), (1, 0))
        d = np.from_dlpack(view)
        eq(d.shape, view.shape)
        eq(d.dtype, np.float32)
        eq(tuple(x // 4 for x in d.strides), view.strides)
        # numpy marks every DLPack import read-only; np.asarray() (the
        # array interface) gives a writable view of the same memory.
        assert not d.flags.writeable
        np.asarray(view)[0, 1, 7, :] = np.arange(d.shape[3], dtype=np.float32)
        eq(d[0, 1, 7, 9], 9.0)
        assert d.ctypes.data == view.data
        assert not hasattr(view, "__cuda_array_interface__")


@suite.test
def bf16_goes_to_dlpack_as_bfloat16_and_to_numpy_as_bits():
    from kvarena import _dlpack
    with arena() as a, a.seq(geo(dtype="bf16"), max_tokens=1024) as s:
        s.grow(1)
        k = s.layer(0).k
        eq(k._dl_dtype, (_dlpack.DL_BFLOAT, 16))
        eq(np.asarray(k).dtype, np.uint16)


@suite.test
def fp8_holds_twice_the_tokens_and_shows_its_codes_as_bytes():
    from kvarena import _dlpack
    g8, g16 = geo(dtype="fp8"), geo(dtype="bf16")
    eq(g8.tokens_per_frame, 2 * g16.tokens_per_frame)
    with arena() as a, a.seq(g8, max_tokens=2048) as s:
        s.grow(g8.tokens_per_frame + 1)
        k = s.layer(1).k
        eq(k._dl_dtype, (_dlpack.DL_UINT, 8))
        arr = np.asarray(k)
        eq((arr.dtype, arr.shape[0]), (np.uint8, 2))
        eq(tuple(arr.strides), tuple(k.strides))
        # Token T_f (frame 1, token 0), head 2, dim 3: the code 0x38 (1.0).
        arr[1, 2, 0, 3] = 0x38
        addr = s.kv_addr(1, kvarena.K, 2, g8.tokens_per_frame) + 3
        eq(ctypes.string_at(addr, 1), b"\x38")
        eq(np.from_dlpack(k)[1, 2, 0, 3], 0x38)


@suite.test
def a_fork_shares_until_a_grow_copies():
    with arena() as a, a.seq(geo(), max_tokens=2048) as p:
        p.grow(100)
        np.asarray(p.layer(0).k)[0, 0, 99, 0] = 7.0
        c = p.fork()
        eq(c.tokens, 100)
        eq(np.asarray(c.layer(0).k)[0, 0, 99, 0], 7.0)
        eq(a.stat().held, 1)
        c.grow(1)                   # copies the shared partial frame
        eq(a.stat().held, 2)
        np.asarray(c.layer(0).k)[0, 0, 100, 0] = 8.0
        np.asarray(c.layer(0).k)[0, 0, 99, 0] = 9.0
        eq(np.asarray(p.layer(0).k)[0, 0, 99, 0], 7.0)
        c.free()
        eq(a.stat().held, 1)


@suite.test
def a_live_view_keeps_a_freed_sequence_mapped():
    with arena() as a:
        s = a.seq(geo(), max_tokens=1024)
        s.grow(300)
        arr = np.asarray(s.layer(1).v)
        arr[1, 2, 3, 4] = 5.0
        s.free()
        assert s.freed
        expect_error_value(s.grow, 1)
        eq(a.stat().held, 2)        # still mapped: arr points into it
        eq(arr[1, 2, 3, 4], 5.0)
        del arr
        eq(a.stat().held, 0)


def expect_error_value(fn, *args):
    try:
        fn(*args)
    except ValueError:
        return
    raise AssertionError("no ValueError")


@suite.test
def a_dlpack_export_keeps_the_arena_open():
    from kvarena import _dlpack
    a = arena()
    s = a.seq(geo(), max_tokens=1024)
    s.grow(10)
    d = np.from_dlpack(s.layer(0).k)
    live = _dlpack.live_exports()
    assert live >= 1
    a.close()                       # deferred: d still reads the frames
    assert a.closed
    eq(int(d[0, 0, 0, 0] == d[0, 0, 0, 0]), 1)
    del s
    del d
    eq(_dlpack.live_exports(), live - 1)
    assert a._p is None, "the arena did not close when the last view went"


@suite.test
def an_unconsumed_capsule_releases_its_view():
    from kvarena import _dlpack
    with arena() as a, a.seq(geo(), max_tokens=1024) as s:
        s.grow(10)
        before = _dlpack.live_exports()
        cap = s.layer(0).k.__dlpack__()
        eq(_dlpack.live_exports(), before + 1)
        del cap
        eq(_dlpack.live_exports(), before)
        eq(s._pins, 0)


@suite.test
def shrink_under_a_view_raises_buffererror():
    with arena() as a, a.seq(geo(), max_tokens=2048) as s:
        s.grow(600)
        k = s.layer(0).k            # covers 3 frames
        try:
            s.shrink(100)
        except BufferError:
            pass
        else:
            raise AssertionError("shrink unmapped frames under a view")
        eq(s.tokens, 600)
        s.shrink(520)               # keeps the 3 frames the view covers
        eq(s.tokens, 520)
        del k
        s.shrink(100)
        eq((s.tokens, s.room, a.stat().held), (100, 256, 1))


@suite.test
def sync_usage_reports_distinct_filled_tokens():
    with arena() as a, a.seq(geo(), max_tokens=2048) as s:
        s.grow(300)
        c = s.fork()
        a.sync_usage()
        st = a.stat()
        eq((st.seq_tokens, st.my_filled_tokens), (600, 300))
        eq(st.my_filled_bytes, 300 * 4096)
        c.free()


@suite.test
def a_view_of_tokens_checks_its_bounds():
    with arena() as a, a.seq(geo(), max_tokens=2048) as s:
        s.grow(10)
        eq(s.kv(0, kvarena.K, tokens=0).shape[0], 0)
        for bad in ((2, kvarena.K), (-1, kvarena.V)):
            try:
                s.kv(*bad)
            except IndexError:
                continue
            raise AssertionError("layer %r accepted" % (bad,))
        try:
            s.kv(0, 2)
        except ValueError:
            pass
        else:
            raise AssertionError("kv 2 accepted")
        try:
            s.kv(0, kvarena.K, tokens=11)
        except ValueError:
            pass
        else:
            raise AssertionError("tokens past the sequence accepted")


@suite.test
def a_host_arena_has_no_gpu_and_no_stream():
    with arena() as a:
        eq(a.info.mem_uuid, bytes(16))
        expect_error(errno.EOPNOTSUPP, a.set_stream, None)
        a.sync()                    # nothing left to the arena's thread


@suite.test
def prefix_keys_chain_over_full_frames():
    g = geo()                       # 256 tokens per frame
    toks = list(range(1000, 1000 + 3 * 256 + 17))
    keys = kvarena.prefix_keys(g, toks, b"model-a")
    eq([len(k) for k in keys], [32, 32, 32])
    eq(kvarena.prefix_keys(g, toks, b"model-a"), keys)
    other = kvarena.prefix_keys(g, toks, b"model-b")
    assert all(a != b for a, b in zip(keys, other))
    changed = list(toks)
    changed[300] += 1               # frame 1: it and every later key change
    k2 = kvarena.prefix_keys(g, changed, b"model-a")
    eq(k2[0], keys[0])
    assert k2[1] != keys[1] and k2[2] != keys[2]


@suite.test
def a_published_prefix_attaches_to_another_sequence_byte_for_byte():
    g = geo()
    toks = list(range(600))
    keys = kvarena.prefix_keys(g, toks, b"ns")
    with arena() as a:
        p = a.seq(g, max_tokens=2048)
        p.grow(600)
        k = np.asarray(p.layer(1).k)
        k[...] = (np.arange(k.size) % 2048).astype(np.float16).reshape(k.shape)
        del k
        eq(p.publish(keys, tokens=toks[:512]), 2)
        eq(p.publish(keys), 0)      # the same keys again: nothing new
        q = a.seq(g, max_tokens=2048)
        eq(q.attach_prefix(keys + [b"\x07" * 32]), 2)
        eq(q.tokens, 512)
        pk, qk = np.asarray(p.layer(1).k), np.asarray(q.layer(1).k)
        eq(qk.shape[0], 2)
        assert (pk[:2] == qk).all()
        assert qk.ctypes.data != pk.ctypes.data
        # Published frames are read-only, and the view says so.
        assert not qk.flags.writeable
        st = a.stat()
        eq((st.nr_published, st.held), (2, 3))
        try:
            p.publish(keys, tokens=toks[:511])
        except ValueError:
            pass
        else:
            raise AssertionError("511 token ids for 2 frames accepted")
        del pk, qk
        q.free()
        p.free()
        eq((a.stat().held, a.stat().nr_cached), (0, 2))


@suite.test
def the_device_views_need_a_device():
    missing = "/nonexistent/kvarena"
    e = expect_error(errno.ENOENT, kvarena.arenas, device=missing)
    assert missing in str(e), str(e)
    expect_error(errno.ENODEV, kvarena.open, "x", mode="device",
                 device=missing)


@suite.test
def gangs_are_the_devices_and_say_so():
    missing = "/nonexistent/kvarena"
    with arena(nr_frames=2) as a:
        eq(a.rank, None)
        e = expect_error(errno.EOPNOTSUPP, a.gang_token)
        eq(e.call, "kva_gang_token")
        s = a.seq(geo(), max_tokens=512)
        expect_error(errno.EOPNOTSUPP, s.mirror, [1], 1)   # not a rank
        s.free()
    expect_error(errno.ENODEV, kvarena.open_rank, "g", 1, 0, 5,
                 device=missing)
    expect_error(errno.EINVAL, kvarena.open_rank, "not a name", 1, 0, 5,
                 device=missing)
    expect_error(errno.ENOENT, kvarena.gang_create, "g", ["m0", "m1"],
                 device=missing)
    for members in (["m0"], ["m%d" % i for i in range(17)], ["m0", ""]):
        try:
            kvarena.gang_create("g", members, device=missing)
        except ValueError:
            continue
        raise AssertionError("gang_create accepted %r" % (members,))


suite.run()
