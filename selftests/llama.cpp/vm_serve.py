#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""vm_serve.py - two llama-server processes on one kvarena.ko arena, in the
VM (selftests/llama.cpp/vm.sh runs it, as root; TAP on stdout).

Two users each run a llama-server (tiny_model.py's model, -np 2 with a
unified cache, --kv-arena-min 1024 cells) on the host arena vm.sh made:
4 KiB frames, 64 cells of this model's K or V each, so a server at its
whole context (2048 cells, 4 tensors) would hold 128 frames, its
guarantee is 64, and the arena's 160 are less than both would hold; it is
under pressure below 24 free frames.  A thread samples `kvarenactl -j
clients` all along.

    phase a    A serves two 400-character prompts at once, within its
               guarantee; its idle slots keep their KV and frames after
    phase b    B serves two 900-character prompts at once: more than its
               guarantee; the arena falls below its low watermark, A's
               idle slots give their frames back (their KV to its prompt
               cache) as B's rise
    phase wait A serves a 1300-character prompt, more than its guarantee;
               once it holds that much, B's two 900-character prompts
               find too few frames: the batch waits on the arena and goes
               on when A, done, gives its frames back under pressure
    phase ab   both serve slices of the Azure conversation trace at once
               (their token counts, prompts cut to 900 tokens), at
               their arrival times, more than the arena holds at a time:
               batches wait for frames, requests are parked; one that
               cannot be may fail alone with the kv-arena error
    kill       A is killed with SIGKILL mid-slice while it holds frames
               with requests open: every frame it held returns; B serves
               on, then its slots are erased: B holds none
    admission  the same memory split (each server a buffer of 1280 cells)
               or shared (both on the arena, -c 2560): bursts of 2 to 8
               requests at once to one server while the other idles; how
               many each answers (admission())

