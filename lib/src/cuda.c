// SPDX-License-Identifier: MIT
/*
 * The CUDA VMM backend: frames are cuMemCreate() allocations of one frame
 * each on one device, mapped with cuMemMap() into cuMemAddressReserve()d
 * ranges.
 *
 * Costs to design around (measured on an A100, 2 MiB): cuMemCreate 193 us,
 * cuMemMap 1.5 us, cuMemSetAccess 36 us, cuMemUnmap 26 us.  So every
 * allocation is made once per frame and kept (embedded arenas create a
 * frame's allocation when it is first used; device arenas import the
 * module's exported fd when a frame is first held), and access is granted
 * with one cuMemSetAccess() over each run of frames mapped together, never
 * frame by frame.
 *
 * Every call runs with the device's primary context pushed on the calling
 * thread and popped again, so the caller's own current context is left
 * alone.
 *
 * The GPU of a device arena is named by its UUID (cuDeviceGetUuid), which
 * the creator gives the module: an ordinal depends on CUDA_VISIBLE_DEVICES
 * and may name another GPU, or none, in another process.  A client finds
 * the device with that UUID among those it sees, or gets -ENODEV.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "cuda_syms.h"

struct kva_cuda {
	struct kva_cuda_fns fn;
	CUdevice dev;
	CUcontext ctx;
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	CUmemAccessDesc access_ro;	/* published frames */
	bool ro_refused;		/* the driver would not: use access */
	CUstream tier_stream;		/* a tier agent's copies, or NULL */
};

static struct kva_cuda *cuda(struct kva_arena *a)
{
	return a->vmm_priv;
}

