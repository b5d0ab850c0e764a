/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The test sites of the KVA_TESTING build of libkvarena: fault injection
 * (KVA_FAULT) and pass counts (KVA_PASS) at named sites.
 *
 * Sites: host.memfd, host.reserve, host.map, host.unmap (faults, the host
 * backend); dev.free (a fault: the FREE submission, refused before it
 * reaches the module); dev.submit (one per submission: one
 * io_uring_enter on the uring transport), dev.set_usage, dev.frame_fd,
 * dev.set_backing, dev.scrub and dev.imports_dropped (one per command of
 * that kind sent), counted only.
 */
#ifndef KVA_SELFTEST_HOOKS_H
#define KVA_SELFTEST_HOOKS_H

/* Make the @nth next pass through @site (1 = the next one) fail with
 * -@err.  One site is armed at a time. */
void hooks_fail(const char *site, unsigned int nth, int err);
/* Run @fn(@arg) at the @nth next pass through @site, which then goes on
 * as if unarmed (something to happen at that moment: an eviction). */
void hooks_call(const char *site, unsigned int nth, void (*fn)(void *),
		void *arg);
/* Disarm, and zero the pass counts. */
void hooks_reset(void);
/* Passes through @site since the last reset. */
unsigned int hooks_count(const char *site);

#endif
