# SPDX-License-Identifier: MIT
"""Arenas, sequences and zero-copy views of their KV."""

import ctypes
import errno
import os
import weakref
from collections import namedtuple

from . import _dlpack
from . import _lib
from . import _uapi
from ._errors import Error, check, device_hint
from ._lib import call, lib

# enum kva_mode, kva_backend, kva_transport
_MODES = {"auto": 0, "device": 1, "embedded": 2}
_BACKENDS = {"host": 0, "cuda": 1}
_TRANSPORTS = {"auto": 0, "ioctl": 1, "uring": 2}

# KVA_OPEN_* flags
PREFAULT = 1 << 0
POPULATE = 1 << 1
HUGETLB = 1 << 2
PRIVATE = 1 << 3
NO_PROMOTE = 1 << 4

# kva_gang_token() flags
GANG_RANKS_FATAL = 1 << 0

# enum kva_dtype: name -> (value, bytes, DLPack (code, bits), typestr)
_DTYPES = {
    "fp32": (0, 4, (_dlpack.DL_FLOAT, 32), "<f4"),
    "fp16": (1, 2, (_dlpack.DL_FLOAT, 16), "<f2"),
    # numpy has no bfloat16: the array interface shows the raw bits.
    "bf16": (2, 2, (_dlpack.DL_BFLOAT, 16), "<u2"),
    # E4M3 codes, as bytes everywhere: a value is the code's times the
    # caller's scale of its (layer, K|V, head), and DLPack's float8 codes
    # are newer than the consumers Debian ships (torch 1.13).
    "fp8": (3, 1, (_dlpack.DL_UINT, 8), "|u1"),
}
_DTYPE_NAMES = {v[0]: k for k, v in _DTYPES.items()}

K = 0
V = 1


def _pick(table, value, what):
    if isinstance(value, int) and value in table.values():
        return value
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError("%s must be one of %s, not %r" %
                         (what, ", ".join(table), value)) from None


def _cstr(s):
    return None if s is None else s.encode()


