# SPDX-License-Identifier: GPL-2.0
"""A small KTAP harness for the Python tests, so that they report as the
kselftest binaries do (the VM runner sums their "# Totals:" lines).

    suite = ktap.Suite("kvarena_python")

    @suite.test
    def grow_beyond_max_raises_efbig():
        ...

    suite.run()         # exits 1 when a test failed

A test fails on any exception; ktap.Skip("why") skips it (only for a
reason the environment decides, never to hide a failure).
"""

import os
import sys
import time
import traceback


class Skip(Exception):
    pass


def expect_error(errno_, fn, *args, **kw):
    """Run fn; it must raise kvarena.Error (an OSError) with @errno_."""
    try:
        fn(*args, **kw)
    except OSError as e:
        if e.errno != errno_:
            raise AssertionError("expected errno %d, got %r" % (errno_, e)) from e
        return e
    raise AssertionError("expected errno %d, got no error" % errno_)


def eq(a, b, what=""):
    if a != b:
        raise AssertionError("%s%r != %r" % (what + ": " if what else "", a, b))


def wait_for_events_fd(proc, timeout=60):
    """Until @proc has an events descriptor open (it is reading)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "exited with %r" % proc.returncode
        fds = "/proc/%d/fd" % proc.pid
        for fd in os.listdir(fds):
            try:
                if os.readlink(os.path.join(fds, fd)) == \
                        "anon_inode:[kvarena-events]":
                    return
            except OSError:
                pass
        time.sleep(0.05)
    raise AssertionError("no events descriptor in %d after %d s" %
                         (proc.pid, timeout))


def event_burst(name, geometry, label, rounds=10):
    """@rounds times, a chain of 8 frames published with its token ids
    into arena @name (8 frames), then reclaimed: 16 events a round, more
    than a 64 KiB events ring keeps.  Returns the number of events."""
    import kvarena

    t = geometry.tokens_per_frame
    toks = list(range(8 * t))
    with kvarena.open(name, mode="device", label=label) as a:
        for r in range(rounds):
            keys = kvarena.prefix_keys(geometry, toks, b"burst-%d" % r)
            s = a.seq(geometry, max_tokens=8 * t)
            s.grow(8 * t)
            eq(s.publish(keys, tokens=toks), 8)
            s.free()
            h = a.alloc(8)                # reclaims all 8
            a.free(h)
    return 16 * rounds


def wait_clients(name, n):
    """The arena's clients once there are n or fewer (waits up to 10 s):
    a process that used io_uring, the default transport, may leave its
    client for a moment after it was reaped, until io_uring lets go of
    the file."""
    import kvarena

    for _ in range(2000):
        st = kvarena.arena_stat(name)
        if st.nr_clients <= n:
            break
        time.sleep(0.005)
    return st.nr_clients


class Suite:
    def __init__(self, name):
        self.name = name
        self.tests = []

    def test(self, fn):
        self.tests.append(fn)
        return fn

    def run(self):
        only = os.environ.get("KVA_PY_TEST")
        tests = [t for t in self.tests if not only or t.__name__ == only]
        print("TAP version 13", flush=True)
        print("1..%d" % len(tests))
        npass = nfail = nskip = 0
        for i, t in enumerate(tests, 1):
            try:
                t()
            except Skip as e:
                print("ok %d %s # SKIP %s" % (i, t.__name__, e))
                nskip += 1
            except BaseException:
                for line in traceback.format_exc().rstrip().split("\n"):
                    print("# " + line)
                print("not ok %d %s" % (i, t.__name__))
                nfail += 1
            else:
                print("ok %d %s" % (i, t.__name__))
                npass += 1
            sys.stdout.flush()
        print("# %s: %d tests" % (self.name, len(tests)))
        print("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0" %
              (npass, nfail, nskip), flush=True)
        sys.exit(1 if nfail else 0)
