# SPDX-License-Identifier: GPL-2.0
"""check_dashboard.py DASHBOARD.json OUT.yml: every PromQL expression of
the dashboard (its panels' targets and its variables' queries of the
form label_values(SELECTOR, LABEL)), with the dashboard's variables
given a value, written as recording rules into OUT.yml, for `promtool
check rules` to parse as Prometheus itself does.  Also fails on a panel
without a target, a target without an expression, a duplicate panel id,
or a metric name kvarenactl does not serve."""

import json
import re
import sys

dash = json.load(open(sys.argv[1]))
served = set(sys.argv[3:])
exprs = []
ids = set()
for p in dash["panels"]:
    assert p["id"] not in ids, "panel id %r twice" % p["id"]
    ids.add(p["id"])
    assert p.get("targets"), "panel %r has no target" % p["title"]
    for t in p["targets"]:
        assert t.get("expr"), "panel %r: a target without expr" % p["title"]
        exprs.append((p["title"], t["expr"]))
for v in dash["templating"]["list"]:
    if v["type"] != "query":
        continue
    m = re.fullmatch(r"label_values\((.*), *([a-z_]+)\)", v["query"])
    assert m, "variable %r: %r" % (v["name"], v["query"])
    exprs.append(("variable " + v["name"], m.group(1)))

with open(sys.argv[2], "w") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, (title, e) in enumerate(exprs):
        e = e.replace("$arena", ".*").replace("$instance", ".*")
        for name in re.findall(r"\bkvarena_[a-z_]+\b", e):
            assert not served or name in served, \
                "%s: %s is not a metric kvarenactl serves" % (title, name)
        out.write("      - record: kvarena:dashboard_%d\n        expr: %s\n"
                  % (i, json.dumps(e)))
print("%d expressions from %d panels" % (len(exprs), len(dash["panels"])))
