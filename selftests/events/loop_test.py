#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The decoders' read loops: interrupted polls, and a stdin that closes.

    loop_test.py KVEV_LLMD KVEV_DYNAMO

1. kvev-llmd keeps reading when its blocked poll is interrupted.
The Go runtime preempts its threads with SIGURG, so a C call blocked in
zmq_poll() or zmq_msg_recv() returns EINTR now and then; the decoder
must make the call again, not exit ("poll: Interrupted system call" once
cost a VM run its routers test).  This starts it subscribed to a port
nobody publishes on, sends SIGURG to each of its threads 200 times (the
one in poll() among them), and wants it alive afterwards and exiting 0
when its stdin closes.

2. Both exit 0 once their stdin closes, with nothing published: a closed
pipe polls as POLLHUP, which zmq_poll() reports as ZMQ_POLLERR, not
ZMQ_POLLIN; a loop that waited for POLLIN spun at full speed forever
(and, in Go, spun into the EINTR above).

TAP on stdout.
"""
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time

SYS_TGKILL = 234  # x86-64


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(argv):
    return subprocess.Popen(argv, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish(p, limit):
    """Close @p's stdin; its exit status (None if it outlived @limit s)."""
    p.stdin.close()
    try:
        return p.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None


def survives_interrupted_polls(llmd):
    libc = ctypes.CDLL(None, use_errno=True)
    p = start([llmd, "-sub", "tcp://127.0.0.1:%d" % free_port()])
    time.sleep(0.5)  # into its poll
    sent = 0
    for _ in range(200):
        try:
            tids = [int(t) for t in os.listdir("/proc/%d/task" % p.pid)]
        except FileNotFoundError:
            break
        for t in tids:
            sent += libc.syscall(SYS_TGKILL, p.pid, t, int(signal.SIGURG)) == 0
        time.sleep(0.002)
    alive = p.poll() is None
    rc = finish(p, 30)
    err = p.stderr.read().decode(errors="replace").strip()
    print("# %d signals sent; alive after them: %s; exit %s%s"
          % (sent, alive, rc, "; " + err if err else ""))
    return alive and rc == 0 and sent > 0


def exit_when_stdin_closes(llmd, dynamo):
    ok = True
    for argv in ([llmd, "-sub"], [dynamo, "--sub"]):
        p = start(argv + ["tcp://127.0.0.1:%d" % free_port()])
        time.sleep(0.3)
        t0 = time.monotonic()
        rc = finish(p, 10)
        print("# %s: exit %s after stdin closed, in %.2f s"
              % (os.path.basename(argv[0]), rc, time.monotonic() - t0))
        ok &= rc == 0
    return ok


def main():
    tests = [
        ("kvev_llmd_survives_interrupted_polls",
         lambda: survives_interrupted_polls(sys.argv[1])),
        ("both_decoders_exit_when_stdin_closes",
         lambda: exit_when_stdin_closes(sys.argv[1], sys.argv[2])),
    ]
    print("1..%d" % len(tests))
    failed = 0
    for i, (name, t) in enumerate(tests, 1):
        ok = t()
        failed += not ok
        print("%s %d %s" % ("ok" if ok else "not ok", i, name))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
