/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kvarena - a shared arena of KV-cache frames for LLM serving processes.
 *
 * /dev/kvarena hands out page-frame handles for named arenas of equal
 * frames (GPU or host memory), keeps the per-client accounting, and returns
 * everything a client held when its file is released (close or process
 * death).  This header is the whole ABI; Documentation/kvarena.rst explains
 * it at length.
 *
 * Conventions
 *
 *  - Every command is `ioctl(fd, KVARENA_IOC_x, &struct kvarena_x)`, or the
 *    same command number in `sqe->cmd_op` of an IORING_OP_URING_CMD with
 *    struct kvarena_uring_cmd in the SQE's command area (see below).  Both
 *    paths run the same checks and the same code.
 *  - All structs have explicit padding.  Fields named `flags` take only the
 *    bits defined here; fields named `reserved*` must be zero.  Either
 *    violation gives -EINVAL and changes nothing.
 *  - Unknown command numbers give -ENOTTY.
 *  - Names (arenas) and labels (clients) are NUL-terminated within their
 *    fixed-size arrays; an arena name is 1-31 characters of [A-Za-z0-9_.-].
 *  - Handles are `generation << 32 | frame index`.  A frame's generation
 *    changes every time it is freed, so a handle kept past its FREE is
 *    refused with -ESTALE and can never reach the frame's next holder.
 *
 * Who may do what
 *
 *  - VERSION: any opener.  STAT, CLIENTS and EVENTS_FD: any opener,
 *    read-only opens included, whom the arena's mode lets view it
 *    (-EACCES otherwise).
 *  - Everything else needs the file open for writing (-EBADF otherwise).
 *  - ARENA_CREATE, ARENA_DESTROY, ARENA_SET_BACKING, ARENA_SET_POLICY,
 *    ARENA_RESIZE, ARENA_SET_TIER, SET_LIMITS and EVICT also need
 *    CAP_SYS_ADMIN (-EPERM otherwise), and are taken over ioctl() only
 *    (-EPERM over io_uring).
 *  - ATTACH: a writer whom the arena's mode lets attach (-EACCES
 *    otherwise), within the arena's client policy unless it has
 *    CAP_SYS_ADMIN (-EPERM otherwise).
 *  - ALLOC, FREE, FRAME_FD, SET_USAGE, PUBLISH, LOOKUP, SCRUB,
 *    IMPORTS_DROPPED, TIER and PROMOTE need the file to be attached to an
 *    arena (ATTACH; -ENOTCONN otherwise).  One file attaches once.  SCRUB
 *    and TIER also need the arena's owner or CAP_SYS_ADMIN; SCRUB and
 *    TIER are taken over ioctl() only.  PROMOTE over io_uring waits in
 *    io_uring's worker thread: its completion comes when the copies are
 *    done, and the submitter goes on meanwhile.
 *
 * Error numbers
 *
 *  EINVAL   unknown flag, non-zero reserved field, bad name, size or count
 *  ENOTTY   unknown command
 *  EBADF    mutating command on a read-only open; bad backing fd
 *  EPERM    missing CAP_SYS_ADMIN; frame held by another client (FREE,
 *           FRAME_FD, PUBLISH); ATTACH beyond the arena's client policy;
 *           admin command over io_uring
 *  EACCES   the arena's mode does not let the caller view or attach
 *  ENOENT   no such arena or client; handle names a frame nobody holds
 *  ESTALE   handle from before the frame was last freed
 *  EEXIST   ARENA_CREATE of a name in use
 *  EBUSY    ARENA_DESTROY with clients attached, of a lower tier, or with
 *           a tier's copies under way; ATTACH twice; backing set
 *           twice on a frame, or on a CUDA frame taken out whose old memory
 *           a process still imports; PUBLISH of a frame published under another
 *           key; ARENA_RESIZE below what the clients' minimums add up to;
 *           FREE, FRAME_FD or PUBLISH of a frame that a PROMOTE of the
 *           caller's is still filling
 *  EAGAIN   io_uring: the command would block; io_uring retries it
 *           from a worker thread by itself.  PROMOTE (either path): its
 *           first frame must be cleared first, try again
 *  ENOSPC   ALLOC, LOOKUP or a min guarantee cannot be met (free and
 *           cached frames, other clients' guarantees, or the client's max);
 *           ALLOC past the dmem.max of the caller's cgroup (dmem_refused)
 *  ENOTCONN the file is not attached to an arena
 *  ENODATA  ATTACH or ARENA_RESIZE before every frame of the arena has
 *           its backing (the provider is still registering memory);
 *           FRAME_FD of a frame with no backing; ARENA_RESIZE growing
 *           into frames that have none
 *  EFAULT   a user pointer could not be read or written
 *  ENOMEM   the module could not allocate memory for the command
 *  ESHUTDOWN the client was evicted by an administrator (EVICT): its
 *           frames are gone and the file serves no more client commands
 *  EOPNOTSUPP EVICT of a client of a CUDA arena (imported GPU memory
 *           cannot be revoked); EVENTS_FD when the module keeps no events;
 *           ALLOC, PUBLISH, LOOKUP and ARENA_RESIZE of a file arena
 */
#ifndef _UAPI_LINUX_KVARENA_H
#define _UAPI_LINUX_KVARENA_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KVARENA_DEVICE		"/dev/kvarena"
#define KVARENA_ABI_VERSION	2

#define KVARENA_NAME_LEN	32	/* arena names, NUL included */
#define KVARENA_LABEL_LEN	32	/* client labels, NUL included */

#define KVARENA_MAX_FRAMES	(1u << 24)	/* frames per arena */
#define KVARENA_MIN_FRAME_SIZE	4096u		/* and at least PAGE_SIZE */
#define KVARENA_MAX_FRAME_SIZE	(1u << 30)
/* Handles per ALLOC/FREE, entries per PUBLISH/LOOKUP. */
#define KVARENA_MAX_BATCH	65536u
#define KVARENA_KEY_LEN		32		/* bytes of a prefix key */

/* A handle: generation in the high 32 bits, frame index in the low 32. */
#define KVARENA_HANDLE(gen, idx) (((__u64)(gen) << 32) | (__u32)(idx))
#define KVARENA_HANDLE_IDX(h)	((__u32)(h))
#define KVARENA_HANDLE_GEN(h)	((__u32)((h) >> 32))

/**
 * enum kvarena_mem - where an arena's frames live.
 * @KVARENA_MEM_HOST: host RAM (memfd or other shmem-backed files).
 * @KVARENA_MEM_CUDA: GPU memory of CUDA device @mem_dev, exported as
 *	POSIX file descriptors by cuMemExportToShareableHandle().
 * @KVARENA_MEM_FILE: ranges of a regular file: the lower tier of a host
 *	arena (ARENA_SET_TIER) on a disk.  Nobody maps its frames; the
 *	tier's agent reads and writes them through the file (FRAME_FD).
 */
enum kvarena_mem {
	KVARENA_MEM_HOST = 0,
	KVARENA_MEM_CUDA = 1,
	KVARENA_MEM_FILE = 2
};

/* struct kvarena_version.features */
#define KVARENA_FEAT_URING_CMD	((__u64)1 << 0)	/* IORING_OP_URING_CMD */
#define KVARENA_FEAT_POLL	((__u64)1 << 1)	/* EPOLLPRI on pressure */
#define KVARENA_FEAT_SYSFS	((__u64)1 << 2)	/* /sys/class/misc/kvarena/arenas */
#define KVARENA_FEAT_PREFIX	((__u64)1 << 3)	/* PUBLISH and LOOKUP */
#define KVARENA_FEAT_EVENTS	((__u64)1 << 4)	/* EVENTS_FD */
#define KVARENA_FEAT_POLLOUT	((__u64)1 << 5)	/* EPOLLOUT after -ENOSPC */
#define KVARENA_FEAT_DOMAINS	((__u64)1 << 6)	/* cache domains */
#define KVARENA_FEAT_CLEAR	((__u64)1 << 7)	/* host frames cleared between domains */
#define KVARENA_FEAT_SCRUB	((__u64)1 << 8)	/* SCRUB: CUDA frames cleared by the owner */
#define KVARENA_FEAT_RESIZE	((__u64)1 << 9)	/* ARENA_RESIZE, max_frames */
#define KVARENA_FEAT_IMPORTS_DROPPED ((__u64)1 << 10) /* IMPORTS_DROPPED */
#define KVARENA_FEAT_TIER	((__u64)1 << 11)	/* a lower tier: SET_TIER, TIER, PROMOTE */
#define KVARENA_FEAT_FILE	((__u64)1 << 12)	/* KVARENA_MEM_FILE arenas */
#define KVARENA_FEAT_GANG	((__u64)1 << 13)	/* GANG_CREATE, GANG_TOKEN, JOIN */
#define KVARENA_FEAT_DMEM	((__u64)1 << 14)	/* frames charged to the dmem cgroup */

/*
 * Cache domains.  Every client belongs to one cache domain, fixed at
 * ATTACH.  PUBLISH files a key under the publisher's domain and LOOKUP
 * finds only keys of the caller's domain: the same key in two domains is
 * two entries.  A frame is held only by clients of one domain at a time,
 * and a host arena's frame that held one domain's data is cleared before
 * a client of another domain gets it.  The cache figures (STAT), the
 * CLIENTS rows and the events a reader sees are its domain's, unless it
 * is the arena's owner or an administrator.
 *
 * A domain is named by a __u64: its kind in the top 8 bits, a number
 * below them.  A uid or gid is the one in the initial user namespace.
 */
#define KVARENA_DOMAIN(kind, nr)  (((__u64)(kind) << 56) | ((nr) & KVARENA_DOMAIN_NR_MASK))
#define KVARENA_DOMAIN_NR_MASK	((((__u64)1) << 56) - 1)
#define KVARENA_DOMAIN_KIND(d)	((__u32)((d) >> 56))
#define KVARENA_DOMAIN_NR(d)	((d) & KVARENA_DOMAIN_NR_MASK)
#define KVARENA_DOMAIN_KIND_UID	1	/* the clients of one uid */
#define KVARENA_DOMAIN_KIND_GID	2	/* the clients of one gid */
#define KVARENA_DOMAIN_KIND_ARENA 3	/* every client of the arena (nr 0) */
#define KVARENA_DOMAIN_KIND_NAMED 4	/* a number the owner or admin gives */
#define KVARENA_DOMAIN_KIND_PRIVATE 5	/* one client alone (ATTACH_PRIVATE) */

