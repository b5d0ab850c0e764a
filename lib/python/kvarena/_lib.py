# SPDX-License-Identifier: MIT
"""libkvarena through ctypes: finding the library, its structs, its calls.

Every struct here mirrors lib/include/kvarena.h field for field (ctypes
lays them out as the C compiler does on the same ABI); the tests compare
their sizes and offsets with the C header's.
"""

import ctypes
import ctypes.util
import errno
import os

from ._errors import Error, check

c_u8 = ctypes.c_uint8
c_u32 = ctypes.c_uint32
c_i32 = ctypes.c_int32
c_u64 = ctypes.c_uint64
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p

SONAME = "libkvarena.so.1"


class OpenOpts(ctypes.Structure):
    """struct kva_open_opts"""
    _fields_ = [
        ("mode", c_u32),
        ("flags", c_u32),
        ("name", c_char_p),
        ("label", c_char_p),
        ("device", c_char_p),
        ("min_frames", c_u32),
        ("max_frames", c_u32),
        ("nr_frames", c_u32),
        ("mem_kind", c_u32),
        ("frame_size", c_u64),
        ("mem_dev", c_u32),
        ("transport", c_u32),
        ("cuda_library", c_char_p),
        ("promote_ms", c_u32),
        ("reserved0", c_u32),
        ("reserved", c_u64 * 3),
    ]


class ArenaInfo(ctypes.Structure):
    """struct kva_arena_info"""
    _fields_ = [
        ("mode", c_u32),
        ("backend", c_u32),
        ("transport", c_u32),
        ("flags", c_u32),
        ("mode_reason", c_char_p),
        ("name", ctypes.c_char * 32),
        ("frame_size", c_u64),
        ("nr_frames", c_u32),
        ("client_id", c_u32),
        ("mem_dev", c_u32),
        ("backend_error", c_i32),
        ("mem_uuid", ctypes.c_uint8 * 16),
        ("domain", c_u64),
        ("transport_reason", c_char_p),
    ]


class Stat(ctypes.Structure):
    """struct kva_stat"""
    _fields_ = [
        ("frame_size", c_u64),
        ("nr_frames", c_u32),
        ("nr_free", c_u32),
        ("nr_held", c_u32),
        ("nr_clients", c_u32),
        ("filled_tokens", c_u64),
        ("filled_bytes", c_u64),
        ("alloc_calls", c_u64),
        ("free_calls", c_u64),
        ("held", c_u32),
        ("nr_seqs", c_u32),
        ("seq_tokens", c_u64),
        ("my_filled_tokens", c_u64),
        ("my_filled_bytes", c_u64),
        ("nr_cached", c_u32),
        ("nr_published", c_u32),
        ("cache_hits", c_u64),
        ("cache_misses", c_u64),
        ("nr_shrinking", c_u32),
        ("max_frames", c_u32),
    ]


class ArenaParams(ctypes.Structure):
    """struct kva_arena_params"""
    _fields_ = [
        ("name", c_char_p),
        ("nr_frames", c_u32),
        ("mem_kind", c_u32),
        ("frame_size", c_u64),
        ("mem_dev", c_u32),
        ("low_watermark", c_u32),
        ("bytes_per_token", c_u64),
        ("flags", c_u32),
        ("max_frames", c_u32),
        ("device", c_char_p),
        ("cuda_library", c_char_p),
        ("reserved", c_u64 * 4),
    ]


class RankOpts(ctypes.Structure):
    """struct kva_rank_opts"""
    _fields_ = [
        ("name", c_char_p),
        ("label", c_char_p),
        ("device", c_char_p),
        ("client_id", c_u32),
        ("rank", c_u32),
        ("token", c_u64),
        ("flags", c_u32),
        ("reserved0", c_u32),
        ("cuda_library", c_char_p),
        ("reserved", c_u64 * 3),
    ]


class Geometry(ctypes.Structure):
    """struct kva_geometry"""
    _fields_ = [
        ("layers", c_u32),
        ("kv_heads", c_u32),
        ("head_dim", c_u32),
        ("dtype", c_u32),
        ("frame_size", c_u64),
        ("bytes_per_token", c_u64),
        ("tokens_per_frame", c_u32),
        ("head_stride", c_u32),
    ]


class Seq(ctypes.Structure):
    """struct kva_seq (the public part; the library keeps more behind)"""
    _fields_ = [
        ("base", c_u64),
        ("tokens", c_u64),
        ("room", c_u64),
        ("max_tokens", c_u64),
        ("geo", Geometry),
    ]


SeqP = ctypes.POINTER(Seq)


class Grow(ctypes.Structure):
    """struct kva_grow"""
    _fields_ = [
        ("seq", SeqP),
        ("tokens", c_u64),
        ("ahead", c_u64),
    ]


KEY_LEN = 32


class Key(ctypes.Structure):
    """struct kva_key"""
    _fields_ = [("b", c_u8 * KEY_LEN)]


ArenaP = c_void_p

