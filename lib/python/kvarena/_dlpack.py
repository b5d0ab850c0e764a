# SPDX-License-Identifier: MIT
"""DLPack capsules made with ctypes.

The exchange format is DLPack's DLManagedTensor (dlpack.h, the
unversioned struct every consumer accepts: torch, numpy, cupy, jax) in a
PyCapsule named "dltensor".  The consumer renames the capsule
"used_dltensor" and calls the tensor's deleter when it is done with the
memory; a capsule nobody consumed calls it when it dies.  The deleter
drops the reference that kept the producer - and so the sequence's mapped
range - alive.
"""

import ctypes

# DLDeviceType
DL_CPU = 1
DL_CUDA = 2

# DLDataTypeCode
DL_INT = 0
DL_UINT = 1
DL_FLOAT = 2
DL_BFLOAT = 4


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

_NAME = b"dltensor"
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# Address of a live DLManagedTensor -> (the struct, shape, strides, owner).
_live = {}


def _release(addr):
    _live.pop(addr, None)


@_DELETER
def _deleter(managed):
    _release(ctypes.addressof(managed.contents))


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # Still named "dltensor": nobody consumed it, so nobody will call the
    # deleter.  Renamed "used_dltensor": the consumer owns it now.
    if _capsule_is_valid(capsule, _NAME):
        _release(_capsule_get(capsule, _NAME))


def capsule(owner, data, device, dtype, shape, strides):
    """A "dltensor" capsule over @data (an address) with @shape and
    @strides (in elements), keeping @owner alive until it is released.

    @device is (DL_CPU or DL_CUDA, ordinal); @dtype is (code, bits).
    """
    ndim = len(shape)
    shape_a = (ctypes.c_int64 * ndim)(*shape)
    strides_a = (ctypes.c_int64 * ndim)(*strides)
    m = DLManagedTensor()
    t = m.dl_tensor
    # byte_offset stays 0 and data is the exact address: some consumers
    # (torch 1.13) ignore byte_offset.
    t.data = data
    t.device = DLDevice(device[0], device[1])
    t.ndim = ndim
    t.dtype = DLDataType(dtype[0], dtype[1], 1)
    t.shape = shape_a
    t.strides = strides_a
    t.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _deleter
    addr = ctypes.addressof(m)
    _live[addr] = (m, shape_a, strides_a, owner)
    return _capsule_new(addr, _NAME, _capsule_destructor)


def live_exports():
    """DLPack exports not yet released (for tests)."""
    return len(_live)
