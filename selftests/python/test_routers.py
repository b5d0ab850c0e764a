# SPDX-License-Identifier: GPL-2.0
"""kvarenactl events --zmq read by the routers' own decoding rules and
libraries, in the VM, against kvarena.ko and kvarenactl as installed
(vm_installed.sh runs it as root after modprobe kvarena events_ring_kib=64):

 - kvev-llmd (Go, github.com/vmihailenco/msgpack/v5, libzmq) with
   llm-d-kv-cache's rules and with llm-d-kv-cache-manager's;
 - kvev-dynamo (Rust, serde and rmp-serde, libzmq) with Dynamo's;
 - vllm_rules.py, vLLM's own subscriber's (msgspec's rules by hand);

all subscribed at once to one kvarenactl for every --layout, with a run
in which two tenants (uid 0 and uid 1000, two cache domains) publish the
same prefix in two batches each, the arena takes the cached frames back
and is destroyed.  Every decoded field of every event is checked against
the module's own records; so are the sequence numbers, the replay round
trip (Dynamo's bootstrap and vLLM's framing) and, for each layout, which
consumer refuses it: the test fails as well when a consumer accepts what
its upstream would refuse.
"""

import grp
import json
import os
import subprocess
import time

import zmq

import kvarena
import ktap
import kvev_hash
import vllm_rules
from ktap import eq, event_burst, wait_clients, wait_for_events_fd

suite = ktap.Suite("python_routers")
MiB = 1 << 20
GEO = kvarena.Geometry(layers=2, kv_heads=4, head_dim=128, dtype="fp16",
                       frame_size=MiB)      # 256 tokens per frame
T = GEO.tokens_per_frame
KVARENACTL = "kvarenactl"
HERE = os.path.dirname(os.path.abspath(__file__))
LLMD = os.path.join(HERE, "kvev-llmd")
DYNAMO = os.path.join(HERE, "kvev-dynamo")
TOPIC = "kv@pod-a@model-x"
TENANT_UID = 1000

# What each consumer makes of each layout: "ok" decodes every message,
# "batch" refuses every message, "events" keeps the messages but skips
# the events named (kv-cache-manager skips an event it cannot decode).
EXPECT = {
    "vllm": {"llmd": "ok",
             "manager": ("events", {"BlockStored", "BlockRemoved",
                                    "AllBlocksCleared"}),
             "dynamo": "ok", "vllm": "ok"},
    "vllm-array": {"llmd": "ok", "manager": ("events", {"BlockStored"}),
                   "dynamo": "ok", "vllm": "ok"},
    "vllm-medium": {"llmd": "ok", "manager": "ok", "dynamo": "ok", "vllm": "ok"},
    "vllm-first": {"llmd": "batch", "manager": "batch", "dynamo": "batch",
                   "vllm": "ok"},
}


def as_tenant():
    os.setgroups([grp.getgrnam("kvarena").gr_gid])
    os.setgid(TENANT_UID)
    os.setuid(TENANT_UID)


class Live:
    """vLLM's subscriber: SUB, every message decoded by vllm_rules."""

    def __init__(self, endpoint, layout, procs):
        self.procs = procs          # what must keep running meanwhile
        self.sock = zmq.Context.instance().socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        self.sock.connect(endpoint)
        self.layout = layout
        self.batches = []           # (seq, ts, rank, events)

    def until(self, pred, what, timeout=60):
        deadline = time.monotonic() + timeout
        while not pred():
            left = deadline - time.monotonic()
            assert left > 0, "no %s within %d s" % (what, timeout)
            for name, p in self.procs.items():
                assert p.poll() is None, "%s exited with %r" % (name,
                                                                p.returncode)
            if self.sock.poll(int(min(left, 1) * 1000)):
                topic, seq, payload = self.sock.recv_multipart()
                eq(topic, TOPIC.encode())
                eq(len(seq), 8)
                s = int.from_bytes(seq, "big")
                eq(s, len(self.batches), "sequence numbers from 0, consecutive")
                self.batches.append((s,) + vllm_rules.decode(self.layout,
                                                             payload))

    def events(self):
        return [e for b in self.batches for e in b[3]]


