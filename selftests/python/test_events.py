# SPDX-License-Identifier: GPL-2.0
"""KV events, in the VM, against kvarena.ko and kvarenactl as installed
(vm_installed.sh runs it as root after modprobe kvarena events_ring_kib=64):

 - the module's events (KVARENA_IOC_EVENTS_FD) for a run of publishes,
   a look-up, a re-publish, reclaims and the arena's end: exactly the
   STORED, REMOVED and CLEARED events it should make, in order, with keys,
   parents, token ids and clients;
 - kvarenactl events as JSON lines, and kvarenactl events --zmq read by a
   subscriber written here from vLLM's wire format (python3-zmq,
   python3-msgpack): every event of the run arrives, in order, none
   dropped, with the replay socket filling what the subscription missed;
 - a reader that falls behind the 64 KiB ring is told how many events it
   lost; events are for those who may view the arena; the descriptor's
   errors (small buffers, O_NONBLOCK, bad arguments) and PUBLISH's token
   fields.
"""

import ctypes
import errno
import fcntl
import json
import os
import select
import subprocess
import signal
import threading

import msgpack
import zmq

import kvarena
import ktap
import kvev_hash
import vllm_rules
from kvarena import _uapi
from ktap import eq, event_burst, expect_error, wait_clients, \
    wait_for_events_fd

suite = ktap.Suite("python_events")
MiB = 1 << 20
GEO = kvarena.Geometry(layers=2, kv_heads=4, head_dim=128, dtype="fp16",
                       frame_size=MiB)      # 256 tokens per frame
T = GEO.tokens_per_frame
KVARENACTL = "kvarenactl"


def new_arena(name, frames=8):
    kvarena.create_arena(name, nr_frames=frames, frame_size=MiB,
                         bytes_per_token=GEO.bytes_per_token)


def in_child(fn):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fn()
            code = 0
        except BaseException as e:
            print("# child: %r" % (e,), flush=True)
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def flatten_module(events):
    """Per-block records from the module's events, each block as
    kvarenactl tells it (its key's hash, its cache domain mixed in)."""
    bh = kvev_hash.block_hash
    out = []
    for e in events:
        if e.type == "stored":
            out.append(("stored", bh(e.key, e.domain),
                        bh(e.parent, e.domain) if e.parent else None,
                        e.tokens))
        elif e.type == "removed":
            out.append(("removed", bh(e.key, e.domain)))
        else:
            out.append((e.type,))
    return out


# The keys of kvarenactl's events in the vllm layout, in order (a
# root's client is in cache domain uid 0: its blocks carry a salt).
_KEYS = {
    "BlockStored": ["type", "block_hashes", "parent_block_hash", "token_ids",
                    "block_size", "lora_id", "medium", "lora_name",
                    "extra_keys", "cache_salt", "group_idx",
                    "kv_cache_spec_kind"],
    "BlockRemoved": ["type", "block_hashes", "medium", "group_idx"],
    "AllBlocksCleared": ["type"],
}


def flatten_vllm(batch_events, block_size, salt="kvarena-uid-0"):
    """Per-block records from events vllm_rules decoded; @salt the one
    expected (a root's client is in cache domain uid 0), or None."""
    out = []
    for ev in batch_events:
        tag = ev["type"]
        if tag == "BlockStored":
            hashes, parent, toks = (ev["block_hashes"],
                                    ev["parent_block_hash"], ev["token_ids"])
            bs = ev["block_size"]
            eq((bs, ev["lora_id"], ev["medium"], ev["lora_name"]),
               (block_size, None, "CPU", None), "BlockStored fields")
            if salt is None:
                eq(ev["extra_keys"], None, "no salt, no extra keys")
            else:
                eq(len(ev["extra_keys"]), len(hashes))
                eq(ev["extra_keys"][0], [salt] if parent is None else None,
                   "the cache salt of the chain's first block")
            for i, h in enumerate(hashes):
                out.append(("stored", h, parent if i == 0 else hashes[i - 1],
                            tuple(toks[i * bs:(i + 1) * bs])))
        elif tag == "BlockRemoved":
            eq(ev["medium"], "CPU", "BlockRemoved fields")
            out.extend(("removed", h) for h in ev["block_hashes"])
        else:
            out.append(("cleared",))
    return out


