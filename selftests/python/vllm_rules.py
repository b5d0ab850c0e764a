# SPDX-License-Identifier: GPL-2.0
"""KV event batches decoded as vLLM's own subscribers decode them
(vllm/distributed/kv_events.py: msgspec structs), with python3-msgpack
for the bytes and msgspec's rules applied by hand:

- a struct declared array_like is an array of its fields in order: at
  least the ones without a default, at most all of them (more is an
  error, as msgspec says "Expected `array` of at most length N");
- a tagged struct that is not array_like is a map whose "type" is the
  class name; its fields without a default must be there, keys it does
  not declare are ignored;
- every field has the type it is declared with.

One set of declarations per layout kvarenactl sends, as the vLLM that
sends it declares them (read, not copied, from github.com/vllm-project/vllm):

  vllm         after PR #42892 (map events; e.g. v0.26.0): EventBatch
               array_like [ts, events, data_parallel_rank=None], events
               maps; fields of kv_events.py @ 0181ea31 (BlockStored's
               lora_id ... lora_name without defaults, extra_keys,
               group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window
               defaulted) and the later defaulted locality, ownership,
               session_id
  vllm-array   array_like events with lora_name (PR #27577) and the rank
  vllm-medium  array_like events with medium (PR #19737) and the rank
  vllm-first   kv_events.py @ b4e69e0a (its introduction): [ts, events],
               BlockStored [hashes, parent, tokens, block_size, lora_id],
               BlockRemoved [hashes]

decode(layout, payload) gives (ts, rank, events), each event a dict of
its fields with "type"; BadBatch for what that vLLM would refuse.
"""

import msgpack

_HASH = (int, bytes)


def _list_of(t):
    def check(v):
        return isinstance(v, list) and all(isinstance(x, t) for x in v)
    return check


def _opt(t):
    return lambda v: v is None or isinstance(v, t)


def _is(t):
    return lambda v: isinstance(v, t) and not isinstance(v, bool)


def _hash(v):
    return isinstance(v, _HASH) and not isinstance(v, bool)


def _opt_hash(v):
    return v is None or _hash(v)


def _extra_keys(v):
    return v is None or (isinstance(v, list) and
                         all(x is None or isinstance(x, list) for x in v))


_REQ, _DEF = True, False

# (field, check, required) in declaration order.
_STORED_CURRENT = [
    ("block_hashes", lambda v: isinstance(v, list) and all(map(_hash, v)), _REQ),
    ("parent_block_hash", _opt_hash, _REQ),
    ("token_ids", _list_of(int), _REQ),
    ("block_size", _is(int), _REQ),
    ("lora_id", _opt(int), _REQ),
    ("medium", _opt(str), _REQ),
    ("lora_name", _opt(str), _REQ),
    ("extra_keys", _extra_keys, _DEF),
    ("group_idx", _opt(int), _DEF),
    ("kv_cache_spec_kind", _opt(str), _DEF),
    ("kv_cache_spec_sliding_window", _opt(int), _DEF),
    ("locality", _opt(str), _DEF),
    ("ownership", _opt(str), _DEF),
    ("session_id", _opt(str), _DEF),
]
_REMOVED_CURRENT = [
    ("block_hashes", lambda v: isinstance(v, list) and all(map(_hash, v)), _REQ),
    ("medium", _opt(str), _REQ),
    ("group_idx", _opt(int), _DEF),
    ("locality", _opt(str), _DEF),
    ("ownership", _opt(str), _DEF),
]

LAYOUTS = {
    # layout: (batch fields, events as maps, BlockStored, BlockRemoved)
    "vllm": (3, True, _STORED_CURRENT, _REMOVED_CURRENT),
    "vllm-array": (3, False, _STORED_CURRENT[:7], _REMOVED_CURRENT[:2]),
    "vllm-medium": (3, False, _STORED_CURRENT[:6], _REMOVED_CURRENT[:2]),
    "vllm-first": (2, False, _STORED_CURRENT[:5], _REMOVED_CURRENT[:1]),
}
# vLLM's replay replies, on a DEALER: ["", topic, seq, payload] since its
# PR #45177 (the map-event releases), ["", seq, payload] before.
REPLAY_FRAMES = {"vllm": 4, "vllm-array": 3, "vllm-medium": 3, "vllm-first": 3}


class BadBatch(Exception):
    pass


def _struct(tag, decl, value, as_map):
    out = {"type": tag}
    if as_map:
        if not isinstance(value, dict):
            raise BadBatch("%s: not a map" % tag)
        for name, check, required in decl:
            if name not in value:
                if required:
                    raise BadBatch("%s: missing required field %r" % (tag, name))
                out[name] = None
                continue
            if not check(value[name]):
                raise BadBatch("%s.%s: wrong type %r" % (tag, name, value[name]))
            out[name] = value[name]
        return out
    nreq = sum(1 for d in decl if d[2])
    if not nreq <= len(value) <= len(decl):
        raise BadBatch("%s: an array of %d fields, want %d to %d" %
                       (tag, len(value), nreq, len(decl)))
    for (name, check, _), v in zip(decl, value):
        if not check(v):
            raise BadBatch("%s.%s: wrong type %r" % (tag, name, v))
        out[name] = v
    for name, _, _ in decl[len(value):]:
        out[name] = None
    return out


def decode(layout, payload):
    nbatch, as_map, stored, removed = LAYOUTS[layout]
    try:
        b = msgpack.unpackb(payload, raw=False)
    except Exception as e:
        raise BadBatch("not msgpack: %r" % (e,))
    # EventBatch is array_like in every vLLM: [ts, events(, rank=None)].
    if not isinstance(b, list) or not 2 <= len(b) <= nbatch:
        raise BadBatch("batch: %r is not an array of 2 to %d" %
                       (type(b).__name__, nbatch))
    ts, events = b[0], b[1]
    rank = b[2] if len(b) > 2 else None
    if not isinstance(ts, float) or not isinstance(events, list) or \
            not _opt(int)(rank):
        raise BadBatch("batch: wrong types")
    out = []
    for ev in events:
        if as_map:
            if not isinstance(ev, dict) or not isinstance(ev.get("type"), str):
                raise BadBatch("event: not a map with a type: %r" % (ev,))
            tag, body = ev["type"], ev
        else:
            if not isinstance(ev, list) or not ev or not isinstance(ev[0], str):
                raise BadBatch("event: not a tagged array: %r" % (ev,))
            tag, body = ev[0], ev[1:]
        if tag == "BlockStored":
            out.append(_struct(tag, stored, body, as_map))
        elif tag == "BlockRemoved":
            out.append(_struct(tag, removed, body, as_map))
        elif tag == "AllBlocksCleared":
            if not as_map and body:
                raise BadBatch("AllBlocksCleared with fields")
            out.append({"type": tag})
        else:
            raise BadBatch("unknown tag %r" % (tag,))
    return ts, rank, out
