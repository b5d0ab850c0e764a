# SPDX-License-Identifier: GPL-2.0
"""The remote tier end to end, in the VM, against kvarena.ko, libkvarena
and kvarenactl as installed (vm_installed.sh runs it as root): two host
arenas stand for two nodes, node-a and node-b, each with its own
`kvarenactl remote` agent, on one Redis cluster of 3 masters and 3
replicas (Debian's redis-server, carried into the VM; redis-cli --cluster
create), reached through the test's proxies (redisfix.py).  Engines are
engine.py run as tenants' uids.

 - node B serves a prefix node A computed, byte-exact, and what the
   cluster holds is what the specification says (kvblock_spec.py, written
   from Documentation/remote.rst, checks every value: MAC, geometry,
   CRC32C, the payload against the engine's bytes);
 - another tenant (another secret) finds nothing, and a tenant the node
   has no secret for is told so and computes;
 - a value with a flipped payload byte, one of another geometry (a valid
   MAC: made with the tenant's secret) are misses, said on the agent's
   standard error, and the run ends before them;
 - a killed master, the failover, a node's port closed: the engine gets
   what the live masters hold within the agent's timeout, and all of it
   once the cluster serves again; no frame is lost in either arena;
 - a store that failed (its master's port closed) is tried again once,
   and the block is in the cluster after it;
 - a domain's budget keeps its newest blocks, and evicts the oldest from
   the cluster;
 - node A's agent tells (--zmq) what it stored and what its budget
   evicted, as vLLM's KV events with the medium REMOTE, read by the
   routers' own decoders (llm-d's Go one, Dynamo's Rust one - carried
   from selftests/events - and vLLM's rules, vllm_rules.py): hashes,
   parents, token ids and tier are those of the engine's prefix.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import kvarena
import ktap
from ktap import eq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvblock_spec as spec  # noqa: E402
import redisfix  # noqa: E402

suite = ktap.Suite("remote_tier")
KVARENACTL = "kvarenactl"
HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.path.join(HERE, "engine.py")
FS = 64 << 10
FRAMES = 64
TENANT, OTHER, STRANGER, KVGROUP = 1000, 1002, 1003, 990
GEO = dict(frame_size=FS, layers=2, kv_heads=2, head_dim=16,
           dtype=spec.DTYPES["fp16"], tokens=FS // (2 * 2 * 2 * 16 * 2))
TIMEOUT_MS = 300
TOPIC = "kv@node-a-remote@model"
LLMD = os.path.join(HERE, "kvev-llmd")
DYNAMO = os.path.join(HERE, "kvev-dynamo")
SLACK_MS = 3000         # TCG: the engine's own work on top of the timeout

work = tempfile.mkdtemp(prefix="kva-remote-")


def free_port():
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]
state = {"agents": {}, "cluster": None}


def secret(name):
    path = os.path.join(work, "secret-" + name)
    with open(path, "wb") as f:
        f.write(os.urandom(32))
    os.chmod(path, 0o600)
    with open(path, "rb") as f:
        return path, f.read()


def start_agent(node, conf_lines, extra=()):
    conf = os.path.join(work, node + ".conf")
    with open(conf, "w") as f:
        f.write("\n".join(conf_lines) + "\n")
    err = open(os.path.join(work, node + ".err"), "w+")
    p = subprocess.Popen([KVARENACTL, "remote", node, "--config", conf] +
                         list(extra),
                         stdout=subprocess.PIPE, stderr=err, text=True)
    line = p.stdout.readline()
    if not line.startswith("remote: %s:" % node):
        p.kill()
        err.seek(0)
        raise AssertionError("agent %s said %r, stderr %r" %
                             (node, line, err.read()))
    state["agents"][node] = (p, err)
    return p


def agent_err(node):
    err = state["agents"][node][1]
    err.flush()
    err.seek(0)
    return err.read()


def engine(op, node, ns, frames, uid=TENANT):
    r = subprocess.run([sys.executable, ENGINE, op, node, ns, str(frames)],
                       user=uid, group=KVGROUP, capture_output=True,
                       text=True, timeout=300,
                       env=dict(os.environ, KVA_REMOTE_MS="20000"))
    if r.returncode:
        raise AssertionError("engine %s %s: %s" % (op, node, r.stderr))
    return json.loads(r.stdout)


def prefix_keys(ns, frames):
    """The chain keys of prefix @ns's @frames blocks (engine.py's)."""
    import engine as eng
    g = kvarena.Geometry(layers=2, kv_heads=2, head_dim=16, dtype="fp16",
                         frame_size=FS)
    return kvarena.prefix_keys(g, eng.tokens(ns.encode(),
                                             frames * g.tokens_per_frame),
                               ns.encode())


def stored(ns, frames, sec, timeout=60):
    """Wait until the cluster holds prefix @ns's @frames blocks (node A's
    agent stores them after the publish); their keys and values."""
    keys = prefix_keys(ns, frames)
    c = state["cluster"]
    deadline = time.time() + timeout
    vals = [None] * frames
    while time.time() < deadline:
        for i, k in enumerate(keys):
            if vals[i] is None:
                v = c.call("GET", spec.store_key(sec, GEO, bytes(k)))
                vals[i] = v if isinstance(v, bytes) else None
        if all(v is not None for v in vals):
            return keys, vals
        time.sleep(0.2)
    raise AssertionError("the cluster holds %d of %d blocks of %s; node A's "
                         "agent said %r" %
                         (sum(v is not None for v in vals), frames, ns,
                          agent_err("node-a")[-2000:]))


def arena_ok(name):
    """No frame lost: with the engines gone and the agents idle, nobody
    holds a frame, and every frame is free or cached."""
    st = kvarena.arena_stat(name)
    eq(st.nr_held, 0, "%s: frames held" % name)
    eq(st.nr_free + st.nr_cached, st.nr_frames,
       "%s: frames free or cached" % name)
    return st


def setup():
    for n in ("node-a", "node-b"):
        kvarena.create_arena(n, nr_frames=FRAMES, frame_size=FS)
    # A node timeout that a slow (TCG) moment does not reach.
    c = redisfix.Cluster(os.path.join(work, "redis"), node_timeout=5000)
    state["cluster"] = c
    path_t, state["sec_t"] = secret("tenant")
    path_o, state["sec_o"] = secret("other")
    state["zmq"] = "tcp://127.0.0.1:%d" % free_port()
    for node in ("node-a", "node-b"):
        extra = ["--zmq", "tcp://*:%s" % state["zmq"].rsplit(":", 1)[1],
                 "--topic", TOPIC] if node == "node-a" else []
        start_agent(node, [
            "redis " + c.seeds(),
            "timeout %dms" % TIMEOUT_MS,
            "node " + node,
            "geometry layers=2 kv-heads=2 head-dim=16 dtype=fp16",
            "domain uid:%d secret=%s ttl=1h" % (TENANT, path_t),
            "domain uid:%d secret=%s ttl=1h budget=%d" %
            (OTHER, path_o, 3 * (spec.HEADER_SIZE + FS)),
        ], extra)


@suite.test
def node_b_serves_a_prefix_node_a_computed_byte_exact():
    r = engine("publish", "node-a", "p1", 6)
    eq(r["found"], 6, "published")
    keys, vals = stored("p1", 6, state["sec_t"])
    import engine as eng
    for i, v in enumerate(vals):
        eq(spec.check(v, state["sec_t"], GEO, bytes(keys[i])), "ok",
           "block %d by the specification" % i)
        h, payload = spec.decode(v)
        eq(payload, eng.frame_bytes(b"p1", i, FS), "block %d's payload" % i)
        eq(h["writer"], b"node-a", "writer")
        eq(h["tokens"], GEO["tokens"], "tokens")
        if i:
            eq(h["parent"], bytes(keys[i - 1]), "block %d's parent" % i)
    hits = kvarena.arena_stat("node-b").cache_hits
    r = engine("attach", "node-b", "p1", 6)
    eq(r["found"], 6, "node B found")
    assert r["exact"], "node B read other bytes"
    assert kvarena.arena_stat("node-b").cache_hits > hits, \
        "node B's arena counted no hit"
    # Now node B's own cache has it: the second engine finds it there.
    r = engine("attach", "node-b", "p1", 6)
    eq((r["found"], r["exact"]), (6, True), "again, from node B's cache")
    arena_ok("node-a")
    arena_ok("node-b")


@suite.test
def another_tenant_finds_nothing_and_a_stranger_is_refused():
    engine("publish", "node-a", "p2", 3)
    stored("p2", 3, state["sec_t"])
    r = engine("attach", "node-b", "p2", 3, uid=OTHER)
    eq(r["found"], 0, "another secret's tenant")
    r = engine("attach", "node-b", "p2", 3, uid=STRANGER)
    eq(r["found"], 0, "a tenant without a secret on this node")
    r = engine("attach", "node-b", "p2", 3)
    eq((r["found"], r["exact"]), (3, True), "the tenant itself")


@suite.test
def a_corrupted_value_is_a_miss_and_ends_the_run():
    engine("publish", "node-a", "p3", 4)
    keys, vals = stored("p3", 4, state["sec_t"])
    k = spec.store_key(state["sec_t"], GEO, bytes(keys[2]))
    v = bytearray(vals[2])
    v[spec.HEADER_SIZE + 1000] ^= 0x40
    state["cluster"].call("SET", k, bytes(v))
    r = engine("attach", "node-b", "p3", 4)
    eq((r["found"], r["exact"]), (2, True), "the run before the bad block")
    assert "checksum check" in agent_err("node-b"), agent_err("node-b")


@suite.test
def a_value_of_another_geometry_is_a_miss():
    import engine as eng
    engine("publish", "node-a", "p4", 2)
    keys, vals = stored("p4", 2, state["sec_t"])
    g2 = dict(GEO, head_dim=8, tokens=GEO["tokens"] * 2)
    v = spec.encode(state["sec_t"], g2, bytes(keys[0]),
                    eng.frame_bytes(b"p4", 0, FS), writer=b"elsewhere")
    state["cluster"].call("SET", spec.store_key(state["sec_t"], GEO,
                                                bytes(keys[0])), v)
    r = engine("attach", "node-b", "p4", 2)
    eq(r["found"], 0, "a block of another geometry")
    assert "geometry check" in agent_err("node-b"), agent_err("node-b")


def spread(ns, frames, sec):
    """Which master serves each block of @ns now."""
    keys, _ = stored(ns, frames, sec)
    c = state["cluster"]
    return [c.owner(spec.store_key(sec, GEO, bytes(k))) for k in keys]


@suite.test
def a_closed_port_costs_a_timeout_then_the_prefix_comes():
    n = 8
    engine("publish", "node-a", "p5", n)
    owners = spread("p5", n, state["sec_t"])
    m = owners[n // 2]
    first = owners.index(m)
    c = state["cluster"]
    c.proxy(m).close()
    try:
        r = engine("attach", "node-b", "p5", n)
        eq((r["found"], r["exact"]), (first, True),
           "the run before the closed node's first block")
        assert r["ms"] < TIMEOUT_MS + SLACK_MS, r
    finally:
        c.proxy(m).open()
    time.sleep(1.5)
    r = engine("attach", "node-b", "p5", n)
    eq((r["found"], r["exact"]), (n, True), "after the port opened")
    arena_ok("node-b")


@suite.test
def a_store_that_failed_is_tried_again():
    n = 6
    c = state["cluster"]
    # A master's port closed as node A's agent stores: that master's
    # blocks fail, and are stored on their retry once it is open again.
    # Opened as soon as the agent says it will try again (RETRY_MS later);
    # a moment slow enough to miss that ends in "dropped", and the case
    # is run again on another prefix.
    for attempt in range(3):
        ns = "p8%d" % attempt
        owners = [c.owner(spec.store_key(state["sec_t"], GEO, bytes(k)))
                  for k in prefix_keys(ns, n)]
        m = owners[0]
        said = len(agent_err("node-a"))
        c.proxy(m).close()
        try:
            engine("publish", "node-a", ns, n)
            deadline = time.time() + 30
            while time.time() < deadline:
                new = agent_err("node-a")[said:]
                if "storing a block failed" in new:
                    break
                time.sleep(0.05)
        finally:
            c.proxy(m).open()
        assert "storing a block failed" in new, new
        if "tried again in a moment" in new and "dropped" not in new:
            break
    else:
        raise AssertionError("three times too slow to open the port "
                             "before the retry: %r" % new)
    keys, vals = stored(ns, n, state["sec_t"])
    for i, v in enumerate(vals):
        eq(spec.check(v, state["sec_t"], GEO, bytes(keys[i])), "ok",
           "block %d by the specification" % i)
    r = engine("attach", "node-b", ns, n)
    eq((r["found"], r["exact"]), (n, True), "node B after the retry")
    arena_ok("node-a")


@suite.test
def a_killed_master_then_its_replica_serves():
    n = 8
    engine("publish", "node-a", "p6", n)
    owners = spread("p6", n, state["sec_t"])
    c = state["cluster"]
    c.replicate()
    m = owners[0]
    c.by_pub(m).kill()
    r = engine("attach", "node-b", "p6", n)
    eq(r["found"], 0, "the dead master holds the first block")
    assert r["ms"] < TIMEOUT_MS + SLACK_MS, r
    c.wait_ok(masters=3, timeout=60)
    deadline = time.time() + 30
    while True:
        r = engine("attach", "node-b", "p6", n)
        if r["found"] == n or time.time() > deadline:
            break
        time.sleep(1)
    eq((r["found"], r["exact"]), (n, True), "after the failover")
    arena_ok("node-a")
    arena_ok("node-b")


@suite.test
def a_domain_keeps_its_budget_newest_first():
    engine("publish", "node-a", "p7", 6, uid=OTHER)
    deadline = time.time() + 60
    c = state["cluster"]
    idx = "kva1:idx:{%s}" % spec.domain_id(state["sec_o"]).hex()
    while time.time() < deadline:
        members = c.call("ZRANGE", idx, 0, -1)
        if isinstance(members, list) and len(members) == 3:
            break
        time.sleep(0.2)
    eq(len(members), 3, "the index of a 3-block budget (node A's agent "
       "said %r)" % agent_err("node-a")[-2000:])
    import engine as eng
    g = kvarena.Geometry(layers=2, kv_heads=2, head_dim=16, dtype="fp16",
                         frame_size=FS)
    keys = kvarena.prefix_keys(g, eng.tokens(b"p7", 6 * g.tokens_per_frame), b"p7")
    there = [c.call("EXISTS", spec.store_key(state["sec_o"], GEO, bytes(k)))
             for k in keys]
    eq(there, [0, 0, 0, 1, 1, 1], "the oldest three evicted")


class Lines:
    """A router's decoder (kvev-llmd, kvev-dynamo) subscribed to node A's
    stream: its JSON lines as they come."""

    def __init__(self, argv):
        import threading
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.lines = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for x in self.p.stdout:
            self.lines.append(json.loads(x))

    def seen(self):
        return bool(self.lines)

    def finish(self, last):
        """Told the last sequence number, it exits: its lines."""
        self.p.stdin.write("%d\n" % last)
        self.p.stdin.flush()
        eq(self.p.wait(timeout=60), 0, "%s exit status" % self.p.args[0])
        self.t.join(timeout=60)
        eq([x.get("error") for x in self.lines], [None] * len(self.lines),
           "%s's errors" % self.p.args[0])
        return [ev for x in self.lines for ev in x["events"]]

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


class VllmSub:
    """vLLM's subscriber's rules (vllm_rules.py) over a SUB socket."""

    def __init__(self, endpoint):
        import zmq
        self.sock = zmq.Context.instance().socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        self.sock.connect(endpoint)
        self.batches = []

    def poll(self, ms):
        import vllm_rules
        while self.sock.poll(ms):
            topic, seq, payload = self.sock.recv_multipart()
            eq(topic, TOPIC.encode(), "topic")
            self.batches.append((int.from_bytes(seq, "big"),) +
                                vllm_rules.decode("vllm", payload))
            ms = 0

    def seen(self):
        self.poll(0)
        return bool(self.batches)


def told_blocks(events, tier_key, tier):
    """Stored and removed blocks in the events a decoder reported:
    ("stored", hash, parent, tokens) and ("removed", hash), in order; the
    tier each reported checked."""
    out = []
    for ev in events:
        t = ev.get("type")
        if t == "BlockStored":
            eq(ev[tier_key], tier, "BlockStored's %s" % tier_key)
            bs = ev["block_size"]
            toks = ev["token_ids"] if "token_ids" in ev else \
                [x for b in ev["blocks"] for x in b]
            for i, h in enumerate(ev["block_hashes"]):
                parent = ev["parent_block_hash"] if i == 0 else \
                    ev["block_hashes"][i - 1]
                out.append(("stored", h, parent or None,
                            tuple(toks[i * bs:(i + 1) * bs])))
        elif t == "BlockRemoved":
            if tier_key in ev:
                eq(ev[tier_key], tier, "BlockRemoved's %s" % tier_key)
            out.extend(("removed", h) for h in ev["block_hashes"])
    return out


def prefix_truth(ns, frames, uid):
    """What a router must be told of prefix @ns's blocks, stored."""
    import engine as eng
    import kvev_hash
    dom = (1 << 56) | uid
    keys = [bytes(k) for k in prefix_keys(ns, frames)]
    toks = eng.tokens(ns.encode(), frames * GEO["tokens"])
    T = GEO["tokens"]
    return [("stored", kvev_hash.block_hash(k, dom),
             kvev_hash.block_hash(keys[i - 1], dom) if i else None,
             tuple(toks[i * T:(i + 1) * T]))
            for i, k in enumerate(keys)]


