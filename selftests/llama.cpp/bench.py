#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench.py - llama-server's speed with its KV cache in a kvarena arena,
against the same binary with the buffer of its whole context, measured in
one run (a benchmark: it prints ratios, asserts nothing).

    bench.py SERVER MODEL [--rounds N] [--prompt N] [--gen N] [--np N]
        [--ngl N]

Starts two servers of SERVER on MODEL (-fa on -kvu -c 4096, one with
--kv-arena, an embedded arena here), then, N rounds, sends each the same
requests in turn (a new prompt a round, so that no prompt cache helps;
--np of them at once), alternating which goes first.  Prints, per
server, prompt and generation tokens/s over all rounds (the server's own
timings) and wall time, and the arena's over the plain one's.  --ngl N
puts N layers and their KV cache on the GPU (a CUDA build; the arena is
then one of CUDA memory).
"""
import argparse
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def post(port, body):
    req = urllib.request.Request("http://127.0.0.1:%d/completion" % port,
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read().decode())


def up(port, proc):
    for _ in range(600):
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port,
                                        timeout=5) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server")
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--prompt", type=int, default=1000)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ngl", type=int)
    a = ap.parse_args()
    gpu = ["-ngl", str(a.ngl)] if a.ngl is not None else []

    servers = {}
    for name, extra in (("plain", []), ("arena", ["--kv-arena", "bench"])):
        port = free_port()
        proc = subprocess.Popen(
            [a.server, "-m", a.model, "--host", "127.0.0.1", "--port",
             str(port), "-c", "4096", "-np", str(a.np), "-kvu", "-fa", "on",
             "-t", str(a.threads), "--cache-ram", "0"] + gpu + extra,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers[name] = (port, proc)
    try:
        for name, (port, proc) in servers.items():
            if not up(port, proc):
                sys.exit("bench.py: the %s server did not start" % name)
        tot = {n: {"pn": 0, "pms": 0.0, "gn": 0, "gms": 0.0, "wall": 0.0}
               for n in servers}
        for r in range(a.rounds):
            order = list(servers) if r % 2 == 0 else list(servers)[::-1]
            prompts = [" ".join("r%dq%dw%d" % (r, q, i)
                                for i in range(a.prompt // 6))[:a.prompt]
                       for q in range(a.np)]
            for name in order:
                port = servers[name][0]
                out = [None] * a.np

                def one(q):
                    out[q] = post(port, {
                        "prompt": prompts[q], "n_predict": a.gen,
                        "temperature": 0, "ignore_eos": True,
                        "cache_prompt": False,
                        "grammar": "root ::= [a-z ]+"})

                t0 = time.time()
                ts = [threading.Thread(target=one, args=(q,))
                      for q in range(a.np)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                tot[name]["wall"] += time.time() - t0
                for o in out:
                    tm = o["timings"]
                    tot[name]["pn"] += tm["prompt_n"]
                    tot[name]["pms"] += tm["prompt_ms"]
                    tot[name]["gn"] += tm["predicted_n"]
                    tot[name]["gms"] += tm["predicted_ms"]
        res = {}
        for name, t in tot.items():
            res[name] = {"prompt_tps": t["pn"] / t["pms"] * 1e3,
                         "gen_tps": t["gn"] / t["gms"] * 1e3,
                         "wall_s": t["wall"]}
            print("%-6s prompt %8.1f tok/s  generation %7.1f tok/s  "
                  "wall %6.2f s" % (name, res[name]["prompt_tps"],
                                    res[name]["gen_tps"], t["wall"]))
        p, q = res["plain"], res["arena"]
        print("arena/plain: prompt %.3f  generation %.3f  wall %.3f" %
              (q["prompt_tps"] / p["prompt_tps"], q["gen_tps"] / p["gen_tps"],
               q["wall_s"] / p["wall_s"]))
        print(json.dumps({"kind": "llama_bench", "rounds": a.rounds, "prompt": a.prompt,
                          "gen": a.gen, "np": a.np, "ngl": a.ngl,
                          "result": res}))
    finally:
        for _, proc in servers.values():
            proc.terminate()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
