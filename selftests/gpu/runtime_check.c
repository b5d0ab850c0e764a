// SPDX-License-Identifier: MIT
/*
 * runtime_check.c - libkvarena's CUDA backend and the driver's shareable
 * memory on a real GPU, for selftests/gpu/run.sh.
 *
 *   runtime_check
 *
 * KTAP on stdout, and after each result the same as one JSON object
 * ({"kind":"runtime",...}); the costs as {"kind":"runtime_cost",...}.
 * Exit status 0 when every check passed, 1 when one failed, 77 when no
 * CUDA driver or device is there.
 *
 * Needs neither the kselftest harness nor liburing, so that it builds on
 * a bare GPU machine from the repository alone.  The driver is the one
 * libkvarena loads: $KVA_CUDA_LIBRARY, else libcuda.so.1; run.sh
 * --dry-run points it at the test double (selftests/lib/cuda_double.c).
 *
 * Checks:
 *  - exported memory outlives its exporter: a child process creates
 *    frames, writes them, exports their fds, passes them over SCM_RIGHTS
 *    and exits; only then does this process import, map, read (the
 *    child's bytes), write and read back (the way several serving
 *    processes share an arena's frames);
 *  - a tier agent's copies (kva_tier_agent()): cuMemcpyDtoHAsync() from a
 *    read-only mapping of an import into shared shmem pages and
 *    cuMemcpyHtoDAsync() back, on a non-blocking stream, byte-exact; their
 *    rates beside the synchronous copies;
 *  - a scrubber's clear (kva_scrub()): cuMemsetD8Async() through an
 *    import, waited for, zeroes the frames' memory; its rate;
 *  - a gang's ranks on one GPU: two rank processes at once, each finding
 *    the GPU by UUID and importing its own member's frames, write their
 *    slices; each member holds its rank's bytes (the driver's part of a
 *    gang: kvarena.ko itself is not on the GPU machine);
 *  - an embedded CUDA arena: frames mapped behind a sequence's range hold
 *    what is copied in; copy-on-write never changes the parent;
 *  - a published frame is mapped read-only where it is found (or, where
 *    the driver refuses, read-write, and the arena says so);
 *  - a sequence freed while the device still reads it (a stream held in
 *    a host function, then copies out of the range): without a stream
 *    named the free waits for the device, with the stream named it
 *    returns and the arena's thread unmaps after; either way the copies
 *    complete without a fault and read the sequence's bytes;
 *  - the costs of mapping a 2 MiB frame and of a copy-on-write.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kvarena.h"

#define FS		(2u << 20)	/* frame size */
#define NR_SHARED	4		/* frames passed between processes */

#define DRV_SYMS(X)							\
	X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain)		\
	X(cuDevicePrimaryCtxRelease) X(cuCtxPushCurrent)		\
	X(cuCtxPopCurrent) X(cuMemGetAllocationGranularity)		\
	X(cuMemCreate) X(cuMemRelease) X(cuMemExportToShareableHandle)	\
	X(cuMemImportFromShareableHandle) X(cuMemAddressReserve)	\
	X(cuMemAddressFree) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess)	\
	X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8Async)		\
	X(cuStreamSynchronize) X(cuStreamCreate) X(cuStreamDestroy)	\
	X(cuLaunchHostFunc) X(cuMemcpyDtoDAsync) X(cuMemGetAccess)	\
	X(cuMemcpyDtoHAsync) X(cuMemcpyHtoDAsync) X(cuDeviceGetCount)	\
	X(cuDeviceGetUuid)

#define STR_(x)	#x
#define STR(x)	STR_(x)

/* The driver, loaded as libkvarena loads it (names as <cuda.h> maps them). */
static struct {
#define DRV_FIELD(name) __typeof__(&name) name;
	DRV_SYMS(DRV_FIELD)
#undef DRV_FIELD
} drv;

static CUdevice dev;
static CUcontext ctx;
static int nr_tests, nr_failed;

static void report(bool ok, const char *fmt, ...)
{
	char name[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	nr_tests++;
	nr_failed += !ok;
	printf("%s %d %s\n", ok ? "ok" : "not ok", nr_tests, name);
	printf("{\"kind\":\"runtime\",\"name\":\"%s\",\"ok\":%s}\n", name,
	       ok ? "true" : "false");
	fflush(stdout);
}

/* A failed step: say which, with the driver's or the library's code. */
static bool step(bool ok, const char *what, long code)
{
	if (!ok)
		printf("# %s failed: %ld\n", what, code);
	return ok;
}

#define CU(call)	step((call) == CUDA_SUCCESS, #call, 0)
#define KV(call)	({ int _e = (call); step(_e == 0, #call, _e); })

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void pattern(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31 + i * 7 + (i >> 12));
}