class Subscriber(threading.Thread):
    """A vLLM KV-event subscriber: SUB on the endpoint, DEALER on the
    replay endpoint, sequence numbers checked, gaps filled by replay.
    Stops after an AllBlocksCleared."""

    def __init__(self, endpoint, replay, topic, bind=True, salted=True):
        super().__init__(daemon=True)
        self.salted = salted
        ctx = zmq.Context.instance()
        self.sub = ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, topic)
        if bind:
            self.sub.bind(endpoint)        # kvarenactl connects (vLLM's rule)
        else:
            self.sub.connect(endpoint)     # kvarenactl binds a wildcard
        self.rep = ctx.socket(zmq.DEALER)
        self.rep.connect(replay)
        self.topic = topic
        self.next = 0                       # the next sequence number wanted
        self.batches = []                   # decoded, in sequence order
        self.replays = 0
        self.error = None
        self.done = threading.Event()

    def take(self, seq, payload):
        if seq < self.next:
            return                          # had it already
        if seq > self.next:
            raise AssertionError("seq %d after %d" % (seq, self.next - 1))
        ts, rank, events = vllm_rules.decode("vllm", payload)
        eq(rank, 0, "data_parallel_rank")
        raw = msgpack.unpackb(payload, raw=False)[1]
        eq([list(ev) for ev in raw],
           [[k for k in _KEYS[ev["type"]] if self.salted or
             k not in ("extra_keys", "cache_salt")] for ev in raw],
           "the events' keys, in order")
        self.batches.append([ts, events])
        self.next += 1
        if any(ev["type"] == "AllBlocksCleared" for ev in events):
            self.done.set()

    def replay(self):
        self.replays += 1
        self.rep.send_multipart([b"", self.next.to_bytes(8, "big")])
        while True:
            if not self.rep.poll(20000):
                raise AssertionError("no answer from the replay socket")
            # Current vLLM's reply: ["", topic, seq, payload].
            empty, topic, seq, payload = self.rep.recv_multipart()
            eq(empty, b"")
            if seq == (-1).to_bytes(8, "big", signed=True):
                eq((topic, payload), (b"", b""))
                return
            eq(topic, self.topic)
            self.take(int.from_bytes(seq, "big"), payload)

    def run(self):
        try:
            while not self.done.is_set():
                if not self.sub.poll(200):
                    self.replay()           # quiet: ask for what we missed
                    continue
                topic, seq, payload = self.sub.recv_multipart()
                eq(topic, self.topic)
                eq(len(seq), 8)
                seq = int.from_bytes(seq, "big")
                if seq > self.next:
                    self.replay()           # the gap first
                self.take(seq, payload)
        except BaseException as e:
            self.error = e
            self.done.set()


def workload(name, keys, toks):
    """The run: a process publishes a 3-frame prefix (with its token ids)
    and exits; this one looks it up, publishes one frame again under a
    key that exists, lets go (all cached), then allocates the whole arena
    (3 reclaims), frees it and destroys the arena."""
    def publisher():
        a = kvarena.open(name, mode="device", label="ev-pub")
        s = a.seq(GEO, max_tokens=4096)
        s.grow(3 * T + 5)
        eq(s.publish(keys, tokens=toks), 3)
        os._exit(0)
    eq(in_child(publisher), 0)
    eq(wait_clients(name, 0), 0)
    with kvarena.open(name, mode="device", label="ev-main") as a:
        s = a.seq(GEO, max_tokens=4096)
        eq(s.attach_prefix(keys), 3)
        s2 = a.seq(GEO, max_tokens=4096)
        s2.grow(T)
        eq(s2.publish(keys[:1], tokens=toks[:T]), 0)   # EXISTED: no event
        s.free()
        s2.free()
        eq(kvarena.arena_stat(name).nr_cached, 3)
        h = a.alloc(8)
        eq(kvarena.arena_stat(name).cache_reclaims, 3)
        a.free(h)
    kvarena.destroy_arena(name)


