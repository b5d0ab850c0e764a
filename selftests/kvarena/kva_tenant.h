/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the selftests that play several tenants: checks in a child
 * process, which exit with the line that failed, and children that run
 * as another uid.
 */
#ifndef KVA_TENANT_H
#define KVA_TENANT_H

#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "kva_test.h"

/* A child's check: exit with the line number of the first that fails. */
#define CHECK(cond) do { if (!(cond)) _exit(__LINE__ & 0xff ?: 1); } while (0)
#define CHECK_EQ(want, expr) do {					\
	long long __w = (want), __g = (expr);				\
	if (__w != __g) {						\
		fprintf(stderr, "line %d: %s: want %lld, got %lld\n",	\
			__LINE__, #expr, __w, __g);			\
		_exit(__LINE__ & 0xff ?: 1);				\
	}								\
} while (0)

/* Become @uid (and its gid, no supplementary groups), or exit 250. */
static inline void drop_to(uid_t uid)
{
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid)) {
		fprintf(stderr, "cannot become uid %u: %s\n", uid,
			strerror(errno));
		_exit(250);
	}
	/*
	 * Dumpable, as a process that user starts is: a change of ids makes
	 * it not, and before 5.14 that hid its own /proc/self/fdinfo from it.
	 */
	prctl(PR_SET_DUMPABLE, 1);
}

/* Wait for @pid; its exit code, or 1000 + its signal. */
static inline int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return kva_exited(status);
}

/* Run @fn(@arg) in a child as @uid (0: stay root); its exit code. */
static inline int as_uid(uid_t uid, int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (uid)
			drop_to(uid);
		_exit(fn(arg));
	}
	return reap(pid);
}

/* Does touching @p kill the process with SIGBUS?  Tried in a child. */
static inline int touch_gets_sigbus(volatile char *p, bool write)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (write)
			p[0] = 1;
		else
			(void)p[0];
		_exit(0);
	}
	return reap(pid) == 1000 + SIGBUS;
}

/* Is every byte of @p[0..n) zero: nothing of a previous holder's? */
static inline bool all_zero(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

#endif /* KVA_TENANT_H */