/*
 * The arena's rule for the domain of a client that does not ask for one
 * (struct kvarena_arena_create and struct kvarena_arena_policy
 * .cache_domains).
 */
#define KVARENA_DOMAINS_UID	0	/* one per euid of the attacher (default) */
#define KVARENA_DOMAINS_GID	1	/* one per egid of the attacher */
#define KVARENA_DOMAINS_ARENA	2	/* one for the whole arena: opt in */

/**
 * struct kvarena_version - KVARENA_IOC_VERSION, anyone.
 * @abi_version:	out: KVARENA_ABI_VERSION of the running module.
 * @reserved0:		must be zero.
 * @features:		out: KVARENA_FEAT_* bits.
 * @reserved:		must be zero.
 */
struct kvarena_version {
	__u32 abi_version;
	__u32 reserved0;
	__u64 features;
	__u64 reserved[2];
};

/* struct kvarena_arena_create.flags */
#define KVARENA_CREATE_NO_BACKING (1u << 0)	/* frames are handles only */
#define KVARENA_CREATE_ACCESS	(1u << 1)	/* owner and mode as given */
#define KVARENA_CREATE_CLEAR_ALWAYS (1u << 2)	/* clear between any two holders */

/*
 * Arena access bits (struct kvarena_arena_create.mode), in the places of a
 * file's mode: KVARENA_ACC_VIEW is "r" (STAT, CLIENTS), KVARENA_ACC_ATTACH
 * is "w" (ATTACH), each for the owner (<< 6), the group (<< 3) and everyone
 * else (<< 0).  0640: the owner views and attaches, the group views.
 */
#define KVARENA_ACC_VIEW	4u
#define KVARENA_ACC_ATTACH	2u
#define KVARENA_MODE_MASK	0666u
#define KVARENA_MODE_DEFAULT	0666u

/**
 * struct kvarena_arena_create - KVARENA_IOC_ARENA_CREATE, CAP_SYS_ADMIN.
 * @name:		arena name, 1-31 characters of [A-Za-z0-9_.-].
 * @frame_size:		bytes per frame: a power of two, at least
 *			max(KVARENA_MIN_FRAME_SIZE, PAGE_SIZE), at most
 *			KVARENA_MAX_FRAME_SIZE.
 * @nr_frames:		frames in the arena, 1..KVARENA_MAX_FRAMES.
 * @mem_kind:		enum kvarena_mem.
 * @mem_dev:		CUDA device ordinal as the creator saw it, 0 for
 *			host.  Ordinals depend on CUDA_VISIBLE_DEVICES: use
 *			@mem_uuid to find the device.
 * @low_watermark:	pressure threshold in frames: the arena is under
 *			pressure while the frames an unguaranteed client
 *			could still get (free less every client's unmet
 *			minimum, plus cached) are below it; 0 disables
 *			pressure reports.  At most the table
 *			(@max_frames, or @nr_frames without it), as every
 *			limit in frames here is.
 * @bytes_per_token:	KV bytes per token of the model the arena is sized
 *			for, or 0; tools use it to show tokens.
 * @flags:		KVARENA_CREATE_NO_BACKING: an accounting-only arena,
 *			whose frames are handles with no memory behind them
 *			(simulators, benchmarks); it takes clients at once
 *			and refuses ARENA_SET_BACKING.
 *			KVARENA_CREATE_ACCESS: @owner_uid, @owner_gid and
 *			@mode are given; without it the owner is the
 *			caller's fsuid/fsgid and the mode
 *			KVARENA_MODE_DEFAULT.
 *			KVARENA_CREATE_CLEAR_ALWAYS (not with
 *			KVARENA_CREATE_NO_BACKING): clear a frame before
 *			its next holder gets it even within one domain; by
 *			default a frame is cleared only before it goes to
 *			another domain than the one whose data it holds.
 *			The module clears host frames; a CUDA arena's are
 *			cleared by a scrubber (struct kvarena_scrub).  A
 *			file arena takes neither flag: nobody but the
 *			agent reads its frames, and a frame is published
 *			only once a copy has written all of it.
 * @owner_uid:		the arena's owner (with KVARENA_CREATE_ACCESS).
 * @owner_gid:		the arena's group (with KVARENA_CREATE_ACCESS).
 * @mode:		KVARENA_ACC_* bits (with KVARENA_CREATE_ACCESS);
 *			bits outside KVARENA_MODE_MASK give -EINVAL.
 * @client_min_limit:	largest @min_frames a client without
 *			CAP_SYS_ADMIN may ask for at ATTACH, summed over
 *			the clients of one uid (0: none; guarantees are
 *			then the admin's to give with SET_LIMITS).
 * @client_max_default:	max given to a client without CAP_SYS_ADMIN that
 *			asks for 0 at ATTACH (0: @client_max_limit).
 * @client_max_limit:	largest max of a client without CAP_SYS_ADMIN
 *			(0: the arena's size; at most the table).
 * @cache_domains:	KVARENA_DOMAINS_*: the domain a client gets at
 *			ATTACH unless it asks for another.
 * @mem_uuid:		CUDA arenas: the GPU's 16-byte UUID
 *			(cuDeviceGetUuid), which every process sees alike;
 *			zero for host and file arenas.
 * @domain_cached_max:	at most this many cached frames per cache domain
 *			(0: no cap; at most the table): a domain past it
 *			loses its own oldest cached frame, so that one
 *			tenant's prefixes cannot flush another's.
 * @max_frames:		the most frames ARENA_RESIZE may bring the arena
 *			to (a file arena is not resized: 0 or @nr_frames):
 *			its table, @nr_frames..KVARENA_MAX_FRAMES (0:
 *			@nr_frames, an arena that can shrink and grow back
 *			but no further).  Frames @nr_frames and above start
 *			out of the arena (absent, see struct
 *			kvarena_arena_resize).
 * @reserved:		must be zero.
 *
 * The frames exist as handles at once; ARENA_SET_BACKING tells the module
 * what memory each frame is.  Until every frame in the arena (not the
 * absent ones) has its backing, ATTACH is refused with -ENODATA, so no
 * client ever holds a frame without memory.  -EEXIST if the name is taken.
 */
struct kvarena_arena_create {
	char  name[KVARENA_NAME_LEN];
	__u64 frame_size;
	__u32 nr_frames;
	__u32 mem_kind;
	__u32 mem_dev;
	__u32 low_watermark;
	__u64 bytes_per_token;
	__u32 flags;
	__u32 owner_uid;
	__u32 owner_gid;
	__u32 mode;
	__u32 client_min_limit;
	__u32 client_max_default;
	__u32 client_max_limit;
	__u32 cache_domains;
	__u8  mem_uuid[16];
	__u32 domain_cached_max;
	__u32 max_frames;
	__u64 reserved[3];
};

/**
 * struct kvarena_arena_destroy - KVARENA_IOC_ARENA_DESTROY, CAP_SYS_ADMIN.
 * @name:	arena name.
 * @flags:	must be zero.
 * @reserved0:	must be zero.
 * @reserved:	must be zero.
 *
 * Refused with -EBUSY while any client is attached.  Drops the module's
 * references to the backing files.
 */
struct kvarena_arena_destroy {
	char  name[KVARENA_NAME_LEN];
	__u32 flags;
	__u32 reserved0;
	__u64 reserved[2];
};

/**
 * struct kvarena_set_backing - KVARENA_IOC_ARENA_SET_BACKING, CAP_SYS_ADMIN.
 * @name:		arena name.
 * @first_frame:	first frame index of the range.
 * @nr_frames:		frames in the range, at least 1.
 * @fd:			file that holds the memory: frame first_frame + i
 *			is bytes [offset + i * frame_size, + frame_size) of
 *			it.  For a regular or shmem file (memfd) the file
 *			must be at least that long (-EINVAL).
 * @flags:		must be zero.
 * @offset:		byte offset of the first frame in @fd; a multiple
 *			of PAGE_SIZE.
 * @reserved:		must be zero.
 *
 * The module takes a reference to the file, so the memory outlives the
 * process that made it; the reference is dropped at ARENA_DESTROY (and,
 * for a CUDA arena, when ARENA_RESIZE takes the frame out).  Each
 * frame's backing may be set once (-EBUSY if any frame of the range has
 * one already; nothing is changed then).  Absent frames (struct
 * kvarena_arena_resize) may be given backing too, for a later grow: a
 * host arena's pages are pinned only while a frame is in the arena.  A
 * CUDA frame taken out may get new memory only once every process that
 * FRAME_FD gave it to (an import of its old memory, which it would map
 * again) has exited: -EBUSY until then.  -EINVAL on an arena created
 * with KVARENA_CREATE_NO_BACKING.  A CUDA arena registers one fd
 * per frame (nr_frames = 1, offset = 0, else -EINVAL), since cuMemMap()
 * maps whole allocations.  A file arena registers a regular file open
 * for reading and writing, at least that long, of a filesystem on a block
 * device or of tmpfs (-EINVAL otherwise; -EBADF for one not open both
 * ways): the agent reads and writes it, with
 * O_DIRECT where the filesystem takes it, so it should be preallocated
 * (fallocate()).
 */
struct kvarena_set_backing {
	char  name[KVARENA_NAME_LEN];
	__u32 first_frame;
	__u32 nr_frames;
	__s32 fd;
	__u32 flags;
	__u64 offset;
	__u64 reserved[2];
};

/* struct kvarena_attach.flags */
#define KVARENA_ATTACH_PRIVATE	(1u << 0)	/* a domain of its own */
#define KVARENA_ATTACH_DOMAIN	(1u << 1)	/* @domain as given */

