# SPDX-License-Identifier: MIT
"""The operator's side of /dev/kvarena's ABI (include/uapi/linux/kvarena.h):
VERSION, STAT, CLIENTS and EVENTS_FD, which any opener the arena's mode
lets view may issue on a read-only open, and GANG_CREATE, which
libkvarena has no call for (CAP_SYS_ADMIN, on a read-write open).
libkvarena covers everything a client does; these are the operator's
views and commands, as kvarenactl has them.

The structs mirror the uapi header field for field; the tests compare
their sizes and offsets, and the command numbers, with the C header's.
"""

import ctypes
import errno
import fcntl
import os

from ._errors import Error

c_u8 = ctypes.c_uint8
c_u32 = ctypes.c_uint32
c_i32 = ctypes.c_int32
c_u64 = ctypes.c_uint64

NAME_LEN = 32
LABEL_LEN = 32
DEVICE = "/dev/kvarena"

MEM_HOST = 0
MEM_CUDA = 1
MEM_FILE = 2

STAT_BY_INDEX = 1
STATE_PRESSURE = 1
STATE_NO_BACKING = 2


class Version(ctypes.Structure):
    _fields_ = [
        ("abi_version", c_u32),
        ("reserved0", c_u32),
        ("features", c_u64),
        ("reserved", c_u64 * 2),
    ]


class StatArg(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * NAME_LEN),
        ("flags", c_u32),
        ("index", c_u32),
        ("frame_size", c_u64),
        ("nr_frames", c_u32),
        ("nr_free", c_u32),
        ("nr_held", c_u32),
        ("nr_cached", c_u32),
        ("nr_backed", c_u32),
        ("nr_reserved", c_u32),
        ("nr_clients", c_u32),
        ("low_watermark", c_u32),
        ("state", c_u32),
        ("mem_kind", c_u32),
        ("mem_dev", c_u32),
        ("peak_held", c_u32),
        ("filled_bytes", c_u64),
        ("filled_tokens", c_u64),
        ("bytes_per_token", c_u64),
        ("alloc_calls", c_u64),
        ("free_calls", c_u64),
        ("alloc_failures", c_u64),
        ("frames_allocated", c_u64),
        ("frames_freed", c_u64),
        ("owner_uid", c_u32),
        ("owner_gid", c_u32),
        ("mode", c_u32),
        ("client_min_limit", c_u32),
        ("client_max_default", c_u32),
        ("client_max_limit", c_u32),
        ("mem_uuid", c_u8 * 16),
        ("nr_published", c_u32),
        ("cache_domains", c_u32),
        ("cache_hits", c_u64),
        ("cache_misses", c_u64),
        ("cache_reclaims", c_u64),
        ("domain", c_u64),
        ("nr_dirty", c_u32),
        ("dom_cached", c_u32),
        ("frames_cleared", c_u64),
        ("domain_cached_max", c_u32),
        ("nr_quarantined", c_u32),
        ("max_frames", c_u32),
        ("nr_absent", c_u32),
        ("nr_shrinking", c_u32),
        ("tier", c_u32),
        ("frames_retired", c_u64),
        ("tier_name", ctypes.c_char * NAME_LEN),
    ]


class ClientInfo(ctypes.Structure):
    _fields_ = [
        ("client_id", c_u32),
        ("pid", c_i32),
        ("label", ctypes.c_char * LABEL_LEN),
        ("min_frames", c_u32),
        ("max_frames", c_u32),
        ("held", c_u32),
        ("shared", c_u32),
        ("peak", c_u32),
        ("uid", c_u32),
        ("filled_bytes", c_u64),
        ("filled_tokens", c_u64),
        ("alloc_calls", c_u64),
        ("free_calls", c_u64),
        ("alloc_failures", c_u64),
        ("charged", c_u32),
        ("dmem_refused", c_u32),
        ("domain", c_u64),
    ]


class ClientsArg(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * NAME_LEN),
        ("clients", c_u64),
        ("count", c_u32),
        ("nr_clients", c_u32),
        ("flags", c_u32),
        ("reserved0", c_u32),
        ("reserved", c_u64 * 2),
    ]


KEY_LEN = 32

EVENTS_OLDEST = 1
EVENTS_NONBLOCK = 2

EVENT_STORED = 1
EVENT_REMOVED = 2
EVENT_CLEARED = 3
EVENT_LOST = 4
EVENT_PARENT = 1


class EventsFdArg(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * NAME_LEN),
        ("flags", c_u32),
        ("fd", c_i32),
        ("reserved", c_u64 * 2),
    ]


class EventHeader(ctypes.Structure):
    """struct kvarena_event; nr_tokens __u32 token ids follow it."""
    _fields_ = [
        ("size", c_u32),
        ("type", ctypes.c_uint16),
        ("flags", ctypes.c_uint16),
        ("seq", c_u64),
        ("time_ns", c_u64),
        ("lost", c_u64),
        ("client_id", c_u32),
        ("frame", c_u32),
        ("nr_tokens", c_u32),
        ("reserved", c_u32),
        ("key", c_u8 * KEY_LEN),
        ("parent", c_u8 * KEY_LEN),
    ]


