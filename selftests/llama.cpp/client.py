#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""client.py - llama-server's HTTP API for run.sh, on loopback.

    client.py PORT health
        exit 0 when /health answers 200
    client.py PORT complete [--cache] [--n N] PROMPT...
        one greedy /completion per PROMPT, all at once (one thread each);
        one JSON line per prompt, in order: {"status", "content",
        "prompt_n", "logprobs" (each token's, to 3 decimals), "error"}
    client.py PORT slot ACTION [FILENAME]
        POST /slots/0?action=ACTION (save, restore, erase); the JSON answer
        and the status on one line

Greedy (temperature 0) with a grammar of lowercase letters and spaces, so
that a random-weight model's text passes the server's output parser.
"""
import json
import sys
import threading
import urllib.error
import urllib.request

GRAMMAR = "root ::= [a-z ]+"


def call(port, method, path, body=None, timeout=300):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read().decode() or "{}")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read().decode())
        except ValueError:
            return e.code, {}
    except (OSError, ValueError) as e:
        return 0, {"error": str(e)}


def complete(port, prompt, n, cache):
    status, ans = call(port, "POST", "/completion", {
        "prompt": prompt, "n_predict": n, "temperature": 0,
        "cache_prompt": cache, "grammar": GRAMMAR, "n_probs": 1})
    err = ans.get("error")
    if isinstance(err, dict):
        err = err.get("message")
    # each token's log-probability over the whole vocabulary (before the
    # grammar): a random model's text can settle into one letter whatever
    # its context, these move with every bit of KV it reads
    lps = [round(t.get("logprob", 0.0), 3)
           for t in ans.get("completion_probabilities") or []]
    return {"status": status, "content": ans.get("content"),
            "prompt_n": ans.get("timings", {}).get("prompt_n"),
            "logprobs": " ".join("%.3f" % x for x in lps), "error": err}


def main(argv):
    port, cmd, args = int(argv[1]), argv[2], argv[3:]
    if cmd == "health":
        return 0 if call(port, "GET", "/health", timeout=5)[0] == 200 else 1
    if cmd == "slot":
        body = {"filename": args[1]} if len(args) > 1 else {}
        status, ans = call(port, "POST", "/slots/0?action=" + args[0], body)
        ans["status"] = status
        print(json.dumps(ans))
        return 0
    if cmd == "complete":
        n, cache = 24, False
        while args and args[0].startswith("--"):
            if args[0] == "--cache":
                cache = True
                args = args[1:]
            elif args[0] == "--n":
                n = int(args[1])
                args = args[2:]
            else:
                sys.exit("client.py: unknown option " + args[0])
        out = [None] * len(args)

        def one(i):
            out[i] = complete(port, args[i], n, cache)

        threads = [threading.Thread(target=one, args=(i,))
                   for i in range(len(args))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for o in out:
            print(json.dumps(o))
        return 0
    sys.exit("client.py: unknown command " + cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
