#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""kvbench remote against Redis processes of its own on 127.0.0.1: one
redis-server, then a cluster of 3 masters and 3 replicas (redisfix.py;
its clients go through the test's proxies, as in cluster_test.py).
Extra arguments go to kvbench.  Exit status: kvbench's, the first that
failed (a value that failed its checks fails it; the ratios never do).

usage: bench.py KVBENCH [KVBENCH ARGS...]
"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redisfix  # noqa: E402


def run(prog, seeds, extra):
    r = subprocess.run([prog, "remote", "--redis", seeds] + extra,
                       capture_output=True, text=True, timeout=1800)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    sys.stdout.flush()
    return r.returncode


def main():
    prog, extra = os.path.abspath(sys.argv[1]), sys.argv[2:]
    work = tempfile.mkdtemp(prefix="kva-bench-")
    rc = 0
    try:
        port = redisfix.free_ports(1)[0]
        s = redisfix.Server(os.path.join(work, "single"), port)
        try:
            print("# one redis-server")
            rc = run(prog, "127.0.0.1:%d" % port, extra)
        finally:
            s.stop()
        c = redisfix.Cluster(os.path.join(work, "cluster"))
        try:
            print("# a cluster of 3 masters and 3 replicas")
            rc = rc or run(prog, c.seeds(), extra)
        finally:
            c.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
