/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An in-process stand-in for kvarena.ko, for native tests of libkvarena's
 * device path: the uapi's ioctls over the module's own core allocator,
 * with the checks the header documents.  It answers through the
 * KVA_TESTING build's ioctl hook for any fd the library opens, so a test
 * points KVA_DEVICE at an ordinary file (/dev/null) and installs it.
 */
#ifndef KVA_FAKE_MODULE_H
#define KVA_FAKE_MODULE_H

#include <stdint.h>

/* Install the hooks, with no arenas. */
void fake_module_install(void);
/* Destroy every arena, release every client, remove the hooks. */
void fake_module_remove(void);

/* What VERSION reports. */
void fake_module_set_version(uint32_t abi, uint64_t features);
/* The @nth next command @nr (a KVARENA_IOC_x) fails with -@err. */
void fake_module_fail(unsigned long nr, unsigned int nth, int err);
/* Commands @nr received since install. */
unsigned int fake_module_calls(unsigned long nr);
/* Clients attached now (all arenas). */
unsigned int fake_module_clients(void);
/* The backing fd and offset registered for frame @idx of @arena, or -1. */
int fake_module_backing(const char *arena, uint32_t idx, uint64_t *offset);

#endif