# name: (restype, argtypes); restype int means "negative errno or count".
_PROTOS = {
    "kva_open": (ctypes.c_int, [ctypes.POINTER(OpenOpts), ctypes.POINTER(ArenaP)]),
    "kva_close": (None, [ArenaP]),
    "kva_arena_info": (ctypes.c_int, [ArenaP, ctypes.POINTER(ArenaInfo)]),
    "kva_arena_set_stream": (ctypes.c_int, [ArenaP, c_void_p]),
    "kva_arena_sync": (ctypes.c_int, [ArenaP]),
    "kva_mode_name": (c_char_p, [ctypes.c_int]),
    "kva_backend_name": (c_char_p, [ctypes.c_int]),
    "kva_transport_name": (c_char_p, [ctypes.c_int]),
    "kva_stat": (ctypes.c_int, [ArenaP, ctypes.POINTER(Stat)]),
    "kva_sync_usage": (ctypes.c_int, [ArenaP]),
    "kva_alloc": (ctypes.c_int, [ArenaP, ctypes.POINTER(c_u64), ctypes.c_uint,
                                 ctypes.c_uint]),
    "kva_free": (ctypes.c_int, [ArenaP, ctypes.POINTER(c_u64), ctypes.c_uint]),
    "kva_arena_create": (ctypes.c_int, [ctypes.POINTER(ArenaParams)]),
    "kva_arena_destroy": (ctypes.c_int, [ctypes.POINTER(ArenaParams)]),
    "kva_geometry_explain": (ctypes.c_int, [ctypes.POINTER(Geometry),
                                            ctypes.c_char_p, ctypes.c_size_t]),
    "kva_seq_create": (ctypes.c_int, [ArenaP, ctypes.POINTER(Geometry), c_u64,
                                      ctypes.POINTER(SeqP)]),
    "kva_seq_grow_batch": (ctypes.c_int, [ArenaP, ctypes.POINTER(Grow),
                                          ctypes.c_uint]),
    "kva_seq_grow_slow": (ctypes.c_int, [SeqP, c_u64]),
    "kva_seq_shrink": (ctypes.c_int, [SeqP, c_u64]),
    "kva_seq_fork": (ctypes.c_int, [SeqP, ctypes.POINTER(SeqP)]),
    "kva_seq_free": (None, [SeqP]),
    "kva_seq_handles": (ctypes.c_int, [SeqP, ctypes.POINTER(c_u64),
                                       ctypes.c_uint]),
    "kva_prefix_keys": (ctypes.c_int, [ctypes.POINTER(Geometry), c_void_p,
                                       ctypes.c_size_t,
                                       ctypes.POINTER(c_u32), c_u64,
                                       ctypes.POINTER(Key), ctypes.c_uint]),
    "kva_seq_publish": (ctypes.c_int, [SeqP, ctypes.POINTER(Key),
                                       ctypes.c_uint]),
    "kva_seq_publish_tokens": (ctypes.c_int, [SeqP, ctypes.POINTER(Key),
                                              ctypes.c_uint,
                                              ctypes.POINTER(c_u32)]),
    "kva_seq_attach_prefix": (ctypes.c_int, [SeqP, ctypes.POINTER(Key),
                                             ctypes.c_uint]),
}


# Newer than KVARENA_1.0: bound where the library has them (optional()),
# and kvarena.Error ENOSYS from call() where it does not.
_PROTOS_OPTIONAL = {
    # KVARENA_1.3: gangs
    "kva_gang_token": (ctypes.c_int, [ArenaP, c_u32, ctypes.POINTER(c_u64),
                                      ctypes.POINTER(c_u32)]),
    "kva_rank_open": (ctypes.c_int, [ctypes.POINTER(RankOpts),
                                     ctypes.POINTER(ArenaP)]),
    "kva_seq_mirror": (ctypes.c_int, [SeqP, ctypes.POINTER(c_u64),
                                      ctypes.c_uint, c_u64]),
}


class _LinkMap(ctypes.Structure):
    # The head of glibc's struct link_map (<link.h>): enough for l_name.
    _fields_ = [("l_addr", c_void_p), ("l_name", c_char_p)]


def _loaded_path(lib):
    """The file the dynamic loader loaded for @lib (dlinfo RTLD_DI_LINKMAP)."""
    try:
        libdl = ctypes.CDLL(None)
        dlinfo = libdl.dlinfo
    except (OSError, AttributeError):
        return lib._name
    dlinfo.argtypes = [c_void_p, ctypes.c_int, c_void_p]
    lm = ctypes.POINTER(_LinkMap)()
    if dlinfo(lib._handle, 2, ctypes.byref(lm)) != 0 or not lm:
        return lib._name
    return os.path.realpath(lm.contents.l_name.decode())


def _candidates():
    env = os.environ.get("KVARENA_LIBRARY")
    if env:
        return [env]
    out = [SONAME]
    try:
        from . import _config  # written by `make install`
        out.append(os.path.join(_config.LIBDIR, SONAME))
    except ImportError:
        pass
    return out


def _load():
    errors = []
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
            continue
        for fn, (res, args) in _PROTOS.items():
            f = getattr(lib, fn)
            f.restype = res
            f.argtypes = args
        return lib
    raise ImportError("kvarena: cannot load libkvarena (" + "; ".join(errors) +
                      "); install kvarena or set KVARENA_LIBRARY")


lib = _load()
LIBRARY_PATH = _loaded_path(lib)


def optional(fn, res, args):
    """A function newer libraries have; None when this one lacks it."""
    f = getattr(lib, fn, None)
    if f is not None:
        f.restype = res
        f.argtypes = args
    return f


for _fn, (_res, _args) in _PROTOS_OPTIONAL.items():
    optional(_fn, _res, _args)


def call(name, *args):
    """Call kva_@name; raise kvarena.Error for a negative result (ENOSYS
    for a function of a newer library than the one loaded)."""
    f = getattr(lib, name, None)
    if f is None:
        raise Error(errno.ENOSYS, name)
    return check(f(*args), name)