/**
 * struct kvarena_attach - KVARENA_IOC_ATTACH, O_RDWR opener.
 * @name:		arena to join.
 * @label:		free-form client label shown by the tools (may be
 *			empty).
 * @min_frames:		guaranteed frames: other clients' allocations never
 *			take the frames this client needs to reach @min_frames.
 *			-ENOSPC if the arena cannot guarantee them now.
 * @max_frames:		limit on frames held; 0 means the arena's size.
 *			Must be >= @min_frames.
 * @flags:		KVARENA_ATTACH_PRIVATE: the client is alone in a
 *			new domain: it shares no prefix with anyone (any
 *			client may narrow itself so).  KVARENA_ATTACH_DOMAIN:
 *			the client joins @domain, of kind UID, GID, ARENA or
 *			NAMED; only the arena's owner or CAP_SYS_ADMIN may
 *			(-EPERM).  At most one of them.  Without either the
 *			arena's rule (@cache_domains) decides.
 * @client_id:		out: the client's id in this arena (CLIENTS,
 *			SET_LIMITS).
 * @nr_frames:		out: the arena's frame count.
 * @mem_kind:		out: the arena's enum kvarena_mem.
 * @frame_size:		out: the arena's frame size.
 * @bytes_per_token:	out: the arena's bytes_per_token.
 * @domain:		in: with KVARENA_ATTACH_DOMAIN, the domain to join,
 *			else zero; out: the client's cache domain.
 * @reserved:		must be zero.
 *
 * -ENODATA while the arena's frames are not all backed yet (the provider
 * is still registering its memory): try again later.  The client lives until the
 * file is released (close of the last reference, or process death); then
 * every frame it held is freed.
 */
struct kvarena_attach {
	char  name[KVARENA_NAME_LEN];
	char  label[KVARENA_LABEL_LEN];
	__u32 min_frames;
	__u32 max_frames;
	__u32 flags;
	__u32 client_id;
	__u32 nr_frames;
	__u32 mem_kind;
	__u64 frame_size;
	__u64 bytes_per_token;
	__u64 domain;
	__u64 reserved[1];
};

/* struct kvarena_frames.flags, ALLOC only */
#define KVARENA_ALLOC_PARTIAL	(1u << 0)	/* take what can be had */

/**
 * struct kvarena_frames - KVARENA_IOC_ALLOC and KVARENA_IOC_FREE, client.
 * @handles:	user pointer to an array of @count __u64 handles: written
 *		by ALLOC, read by FREE.
 * @count:	handles in the array, 1..KVARENA_MAX_BATCH.
 * @flags:	ALLOC: KVARENA_ALLOC_PARTIAL; FREE: must be zero.
 * @nr_done:	out: handles allocated or freed.
 * @reserved0:	must be zero.
 * @reserved:	must be zero.
 *
 * ALLOC is all-or-nothing: @count frames or -ENOSPC and none.  With
 * KVARENA_ALLOC_PARTIAL it takes as many as it can (at least one, else
 * -ENOSPC) and returns the number taken in @nr_done.
 *
 * A client whose ALLOC got -ENOSPC need not retry in a loop: poll() on
 * its descriptor reports EPOLLOUT once that many frames (one, for
 * KVARENA_ALLOC_PARTIAL) could be had, and sleeps until then (see
 * KVARENA_FEAT_POLLOUT in Documentation/kvarena.rst).
 *
 * FREE is all-or-nothing too: every handle is checked first (-ESTALE,
 * -EPERM, -ENOENT, or -EINVAL for one handle given twice), and only when
 * all are good are they freed.  On error nothing is freed and @nr_done is
 * zero.
 */
struct kvarena_frames {
	__u64 handles;
	__u32 count;
	__u32 flags;
	__u32 nr_done;
	__u32 reserved0;
	__u64 reserved[2];
};

/* struct kvarena_frame_fd.access (out) */
#define KVARENA_ACCESS_READ	(1u << 0)	/* PROT_READ mappings */
#define KVARENA_ACCESS_WRITE	(1u << 1)	/* PROT_WRITE mappings too */

/**
 * struct kvarena_frame_fd - KVARENA_IOC_FRAME_FD, client holding the frame.
 * @handle:	frame handle held by the caller.
 * @fd:		out: a new O_CLOEXEC file descriptor (see below).
 * @flags:	must be zero.
 * @offset:	out: byte offset of the frame within that file.
 * @size:	out: the frame size.
 * @access:	out: KVARENA_ACCESS_* the caller has to the frame now: read
 *		and write for a frame it holds that is not published, read
 *		only for a published one (PUBLISH; a frame several clients
 *		hold is always published).  Must be zero on input.
 * @reserved0:	must be zero.
 * @reserved:	must be zero.
 *
 * Host arena: @fd is the client's own frames file, one per client (every
 * FRAME_FD of a client gives a new fd of the same file), in which frame i
 * lies at offset i * frame_size.  mmap(@fd, @offset, @size, MAP_SHARED)
 * maps the frame; a range over several frames the client holds maps them
 * all.  It maps frames the client holds and nothing else: mmap() of a
 * frame it does not hold fails with -EACCES, as does PROT_WRITE over a
 * frame it may only read; MAP_PRIVATE fails with -EINVAL, PROT_EXEC with
 * -EPERM.  The fd is a capability: any process it is passed to maps what
 * the client holds, and loses it with the client.  When the client
 * frees the frame, or its /dev/kvarena file is released, every mapping of
 * the frame through this file is zapped: the next touch raises SIGBUS.
 * Another client's mapping of the same memory is never disturbed.  The
 * file has no read, write, fallocate or truncate; the pages are the
 * backing file's own, pinned by the module.
 *
 * CUDA arena: @fd is the frame's backing file itself (the exported
 * allocation) and @offset is 0; cuMemImportFromShareableHandle(@fd)
 * imports it.  The module cannot revoke an imported CUDA allocation (see
 * Documentation/kvarena.rst, "Who may do what").
 *
 * File arena (KVARENA_MEM_FILE): @fd is the backing file opened afresh
 * (read-write, with the credentials of whoever gave ARENA_SET_BACKING;
 * its flags, O_DIRECT say, are the caller's own), and the frame is bytes
 * [@offset, @offset + @size) of it, for pread(), pwrite() or io_uring.
 * The file holds every frame of the range, so only the tier's agent
 * (a frame of the copies it took), the arena's owner or an administrator
 * gets it (-EPERM otherwise).  Nobody else holds a file arena's frames:
 * ALLOC, PUBLISH and LOOKUP of one are -EOPNOTSUPP.
 */
struct kvarena_frame_fd {
	__u64 handle;
	__s32 fd;
	__u32 flags;
	__u64 offset;
	__u64 size;
	__u32 access;
	__u32 reserved0;
	__u64 reserved[1];
};

/**
 * struct kvarena_usage - KVARENA_IOC_SET_USAGE, client.
 * @filled_tokens:	tokens of KV state the client keeps in its frames.
 * @filled_bytes:	bytes of those frames that hold KV state; at most
 *			held frames * frame_size (-EINVAL).
 * @flags:		must be zero.
 * @reserved0:		must be zero.
 * @reserved:		must be zero.
 *
 * Absolute values, not deltas: the latest report replaces the previous
 * one.  This is the "filled" level of the accounting (capacity >= held >=
 * filled); held - filled is the internal fragmentation.
 */
struct kvarena_usage {
	__u64 filled_tokens;
	__u64 filled_bytes;
	__u32 flags;
	__u32 reserved0;
	__u64 reserved[2];
};

/* struct kvarena_stat.flags (in) */
#define KVARENA_STAT_BY_INDEX	(1u << 0)	/* use @index, not @name */

/* struct kvarena_stat.state (out) */
#define KVARENA_STATE_PRESSURE	(1u << 0)	/* free + cached - unmet min < low_watermark */
#define KVARENA_STATE_NO_BACKING (1u << 1)	/* created accounting-only */