GANG_MAX = 16


class GangCreateArg(ctypes.Structure):
    """struct kvarena_gang_create; members points to nr_members names of
    NAME_LEN bytes each."""
    _fields_ = [
        ("name", ctypes.c_char * NAME_LEN),
        ("members", c_u64),
        ("nr_members", c_u32),
        ("flags", c_u32),
        ("reserved", c_u64 * 4),
    ]


def _iowr(nr, struct):
    # _IOWR('K', nr, struct): dir 3 (read|write) << 30, size << 16.
    return (3 << 30) | (ctypes.sizeof(struct) << 16) | (ord("K") << 8) | nr


IOC_VERSION = _iowr(0x00, Version)
IOC_STAT = _iowr(0x09, StatArg)
IOC_CLIENTS = _iowr(0x0A, ClientsArg)
IOC_EVENTS_FD = _iowr(0x10, EventsFdArg)
IOC_GANG_CREATE = _iowr(0x17, GangCreateArg)

# What the tests compare with the C header.
STRUCTS = {
    "kvarena_version": Version,
    "kvarena_stat": StatArg,
    "kvarena_client_info": ClientInfo,
    "kvarena_clients": ClientsArg,
    "kvarena_events_fd": EventsFdArg,
    "kvarena_event": EventHeader,
    "kvarena_gang_create": GangCreateArg,
}
IOCTLS = {
    "KVARENA_IOC_VERSION": IOC_VERSION,
    "KVARENA_IOC_STAT": IOC_STAT,
    "KVARENA_IOC_CLIENTS": IOC_CLIENTS,
    "KVARENA_IOC_EVENTS_FD": IOC_EVENTS_FD,
    "KVARENA_IOC_GANG_CREATE": IOC_GANG_CREATE,
}


def device_path(device=None):
    return device or os.environ.get("KVA_DEVICE") or DEVICE


def _ioctl(fd, cmd, arg, what):
    try:
        fcntl.ioctl(fd, cmd, arg, True)
    except OSError as e:
        raise Error(e.errno, what) from None


class Device:
    """An open of the device: read-only for the viewing commands,
    read-write (@write) for GANG_CREATE."""

    def __init__(self, device=None, write=False):
        path = device_path(device)
        try:
            self.fd = os.open(path, (os.O_RDWR if write else os.O_RDONLY) |
                              os.O_CLOEXEC)
        except OSError as e:
            raise Error(e.errno, "open " + path) from None

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def version(self):
        v = Version()
        _ioctl(self.fd, IOC_VERSION, v, "VERSION")
        return v

    def stat(self, name=None, index=None):
        s = StatArg()
        if name is not None:
            s.name = _name_bytes(name)
        else:
            s.flags = STAT_BY_INDEX
            s.index = index
        _ioctl(self.fd, IOC_STAT, s, "STAT")
        return s

    def stats(self):
        """Every arena the caller may view, in creation order."""
        out, i = [], 0
        while True:
            try:
                out.append(self.stat(index=i))
            except Error as e:
                if e.errno == errno.ENOENT:
                    return out
                raise
            i += 1

    def events_fd(self, name, oldest=False, nonblock=False):
        """A descriptor reading arena @name's events (EVENTS_FD)."""
        a = EventsFdArg()
        a.name = _name_bytes(name)
        a.flags = ((EVENTS_OLDEST if oldest else 0) |
                   (EVENTS_NONBLOCK if nonblock else 0))
        _ioctl(self.fd, IOC_EVENTS_FD, a, "EVENTS_FD")
        return a.fd

    def clients(self, name):
        a = ClientsArg()
        a.name = _name_bytes(name)
        # Ask for the count, then read; retry if clients came meanwhile.
        while True:
            _ioctl(self.fd, IOC_CLIENTS, a, "CLIENTS")
            n = a.nr_clients
            rows = (ClientInfo * max(n, 1))()
            a.clients = ctypes.addressof(rows)
            a.count = n
            _ioctl(self.fd, IOC_CLIENTS, a, "CLIENTS")
            if a.nr_clients <= n:
                return list(rows[:a.nr_clients])
            a.clients = 0
            a.count = 0

    def gang_create(self, name, members):
        """GANG_CREATE: gang @name over the arenas named in @members
        (member r is rank r's memory); needs a read-write open."""
        names = ((ctypes.c_char * NAME_LEN) * len(members))()
        for i, m in enumerate(members):
            names[i].value = _name_bytes(m)
        g = GangCreateArg()
        g.name = _name_bytes(name)
        g.members = ctypes.addressof(names)
        g.nr_members = len(members)
        _ioctl(self.fd, IOC_GANG_CREATE, g, "GANG_CREATE")


def _name_bytes(name):
    b = name.encode() if isinstance(name, str) else bytes(name)
    if not 0 < len(b) < NAME_LEN:
        raise ValueError("arena name must be 1 to %d bytes: %r" %
                         (NAME_LEN - 1, name))
    return b