@suite.test
def a_run_of_publishes_and_reclaims_is_every_event_everywhere():
    name = "evrun"
    toks = list(range(7000, 7000 + 3 * T))
    keys = kvarena.prefix_keys(GEO, toks, b"events-test")
    new_arena(name)
    ev = kvarena.events(name, oldest=True)
    js = subprocess.Popen([KVARENACTL, "events", name, "--oldest"],
                          stdout=subprocess.PIPE, text=True)
    topic = b"kv@vm@test"
    sub = Subscriber("tcp://127.0.0.1:5557", "tcp://127.0.0.1:5558", topic)
    sub.start()
    zp = subprocess.Popen([KVARENACTL, "events", name, "--oldest",
                           "--zmq", "tcp://127.0.0.1:5557",
                           "--replay", "tcp://127.0.0.1:5558",
                           "--topic", topic.decode()])
    wait_for_events_fd(js)
    wait_for_events_fd(zp)
    workload(name, keys, toks)

    # The module's own account.
    got = list(ev)
    ev.close()
    eq([e.type for e in got],
       ["stored"] * 3 + ["removed"] * 3 + ["cleared"])
    eq([e.seq for e in got], list(range(1, 8)))
    eq([e.key for e in got[:3]], keys)
    eq([e.parent for e in got[:3]], [None, keys[0], keys[1]])
    eq([e.tokens for e in got[:3]],
       [tuple(toks[i * T:(i + 1) * T]) for i in range(3)])
    eq(sorted(e.key for e in got[3:6]), sorted(keys))
    assert len({e.client_id for e in got[:3]}) == 1 and got[0].client_id
    want = flatten_module(got)

    # kvarenactl events: one JSON line per event, the same ones.
    out, _ = js.communicate(timeout=60)
    eq(js.returncode, 0)
    lines = [json.loads(x) for x in out.splitlines()]
    eq([x["seq"] for x in lines], list(range(1, 8)))
    eq([x["type"] for x in lines], ["BlockStored"] * 3 +
       ["BlockRemoved"] * 3 + ["AllBlocksCleared"])
    eq([x["key"] for x in lines[:6]], [e.key.hex() for e in got[:6]])
    eq([x["block_hashes"] for x in lines[:6]],
       [[kvev_hash.block_hash(e.key, e.domain)] for e in got[:6]])
    eq([x["cache_salt"] for x in lines[:6]], ["kvarena-uid-0"] * 6)
    eq(lines[1]["parent_block_hash"],
       kvev_hash.block_hash(keys[0], got[0].domain))
    eq((lines[0]["parent_block_hash"], lines[0]["block_size"]), (None, T))
    eq(lines[2]["token_ids"], toks[2 * T:])

    # kvarenactl events --zmq: vLLM's wire format, every event, in order.
    assert sub.done.wait(60), "the subscriber saw no AllBlocksCleared"
    assert sub.error is None, repr(sub.error)
    eq(zp.wait(timeout=60), 0)
    flat = [r for b in sub.batches for r in flatten_vllm(b[1], T)]
    eq(flat, want, "the ZeroMQ stream against the module's events")
    print("# %d events in %d batches, %d replay requests" %
          (len(flat), len(sub.batches), sub.replays))


@suite.test
def a_bound_publisher_without_salt_sends_the_32_byte_keys():
    name = "evbind"
    toks = list(range(2 * T))
    keys = kvarena.prefix_keys(GEO, toks, b"bind")
    new_arena(name)
    zp = subprocess.Popen([KVARENACTL, "events", name, "--oldest",
                           "--zmq", "tcp://*:5559",
                           "--replay", "tcp://*:5560", "--hashes", "bytes",
                           "--salt", "none"])
    wait_for_events_fd(zp)
    sub = Subscriber("tcp://127.0.0.1:5559", "tcp://127.0.0.1:5560", b"",
                     bind=False, salted=False)
    sub.start()
    with kvarena.open(name, mode="device") as a:
        s = a.seq(GEO, max_tokens=2 * T)
        s.grow(2 * T)
        eq(s.publish(keys, tokens=toks), 2)
        s.free()
    kvarena.destroy_arena(name)
    assert sub.done.wait(60), "the subscriber saw no AllBlocksCleared"
    assert sub.error is None, repr(sub.error)
    eq(zp.wait(timeout=60), 0)
    flat = [r for b in sub.batches for r in flatten_vllm(b[1], T, None)]
    # --salt none: the keys as they are.
    eq(flat, [("stored", keys[0], None, tuple(toks[:T])),
              ("stored", keys[1], keys[0], tuple(toks[T:])),
              ("cleared",)])


