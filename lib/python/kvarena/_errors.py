# SPDX-License-Identifier: MIT
"""kvarena.Error: a failed call, with the errno libkvarena or the module gave."""

import errno as _errno
import os


class Error(OSError):
    """A libkvarena call or a module command failed.

    An OSError: ``e.errno`` is the error number (``errno.ENOSPC``...), and
    ``e.strerror`` names the call and says what the number means.
    """

    def __init__(self, err, call):
        super().__init__(err, "%s: %s" % (call, os.strerror(err)))
        self.call = call


def check(ret, call):
    """@ret of a kva_* call: returned when >= 0, raised as Error otherwise."""
    if ret < 0:
        raise Error(-ret, call)
    return ret


def errname(err):
    """"ENOSPC" for errno.ENOSPC."""
    return _errno.errorcode.get(err, str(err))
