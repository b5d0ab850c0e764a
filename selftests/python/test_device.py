# SPDX-License-Identifier: GPL-2.0
"""The Python binding in device mode, in the VM, against kvarena.ko and
libkvarena as installed (selftests/install/vm_installed.sh runs it as
root, after modprobe and udev): attaching over io_uring and ioctl,
sequences of the module's frames seen through numpy, the module's own
STAT and CLIENTS, frames coming back when a process dies, errors with the
module's errno, who may open the device (the udev rule's group), two
processes sharing a published prefix seeing the same bytes, and a gang of
two host members: a scheduler taking frames, ranks mirroring its block
table and each writing its own slice, and the scheduler's death or a
rank's reaching the others.
"""

import ctypes
import errno
import grp
import hashlib
import os
import signal
import struct

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


def module_takes_io_uring():
    """Whether the module offers its commands over io_uring (5.19+)."""
    from kvarena import _uapi
    with _uapi.Device() as d:
        return bool(d.version().features & 1)   # KVARENA_FEAT_URING_CMD


@suite.test
def attach_over_io_uring_and_over_ioctl():
    with attach(label="py-uring") as a:
        if module_takes_io_uring():
            eq((a.info.mode, a.info.transport), ("device", "uring"))
            eq(a.info.transport_reason, "the default")
        else:
            # The default falls back, and says why.
            eq((a.info.mode, a.info.transport), ("device", "ioctl"))
            assert "io_uring" in a.info.transport_reason, a.info.transport_reason
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


# -- a gang: tensor parallelism over two host member arenas -------------------

GANG = "pygang"
MEMBERS = ["pygm0", "pygm1"]
T = GEO.tokens_per_frame


def _fill(seq, salt):
    """Fill every layer's K and V of @seq's mapped frames with a pattern
    of @salt (a rank's slice of the KV); their digest."""
    for layer in range(GEO.layers):
        for kv in (kvarena.K, kvarena.V):
            v = np.asarray(seq.kv(layer, kv))
            v[...] = ((np.arange(v.size) * (5 + 2 * layer + kv) + salt) %
                      2039).astype(np.float16).reshape(v.shape)
    return _digest(seq, GEO.frames_for(seq.tokens))


def scheduler(**kw):
    return kvarena.open(GANG, mode="device", label="py-sched", **kw)


def rank_of(sched_id, token, r, label=None):
    return kvarena.open_rank(GANG, sched_id, r, token,
                             label=label or "py-rank%d" % r)


@suite.test
def gang_create_makes_a_gang_of_two_host_members():
    for m in MEMBERS:
        kvarena.create_arena(m, nr_frames=8, frame_size=MiB,
                             bytes_per_token=GEO.bytes_per_token)
    kvarena.gang_create(GANG, MEMBERS)
    s = kvarena.arena_stat(GANG)
    eq((s.nr_frames, s.nr_free, s.frame_size, s.bytes_per_token),
       (8, 8, MiB, 2 * GEO.bytes_per_token))      # each holds its share
    expect_error(errno.EEXIST, kvarena.gang_create, GANG, MEMBERS)
    expect_error(errno.ENOENT, kvarena.gang_create, "pygang2",
                 [MEMBERS[0], "no-such-arena"])
    # A member serves its gang alone.
    expect_error(errno.EBUSY, kvarena.open, MEMBERS[0], mode="device")
    expect_error(errno.EBUSY, kvarena.destroy_arena, MEMBERS[1])