/* A CUresult as a negative errno; the raw value is kept in the arena. */
static int cu_err(struct kva_arena *a, CUresult r)
{
	if (r == CUDA_SUCCESS)
		return 0;
	if (a)
		a->backend_error = (int32_t)r;
	switch (r) {
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_HANDLE:
		return -EINVAL;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEINITIALIZED:
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
		return -ENODEV;
	case CUDA_ERROR_NOT_SUPPORTED:
	case CUDA_ERROR_NOT_PERMITTED:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

static int ctx_push(struct kva_arena *a, struct kva_cuda *c)
{
	return cu_err(a, c->fn.cuCtxPushCurrent(c->ctx));
}

static void ctx_pop(struct kva_cuda *c)
{
	CUcontext prev;

	c->fn.cuCtxPopCurrent(&prev);
}

static bool uuid_zero(const uint8_t *uuid)
{
	for (int i = 0; i < 16; i++)
		if (uuid[i])
			return false;
	return true;
}

/*
 * The device with @uuid among those this process sees (its ordinal in
 * @ordinal), or, for a zero @uuid, device @ordinal itself.
 */
static int find_device(struct kva_arena *a, struct kva_cuda *c,
		       const uint8_t *uuid, uint32_t *ordinal)
{
	CUuuid u;
	int n = 0, i, ret;

	if (!uuid || uuid_zero(uuid))
		return cu_err(a, c->fn.cuDeviceGet(&c->dev, (int)*ordinal));
	ret = cu_err(a, c->fn.cuDeviceGetCount(&n));
	for (i = 0; !ret && i < n; i++) {
		ret = cu_err(a, c->fn.cuDeviceGet(&c->dev, i));
		if (!ret)
			ret = cu_err(a, c->fn.cuDeviceGetUuid(&u, c->dev));
		if (!ret && !memcmp(u.bytes, uuid, 16)) {
			*ordinal = (uint32_t)i;
			return 0;
		}
	}
	return ret ? ret : -ENODEV;
}

/*
 * Load the driver, find the device (@uuid, else @ordinal: see
 * find_device(); @ordinal is set to what this process calls it), retain
 * its primary context and check that @frame_size is a multiple of the
 * allocation granularity.
 */
static int cuda_start(struct kva_arena *a, struct kva_cuda *c,
		      const char *lib, const uint8_t *uuid, uint32_t *ordinal,
		      uint64_t frame_size, CUmemAllocationHandleType handle_type)
{
	size_t gran = 0;
	int ret;

	ret = kva_cuda_load(lib, &c->fn);
	if (ret)
		return ret;
	ret = cu_err(a, c->fn.cuInit(0));
	if (ret)
		goto err_unload;
	ret = find_device(a, c, uuid, ordinal);
	if (ret)
		goto err_unload;
	ret = cu_err(a, c->fn.cuDevicePrimaryCtxRetain(&c->ctx, c->dev));
	if (ret)
		goto err_unload;

	c->prop = (CUmemAllocationProp){
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.requestedHandleTypes = handle_type,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
			      .id = c->dev },
	};
	c->access = (CUmemAccessDesc){
		.location = c->prop.location,
		.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	c->access_ro = c->access;
	c->access_ro.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
	ret = ctx_push(a, c);
	if (ret)
		goto err_release;
	ret = cu_err(a, c->fn.cuMemGetAllocationGranularity(
			&gran, &c->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	ctx_pop(c);
	if (ret)
		goto err_release;
	if (!gran || frame_size % gran) {
		ret = -EINVAL;
		goto err_release;
	}
	return 0;

err_release:
	c->fn.cuDevicePrimaryCtxRelease(c->dev);
err_unload:
	kva_cuda_unload(&c->fn);
	return ret;
}

static void cuda_stop(struct kva_cuda *c)
{
	c->fn.cuDevicePrimaryCtxRelease(c->dev);
	kva_cuda_unload(&c->fn);
}

static int cuda_init(struct kva_arena *a, const struct kva_open_opts *o)
{
	struct kva_cuda *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	/*
	 * Embedded allocations are never exported: ask for no handle type.
	 * A device arena's GPU is the one with the module's UUID.
	 */
	ret = cuda_start(a, c, o->cuda_library,
			 a->mode == KVA_MODE_EMBEDDED ? NULL : a->mem_uuid,
			 &a->mem_dev, a->frame_size,
			 a->mode == KVA_MODE_EMBEDDED ?
			 CU_MEM_HANDLE_TYPE_NONE :
			 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (ret) {
		free(c);
		return ret;
	}
	if (a->mode == KVA_MODE_EMBEDDED) {
		CUuuid u;

		/* what kva_arena_info() reports; no one else relies on it */
		if (!c->fn.cuDeviceGetUuid(&u, c->dev))
			memcpy(a->mem_uuid, u.bytes, sizeof(a->mem_uuid));
	}
	a->vmm_priv = c;
	return 0;
}

static void cuda_fini(struct kva_arena *a)
{
	struct kva_cuda *c = cuda(a);
	uint32_t i;

	if (!ctx_push(a, c)) {
		for (i = 0; i < a->nr_frames; i++)
			if (a->frames[i].flags & FRAME_RESOLVED)
				c->fn.cuMemRelease(a->frames[i].mem);
		if (c->tier_stream)
			c->fn.cuStreamDestroy(c->tier_stream);
		ctx_pop(c);
	}
	cuda_stop(c);
	free(c);
	a->vmm_priv = NULL;
}

/*
 * Frame @idx's allocation: made here for an embedded arena, imported from
 * the module's fd for a device arena.  Kept until kva_close().
 */
static int cuda_resolve(struct kva_arena *a, uint32_t idx)
{
	struct kva_frame_rec *f = &a->frames[idx];
	struct kva_cuda *c = cuda(a);
	CUmemGenericAllocationHandle h;
	uint64_t offset;
	int ret, fd;

	if (a->mode == KVA_MODE_EMBEDDED) {
		ret = ctx_push(a, c);
		if (ret)
			return ret;
		ret = cu_err(a, c->fn.cuMemCreate(&h, a->frame_size, &c->prop,
						   0));
		ctx_pop(c);
	} else {
		ret = a->prov->frame_fd(a, f->handle, &fd, &offset);
		if (ret)
			return ret;
		/* One allocation per frame: the module's offset is 0. */
		if (offset) {
			close(fd);
			return -EPROTO;
		}
		ret = ctx_push(a, c);
		if (!ret) {
			ret = cu_err(a, c->fn.cuMemImportFromShareableHandle(
				&h, (void *)(uintptr_t)fd,
				CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
			ctx_pop(c);
		}
		close(fd);
	}
	if (ret)
		return ret;
	f->mem = h;
	f->flags |= FRAME_RESOLVED;
	return 0;
}

static int cuda_reserve(struct kva_arena *a, uint64_t size, uint64_t *va)
{
	struct kva_cuda *c = cuda(a);
	CUdeviceptr p;
	int ret = ctx_push(a, c);

	if (ret)
		return ret;
	ret = cu_err(a, c->fn.cuMemAddressReserve(&p, size, a->frame_size, 0,
						  0));
	ctx_pop(c);
	if (!ret)
		*va = p;
	return ret;
}

static void cuda_release(struct kva_arena *a, uint64_t va, uint64_t size)
{
	struct kva_cuda *c = cuda(a);

	if (ctx_push(a, c))
		return;
	cu_err(a, c->fn.cuMemAddressFree(va, size));
	ctx_pop(c);
}

static int unmap_frames(struct kva_arena *a, struct kva_cuda *c, uint64_t va,
			uint32_t n)
{
	int ret = 0, err;
	uint32_t i;

	/* A mapping is unmapped whole: one call per frame. */
	for (i = 0; i < n; i++) {
		err = cu_err(a, c->fn.cuMemUnmap(va + i * a->frame_size,
						 a->frame_size));
		if (err && !ret)
			ret = err;
	}
	return ret;
}

/*
 * Map the run, then grant access to all of it with one call (one per
 * stretch of published frames, which are read-only, and of the others).
 */
static int cuda_map(struct kva_arena *a, uint64_t va, const uint32_t *idx,
		    uint32_t n)
{
	struct kva_cuda *c = cuda(a);
	uint64_t fs = a->frame_size;
	uint32_t i, j, k;
	int ret;

	ret = ctx_push(a, c);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		ret = cu_err(a, c->fn.cuMemMap(va + i * fs, fs, 0,
					       a->frames[idx[i]].mem, 0));
		if (ret)
			goto err_unmap;
	}
	for (j = 0; j < n; j = k) {
		bool ro = a->frames[idx[j]].flags & FRAME_PUBLISHED;

		for (k = j + 1; k < n; k++)
			if (!!(a->frames[idx[k]].flags & FRAME_PUBLISHED) != ro)
				break;
		ret = cu_err(a, c->fn.cuMemSetAccess(va + j * fs, (k - j) * fs,
						     ro && !c->ro_refused ?
						     &c->access_ro :
						     &c->access, 1));
		/*
		 * A driver that refuses read-only access gets read-write,
		 * once and for all, and says so (KVA_INFO_SHARED_RW): the
		 * frames stay shared by the copy-before-write rule.
		 */
		if (ret && ro && !c->ro_refused &&
		    (ret == -EINVAL || ret == -EOPNOTSUPP)) {
			c->ro_refused = true;
			a->flags |= KVA_INFO_SHARED_RW;
			ret = cu_err(a, c->fn.cuMemSetAccess(va + j * fs,
						(k - j) * fs, &c->access, 1));
		}
		if (ret)
			goto err_unmap;
	}
	ctx_pop(c);
	return 0;

err_unmap:
	unmap_frames(a, c, va, i);
	ctx_pop(c);
	return ret;
}

static int cuda_unmap(struct kva_arena *a, uint64_t va, uint32_t n)
{
	struct kva_cuda *c = cuda(a);
	int ret = ctx_push(a, c);

	if (ret)
		return ret;
	ret = unmap_frames(a, c, va, n);
	ctx_pop(c);
	return ret;
}

/*
 * Lock held.  Wait for the device: see struct kva_vmm.quiesce.  The
 * context already pushed.
 */
static int quiesce_pushed(struct kva_arena *a, struct kva_cuda *c, bool whole)
{
	if (!whole && a->td_on)
		return cu_err(a, c->fn.cuStreamSynchronize(
				      (CUstream)a->td_stream));
	return cu_err(a, c->fn.cuCtxSynchronize());
}

static int cuda_quiesce(struct kva_arena *a, bool whole)
{
	struct kva_cuda *c = cuda(a);
	int ret = ctx_push(a, c);

	if (ret)
		return ret;
	ret = quiesce_pushed(a, c, whole);
	ctx_pop(c);
	return ret;
}

/*
 * Copy-on-write: the whole frame, device to device (2 MiB is a
 * microsecond of HBM bandwidth; finding the filled blocks is not worth
 * it).  On the engine's stream when it named one, so that the copy comes
 * after the kernels that wrote the source and before those that will
 * read the destination; on the legacy stream otherwise.  A copy does not
 * wait for the device, and the caller unmaps the destination's scratch
 * mapping and swaps the slot the engine's kernels read next, so wait
 * for the copy and for everything before it (quiesce).
 */
static int cuda_copy(struct kva_arena *a, uint64_t dst, uint64_t src,
		     const struct kva_geometry *g, uint32_t tokens)
{
	struct kva_cuda *c = cuda(a);
	int ret;

	if (!tokens)
		return 0;
	ret = ctx_push(a, c);
	if (ret)
		return ret;
	ret = cu_err(a, c->fn.cuMemcpyDtoDAsync(dst, src, a->frame_size,
			a->td_on ? (CUstream)a->td_stream : NULL));
	if (!ret)
		ret = quiesce_pushed(a, c, false);
	ctx_pop(c);
	return ret;
}

/*
 * A swap's copy (kva_seq_swap_out(), kva_seq_swap_in()): after the
 * arena's stream (or the whole context), on the legacy stream, waited
 * for - the frames are unmapped right after a swap out.
 */
static int cuda_xfer(struct kva_arena *a, uint64_t va, void *host,
		     uint64_t len, bool out)
{
	struct kva_cuda *c = cuda(a);
	int ret = ctx_push(a, c);

	if (ret)
		return ret;
	ret = quiesce_pushed(a, c, false);
	if (!ret)
		ret = cu_err(a, out ? c->fn.cuMemcpyDtoH(host, va, len) :
				      c->fn.cuMemcpyHtoD(va, host, len));
	ctx_pop(c);
	return ret;
}

/*
 * A tier agent's copies (tier.c): on a non-blocking stream of the
 * agent's own, made at the first batch, so that they neither wait for
 * the legacy stream nor make anything else wait; all of a batch queued,
 * then waited for, before the frames are unmapped.  The host side is
 * the lower arena's mapping of shmem pages: pageable memory, which the
 * driver copies through staging buffers of its own.
 */
static int cuda_tier_xfer(struct kva_arena *a, uint64_t va, void *host,
			  const bool *out, uint32_t n)
{
	struct kva_cuda *c = cuda(a);
	uint64_t fs = a->frame_size;
	int ret = ctx_push(a, c), sret;
	uint32_t i;

	if (ret)
		return ret;
	if (!c->tier_stream)
		ret = cu_err(a, c->fn.cuStreamCreate(&c->tier_stream,
						     CU_STREAM_NON_BLOCKING));
	if (ret) {
		c->tier_stream = NULL;
		ctx_pop(c);
		return ret;
	}
	for (i = 0; i < n && !ret; i++) {
		CUdeviceptr d = va + i * fs;
		char *h = (char *)host + i * fs;

		ret = cu_err(a, out[i] ?
			     c->fn.cuMemcpyDtoHAsync(h, d, fs, c->tier_stream) :
			     c->fn.cuMemcpyHtoDAsync(d, h, fs, c->tier_stream));
	}
	/* Whatever was queued uses the mappings: always wait for it. */
	sret = cu_err(a, c->fn.cuStreamSynchronize(c->tier_stream));
	ctx_pop(c);
	return ret ? ret : sret;
}

/*
 * A scrubber's clear (scrub.c): zero the frames on the device and wait
 * for it, on the driver's legacy stream, which this process uses for
 * nothing else; the frames are unmapped only after.
 */
static int cuda_clear(struct kva_arena *a, uint64_t va, uint32_t n)
{
	struct kva_cuda *c = cuda(a);
	int ret = ctx_push(a, c);

	if (ret)
		return ret;
	ret = cu_err(a, c->fn.cuMemsetD8Async(va, 0, (size_t)n * a->frame_size,
					       NULL));
	if (!ret)
		ret = cu_err(a, c->fn.cuStreamSynchronize(NULL));
	ctx_pop(c);
	return ret;
}

/*
 * A scrubber lets go of a frame's import once it is cleared: while any
 * process holds the frame's memory, the module keeps it in its domain.
 */
static void cuda_forget(struct kva_arena *a, uint32_t idx)
{
	struct kva_frame_rec *f = &a->frames[idx];
	struct kva_cuda *c = cuda(a);

	if (!(f->flags & FRAME_RESOLVED) || ctx_push(a, c))
		return;
	cu_err(a, c->fn.cuMemRelease(f->mem));
	ctx_pop(c);
	f->flags &= ~FRAME_RESOLVED;
}

/*
 * Stream-ordered teardown (teardown.c): an event on the engine's stream
 * at kva_seq_free(), waited for by the worker before it unmaps.  Neither
 * cuEventCreate nor cuEventRecord waits for the device; the worker's wait
 * sleeps (CU_EVENT_BLOCKING_SYNC) instead of spinning a core.
 */
static int cuda_fence(struct kva_arena *a, void *stream, void **fence)
{
	struct kva_cuda *c = cuda(a);
	CUevent ev;
	int ret = ctx_push(a, c);

	if (ret)
		return ret;
	ret = cu_err(a, c->fn.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING |
						   CU_EVENT_BLOCKING_SYNC));
	if (!ret) {
		ret = cu_err(a, c->fn.cuEventRecord(ev, (CUstream)stream));
		if (ret)
			c->fn.cuEventDestroy(ev);
	}
	ctx_pop(c);
	if (!ret)
		*fence = ev;
	return ret;
}

static int cuda_fence_wait(struct kva_arena *a, void *fence)
{
	struct kva_cuda *c = cuda(a);
	int ret = ctx_push(a, c);

	if (ret)
		return ret;
	ret = cu_err(a, c->fn.cuEventSynchronize((CUevent)fence));
	c->fn.cuEventDestroy((CUevent)fence);
	ctx_pop(c);
	return ret;
}

const struct kva_vmm kva_cuda_vmm = {
	.map_replaces = false,
	.init = cuda_init,
	.fini = cuda_fini,
	.resolve = cuda_resolve,
	.reserve = cuda_reserve,
	.release = cuda_release,
	.map = cuda_map,
	.unmap = cuda_unmap,
	.copy = cuda_copy,
	.quiesce = cuda_quiesce,
	.fence = cuda_fence,
	.fence_wait = cuda_fence_wait,
	.clear = cuda_clear,
	.zero = cuda_clear,
	.forget = cuda_forget,
	.xfer = cuda_xfer,
	.tier_xfer = cuda_tier_xfer,
};

/*
 * kva_arena_create(): one allocation per frame, exported as a POSIX fd and
 * registered as that frame's backing.  The module's file reference keeps
 * the memory alive once our handle is released.
 */
int kva_cuda_provision(int dev_fd, const struct kva_arena_params *p)
{
	struct kva_cuda c = { 0 };
	CUmemGenericAllocationHandle h;
	uint32_t i, ordinal = p->mem_dev;
	int ret, fd;

	ret = cuda_start(NULL, &c, p->cuda_library, NULL, &ordinal,
			 p->frame_size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (ret)
		return ret;
	ret = ctx_push(NULL, &c);
	if (ret)
		goto out;
	for (i = 0; i < p->nr_frames; i++) {
		ret = cu_err(NULL, c.fn.cuMemCreate(&h, p->frame_size, &c.prop,
						     0));
		if (ret)
			break;
		ret = cu_err(NULL, c.fn.cuMemExportToShareableHandle(
			&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
		if (!ret) {
			ret = kva_device_set_backing(dev_fd, p->name, i, 1, fd,
						     0);
			close(fd);
		}
		c.fn.cuMemRelease(h);
		if (ret)
			break;
	}
	ctx_pop(&c);
out:
	cuda_stop(&c);
	return ret;
}

/* kva_arena_create(): the UUID the module records for device @ordinal. */
int kva_cuda_uuid(const char *lib, uint32_t ordinal, uint8_t uuid[16])
{
	struct kva_cuda_fns fn;
	CUdevice dev;
	CUuuid u;
	int ret;

	ret = kva_cuda_load(lib, &fn);
	if (ret)
		return ret;
	ret = cu_err(NULL, fn.cuInit(0));
	if (!ret)
		ret = cu_err(NULL, fn.cuDeviceGet(&dev, (int)ordinal));
	if (!ret)
		ret = cu_err(NULL, fn.cuDeviceGetUuid(&u, dev));
	if (!ret)
		memcpy(uuid, u.bytes, 16);
	kva_cuda_unload(&fn);
	return ret;
}