/**
 * struct kvarena_stat - KVARENA_IOC_STAT, anyone.
 * @name:		in: arena name; out (BY_INDEX): the name found.
 * @flags:		KVARENA_STAT_BY_INDEX: walk arenas by @index
 *			(0, 1, ...; -ENOENT past the last) instead of @name.
 * @index:		in: with KVARENA_STAT_BY_INDEX.
 * @frame_size:		bytes per frame.
 * @nr_frames:		capacity in frames.
 * @nr_free:		frames no client holds (for a viewer of another domain,
 *			other domains' cached frames among them: see
 *			@domain).
 * @nr_held:		frames held by clients.
 * @nr_cached:		published frames no client holds: reclaimable,
 *			oldest first, when an allocation needs them.
 * @nr_backed:		frames with backing registered.
 * @nr_reserved:	free frames set aside for clients' unmet minimums.
 * @nr_clients:		clients attached (of @domain).
 * @low_watermark:	pressure threshold in frames.
 * @state:		KVARENA_STATE_* bits.
 * @mem_kind:		enum kvarena_mem.
 * @mem_dev:		device ordinal as the creator saw it.
 * @peak_held:		highest @nr_held since the arena was created.
 * @filled_bytes:	sum of the clients' SET_USAGE bytes (of @domain).
 * @filled_tokens:	sum of the clients' SET_USAGE tokens (of @domain).
 * @bytes_per_token:	as given at create.
 * @alloc_calls:	ALLOC commands that reached the allocator.
 * @free_calls:		FREE commands that reached the allocator.
 * @alloc_failures:	ALLOC commands refused with -ENOSPC.
 * @frames_allocated:	frames handed out, ever.
 * @frames_freed:	frames returned, ever (FREE and release).
 * @owner_uid:		the arena's owner, in the caller's user namespace.
 * @owner_gid:		the arena's group, in the caller's user namespace.
 * @mode:		KVARENA_ACC_* bits.
 * @client_min_limit:	see struct kvarena_arena_create.
 * @client_max_default:	see struct kvarena_arena_create.
 * @client_max_limit:	see struct kvarena_arena_create.
 * @mem_uuid:		the GPU's UUID (CUDA arenas).
 * @nr_published:	keys in the arena's prefix index: published frames,
 *			held or cached.
 * @cache_domains:	KVARENA_DOMAINS_*.
 * @cache_hits:		keys LOOKUP found and returned, ever.
 * @cache_misses:	keys LOOKUP was given and did not return (a chain
 *			stops at its first miss), ever.
 * @cache_reclaims:	cached frames reclaimed for allocations, ever.
 * @domain:		out: 0 when the activity figures are the arena's
 *			(for its owner and administrators); else the domain
 *			they are for: the caller's (its client's, when the
 *			file is attached to the arena; else the one the
 *			arena's rule would give it).  Then @nr_cached,
 *			@nr_published, @cache_hits, @cache_misses,
 *			@cache_reclaims, @nr_dirty, @nr_clients,
 *			@filled_bytes, @filled_tokens, @alloc_calls,
 *			@free_calls and @alloc_failures are that domain's,
 *			@nr_free counts the other domains' cached frames
 *			(which an ALLOC may reclaim), and @frames_allocated,
 *			@frames_freed, @frames_cleared and @nr_quarantined
 *			are 0.  A domain's figures are kept while it has
 *			clients or frames.  The table of every figure and
 *			its rule is in Documentation/kvarena.rst.
 * @nr_dirty:		free frames that hold a domain's data and are
 *			cleared before another domain gets them.
 * @dom_cached:		frames of @domain's keys: @nr_cached.
 * @frames_cleared:	frames cleared between domains, ever.
 * @domain_cached_max:	see struct kvarena_arena_create.
 * @nr_quarantined:	CUDA arenas: dirty frames that may not be scrubbed
 *			yet, since something may still reach their memory:
 *			a process FRAME_FD gave one to is alive, or an fd
 *			or mapping of its memory is open (see struct
 *			kvarena_scrub).
 * @max_frames:		the table: the most frames ARENA_RESIZE may bring
 *			the arena to.
 * @nr_absent:		frames out of the arena (ARENA_RESIZE), their
 *			memory given back; @nr_frames + @nr_absent =
 *			@max_frames.
 * @nr_shrinking:	frames a shrink still waits for (held ones, and
 *			those the clients' minimums count on): the target
 *			a client under pressure can help meet by freeing
 *			frames.  The arena is becoming @nr_frames -
 *			@nr_shrinking; meanwhile that many of its free and
 *			cached frames are out of every client's reach.
 * @tier:		KVARENA_STAT_TIER_*: whether @tier_name is the
 *			arena's lower tier, or the arena it is the lower tier
 *			of (ARENA_SET_TIER); 0 (and @tier_name empty) if
 *			neither.
 * @frames_retired:	frames taken out of the arena by shrinks, ever.
 * @tier_name:		see @tier.
 *
 * Capacity is always @nr_free + @nr_cached + @nr_held = @nr_frames.
 *
 * The struct grew with KVARENA_FEAT_RESIZE (@max_frames on); the command
 * number of the struct before it (KVARENA_IOC_STAT_V1, of
 * KVARENA_STAT_SIZE_V1 bytes) is still taken and fills that much.
 */
struct kvarena_stat {
	char  name[KVARENA_NAME_LEN];
	__u32 flags;
	__u32 index;
	__u64 frame_size;
	__u32 nr_frames;
	__u32 nr_free;
	__u32 nr_held;
	__u32 nr_cached;
	__u32 nr_backed;
	__u32 nr_reserved;
	__u32 nr_clients;
	__u32 low_watermark;
	__u32 state;
	__u32 mem_kind;
	__u32 mem_dev;
	__u32 peak_held;
	__u64 filled_bytes;
	__u64 filled_tokens;
	__u64 bytes_per_token;
	__u64 alloc_calls;
	__u64 free_calls;
	__u64 alloc_failures;
	__u64 frames_allocated;
	__u64 frames_freed;
	__u32 owner_uid;
	__u32 owner_gid;
	__u32 mode;
	__u32 client_min_limit;
	__u32 client_max_default;
	__u32 client_max_limit;
	__u8  mem_uuid[16];
	__u32 nr_published;
	__u32 cache_domains;
	__u64 cache_hits;
	__u64 cache_misses;
	__u64 cache_reclaims;
	__u64 domain;
	__u32 nr_dirty;
	__u32 dom_cached;
	__u64 frames_cleared;
	__u32 domain_cached_max;
	__u32 nr_quarantined;
	__u32 max_frames;
	__u32 nr_absent;
	__u32 nr_shrinking;
	__u32 tier;
	__u64 frames_retired;
	char  tier_name[KVARENA_NAME_LEN];
};

/* struct kvarena_stat.tier */
#define KVARENA_STAT_TIER_LOWER	1	/* @tier_name is its lower tier */
#define KVARENA_STAT_TIER_UPPER	2	/* it is @tier_name's lower tier */

/* The size of struct kvarena_stat before @max_frames. */
#define KVARENA_STAT_SIZE_V1	264

/**
 * struct kvarena_client_info - one row of KVARENA_IOC_CLIENTS.
 * @client_id:		id given at ATTACH.
 * @pid:		thread-group id of the attaching process, in the
 *			caller's pid namespace (0 if not visible there, or
 *			if it has exited: the file may live on in a process
 *			it forked or passed it to; /proc/PID/fdinfo names
 *			every holder).
 * @label:		label given at ATTACH.
 * @min_frames:		guaranteed frames.
 * @max_frames:		limit.
 * @held:		frames held now, shared ones included: what @max_frames
 *			limits.
 * @shared:		frames held that other clients also hold (after
 *			LOOKUP).
 * @peak:		highest @held.
 * @uid:		effective uid of the attaching process, in the
 *			caller's user namespace.
 * @filled_bytes:	latest SET_USAGE report.
 * @filled_tokens:	latest SET_USAGE report.
 * @alloc_calls:	ALLOC commands.
 * @free_calls:		FREE commands.
 * @alloc_failures:	ALLOC commands refused with -ENOSPC.
 * @charged:		frames charged to the client: what @min_frames is
 *			measured against.  A frame is charged to the client
 *			that took it from the free list (ALLOC) or back from
 *			the cache (LOOKUP), while anyone holds it - also after
 *			that client let go of it - so a shared frame is
 *			charged once.  When the charged client detaches, the
 *			charge moves to another holder.
 * @dmem_refused:	ALLOC commands refused with -ENOSPC because the
 *			client's cgroup (or an ancestor) was at its
 *			dmem.max for the arena's region (counted in
 *			@alloc_failures too); 0 without KVARENA_FEAT_DMEM.
 * @domain:		the client's cache domain.
 */
struct kvarena_client_info {
	__u32 client_id;
	__s32 pid;
	char  label[KVARENA_LABEL_LEN];
	__u32 min_frames;
	__u32 max_frames;
	__u32 held;
	__u32 shared;
	__u32 peak;
	__u32 uid;
	__u64 filled_bytes;
	__u64 filled_tokens;
	__u64 alloc_calls;
	__u64 free_calls;
	__u64 alloc_failures;
	__u32 charged;
	__u32 dmem_refused;
	__u64 domain;
};

/**
 * struct kvarena_clients - KVARENA_IOC_CLIENTS, anyone.
 * @name:	arena name.
 * @clients:	user pointer to an array of @count struct kvarena_client_info.
 * @count:	rows the array can take (0 to ask only for @nr_clients).
 * @nr_clients:	out: clients the caller may see; rows written =
 *		min(@count, @nr_clients), in attach order.  The arena's
 *		owner and administrators see every client; anyone else the
 *		clients of its own cache domain (see struct kvarena_stat
 *		.domain).
 * @flags:	must be zero.
 * @reserved0:	must be zero.
 * @reserved:	must be zero.
 */
struct kvarena_clients {
	char  name[KVARENA_NAME_LEN];
	__u64 clients;
	__u32 count;
	__u32 nr_clients;
	__u32 flags;
	__u32 reserved0;
	__u64 reserved[2];
};

/**
 * struct kvarena_limits - KVARENA_IOC_SET_LIMITS, CAP_SYS_ADMIN.
 * @name:	arena name.
 * @client_id:	client to change.
 * @min_frames:	new guarantee; -ENOSPC if it cannot be met now.
 * @max_frames:	new limit (0: the arena's size), >= @min_frames.  A limit
 *		below what the client holds now stops further ALLOCs; it
 *		takes nothing away.
 * @flags:	must be zero.
 * @reserved:	must be zero.
 */
struct kvarena_limits {
	char  name[KVARENA_NAME_LEN];
	__u32 client_id;
	__u32 min_frames;
	__u32 max_frames;
	__u32 flags;
	__u64 reserved[2];
};

/**
 * struct kvarena_arena_policy - KVARENA_IOC_ARENA_SET_POLICY, CAP_SYS_ADMIN.
 * @name:		arena name.
 * @owner_uid:		new owner, in the caller's user namespace.
 * @owner_gid:		new group.
 * @mode:		new KVARENA_ACC_* bits.
 * @client_min_limit:	as in struct kvarena_arena_create.
 * @client_max_default:	as in struct kvarena_arena_create.
 * @client_max_limit:	as in struct kvarena_arena_create.
 * @flags:		must be zero.
 * @cache_domains:	as in struct kvarena_arena_create.
 * @domain_cached_max:	as in struct kvarena_arena_create; a lower cap
 *			trims the domains past it at once.
 * @reserved0:		must be zero.
 * @reserved:		must be zero.
 *
 * Replaces the whole policy (read it with STAT first to change one part).
 * It governs what comes next: clients already attached keep their
 * min/max (change those with SET_LIMITS) and their attachment.
 */
struct kvarena_arena_policy {
	char  name[KVARENA_NAME_LEN];
	__u32 owner_uid;
	__u32 owner_gid;
	__u32 mode;
	__u32 client_min_limit;
	__u32 client_max_default;
	__u32 client_max_limit;
	__u32 flags;
	__u32 cache_domains;
	__u32 domain_cached_max;
	__u32 reserved0;
	__u64 reserved[1];
};