/* Load the driver and make device 0's primary context current. */
static int drv_start(const char **why)
{
	const char *lib = getenv("KVA_CUDA_LIBRARY");
	void *dl;

	dl = dlopen(lib ? lib : "libcuda.so.1",
		    RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!dl) {
		*why = "no CUDA driver (libcuda.so.1 does not load)";
		return -1;
	}
#define DRV_RESOLVE(name)						\
	drv.name = (__typeof__(&name))dlsym(dl, STR(name));		\
	if (!drv.name) {						\
		*why = "the CUDA driver lacks " STR(name);		\
		return -1;						\
	}
	DRV_SYMS(DRV_RESOLVE)
#undef DRV_RESOLVE
	if (drv.cuInit(0) != CUDA_SUCCESS ||
	    drv.cuDeviceGet(&dev, 0) != CUDA_SUCCESS) {
		*why = "no CUDA device (cuInit or cuDeviceGet failed)";
		return -1;
	}
	if (drv.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    drv.cuCtxPushCurrent(ctx) != CUDA_SUCCESS) {
		*why = "device 0's primary context cannot be made current";
		return -1;
	}
	return 0;
}

static CUmemAllocationProp shareable_prop(void)
{
	return (CUmemAllocationProp){
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev },
	};
}

static CUmemAccessDesc rw_access(void)
{
	return (CUmemAccessDesc){
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev },
		.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
}

/* Map @n allocations of @size behind one new range; access once. */
static bool map_all(const CUmemGenericAllocationHandle *h, int n, size_t size,
		    CUdeviceptr *va)
{
	CUmemAccessDesc acc = rw_access();
	bool ok = CU(drv.cuMemAddressReserve(va, n * size, size, 0, 0));

	for (int i = 0; ok && i < n; i++)
		ok = CU(drv.cuMemMap(*va + i * size, size, 0, h[i], 0));
	return ok && CU(drv.cuMemSetAccess(*va, n * size, &acc, 1));
}

static void unmap_all(CUdeviceptr va, int n, size_t size)
{
	for (int i = 0; i < n; i++)
		drv.cuMemUnmap(va + i * size, size);
	drv.cuMemAddressFree(va, n * size);
}

/* Send NR_SHARED frames' fds with @len bytes of @payload over @sock. */
static bool send_frames(int sock, const void *payload, size_t len,
			const int *fds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * NR_SHARED)] = { 0 };
	struct iovec iov = { (void *)payload, len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * NR_SHARED);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * NR_SHARED);
	return sendmsg(sock, &msg, 0) == (ssize_t)len;
}

/*
 * The exporter (a child, exec'd as `runtime_check --exporter FD`): make
 * NR_SHARED frames, write pattern i into frame i, send their fds over
 * the socket @sock, release everything and exit.  Status 0 on success.
 */
static int exporter(int sock)
{
	CUmemAllocationProp prop;
	CUmemGenericAllocationHandle h[NR_SHARED];
	unsigned char *buf = malloc(FS);
	int fds[NR_SHARED];
	uint64_t size = FS;
	const char *why;
	CUdeviceptr va;
	size_t gran;
	bool ok;

	if (!buf || drv_start(&why)) {
		fprintf(stderr, "exporter: %s\n", buf ? why : "no memory");
		return 2;
	}
	prop = shareable_prop();
	ok = CU(drv.cuMemGetAllocationGranularity(&gran, &prop,
				CU_MEM_ALLOC_GRANULARITY_MINIMUM)) &&
	     FS % gran == 0;
	for (int i = 0; ok && i < NR_SHARED; i++)
		ok = CU(drv.cuMemCreate(&h[i], FS, &prop, 0));
	ok = ok && map_all(h, NR_SHARED, FS, &va);
	for (int i = 0; ok && i < NR_SHARED; i++) {
		pattern(buf, FS, 100 + i);
		ok = CU(drv.cuMemcpyHtoD(va + (size_t)i * FS, buf, FS));
	}
	if (ok)
		unmap_all(va, NR_SHARED, FS);
	for (int i = 0; ok && i < NR_SHARED; i++)
		ok = CU(drv.cuMemExportToShareableHandle(&fds[i], h[i],
				CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	if (!ok || !send_frames(sock, &size, sizeof(size), fds))
		return 1;
	/* Nothing of ours holds the memory now: only the fds in flight. */
	for (int i = 0; i < NR_SHARED; i++) {
		close(fds[i]);
		drv.cuMemRelease(h[i]);
	}
	free(buf);
	return 0;
}

/* Receive NR_SHARED frames' fds and @len bytes; 0 and @fds filled, or -1. */
static int recv_frames(int sock, void *payload, size_t len, int *fds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * NR_SHARED)];
	struct iovec iov = { payload, len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != (ssize_t)len)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int) * NR_SHARED))
		return -1;
	memcpy(fds, CMSG_DATA(cm), sizeof(int) * NR_SHARED);
	return 0;
}

