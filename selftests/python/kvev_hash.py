# SPDX-License-Identifier: GPL-2.0
"""What kvarenactl events tells a block as (tools/kvarenactl/events.c,
kvactl_block_hash()): the key's last 8 bytes big-endian, with the block's
cache domain mixed in unless the domain is arena-wide - and the cache
salt naming that domain.  Written again here from the documented rule,
for the tests to compute what they expect."""

M64 = (1 << 64) - 1
_KINDS = {1: "uid", 2: "gid", 4: "named", 5: "private"}


def salt(domain):
    kind, nr = domain >> 56, domain & ((1 << 56) - 1)
    if domain == 0 or kind == 3:
        return None
    return "kvarena-%s-%d" % (_KINDS[kind], nr) if kind in _KINDS else \
        "kvarena-%x" % domain


def _mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def block_hash(key, domain, no_salt=False):
    h = int.from_bytes(key[-8:], "big")
    return h if no_salt or salt(domain) is None else h ^ _mix64(domain)


def block_bytes(key, domain, no_salt=False):
    return key[:-8] + block_hash(key, domain, no_salt).to_bytes(8, "big")
