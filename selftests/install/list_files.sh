#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# list_files.sh ROOT: every path of the root, sorted, but where the system
# itself writes as it runs (logs, caches, dpkg's and apt's state, systemd's
# state, /proc, /sys, /dev, /run, /tmp; /etc/mtab and /var/lib/private,
# which systemd makes as it boots) and the test's own files: what a
# package's purge must leave as it found.
cd "$1" || exit 1
find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run \
	-o -path ./tmp -o -path ./var/log -o -path ./var/cache \
	-o -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/tmp \
	-o -path ./var/lib/systemd -o -path ./var/lib/private \
	-o -path ./etc/mtab -o -path ./kvatest \
	-o -path ./etc/systemd/system/kvarena-vmtest.service \
	-o -path ./etc/systemd/system/multi-user.target.wants/kvarena-vmtest.service \
	-o -path ./root \) -prune -o -print | sort
