#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The uapi header, Documentation/kvarena.rst and the selftests agree.

Every command (KVARENA_IOC_*), every flag bit (a KVARENA_* define of one
bit, "(1u << n)") and every error code the header names (its errno table
and every -Exxx of its text) is taken from the header itself, never from
a list kept here, and must be

  - in Documentation/kvarena.rst: a command by its name without the
    KVARENA_IOC_ prefix (``ALLOC``) or whole, a flag by its whole name,
    an error code as a row of the rst's table of error numbers;
  - exercised by a selftest: its whole name in a C source under
    selftests/ (an error code as -Exxx, as the tests compare it).

Prints TAP: one line per item, "not ok" with what is missing.
"""
import glob
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..')
hdr = open(os.path.join(src, 'include/uapi/linux/kvarena.h')).read()
rst = open(os.path.join(src, 'Documentation/kvarena.rst')).read()

tests = ''
for path in sorted(glob.glob(os.path.join(src, 'selftests/**/*.[ch]'),
                             recursive=True)):
    tests += open(path, errors='replace').read()

# The header's commands, flags and error codes.
cmds = [m for m in re.findall(r'^#define\s+(KVARENA_IOC_\w+)\s+_IO', hdr, re.M)]
flags = [name for name, value in
         re.findall(r'^#define\s+(KVARENA_\w+)\s+(.*)$', hdr, re.M)
         if re.match(r'\(\s*(\(__u64\)\s*)?1u?\s*<<\s*\d+\s*\)', value)
         and 'MAX' not in name]
table = re.search(r'^ \* Error numbers\n(.*?)^ \*/', hdr, re.M | re.S)
errnos = set(re.findall(r'^ \*  (E[A-Z]+)\b', table.group(1), re.M))
errnos |= set(re.findall(r'-(E[A-Z]{2,})\b', hdr))
errnos = sorted(errnos)

# The rst's table of error numbers: rows that start with the name.
rst_errs = re.search(r'^Error numbers\n=+\n(.*?)^=+\n\n', rst, re.M | re.S)
rst_errnos = set(re.findall(r'^(E[A-Z]+)\s', rst_errs.group(1) if rst_errs
                            else '', re.M))


def word(name, text):
    return re.search(r'(?<![A-Za-z0-9_])' + re.escape(name) +
                     r'(?![A-Za-z0-9_])', text) is not None


checks = []
for c in cmds:
    short = c[len('KVARENA_IOC_'):]
    miss = []
    if not (word('``' + short + '``', rst) or word(short, rst) or
            word(c, rst)):
        miss.append('not in Documentation/kvarena.rst')
    if not word(c, tests):
        miss.append('no selftest uses it')
    checks.append(('command ' + c, miss))
for f in flags:
    miss = []
    if not word(f, rst):
        miss.append('not in Documentation/kvarena.rst')
    if not word(f, tests):
        miss.append('no selftest uses it')
    checks.append(('flag ' + f, miss))
for e in errnos:
    miss = []
    if e not in rst_errnos:
        miss.append("not in Documentation/kvarena.rst's table of error numbers")
    if not re.search(r'-' + e + r'\b', tests):
        miss.append('no selftest expects -' + e)
    checks.append(('error ' + e, miss))

print('TAP version 13')
print('1..%d' % len(checks))
bad = 0
for i, (what, miss) in enumerate(checks, 1):
    if miss:
        bad += 1
        print('not ok %d %s: %s' % (i, what, '; '.join(miss)))
    else:
        print('ok %d %s' % (i, what))
print('# %d commands, %d flags, %d error codes from the header; %d not in step'
      % (len(cmds), len(flags), len(errnos), bad))
sys.exit(1 if bad else 0)
