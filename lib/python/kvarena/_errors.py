# SPDX-License-Identifier: MIT
"""kvarena.Error: a failed call, with the errno libkvarena or the module gave."""

import errno as _errno
import os


class Error(OSError):
    """A libkvarena call or a module command failed.

    An OSError: ``e.errno`` is the error number (``errno.ENOSPC``...), and
    ``e.strerror`` names the call and says what the number means.
    """

    def __init__(self, err, call, hint=None):
        super().__init__(err, "%s: %s%s" % (call, os.strerror(err),
                                            " (%s)" % hint if hint else ""))
        self.call = call


def device_hint(err, device):
    """Why a call found no kvarena device at @device (None: the default
    node), said the way an operator fixes it; None when the node is
    there (the error is then the module's)."""
    node = device or os.environ.get("KVA_DEVICE") or "/dev/kvarena"
    if err not in (_errno.ENODEV, _errno.ENOENT, _errno.ENXIO) or \
            os.path.exists(node):
        return None
    if os.path.exists("/sys/module/kvarena"):
        return ("kvarena.ko is loaded but %s is missing: a container or "
                "chroot without the device node?" % node)
    return "%s does not exist: is kvarena.ko loaded? modprobe kvarena loads it" % node


def check(ret, call):
    """@ret of a kva_* call: returned when >= 0, raised as Error otherwise."""
    if ret < 0:
        raise Error(-ret, call)
    return ret


def errname(err):
    """"ENOSPC" for errno.ENOSPC."""
    return _errno.errorcode.get(err, str(err))