@suite.test
def a_reader_that_falls_behind_is_told_how_many_it_lost():
    eq(open("/sys/module/kvarena/parameters/events_ring_kib").read().strip(),
       "64")
    name = "evlost"
    new_arena(name)
    ev = kvarena.events(name, oldest=True)
    # kvarenactl too, stopped while the burst runs.
    js = subprocess.Popen([KVARENACTL, "events", name],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    wait_for_events_fd(js)
    js.send_signal(signal.SIGSTOP)
    total = event_burst(name, GEO, "ev-burst")
    # 160 records of 1136 or 112 bytes: more than 64 KiB keep.
    got = ev.read(timeout=5)
    eq(got[0].type, "lost")
    eq(got[0].seq, 1)
    assert got[0].lost > 0
    eq([e.seq for e in got[1:]], list(range(got[0].lost + 1, total + 1)))
    eq(got[0].lost + len(got) - 1, total)
    # kvarenactl says so too: a "Lost" line and a warning, then the rest.
    js.send_signal(signal.SIGCONT)
    kvarena.destroy_arena(name)
    out, err = js.communicate(timeout=60)
    eq(js.returncode, 0)
    lines = [json.loads(x) for x in out.splitlines()]
    eq((lines[0]["type"], lines[0]["seq"], lines[0]["lost"]),
       ("Lost", 1, got[0].lost))
    eq([x["seq"] for x in lines[1:]],
       list(range(got[0].lost + 1, total + 2)))     # and the CLEARED
    assert "were lost" in err, err
    ev.close()


class _Policy(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 32), ("owner_uid", ctypes.c_uint32),
                ("owner_gid", ctypes.c_uint32), ("mode", ctypes.c_uint32),
                ("client_min_limit", ctypes.c_uint32),
                ("client_max_default", ctypes.c_uint32),
                ("client_max_limit", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("reserved0", ctypes.c_uint32),
                ("reserved", ctypes.c_uint64 * 2)]


@suite.test
def events_are_for_those_who_may_view_the_arena():
    name = "evprivate"
    new_arena(name)
    p = _Policy(name=name.encode(), owner_uid=0, owner_gid=0, mode=0o600)
    fd = os.open("/dev/kvarena", os.O_RDWR)
    fcntl.ioctl(fd, (3 << 30) | (ctypes.sizeof(p) << 16) | (ord("K") << 8) |
                0x0E, p, True)
    os.close(fd)

    def stranger():
        os.setgroups([])
        os.setgid(1001)
        os.setuid(1001)
        with _uapi.Device() as d:     # may open the node: mode 0666 here
            expect_error(errno.EACCES, d.events_fd, name)
    os.chmod("/dev/kvarena", 0o666)
    try:
        eq(in_child(stranger), 0)
    finally:
        os.chmod("/dev/kvarena", 0o660)
    with kvarena.events(name) as ev:      # root may
        kvarena.destroy_arena(name)
        eq([e.type for e in ev], ["cleared"])


@suite.test
def the_descriptor_reads_whole_records_and_keeps_its_rules():
    name = "evrules"
    new_arena(name)
    with _uapi.Device() as d:
        expect_error(errno.ENOENT, d.events_fd, "no-such-arena")
        a = _uapi.EventsFdArg(name=name.encode(), flags=4)
        expect_error(errno.EINVAL, _uapi._ioctl, d.fd, _uapi.IOC_EVENTS_FD,
                     a, "EVENTS_FD")
        a = _uapi.EventsFdArg(name=name.encode())
        a.reserved[1] = 1
        expect_error(errno.EINVAL, _uapi._ioctl, d.fd, _uapi.IOC_EVENTS_FD,
                     a, "EVENTS_FD")
        fd = d.events_fd(name, nonblock=True)
    assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    expect_error(errno.EAGAIN, os.read, fd, 4096)
    eq(select.select([fd], [], [], 0)[0], [])
    toks = list(range(T))
    keys = kvarena.prefix_keys(GEO, toks, b"rules")
    with kvarena.open(name, mode="device") as a:
        s = a.seq(GEO, max_tokens=T)
        s.grow(T)
        eq(s.publish(keys, tokens=toks), 1)
        eq(select.select([fd], [], [], 5)[0], [fd])
        size = ctypes.sizeof(_uapi.EventHeader) + 4 * T
        expect_error(errno.EINVAL, os.read, fd, size - 8)   # not even one
        buf = os.read(fd, size)
        eq(len(buf), size)
        s.free()
    kvarena.destroy_arena(name)
    buf = os.read(fd, 4096)
    eq(_uapi.EventHeader.from_buffer_copy(buf).type, _uapi.EVENT_CLEARED)
    eq(os.read(fd, 4096), b"")                               # end of file
    os.close(fd)


# PUBLISH's token fields, through raw commands.
class _Attach(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 32), ("label", ctypes.c_char * 32),
                ("min_frames", ctypes.c_uint32), ("max_frames", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("client_id", ctypes.c_uint32),
                ("nr_frames", ctypes.c_uint32), ("mem_kind", ctypes.c_uint32),
                ("frame_size", ctypes.c_uint64),
                ("bytes_per_token", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 2)]


class _Frames(ctypes.Structure):
    _fields_ = [("handles", ctypes.c_uint64), ("count", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("nr_done", ctypes.c_uint32),
                ("reserved0", ctypes.c_uint32), ("reserved", ctypes.c_uint64 * 2)]


class _Entry(ctypes.Structure):
    _fields_ = [("key", ctypes.c_uint8 * 32), ("handle", ctypes.c_uint64),
                ("flags", ctypes.c_uint32), ("reserved", ctypes.c_uint32)]


class _Prefix(ctypes.Structure):
    _fields_ = [("entries", ctypes.c_uint64), ("count", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("nr_done", ctypes.c_uint32),
                ("tokens_per_entry", ctypes.c_uint32),
                ("tokens", ctypes.c_uint64), ("reserved", ctypes.c_uint64)]


def _ioc(nr, st):
    return (3 << 30) | (ctypes.sizeof(st) << 16) | (ord("K") << 8) | nr


@suite.test
def publish_token_fields_are_checked():
    name = "evtokens"
    new_arena(name)
    fd = os.open("/dev/kvarena", os.O_RDWR)
    at = _Attach(name=name.encode(), label=b"raw")
    fcntl.ioctl(fd, _ioc(0x04, _Attach), at, True)
    h = (ctypes.c_uint64 * 1)()
    fr = _Frames(handles=ctypes.addressof(h), count=1)
    fcntl.ioctl(fd, _ioc(0x05, _Frames), fr, True)
    e = (_Entry * 1)()
    e[0].key[0] = 1
    e[0].handle = h[0]
    ids = (ctypes.c_uint32 * 8192)()

    def publish(flags, per, tokens, nr=0x0C):
        p = _Prefix(entries=ctypes.addressof(e), count=1, flags=flags,
                    tokens_per_entry=per, tokens=tokens)
        fcntl.ioctl(fd, _ioc(nr, _Prefix), p, True)
        return p.nr_done
    bad = [(1, 0, ctypes.addressof(ids)),        # no ids per entry
           (1, 4097, ctypes.addressof(ids)),     # past KVARENA_EVENT_MAX_TOKENS
           (0, 16, 0),                           # ids without the flag
           (0, 0, ctypes.addressof(ids)),
           (2, 0, 0)]                            # an unknown flag
    for args in bad:
        expect_error(errno.EINVAL, publish, *args)
    expect_error(errno.EFAULT, publish, 1, 16, 8)
    expect_error(errno.EINVAL, publish, 1, 16, ctypes.addressof(ids),
                 0x0D)                           # LOOKUP takes no ids
    eq(kvarena.arena_stat(name).nr_published, 0)
    ev = kvarena.events(name, oldest=True)
    eq(ev.read(timeout=0), [])                   # nothing happened
    for i in range(16):
        ids[i] = 100 + i
    eq(publish(1, 16, ctypes.addressof(ids)), 1)
    got = ev.read(timeout=5)
    eq([(g.type, g.tokens) for g in got],
       [("stored", tuple(range(100, 116)))])
    ev.close()
    os.close(fd)
    kvarena.destroy_arena(name)


suite.run()
