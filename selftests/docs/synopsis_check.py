# SPDX-License-Identifier: GPL-2.0
"""synopsis_check.py KVARENACTL OPERATORS.rst KVARENACTL.8.rst

Every command of `kvarenactl help`, and every option that `kvarenactl
help COMMAND` lists, must be in the synopsis of the operators' guide and
of the man page, on that command's lines (its long form or its letter):
the synopses cannot fall behind the tool.  Prints what is missing where,
and exits 1 if anything is."""

import re
import subprocess
import sys

tool, guide, man = sys.argv[1:4]


def help_text(*args):
    return subprocess.run([tool, "help", *args], capture_output=True,
                          text=True, check=True).stdout


commands = []
for line in help_text().splitlines():
    m = re.match(r"  ([a-z|]+) ", line)
    if m:
        commands += m.group(1).split("|")
options = {}
for c in commands:
    opts = []
    for line in help_text(c).splitlines():
        m = re.match(r"\s+(?:-(\w), )?--([a-z-]+)", line)
        if m and m.group(2) not in ("help", "version"):
            opts.append((m.group(1), m.group(2)))
    options[c] = opts
# help's own options are the tool's: the synopses give them with each view.
options.pop("help", None)


def first_command(line):
    """The command a synopsis line is for: its first word that is one."""
    for w in re.findall(r"[a-z]+", line.split("kvarenactl", 1)[1]):
        if w in commands:
            return w
    return None


def guide_synopsis(path):
    """{command: text of its synopsis lines} of the guide's literal block."""
    text = open(path).read()
    block = text.split("Synopsis\n========\n\n::\n\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith("  "):
            break
        lines.append(line)
    out = {}
    cur = None
    for line in lines:
        if line.startswith("  kvarenactl "):
            cur = first_command(line)
        elif line.startswith("  ACCESS is"):
            cur = "ACCESS"
        if cur:
            out[cur] = out.get(cur, "") + " " + line
    return out, out.pop("ACCESS", "")


def man_synopsis(path):
    text = open(path).read()
    block = text.split("SYNOPSIS\n========\n", 1)[1].split("\nDESCRIPTION\n", 1)[0]
    out = {}
    for line in block.splitlines():
        if line.startswith("| **kvarenactl"):
            c = first_command(line)
            out[c] = out.get(c, "") + " " + line
    access = re.search(r"\n(\*ACCESS\* is[^\n]*)", block)
    return out, access.group(1) if access else ""


missing = []
for path, (syn, access), form in (
        (guide, guide_synopsis(guide), "plain"),
        (man, man_synopsis(man), "man")):
    for c in options:
        text = syn.get(c)
        if text is None:
            missing.append("%s: no synopsis line for %s" % (path, c))
            continue
        if "ACCESS" in text:
            text += " " + access
        for letter, name in options[c]:
            if form == "man":
                forms = ["**--%s**" % name, "**--%s " % name] + \
                    (["**-%s**" % letter] if letter else [])
            else:
                forms = ["--%s" % name] + (["-%s " % letter, "-%s]" % letter] if letter else [])
            if not any(f in text for f in forms):
                missing.append("%s: %s's synopsis lacks --%s" % (path, c, name))
for m in missing:
    print("synopsis_check: " + m, file=sys.stderr)
print("synopsis_check: %d commands, %d options, in 2 synopses: %s" %
      (len(commands), sum(len(v) for v in options.values()),
       "%d missing" % len(missing) if missing else "all there"))
sys.exit(1 if missing else 0)