/*
 * What kva_scrub() does to a CUDA arena's frames between cache domains
 * (lib/src/scrub.c): cuMemsetD8Async() through the scrubber's import,
 * waited for with cuStreamSynchronize() before the unmap.  The frames'
 * memory, mapped afresh, must read zero; the clear's rate is reported.
 */
static bool check_scrub_clear(const CUmemGenericAllocationHandle *h,
			      CUdeviceptr va, unsigned char *buf)
{
	size_t n = (size_t)NR_SHARED * FS;
	int reps = 50;
	double t0, us;
	CUdeviceptr va2;
	bool ok;

	t0 = now_us();
	ok = CU(drv.cuMemsetD8Async(va, 0, n, NULL)) &&
	     CU(drv.cuStreamSynchronize(NULL));
	for (int r = 1; ok && r < reps; r++)
		ok = CU(drv.cuMemsetD8Async(va, 0, n, NULL)) &&
		     CU(drv.cuStreamSynchronize(NULL));
	us = now_us() - t0;
	if (!ok || !map_all(h, NR_SHARED, FS, &va2))
		return false;
	for (int i = 0; ok && i < NR_SHARED; i++) {
		ok = CU(drv.cuMemcpyDtoH(buf, va2 + (size_t)i * FS, FS));
		for (size_t j = 0; ok && j < FS; j++)
			ok = !buf[j];
	}
	unmap_all(va2, NR_SHARED, FS);
	if (ok)
		printf("{\"kind\":\"runtime_cost\",\"scrub_frames_per_s\":%.0f,"
		       "\"scrub_gbs\":%.1f}\n", reps * NR_SHARED / (us / 1e6),
		       reps * n / (us * 1e3));
	return ok;
}

/* @reps batches of NR_SHARED frame copies on @st; their GB/s, or 0. */
static double copy_rate(CUdeviceptr va, unsigned char *host, bool out,
			CUstream st, int reps)
{
	double t0 = now_us();
	bool ok = true;

	for (int r = 0; ok && r < reps; r++) {
		for (int i = 0; ok && i < NR_SHARED; i++) {
			CUdeviceptr d = va + (size_t)i * FS;
			unsigned char *h = host + (size_t)i * FS;

			if (st)
				ok = CU(out ? drv.cuMemcpyDtoHAsync(h, d, FS, st) :
					      drv.cuMemcpyHtoDAsync(d, h, FS, st));
			else
				ok = CU(out ? drv.cuMemcpyDtoH(h, d, FS) :
					      drv.cuMemcpyHtoD(d, h, FS));
		}
		ok = ok && (!st || CU(drv.cuStreamSynchronize(st)));
	}
	return ok ? (double)reps * NR_SHARED * FS / ((now_us() - t0) * 1e3) : 0;
}

/*
 * What kva_tier_agent() does to a CUDA arena's frames (lib/src/tier.c):
 * a demotion reads each frame through a read-only mapping of the agent's
 * import with cuMemcpyDtoHAsync() on a non-blocking stream of its own,
 * into a shared mapping of a memfd (pageable shmem, as the lower host
 * arena's frames are); a promotion writes it back with
 * cuMemcpyHtoDAsync(); each batch waited for before the unmap.  Both
 * byte-exact; their rates beside the synchronous copies of the same bytes.
 */