/**
 * struct kvarena_prefix_entry - one link of a PUBLISH or LOOKUP chain.
 * @key:	a 32-byte key (opaque to the module; not all zeros).  The
 *		runtime chains them: each key hashes the one before it, the
 *		model's namespace and the frame's tokens, so a key names
 *		one frame's KV together with everything before it.
 * @handle:	PUBLISH: a frame the caller holds.  LOOKUP, out: the
 *		frame found under @key (for the leading run only).
 * @flags:	out: PUBLISH: KVARENA_PREFIX_EXISTED when @key was already
 *		published with another frame.  LOOKUP: KVARENA_PREFIX_HELD
 *		when the caller held the frame already (or it came earlier
 *		in the chain), so no new hold was taken for this entry.
 *		Ignored on input.
 * @reserved:	must be zero.
 */
struct kvarena_prefix_entry {
	__u8  key[KVARENA_KEY_LEN];
	__u64 handle;
	__u32 flags;
	__u32 reserved;
};

/* struct kvarena_prefix_entry.flags (out) */
#define KVARENA_PREFIX_EXISTED	(1u << 0)	/* PUBLISH: the key kept another frame */
#define KVARENA_PREFIX_HELD	(1u << 1)	/* LOOKUP: held already, no new hold */

/**
 * struct kvarena_prefix - KVARENA_IOC_PUBLISH and KVARENA_IOC_LOOKUP,
 * client.
 * @entries:	user pointer to @count struct kvarena_prefix_entry, in
 *		chain order (the first frame of the prefix first).
 * @count:	entries, 1..KVARENA_MAX_BATCH.
 * @flags:	PUBLISH: KVARENA_PUBLISH_TOKENS, or zero.  LOOKUP:
 *		KVARENA_LOOKUP_LOWER, or zero.
 * @nr_done:	out: PUBLISH: entries whose frame is now published under
 *		their key (new or from before; not those marked
 *		KVARENA_PREFIX_EXISTED).  LOOKUP: length of the leading run
 *		found (0 if the first key is missing).
 * @tokens_per_entry: with KVARENA_PUBLISH_TOKENS: token ids per entry,
 *		1..KVARENA_EVENT_MAX_TOKENS, at most
 *		KVARENA_PUBLISH_MAX_TOKENS in all; otherwise zero.
 * @tokens:	with KVARENA_PUBLISH_TOKENS: user pointer to @count *
 *		@tokens_per_entry __u32 token ids, entry i's at i *
 *		@tokens_per_entry; otherwise zero.
 * @nr_lower:	zero in.  LOOKUP with KVARENA_LOOKUP_LOWER, out: how many
 *		of the keys after the run found are, in order, in the
 *		arena's lower tier (KVARENA_IOC_ARENA_SET_TIER), which
 *		KVARENA_IOC_PROMOTE can bring up; otherwise 0.
 * @reserved:	must be zero.
 *
 * PUBLISH puts each entry's frame under its key; the caller keeps its
 * hold.  Every handle must name a frame the caller holds (-ESTALE,
 * -EPERM, -ENOENT) and not already published under another key
 * (-EBUSY); a frame given twice is -EINVAL.  A key already published
 * with another frame keeps that frame - the first publication wins, since
 * a key names the contents and the first frame may already be shared -
 * and the entry gets KVARENA_PREFIX_EXISTED; the caller's frame stays
 * private.  Publishing a frame again under its own key changes nothing.
 * All or nothing: on error nothing is published.  A frame is read-only
 * from its publication on, to its publisher too: PUBLISH zaps the
 * publisher's mappings of it (host arenas), and the next touch maps it
 * read-only; a write faults (SIGBUS).  If the entries cannot be written
 * back (-EFAULT) the frames stay published: PUBLISH again says the same.
 *
 * LOOKUP finds the longest leading run of the chain whose keys are
 * published and gives the caller a hold on each of its frames, writing
 * their handles: a frame others hold is shared (charged once, to the
 * client already charged for it); a cached frame comes back charged to
 * the caller; a frame the caller holds already is returned again without
 * a second hold (KVARENA_PREFIX_HELD).  A published frame keeps its
 * handle: every LOOKUP of a key returns the same one until the frame is
 * reclaimed.  All or nothing
 * over the run: -ENOSPC (and no hold taken) when the new holds would take
 * the caller past its max, or the cached frames among them are more than
 * it may take.  A miss is not an error: @nr_done is shorter than @count.
 * The caller lets go of the frames with FREE, as of any other; they map
 * read-only (FRAME_FD).  If the handles cannot be written back (-EFAULT)
 * the holds this call took are dropped again.
 *
 * A published frame nobody holds is cached: it keeps its key and its
 * contents, and is reclaimed, oldest first, only when an ALLOC (or a
 * guaranteed minimum) needs more frames than are free.  A held frame is
 * never reclaimed.  Release of a client drops its holds and leaves what
 * it published cached; ARENA_DESTROY drops the cache.
 *
 * Each frame newly published is a KVARENA_EVENT_STORED event of the
 * arena, and each reclaim a KVARENA_EVENT_REMOVED (KVARENA_IOC_EVENTS_FD).
 * The token ids of KVARENA_PUBLISH_TOKENS go into the STORED events only,
 * for KV-cache-aware routers that index by tokens: the module neither
 * checks them against the keys nor keeps them.
 */
struct kvarena_prefix {
	__u64 entries;
	__u32 count;
	__u32 flags;
	__u32 nr_done;
	__u32 tokens_per_entry;
	__u64 tokens;
	__u32 nr_lower;
	__u32 reserved;
};

/* struct kvarena_prefix.flags, PUBLISH */
#define KVARENA_PUBLISH_TOKENS	(1u << 0)	/* @tokens, for the events */
/* struct kvarena_prefix.flags, LOOKUP */
#define KVARENA_LOOKUP_LOWER	(1u << 1)	/* count the lower tier's keys too */

#define KVARENA_EVENT_MAX_TOKENS	4096u	/* token ids per event */
#define KVARENA_PUBLISH_MAX_TOKENS	(1u << 20) /* token ids per PUBLISH */

/* struct kvarena_events_fd.flags */
#define KVARENA_EVENTS_OLDEST	(1u << 0)	/* from the oldest event kept */
#define KVARENA_EVENTS_NONBLOCK	(1u << 1)	/* O_NONBLOCK */

/**
 * struct kvarena_events_fd - KVARENA_IOC_EVENTS_FD, anyone whom the
 * arena's mode lets view it (a read-only open suffices).
 * @name:	arena name.
 * @flags:	KVARENA_EVENTS_*.
 * @fd:		out: a new read-only O_CLOEXEC descriptor of the arena's
 *		events.
 * @reserved:	must be zero.
 *
 * The module keeps each arena's recent events in a ring of
 * kvarena.events_ring_kib KiB (a module parameter); every descriptor reads
 * them in order from its own position: the next event to come, or with
 * KVARENA_EVENTS_OLDEST the oldest one still kept.  read() returns as many
 * whole struct kvarena_event records as fit in its buffer (-EINVAL if not
 * even the next one fits), blocks while there are none (-EAGAIN with
 * O_NONBLOCK; poll() reports EPOLLIN), and returns 0 after the arena's
 * KVARENA_EVENT_CLEARED once the arena is destroyed.  A reader that falls
 * behind by more than the ring holds loses the oldest events it has not
 * read, and is told so: its next record is a KVARENA_EVENT_LOST with
 * their number.  Nothing is ever dropped silently, and no reader slows
 * down the arena.  -EOPNOTSUPP when the module keeps no events
 * (events_ring_kib=0).  The descriptor keeps working after the arena's
 * mode changes, like an open file after chmod.
 */
struct kvarena_events_fd {
	char  name[KVARENA_NAME_LEN];
	__u32 flags;
	__s32 fd;
	__u64 reserved[2];
};

/* struct kvarena_event.type */
#define KVARENA_EVENT_STORED	1	/* a frame published under @key */
#define KVARENA_EVENT_REMOVED	2	/* a cached frame reclaimed: @key gone */
#define KVARENA_EVENT_CLEARED	3	/* the arena destroyed, its cache gone */
#define KVARENA_EVENT_LOST	4	/* this reader missed @lost events */

/* struct kvarena_event.flags */
#define KVARENA_EVENT_PARENT	(1u << 0)	/* @parent is set */

/**
 * struct kvarena_event - one record read from an events descriptor.
 * @size:	bytes of the record: this header and @nr_tokens __u32 token
 *		ids after it, rounded up to a multiple of 8.
 * @type:	KVARENA_EVENT_*.
 * @flags:	KVARENA_EVENT_PARENT.
 * @seq:	the arena's event number: 1 for its first event, then
 *		consecutive.  LOST: the first one missed.
 * @time_ns:	CLOCK_REALTIME when the event happened, in nanoseconds.
 * @lost:	LOST: how many events were missed.
 * @domain:	STORED, REMOVED: the cache domain of @key.  A reader that
 *		is not the arena's owner or an administrator reads only
 *		its own domain's STORED and REMOVED events (the domain of
 *		its client, if the file that asked for the descriptor was
 *		attached to the arena, else the arena's rule's for it).
 * @client_id:	STORED: the client that published the frame; otherwise 0.
 * @frame:	STORED, REMOVED: the frame's index.
 * @nr_tokens:	STORED: token ids following this header (the PUBLISH's
 *		KVARENA_PUBLISH_TOKENS for the frame), 0 if none were given.
 * @reserved:	zero.
 * @key:	STORED, REMOVED: the frame's key.
 * @parent:	STORED with KVARENA_EVENT_PARENT: the key before @key in the
 *		PUBLISH chain.  The first entry of a PUBLISH has none: a
 *		chain published from its first frame (as kva_seq_publish()
 *		does) gives every frame its true parent.
 *
 * A PUBLISH of n new frames gives n STORED events, in chain order; an
 * allocation that reclaims n cached frames gives n REMOVED events, oldest
 * frame first.
 */
struct kvarena_event {
	__u32 size;
	__u16 type;
	__u16 flags;
	__u64 seq;
	__u64 time_ns;
	/* LOST counts, STORED and REMOVED name a domain. */
	__extension__ union {
		__u64 lost;
		__u64 domain;
	};
	__u32 client_id;
	__u32 frame;
	__u32 nr_tokens;
	__u32 reserved;
	__u8  key[KVARENA_KEY_LEN];
	__u8  parent[KVARENA_KEY_LEN];
};