def consumer(argv):
    return subprocess.Popen(argv, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def finish(proc, last_seq):
    """Tell a consumer the last sequence number; its lines."""
    out, _ = proc.communicate("%d\n" % last_seq, timeout=60)
    eq(proc.returncode, 0, "%s exit status" % proc.args[0])
    return [json.loads(x) for x in out.splitlines()]


def truth(module_events):
    """The module's records, per block: what every consumer must find."""
    out = []
    for e in module_events:
        if e.type == "stored":
            out.append(("stored", kvev_hash.block_hash(e.key, e.domain),
                        kvev_hash.block_hash(e.parent, e.domain)
                        if e.parent else None, e.tokens,
                        kvev_hash.salt(e.domain)))
        elif e.type == "removed":
            out.append(("removed", kvev_hash.block_hash(e.key, e.domain)))
        else:
            out.append(("cleared",))
    return out


def blocks_vllm(events, layout):
    out = []
    for ev in events:
        t = ev["type"]
        if t == "BlockStored":
            bs = ev["block_size"]
            eq((bs, ev["lora_id"], ev["medium"] if layout != "vllm-first" else "CPU"),
               (T, None, "CPU"), "BlockStored fields")
            salt = None
            if ev.get("extra_keys") is not None:
                eq(len(ev["extra_keys"]), len(ev["block_hashes"]))
                if ev["extra_keys"][0]:
                    salt = ev["extra_keys"][0][0]
            if layout == "vllm":
                eq((ev["group_idx"], ev["kv_cache_spec_kind"]),
                   (0, "full_attention"))
            for i, h in enumerate(ev["block_hashes"]):
                parent = ev["parent_block_hash"] if i == 0 else \
                    ev["block_hashes"][i - 1]
                out.append(("stored", h, parent,
                            tuple(ev["token_ids"][i * bs:(i + 1) * bs]),
                            salt if i == 0 else None))
        elif t == "BlockRemoved":
            out.extend(("removed", h) for h in ev["block_hashes"])
        else:
            out.append(("cleared",))
    return out


def blocks_llmd(events):
    out = []
    for ev in events:
        t = ev.get("type")
        if t == "BlockStored":
            bs = ev["block_size"]
            eq((bs, ev["tier"]), (T, "cpu"), "llm-d BlockStored")
            ek = ev.get("extra_keys") or []
            for i, h in enumerate(ev["block_hashes"]):
                parent = (ev["parent_block_hash"] or None) if i == 0 else \
                    ev["block_hashes"][i - 1]
                out.append(("stored", h, parent,
                            tuple(ev["token_ids"][i * bs:(i + 1) * bs]),
                            ek[i][0] if i < len(ek) and ek[i] else None))
        elif t == "BlockRemoved":
            eq(ev["tier"], "cpu")
            out.extend(("removed", h) for h in ev["block_hashes"])
        elif t == "AllBlocksCleared":
            out.append(("cleared",))
    return out


def blocks_dynamo(events):
    out = []
    for ev in events:
        t = ev["type"]
        if t == "BlockStored":
            eq((ev["block_size"], ev["medium"]), (T, "CPU"), "Dynamo BlockStored")
            eq(len(ev["blocks"]), len(ev["block_hashes"]),
               "blocks Dynamo keeps (block_size = kv_block_size, tokens cover)")
            for i, h in enumerate(ev["block_hashes"]):
                parent = ev["parent_block_hash"] if i == 0 else \
                    ev["block_hashes"][i - 1]
                out.append(("stored", h, parent, tuple(ev["blocks"][i]),
                            ev["cache_namespace"]))
        elif t == "BlockRemoved":
            out.extend(("removed", h) for h in ev["block_hashes"])
        elif t == "AllBlocksCleared":
            out.append(("cleared",))
    return out


def salts_first_only(blocks):
    """Consumers see a salt on a chain's first block only (vLLM sends it
    there): drop the salt of the others before comparing."""
    return [b[:4] + (b[4] if b[2] is None else None,) if b[0] == "stored"
            else b for b in blocks]


def run_layout(layout, port):
    name = "rt-" + layout
    pub, rep = "tcp://127.0.0.1:%d" % port, "tcp://127.0.0.1:%d" % (port + 1)
    toks = list(range(9000, 9000 + 3 * T))
    keys = kvarena.prefix_keys(GEO, toks, b"routers")
    kvarena.create_arena(name, nr_frames=8, frame_size=MiB,
                         bytes_per_token=GEO.bytes_per_token)
    truth_fd = kvarena.events(name, oldest=True)
    # --oldest: every event of the new arena, whenever kvarenactl starts.
    zp = subprocess.Popen([KVARENACTL, "events", name, "--oldest",
                           "--layout", layout,
                           "--zmq", "tcp://*:%d" % port,
                           "--replay", "tcp://*:%d" % (port + 1),
                           "--topic", TOPIC, "--wait-subscribers", "5",
                           "--linger", "120"])
    procs = {
        "kvarenactl": zp,
        "llmd": consumer([LLMD, "-sub", pub, "-rules", "kv-cache"]),
        "manager": consumer([LLMD, "-sub", pub, "-rules", "kv-cache-manager"]),
        "dynamo": consumer([DYNAMO, "--sub", pub, "--block-size", str(T)]),
        # One subscriber more, on the pod's filter only: kv@ of llm-d.
        "llmd-filter": consumer([LLMD, "-sub", pub, "-filter", "kv@pod-a@"]),
    }
    tenant_json = None
    try:
        if layout == "vllm":
            # A tenant's own reader (not the arena's owner): its domain
            # only; reading before the arena goes.
            tenant_json = subprocess.Popen(
                [KVARENACTL, "events", name, "--oldest"],
                stdout=subprocess.PIPE, text=True, preexec_fn=as_tenant)
            wait_for_events_fd(tenant_json)
        live = Live(pub, layout, procs)

        def tenant_publishes(uid):
            """Two frames in one batch, the third (parent in the batch
            before) in the next."""
            def run():
                a = kvarena.open(name, mode="device", label="rt-%d" % uid)
                s = a.seq(GEO, max_tokens=4096)
                s.grow(3 * T)
                eq(s.publish(keys[:2], tokens=toks[:2 * T]), 2)
                os.write(w, b"1")
                eq(os.read(r2, 1), b"1")
                # The two it published already are its own: one new event.
                s.publish(keys, tokens=toks)
                os._exit(0)
            r, w = os.pipe()
            r2, w2 = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    if uid:
                        as_tenant()
                    run()
                except BaseException as e:
                    print("# tenant %d: %r" % (uid, e), flush=True)
                os._exit(1)
            os.close(w)             # the child's ends: its exit is seen
            os.close(r2)
            eq(os.read(r, 1), b"1", "tenant %d published" % uid)
            n = len(live.events())
            live.until(lambda: len(live.events()) > n,
                       "first batch of %d" % uid)
            eq([(e["type"], len(e["block_hashes"]))
                for e in live.events()[n:]], [("BlockStored", 2)],
               "the first two frames: one event")
            os.write(w2, b"1")
            eq(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), 0)
            n = len(live.events())
            live.until(lambda: len(live.events()) > n,
                       "second batch of %d" % uid)
            eq([(e["type"], len(e["block_hashes"]))
                for e in live.events()[n:]], [("BlockStored", 1)],
               "the third frame, its parent in the batch before")
            os.close(r)
            os.close(w2)

        tenant_publishes(0)
        tenant_publishes(TENANT_UID)
        eq(wait_clients(name, 0), 0)
        with kvarena.open(name, mode="device", label="rt-reclaim") as a:
            h = a.alloc(8)              # the six cached frames taken back
            a.free(h)
        kvarena.destroy_arena(name)
        live.until(lambda: any(e["type"] == "AllBlocksCleared"
                               for e in live.events()), "AllBlocksCleared")
        last = live.batches[-1][0]

        module = list(truth_fd)
        truth_fd.close()
        eq([e.type for e in module],
           ["stored"] * 6 + ["removed"] * 6 + ["cleared"])
        want = truth(module)
        eq(len({w[4] for w in want if w[0] == "stored"}), 2,
           "two tenants' salts")
        eq(len({w[1] for w in want if w[0] == "stored"}), 6,
           "two tenants' copies of a prefix: six blocks to a router")
        del procs["kvarenactl"]
        out = {k: finish(p, last) for k, p in procs.items()}
        if layout == "vllm":
            js, _ = tenant_json.communicate(timeout=60)
            eq(tenant_json.returncode, 0, "the tenant's kvarenactl events")
            out["tenant-json"] = [json.loads(x) for x in js.splitlines()]

        # Replay: Dynamo's bootstrap from 0 and from 2; vLLM's own framing.
        replays = {}
        for start in (0, 2):
            r = subprocess.run([DYNAMO, "--replay", rep, "--from", str(start),
                                "--block-size", str(T)], capture_output=True,
                               text=True, timeout=60)
            eq(r.returncode, 0, "kvev-dynamo --replay: " + r.stderr)
            replays[start] = [json.loads(x) for x in r.stdout.splitlines()]
        dealer = zmq.Context.instance().socket(zmq.DEALER)
        dealer.connect(rep)
        dealer.send_multipart([b"", (1).to_bytes(8, "big")])
        framed = []
        while True:
            assert dealer.poll(60000), "no replay reply"
            framed.append(dealer.recv_multipart())
            if framed[-1][-2] == (-1).to_bytes(8, "big", signed=True):
                break
        dealer.close()
        zp.terminate()
        eq(zp.wait(timeout=60), 0, "kvarenactl events after SIGTERM")

    finally:
        for p in list(procs.values()) + [zp, tenant_json]:
            if p is None:
                continue
            if p.poll() is None:
                p.kill()
                p.wait()
        try:
            kvarena.destroy_arena(name)
        except OSError:
            pass
        if "live" in locals():
            live.sock.close(0)
    return dict(want=want, live=live, out=out, replays=replays,
                framed=framed, last=last)