@suite.test
def the_agent_tells_routers_what_it_stored_and_evicted():
    subs = {"vllm": VllmSub(state["zmq"]),
            "llmd": Lines([LLMD, "-sub", state["zmq"]]),
            "dynamo": Lines([DYNAMO, "--sub", state["zmq"], "--block-size",
                             str(GEO["tokens"])])}
    try:
        # Subscribers join a PUB late (ZeroMQ's slow joiner): one-frame
        # prefixes until each has had a batch.
        for i in range(30):
            engine("publish", "node-a", "warm%d" % i, 1)
            deadline = time.time() + 3
            while time.time() < deadline and \
                    not all(x.seen() for x in subs.values()):
                subs["vllm"].poll(100)
            if all(x.seen() for x in subs.values()):
                break
        else:
            raise AssertionError("the subscribers saw nothing in 30 tries")
        # The tenant's three blocks, stored; the other tenant's six (a
        # budget of three): its three newest of before (p7's last) and
        # the six's first three evicted, oldest first.
        engine("publish", "node-a", "p10", 3)
        engine("publish", "node-a", "p11", 6, uid=OTHER)
        import kvev_hash
        dom_o = (1 << 56) | OTHER
        p7 = [bytes(k) for k in prefix_keys("p7", 6)]
        p11 = prefix_truth("p11", 6, OTHER)
        want = prefix_truth("p10", 3, TENANT) + p11 + \
            [("removed", kvev_hash.block_hash(k, dom_o)) for k in p7[3:]] + \
            [("removed", b[1]) for b in p11[:3]]
        hashes = {w[1] for w in want}

        def mine(blocks):
            return [b for b in blocks if b[1] in hashes]

        def vllm_blocks():
            return mine(told_blocks([e for b in subs["vllm"].batches
                                     for e in b[3]], "medium", "REMOTE"))
        deadline = time.time() + 60
        while time.time() < deadline and len(vllm_blocks()) < len(want):
            subs["vllm"].poll(200)
        got = vllm_blocks()
        # Stores and evictions interleave batch by batch: each in order.
        # A store retried after a timeout that Redis had done is told
        # twice (harmless to a router): first tellings only.
        def kinds(bl, k):
            out = []
            for b in bl:
                if b[0] == k and (k == "removed" or b not in out):
                    out.append(b)
            return out
        eq(kinds(got, "stored"), kinds(want, "stored"), "vLLM's rules: stored")
        eq(kinds(got, "removed"), kinds(want, "removed"),
           "vLLM's rules: removed")
        last = subs["vllm"].batches[-1][0]
        for name, key, tier in (("llmd", "tier", "remote"),
                                ("dynamo", "medium", "REMOTE")):
            got = mine(told_blocks(subs[name].finish(last), key, tier))
            eq(kinds(got, "stored"), kinds(want, "stored"), name + ": stored")
            eq(kinds(got, "removed"), kinds(want, "removed"),
               name + ": removed")
        # Idle with its subscribers and sockets, the agent sleeps: under
        # half a second of CPU in three (its ZeroMQ descriptors do not
        # keep poll() awake).
        pid = state["agents"]["node-a"][0].pid
        cpu = lambda: sum(int(x) for x in
                          open("/proc/%d/stat" % pid).read()
                          .rsplit(")", 1)[1].split()[11:13])
        c0 = cpu()
        time.sleep(3)
        used = (cpu() - c0) / os.sysconf("SC_CLK_TCK")
        assert used < 0.5, "node A's agent used %.2f s of CPU idle" % used
    finally:
        for x in subs.values():
            if isinstance(x, Lines):
                x.kill()


