// SPDX-License-Identifier: GPL-2.0
/*
 * The tests' side of the KVA_TESTING build's sites: see hooks.h.
 */
#include <string.h>

#include "hooks.h"

int kva_testing_fault(const char *site);
void kva_testing_pass(const char *site);

#define NR_SITES 16

static struct {
	const char *site;
	unsigned int count;
} seen[NR_SITES];

static const char *armed;
static unsigned int armed_nth;
static int armed_err;
static void (*armed_fn)(void *);
static void *armed_arg;

static unsigned int *counter(const char *site)
{
	int i;

	for (i = 0; i < NR_SITES && seen[i].site; i++)
		if (!strcmp(seen[i].site, site))
			return &seen[i].count;
	if (i == NR_SITES)
		return NULL;
	seen[i].site = site;
	return &seen[i].count;
}

void kva_testing_pass(const char *site)
{
	unsigned int *c = counter(site);

	if (c)
		++*c;
}

int kva_testing_fault(const char *site)
{
	kva_testing_pass(site);
	if (armed && !strcmp(armed, site) && !--armed_nth) {
		armed = NULL;
		if (armed_fn) {
			armed_fn(armed_arg);
			armed_fn = NULL;
			return 0;
		}
		return -armed_err;
	}
	return 0;
}

void hooks_call(const char *site, unsigned int nth, void (*fn)(void *),
		void *arg)
{
	armed = site;
	armed_nth = nth;
	armed_fn = fn;
	armed_arg = arg;
}

void hooks_fail(const char *site, unsigned int nth, int err)
{
	armed = site;
	armed_nth = nth;
	armed_err = err;
	armed_fn = NULL;
}

void hooks_reset(void)
{
	armed = NULL;
	armed_fn = NULL;
	memset(seen, 0, sizeof(seen));
}

unsigned int hooks_count(const char *site)
{
	unsigned int *c = counter(site);

	return c ? *c : 0;
}