def check_layout(layout, port):
    r = run_layout(layout, port)
    want, live, last = r["want"], r["live"], r["last"]
    seqs = list(range(last + 1))
    expect = EXPECT[layout]
    salted = layout == "vllm"
    want_seen = salts_first_only(want) if salted else \
        [w[:4] + (None,) if w[0] == "stored" else w for w in want]

    # vLLM's own rules: every layout decodes.
    eq(blocks_vllm(live.events(), layout), want_seen, "vLLM's decoder")
    for b in live.batches:
        eq(b[2], None if layout == "vllm-first" else 0, "data_parallel_rank")

    def lines_ok(who, lines):
        eq([x["seq"] for x in lines], seqs, who + ": sequence numbers")
        errs = [x["error"] for x in lines if x.get("error")]
        return errs

    # llm-d, kv-cache rules.
    for who in ("llmd", "manager"):
        lines = r["out"][who]
        errs = lines_ok(who, lines)
        e = expect[who]
        if e == "batch":
            eq(len(errs), len(lines), who + ": every message refused")
            print("# %s refuses %s: %s" % (who, layout, errs[0]))
            continue
        eq(errs, [], who + ": messages refused")
        for x in lines:
            eq((x["pod"], x["model"]), ("pod-a", "model-x"), who + ": topic")
            eq(x.get("data_parallel_rank"), 0, who + ": rank")
        evs = [ev for x in lines for ev in x["events"]]
        if e == "ok":
            eq([ev for ev in evs if ev.get("skipped")], [], who + ": skipped")
            eq(blocks_llmd(evs), want_seen, who + ": blocks")
        else:
            skipped = [ev for ev in evs if ev.get("skipped")]
            kept = blocks_llmd([ev for ev in evs if not ev.get("skipped")])
            drop = e[1]
            eq(kept, [w for w in want_seen
                      if {"stored": "BlockStored", "removed": "BlockRemoved",
                          "cleared": "AllBlocksCleared"}[w[0]] not in drop],
               who + ": the events it keeps")
            assert skipped, who + ": skipped nothing"
            print("# %s skips the %s of %s: %s" %
                  (who, "/".join(sorted(drop)), layout,
                   next(ev["skipped"] for ev in evs if ev.get("skipped"))))

    # A tenant's own kvarenactl: its blocks, with their token ids, and
    # nothing of the other tenant's.
    if layout == "vllm":
        tj = r["out"]["tenant-json"]
        mine = "kvarena-uid-%d" % TENANT_UID
        eq({x["cache_salt"] for x in tj if x["type"] != "AllBlocksCleared"},
           {mine}, "the tenant's reader: its domain's events only")
        eq([tuple(x["token_ids"]) for x in tj if x["type"] == "BlockStored"],
           [w[3] for w in want if w[0] == "stored" and w[4] == mine],
           "the tenant's reader: its own token ids")
        eq(sum(x["type"] == "BlockRemoved" for x in tj), 3,
           "the tenant's reader: its three reclaims")
        eq(tj[-1]["type"], "AllBlocksCleared")
        print("# the tenant's reader: %d events, its domain's only" % len(tj))

    # The second llm-d, subscribed to kv@pod-a@ only: the same messages.
    eq([x["seq"] for x in r["out"]["llmd-filter"]], seqs, "kv@pod-a@ filter")

    # Dynamo.
    lines = r["out"]["dynamo"]
    errs = lines_ok("dynamo", lines)
    if expect["dynamo"] == "batch":
        eq(len(errs), len(lines), "dynamo: every message refused")
        print("# dynamo refuses %s: %s" % (layout, errs[0]))
    else:
        eq(errs, [], "dynamo: messages refused")
        for x in lines:
            eq((x["data_parallel_rank"], x["frames"]), (0, 3), "dynamo batch")
        evs = [ev for x in lines for ev in x["events"]]
        got = blocks_dynamo(evs)
        # Dynamo has the salt on every block of a tenant (cache_salt) in
        # the vllm layout, none in the others.
        eq(got, [w if salted or w[0] != "stored" else w[:4] + (None,)
                 for w in want], "dynamo: blocks")
        for start in (0, 2):
            rl = r["replays"][start]
            eq(rl[-1]["end"], True)
            eq(rl[-1]["frames"], vllm_rules.REPLAY_FRAMES[layout])
            eq([x["seq"] for x in rl[:-1]], list(range(start, last + 1)),
               "dynamo replay from %d" % start)
            eq([x["events"] for x in rl[:-1]],
               [x["events"] for x in lines[start:]],
               "dynamo: replayed batches = live ones")
    # vLLM's replay framing, on a DEALER.
    nf = vllm_rules.REPLAY_FRAMES[layout]
    eq([len(f) for f in r["framed"]], [nf] * len(r["framed"]), "replay frames")
    eq(len(r["framed"]), last + 1, "replies from seq 1 and the end")
    for f in r["framed"][:-1]:
        if nf == 4:
            eq(f[1], TOPIC.encode(), "the topic in a replay reply")
        s = int.from_bytes(f[-2], "big")
        decoded = vllm_rules.decode(layout, f[-1])
        eq(decoded[2], live.batches[s][3], "replayed batch %d" % s)
    eq(r["framed"][-1][-1], b"", "the end marker's payload")
    if nf == 4:
        eq(r["framed"][-1][1], b"", "the end marker's topic")
    print("# %s: %d events in %d batches; seqs 0-%d" %
          (layout, len(want), len(live.batches), last))