def ask_agent(req, uid):
    """Send @req to node-b's agent as @uid; its status (or None)."""
    code = ("import socket, struct, sys\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
            "s.connect('/run/kvarena/remote/node-b.sock')\n"
            "s.send(bytes.fromhex(sys.argv[1]))\n"
            "r = s.recv(64)\n"
            "print(struct.unpack_from('<IHHi', r)[3] if len(r) >= 12 else 'short')\n")
    r = subprocess.run([sys.executable, "-c", code, req.hex()], user=uid,
                       group=KVGROUP, capture_output=True, text=True,
                       timeout=60)
    if r.returncode:
        raise AssertionError("asking the agent: %s" % r.stderr)
    return r.stdout.strip()


@suite.test
def the_agent_refuses_bad_requests_and_other_clients():
    import errno
    import struct
    key = bytes(32)
    head = lambda cid, nr: struct.pack("<IHHII", 0x4B565246, 1, 0, cid, nr)
    eq(ask_agent(b"not a request", TENANT), str(-errno.EINVAL), "garbage")
    eq(ask_agent(head(1, 2) + key, TENANT), str(-errno.EINVAL),
       "fewer keys than it says")
    eq(ask_agent(head(1, 65) + key * 65, TENANT), str(-errno.EINVAL),
       "more keys than a request may ask")
    eq(ask_agent(head(0xFFFFFFF0, 1) + key, TENANT), str(-errno.ENOENT),
       "no such client")
    # A client of root's: another uid may not fetch as it.
    a = kvarena.open("node-b", mode="device", label="root-client")
    try:
        eq(ask_agent(head(a.info.client_id, 1) + key, TENANT),
           str(-errno.EPERM), "another process's client")
    finally:
        a.close()


@suite.test
def the_agents_count_what_they_did():
    out = {}
    for node, (p, err) in state["agents"].items():
        p.send_signal(signal.SIGTERM)
        o, _ = p.communicate(timeout=60)
        eq(p.returncode, 0, "%s's exit status" % node)
        out[node] = o
    del state["agents"]["node-a"], state["agents"]["node-b"]
    a, b = out["node-a"], out["node-b"]
    assert "stored 0 " not in a, a
    assert "stores retried 0," not in a, a
    assert "; told 0," not in a and "batches not sent 0" in a, a
    assert "fetched 0 " not in b, b
    assert " checksum 1" in b and " geometry 1" in b, b


@atexit.register
def teardown():
    for p, err in state["agents"].values():
        p.kill()
        p.wait()
    if state["cluster"]:
        state["cluster"].stop()
    for n in ("node-a", "node-b"):
        try:
            kvarena.destroy_arena(n)
        except OSError:
            pass
    shutil.rmtree(work, ignore_errors=True)


setup()
suite.run()