What happens is decided by progress (a phase starts when the last ended;
the kill comes once A holds frames with requests open), not by the clock.
Writes /out/samples.jsonl (t, A's and B's frames) and /out/summary.json
for the figures.
"""
import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time

from client import call  # run.sh's HTTP client, beside this file in /data

ARENA = "kvllama"
KVARENA_GID = 990         # the device node's group (vm.sh)
SERVER = "/bin/llama-server"
MODEL = "/data/tiny.gguf"
TRACE = "/data/AzureLLMInferenceTrace_conv.csv"
TRACE_SCALE = 1           # trace tokens per token here
MAX_PROMPT = 900          # with MAX_GEN, within one guarantee (1024 cells)
MAX_GEN = 32
PER_PHASE = int(os.environ.get("KVA_LLAMA_REQUESTS", "6"))

n = 0
failed = 0


def tap(ok, name, *why):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print(("ok %d %s" if ok else "not ok %d %s") % (n, name))
    for w in why:
        print("# " + str(w))
    sys.stdout.flush()


def http(port, method, path, body=None, timeout=900):
    return call(port, method, path, body, timeout)


SHARED = ["-c", "2048", "-np", "2", "--kv-arena", ARENA,
          "--kv-arena-min", "1024", "--kv-arena-wait", "30000"]


class Server:
    def __init__(self, name, port, uid, args=SHARED):
        self.name, self.port = name, port
        self.log = open("/out/%s.log" % name, "w")
        self.proc = subprocess.Popen(
            [SERVER, "-m", MODEL, "--host", "127.0.0.1",
             "--port", str(port), "-kvu", "-fa", "on", "-t", "1",
             "--slot-save-path", "/tmp", "-lv", "4"] + args,
            stdout=self.log, stderr=subprocess.STDOUT,
            user=uid, group=uid, extra_groups=[KVARENA_GID])
        self.pid = self.proc.pid

    def why_down(self):
        """Why the server does not answer, also written into its log: a
        death by a signal named (SIGILL: an instruction the VM's CPU
        lacks), an exit status, or silence."""
        rc = self.proc.poll()
        if rc is None:
            why = "%s: running, /health does not answer" % self.name
        elif rc < 0:
            sig = signal.Signals(-rc)
            why = "%s: llama-server died of %s (%s)" % (
                self.name, sig.name, signal.strsignal(sig))
            if sig == signal.SIGILL:
                why += (": it was built for CPU features this VM's CPU "
                        "lacks (ggml's instruction sets against qemu's -cpu)")
        else:
            why = "%s: llama-server exited with status %d" % (self.name, rc)
        self.log.write("vm_serve.py: %s\n" % why)
        self.log.flush()
        return why

    def wait_up(self, seconds=300):
        end = time.time() + seconds
        while time.time() < end:
            if self.proc.poll() is not None:
                return False
            if http(self.port, "GET", "/health", timeout=5)[0] == 200:
                return True
            time.sleep(0.5)
        return False


def clients():
    """{attach_pid: held_frames} of the arena's clients."""
    r = subprocess.run(["kvarenactl", "-j", "clients", ARENA],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return {c.get("attach_pid"): c["held_frames"] for c in json.loads(r.stdout)}


class Sampler(threading.Thread):
    def __init__(self, a, b):
        super().__init__(daemon=True)
        self.a, self.b = a, b
        self.samples = []
        self.phase = "start"
        self.stop = False
        self.out = open("/out/samples.jsonl", "w")
        self.t0 = time.time()

    def take(self):
        c = clients()
        if c is None:
            return None
        s = {"t": round(time.time() - self.t0, 2), "phase": self.phase,
             "a": c.get(self.a.pid, 0), "b": c.get(self.b.pid, 0),
             "clients": len(c)}
        self.samples.append(s)
        self.out.write(json.dumps(s) + "\n")
        self.out.flush()
        return s

    def run(self):
        while not self.stop:
            self.take()
            time.sleep(0.25)


def trace_requests(first, count):
    """count requests of the trace from row first: (arrival s, prompt, gen)."""
    rows = []
    with open(TRACE) as f:
        for i, r in enumerate(csv.DictReader(f)):
            if i < first:
                continue
            if len(rows) == count:
                break
            rows.append(r)
    t0 = None
    out = []
    for i, r in enumerate(rows):
        ts = r["TIMESTAMP"]
        sec = (int(ts[11:13]) * 3600 + int(ts[14:16]) * 60 + float(ts[17:]))
        t0 = sec if t0 is None else t0
        p = max(16, min(MAX_PROMPT, int(r["ContextTokens"]) // TRACE_SCALE))
        g = max(4, min(MAX_GEN, int(r["GeneratedTokens"]) // TRACE_SCALE))
        out.append((sec - t0, p, g))
    return out


def prompt_of(key, tokens):
    # one token a character of this vocabulary; the key makes each
    # prompt its own (no prefix found in a cache)
    words = []
    size = 0
    i = 0
    while size < tokens:
        w = "%s%d" % (key, i)
        words.append(w)
        size += len(w) + 1
        i += 1
    return " ".join(words)[:tokens]


def serve(server, key, reqs, results):
    """Send reqs at their arrival times, one thread each; wait for all."""
    threads = []
    t0 = time.time()

    def one(i, p, g):
        st, ans = http(server.port, "POST", "/completion", {
            "prompt": prompt_of("%s%d" % (key, i), p), "n_predict": g,
            "temperature": 0, "grammar": "root ::= [a-z ]+"})
        err = ans.get("error")
        results.append({"server": server.name, "key": key, "i": i,
                        "prompt": p, "gen": g, "status": st,
                        "n": ans.get("tokens_predicted"),
                        "error": err.get("message") if isinstance(err, dict) else err})

    for i, (at, p, g) in enumerate(reqs):
        delay = at - (time.time() - t0)
        if delay > 0:
            time.sleep(delay)
        t = threading.Thread(target=one, args=(i, p, g))
        t.start()
        threads.append(t)
    return threads


BURSTS = (2, 3, 4, 6, 8)


def admission():
    """The same memory, split or shared: bursts of k requests at once to
    one of two servers while the other idles.  Split: each server a
    buffer of 1280 cells (80 frames' worth: 160 together, the arena's
    size).  Shared: both on the arena, each -c 2560.  Each request: a
    300-character prompt and 32 tokens, some 290 cells."""
    out = {}
    for conf, args in (
            ("split", ["-c", "1280", "-np", "8"]),
            ("shared", ["-c", "2560", "-np", "8", "--kv-arena", ARENA,
                        "--kv-arena-min", "256", "--kv-arena-wait", "30000"])):
        a = Server("%s-a" % conf, 8083, 1000, args)
        b = Server("%s-b" % conf, 8084, 1001, args)
        if not (a.wait_up() and b.wait_up()):
            tap(False, "admission_%s_servers_start" % conf,
                *[s.why_down() for s in (a, b) if s.proc.poll() is not None])
            for srv in (a, b):
                srv.proc.kill()
                srv.proc.wait()
            return out
        served = {}
        for k in BURSTS:
            r = []
            for t in serve(a, "%s%d" % (conf, k), [(0, 300, 32)] * k, r):
                t.join()
            served[k] = sum(x["status"] == 200 for x in r)
            # the next burst starts from empty slots
            for slot in range(8):
                http(a.port, "POST", "/slots/%d?action=erase" % slot, {})
        out[conf] = served
        for srv in (a, b):
            srv.proc.terminate()
            srv.proc.wait()
    line = "  ".join("k=%d: %d / %d" % (k, out.get("split", {}).get(k, -1),
                                       out.get("shared", {}).get(k, -1))
                     for k in BURSTS)
    print("# burst of k to one server, requests answered 200, split / "
          "shared: " + line)
    ok = "shared" in out and all(out["shared"][k] == k for k in BURSTS)
    tap(ok, "shared_arena_serves_every_burst", "served: %s" % out)
    return out


def main():
    a = Server("a", 8081, 1000)
    b = Server("b", 8082, 1001)
    up = a.wait_up() and b.wait_up()
    tap(up, "two_servers_attach_to_one_arena",
        *([] if up else [a.why_down(), b.why_down(), "see a.log, b.log"]))
    if not up:
        for s in (a, b):
            s.proc.kill()
        return 1

    sm = Sampler(a, b)
    sm.start()
    res = []

    # phase a: A alone, two requests at once (one a slot), within A's
    # guarantee; its idle slots keep their KV and frames after
    sm.phase = "a"
    for t in serve(a, "a", [(0, 400, 16), (0, 400, 16)], res):
        t.join()
    s_a = sm.take()
    ok = s_a and 32 <= s_a["a"] <= 64 and s_a["b"] == 0 and \
        all(r["status"] == 200 for r in res)
    tap(ok, "server_a_holds_the_frames_its_requests_use",
        "after phase a: %s" % s_a)

    # phase b: B wants more than its guarantee, the arena's free frames
    # fall below its low watermark, A's idle slots give theirs back
    sm.phase = "b"
    res_b = []
    for t in serve(b, "b", [(0, 900, 32), (0, 900, 32)], res_b):
        t.join()
    s_b = sm.take()
    res += res_b
    peak_b = max([s["b"] for s in sm.samples if s["phase"] == "b"] + [0])
    with open("/out/a.log") as f:
        relieved = "kv-arena: the arena is under pressure: idle" in f.read()
    ok = s_b and all(r["status"] == 200 for r in res_b) and \
        s_b["a"] < s_a["a"] and peak_b > 64 and relieved
    tap(ok, "a_gives_frames_back_as_b_takes_them",
        "A held %d after phase a and %s after phase b; B's peak %d "
        "(guaranteed 64); A's log says it gave idle frames back: %s" %
        (s_a["a"], s_b and s_b["a"], peak_b, relieved))

    # phase wait: A holds more than its guarantee with a request in
    # flight; B's prefill finds too few frames, waits on the arena, and
    # goes on when A, done, gives its frames back under pressure
    sm.phase = "wait"
    res_w = []
    ts = serve(a, "w", [(0, 1300, 32)], res_w)
    end = time.time() + 300
    while time.time() < end and ts[0].is_alive():
        s = sm.take()
        if s and s["a"] > 64:
            break
        time.sleep(0.1)
    ts += serve(b, "x", [(0, 900, 32), (0, 900, 32)], res_w)
    for t in ts:
        t.join()
    res += res_w
    came = []
    for name in ("a", "b"):
        with open("/out/%s.log" % name) as f:
            if "kv-arena: frames came back to the arena after" in f.read():
                came.append(name)
    peak_w = max([s["a"] for s in sm.samples if s["phase"] == "wait"] + [0])
    ok = all(r["status"] == 200 for r in res_w) and came and peak_w > 64
    tap(ok, "a_batch_waits_for_frames_and_goes_on_when_they_come_back",
        "A's peak %d; statuses %s; frames came back to: %s" %
        (peak_w, [r["status"] for r in res_w], came))

    # phase ab: both at once, from the trace: more than the arena holds
    # at a time; a batch waits for frames, a request is parked, and one
    # that cannot be may fail, alone, with the kv-arena error
    sm.phase = "ab"
    res_ab = []
    ts = serve(a, "c", trace_requests(0, PER_PHASE), res_ab)
    ts += serve(b, "d", trace_requests(PER_PHASE, PER_PHASE), res_ab)
    for t in ts:
        t.join()
    res += res_ab
    bad = [r for r in res_ab if r["status"] != 200 and
           not (r["status"] == 503 and "kv-arena" in (r["error"] or ""))]
    served = sum(r["status"] == 200 for r in res_ab)
    tap(not bad and served > 0, "both_serve_at_once_and_none_fails_but_alone",
        "served %d of %d" % (served, len(res_ab)), *bad)

    # kill: A dies with requests open and frames held
    sm.phase = "kill"
    res_k = []
    ts = serve(a, "e", trace_requests(2 * PER_PHASE, PER_PHASE), res_k)
    seen = None
    end = time.time() + 600
    while time.time() < end:
        s = sm.take()
        if s and s["a"] > 0 and any(t.is_alive() for t in ts):
            seen = s
            break
        time.sleep(0.1)
    os.kill(a.pid, signal.SIGKILL)
    a.proc.wait()
    for t in ts:
        t.join()
    time.sleep(0.5)
    after = clients()
    ok = seen is not None and after is not None and a.pid not in after and \
        sum(after.values()) == after.get(b.pid, 0)
    tap(ok, "killed_server_frames_all_return",
        "held by A when killed: %s; clients after: %s" %
        (seen and seen["a"], after))

    # B serves on, then gives everything back
    sm.phase = "b-alone"
    res_b2 = []
    for t in serve(b, "f", trace_requests(3 * PER_PHASE, 2), res_b2):
        t.join()
    res += res_b2
    erased = [http(b.port, "POST", "/slots/%d?action=erase" % slot, {})[0]
              for slot in (0, 1)]
    time.sleep(0.5)
    after_erase = clients()
    ok = all(r["status"] == 200 for r in res_b2) and after_erase is not None \
        and after_erase.get(b.pid) == 0 and erased == [200, 200]
    tap(ok, "erased_slots_hold_no_frames",
        "erase: %s; clients: %s" % (erased, after_erase))

    sm.stop = True
    sm.join()
    b.proc.terminate()
    b.proc.wait()
    final = clients()
    tap(final == {}, "no_client_left", "clients: %s" % final)

    adm = admission()

    peak = max(s["a"] + s["b"] for s in sm.samples)
    with open("/out/summary.json", "w") as f:
        json.dump({"requests": res, "peak_frames_shared": peak,
                   "frames_each_at_its_context": 128,
                   "arena_frames": 160, "admission": adm,
                   "samples": len(sm.samples)}, f, indent=1)
    print("# peak frames held by both together: %d (each at its whole "
          "context: 2 x 128)" % peak)
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
