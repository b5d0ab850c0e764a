# SPDX-License-Identifier: GPL-2.0
"""The Python binding in device mode, in the VM, against kvarena.ko and
libkvarena as installed (selftests/install/vm_installed.sh runs it as
root, after modprobe and udev): attaching over io_uring and ioctl,
sequences of the module's frames seen through numpy, the module's own
STAT and CLIENTS, frames coming back when a process dies, errors with the
module's errno, who may open the device (the udev rule's group), and two
processes sharing a published prefix seeing the same bytes.
"""

import ctypes
import errno
import grp
import hashlib
import os

import numpy as np

import kvarena
import ktap
from ktap import eq, expect_error, wait_clients

suite = ktap.Suite("python_device")
MiB = 1 << 20
ARENA = "pyarena"
GEO = kvarena.Geometry(layers=2, kv_heads=4, head_dim=128, dtype="fp16",
                       frame_size=MiB)      # 256 tokens per frame


def attach(**kw):
    return kvarena.open(ARENA, mode="device", **kw)


def in_child(fn):
    """Run fn in a forked child; its exit status (0: fn returned)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fn()
            code = 0
        except BaseException as e:            # report, never return
            print("# child: %r" % (e,), flush=True)
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@suite.test
def create_arena_makes_a_module_arena():
    kvarena.create_arena(ARENA, nr_frames=16, frame_size=MiB,
                         bytes_per_token=GEO.bytes_per_token)
    s = kvarena.arena_stat(ARENA)
    eq((s.name, s.nr_frames, s.nr_free, s.nr_backed, s.frame_size),
       (ARENA, 16, 16, 16, MiB))
    assert ARENA in [a.name for a in kvarena.arenas()]
    expect_error(errno.EEXIST, kvarena.create_arena, ARENA, nr_frames=4,
                 frame_size=MiB)


@suite.test
def attach_over_io_uring_and_over_ioctl():
    with attach(label="py-uring") as a:
        eq((a.info.mode, a.info.transport), ("device", "uring"))
        eq((a.info.nr_frames, a.info.frame_size), (16, MiB))
        assert a.info.client_id > 0
        with attach(label="py-ioctl", transport="ioctl") as b:
            eq(b.info.transport, "ioctl")
            eq(sorted(c.label for c in a.clients()), ["py-ioctl", "py-uring"])


@suite.test
def a_client_names_its_cache_domain_and_may_keep_to_itself():
    with attach(label="py-uid") as a, attach(label="py-private",
                                             private=True) as b:
        eq(a.info.domain, (1 << 56) | os.geteuid())     # one per uid
        eq(b.info.domain >> 56, 5)                      # private
        rows = {c.label: c.domain for c in a.clients()}
        eq(rows["py-uid"], a.info.domain)
        eq(rows["py-private"], b.info.domain)


@suite.test
def a_sequence_holds_module_frames_seen_through_numpy():
    with attach(label="py-seq") as a:
        s = a.seq(GEO, max_tokens=4096)
        s.grow(300)
        eq(kvarena.arena_stat(ARENA).nr_held, 2)
        row = [c for c in a.clients() if c.client_id == a.info.client_id][0]
        eq((row.held, row.pid, row.label), (2, os.getpid(), "py-seq"))
        k = np.asarray(s.layer(1).k)
        eq(k.shape, (2, 4, 256, 128))
        k[1, 3, 299 - 256, 127] = 6.5
        addr = s.kv_addr(1, kvarena.K, 3, 299) + 127 * 2
        eq(np.frombuffer(ctypes.string_at(addr, 2), np.float16)[0], 6.5)
        a.sync_usage()
        st = kvarena.arena_stat(ARENA)
        eq((st.filled_tokens, st.filled_bytes), (300, 300 * GEO.bytes_per_token))
        del k
        s.free()
        eq(kvarena.arena_stat(ARENA).nr_held, 0)


@suite.test
def a_dead_process_returns_its_frames():
    def child():
        a = attach(label="py-dies")
        s = a.seq(GEO, max_tokens=4096)
        s.grow(1000)                 # 4 frames
        assert kvarena.arena_stat(ARENA).nr_held == 4
        os._exit(0)                  # no close, no free
    eq(in_child(child), 0)
    eq(wait_clients(ARENA, 0), 0)
    st = kvarena.arena_stat(ARENA)
    eq((st.nr_held, st.nr_clients), (0, 0))


@suite.test
def module_errors_carry_their_errno():
    e = expect_error(errno.ENOENT, kvarena.open, "no-such-arena",
                     mode="device")
    assert isinstance(e, kvarena.Error)
    with attach(max_frames=2) as a:
        s = a.seq(GEO, max_tokens=4096)
        expect_error(errno.ENOSPC, s.grow, 600)    # a third frame
        eq(s.tokens, 0)
        expect_error(errno.EBUSY, kvarena.destroy_arena, ARENA)


@suite.test
def the_udev_group_may_open_the_device_and_others_may_not():
    gid = grp.getgrnam("kvarena").gr_gid

    def member():
        os.setgroups([gid])
        os.setgid(1000)
        os.setuid(1000)
        os.close(os.open("/dev/kvarena", os.O_RDWR))
        assert ARENA in [x.name for x in kvarena.arenas()]
        with attach(label="py-member") as a:   # the default mode, 0666
            a.alloc(1)

    def stranger():
        os.setgroups([])
        os.setgid(1001)
        os.setuid(1001)
        expect_error(errno.EACCES, kvarena.arenas)
        try:
            os.open("/dev/kvarena", os.O_RDONLY)
        except PermissionError:
            return
        raise AssertionError("a user outside group kvarena opened it")
    eq(in_child(member), 0)
    eq(in_child(stranger), 0)


def _pattern(seq):
    """Fill every layer's K and V of @seq with a pattern; their digest."""
    for layer in range(GEO.layers):
        for kv in (kvarena.K, kvarena.V):
            v = np.asarray(seq.kv(layer, kv))
            v[...] = ((np.arange(v.size) * (3 + layer * 2 + kv)) % 2039).astype(
                np.float16).reshape(v.shape)
    return _digest(seq, seq.tokens // GEO.tokens_per_frame)


def _digest(seq, frames):
    h = hashlib.sha256()
    for layer in range(GEO.layers):
        for kv in (kvarena.K, kvarena.V):
            h.update(np.asarray(seq.kv(layer, kv))[:frames].tobytes())
    return h.digest()


@suite.test
def two_processes_sharing_a_prefix_see_the_same_bytes():
    toks = list(range(9000, 9000 + 3 * 256))
    keys = kvarena.prefix_keys(GEO, toks, b"shared-prefix-test")
    to_parent, from_child = os.pipe()
    to_child, from_parent = os.pipe()

    def publisher():
        with attach(label="py-publisher") as a:
            s = a.seq(GEO, max_tokens=4096)
            s.grow(3 * 256)
            digest = _pattern(s)
            eq(s.publish(keys, tokens=toks), 3)
            os.write(from_child, digest)
            os.read(to_child, 1)            # the other process has attached
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            publisher()
            code = 0
        except BaseException as e:
            print("# child: %r" % (e,), flush=True)
        finally:
            os._exit(code)
    digest = os.read(to_parent, 32)
    eq(len(digest), 32)
    with attach(label="py-attacher") as b:
        q = b.seq(GEO, max_tokens=4096)
        eq(q.attach_prefix(keys), 3)
        eq(q.tokens, 3 * 256)
        eq(_digest(q, 3), digest)
        k = np.asarray(q.layer(0).k)
        assert not k.flags.writeable        # published: read-only
        me = [c for c in b.clients() if c.client_id == b.info.client_id][0]
        eq((me.held, me.shared), (3, 3))    # the same frames as the child's
        os.write(from_parent, b"x")
        eq(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), 0)
        eq(wait_clients(ARENA, 1), 1)
        eq(_digest(q, 3), digest)           # ours now alone, still the bytes
        del k
        q.free()
    st = kvarena.arena_stat(ARENA)
    eq((st.nr_cached, st.nr_published, st.nr_held), (3, 3, 0))

    # A third process finds them in the cache, byte for byte.
    def third():
        with attach(label="py-third") as c:
            r = c.seq(GEO, max_tokens=4096)
            eq(r.attach_prefix(keys), 3)
            eq(_digest(r, 3), digest)
    eq(in_child(third), 0)


@suite.test
def destroy_arena_when_nobody_is_attached():
    kvarena.destroy_arena(ARENA)
    expect_error(errno.ENOENT, kvarena.arena_stat, ARENA)


suite.run()
