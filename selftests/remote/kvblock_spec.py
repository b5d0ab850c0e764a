# SPDX-License-Identifier: GPL-2.0
"""The remote tier's block format, version 1, written from its
specification (Documentation/remote.rst, "The block format") and nothing
else: the tests read what kvarenactl remote stores with it, and make the
wrong values - another geometry, another domain - that it must refuse.
Standard library only (hmac, hashlib, struct), so it runs in the VM."""

import hashlib
import hmac
import struct

MAGIC = b"KVABLOCK"
VERSION = 1
HEADER_SIZE = 192
MAC_OFFSET = 160
F_PARENT = 1
DTYPES = {"fp32": 0, "fp16": 1, "bf16": 2, "fp8": 3}

# magic, version, header_size, flags, payload_size, layers, kv_heads,
# head_dim, dtype, tokens, payload_crc, chain, parent, written_ms, writer,
# domain_id, reserved
_HEADER = struct.Struct("<8sHHIQIIIIII32s32sQ24s8s8s")
assert _HEADER.size == MAC_OFFSET


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC = _crc_table()


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    t = _CRC
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def domain_id(secret):
    return hmac.new(secret, b"kvarena remote domain v1", hashlib.sha256).digest()[:8]


def _geometry_bytes(g):
    return struct.pack("<QIIII", g["frame_size"], g["layers"], g["kv_heads"],
                       g["head_dim"], g["dtype"])


def store_key(secret, g, chain):
    m = hmac.new(secret, b"kvarena remote key v1" + _geometry_bytes(g) + chain,
                 hashlib.sha256)
    return "kva1:" + m.hexdigest()


def encode(secret, g, chain, payload, parent=None, writer=b"spec",
           written_ms=0, crc=None):
    """A whole value; @crc overrides the payload's CRC32C (to make a bad
    one)."""
    if crc is None:
        crc = crc32c(payload)
    head = _HEADER.pack(MAGIC, VERSION, HEADER_SIZE,
                        F_PARENT if parent else 0, g["frame_size"],
                        g["layers"], g["kv_heads"], g["head_dim"], g["dtype"],
                        g["tokens"], crc, chain, parent or bytes(32),
                        written_ms, writer[:23].ljust(24, b"\0"),
                        domain_id(secret), bytes(8))
    mac = hmac.new(secret, head, hashlib.sha256).digest()
    return head + mac + payload


def decode(value):
    """The header's fields as a dict (no checks), and the payload."""
    f = _HEADER.unpack_from(value)
    keys = ("magic", "version", "header_size", "flags", "payload_size",
            "layers", "kv_heads", "head_dim", "dtype", "tokens",
            "payload_crc", "chain", "parent", "written_ms", "writer",
            "domain_id", "reserved")
    h = dict(zip(keys, f))
    h["writer"] = h["writer"].rstrip(b"\0")
    h["mac"] = value[MAC_OFFSET:HEADER_SIZE]
    return h, value[HEADER_SIZE:]


def check(value, secret, g, chain):
    """"ok", or the reason the specification gives for a miss."""
    if value is None:
        return "absent"
    if len(value) < 12:
        return "size"
    if value[:8] != MAGIC:
        return "magic"
    version, hsize = struct.unpack_from("<HH", value, 8)
    if version != VERSION or hsize != HEADER_SIZE:
        return "version"
    if len(value) < HEADER_SIZE:
        return "size"
    mac = hmac.new(secret, value[:MAC_OFFSET], hashlib.sha256).digest()
    if not hmac.compare_digest(mac, value[MAC_OFFSET:HEADER_SIZE]):
        return "mac"
    h, payload = decode(value)
    for k in ("layers", "kv_heads", "head_dim", "dtype", "tokens"):
        if h[k] != g[k]:
            return "geometry"
    if h["payload_size"] != g["frame_size"]:
        return "geometry"
    if h["chain"] != chain:
        return "key"
    if len(payload) != h["payload_size"]:
        return "size"
    if crc32c(payload) != h["payload_crc"]:
        return "checksum"
    return "ok"
