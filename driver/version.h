/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module's version, as modinfo and /sys/module/kvarena/version show
 * it: the release DKMS knows it by.  The Makefile's KVA_VERSION and
 * dkms.conf's PACKAGE_VERSION say the same (make check-dkms checks).
 */
#ifndef KVA_VERSION_H
#define KVA_VERSION_H

#define KVA_MOD_VERSION "1.0.0"

#endif