@suite.test
def ranks_mirror_the_scheduler_and_each_writes_its_own_slice():
    with scheduler() as sched:
        token, n = sched.gang_token()
        eq(n, 2)
        eq(sched.gang_token(), (token, 2))        # the same for its life
        # Its sequences track frames and map nothing: no views of them.
        t = sched.seq(GEO, max_tokens=4 * T)
        t.grow(T + 1)
        eq(len(t.handles()), 2)
        eq(kvarena.arena_stat(GANG).nr_held, 2)
        expect_error(errno.EOPNOTSUPP, t.kv, 0, kvarena.K)
        t.free()
        eq(kvarena.arena_stat(GANG).nr_held, 0)
        h = sched.alloc(3)
        eq(len(h), 3)
        cid = sched.info.client_id
        ranks, seqs, digest = [], [], []
        for r in range(2):
            rk = rank_of(cid, token, r)
            eq((rk.rank, rk.info.client_id, rk.info.mode), (r, cid, "device"))
            s = rk.seq(GEO, max_tokens=4 * T)
            s.mirror(h, 2 * T + 5)
            eq((s.tokens, s.handles()), (2 * T + 5, h))
            digest.append(_fill(s, 100 + r))
            ranks.append(rk)
            seqs.append(s)
        assert digest[0] != digest[1]
        # Read back through another handle of each rank: its own bytes,
        # not the other rank's (each member has its own memory).
        for r in range(2):
            with rank_of(cid, token, r, "py-again%d" % r) as again:
                c = again.seq(GEO, max_tokens=4 * T)
                c.mirror(h, 2 * T + 5)
                eq(_digest(c, 3), digest[r], "rank %d" % r)
                c.free()
        # The table grows: what is mapped stays, one frame more comes.
        k = seqs[0].kv(0, kvarena.K)              # a view of 3 frames
        h += sched.alloc(1)
        # A rank takes, gives and tells nothing.
        for rk in ranks:
            expect_error(errno.EPERM, rk.alloc, 1)
            expect_error(errno.EPERM, rk.free, h[3:])   # mapped by none
            expect_error(errno.EPERM, rk.gang_token)
        for r, s in enumerate(seqs):
            base = s.base
            s.mirror(h, 3 * T + 1)
            eq((s.base, s.tokens), (base, 3 * T + 1))
            eq(_digest(s, 3), digest[r])
        # But not under a view of the frames it would change.
        try:
            seqs[0].mirror(h[:1], T)
        except BufferError:
            pass
        else:
            raise AssertionError("a mirror unmapped frames under a view")
        eq(seqs[0].tokens, 3 * T + 1)
        del k
        seqs[0].mirror(h[:1], T)
        eq(seqs[0].handles(), h[:1])
        # The frames are the scheduler's, all four, whatever ranks map.
        for rk in ranks:
            rk.close()
        eq(kvarena.arena_stat(GANG).nr_held, 4)
        me = [c for c in sched.clients() if c.client_id == cid][0]
        eq((me.held, me.label), (4, "py-sched"))
    eq(wait_clients(GANG, 0), 0)
    eq(kvarena.arena_stat(GANG).nr_held, 0)


@suite.test
def the_schedulers_death_reaches_every_rank():
    r_pipe, w_pipe = os.pipe()
    pid = os.fork()
    if pid == 0:                               # the scheduler
        code = 1
        try:
            os.close(r_pipe)
            a = scheduler()
            token, _ = a.gang_token()
            h = a.alloc(2)
            os.write(w_pipe, struct.pack("=IQQQ", a.info.client_id, token,
                                         *h))
            signal.pause()
        except BaseException as e:
            print("# child: %r" % (e,), flush=True)
        finally:
            os._exit(code)
    os.close(w_pipe)
    msg = os.read(r_pipe, struct.calcsize("=IQQQ"))
    os.close(r_pipe)
    try:
        cid, token, *h = struct.unpack("=IQQQ", msg)
    except struct.error:
        os.waitpid(pid, 0)
        raise AssertionError("the scheduler sent %r" % (msg,)) from None
    ranks, seqs = [], []
    for r in range(2):
        rk = rank_of(cid, token, r)
        s = rk.seq(GEO, max_tokens=2 * T)
        s.mirror(h, 2 * T)
        _fill(s, 7 + r)
        ranks.append(rk)
        seqs.append(s)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    eq(wait_clients(GANG, 0), 0)
    eq(kvarena.arena_stat(GANG).nr_held, 0)    # its frames are back
    for rk, s in zip(ranks, seqs):
        # Its mappings are revoked: a touch is SIGBUS.
        eq(in_child(lambda: np.asarray(s.kv(0, kvarena.K))[0, 0, 0, 0]
                    .item()), -signal.SIGBUS)
        # Anything mapped anew is refused: the client is gone.
        new = rk.seq(GEO, max_tokens=2 * T)
        e = expect_error(errno.ENOLINK, new.mirror, h, 2 * T)
        eq(e.call, "kva_seq_mirror")
        eq(new.tokens, 0)
        rk.close()


@suite.test
def with_ranks_fatal_a_ranks_death_evicts_the_scheduler():
    with scheduler() as sched:
        token, _ = sched.gang_token(ranks_fatal=True)
        h = sched.alloc(2)
        eq(kvarena.arena_stat(GANG).nr_held, 2)

        def rank_dies():
            rk = rank_of(sched.info.client_id, token, 1)
            s = rk.seq(GEO, max_tokens=2 * T)
            s.mirror(h, 2 * T)
            _fill(s, 1)
            os.kill(os.getpid(), signal.SIGKILL)
        eq(in_child(rank_dies), -signal.SIGKILL)
        eq(wait_clients(GANG, 0), 0)           # evicted: out of the gang
        eq(kvarena.arena_stat(GANG).nr_held, 0)
        expect_error(errno.ESHUTDOWN, sched.alloc, 1)
        expect_error(errno.ENOENT, rank_of, sched.info.client_id, token, 0)


@suite.test
def destroying_the_gang_sets_its_members_free():
    kvarena.destroy_arena(GANG)
    expect_error(errno.ENOENT, kvarena.arena_stat, GANG)
    for m in MEMBERS:
        with kvarena.open(m, mode="device", label="py-member") as a:
            eq(len(a.alloc(8)), 8)
        kvarena.destroy_arena(m)


@suite.test
def destroy_arena_when_nobody_is_attached():
    kvarena.destroy_arena(ARENA)
    expect_error(errno.ENOENT, kvarena.arena_stat, ARENA)


suite.run()
