# SPDX-License-Identifier: GPL-2.0
"""deploy_run.py SPEC: the command lines of Documentation/deployment.rst,
as selftests/docs/extract.awk finds them, run on the booted Debian root of
check-deb-vm (deb_checks.sh runs it): a session ("$ COMMAND" and the lines
after it) must print exactly the lines shown, standard output and error
together; a setup (".. doctest:") must exit 0; an inline ``kvarenactl``
command must exit 0; a command shown without "$" (a "parse" record) is
not run.  One KTAP line a record; exit status 1 if one failed."""

import subprocess
import sys


def records(path):
    kind = None
    for line in open(path).read().split("\n"):
        if line.startswith("@@") and line != "@@out" and line != "@@end":
            kind, where = line[2:].split(" ", 1)
            cmd, out, in_out = None, [], False
        elif line == "@@out":
            in_out = True
        elif line == "@@end":
            yield kind, where, cmd, out if kind == "session" else None
            kind = None
        elif kind is not None and cmd is None:
            cmd = line
        elif in_out:
            out.append(line)


def main():
    n = failed = 0
    recs = [r for r in records(sys.argv[1]) if r[0] in ("session", "setup", "run")]
    print("TAP version 13")
    print("1..%d" % len(recs))
    for kind, where, cmd, want in recs:
        n += 1
        r = subprocess.run(["sh", "-c", cmd], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        got = [l.rstrip() for l in r.stdout.rstrip("\n").split("\n")] \
            if r.stdout else []
        ok = r.returncode == 0 if kind != "session" else \
            got == [l.rstrip() for l in want]
        if not ok:
            failed += 1
            print("# %s: %s" % (where, cmd))
            print("# exit status %d; output:" % r.returncode)
            for l in got:
                print("#   " + l)
            if want is not None:
                print("# the guide shows:")
                for l in want:
                    print("#   " + l)
        print("%s %d %s" % ("ok" if ok else "not ok", n, where))
    print("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0" %
          (n - failed, failed))
    sys.exit(1 if failed else 0)


main()
