#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""kvsim's nodes sweep for Documentation/kvsim.rst ("Nodes and the remote
tier"): the Mooncake trace dealt round-robin over 1, 2, 4 and 8 nodes,
each node alone (kvarena+host) and with a remote tier they share
(kvarena+host+remote, blocks stored when host memory takes them, and
when they are published).  Prints the table and writes the figure.

    selftests/kvsim/nodes_plot.py KVSIM TRACE_DIR OUT.svg
"""

import json
import math
import os
import subprocess
import sys

NODES = (1, 2, 4, 8)
COMMON = ["--model", "llama-3-8b", "--kv-gib", "54", "--max-model-len",
          "131072", "--host-gib", "64", "--gpu-tflops", "400"]
SERIES = (("each node alone (kvarena+host)", "kvarena+host", "demote",
           "#555555", ""),
          ("remote tier, stored on demotion", "kvarena+host+remote",
           "demote", "#1f77b4", ""),
          ("remote tier, stored on publish", "kvarena+host+remote",
           "publish", "#d62728", "5,3"))


def run(kvsim, trace, nodes, policy, write):
    args = [kvsim, "-t", trace, "--nodes", str(nodes), "--policy", policy,
            "--json"] + COMMON
    if "remote" in policy:
        args += ["--remote-gib", "2048", "--remote-write", write]
    out = subprocess.run(args, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.splitlines()[-1])  # the run's: the last line


def svg(path, rows):
    w, h, top, left, pw, ph, gap = 900, 380, 50, 70, 340, 260, 110
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="sans-serif" font-size="12">' % (w, h),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="14">Mooncake trace, Llama-3-8B, '
         '54 GiB of KV and 64 GiB of host memory a node, 2 TiB remote, '
         '400 TFLOP/s</text>' % left]
    panels = (("share of prompt tokens from a cache", "hit", 0, 1, False),
              ("first token, p99 (s, log)", "p99", 1, 10000, True))
    for k, (title, key, lo, hi, log) in enumerate(panels):
        x0 = left + k * (pw + gap)
        o.append('<text x="%d" y="%d">%s</text>' % (x0, top - 8, title))
        o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
                 'stroke="#999"/>' % (x0, top, pw, ph))

        def ypos(v):
            if log:
                v = max(v, lo)
                f = (math.log10(v) - math.log10(lo)) / \
                    (math.log10(hi) - math.log10(lo))
            else:
                f = (v - lo) / (hi - lo)
            return top + ph - f * ph

        def xpos(i):
            return x0 + 30 + i * (pw - 60) / (len(NODES) - 1)
        ticks = [1, 10, 100, 1000, 10000] if log else [0, 0.25, 0.5, 0.75, 1]
        for t in ticks:
            y = ypos(t)
            o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" '
                     'stroke="#eee"/>' % (x0, x0 + pw, y, y))
            o.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' %
                     (x0 - 4, y + 4, t))
        for i, n in enumerate(NODES):
            o.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' %
                     (xpos(i), top + ph + 16, n))
        o.append('<text x="%d" y="%d" text-anchor="middle">nodes</text>' %
                 (x0 + pw / 2, top + ph + 32))
        for name, pol, write, color, dash in SERIES:
            pts = " ".join("%.1f,%.1f" % (xpos(i), ypos(rows[(name, n)][key]))
                           for i, n in enumerate(NODES))
            o.append('<polyline points="%s" fill="none" stroke="%s" '
                     'stroke-width="2" stroke-dasharray="%s"/>' %
                     (pts, color, dash))
            for i, n in enumerate(NODES):
                o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' %
                         (xpos(i), ypos(rows[(name, n)][key]), color))
    for j, (name, pol, write, color, dash) in enumerate(SERIES):
        y = top + ph + 52
        x = left + j * 270
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" '
                 'stroke-width="2" stroke-dasharray="%s"/>' %
                 (x, x + 24, y, y, color, dash))
        o.append('<text x="%d" y="%d">%s</text>' % (x + 30, y + 4, name))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kvsim, traces, path = sys.argv[1:]
    trace = os.path.join(traces, "mooncake_synthetic_trace.jsonl")
    rows = {}
    print("%-34s %5s %7s %7s %9s %9s %9s %9s" %
          ("", "nodes", "hit", "remote", "p50 s", "p99 s", "written",
           "fetched"))
    for name, pol, write, color, dash in SERIES:
        for n in NODES:
            d = run(kvsim, trace, n, pol, write)
            r = {"hit": d["prefix_hit_share"], "p50": d["ttft_p50_ms"] / 1e3,
                 "p99": d["ttft_p99_ms"] / 1e3}
            rows[(name, n)] = r
            print("%-34s %5d %7.4f %7.4f %9.1f %9.1f %8.0fG %8.0fG" %
                  (name, n, r["hit"], d.get("remote_hit_share", 0),
                   r["p50"], r["p99"],
                   d.get("remote_written_bytes", 0) / 2**30,
                   d.get("remote_bytes", 0) / 2**30))
    svg(path, rows)


main()