/**
 * struct kvarena_evict - KVARENA_IOC_EVICT, CAP_SYS_ADMIN.
 * @name:	arena name.
 * @client_id:	client to evict.
 * @flags:	must be zero.
 * @nr_frames:	out: frames the client held, now returned.
 * @reserved0:	must be zero.
 * @reserved:	must be zero.
 *
 * Takes an attached client out of its arena while its file stays open
 * (a stuck, stopped or runaway process): every mapping of its frames is
 * zapped (the next touch raises SIGBUS), every frame and guarantee it held
 * returns to the arena, it leaves the CLIENTS table, and every later
 * client command on its file fails with -ESHUTDOWN, as does an mmap() of
 * its frames file (FRAME_FD's).  Its holds go as at
 * release: a frame other clients hold too stays theirs, and a published
 * one nobody else holds stays cached.  -ENOENT for no such client;
 * -EOPNOTSUPP for a client of a CUDA arena, whose imported allocations
 * the module cannot revoke.
 */
struct kvarena_evict {
	char  name[KVARENA_NAME_LEN];
	__u32 client_id;
	__u32 flags;
	__u32 nr_frames;
	__u32 reserved0;
	__u64 reserved[2];
};

/* struct kvarena_scrub.flags */
#define KVARENA_SCRUB_DONE	(1u << 0)	/* give cleared frames back */
#define KVARENA_SCRUB_ABANDON	(1u << 1)	/* with DONE: back, uncleared */

/**
 * struct kvarena_scrub - KVARENA_IOC_SCRUB, a client of a CUDA arena that
 * is the arena's owner or an administrator.
 * @handles:	user pointer to an array of @count __u64 handles: written
 *		by a take, read by KVARENA_SCRUB_DONE.
 * @count:	handles in the array, 1..KVARENA_MAX_BATCH.
 * @flags:	0 to take frames to clear; KVARENA_SCRUB_DONE to give back
 *		frames taken before, now cleared; KVARENA_SCRUB_DONE |
 *		KVARENA_SCRUB_ABANDON to give back frames it could not clear
 *		(a GPU error): they wait, uncleared, for the next take.
 * @nr_done:	out: frames taken, or given back.
 * @timeout_ms:	take: while no frame needs clearing, wait up to this many
 *		milliseconds for one (0: do not wait).  Must be 0 with
 *		KVARENA_SCRUB_DONE.
 * @reserved:	must be zero.
 *
 * The module cannot clear GPU memory, so on a CUDA arena a frame freed by
 * one cache domain reaches another only through a scrubber: a process of
 * the arena's owner (kvarenactl scrub) that takes dirty frames, clears
 * them on the GPU, and gives them back clean.  Until then they are free
 * but usable only by their own domain; an ALLOC of another domain that
 * needs them gets -ENOSPC, wakes the scrubber, and may poll() for
 * EPOLLOUT.  A take returns the frames that need clearing first (those of
 * a scrubber that went away before giving its frames back), then enough
 * dirty frames to keep the arena's stock of clean frames and to meet the
 * largest ALLOC refused for want of clean ones since; 0 frames once the
 * wait (if any) runs out.  The scrubber may FRAME_FD the handles it took,
 * writably, until it gives them back (over ioctl() only).  It must let go
 * of every fd, mapping and import of a frame before the DONE, which is
 * refused (-EBUSY, nothing given back) while anything but the arena still
 * holds a frame's memory.  Frames still taken when its file is released,
 * or abandoned, wait for the next scrubber; nobody else gets them.
 *
 * A frame that FRAME_FD gave to a process other than the owner's stays
 * in its domain (quarantined: struct kvarena_stat.nr_quarantined) until
 * every such process has exited, since a CUDA import cannot be revoked;
 * so does a frame whose memory anything but the arena still holds a
 * reference to (an fd kept open, inherited or passed on, a mapping).
 *
 * -EOPNOTSUPP on a host or accounting-only arena (the module clears host
 * frames itself); -EPERM for a caller that is neither the owner nor an
 * administrator, and over io_uring; -ENOENT, -ESTALE or -EINVAL (twice)
 * for a DONE handle the caller has not taken, -EBUSY for one whose memory
 * is still held (nothing is given back); -EINTR when a signal ends the
 * wait.
 */
struct kvarena_scrub {
	__u64 handles;
	__u32 count;
	__u32 flags;
	__u32 nr_done;
	__u32 timeout_ms;
	__u64 reserved[2];
};

/* struct kvarena_arena_resize.flags */
#define KVARENA_RESIZE_CANCEL	(1u << 0)	/* stop a shrink's waiting */

/**
 * struct kvarena_arena_resize - KVARENA_IOC_ARENA_RESIZE, CAP_SYS_ADMIN.
 * @name:		arena name.
 * @nr_frames:		the size to become, 1..the arena's max_frames
 *			(struct kvarena_arena_create); 0 with
 *			KVARENA_RESIZE_CANCEL.
 * @flags:		KVARENA_RESIZE_CANCEL: stop waiting for the frames
 *			a shrink has not taken yet; they stay in the arena
 *			(those taken stay out).
 * @timeout_ms:		a shrink that cannot take every frame at once
 *			waits up to this many milliseconds for the rest
 *			(0: not at all); 0 with KVARENA_RESIZE_CANCEL.
 * @out_frames:		out: frames in the arena now (struct kvarena_stat
 *			.nr_frames).
 * @out_shrinking:	out: frames the shrink still waits for.
 * @out_absent:		out: frames out of the arena.
 * @reserved0:		must be zero.
 * @reserved1:		must be zero.
 * @reserved:		must be zero.
 *
 * Shrink (@nr_frames below what the arena has or is becoming): frames go
 * out free ones first, then cached ones, oldest first (reclaimed, each a
 * KVARENA_EVENT_REMOVED); never a held frame, and never one that a
 * client's unmet minimum counts on.  What cannot go at once is waited
 * for: kept out of every client's reach from now on (ALLOC sees the new
 * size at once, held frames stay where they are) and taken as clients
 * free frames, so the arena reports pressure until it is done - the
 * target, for a client that wants to help, is STAT's @nr_shrinking.
 * The call waits up to @timeout_ms, ends early on a signal, and returns
 * 0 either way: the out fields say how far it got, and the shrink goes
 * on after it returns until done, grown over or cancelled.  -EBUSY (and
 * nothing done) when the clients' minimums add up to more than
 * @nr_frames.
 *
 * The memory of a frame taken out goes back: a host arena's pages are
 * unpinned and punched out of the backing file (FALLOC_FL_PUNCH_HOLE), so
 * the machine has them again (unless something else holds them: another
 * mapping of the backing file, say); a CUDA arena's backing file is let
 * go, and its allocation is freed once its provider and every importer
 * let go of it too.  Frames taken out before the call returns have their
 * memory back by then; later ones, a moment after.
 *
 * Grow (@nr_frames above): a shrink still waiting is cut first; then
 * absent frames that have backing come in, free and clean (a host
 * arena's pages are pinned again, in the caller's context: new pages,
 * zeroed).  All or nothing: -EINVAL beyond max_frames, -ENODATA when too
 * few absent frames have backing (a CUDA arena's frames taken out lose
 * theirs: ARENA_SET_BACKING gives new memory first), -ENOMEM when the
 * pages cannot be had (or what pinning them said: -EFAULT, -EPERM for a
 * backing file sealed against writes since), -EINTR when a fatal signal
 * came first; nothing changes then (but that a shrink which
 * was waiting, and which the grow cut, stays cut if a client was given
 * a guarantee meanwhile that needs its frames).  Clients see the new size at
 * their next ALLOC; a client's max of 0 at ATTACH is the table, so it
 * keeps up.
 *
 * -ENODATA before every frame in the arena has its backing; -EOPNOTSUPP
 * for a file arena.  Resizes of one arena run one at a time (a waiting
 * shrink does not hold the others up).
 */
struct kvarena_arena_resize {
	char  name[KVARENA_NAME_LEN];
	__u32 nr_frames;
	__u32 flags;
	__u32 timeout_ms;
	__u32 out_frames;
	__u32 out_shrinking;
	__u32 out_absent;
	__u32 reserved0;
	__u32 reserved1;
	__u64 reserved[2];
};

/**
 * struct kvarena_imports_dropped - KVARENA_IOC_IMPORTS_DROPPED, client.
 * @flags:	must be zero.
 * @nr_done:	out: frames taken out of the arena that no longer wait for
 *		the calling process.
 * @reserved:	must be zero.
 *
 * The calling process says it holds no import of the memory of any frame
 * ARENA_RESIZE took out of its client's arena (a CUDA frame's allocation
 * that FRAME_FD gave it: cuMemRelease() of each import done, and no
 * mapping of one left).  Such a frame takes new memory (SET_BACKING) only
 * once no process that FRAME_FD gave its old memory to holds it: an
 * exited process does not, and one that said so with this command does
 * not.  A process that says so and still holds an import maps the old
 * memory, which nobody else is given, so it harms only itself.  Frames in
 * the arena are not touched: their imports count until the process
 * exits (see SCRUB).  Host arenas have no such frames (nr_done 0).
 * libkvarena says so once it has let go of its imports after a shrink
 * (kva_sync_usage()).
 */
struct kvarena_imports_dropped {
	__u32 flags;
	__u32 nr_done;
	__u64 reserved[3];
};