static bool check_tier_copies(const CUmemGenericAllocationHandle *h,
			      CUdeviceptr va, unsigned char *want)
{
	CUmemAccessDesc ro = rw_access();
	size_t n = (size_t)NR_SHARED * FS;
	double down, up, dtoh, htod;
	unsigned char *host = MAP_FAILED;
	CUdeviceptr rva = 0;
	CUstream st = NULL;
	bool ok, mapped;
	int fd;

	ro.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
	fd = memfd_create("kvarena-tier", MFD_CLOEXEC);
	if (fd >= 0 && !ftruncate(fd, (off_t)n))
		host = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	ok = step(host != MAP_FAILED, "a memfd mapping", errno);
	for (int i = 0; ok && i < NR_SHARED; i++) {
		pattern(want, FS, 300 + i);
		ok = CU(drv.cuMemcpyHtoD(va + (size_t)i * FS, want, FS));
	}
	/* The source of a demotion: a second mapping, read-only. */
	mapped = ok && CU(drv.cuMemAddressReserve(&rva, n, FS, 0, 0));
	for (int i = 0; mapped && i < NR_SHARED; i++)
		mapped = CU(drv.cuMemMap(rva + (size_t)i * FS, FS, 0, h[i], 0));
	ok = mapped && CU(drv.cuMemSetAccess(rva, n, &ro, 1)) &&
	     CU(drv.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	ok = ok && copy_rate(rva, host, true, st, 1) > 0;
	for (int i = 0; ok && i < NR_SHARED; i++) {
		pattern(want, FS, 300 + i);
		ok = !memcmp(host + (size_t)i * FS, want, FS);
	}
	for (int i = 0; ok && i < NR_SHARED; i++)
		pattern(host + (size_t)i * FS, FS, 400 + i);
	ok = ok && copy_rate(va, host, false, st, 1) > 0;
	for (int i = 0; ok && i < NR_SHARED; i++) {
		pattern(want, FS, 400 + i);
		ok = CU(drv.cuMemcpyDtoH(host, va + (size_t)i * FS, FS)) &&
		     !memcmp(host, want, FS);
	}
	if (ok) {
		/* in turn, so that the machine's noise hits both alike */
		down = copy_rate(rva, host, true, st, 20);
		dtoh = copy_rate(rva, host, true, NULL, 20);
		up = copy_rate(va, host, false, st, 20);
		htod = copy_rate(va, host, false, NULL, 20);
		printf("{\"kind\":\"runtime_cost\",\"tier_demote_gbs\":%.2f,"
		       "\"dtoh_gbs\":%.2f,\"tier_promote_gbs\":%.2f,"
		       "\"htod_gbs\":%.2f}\n", down, dtoh, up, htod);
	}
	if (st)
		drv.cuStreamDestroy(st);
	if (rva) {
		for (int i = 0; i < NR_SHARED; i++)
			drv.cuMemUnmap(rva + (size_t)i * FS, FS);
		drv.cuMemAddressFree(rva, n);
	}
	if (host != MAP_FAILED)
		munmap(host, n);
	return ok;
}

/*
 * The importer's side: start the exporter, take its fds, wait for it to
 * exit, then import, map, read, write and read back.
 */
static void check_memory_outlives_its_exporter(const char *self)
{
	CUmemGenericAllocationHandle h[NR_SHARED];
	unsigned char *buf = malloc(FS), *want = malloc(FS);
	int sv[2], fds[NR_SHARED], status = -1, imported = 0;
	bool got = false, read_ok = false, write_ok = false, scrub_ok = false;
	bool tier_ok = false;
	uint64_t size = 0;
	CUdeviceptr va = 0;
	char arg[16];
	pid_t pid;

	if (!buf || !want || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC,
					0, sv))
		goto out;
	pid = fork();
	if (pid == 0) {
		/* the child gets the socket as fd 3 */
		if (dup2(sv[1], 3) < 0)
			_exit(2);
		snprintf(arg, sizeof(arg), "%d", 3);
		execl(self, self, "--exporter", arg, (char *)NULL);
		_exit(2);
	}
	close(sv[1]);
	got = pid > 0 && recv_frames(sv[0], &size, sizeof(size), fds) == 0 &&
	      size == FS;
	close(sv[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	got = got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	step(got, "the exporter's frames over SCM_RIGHTS", status);
	if (!got)
		goto out;
	for (; imported < NR_SHARED; imported++) {
		bool ok = CU(drv.cuMemImportFromShareableHandle(
			&h[imported], (void *)(intptr_t)fds[imported],
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));

		close(fds[imported]);
		if (!ok)
			break;
	}
	for (int i = imported + 1; i < NR_SHARED; i++)
		close(fds[i]);
	if (imported < NR_SHARED || !map_all(h, NR_SHARED, FS, &va))
		goto out;
	read_ok = true;
	for (int i = 0; i < NR_SHARED; i++) {
		pattern(want, FS, 100 + i);
		read_ok &= CU(drv.cuMemcpyDtoH(buf, va + (size_t)i * FS, FS)) &&
			   !memcmp(buf, want, FS);
	}
	write_ok = true;
	for (int i = 0; i < NR_SHARED; i++) {
		pattern(want, FS, 200 + i);
		write_ok &= CU(drv.cuMemcpyHtoD(va + (size_t)i * FS, want, FS));
	}
	for (int i = 0; i < NR_SHARED; i++) {
		pattern(want, FS, 200 + i);
		write_ok &= CU(drv.cuMemcpyDtoH(buf, va + (size_t)i * FS, FS)) &&
			    !memcmp(buf, want, FS);
	}
	tier_ok = check_tier_copies(h, va, want);
	scrub_ok = check_scrub_clear(h, va, buf);
	unmap_all(va, NR_SHARED, FS);
out:
	for (int i = 0; i < imported; i++)
		drv.cuMemRelease(h[i]);
	report(read_ok, "frames_exported_by_a_process_that_exited_keep_its_bytes");
	report(write_ok, "frames_imported_from_an_exited_process_take_writes");
	report(tier_ok, "a_tier_agents_async_copies_through_an_import_are_byte_exact");
	report(scrub_ok, "a_scrubbers_clear_through_an_import_zeroes_the_frames");
	free(buf);
	free(want);
}

/* What a rank child is sent with its member's frames. */
struct rank_msg {
	uint32_t rank;
	unsigned char uuid[16];		/* the member's GPU */
};

static unsigned int rank_seed(uint32_t rank, int frame)
{
	return 300 + 10 * rank + (unsigned int)frame;
}

/*
 * A rank of a gang (a child, exec'd as `runtime_check --rank FD`), doing
 * on the driver what libkvarena's CUDA rank does (lib/src/cuda.c): find
 * the member's GPU by its UUID, import each of the member's frames from
 * its fd, map them behind one range with one access grant, then write its
 * slice and read it back.  Status 0 on success.
 */
static int rank_child(int sock)
{
	CUmemGenericAllocationHandle h[NR_SHARED];
	unsigned char *buf = malloc(FS), *want = malloc(FS);
	struct rank_msg m;
	int fds[NR_SHARED], n = 0, i, found = -1;
	const char *why;
	CUdeviceptr va;
	bool ok;

	if (!buf || !want || drv_start(&why) ||
	    recv_frames(sock, &m, sizeof(m), fds))
		return 2;
	ok = CU(drv.cuDeviceGetCount(&n));
	for (i = 0; ok && i < n && found < 0; i++) {
		CUdevice d;
		CUuuid u;

		ok = CU(drv.cuDeviceGet(&d, i)) &&
		     CU(drv.cuDeviceGetUuid(&u, d));
		if (ok && !memcmp(u.bytes, m.uuid, 16))
			found = i;
	}
	/* run.sh's machine has one GPU: the member's must be device 0. */
	if (!ok || found != 0)
		return 3;
	for (i = 0; i < NR_SHARED; i++) {
		ok = ok && CU(drv.cuMemImportFromShareableHandle(&h[i],
				(void *)(intptr_t)fds[i],
				CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
		close(fds[i]);
	}
	if (!ok || !map_all(h, NR_SHARED, FS, &va))
		return 4;
	for (i = 0; ok && i < NR_SHARED; i++) {
		pattern(want, FS, rank_seed(m.rank, i));
		ok = CU(drv.cuMemcpyHtoD(va + (size_t)i * FS, want, FS));
	}
	for (i = 0; ok && i < NR_SHARED; i++) {
		pattern(want, FS, rank_seed(m.rank, i));
		ok = CU(drv.cuMemcpyDtoH(buf, va + (size_t)i * FS, FS)) &&
		     !memcmp(buf, want, FS);
	}
	unmap_all(va, NR_SHARED, FS);
	for (i = 0; i < NR_SHARED; i++)
		drv.cuMemRelease(h[i]);
	free(buf);
	free(want);
	return ok ? 0 : 5;
}

/*
 * A gang of two member arenas on one GPU, as a one-GPU machine runs a
 * tensor-parallel engine of two ranks.  kvarena.ko is not on the GPU
 * machine (the gang itself - one ALLOC a frame in both members, a rank
 * given only its own member's frames - is checked in the VM, gang_test
 * and lib_vm_cuda_test); this is the driver's part: two rank processes
 * at once, each importing its member's frames (exported by this process,
 * as the arena's creator does), finding the GPU by UUID, writing its
 * slice through one range; then this process reads each member back:
 * each holds its own rank's bytes and nothing of the other's.
 */
static void check_gang_ranks_on_one_gpu(const char *self)
{
	CUmemAllocationProp prop = shareable_prop();
	CUmemGenericAllocationHandle h[2][NR_SHARED];
	unsigned char *buf = malloc(FS), *want = malloc(FS);
	bool made = true, ranks_ok = true, apart = false;
	pid_t pid[2] = { -1, -1 };
	int made_n[2] = { 0, 0 };
	struct rank_msg m = { 0 };
	CUdeviceptr va;
	CUuuid u;
	int r, i;

	made = buf && want && CU(drv.cuDeviceGetUuid(&u, dev));
	memcpy(m.uuid, u.bytes, sizeof(m.uuid));
	for (r = 0; made && r < 2; r++)
		for (; made && made_n[r] < NR_SHARED; made_n[r]++)
			made = CU(drv.cuMemCreate(&h[r][made_n[r]], FS, &prop,
						  0));
	for (r = 0; made && r < 2; r++) {
		int sv[2], fds[NR_SHARED], nfd = 0;
		bool sent;

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
			made = false;
			break;
		}
		pid[r] = fork();
		if (pid[r] == 0) {
			if (dup2(sv[1], 3) < 0)
				_exit(2);
			execl(self, self, "--rank", "3", (char *)NULL);
			_exit(2);
		}
		close(sv[1]);
		for (; nfd < NR_SHARED; nfd++)
			if (!CU(drv.cuMemExportToShareableHandle(&fds[nfd],
					h[r][nfd],
					CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
					0)))
				break;
		m.rank = (uint32_t)r;
		sent = pid[r] > 0 && nfd == NR_SHARED &&
		       send_frames(sv[0], &m, sizeof(m), fds);
		for (i = 0; i < nfd; i++)
			close(fds[i]);
		close(sv[0]);
		made = sent;
	}
	for (r = 0; r < 2; r++) {
		int status = -1;

		if (pid[r] > 0)
			waitpid(pid[r], &status, 0);
		ranks_ok &= made && WIFEXITED(status) &&
			    WEXITSTATUS(status) == 0;
		step(ranks_ok, "a rank process", status);
	}
	if (ranks_ok) {
		apart = true;
		for (r = 0; apart && r < 2; r++) {
			if (!map_all(h[r], NR_SHARED, FS, &va)) {
				apart = false;
				break;
			}
			for (i = 0; apart && i < NR_SHARED; i++) {
				pattern(want, FS, rank_seed(r, i));
				apart = CU(drv.cuMemcpyDtoH(buf,
						va + (size_t)i * FS, FS)) &&
					!memcmp(buf, want, FS);
			}
			unmap_all(va, NR_SHARED, FS);
		}
	}
	for (r = 0; r < 2; r++)
		for (i = 0; i < made_n[r]; i++)
			drv.cuMemRelease(h[r][i]);
	report(ranks_ok, "gang_ranks_import_their_members_frames_by_gpu_uuid");
	report(apart, "two_member_arenas_on_one_gpu_keep_each_ranks_bytes");
	free(buf);
	free(want);
}

static struct kva_geometry llama(void)
{
	/* Llama-3-8B's KV in fp16: 128 KiB per token, 16 per 2 MiB frame. */
	struct kva_geometry g = { .layers = 32, .kv_heads = 8,
				  .head_dim = 128, .dtype = KVA_DTYPE_FP16,
				  .frame_size = FS };

	kva_geometry_init(&g);
	return g;
}

static void check_arena(struct kva_arena *a)
{
	struct kva_geometry g = llama();
	unsigned char *host = malloc(6 * FS), *want = host + 3 * FS;
	struct kva_seq *s = NULL, *p = NULL, *c = NULL;
	bool ok;

	if (!host)
		return;
	/* three frames behind one range hold what is copied in */
	ok = KV(kva_seq_create(a, &g, 4096, &s)) && KV(kva_seq_grow(s, 3 * 16));
	pattern(host, 3 * FS, 1);
	ok = ok && CU(drv.cuMemcpyHtoD(s->base, host, 3 * FS));
	memset(want, 0, 3 * FS);
	ok = ok && CU(drv.cuMemcpyDtoH(want, s->base, 3 * FS)) &&
	     !memcmp(host, want, 3 * FS);
	report(ok, "frames_mapped_behind_a_range_hold_what_is_copied_in");
	if (s)
		kva_seq_free(s);

	/* the child's copy of the partial frame is its own */
	ok = KV(kva_seq_create(a, &g, 4096, &p)) && KV(kva_seq_grow(p, 16 + 5));
	pattern(host, 2 * FS, 2);
	ok = ok && CU(drv.cuMemcpyHtoD(p->base, host, 2 * FS)) &&
	     KV(kva_seq_fork(p, &c)) && KV(kva_seq_grow(c, 1));
	memset(want, 0xab, FS);
	ok = ok && CU(drv.cuMemcpyHtoD(c->base + FS, want, FS));
	ok = ok && CU(drv.cuMemcpyDtoH(want, p->base, 2 * FS)) &&
	     !memcmp(want, host, 2 * FS);
	ok = ok && CU(drv.cuMemcpyDtoH(want, c->base, FS)) &&
	     !memcmp(want, host, FS);
	report(ok, "copy_on_write_never_changes_the_parent");
	if (c)
		kva_seq_free(c);
	if (p)
		kva_seq_free(p);
	free(host);
}

static void costs(struct kva_arena *a)
{
	struct kva_geometry g = llama();
	struct kva_seq *s, *p, *c;
	double t0, map_us, cow_us;
	int n = 200;
	bool ok;

	ok = KV(kva_seq_create(a, &g, 4096, &s));
	/* every frame's allocation made once, before timing */
	ok = ok && KV(kva_seq_grow(s, 48 * 16)) && KV(kva_seq_shrink(s, 0));
	t0 = now_us();
	for (int i = 0; ok && i < n; i++)
		ok = KV(kva_seq_grow(s, 16)) && KV(kva_seq_shrink(s, 0));
	map_us = (now_us() - t0) / n;
	ok = ok && KV(kva_seq_create(a, &g, 4096, &p)) &&
	     KV(kva_seq_grow(p, 8));
	t0 = now_us();
	for (int i = 0; ok && i < 20; i++) {
		ok = KV(kva_seq_fork(p, &c)) && KV(kva_seq_grow(c, 1));
		kva_seq_free(c);
	}
	cow_us = (now_us() - t0) / 20;
	report(ok, "map_unmap_and_copy_on_write_costs_measured");
	if (ok)
		printf("{\"kind\":\"runtime_cost\",\"map_unmap_us\":%.1f,"
		       "\"fork_cow_free_us\":%.1f}\n", map_us, cow_us);
	kva_seq_free(p);
	kva_seq_free(s);
}

/*
 * A prefix published by one sequence and found by another: where it is
 * found it is mapped read-only (cuMemGetAccess says), unless the driver
 * refused that and the library fell back to read-write, which the arena
 * reports (KVA_INFO_SHARED_RW); either way it reads what was published.
 */
static void check_published_read_only(struct kva_arena *a)
{
	struct kva_geometry g = llama();
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev };
	unsigned char *host = malloc(4 * FS), *got = host + 2 * FS;
	struct kva_seq *p = NULL, *q = NULL;
	struct kva_arena_info info;
	unsigned long long flags = 0;
	uint32_t tok[32];
	struct kva_key k[2];
	bool ok, fallback = false;

	if (!host)
		return;
	for (int i = 0; i < 32; i++)
		tok[i] = 1000 + i;
	ok = step(kva_prefix_keys(&g, "rt", 2, tok, 32, k, 2) == 2,
		  "kva_prefix_keys", 0) &&
	     KV(kva_seq_create(a, &g, 4096, &p)) && KV(kva_seq_grow(p, 32));
	pattern(host, 2 * FS, 5);
	ok = ok && CU(drv.cuMemcpyHtoD(p->base, host, 2 * FS)) &&
	     step(kva_seq_publish(p, k, 2) == 2, "kva_seq_publish", 0) &&
	     KV(kva_seq_create(a, &g, 4096, &q)) &&
	     step(kva_seq_attach_prefix(q, k, 2) == 2, "kva_seq_attach_prefix",
		  0) &&
	     CU(drv.cuMemGetAccess(&flags, &loc, q->base)) &&
	     KV(kva_arena_info(a, &info));
	if (ok)
		fallback = info.flags & KVA_INFO_SHARED_RW;
	memset(got, 0, 2 * FS);
	ok = ok && CU(drv.cuMemcpyDtoH(got, q->base, 2 * FS)) &&
	     !memcmp(got, host, 2 * FS);
	ok = ok && (fallback ? flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE :
		    flags == CU_MEM_ACCESS_FLAGS_PROT_READ);
	report(ok, "published_frames_found_are_read_only_or_the_fallback_is_reported");
	printf("{\"kind\":\"runtime_access\",\"access\":%llu,"
	       "\"read_only\":%s,\"read_write_fallback\":%s}\n", flags,
	       flags == CU_MEM_ACCESS_FLAGS_PROT_READ ? "true" : "false",
	       fallback ? "true" : "false");
	if (q)
		kva_seq_free(q);
	if (p)
		kva_seq_free(p);
	free(host);
}

#define HOLD_US		100000	/* the device busy for 100 ms */

static void hold_stream(void *arg)
{
	usleep(*(const unsigned int *)arg);
}

/*
 * Free a sequence while the device still reads it: @st waits in a host
 * function, then copies the range out eight times.  With @named, the
 * arena orders its teardown with @st; otherwise it must wait for the
 * whole context.  The copies must complete without a fault and hold the
 * sequence's bytes: nothing was unmapped under them.
 */
static void check_free_under_a_busy_stream(struct kva_arena *a, CUstream st,
					   bool named)
{
	static const unsigned int hold = HOLD_US;
	struct kva_geometry g = llama();
	unsigned char *host = malloc(6 * FS), *got = host + 3 * FS;
	struct kva_seq *s = NULL, *d = NULL;
	double t0, free_us = 0, done_us = 0;
	bool ok;

	if (!host)
		return;
	ok = (!named || KV(kva_arena_set_stream(a, st))) &&
	     KV(kva_seq_create(a, &g, 4096, &s)) && KV(kva_seq_grow(s, 48)) &&
	     KV(kva_seq_create(a, &g, 4096, &d)) && KV(kva_seq_grow(d, 48));
	pattern(host, 3 * FS, named ? 7 : 6);
	memset(got, 0, 3 * FS);
	ok = ok && CU(drv.cuMemcpyHtoD(s->base, host, 3 * FS)) &&
	     CU(drv.cuMemcpyHtoD(d->base, got, 3 * FS)) &&
	     CU(drv.cuLaunchHostFunc(st, hold_stream, (void *)&hold));
	for (int i = 0; ok && i < 8; i++)
		ok = CU(drv.cuMemcpyDtoDAsync(d->base, s->base, 3 * FS, st));
	t0 = now_us();
	if (ok) {
		kva_seq_free(s);
		s = NULL;
	}
	free_us = now_us() - t0;
	ok = ok && CU(drv.cuStreamSynchronize(st));
	done_us = now_us() - t0;
	ok = ok && KV(kva_arena_sync(a)) &&
	     CU(drv.cuMemcpyDtoH(got, d->base, 3 * FS)) &&
	     !memcmp(got, host, 3 * FS);
	/* without a stream the free itself waits for the device */
	ok = ok && (named || free_us >= HOLD_US / 2);
	report(ok, named ? "free_with_the_stream_named_unmaps_after_the_device" :
	       "free_without_a_stream_waits_for_the_device");
	printf("{\"kind\":\"runtime_cost\",\"free_under_busy_stream\":\"%s\","
	       "\"free_us\":%.1f,\"stream_done_us\":%.1f,\"hold_us\":%u}\n",
	       named ? "named" : "none", free_us, done_us, hold);
	if (s)
		kva_seq_free(s);
	if (d)
		kva_seq_free(d);
	free(host);
}

int main(int argc, char **argv)
{
	struct kva_open_opts o = {
		.mode = KVA_MODE_EMBEDDED, .nr_frames = 64, .frame_size = FS,
		.mem_kind = KVA_BACKEND_CUDA,
	};
	struct kva_arena *a;
	const char *why;
	int err;

	if (argc == 3 && !strcmp(argv[1], "--exporter"))
		return exporter(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "--rank"))
		return rank_child(atoi(argv[2]));
	if (argc != 1) {
		fprintf(stderr, "usage: %s\n", argv[0]);
		return 2;
	}
	printf("KTAP version 1\n");
	/* the exporter child execs itself: nothing of this process carries over */
	if (drv_start(&why)) {
		printf("# SKIP %s\n", why);
		return 77;
	}
	check_memory_outlives_its_exporter("/proc/self/exe");
	check_gang_ranks_on_one_gpu("/proc/self/exe");
	err = kva_open(&o, &a);
	report(step(err == 0, "kva_open", err), "embedded_cuda_arena_opens");
	if (!err) {
		CUstream st = NULL;

		check_arena(a);
		costs(a);
		check_published_read_only(a);
		/* the named stream last: it stays the arena's until kva_close() */
		if (CU(drv.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING))) {
			check_free_under_a_busy_stream(a, st, false);
			check_free_under_a_busy_stream(a, st, true);
		} else {
			report(false, "a_stream_for_the_free_checks");
		}
		kva_close(a);
		if (st)
			drv.cuStreamDestroy(st);
	}
	printf("1..%d\n# %d failed\n", nr_tests, nr_failed);
	return nr_failed ? 1 : 0;
}
