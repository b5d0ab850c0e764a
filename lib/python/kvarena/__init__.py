# SPDX-License-Identifier: MIT
"""kvarena: KV-cache sequences in shared arenas of frames, from Python.

A binding of libkvarena (ctypes; nothing beyond Python's standard library
is needed) for serving engines written in Python:

    import kvarena, torch

    with kvarena.open(mode="embedded", nr_frames=64) as arena:
        g = kvarena.Geometry(layers=32, kv_heads=8, head_dim=128,
                             dtype="fp16")
        seq = arena.seq(g, max_tokens=8192)
        seq.grow(prompt_len)
        k = torch.from_dlpack(seq.layer(0).k)   # a view, not a copy

kvarena.open() attaches to an arena of /dev/kvarena (kvarena.ko) or makes
an embedded in-process one.  A sequence keeps its KV in one contiguous
virtual range of frames; seq.layer(l).k and .v are zero-copy views of it
through DLPack and the array interfaces, shaped (frames, kv_heads,
tokens_per_frame, head_dim) with the frame layout's strides.  Prefixes are
shared through prefix_keys(), Seq.publish() and Seq.attach_prefix(), and
an arena's KV events read with kvarena.events().  For tensor parallelism,
a gang (kvarena.gang_create()) is opened by the scheduler, which takes
frames (Arena.alloc()) and hands Arena.gang_token() to its ranks; each
rank opens it with kvarena.open_rank() and maps the scheduler's block
tables with Seq.mirror().  Failed calls raise kvarena.Error, an OSError
carrying libkvarena's errno.

The library is found as libkvarena.so.1 through the dynamic loader, then
where `make install` put it; $KVARENA_LIBRARY names another file.
See Documentation/python.rst.
"""

from ._errors import Error
from ._core import (K, V, Arena, ArenaInfo, ArenaStat, ClientInfo, Event,
                    Events, Geometry, KVTensor, Layer, Seq, Stat,
                    arena_clients, arena_stat, arenas, create_arena,
                    destroy_arena, events, gang_create, library_path, open,
                    open_rank, prefix_keys)

__version__ = "1.0.0"

__all__ = [
    "Arena", "ArenaInfo", "ArenaStat", "ClientInfo", "Error", "Event",
    "Events", "Geometry", "K", "KVTensor", "Layer", "Seq", "Stat", "V",
    "arena_clients", "arena_stat", "arenas", "create_arena", "destroy_arena",
    "events", "gang_create", "library_path", "open", "open_rank",
    "prefix_keys",
]
