#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The remote tier's cluster client (tools/common/rcluster.c, driven by
rc_repl) against Debian's redis-server: a single server, and a cluster of
3 masters and 3 replicas made with redis-cli --cluster create, on ports
of its own on 127.0.0.1.  Checked against a client that is not ours -
redis-py's RedisCluster (python3-redis) reads what rc_repl wrote and
writes what it reads - and through a slot migration (ASK, then MOVED), a
node's port closed and opened again, a slow node, a master killed and
its replica taking over, and a manual failover.  TAP output.

usage: cluster_test.py RC_REPL
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redisfix  # noqa: E402

TIMEOUT_MS = 500
# What a batch may take beyond its deadline on a busy machine (the
# deadline is the client's promise; this is the test's patience).
SLACK_MS = 700


def pattern(size, seed, i):
    """rc_repl's bytes for key i."""
    return bytes((seed * 31 + i * 7 + j * 13 + (j >> 8)) & 0xff
                 for j in range(size))


class Repl:
    def __init__(self, prog, seeds):
        self.p = subprocess.Popen([prog, seeds, str(TIMEOUT_MS)],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.ready = self._read()

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("rc_repl exited")
        words = dict(w.split("=", 1) for w in line.split() if "=" in w)
        for k, v in words.items():
            try:
                words[k] = float(v) if "." in v else int(v)
            except ValueError:
                pass
        return words

    def do(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self._read()

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


def failed(r):
    return sum(r[k] for k in ("etimedout", "econnrefused", "eio", "eagain",
                              "eloop", "eother"))


class Tap:
    def __init__(self):
        self.n = 0
        self.bad = 0

    def run(self, name, fn, *args):
        self.n += 1
        try:
            fn(*args)
            print("ok %d - %s" % (self.n, name))
        except Exception as e:  # noqa: BLE001 - every failure is reported
            self.bad += 1
            print("not ok %d - %s" % (self.n, name))
            for line in ("%s: %s" % (type(e).__name__, e)).splitlines():
                print("# " + line)
        sys.stdout.flush()


def check(cond, what):
    if not cond:
        raise AssertionError(what)


# ---- a single server -------------------------------------------------------

def single_server(prog, work):
    import redis
    port = redisfix.free_ports(1)[0]
    s = redisfix.Server(os.path.join(work, "single"), port)
    try:
        r = Repl(prog, "127.0.0.1:%d" % port)
        check(r.ready.get("standalone") == 1, "not standalone: %s" % r.ready)
        got = r.do("set one 100 4096 3")
        check(got["ok"] == 100, "set: %s" % got)
        got = r.do("get one 100 4096 3")
        check(got["ok"] == 100 and got["bad"] == 0, "get: %s" % got)
        got = r.do("get none 5 4096 3")
        check(got["nil"] == 5, "absent keys: %s" % got)
        peer = redis.Redis(port=port)
        check(peer.get("one:42") == pattern(4096, 3, 42),
              "redis-py reads other bytes")
        r.close()
    finally:
        s.stop()


# ---- a cluster -------------------------------------------------------------

def on_node(cluster, prefix, n, port):
    owner = cluster.slot_owners()
    return sum(1 for i in range(n)
               if owner.get(redisfix.key_slot("%s:%d" % (prefix, i))) == port)


def routing_agrees_with_redis_py(c, r):
    from redis.cluster import ClusterNode, RedisCluster
    check(r.ready.get("masters") == 3 and r.ready.get("standalone") == 0,
          "ready: %s" % r.ready)
    got = r.do("set k 300 16384 5")
    check(got["ok"] == 300, "set: %s" % got)
    st = r.do("stats")
    check(st["moved"] == 0 and st["ask"] == 0,
          "our slots are not the cluster's: %s" % st)
    peer = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p)
                                       for p in c.pub])
    for i in range(300):
        check(peer.get("k:%d" % i) == pattern(16384, 5, i),
              "redis-py reads other bytes under k:%d" % i)
    for i in range(50):
        peer.set("peer:%d" % i, pattern(1000, 9, i))
    got = r.do("get peer 50 1000 9")
    check(got["ok"] == 50, "what redis-py wrote: %s" % got)
    st = r.do("stats")
    check(st["moved"] == 0, "redirected: %s" % st)
    peer.close()