/**
 * struct kvarena_arena_tier - KVARENA_IOC_ARENA_SET_TIER, CAP_SYS_ADMIN.
 * @name:	the upper arena.
 * @lower:	the arena to become its lower tier; an empty name takes the
 *		lower tier away.
 * @free_target: demote cached frames while fewer than this many frames
 *		of the upper arena are free; 0: the arena's low watermark
 *		(at least 1).
 * @flags:	must be zero.
 * @reserved:	must be zero.
 *
 * A lower tier keeps what the upper arena's prefix cache would drop.
 * While fewer than @free_target of the upper arena's frames are free, an
 * agent (KVARENA_IOC_TIER; kvarenactl agent) is given its oldest cached
 * frames to copy down: each copy is published in the lower arena under
 * the same key, in the cache domain of the same number, and the upper
 * frame is reclaimed (a KVARENA_EVENT_REMOVED of the upper arena, a
 * KVARENA_EVENT_STORED of the lower one).  LOOKUP with
 * KVARENA_LOOKUP_LOWER counts the keys found below, and PROMOTE copies
 * them up into fresh frames.  Where no agent runs, nothing changes:
 * cached frames are dropped as before.
 *
 * The lower arena is a host arena, or a file arena (KVARENA_MEM_FILE)
 * below a host arena, with the upper arena's frame size, is
 * not the upper arena, has no lower tier itself and is below no other
 * arena; a file arena has no lower tier (-EINVAL otherwise; -ENOENT for
 * no such arena, -EEXIST for an
 * upper arena that has a lower tier already).  While it is one, it
 * cannot be destroyed (-EBUSY); the tier goes with the upper arena's
 * destruction, or with an empty @lower (-ENOENT if there is no tier);
 * both are -EBUSY while copies are under way.  Keys go below in the
 * cache domain of the same number (struct kvarena_attach.domain), so
 * the lower arena's clients of that domain could find them there; those
 * of private domains (KVARENA_ATTACH_PRIVATE), whose numbers mean one
 * client of one arena, never go below.  Its clients are usually the
 * agent alone; what it holds is its own arena's: STAT (@tier,
 * @tier_name), CLIENTS and its events (medium CPU) show the tier.
 */
struct kvarena_arena_tier {
	char  name[KVARENA_NAME_LEN];
	char  lower[KVARENA_NAME_LEN];
	__u32 free_target;
	__u32 flags;
	__u64 reserved[2];
};

/* struct kvarena_tier_job.op */
#define KVARENA_TIER_DEMOTE	1	/* copy @upper's frame to @lower's */
#define KVARENA_TIER_PROMOTE	2	/* copy @lower's frame to @upper's */

/**
 * struct kvarena_tier_job - one copy for the agent.
 * @upper:	handle of the frame in the upper arena.
 * @lower:	handle of the frame in the lower arena.
 * @op:		KVARENA_TIER_*.
 * @result:	KVARENA_TIER_DONE: 0 if the whole frame was copied, else a
 *		negative errno (nothing of the copy is used); zero from a
 *		take.
 */
struct kvarena_tier_job {
	__u64 upper;
	__u64 lower;
	__u32 op;
	__s32 result;
};

/* struct kvarena_tier.flags */
#define KVARENA_TIER_DONE	(1u << 0)	/* give finished jobs back */

/**
 * struct kvarena_tier - KVARENA_IOC_TIER, the agent: a client of the
 * upper arena that is the arena's owner or an administrator.
 * @jobs:	user pointer to @count struct kvarena_tier_job: written by a
 *		take, read by KVARENA_TIER_DONE.
 * @count:	jobs in the array, 1..KVARENA_MAX_BATCH.
 * @flags:	0 to take jobs; KVARENA_TIER_DONE to give back jobs taken
 *		before, with their results.
 * @nr_done:	out: jobs taken, or given back.
 * @timeout_ms:	take: while there is nothing to copy, wait up to this many
 *		milliseconds for something (0: do not wait).  Must be 0 with
 *		KVARENA_TIER_DONE.
 * @lower_fd:	take: an open /dev/kvarena file of the caller attached to
 *		the lower arena; the jobs' lower frames are mapped through
 *		it.  Must be 0 with KVARENA_TIER_DONE.
 * @reserved0:	must be zero.
 * @reserved:	must be zero.
 *
 * A take gives promotions first (PROMOTE's callers wait for them), then
 * demotions of the upper arena's oldest cached frames while fewer than
 * its free target are free; 0 jobs once the wait (if any) runs out.  Until
 * a job is given back, the agent may map its frames: FRAME_FD of @upper
 * on this file and of @lower on @lower_fd's, read-only for the frame it
 * copies from, writable for the one it copies to; nobody else can reach
 * either frame's new contents, and neither frame is reclaimed or taken by
 * a shrink meanwhile.  A demotion given back with result 0 publishes the
 * lower frame under the key and reclaims the upper one unless a LOOKUP
 * took it meanwhile; a promotion publishes the upper frame and gives it
 * to the waiting caller.  A job given back with an error, or still taken
 * when the agent's file is released (the agent killed mid-copy), leaves
 * nothing of its copy: a demotion's upper frame stays cached, a
 * promotion goes to the next take.  The agent's mappings of a host
 * arena's frames are zapped when the job is given back; a CUDA arena's
 * frame the agent imports is the owner's process's, as a scrubber's is
 * (see SCRUB).  An agent that EVICT took out keeps its jobs until its
 * file is released.
 *
 * -EOPNOTSUPP for an arena with no lower tier; -EPERM for a caller that
 * is neither the owner nor an administrator, and over io_uring; -EBADF or
 * -EINVAL for a @lower_fd that is not a client of the lower arena (or of
 * an arena that is no longer the lower tier); -ENOENT for a DONE job the
 * caller has not taken, -EINVAL for one given twice or a positive result
 * (nothing is given back); -EINTR when a signal ends the wait.
 */
struct kvarena_tier {
	__u64 jobs;
	__u32 count;
	__u32 flags;
	__u32 nr_done;
	__u32 timeout_ms;
	__s32 lower_fd;
	__u32 reserved0;
	__u64 reserved[2];
};

/**
 * struct kvarena_promote - KVARENA_IOC_PROMOTE, client.
 * @entries:	user pointer to @count struct kvarena_prefix_entry: keys in
 *		chain order (the keys after the run a LOOKUP found), and out
 *		the handles of the frames promoted.
 * @count:	entries, 1..KVARENA_MAX_BATCH; the first 256 at most are
 *		brought up by one call.
 * @flags:	must be zero.
 * @nr_done:	out: the leading run of entries now held by the caller.
 * @timeout_ms:	how long to wait for the copies, 1..600000 ms.
 * @reserved:	must be zero.
 *
 * Brings the leading run of keys present in the arena's lower tier (in
 * the caller's cache domain) back up: a fresh frame of the arena for each
 * (from its frames beyond every unmet minimum, within the caller's max),
 * filled by the agent from the lower frame, published under the key and
 * held by the caller, as a LOOKUP hit would be (read-only; FREE lets go).
 * The call waits for the copies.  The run ends early at a key that is not
 * below, that another PROMOTE is bringing up, or that is in the arena
 * already (LOOKUP finds it); a copy that failed ends it where it failed.
 *
 * Each frame is the caller's from the moment it is taken, as an ALLOC's
 * would be: its max and min, CLIENTS, fdinfo and its other PROMOTEs see
 * it, so the caller's copies under way are bounded by its own max.  Until
 * its copy is done the caller can neither map nor free it (FRAME_FD, FREE
 * and PUBLISH of its handle are -EBUSY).  When the wait ends before the
 * copies (-ETIMEDOUT, -EINTR), those the agent has not taken end at once,
 * their frames back to the arena; those it has run on, charged to the
 * caller until done, and end up cached.  When the caller goes (its file's
 * release, its death, EVICT - which ends a waiting PROMOTE at once with
 * -ESHUTDOWN), its copies no agent took end with it, and those an agent
 * has keep their frames, charged to no client, until the agent gives
 * them back: an agent is never left with a frame torn from under it.
 * The lower frames stay in the lower tier.
 *
 * A miss is not an error: 0 with @nr_done 0.  -EOPNOTSUPP for an arena
 * with no lower tier; -ENODEV when no agent has asked for work since the
 * tier was set (nothing would copy); -ENOSPC when the caller's max or the
 * arena's frames cannot take the first key's frame; -EAGAIN when its
 * frame must be cleared first (try again); -EIO when its copy failed;
 * -EEXIST when its key was published in the arena meanwhile and others
 * hold it (LOOKUP shares it); -ETIMEDOUT or -EINTR when the wait ended
 * before it came; -ESHUTDOWN when EVICT took the caller.  Over io_uring the call is asynchronous: the
 * submission returns at once and the completion comes with the copies,
 * from io_uring's worker; a cancellation (IORING_OP_ASYNC_CANCEL, the
 * ring's release) ends the wait as a signal does, -EINTR.  The wait holds
 * one of the submitting thread's bounded io_uring workers, which other
 * commands that go to a worker then wait behind: submit PROMOTE from a
 * ring and thread of its own.  @entries and this struct must stay valid
 * until the completion.
 */
struct kvarena_promote {
	__u64 entries;
	__u32 count;
	__u32 flags;
	__u32 nr_done;
	__u32 timeout_ms;
	__u64 reserved[2];
};

#define KVARENA_PROMOTE_MAX_MS	600000u	/* struct kvarena_promote.timeout_ms */

#define KVARENA_GANG_MAX	16	/* member arenas of a gang */