@suite.test
def current_vllm_layout_is_what_llm_d_dynamo_and_vllm_decode():
    check_layout("vllm", 5571)


@suite.test
def vllm_array_layout_is_decoded_by_llm_d_dynamo_and_vllm():
    check_layout("vllm-array", 5573)


@suite.test
def vllm_medium_layout_is_decoded_by_the_old_llm_d_manager_too():
    check_layout("vllm-medium", 5575)


@suite.test
def the_first_vllm_layout_is_refused_by_llm_d_and_dynamo():
    check_layout("vllm-first", 5577)


@suite.test
def a_publisher_that_fell_behind_tells_every_router_to_forget():
    """kvarenactl held back (no subscriber yet) while a burst overflows
    the module's 64 KiB ring: its LOST record goes out as the
    AllBlocksCleared every router then reads first, before the blocks
    the ring still had."""
    name, port = "rt-lost", 5581
    pub = "tcp://127.0.0.1:%d" % port
    kvarena.create_arena(name, nr_frames=8, frame_size=MiB,
                         bytes_per_token=GEO.bytes_per_token)
    truth_fd = kvarena.events(name, oldest=True)
    zp = subprocess.Popen([KVARENACTL, "events", name, "--topic", TOPIC,
                           "--zmq", "tcp://*:%d" % port,
                           "--wait-subscribers", "3"])
    procs = {"kvarenactl": zp}
    try:
        wait_for_events_fd(zp)
        event_burst(name, GEO, "rt-burst")
        got = truth_fd.read(timeout=5)
        eq(got[0].type, "lost")
        procs["llmd"] = consumer([LLMD, "-sub", pub])
        procs["dynamo"] = consumer([DYNAMO, "--sub", pub, "--block-size",
                                    str(T)])
        live = Live(pub, "vllm", procs)
        live.until(lambda: live.events(), "the batch after the loss")
        del procs["kvarenactl"]     # it exits at the arena's end
        kvarena.destroy_arena(name)
        live.until(lambda: sum(e["type"] == "AllBlocksCleared"
                               for e in live.events()) == 2, "the end")
        eq(zp.wait(timeout=60), 0)
        last = live.batches[-1][0]
        want = [("cleared",)] + truth(got[1:]) + [("cleared",)]
        eq(blocks_vllm(live.events(), "vllm"), salts_first_only(want),
           "vLLM's decoder")
        lines = finish(procs["llmd"], last)
        eq([x.get("error") for x in lines], [None] * len(lines))
        eq(blocks_llmd([ev for x in lines for ev in x["events"]]),
           salts_first_only(want), "llm-d")
        lines = finish(procs["dynamo"], last)
        eq([x.get("error") for x in lines], [None] * len(lines))
        eq(blocks_dynamo([ev for x in lines for ev in x["events"]]), want,
           "Dynamo")
        print("# %d events lost; every router forgot, then had the %d "
              "records the ring kept" % (got[0].lost, len(want) - 2))
    finally:
        for p in list(procs.values()) + [zp]:
            if p.poll() is None:
                p.kill()
                p.wait()
        truth_fd.close()
        try:
            kvarena.destroy_arena(name)
        except OSError:
            pass


suite.run()