def a_migration_asks_then_moves(c, r):
    n = 40
    got = r.do("set {mig} %d 2048 7" % n)
    check(got["ok"] == n, "set: %s" % got)
    slot = redisfix.key_slot("{mig}:0")
    rows = c.nodes()
    src = next(x for x in rows if x[1] == "master" and x[0] ==
               c.slot_owners()[slot])
    dst = next(x for x in rows if x[1] == "master" and x[0] != src[0])
    s_src, s_dst = c.by_pub(src[0]), c.by_pub(dst[0])
    s_dst.cli("CLUSTER", "SETSLOT", slot, "IMPORTING", src[2])
    s_src.cli("CLUSTER", "SETSLOT", slot, "MIGRATING", dst[2])
    half = ["{mig}:%d" % i for i in range(0, n, 2)]
    out = s_src.cli("MIGRATE", "127.0.0.1", s_dst.port, "", 0, 5000,
                    "KEYS", *half)
    check("OK" in out, "MIGRATE: %s" % out)
    before = r.do("stats")
    got = r.do("get {mig} %d 2048 7" % n)
    check(got["ok"] == n and got["bad"] == 0, "mid-migration: %s" % got)
    st = r.do("stats")
    check(st["ask"] - before["ask"] == n // 2, "ASK followed: %s" % st)
    out = s_src.cli("MIGRATE", "127.0.0.1", s_dst.port, "", 0, 5000,
                    "KEYS", *["{mig}:%d" % i for i in range(1, n, 2)])
    for s in c.servers:
        if s.alive():
            s.cli("CLUSTER", "SETSLOT", slot, "NODE", dst[2])
    before = st
    got = r.do("get {mig} %d 2048 7" % n)
    check(got["ok"] == n, "after the migration: %s" % got)
    st = r.do("stats")
    check(st["moved"] > before["moved"], "MOVED followed: %s" % st)
    got = r.do("get {mig} %d 2048 7" % n)
    st2 = r.do("stats")
    check(got["ok"] == n and st2["moved"] == st["moved"],
          "the map was not corrected: %s %s" % (got, st2))


def a_closed_port_fails_its_keys_alone(c, r):
    n = 300
    m = c.masters()[0]
    off = on_node(c, "k", n, m)
    check(0 < off < n, "keys on the node: %d" % off)
    c.proxy(m).close()
    try:
        got = r.do("get k %d 16384 5" % n)
        check(got["ok"] == n - off and failed(got) == off and
              got["bad"] == 0, "with the port closed: %s" % got)
        check(got["ms"] < TIMEOUT_MS + SLACK_MS, "took %s ms" % got["ms"])
        got = r.do("get k %d 16384 5" % n)
        check(got["ok"] == n - off, "again: %s" % got)
    finally:
        c.proxy(m).open()
    time.sleep(1.2)          # RC_DOWN_MS: the node is tried again after it
    before = r.do("stats")
    got = r.do("get k %d 16384 5" % n)
    check(got["ok"] == n, "the port open again: %s" % got)
    st = r.do("stats")
    check(st["connects"] > before["connects"], "reconnected: %s" % st)


def a_slow_node_costs_one_timeout(c, r):
    n = 300
    m = c.masters()[1]
    off = on_node(c, "k", n, m)
    c.proxy(m).delay_ms = 3 * TIMEOUT_MS
    try:
        got = r.do("get k %d 16384 5" % n)
        check(got["ok"] == n - off and got["etimedout"] == off,
              "with a slow node: %s" % got)
        check(TIMEOUT_MS - 50 <= got["ms"] < TIMEOUT_MS + SLACK_MS,
              "the batch took %s ms, its timeout %d" % (got["ms"], TIMEOUT_MS))
    finally:
        c.proxy(m).delay_ms = 0
        c.proxy(m).close()   # the delayed connections go with it
        c.proxy(m).open()
    time.sleep(1.2)
    got = r.do("get k %d 16384 5" % n)
    check(got["ok"] == n, "fast again: %s" % got)


def get_until_all(r, n, timeout=10):
    """GETs of k:0..n-1 again until all come (or @timeout s pass)."""
    deadline = time.time() + timeout
    while True:
        got = r.do("get k %d 16384 5" % n)
        if got["ok"] == n or time.time() > deadline:
            return got
        time.sleep(0.2)


def a_killed_master_fails_over(c, r):
    n = 300
    c.replicate()
    m = c.masters()[2]
    off = on_node(c, "k", n, m)
    c.by_pub(m).kill()
    got = r.do("get k %d 16384 5" % n)
    check(got["ok"] == n - off and failed(got) == off and got["bad"] == 0,
          "with the master dead: %s" % got)
    c.wait_ok(masters=3)
    got = get_until_all(r, n)
    check(got["ok"] == n and got["bad"] == 0,
          "after the failover: %s" % got)
    check(m not in c.masters(), "the killed master still serves slots")


def a_manual_failover_moves(c, r):
    n = 300
    rows = c.nodes()
    rep = next(x for x in rows if x[1] == "replica")
    c.replicate()
    before = r.do("stats")
    c.by_pub(rep[0]).cli("CLUSTER", "FAILOVER")
    deadline = time.time() + 10
    while rep[0] not in c.masters() and time.time() < deadline:
        time.sleep(0.1)
    check(rep[0] in c.masters(), "the replica did not take over")
    got = get_until_all(r, n)
    check(got["ok"] == n, "after a manual failover: %s" % got)
    st = r.do("stats")
    check(st["moved"] > before["moved"] or st["refreshes"] > before["refreshes"],
          "the client did not learn the new master: %s" % st)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: cluster_test.py RC_REPL")
    prog = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="kva-redis-")
    tap = Tap()
    print("TAP version 13")
    print("1..7")
    tap.run("a single server: set, get, absent keys, redis-py reads them",
            single_server, prog, work)
    c = None
    try:
        c = redisfix.Cluster(os.path.join(work, "cluster"))
        r = Repl(prog, c.seeds())
        tap.run("3+3 cluster: our key slots are the cluster's; redis-py agrees both ways",
                routing_agrees_with_redis_py, c, r)
        tap.run("a slot migrating: ASK for the keys moved, MOVED once it is done",
                a_migration_asks_then_moves, c, r)
        tap.run("a node's port closed: its keys fail within the timeout, the rest are served, it reconnects",
                a_closed_port_fails_its_keys_alone, c, r)
        tap.run("a slow node: the batch ends at its timeout, the other nodes' keys served",
                a_slow_node_costs_one_timeout, c, r)
        tap.run("a manual failover: the client follows the new master",
                a_manual_failover_moves, c, r)
        tap.run("a master killed: its keys fail, then its replica serves them all",
                a_killed_master_fails_over, c, r)
        r.close()
    except Exception as e:  # noqa: BLE001
        while tap.n < 7:
            tap.n += 1
            tap.bad += 1
            print("not ok %d - cluster set-up: %s" % (tap.n, e))
    finally:
        if c:
            c.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("# %d/%d passed" % (tap.n - tap.bad, tap.n))
    sys.exit(1 if tap.bad else 0)


if __name__ == "__main__":
    main()