/**
 * struct kvarena_gang_create - KVARENA_IOC_GANG_CREATE, CAP_SYS_ADMIN.
 * @name:	the gang's name, an arena name (1-31 characters of
 *		[A-Za-z0-9_.-]) that no arena has.
 * @members:	user pointer to @nr_members arena names, KVARENA_NAME_LEN
 *		bytes each, NUL-terminated: member r is rank r's memory
 *		(one GPU each, in the engine's rank order).
 * @nr_members:	2..KVARENA_GANG_MAX.
 * @flags:	must be zero.
 * @reserved:	must be zero.
 *
 * A gang is an arena whose frames are the frames of its members taken
 * together: frame i of the gang is frame i of every member at once, so
 * one ALLOC of a gang client takes one frame in every member - all or
 * nothing by construction - and returns one handle valid in each.  The
 * gang has the whole accounting (clients, min/max, pressure, the prefix
 * cache, fdinfo, sysfs); a frame is charged once.  Clients ATTACH to the
 * gang by its name as to any arena; rank processes JOIN one of them
 * (struct kvarena_join) to map its frames in their member.
 *
 * The members must be arenas of one kind (host, CUDA - one GPU each - or
 * accounting-only with KVARENA_CREATE_NO_BACKING), with equal frame size
 * and frame count, no frame out of the arena (ARENA_RESIZE), every frame
 * backed, equal creation flags, and no client, lower tier, upper arena or
 * gang: -EINVAL for a mismatch, -EBUSY for a member in use, -ENOENT for a
 * name no arena has, -EEXIST if @name is taken, -EOPNOTSUPP for file
 * members.  A gang of CUDA members keeps a CUDA arena's rules (imports,
 * scrubbing; EVICT is -EOPNOTSUPP) in every member.
 * While ganged a member takes no ATTACH, SET_BACKING, RESIZE, SET_TIER
 * or DESTROY (-EBUSY); the gang takes no SET_BACKING, RESIZE or SET_TIER
 * (-EOPNOTSUPP).  ARENA_DESTROY of the gang (no client attached) sets the
 * members free again, as they were.
 *
 * The gang's policy (owner, mode, limits, cache domains, watermark,
 * cached cap) starts as member 0's, and ARENA_SET_POLICY changes it;
 * its bytes_per_token is the members' sum (each holds its ranks' share
 * of a token's KV).
 */
struct kvarena_gang_create {
	char  name[KVARENA_NAME_LEN];
	__u64 members;
	__u32 nr_members;
	__u32 flags;
	__u64 reserved[4];
};

/* struct kvarena_gang_token.flags */
#define KVARENA_GANG_RANKS_FATAL (1u << 0)	/* a rank's death evicts the leader */

/**
 * struct kvarena_gang_token - KVARENA_IOC_GANG_TOKEN, client of a gang.
 * @token:	out: the secret a rank gives to JOIN this client; the same
 *		for the client's whole life, never 0.
 * @flags:	in: KVARENA_GANG_RANKS_FATAL: from now on, the release of
 *		any rank that joined this client (its process died, or it
 *		closed its file) evicts this client, as EVICT does: every
 *		frame of every member back, every rank's mapping revoked.
 *		Without it, a rank's release only takes that rank away.
 *		The last call's flags hold.
 * @nr_members:	out: the gang's members.
 * @reserved0:	must be zero.
 * @reserved:	must be zero.
 *
 * -ENOTCONN for a file not attached, -EOPNOTSUPP for a client of an arena
 * that is not a gang, -EPERM for a rank.  Only the client gets its token:
 * hand it to the rank processes as the engine hands them its block
 * tables.
 */
struct kvarena_gang_token {
	__u64 token;
	__u32 flags;
	__u32 nr_members;
	__u32 reserved0;
	__u32 reserved1;
	__u64 reserved[2];
};

/**
 * struct kvarena_join - KVARENA_IOC_JOIN, O_RDWR opener: a rank.
 * @name:		the gang.
 * @label:		free-form label of the rank (may be empty).
 * @client_id:		the gang client to join (its ATTACH's client_id).
 * @rank:		the member whose memory this rank maps, 0..members-1.
 * @token:		the client's KVARENA_IOC_GANG_TOKEN.
 * @flags:		must be zero.
 * @mem_kind:		out: the member's enum kvarena_mem.
 * @frame_size:		out: the frame size.
 * @nr_frames:		out: the gang's frames.
 * @mem_dev:		out: the member's device ordinal, as its creator
 *			saw it.
 * @mem_uuid:		out: the member's GPU UUID (zero for host).
 * @member:		out: the member arena's name.
 * @reserved:		must be zero.
 *
 * A rank holds no frames of its own and takes none: it maps, in its
 * member, the frames that the client it joined holds, with the client's
 * rights (read-write for the client's own frames, read-only for
 * published ones).  FRAME_FD of a handle the client holds gives the
 * rank's view of that frame: for host members a frames file of the
 * client's for this member, in which frame i lies at offset
 * i * frame_size, mapped and revoked exactly as a client's own (FREE,
 * PUBLISH, EVICT and the client's release zap every rank's PTEs of the
 * frame, in every member).  The file never maps another member's memory
 * or a frame the client does not hold.  A rank may STAT, CLIENTS,
 * EVENTS_FD and FRAME_FD; every other client command is -EPERM.  Once the
 * client is gone (released or evicted), FRAME_FD is -ENOLINK.
 *
 * Who may join: a process that may ATTACH to the gang (its mode), with
 * the client's euid or CAP_SYS_ADMIN, and the client's token: -EACCES,
 * -EPERM, or -ENOENT for a client id, token or rank that does not match
 * (one error for all three, so that a guess learns nothing).  -EBUSY for
 * a file attached or joined already, -EINVAL for a name that is not a
 * gang.  A rank leaves when its file is released.
 */
struct kvarena_join {
	char  name[KVARENA_NAME_LEN];
	char  label[KVARENA_LABEL_LEN];
	__u32 client_id;
	__u32 rank;
	__u64 token;
	__u32 flags;
	__u32 mem_kind;
	__u64 frame_size;
	__u32 nr_frames;
	__u32 mem_dev;
	__u8  mem_uuid[16];
	char  member[KVARENA_NAME_LEN];
	__u64 reserved[2];
};

/**
 * struct kvarena_uring_cmd - the command area of an IORING_OP_URING_CMD SQE.
 * @arg:	user pointer to the command's struct, exactly as the third
 *		argument of ioctl().
 * @reserved:	must be zero.
 *
 * sqe->opcode = IORING_OP_URING_CMD, sqe->fd = the /dev/kvarena fd,
 * sqe->cmd_op = the KVARENA_IOC_x number, and this struct at sqe->cmd
 * (16 bytes, so plain 64-byte SQEs suffice).  cqe->res is what ioctl()
 * would have returned: 0 or a negative errno.
 */
struct kvarena_uring_cmd {
	__u64 arg;
	__u64 reserved;
};

#define KVARENA_IOC_MAGIC	'K'

#define KVARENA_IOC_VERSION	  _IOWR(KVARENA_IOC_MAGIC, 0x00, struct kvarena_version)
#define KVARENA_IOC_ARENA_CREATE  _IOWR(KVARENA_IOC_MAGIC, 0x01, struct kvarena_arena_create)
#define KVARENA_IOC_ARENA_DESTROY _IOWR(KVARENA_IOC_MAGIC, 0x02, struct kvarena_arena_destroy)
#define KVARENA_IOC_ARENA_SET_BACKING _IOWR(KVARENA_IOC_MAGIC, 0x03, struct kvarena_set_backing)
#define KVARENA_IOC_ATTACH	  _IOWR(KVARENA_IOC_MAGIC, 0x04, struct kvarena_attach)
#define KVARENA_IOC_ALLOC	  _IOWR(KVARENA_IOC_MAGIC, 0x05, struct kvarena_frames)
#define KVARENA_IOC_FREE	  _IOWR(KVARENA_IOC_MAGIC, 0x06, struct kvarena_frames)
#define KVARENA_IOC_FRAME_FD	  _IOWR(KVARENA_IOC_MAGIC, 0x07, struct kvarena_frame_fd)
#define KVARENA_IOC_SET_USAGE	  _IOWR(KVARENA_IOC_MAGIC, 0x08, struct kvarena_usage)
#define KVARENA_IOC_STAT	  _IOWR(KVARENA_IOC_MAGIC, 0x09, struct kvarena_stat)
#define KVARENA_IOC_CLIENTS	  _IOWR(KVARENA_IOC_MAGIC, 0x0a, struct kvarena_clients)
#define KVARENA_IOC_SET_LIMITS	  _IOWR(KVARENA_IOC_MAGIC, 0x0b, struct kvarena_limits)
#define KVARENA_IOC_PUBLISH	  _IOWR(KVARENA_IOC_MAGIC, 0x0c, struct kvarena_prefix)
#define KVARENA_IOC_LOOKUP	  _IOWR(KVARENA_IOC_MAGIC, 0x0d, struct kvarena_prefix)
#define KVARENA_IOC_ARENA_SET_POLICY _IOWR(KVARENA_IOC_MAGIC, 0x0e, struct kvarena_arena_policy)
#define KVARENA_IOC_EVICT	  _IOWR(KVARENA_IOC_MAGIC, 0x0f, struct kvarena_evict)
#define KVARENA_IOC_EVENTS_FD	  _IOWR(KVARENA_IOC_MAGIC, 0x10, struct kvarena_events_fd)
#define KVARENA_IOC_SCRUB	  _IOWR(KVARENA_IOC_MAGIC, 0x11, struct kvarena_scrub)
#define KVARENA_IOC_ARENA_RESIZE  _IOWR(KVARENA_IOC_MAGIC, 0x12, struct kvarena_arena_resize)
#define KVARENA_IOC_IMPORTS_DROPPED _IOWR(KVARENA_IOC_MAGIC, 0x13, struct kvarena_imports_dropped)
#define KVARENA_IOC_ARENA_SET_TIER _IOWR(KVARENA_IOC_MAGIC, 0x14, struct kvarena_arena_tier)
#define KVARENA_IOC_TIER	  _IOWR(KVARENA_IOC_MAGIC, 0x15, struct kvarena_tier)
#define KVARENA_IOC_PROMOTE	  _IOWR(KVARENA_IOC_MAGIC, 0x16, struct kvarena_promote)
#define KVARENA_IOC_GANG_CREATE	  _IOWR(KVARENA_IOC_MAGIC, 0x17, struct kvarena_gang_create)
#define KVARENA_IOC_GANG_TOKEN	  _IOWR(KVARENA_IOC_MAGIC, 0x18, struct kvarena_gang_token)
#define KVARENA_IOC_JOIN	  _IOWR(KVARENA_IOC_MAGIC, 0x19, struct kvarena_join)
/* STAT with the struct of before KVARENA_FEAT_RESIZE (still taken). */
#define KVARENA_IOC_STAT_V1	  _IOC(_IOC_READ | _IOC_WRITE, KVARENA_IOC_MAGIC, \
				       0x09, KVARENA_STAT_SIZE_V1)

#endif /* _UAPI_LINUX_KVARENA_H */
