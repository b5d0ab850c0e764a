#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check a run.sh results.jsonl (make check's check-gpu-dry).

    results.py RESULTS [--passed S,..] [--failed S,..] [--skipped S,..]
               [--check NAME]...

Every line must be one whole JSON object; each step named must be there
with that status; each --check must be a passed runtime or kernel check.
Every step that did not pass must say why (its status), so that no
failure goes without a line.  Exit status 0, or 1 with what is wrong.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--passed", default="")
    ap.add_argument("--failed", default="")
    ap.add_argument("--skipped", default="")
    ap.add_argument("--check", action="append", default=[])
    args = ap.parse_args()

    wrong = []
    steps, checks = {}, {}
    with open(args.results) as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError:
                wrong.append("line %d is not a JSON object: %r" % (n, line[:80]))
                continue
            if not isinstance(r, dict) or "kind" not in r:
                wrong.append("line %d has no kind" % n)
                continue
            if r["kind"] == "step":
                steps[r["name"]] = r
                if not r["ok"] and r.get("status") not in (
                        "failed", "missing", "timed_out", "no_gpu"):
                    wrong.append("step %s failed without a status" % r["name"])
            elif r["kind"] in ("runtime", "check"):
                checks[r["name"]] = r["ok"]

    def want(names, status):
        for s in filter(None, names.split(",")):
            got = steps.get(s)
            if not got:
                wrong.append("no step %s" % s)
            elif status == "passed" and not (got["ok"] and got["status"] == "passed"):
                wrong.append("step %s: %s, not passed" % (s, got["status"]))
            elif status == "failed" and got["ok"]:
                wrong.append("step %s passed, expected to fail" % s)
            elif status == "skipped" and got["status"] != "skipped":
                wrong.append("step %s: %s, not skipped" % (s, got["status"]))

    want(args.passed, "passed")
    want(args.failed, "failed")
    want(args.skipped, "skipped")
    for c in args.check:
        if checks.get(c) is not True:
            wrong.append("check %s: %s" % (c, "failed" if c in checks else "absent"))
    for w in wrong:
        print("%s: %s" % (args.results, w), file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