class Geometry:
    """A model's KV geometry in frames of frame_size bytes.

    layers, kv_heads, head_dim and dtype ("fp32", "fp16", "bf16", "fp8")
    describe
    the model; tokens_per_frame, bytes_per_token and head_stride follow
    from them as <kvarena/layout.h> says.  A geometry that does not work
    raises ValueError with libkvarena's explanation.
    """

    def __init__(self, layers, kv_heads, head_dim, dtype="fp16",
                 frame_size=2 << 20):
        dt = _pick({k: v[0] for k, v in _DTYPES.items()}, dtype, "dtype")
        self._c = _lib.Geometry(layers=layers, kv_heads=kv_heads,
                                head_dim=head_dim, dtype=dt,
                                frame_size=frame_size)
        buf = ctypes.create_string_buffer(256)
        ret = lib.kva_geometry_explain(ctypes.byref(self._c), buf, 256)
        if ret < 0:
            raise ValueError(buf.value.decode())
        self.layers = layers
        self.kv_heads = kv_heads
        self.head_dim = head_dim
        self.dtype = _DTYPE_NAMES[dt]
        self.frame_size = frame_size
        self.dtype_size = _DTYPES[self.dtype][1]
        self.bytes_per_token = 2 * layers * kv_heads * head_dim * self.dtype_size
        self.tokens_per_frame = frame_size // self.bytes_per_token
        self.head_stride = self.tokens_per_frame * head_dim * self.dtype_size
        self.description = buf.value.decode()

    @classmethod
    def _from_c(cls, g):
        return cls(g.layers, g.kv_heads, g.head_dim, _DTYPE_NAMES[g.dtype],
                   g.frame_size)

    def kv_offset(self, layer, kv, head, token):
        """Byte offset of element 0 of (layer, K|V, head, token) from a
        sequence's base: kva_kv_offset()."""
        frame, t = divmod(token, self.tokens_per_frame)
        block = (layer * 2 + kv) * self.kv_heads + head
        return (frame * self.frame_size + block * self.head_stride +
                t * self.head_dim * self.dtype_size)

    def frames_for(self, tokens):
        return -(-tokens // self.tokens_per_frame)

    def __repr__(self):
        return ("Geometry(layers=%d, kv_heads=%d, head_dim=%d, dtype=%r, "
                "frame_size=%d)" % (self.layers, self.kv_heads, self.head_dim,
                                    self.dtype, self.frame_size))


ArenaInfo = namedtuple("ArenaInfo", "mode backend transport mode_reason name "
                       "frame_size nr_frames client_id mem_dev flags "
                       "backend_error mem_uuid domain transport_reason")


def _struct_tuple(name, cstruct):
    fields = [f for f, _ in cstruct._fields_ if not f.startswith("reserved")]
    t = namedtuple(name, fields)

    def make(c):
        vals = []
        for f in fields:
            v = getattr(c, f)
            if isinstance(v, bytes):
                v = v.decode(errors="replace")
            elif isinstance(v, ctypes.Array):
                v = bytes(v)
            vals.append(v)
        return t(*vals)
    t.make = staticmethod(make)
    return t


Stat = _struct_tuple("Stat", _lib.Stat)
ArenaStat = _struct_tuple("ArenaStat", _uapi.StatArg)
ClientInfo = _struct_tuple("ClientInfo", _uapi.ClientInfo)


class Arena:
    """This process's handle on one arena (kva_open()).

    Use kvarena.open() to make one, or kvarena.open_rank() for a rank of
    a gang (.rank is its rank then, None otherwise).  A gang's scheduler
    (open() of a gang) maps nothing: its sequences track frames for the
    ranks to map and have no views (EOPNOTSUPP).  Safe to share
    between threads: each call serialises on the library's lock.  close()
    (or leaving a with block) frees every sequence and returns every frame
    - once no view of their memory is left (see Seq.free()).
    """

    def __init__(self, ptr, opts, rank=None):
        self._p = ptr
        self._opts = opts          # keeps the option strings alive
        self.rank = rank
        # Seq objects not yet freed in C.  Weak: a sequence refers to its
        # arena, so the arena outlives every sequence without a cycle.
        self._seqs = weakref.WeakSet()
        self._want_close = False
        i = _lib.ArenaInfo()
        call("kva_arena_info", self._p, ctypes.byref(i))
        self.info = ArenaInfo(
            mode=lib.kva_mode_name(i.mode).decode(),
            backend=lib.kva_backend_name(i.backend).decode(),
            transport=lib.kva_transport_name(i.transport).decode(),
            mode_reason=(i.mode_reason or b"").decode(),
            name=i.name.decode(), frame_size=i.frame_size,
            nr_frames=i.nr_frames, client_id=i.client_id, mem_dev=i.mem_dev,
            flags=i.flags, backend_error=i.backend_error,
            mem_uuid=bytes(i.mem_uuid), domain=i.domain,
            transport_reason=(i.transport_reason or b"").decode())
        # A gang's scheduler maps nothing (its sequences only track
        # frames: the ranks map them), so its sequences have no views.
        # Asked now, while the token's flags are still the default.
        self._maps_nothing = False
        if rank is None and self.info.mode == "device" and \
                getattr(lib, "kva_gang_token", None) is not None:
            tok, n = _lib.c_u64(), _lib.c_u32()
            self._maps_nothing = lib.kva_gang_token(
                self._p, 0, ctypes.byref(tok), ctypes.byref(n)) == 0

    # -- the handle ----------------------------------------------------------

    def _ptr(self):
        if self._p is None or self._want_close:
            raise ValueError("the arena is closed")
        return self._p

    @property
    def closed(self):
        return self._p is None or self._want_close

    def close(self):
        """Free every sequence and detach.  Sequences with live views of
        their memory are freed, and the arena closed, when the last view
        goes."""
        if self._p is None or self._want_close:
            return
        self._want_close = True
        for s in list(self._seqs):
            s.free()
        self._maybe_close()

    def _maybe_close(self):
        if self._want_close and not self._seqs and self._p is not None:
            lib.kva_close(self._p)
            self._p = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # Only reached when no Seq (and so no view) refers to us.
        if getattr(self, "_p", None) is not None:
            lib.kva_close(self._p)
            self._p = None

    def __repr__(self):
        r = "" if self.rank is None else " rank %d of client %d" % (
            self.rank, self.info.client_id)
        return "<kvarena.Arena %s %s %r%s>" % (self.info.mode,
                                               self.info.backend,
                                               self.info.name, r)

    # -- accounting ------------------------------------------------------------

    def stat(self):
        """kva_stat(): the arena's totals and this handle's share."""
        s = _lib.Stat()
        call("kva_stat", self._ptr(), ctypes.byref(s))
        return Stat.make(s)

    def set_stream(self, stream):
        """kva_arena_set_stream(): order sequences' teardown with the
        engine's GPU work on @stream - a CUstream as an int, or an object
        with .cuda_stream (torch.cuda.Stream); None for the legacy stream.
        CUDA arenas only (EOPNOTSUPP on host ones)."""
        s = getattr(stream, "cuda_stream", stream)
        call("kva_arena_set_stream", self._ptr(), s or None)

    def sync(self):
        """kva_arena_sync(): wait for the teardowns left to the arena's
        thread (set_stream())."""
        call("kva_arena_sync", self._ptr())

    def sync_usage(self):
        """kva_sync_usage(): report filled tokens and bytes (SET_USAGE)."""
        call("kva_sync_usage", self._ptr())

    def clients(self):
        """The arena's client table.  Device mode: the module's CLIENTS,
        every client of the arena (this one included).  Embedded: one row,
        this handle, from kva_stat()."""
        if self.info.mode == "device":
            with _uapi.Device(self._opts.device and self._opts.device.decode()) as d:
                return [ClientInfo.make(c) for c in d.clients(self.info.name)]
        s = self.stat()
        return [ClientInfo(client_id=0, pid=os.getpid(),
                           label=(self._opts.label or b"").decode(),
                           min_frames=0, max_frames=s.nr_frames, held=s.held,
                           shared=0, peak=0, uid=os.geteuid(),
                           filled_bytes=s.my_filled_bytes,
                           filled_tokens=s.my_filled_tokens,
                           alloc_calls=s.alloc_calls, free_calls=s.free_calls,
                           alloc_failures=0, charged=s.held, dmem_refused=0,
                           domain=0)]

    # -- raw frames --------------------------------------------------------------

    def alloc(self, count, partial=False):
        """kva_alloc(): @count frames outside any sequence; their handles."""
        h = (_lib.c_u64 * max(count, 1))()
        n = call("kva_alloc", self._ptr(), h, count, 1 if partial else 0)
        return list(h[:n])

    def free(self, handles):
        """kva_free(): return frames taken with alloc(), all or nothing."""
        h = (_lib.c_u64 * max(len(handles), 1))(*handles)
        call("kva_free", self._ptr(), h, len(handles))

    # -- gangs -------------------------------------------------------------------

    def gang_token(self, ranks_fatal=False):
        """kva_gang_token(): (token, nr_members) - the secret the gang's
        rank processes give kvarena.open_rank() with this handle's
        info.client_id, and the gang's members (its ranks).  The token is
        the same for the handle's life.  @ranks_fatal: from now on a
        rank's death evicts this client (every frame back, every rank's
        mapping gone); the last call's choice holds.  A handle of a gang
        (the scheduler's) only: EOPNOTSUPP for another arena, EPERM for a
        rank."""
        tok = _lib.c_u64()
        n = _lib.c_u32()
        call("kva_gang_token", self._ptr(),
             GANG_RANKS_FATAL if ranks_fatal else 0, ctypes.byref(tok),
             ctypes.byref(n))
        return tok.value, n.value

    # -- sequences -----------------------------------------------------------------

    def seq(self, geometry, max_tokens):
        """kva_seq_create(): a sequence of up to @max_tokens tokens."""
        if not isinstance(geometry, Geometry):
            raise TypeError("geometry must be a kvarena.Geometry")
        p = _lib.SeqP()
        call("kva_seq_create", self._ptr(), ctypes.byref(geometry._c),
             max_tokens, ctypes.byref(p))
        return Seq(self, p)

    def grow(self, reqs):
        """kva_seq_grow_batch(): grow several sequences in one frame
        operation, all or nothing.  @reqs: (seq, tokens) or (seq, tokens,
        ahead) tuples."""
        arr = (_lib.Grow * max(len(reqs), 1))()
        for i, r in enumerate(reqs):
            s, n = r[0], r[1]
            if s._arena is not self:
                raise ValueError("a sequence of another arena")
            arr[i].seq = s._ptr()
            arr[i].tokens = n
            arr[i].ahead = r[2] if len(r) > 2 else 0
        call("kva_seq_grow_batch", self._ptr(), arr, len(reqs))


def open(name=None, *, mode="auto", label=None, device=None, min_frames=0,
         max_frames=0, nr_frames=0, frame_size=2 << 20, backend="host",
         mem_dev=0, transport="auto", cuda_library=None, prefault=False,
         populate=False, hugetlb=False, private=False):
    """kva_open(): attach to arena @name of /dev/kvarena (device mode), or
    make an embedded in-process arena of @nr_frames frames of @frame_size
    bytes.  mode "auto" honours $KVA_MODE, then takes the device if its node
    exists.  private: a cache domain of this handle's own (device mode):
    its prefixes are shared with no other client.  Raises kvarena.Error
    with the errno kva_open() gave."""
    o = _lib.OpenOpts()
    o.mode = _pick(_MODES, mode, "mode")
    o.flags = ((PREFAULT if prefault else 0) | (POPULATE if populate else 0) |
               (HUGETLB if hugetlb else 0) | (PRIVATE if private else 0))
    o.name = _cstr(name)
    o.label = _cstr(label)
    o.device = _cstr(device)
    o.min_frames = min_frames
    o.max_frames = max_frames
    o.nr_frames = nr_frames
    o.mem_kind = _pick(_BACKENDS, backend, "backend")
    o.frame_size = frame_size
    o.mem_dev = mem_dev
    o.transport = _pick(_TRANSPORTS, transport, "transport")
    o.cuda_library = _cstr(cuda_library)
    p = _lib.ArenaP()
    try:
        call("kva_open", ctypes.byref(o), ctypes.byref(p))
    except Error as e:
        hint = device_hint(e.errno, device) if mode != "embedded" else None
        if hint:
            raise Error(e.errno, "kva_open", hint) from None
        raise
    return Arena(p, o)


def open_rank(name, client_id, rank, token, label=None, device=None,
              populate=False, cuda_library=None):
    """kva_rank_open(): open gang @name as rank @rank of the scheduler's
    client @client_id (its info.client_id), with the scheduler's
    gang_token() @token.  The handle takes no frames: its sequences map,
    in member @rank, the frames the client holds, through Seq.mirror().
    alloc(), free(), grow() past the mapped frames, fork() and publishing
    raise EPERM.  ENOENT for a client id, token or rank that does not
    match.  A CUDA member's GPU is found by its UUID; @cuda_library as for
    open()."""
    o = _lib.RankOpts()
    o.name = _cstr(name)
    o.label = _cstr(label)
    o.device = _cstr(device)
    o.client_id = client_id
    o.rank = rank
    o.token = token
    o.flags = POPULATE if populate else 0
    o.cuda_library = _cstr(cuda_library)
    p = _lib.ArenaP()
    call("kva_rank_open", ctypes.byref(o), ctypes.byref(p))
    return Arena(p, o, rank=rank)


class Seq:
    """One sequence: a contiguous virtual KV range (struct kva_seq).

    Views of its memory (layer(), kv()) keep it mapped: free() of a
    sequence with live views - a KVTensor, a numpy array or torch tensor
    made from one - only marks it freed, and the frames go back when the
    last view does.  Writes follow libkvarena's copy-on-write contract:
    write token t only after a grow covered it, and only once.
    """

    def __init__(self, arena, ptr):
        self._arena = arena
        self._p = ptr
        self._pins = 0             # live KVTensor views
        self._view_frames = {}     # id(view) -> frames it covers
        self._freed = False
        # Frames [0, _ro_frames) may be published (mapped read-only):
        # views over them are exported read-only.  Never lowered: a frame
        # a grow copied is writable again, and read-only is the safe guess.
        self._ro_frames = 0
        arena._seqs.add(self)

    def _ptr(self):
        if self._freed:
            raise ValueError("the sequence is freed")
        return self._p

    @property
    def _c(self):
        return self._ptr().contents

    @property
    def arena(self):
        return self._arena

    @property
    def tokens(self):
        """Tokens filled."""
        return self._c.tokens

    @property
    def room(self):
        """Tokens reachable without mapping another frame."""
        return self._c.room

    @property
    def max_tokens(self):
        return self._c.max_tokens

    @property
    def base(self):
        """Start of the range: a host address, or a CUdeviceptr."""
        return self._c.base

    @property
    def geometry(self):
        return Geometry._from_c(self._c.geo)

    @property
    def freed(self):
        return self._freed

    def grow(self, n, ahead=0):
        """kva_seq_grow(): add @n tokens, mapping frames as needed (and
        @ahead tokens of room beyond them)."""
        c = self._c
        if not ahead and n <= c.room - c.tokens:
            c.tokens += n          # the inline fast path
            return
        if ahead:
            self._arena.grow([(self, n, ahead)])
        else:
            call("kva_seq_grow_slow", self._p, n)

    def shrink(self, tokens):
        """kva_seq_shrink(): cut back to @tokens tokens, returning frames
        past the last one.  BufferError if a live view covers them."""
        c = self._c
        g = c.geo
        keep = max(-(-tokens // g.tokens_per_frame), 0)
        if self._view_frames and max(self._view_frames.values()) > keep:
            raise BufferError("a view of this sequence covers frames the "
                              "shrink would unmap")
        call("kva_seq_shrink", self._p, tokens)

    def fork(self):
        """kva_seq_fork(): a new sequence sharing this one's frames."""
        p = _lib.SeqP()
        call("kva_seq_fork", self._ptr(), ctypes.byref(p))
        child = Seq(self._arena, p)
        child._ro_frames = self._ro_frames
        return child

    def handles(self):
        """kva_seq_handles(): the frames mapped behind the range, in order."""
        n = call("kva_seq_handles", self._ptr(), None, 0)
        h = (_lib.c_u64 * max(n, 1))()
        n = call("kva_seq_handles", self._p, h, n)
        return list(h[:n])

    def mirror(self, handles, tokens):
        """kva_seq_mirror(): make this sequence of a rank (open_rank())
        map exactly @handles - the scheduler's block table of the request,
        frames its client holds - as its frames 0..len-1, with @tokens
        tokens filled.  Slots that keep their handle stay mapped; the
        others are mapped anew (a frame the client published read-only:
        a store through a view of it faults) and slots past the table
        unmapped.  BufferError if a live view covers a slot that would
        change.  On an error the slots from the first change on may be
        unmapped: mirror again.  ENOLINK once the client is gone;
        EOPNOTSUPP for a sequence of an arena that is not a rank."""
        handles = list(handles)
        p = self._ptr()
        if self._view_frames:
            old = self.handles()
            first = 0
            while (first < len(old) and first < len(handles) and
                   old[first] == handles[first]):
                first += 1
            if max(self._view_frames.values()) > first:
                raise BufferError("a view of this sequence covers frames "
                                  "the mirror would change")
        h = (_lib.c_u64 * max(len(handles), 1))(*handles)
        call("kva_seq_mirror", p, h, len(handles), tokens)

    def free(self):
        """kva_seq_free(), now or when the last view of it goes."""
        if self._freed:
            return
        self._freed = True
        self._maybe_free()

    def _maybe_free(self):
        if self._freed and not self._pins and self._p is not None:
            # An arena already closed took its sequences with it: at
            # interpreter exit the garbage collector may finalize the
            # arena before the last view of one of them.
            if self._arena._p is not None:
                lib.kva_seq_free(self._p)
            self._p = None
            self._arena._seqs.discard(self)
            self._arena._maybe_close()

    def _pin(self, view, frames):
        self._pins += 1
        self._view_frames[id(view)] = frames

    def _unpin(self, view):
        self._pins -= 1
        self._view_frames.pop(id(view), None)
        self._maybe_free()

    def __del__(self):
        # Unreachable, so no view is left: give the frames back now.
        if getattr(self, "_p", None) is not None and self._arena._p is not None:
            lib.kva_seq_free(self._p)
            self._p = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self):
        if self._freed:
            return "<kvarena.Seq freed>"
        return "<kvarena.Seq tokens=%d room=%d max=%d>" % (
            self.tokens, self.room, self.max_tokens)

    # -- the memory ------------------------------------------------------------

    def kv_addr(self, layer, kv, head, token):
        """kva_seq_kv_addr(): address of element 0 of (layer, K|V, head,
        token)."""
        c = self._c
        return c.base + Geometry._from_c(c.geo).kv_offset(layer, kv, head, token)

    def kv(self, layer, kv, tokens=None):
        """A zero-copy view of the K (@kv 0) or V (@kv 1) cache of @layer
        over the frames holding the first @tokens tokens (default: all).
        EOPNOTSUPP for a sequence of a gang's scheduler: its range is
        reserved, not memory (the ranks map the frames)."""
        c = self._c
        g = c.geo
        if self._arena._maps_nothing:
            raise Error(errno.EOPNOTSUPP, "a view of a gang scheduler's "
                        "sequence")
        if not 0 <= layer < g.layers:
            raise IndexError("layer %d of %d" % (layer, g.layers))
        if kv not in (K, V):
            raise ValueError("kv must be kvarena.K or kvarena.V")
        if tokens is None:
            tokens = c.tokens
        if not 0 <= tokens <= c.tokens:
            raise ValueError("tokens %d: the sequence has %d" % (tokens, c.tokens))
        return KVTensor(self, layer, kv, tokens)

    def layer(self, layer, tokens=None):
        """Layer(k, v): both views of @layer."""
        return Layer(self.kv(layer, K, tokens), self.kv(layer, V, tokens))

    # -- prefix sharing ------------------------------------------------------

    def publish(self, keys, tokens=None):
        """kva_seq_publish(): put the first len(@keys) frames (full ones)
        under @keys (prefix_keys()).  With @tokens - the token ids those
        frames hold - kva_seq_publish_tokens(), which passes them on to
        the arena's KV events (device mode).  Returns the number of frames
        newly published; a key another frame has already keeps that one."""
        k = _keys(keys)
        if tokens is None:
            n = call("kva_seq_publish", self._ptr(), k, len(keys))
        else:
            T = self._c.geo.tokens_per_frame
            if len(tokens) != len(keys) * T:
                raise ValueError("tokens: %d ids for %d frames of %d tokens" %
                                 (len(tokens), len(keys), T))
            t = (_lib.c_u32 * max(len(tokens), 1))(*tokens)
            n = call("kva_seq_publish_tokens", self._ptr(), k, len(keys), t)
        self._ro_frames = max(self._ro_frames, len(keys))
        return n

    def attach_prefix(self, keys):
        """kva_seq_attach_prefix(): map the frames of the longest leading
        run of @keys published in the arena - by any process - at the start
        of this empty sequence, read-only.  Returns how many were found;
        the sequence then holds that many frames' tokens."""
        n = call("kva_seq_attach_prefix", self._ptr(), _keys(keys),
                 len(keys))
        self._ro_frames = max(self._ro_frames, n)
        return n


Layer = namedtuple("Layer", "k v")


def _keys(keys):
    arr = (_lib.Key * max(len(keys), 1))()
    for i, k in enumerate(keys):
        if len(k) != _lib.KEY_LEN:
            raise ValueError("a key is %d bytes, not %d" % (_lib.KEY_LEN, len(k)))
        ctypes.memmove(arr[i].b, bytes(k), _lib.KEY_LEN)
    return arr


def prefix_keys(geometry, tokens, namespace=b""):
    """kva_prefix_keys(): the key chain (32-byte keys, one per full frame)
    of the token ids @tokens in @geometry's frames, under @namespace (bytes
    naming the model, tokenizer, adapter...).  Any program computes the
    same keys (lib/include/kvarena.h has the formula)."""
    if not isinstance(geometry, Geometry):
        raise TypeError("geometry must be a kvarena.Geometry")
    ns = bytes(namespace)
    t = (_lib.c_u32 * max(len(tokens), 1))(*tokens)
    nmax = len(tokens) // geometry.tokens_per_frame
    out = (_lib.Key * max(nmax, 1))()
    n = call("kva_prefix_keys", ctypes.byref(geometry._c), ns or None,
             len(ns), t, len(tokens), out, nmax)
    return [bytes(out[i].b) for i in range(n)]


# -- KV events (device mode) ---------------------------------------------------

Event = namedtuple("Event", "type seq time_ns lost client_id frame key "
                   "parent tokens domain", defaults=(None,))
Event.__doc__ = """One KV event of an arena (struct kvarena_event).

type: "stored" (a frame published under key), "removed" (a cached frame
reclaimed), "cleared" (the arena destroyed), or "lost" (this reader missed
@lost events).  key and parent are 32 bytes (parent None when the frame
was the first of its PUBLISH); tokens the token ids the publisher gave;
domain the cache domain of key (stored and removed; None otherwise).
block_hash() is the key as vLLM's integer block hash."""
Event.block_hash = property(lambda e: int.from_bytes(e.key[-8:], "big")
                            if e.key else None)

_EVENT_TYPES = {_uapi.EVENT_STORED: "stored", _uapi.EVENT_REMOVED: "removed",
                _uapi.EVENT_CLEARED: "cleared", _uapi.EVENT_LOST: "lost"}


class Events:
    """The KV events of one arena of the module, read in order
    (KVARENA_IOC_EVENTS_FD), for whoever may view the arena.

    read(timeout) returns the events ready (waiting up to @timeout
    seconds, None: for ever), [] on timeout; iterating yields events until
    the arena is destroyed (after its "cleared" event)."""

    BUF = 256 << 10

    def __init__(self, name, oldest=False, device=None):
        with _uapi.Device(device) as d:
            self.fd = d.events_fd(name, oldest=oldest)
        self.name = name
        self.eof = False

    def fileno(self):
        return self.fd

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "fd", -1) >= 0:
            os.close(self.fd)

    def read(self, timeout=None):
        import select
        if self.eof:
            return []
        if timeout is not None:
            r, _, _ = select.select([self.fd], [], [], timeout)
            if not r:
                return []
        try:
            buf = os.read(self.fd, self.BUF)
        except OSError as e:
            raise Error(e.errno, "read of events") from None
        if not buf:
            self.eof = True
        return list(_parse_events(buf))

    def __iter__(self):
        while not self.eof:
            yield from self.read()


def _parse_events(buf):
    hdr = ctypes.sizeof(_uapi.EventHeader)
    off = 0
    while off < len(buf):
        h = _uapi.EventHeader.from_buffer_copy(buf, off)
        if h.size < hdr or off + h.size > len(buf):
            raise Error(errno.EPROTO, "a malformed event record")
        toks = tuple(memoryview(buf)[off + hdr:off + hdr + 4 * h.nr_tokens]
                     .cast("I")) if h.nr_tokens else ()
        key = bytes(h.key) if h.type in (_uapi.EVENT_STORED,
                                         _uapi.EVENT_REMOVED) else None
        parent = (bytes(h.parent) if h.flags & _uapi.EVENT_PARENT else None)
        # The header's lost is a stored or removed event's domain.
        lost = h.lost if h.type == _uapi.EVENT_LOST else 0
        domain = h.lost if key is not None else None
        yield Event(_EVENT_TYPES.get(h.type, str(h.type)), h.seq, h.time_ns,
                    lost, h.client_id, h.frame, key, parent, toks, domain)
        off += h.size


def events(name, oldest=False, device=None):
    """Events(name): read arena @name's KV events from the module."""
    return Events(name, oldest=oldest, device=device)


class KVTensor:
    """A zero-copy view of one layer's K or V cache of a sequence.

    Shape (frames, kv_heads, tokens_per_frame, head_dim): the frame layout
    puts each frame's tokens of one (layer, K|V, head) in a block, so the
    view is a strided 4-D tensor over the sequence's range, with
    frame_size / dtype_size elements between frames.  Token t is at
    [t // T_f, :, t % T_f, :]; tokens past .tokens in the last frame are
    not the sequence's.  Exported through DLPack (__dlpack__: CPU for host
    arenas, CUDA for CUDA arenas) and the array interfaces
    (__array_interface__ / __cuda_array_interface__, version 3).  A view
    that covers published frames (Seq.publish(), Seq.attach_prefix()) is
    .readonly: those are mapped read-only, and the array interfaces say
    so; DLPack cannot, so a store into one through torch faults.
    """

    def __init__(self, seq, layer, kv, tokens):
        c = seq._c
        g = c.geo
        dt = _DTYPE_NAMES[g.dtype]
        _, self.itemsize, self._dl_dtype, self.typestr = _DTYPES[dt]
        frames = -(-tokens // g.tokens_per_frame)
        self.seq = seq
        self.layer = layer
        self.kv = kv
        self.tokens = tokens
        self.dtype = dt
        self.shape = (frames, g.kv_heads, g.tokens_per_frame, g.head_dim)
        es = self.itemsize
        self.strides = (g.frame_size // es, g.head_stride // es, g.head_dim, 1)
        self.data = c.base + (layer * 2 + kv) * g.kv_heads * g.head_stride
        # Published frames are mapped read-only: say so to numpy.
        self.readonly = frames > 0 and seq._ro_frames > 0
        cuda = seq._arena.info.backend == "cuda"
        self.device = ((_dlpack.DL_CUDA if cuda else _dlpack.DL_CPU),
                       seq._arena.info.mem_dev if cuda else 0)
        seq._pin(self, frames)

    def __del__(self):
        seq = getattr(self, "seq", None)
        if seq is not None:
            seq._unpin(self)

    def __repr__(self):
        return "<kvarena.KVTensor layer %d %s %s shape=%r>" % (
            self.layer, "KV"[self.kv], self.dtype, self.shape)

    # DLPack
    def __dlpack__(self, stream=None):
        # Nothing of ours is in flight on any stream: no synchronisation.
        return _dlpack.capsule(self, self.data, self.device, self._dl_dtype,
                               self.shape, self.strides)

    def __dlpack_device__(self):
        return self.device

    # The array interfaces (numpy, numba, cupy)
    def _interface(self):
        return {
            "shape": self.shape,
            "typestr": self.typestr,
            "data": (self.data, self.readonly),
            "strides": tuple(s * self.itemsize for s in self.strides),
            "version": 3,
        }

    @property
    def __array_interface__(self):
        if self.device[0] != _dlpack.DL_CPU:
            raise AttributeError("a CUDA arena's memory has no "
                                 "__array_interface__; use "
                                 "__cuda_array_interface__ or DLPack")
        return self._interface()

    @property
    def __cuda_array_interface__(self):
        if self.device[0] != _dlpack.DL_CUDA:
            raise AttributeError("a host arena's memory has no "
                                 "__cuda_array_interface__")
        d = self._interface()
        d["stream"] = None
        return d


# -- the module, as an administrator or operator sees it -------------------------

def create_arena(name, nr_frames, frame_size=2 << 20, backend="host",
                 mem_dev=0, low_watermark=0, bytes_per_token=0,
                 prefault=False, hugetlb=False, device=None,
                 cuda_library=None):
    """kva_arena_create(): a new arena in the module and its memory
    (CAP_SYS_ADMIN)."""
    p = _lib.ArenaParams()
    p.name = _cstr(name)
    p.nr_frames = nr_frames
    p.mem_kind = _pick(_BACKENDS, backend, "backend")
    p.frame_size = frame_size
    p.mem_dev = mem_dev
    p.low_watermark = low_watermark
    p.bytes_per_token = bytes_per_token
    p.flags = (PREFAULT if prefault else 0) | (HUGETLB if hugetlb else 0)
    p.device = _cstr(device)
    p.cuda_library = _cstr(cuda_library)
    call("kva_arena_create", ctypes.byref(p))


def gang_create(name, members, device=None):
    """GANG_CREATE: gang @name over the module's arenas @members, a list of
    2 to 16 names (member r holds rank r's memory: one GPU each, in the
    engine's rank order), which must be alike, free of clients and fully
    backed (CAP_SYS_ADMIN).  The gang is then an arena: open() it as the
    scheduler, open_rank() it as a rank; destroy_arena() of the gang sets
    the members free again.  libkvarena has no call for it: the module's
    ioctl, on a read-write open of the device."""
    members = list(members)
    if not 2 <= len(members) <= _uapi.GANG_MAX:
        raise ValueError("a gang has 2 to %d members, not %d" %
                         (_uapi.GANG_MAX, len(members)))
    for m in [name] + members:
        _uapi._name_bytes(m)                # ValueError before the open
    with _uapi.Device(device, write=True) as d:
        d.gang_create(name, members)


def destroy_arena(name, device=None):
    """kva_arena_destroy(): EBUSY while clients are attached."""
    p = _lib.ArenaParams()
    p.name = _cstr(name)
    p.device = _cstr(device)
    call("kva_arena_destroy", ctypes.byref(p))


def arenas(device=None):
    """STAT of every arena of the module the caller may view (a read-only
    open of the device suffices)."""
    with _uapi.Device(device) as d:
        return [ArenaStat.make(s) for s in d.stats()]


def arena_stat(name, device=None):
    """The module's STAT of arena @name."""
    with _uapi.Device(device) as d:
        return ArenaStat.make(d.stat(name))


def arena_clients(name, device=None):
    """The module's CLIENTS of arena @name."""
    with _uapi.Device(device) as d:
        return [ClientInfo.make(c) for c in d.clients(name)]


def library_path():
    """The libkvarena file this package loaded."""
    return _lib.LIBRARY_PATH


_ = (Error, check)
