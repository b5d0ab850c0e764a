/* SPDX-License-Identifier: MIT */
/*
 * libkvarena - the kvarena runtime.
 *
 * A serving engine links this library to keep each sequence's KV cache in
 * one contiguous virtual range made of arena frames, laid out as
 * <kvarena/layout.h> says, so that attention kernels need only the range's
 * base address and the model geometry.
 *
 * The pieces:
 *
 *   arena     struct kva_arena: this process's handle on one arena of
 *             equal frames.  Either a client of /dev/kvarena (the frames
 *             belong to the kernel module and may be shared with other
 *             processes) or an embedded, in-process arena built from the
 *             module's own allocator (one process; laptops and CI).
 *   backend   how frames become memory: "host" (memfd + mmap) or "cuda"
 *             (CUDA's virtual memory management API, loaded at run time).
 *   sequence  struct kva_seq: one reserved virtual range of max_tokens
 *             tokens, of which the first `tokens` are filled; frames are
 *             mapped behind it as it grows.
 *
 * Conventions
 *
 *  - Functions return 0 (or a count) on success and a negative errno on
 *    failure; they never set errno.  A call that fails changes nothing:
 *    a failed grow leaves every sequence it named exactly as it was.
 *  - Option structs must be zeroed before use (designated initialisers do
 *    it); fields named reserved must stay zero and unknown flag bits give
 *    -EINVAL, so that later versions can give them meaning.
 *  - No global state: everything hangs off a struct kva_arena.
 *
 * Thread safety
 *
 *  - A struct kva_arena may be shared by any number of threads: every
 *    kva_* function that takes one serialises on an internal mutex, except
 *    kva_close(), which must not race with any other use of the arena.
 *  - A struct kva_seq is used by one thread at a time (the caller's
 *    sequence-level lock, if it has several threads per sequence).
 *    Different sequences of one arena may be used by different threads at
 *    once.  kva_seq_fork() uses the parent; neither it nor the child may be
 *    in use elsewhere during the call.
 *  - kva_seq_grow()'s fast path touches only the sequence: no lock, no
 *    system call.
 *
 * Environment (read by kva_open() and kva_arena_create() only)
 *
 *  KVA_MODE          "device", "embedded" or "auto": forces the arena
 *                    kind when kva_open_opts.mode is KVA_MODE_AUTO.
 *  KVA_DEVICE        device node to use instead of /dev/kvarena.
 *  KVA_ARENA         arena name when kva_open_opts.name is NULL.
 *  KVA_TRANSPORT     "ioctl" or "uring": how frame operations reach the
 *                    module when the options do not say.
 *  KVA_CUDA_LIBRARY  the CUDA driver library to load instead of
 *                    libcuda.so.1.
 */
#ifndef KVARENA_H
#define KVARENA_H

#include <stddef.h>
#include <stdint.h>

#include <kvarena/layout.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVA_VERSION_MAJOR	1
#define KVA_VERSION_MINOR	0

struct kva_arena;

/** enum kva_mode - where an arena's frames come from. */
enum kva_mode {
	KVA_MODE_AUTO = 0,	/* device if the node exists, else embedded */
	KVA_MODE_DEVICE = 1,	/* a client of /dev/kvarena */
	KVA_MODE_EMBEDDED = 2,	/* an in-process arena */
};

/** enum kva_backend - what a frame is, and how it is mapped. */
enum kva_backend {
	KVA_BACKEND_HOST = 0,	/* memfd pages, mmap(MAP_FIXED|MAP_SHARED) */
	KVA_BACKEND_CUDA = 1,	/* cuMemCreate/cuMemMap on one CUDA device */
};

/** enum kva_transport - how frame operations reach /dev/kvarena. */
enum kva_transport {
	KVA_TRANSPORT_AUTO = 0,	 /* io_uring when the module offers it */
	KVA_TRANSPORT_IOCTL = 1, /* one ioctl(2) per command */
	KVA_TRANSPORT_URING = 2, /* IORING_OP_URING_CMD, one io_uring_enter
				  * per batch of commands */
	KVA_TRANSPORT_NONE = 3,	 /* reported for embedded arenas */
};

/* kva_open_opts.flags and kva_arena_params.flags */
#define KVA_OPEN_PREFAULT	(1u << 0) /* host: allocate every page of
					   * the backing when the arena is
					   * made (embedded, or by
					   * kva_arena_create()) */
#define KVA_OPEN_POPULATE	(1u << 1) /* host: fill page tables when a
					   * frame is mapped (MAP_POPULATE),
					   * so that first touch does not
					   * fault */
#define KVA_OPEN_HUGETLB	(1u << 2) /* host: back the arena with 2 MiB
					   * hugetlb pages (needs reserved
					   * pages; implies PREFAULT) */
#define KVA_OPEN_PRIVATE	(1u << 3) /* device: a cache domain of this
					   * handle's own: its prefixes are
					   * shared with no other client
					   * (KVARENA_ATTACH_PRIVATE) */
#define KVA_OPEN_NO_PROMOTE	(1u << 4) /* device: never wait for frames
					   * of a lower tier to come back up
					   * (kva_seq_attach_prefix()) */
#define KVA_OPEN_NO_REMOTE	(1u << 5) /* device: never ask the remote
					   * tier's agent for the keys a
					   * lookup missed ($KVA_REMOTE_MS=0
					   * says the same) */
/* kva_arena_info.flags only: what the backend found */
#define KVA_INFO_SHARED_RW	(1u << 31) /* cuda: the driver refused
					    * read-only access, so published
					    * frames are mapped read-write
					    * (their contents stay the key's
					    * only as long as this process
					    * copies before it writes) */

/**
 * struct kva_open_opts - how kva_open() finds or makes the arena.
 * @mode:	enum kva_mode.  KVA_MODE_AUTO honours $KVA_MODE, then picks
 *		device mode if the device node exists.
 * @flags:	KVA_OPEN_*.
 * @name:	device mode: the arena to attach to (NULL: $KVA_ARENA, which
 *		must then be set).  Embedded: a label for the memory's name;
 *		NULL is fine.
 * @label:	device mode: the client label shown by kvarenactl.
 * @device:	device node (NULL: $KVA_DEVICE, then /dev/kvarena).
 * @min_frames:	device mode: frames guaranteed to this client.
 * @max_frames:	limit on frames this handle holds; 0 for the arena's size.
 * @nr_frames:	embedded: frames in the arena.  Ignored in device mode.
 * @mem_kind:	embedded: enum kva_backend of the frames.
 * @frame_size:	embedded: bytes per frame, a power of two >= 4096 (and a
 *		multiple of the CUDA allocation granularity for CUDA).
 * @mem_dev:	embedded: CUDA device ordinal for KVA_BACKEND_CUDA.
 * @transport:	device mode: enum kva_transport (AUTO: $KVA_TRANSPORT, then
 *		io_uring where the module supports it).
 * @cuda_library: the CUDA driver to load (NULL: $KVA_CUDA_LIBRARY, then
 *		libcuda.so.1).
 * @promote_ms:	device mode, an arena with a lower tier: how long
 *		kva_seq_attach_prefix() waits for the keys found below to be
 *		brought back up (0: 1000 ms; at most 600000).  See
 *		KVA_OPEN_NO_PROMOTE.
 * @reserved0:	must be zero.
 * @reserved:	must be zero.
 */
struct kva_open_opts {
	uint32_t mode;
	uint32_t flags;
	const char *name;
	const char *label;
	const char *device;
	uint32_t min_frames;
	uint32_t max_frames;
	uint32_t nr_frames;
	uint32_t mem_kind;
	uint64_t frame_size;
	uint32_t mem_dev;
	uint32_t transport;
	const char *cuda_library;
	uint32_t promote_ms;
	uint32_t reserved0;
	uint64_t reserved[3];
};

/**
 * kva_open() - open an arena.
 * @opts:	how; see struct kva_open_opts.
 * @arena:	out: the new handle, for kva_close().
 *
 * Device mode opens the device node read-write and attaches to the arena
 * named by @opts->name; the frame size, count and kind come from the
 * module.  Embedded mode makes a new in-process arena of
 * @opts->nr_frames frames of @opts->frame_size bytes.  kva_arena_info()
 * reports which was chosen and why.
 *
 * Thread safety: may be called from any thread.
 *
 * Return: 0, or
 *  -EINVAL   bad option, unknown flag, $KVA_MODE or $KVA_TRANSPORT not
 *            understood, no arena name in device mode
 *  -ENODEV   device mode forced but the node is missing or is not a
 *            kvarena device
 *  -EPROTO   the module speaks another ABI version
 *  -ENOENT   no arena of that name (device mode)
 *  -EOPNOTSUPP a file arena (KVARENA_MEM_FILE): a lower tier's frames on
 *            a disk, which no sequence maps (device mode); or io_uring
 *            asked for (KVA_TRANSPORT_URING, $KVA_TRANSPORT=uring) where
 *            there is none for kvarena: a kernel before 5.19, io_uring
 *            switched off (the default falls back to ioctl() there, and
 *            kva_arena_info() says why)
 *  -ENODATA  the arena's memory is still being registered (device mode):
 *            try again
 *  -ENOSPC   @min_frames cannot be guaranteed (device mode)
 *  -ELIBACC  the CUDA driver library could not be loaded
 *  -ELIBBAD  it lacks an entry point the backend needs
 *  -ENOMEM, or another error from the module or the CUDA driver.
 */
int kva_open(const struct kva_open_opts *opts, struct kva_arena **arena);

/**
 * kva_close() - release an arena handle: free every sequence still open
 * (their struct kva_seq pointers become invalid), return every frame,
 * release the address ranges and, in device mode, detach.
 *
 * Thread safety: no other call may use @arena, or any of its sequences,
 * during or after this call.
 */
void kva_close(struct kva_arena *arena);

/**
 * struct kva_arena_info - what kva_open() chose.
 * @mode:		KVA_MODE_DEVICE or KVA_MODE_EMBEDDED.
 * @backend:		enum kva_backend.
 * @transport:		enum kva_transport in use (NONE when embedded).
 * @mode_reason:	a short human-readable reason for @mode, e.g.
 *			"/dev/kvarena absent" or "KVA_MODE=embedded".
 * @name:		the arena's name.
 * @frame_size:		bytes per frame.
 * @nr_frames:		frames in the arena.
 * @client_id:		device mode: the module's client id; 0 otherwise.
 * @mem_dev:		CUDA device ordinal, as this process sees it.
 * @flags:		KVA_OPEN_* in effect, and KVA_INFO_* the backend found.
 * @backend_error:	the last raw error the backend saw (a CUresult for
 *			CUDA, an errno for host), 0 if none: -EIO and friends
 *			lose detail, this keeps it.
 * @mem_uuid:		CUDA arenas: the GPU's UUID (cuDeviceGetUuid), the
 *			same in every process whatever CUDA_VISIBLE_DEVICES
 *			says; zero for host arenas.
 * @domain:		device mode: the client's cache domain (a
 *			KVARENA_DOMAIN() of the module's header): the clients
 *			its published prefixes are shared with.  0 otherwise.
 * @transport_reason:	a short human-readable reason for @transport, e.g.
 *			"KVA_TRANSPORT=ioctl" or, where the kernel has no
 *			io_uring commands for kvarena, why.
 */
struct kva_arena_info {
	uint32_t mode;
	uint32_t backend;
	uint32_t transport;
	uint32_t flags;
	const char *mode_reason;
	char name[32];
	uint64_t frame_size;
	uint32_t nr_frames;
	uint32_t client_id;
	uint32_t mem_dev;
	int32_t backend_error;
	uint8_t mem_uuid[16];
	uint64_t domain;
	const char *transport_reason;
};

/** kva_arena_info() - describe @arena.  Thread-safe.  Return: 0. */
int kva_arena_info(struct kva_arena *arena, struct kva_arena_info *info);

/**
 * kva_arena_set_stream() - order the teardown of sequences with the
 * engine's GPU work on @stream (a CUstream; NULL: the legacy stream).
 *
 * cuMemUnmap() does not wait for the device, so no range the engine's
 * kernels may still read is unmapped before the device is done with it.
 * Without a stream named, kva_seq_free() and kva_seq_shrink() wait for
 * the whole context (cuCtxSynchronize) and unmap.  With @stream, they
 * record an event on it and return without waiting; a thread of the
 * arena waits for the event, unmaps and only then returns the frames to
 * the arena, so no kernel queued before reads a frame that someone else
 * has taken.  Until then the frames count as held; a grow that finds the
 * arena full waits for the pending teardowns before failing, and
 * kva_arena_sync() waits for all of them.  A copy-on-write copies on
 * @stream and waits for it on the calling thread before it swaps the
 * slot (see Documentation/libkvarena.rst).  @stream must stay valid
 * until kva_close() or the next call; kva_close() waits for the whole
 * context.
 *
 * Thread safety: takes the arena's lock.
 * Return: 0, -EINVAL, -EOPNOTSUPP (host backend) or -EAGAIN (no thread).
 */
int kva_arena_set_stream(struct kva_arena *arena, void *stream);

/**
 * kva_arena_sync() - wait until every teardown kva_seq_free() left to
 * the arena's thread is done (frames returned, ranges unmapped).
 * Thread safety: takes the arena's lock.  Return: 0 or -EINVAL.
 */
int kva_arena_sync(struct kva_arena *arena);

/*
 * Names for the enums, for messages: "device", "host", "uring", ...
 * (static strings; any thread).
 */
const char *kva_mode_name(enum kva_mode mode);
const char *kva_backend_name(enum kva_backend backend);
const char *kva_transport_name(enum kva_transport transport);

/**
 * struct kva_stat - the three levels of accounting.
 *
 * Arena-wide (all clients; from the module in device mode):
 * @frame_size:		bytes per frame.
 * @nr_frames:		capacity now (an administrator may resize the arena:
 *			kvarenactl resize).
 * @nr_free:		frames nobody holds.
 * @nr_held:		frames held.
 * @nr_clients:		clients attached (1 when embedded).
 * @filled_tokens:	tokens of KV state held, as last reported by the
 *			clients (kva_sync_usage()).
 * @filled_bytes:	bytes of frames holding that state.
 * @alloc_calls:	frame allocation commands that reached the allocator.
 * @free_calls:		frame free commands.
 *
 * This handle:
 * @held:		frames this handle holds.
 * @nr_seqs:		sequences open.
 * @seq_tokens:		sum of the sequences' tokens (a token of a forked
 *			prefix counts once per sequence).
 * @my_filled_tokens:	distinct tokens in this handle's frames (a token
 *			in a frame shared by forked sequences counts once):
 *			what kva_sync_usage() reports.
 * @my_filled_bytes:	their bytes.
 *
 * The prefix cache (arena-wide):
 * @nr_cached:		published frames nobody holds, reclaimable.
 * @nr_published:	frames under a key, held or cached.
 * @cache_hits:		keys LOOKUP found, ever.
 * @cache_misses:	keys LOOKUP was given and did not return, ever.
 *
 * Resizing (arena-wide; 0 from a module without it):
 * @nr_shrinking:	frames a shrink of the arena still waits for: it
 *			takes each frame any client frees until it has as
 *			many.  While it waits the arena is under pressure
 *			(kva_poll_fd()); an engine that frees this many
 *			frames (preempting, dropping its own cache) ends it.
 * @max_frames:		the most frames the arena may be grown to.
 */
struct kva_stat {
	uint64_t frame_size;
	uint32_t nr_frames;
	uint32_t nr_free;
	uint32_t nr_held;
	uint32_t nr_clients;
	uint64_t filled_tokens;
	uint64_t filled_bytes;
	uint64_t alloc_calls;
	uint64_t free_calls;
	uint32_t held;
	uint32_t nr_seqs;
	uint64_t seq_tokens;
	uint64_t my_filled_tokens;
	uint64_t my_filled_bytes;
	uint32_t nr_cached;
	uint32_t nr_published;
	uint64_t cache_hits;
	uint64_t cache_misses;
	uint32_t nr_shrinking;
	uint32_t max_frames;
};

/**
 * kva_stat() - fill @st.  Thread-safe.
 *
 * Return: 0, or an error from the module's STAT command.
 */
int kva_stat(struct kva_arena *arena, struct kva_stat *st);

/**
 * kva_sync_usage() - report this handle's filled tokens and bytes to the
 * module (SET_USAGE), so that the arena's "filled" level is current.
 *
 * Every call that maps or returns frames reports usage by itself; the fast
 * path of kva_seq_grow() does not, so an engine calls this once per
 * scheduler step (or less often) to account for tokens appended in
 * between.  Embedded arenas keep the figures for kva_stat().
 *
 * A CUDA arena in device mode: once an administrator's shrink has taken
 * frames out of the arena, this call also lets go of the imports of the
 * frames the handle does not hold (it keeps them otherwise, so that a
 * frame it gets again costs no import), so that the GPU memory of the
 * frames taken out is freed and they may take new memory (the module's
 * KVARENA_IOC_IMPORTS_DROPPED).  Thread-safe.
 *
 * Return: 0, or the module's error.
 */
int kva_sync_usage(struct kva_arena *arena);

/**
 * kva_poll_fd() - a file descriptor to watch for memory pressure: poll()
 * reports POLLPRI on it while the arena's free and reclaimable frames are
 * below its low watermark (kva_arena_params.low_watermark), so that a
 * scheduler can stop admitting before an allocation fails.  After a call
 * failed with -ENOSPC, poll() for POLLOUT sleeps until the frames that
 * the refused allocation asked for could be had (the module reports
 * POLLOUT at all other times): retry then, and wait again if another
 * process took them first.  Use it with
 * poll(), select() or epoll only: it belongs to @arena and stays open
 * until kva_close(); never read, write or close it.  Thread-safe.
 *
 * Return: the descriptor, -EOPNOTSUPP for an embedded arena (it has no
 * watermark: kva_stat() tells its free frames), -EINVAL for NULL.
 */
int kva_poll_fd(struct kva_arena *arena);

/* kva_alloc() flags */
#define KVA_ALLOC_PARTIAL	(1u << 0)	/* take what can be had */

/**
 * kva_alloc() - take @count frames outside any sequence, writing their
 * handles (generation << 32 | frame index) to @handles.
 *
 * All or nothing, unless KVA_ALLOC_PARTIAL: then as many as available, at
 * least one.  The frames are not mapped; they count as held.  Thread-safe.
 *
 * Return: the number of frames taken, or -EINVAL (count 0 or above 65536,
 * unknown flag), -ENOSPC.
 */
int kva_alloc(struct kva_arena *arena, uint64_t *handles, unsigned int count,
	      unsigned int flags);

/**
 * kva_free() - return frames taken with kva_alloc().
 *
 * All or nothing: -ESTALE (freed since), -ENOENT (not held), -EBUSY (the
 * frame belongs to a sequence), -EINVAL (count 0, a handle twice); nothing
 * is freed then.  Thread-safe.
 *
 * Return: 0 or a negative errno.
 */
int kva_free(struct kva_arena *arena, const uint64_t *handles,
	     unsigned int count);

/**
 * kva_scrub() - clear a CUDA arena's frames between cache domains: the
 * chore of the arena's owner that the module cannot do for GPU memory.
 *
 * A frame that one cache domain freed reaches another domain only once
 * it is cleared (Documentation/kvarena.rst, "Cache domains").  This takes
 * up to @max frames that the module wants cleared, waiting up to
 * @timeout_ms for some when none is wanted yet, clears them on the GPU
 * (cuMemsetD8Async(), waited for before anything is unmapped) and gives
 * them back clean, so that an allocation of another domain can have them.
 * `kvarenactl scrub` calls it in a loop; an owner's engine may too.
 *
 * @arena must be a device-mode CUDA arena opened by the arena's owner or
 * an administrator.  Frames this call could not clear go back uncleared
 * for the next call (or another scrubber) to take first; nobody else gets
 * them.  Thread safety: one kva_scrub() at a time per arena; other calls
 * may run meanwhile (the wait holds no lock).
 *
 * Return: the number of frames cleared (0: none was wanted within the
 * wait), or -EOPNOTSUPP (not a CUDA arena in the module: the module
 * clears host frames itself), -EPERM (neither the owner nor an
 * administrator), -EINVAL (@max 0 or above 65536), -EINTR (a signal
 * ended the wait), or an error from the CUDA driver.
 */
int kva_scrub(struct kva_arena *arena, unsigned int max, int timeout_ms);

/**
 * struct kva_tier_counts - what kva_tier_agent() copied, added to by
 * each call.
 * @demoted:	frames copied down to the lower tier.
 * @promoted:	frames copied back up.
 * @failed:	copies given back failed (each frame is where it was).
 * @copy_ns:	time spent mapping, copying and unmapping (not waiting
 *		for copies to be wanted), in nanoseconds.
 * @reserved:	left as it is.
 */
struct kva_tier_counts {
	uint64_t demoted;
	uint64_t promoted;
	uint64_t failed;
	uint64_t copy_ns;
	uint64_t reserved;
};

/**
 * kva_tier_agent() - copy frames between an arena and its lower tier:
 * the agent's chore (Documentation/kvarena.rst, "A lower tier").
 *
 * Takes up to @max of the module's copies (KVARENA_IOC_TIER), waiting up
 * to @timeout_ms for the first when none is waiting, makes them and
 * gives them back: a cached frame of @arena demoted into a frame of
 * @lower, or a frame of @lower promoted into a fresh frame of @arena for
 * a caller of KVARENA_IOC_PROMOTE.  For a CUDA arena each batch is
 * imported, mapped (the frame read from read-only) and copied with
 * cuMemcpyDtoHAsync()/cuMemcpyHtoDAsync() on a stream of the agent's own,
 * waited for before anything is unmapped or given back; the imports are
 * let go at once (as kva_scrub()'s are).  A host arena's frames are
 * copied with memcpy().  A copy either lands whole or is given back
 * failed; killing the caller mid-copy loses nothing (the module undoes
 * its copies).
 *
 * @arena must be a device-mode arena opened by its owner or an
 * administrator, @lower a device-mode host arena opened by the same
 * process that is @arena's lower tier (kvarenactl tier), of the same
 * frame size.  Both handles are the agent's own (kva_open() for it
 * alone): a handle the process also serves from would have its
 * kva_seq_attach_prefix() wait, under the handle's lock, for a PROMOTE
 * that this call, blocked on the same lock, could not copy.  The wait
 * for copies holds no lock; the copies hold both handles' locks.
 * @counts (may be NULL) is added to.  One kva_tier_agent() at a time per
 * pair.
 *
 * Return: the number of copies given back (made or failed; 0: none was
 * waiting within the wait), or a negative errno when the last take or
 * give-back failed, whatever batches were done before it (@counts says
 * what they did): -EINVAL (@max 0 or above 65536, @lower not a host
 * arena of the same frame size, or no longer @arena's lower tier),
 * -EOPNOTSUPP (an embedded arena, or @arena has no lower tier), -EPERM
 * (neither the owner nor an administrator), -ESHUTDOWN (the agent's
 * client was evicted), -EINTR (a signal ended the wait), -EIO (every
 * copy of a batch failed, the CUDA driver's errors among them: the next
 * take would hand the same frames back).  Copies the module did not
 * take back (counted failed) end undone when @arena is closed.
 */
int kva_tier_agent(struct kva_arena *arena, struct kva_arena *lower,
		   unsigned int max, int timeout_ms,
		   struct kva_tier_counts *counts);

/*
 * Gangs: tensor parallelism (Documentation/libkvarena.rst, "Gangs").
 *
 * A gang is an arena over N member arenas, one per GPU of a
 * tensor-parallel engine (kvarenactl gang); frame i of the gang is frame
 * i of every member, and each member holds its rank's slice of every
 * token's KV.  The engine's scheduler opens the gang with kva_open() as
 * any arena and keeps the block tables: with kva_alloc()/kva_free(), or
 * with sequences that track frames without mapping them (their range is
 * reserved but not memory: touching it faults; kva_seq_handles() gives
 * the table; growth, shrinking, prefixes and forks work, but what needs
 * the bytes - a copy-on-write copy, a swap - is -EOPNOTSUPP: the ranks'
 * to do).  Each worker process opens the gang as rank r of that
 * client with kva_rank_open() and keeps, per request, a sequence that
 * mirrors the scheduler's block table: kva_seq_mirror() maps exactly the
 * handles the scheduler's message names, in the rank's member, so that
 * the attention kernels run over one contiguous range per request on
 * every rank.  The ranks take no frames and send nothing back: the
 * module checks each handle against the scheduler's holdings, and revokes
 * every rank's mapping of a frame when the scheduler frees it or dies.
 */

struct kva_seq;

/* kva_gang_token() flags */
#define KVA_GANG_RANKS_FATAL	(1u << 0) /* a rank's death evicts the
					   * scheduler's client: every frame
					   * back, every rank's mapping gone */

/**
 * kva_gang_token() - the secret a rank needs to join this client.
 * @arena:	a device-mode handle of a gang (the scheduler's).
 * @flags:	KVA_GANG_RANKS_FATAL or 0; the last call's flags hold.
 * @token:	out: the token, the same for the handle's life.
 * @nr_members:	out (may be NULL): the gang's members, i.e. its ranks.
 *
 * Pass the token and kva_arena_info()'s client_id to the rank processes
 * (as the engine passes them its configuration).
 * Thread safety: takes the arena's lock.
 * Return: 0, -EINVAL, -EOPNOTSUPP (not a gang, or an embedded arena),
 * -ESHUTDOWN (evicted).
 */
int kva_gang_token(struct kva_arena *arena, uint32_t flags, uint64_t *token,
		   uint32_t *nr_members);

/**
 * struct kva_rank_opts - kva_rank_open()'s arguments.
 * @name:	the gang.
 * @label:	the rank's label (kvarenactl), may be NULL.
 * @device:	device node (NULL: $KVA_DEVICE, then /dev/kvarena).
 * @client_id:	the scheduler's client (its kva_arena_info().client_id).
 * @rank:	this process's rank: the member whose memory it maps.
 * @token:	the scheduler's kva_gang_token().
 * @flags:	KVA_OPEN_POPULATE only.
 * @reserved0:	must be zero.
 * @cuda_library: CUDA members: the driver to load, as for kva_open()
 *		(NULL: $KVA_CUDA_LIBRARY, then libcuda.so.1).
 * @reserved:	must be zero.
 */
struct kva_rank_opts {
	const char *name;
	const char *label;
	const char *device;
	uint32_t client_id;
	uint32_t rank;
	uint64_t token;
	uint32_t flags;
	uint32_t reserved0;
	const char *cuda_library;
	uint64_t reserved[3];
};

/**
 * kva_rank_open() - open a gang as rank @opts->rank of a scheduler's
 * client: a handle that takes no frames and maps, in its member, what
 * the client holds.
 * @opts:	see struct kva_rank_opts.
 * @arena:	out: the handle, for kva_close().
 *
 * kva_seq_create() and kva_seq_mirror() work on it; kva_alloc(),
 * kva_free(), kva_seq_grow() past the mapped frames, kva_seq_fork(),
 * publishing and kva_sync_usage() are -EPERM (the scheduler's to do).
 * kva_arena_info() reports the client's id.
 *
 * Return: 0, or -EINVAL (bad options), -ENODEV, -EPROTO, -ENOENT (no such
 * gang, or no client of that id, token and rank), -EPERM (the client is
 * another user's), -EACCES, -EOPNOTSUPP (members of a kind this library
 * cannot map), -ENOMEM.
 */
int kva_rank_open(const struct kva_rank_opts *opts, struct kva_arena **arena);

/**
 * kva_seq_mirror() - make a rank's sequence map exactly @handles[0..@n)
 * as its frames 0..n-1, with @tokens tokens filled: the scheduler's
 * block table of the request, as its message gives it.
 * @seq:	a sequence of a kva_rank_open() handle.
 * @handles:	the frames, in range order; each held by the client.
 * @n:		how many (0 unmaps everything).
 * @tokens:	tokens filled, at most @n * tokens_per_frame and
 *		max_tokens.
 *
 * Frames already mapped at their slot stay as they are; the others are
 * mapped (a published frame read-only) and slots past @n unmapped, so
 * that a decode step that adds a frame costs one FRAME_FD and one
 * mapping.  On error the slots before the first that changed are as
 * they were and the others are unmapped (the sequence then has those
 * frames mapped and no more tokens than they hold): mirror again.  The
 * rank writes its slice of the new tokens' KV through the range.
 * Thread safety: takes the arena's lock; @seq must not be in use
 * elsewhere.
 *
 * Return: 0, -EINVAL, -EOPNOTSUPP (not a rank's sequence), the module's
 * answer for a handle the client does not hold (-ENOENT, -ESTALE),
 * -ENOLINK (the client is gone), or the backend's error.
 */
int kva_seq_mirror(struct kva_seq *seq, const uint64_t *handles,
		   unsigned int n, uint64_t tokens);

/*
 * Scrubbing a gang of CUDA arenas, whose frames' memory is its ranks', on
 * their GPUs: the scheduler takes the frames the module wants cleared,
 * every rank clears its member's memory of them, and the scheduler gives
 * them back (Documentation/kvarena.rst, "Gangs").  kva_scrub() does all
 * three for a solo CUDA arena.
 */

/* kva_scrub_give() flags */
#define KVA_SCRUB_UNCLEARED	(1u << 0)	/* not cleared: the next take gets them */

/**
 * kva_scrub_take() - take up to @max frames that the module wants cleared.
 * @arena:	a device-mode handle of the arena's owner or an
 *		administrator: a gang's scheduler (or a solo CUDA arena's
 *		client, clearing by its own means).
 * @handles:	out: the frames taken.
 * @max:	1 to 65536.
 * @timeout_ms:	how long to wait for frames when none is wanted yet (0
 *		or below: not at all).
 *
 * The frames are nobody's until kva_scrub_give(): the ranks of @arena
 * may map them (kva_rank_clear()), no other client gets them.
 *
 * Return: the number taken (0: none wanted within the wait), -EINVAL,
 * -EPERM (a rank, or neither the owner nor an administrator),
 * -EOPNOTSUPP (not CUDA memory in the module), -EINTR.
 */
int kva_scrub_take(struct kva_arena *arena, uint64_t *handles,
		   unsigned int max, int timeout_ms);

/**
 * kva_rank_clear() - zero this rank's member's memory of frames its
 * scheduler took with kva_scrub_take(), on the member's GPU, waited for,
 * and let go of their imports.
 * @rank:	a kva_rank_open() handle of a gang of CUDA arenas.
 * @handles:	the frames, as kva_scrub_take() gave them.
 * @n:		1 to 65536.
 *
 * The rank's sequences must not map them any more (kva_seq_mirror()
 * without them): the module refuses the give-back while anything holds
 * a frame's memory.
 *
 * Return: 0, -EINVAL, -EPERM (not a rank), -EOPNOTSUPP (host members:
 * the module clears those), the module's answer for a frame the
 * scheduler is not scrubbing (-ENOENT), -ENOLINK, or the driver's error.
 */
int kva_rank_clear(struct kva_arena *rank, const uint64_t *handles,
		   unsigned int n);

/**
 * kva_scrub_give() - give frames taken with kva_scrub_take() back: clean,
 * or with KVA_SCRUB_UNCLEARED as they were, for the next take.
 * @arena:	the handle that took them.
 * @handles:	the frames.
 * @n:		1 to 65536.
 * @flags:	0 or KVA_SCRUB_UNCLEARED.
 *
 * All or nothing.
 *
 * Return: @n, -EINVAL, -ENOENT (a frame this handle did not take),
 * -ESTALE, -EBUSY (a frame's memory is still mapped or imported
 * somewhere: a rank's sequence, an fd kept open, a live importer).
 */
int kva_scrub_give(struct kva_arena *arena, const uint64_t *handles,
		   unsigned int n, unsigned int flags);

/**
 * struct kva_arena_params - a new arena in the module (kva_arena_create()).
 * @name:		1-31 characters of [A-Za-z0-9_.-].
 * @nr_frames:		frames.
 * @mem_kind:		enum kva_backend.
 * @frame_size:		bytes per frame (power of two, >= 4096).
 * @mem_dev:		CUDA device ordinal.
 * @low_watermark:	pressure threshold in frames, 0 for none.
 * @bytes_per_token:	for the tools' token figures, 0 if unknown.
 * @flags:		KVA_OPEN_PREFAULT, KVA_OPEN_HUGETLB (host).
 * @max_frames:		the most frames the arena may be resized to (0:
 *			@nr_frames).  Host: the memfd covers them all, its
 *			pages allocated for @nr_frames only.  CUDA: memory
 *			for @nr_frames only.
 * @device:		device node (NULL: $KVA_DEVICE, then /dev/kvarena).
 * @cuda_library:	as for kva_open().
 * @reserved:		must be zero.
 */
struct kva_arena_params {
	const char *name;
	uint32_t nr_frames;
	uint32_t mem_kind;
	uint64_t frame_size;
	uint32_t mem_dev;
	uint32_t low_watermark;
	uint64_t bytes_per_token;
	uint32_t flags;
	uint32_t max_frames;
	const char *device;
	const char *cuda_library;
	uint64_t reserved[4];
};

/**
 * kva_arena_create() - create an arena in the module and provide its
 * memory (needs CAP_SYS_ADMIN).
 *
 * Host: one memfd of nr_frames * frame_size bytes, registered as the
 * backing of every frame.  CUDA: one cuMemCreate() allocation per frame,
 * exported as a POSIX file descriptor and registered frame by frame.  The
 * module keeps references to the memory, so it outlives this process;
 * kva_arena_destroy() drops them.  If any step fails the arena is
 * destroyed again.  Thread-safe.
 *
 * Return: 0, or -ENODEV (no device), -EEXIST, -EPERM, -EINVAL, -ENOMEM,
 * -ENOSPC (hugetlb pages), or an error from the module or CUDA driver.
 */
int kva_arena_create(const struct kva_arena_params *params);

/**
 * kva_arena_destroy() - destroy the module's arena @params->name (only
 * @name and @device are used).  -EBUSY while clients are attached.
 */
int kva_arena_destroy(const struct kva_arena_params *params);

/**
 * kva_geometry_explain() - check @g (kva_geometry_init() on a copy) and
 * describe it in @buf: its tokens per frame, bytes per token and unused
 * bytes per frame, or, when it is rejected, why, with the numbers (for
 * example the smallest frame size one token would fit in).
 *
 * Thread safety: touches only its arguments.
 *
 * Return: what kva_geometry_init() returns: 0, -EINVAL, or -E2BIG when one
 * token does not fit in a frame.
 */
int kva_geometry_explain(const struct kva_geometry *g, char *buf,
			 size_t size);

/**
 * struct kva_seq - one sequence: a contiguous virtual KV range.
 * @base:	start of the range: a host address for the host backend, a
 *		CUdeviceptr for CUDA.  Aligned to the frame size.  Token t of
 *		layer l is at base + kva_kv_offset(&geo, l, kv, h, t).
 * @tokens:	tokens filled.
 * @room:	tokens the sequence can reach through kva_seq_grow()'s fast
 *		path: frames are mapped and private up to here.
 * @max_tokens:	size of the reserved range, in tokens.
 * @geo:	the model geometry (kva_geometry_init() done).
 *
 * Allocated by kva_seq_create() and kva_seq_fork(); every field is
 * read-only to the caller.  The library keeps more state behind it.
 *
 * Copy-on-write contract.  After kva_seq_fork(), parent and child map the
 * same frames for the tokens they have in common; after
 * kva_seq_attach_prefix() or kva_seq_publish(), a sequence maps published
 * frames other processes may map too.  The library cannot trap stores, so
 * "first write" means the next kva_seq_grow() or kva_seq_grow_batch()
 * that covers a token in a shared or published frame: that call first
 * gives the sequence a private copy of the frame.  Hence:
 *   - write token t only after a grow has covered it (t < tokens), and
 *     only once; tokens already covered are read-only while any frame
 *     they live in may be shared (after a fork, a publish or an attach,
 *     or a shrink back into such a prefix);
 *   - a store made any other way into a shared frame is seen by every
 *     sequence sharing it, and into a published frame faults: published
 *     frames are mapped read-only (except in the sequence that published
 *     it, whose mapping predates the publication).
 */
struct kva_seq {
	uint64_t base;
	uint64_t tokens;
	uint64_t room;
	uint64_t max_tokens;
	struct kva_geometry geo;
};

/**
 * kva_seq_create() - reserve a virtual range for @max_tokens tokens of
 * geometry @g; no frames are mapped yet.
 *
 * @g->frame_size must equal the arena's frame size; the derived fields of
 * @g are filled in the sequence's copy.  A range freed earlier may be
 * reused.  Thread-safe.
 *
 * Return: 0, or -EINVAL (@max_tokens 0, geometry invalid or for another
 * frame size), -E2BIG (one token does not fit in a frame), -ENODATA (an
 * accounting-only device arena: its frames have no memory to map; raw
 * kva_alloc() works), -ENOMEM, or the backend's error reserving the
 * range.
 */
int kva_seq_create(struct kva_arena *arena, const struct kva_geometry *g,
		   uint64_t max_tokens, struct kva_seq **seq);

/**
 * struct kva_grow - one sequence's part of kva_seq_grow_batch().
 * @seq:	the sequence.
 * @tokens:	tokens to add to @seq->tokens (may be 0).
 * @ahead:	tokens of room to map beyond the new end (capped at
 *		max_tokens), so that later kva_seq_grow() calls stay on the
 *		fast path.  Frames already mapped count toward it.
 */
struct kva_grow {
	struct kva_seq *seq;
	uint64_t tokens;
	uint64_t ahead;
};

/**
 * kva_seq_grow_batch() - grow @nr sequences of @arena at once.
 *
 * All the frames every sequence needs (new ones, and private copies of
 * shared frames about to be written) are taken in one frame operation:
 * one ALLOC command, sent with the usage report in one io_uring_enter
 * when the arena uses io_uring.  Then each sequence's new frames are
 * mapped as one run.  All or nothing: on failure every frame is returned,
 * every mapping undone, and no sequence changes.
 * Thread safety: takes the arena's lock; the sequences must not be in use
 * elsewhere.
 *
 * Return: 0, or -EINVAL (a sequence twice or from another arena),
 * -EFBIG (a sequence would pass its max_tokens), -ENOSPC (not enough
 * frames for all), -ESHUTDOWN (device mode: an administrator evicted this
 * client, whose frames and mappings are all gone: close the arena), or
 * the backend's error.
 */
int kva_seq_grow_batch(struct kva_arena *arena, const struct kva_grow *reqs,
		       unsigned int nr);

/**
 * kva_seq_grow_slow() - kva_seq_grow() beyond the fast path (the same
 * contract; called by the inline function).
 */
int kva_seq_grow_slow(struct kva_seq *seq, uint64_t n);

/**
 * kva_seq_grow() - add @n tokens to @seq.
 *
 * Inline fast path: when the tokens fit in @seq->room it only moves
 * @seq->tokens (no lock, no system call).  Otherwise it is
 * kva_seq_grow_batch() of this one sequence with no look-ahead.
 *
 * Thread safety: the sequence's thread; the slow path takes the arena's
 * lock.
 *
 * Return: 0, or an error of kva_seq_grow_batch(); on error @seq is as it
 * was.
 */
static inline int kva_seq_grow(struct kva_seq *seq, uint64_t n)
{
	uint64_t t = seq->tokens;

	/* room >= tokens always holds. */
	if (__builtin_expect(n <= seq->room - t, 1)) {
		/*
		 * A plain store: kva_sync_usage() may read it from another
		 * thread, so it must not tear.
		 */
		__atomic_store_n(&seq->tokens, t + n, __ATOMIC_RELAXED);
		return 0;
	}
	return kva_seq_grow_slow(seq, n);
}

/**
 * kva_seq_shrink() - cut @seq back to @tokens tokens and return the frames
 * beyond the one holding the last token (mapped-ahead frames included).
 *
 * Thread safety: takes the arena's lock.
 *
 * Return: 0, -EINVAL if @tokens exceeds the sequence's tokens, or the
 * backend's error unmapping (then nothing changed).
 */
int kva_seq_shrink(struct kva_seq *seq, uint64_t tokens);

/**
 * kva_seq_swap_bytes() - bytes of host memory kva_seq_swap_out() needs for
 * @seq now: its frames up to its tokens, whole.  Arithmetic only.
 */
static inline uint64_t kva_seq_swap_bytes(const struct kva_seq *seq)
{
	return kva_frames_for(&seq->geo, seq->tokens) * seq->geo.frame_size;
}

/**
 * kva_seq_swap_out() - swap a preempted sequence out: copy the KV of its
 * tokens to host memory @buf (@size bytes, at least kva_seq_swap_bytes()),
 * then give its frames back (kva_seq_shrink() to 0).  The sequence keeps
 * its range; kva_seq_swap_in() brings the KV back, into new frames, when
 * the engine resumes it - instead of computing its prefill again.
 *
 * The copy reads what is in the frames: the work that wrote them must be
 * done (on a CUDA arena, the copy waits for the arena's stream,
 * kva_arena_set_stream(), or the whole context).  Frames the sequence
 * shares (a fork, an attached prefix) are copied too, and stay with
 * whoever else holds them.  CUDA: cuMemcpyDtoH(), waited for; @buf is
 * best pinned (cuMemHostAlloc) for speed, plain memory works.
 *
 * Thread safety: takes the arena's lock; @seq must not be in use
 * elsewhere.
 *
 * Return: 0, with *@tokens the tokens saved; -EINVAL (NULL, @size too
 * small); or the backend's error (nothing is given back then).
 */
int kva_seq_swap_out(struct kva_seq *seq, void *buf, uint64_t size,
		     uint64_t *tokens);

/**
 * kva_seq_swap_in() - the other half: grow @seq, which must hold no
 * token, to @tokens with new frames and copy their KV back from @buf, as
 * kva_seq_swap_out() saved it (kva_seq_swap_bytes() of @tokens tokens).
 * All or nothing: -ENOSPC (or any error) and the sequence holds no frame.
 *
 * Thread safety: as kva_seq_swap_out().
 *
 * Return: 0, -EINVAL (NULL, @tokens 0 or beyond max_tokens), -EBUSY (the
 * sequence has tokens), -ENOSPC, or the backend's error.
 */
int kva_seq_swap_in(struct kva_seq *seq, const void *buf, uint64_t tokens);

/**
 * kva_seq_fork() - make @child, a new sequence with @parent's geometry,
 * max_tokens and tokens, mapping @parent's frames (no copy, no new
 * frames).  The partial last frame is copied when either side next grows
 * into it; see the copy-on-write contract at struct kva_seq.  A shared
 * frame returns to the arena when the last sequence using it lets it go.
 *
 * Thread safety: takes the arena's lock; @parent must not be in use
 * elsewhere.
 *
 * Return: 0, or -ENOMEM, or the backend's error.
 */
int kva_seq_fork(struct kva_seq *parent, struct kva_seq **child);

/**
 * kva_seq_free() - unmap @seq, drop its frames (each returns to the arena
 * unless a forked sequence still uses it) and free it.  Its range may be
 * kept reserved for a later kva_seq_create().  If the module refuses to
 * take frames back, they stay with the handle and are retried with the
 * next frame operation and at kva_close().  NULL is ignored.  After
 * kva_arena_set_stream(), the unmap and the return happen on the arena's
 * thread once the stream has passed this point.
 * Thread safety: takes the arena's lock.
 */
void kva_seq_free(struct kva_seq *seq);

/**
 * kva_seq_handles() - copy the handles of the frames mapped behind @seq,
 * in range order, to @handles (at most @count of them).
 *
 * Thread safety: takes the arena's lock.
 *
 * Return: the number of frames mapped (which may exceed @count).
 */
int kva_seq_handles(struct kva_seq *seq, uint64_t *handles,
		    unsigned int count);

/*
 * Prefix sharing.
 *
 * A frame full of tokens can be published under a key, and any client of
 * the arena - this process or another one - can look the key up and map
 * the frame at the start of a new sequence instead of computing and
 * storing that KV again.  Keys chain: key i is the SHA-256 of key i - 1,
 * a namespace the caller supplies and frame i's token ids, so one key
 * names a frame's KV together with everything before it, and a chain is
 * looked up front to back (the longest leading run present comes back).
 * In device mode a published frame outlives the process that made it:
 * once nobody holds it the module keeps it cached, and reclaims it,
 * oldest first, only when an allocation needs the memory
 * (Documentation/kvarena.rst).  Published frames are read-only: they are
 * mapped so, and a sequence that would write into one copies it first.
 */

#define KVA_KEY_LEN	32

/** struct kva_key - a prefix key (kva_prefix_keys()). */
struct kva_key {
	uint8_t b[KVA_KEY_LEN];
};

/**
 * kva_prefix_keys() - the key chain of the full frames of a token
 * sequence.
 * @g:		the model geometry (its five input fields; checked as by
 *		kva_geometry_init()).  It is hashed into the first key, so
 *		that sequences of other layouts never share frames.
 * @ns:		the caller's namespace: bytes that name everything besides
 *		the tokens that decides their KV - model and revision,
 *		tokenizer, adapter, position encoding, KV quantisation.
 *		NULL when @ns_len is 0.
 * @ns_len:	its length (< 2^32).
 * @tokens:	token ids, @nr_tokens of them.
 * @nr_tokens:	how many.
 * @keys:	out: one key per full frame, at most @max_keys.
 * @max_keys:	room in @keys.
 *
 * With T = tokens per frame and LE32/LE64 little-endian encodings:
 *
 *   root   = SHA-256("kvarena prefix v1" || LE64(frame_size) ||
 *            LE32(layers) || LE32(kv_heads) || LE32(head_dim) ||
 *            LE32(dtype))
 *   key[i] = SHA-256(key[i - 1] (root for i = 0) || LE32(ns_len) || ns ||
 *            LE32(T) || LE32(tokens[i*T]) || ... ||
 *            LE32(tokens[i*T + T - 1]))
 *
 * so any program can compute the same keys.  A partial last frame has no
 * key: only full frames are published.
 * Thread safety: touches only its arguments.
 *
 * Return: the number of keys written, min(@nr_tokens / T, @max_keys), or
 * -EINVAL (a NULL argument with a non-zero length, a bad geometry),
 * -E2BIG (one token does not fit in a frame).
 */
int kva_prefix_keys(const struct kva_geometry *g, const void *ns,
		    size_t ns_len, const uint32_t *tokens, uint64_t nr_tokens,
		    struct kva_key *keys, unsigned int max_keys);

/**
 * kva_seq_publish() - publish the first @nr frames of @seq under
 * @keys[0..nr).
 *
 * The frames must be full (@nr * tokens per frame <= @seq->tokens).  The
 * sequence keeps them, and from now on they are read-only: a write into
 * one of them after a shrink goes through a copy (the copy-on-write
 * contract at struct kva_seq).  A key already published with another
 * frame keeps that frame - the first publication wins - and this
 * sequence's frame stays private to it.  Publishing a frame again under
 * the same key changes nothing.  In device mode the frames stay in the
 * arena's cache after this process lets go of them or exits.
 *
 * Thread safety: takes the arena's lock; @seq must not be in use
 * elsewhere.
 *
 * Return: the number of frames newly published (0 to @nr), or -EINVAL
 * (frames not full, NULL argument, @nr above 65536), -EBUSY (a frame is
 * published under another key already), -ENOMEM, or the module's error.
 * On error nothing is published.
 */
int kva_seq_publish(struct kva_seq *seq, const struct kva_key *keys,
		    unsigned int nr);

/**
 * kva_seq_publish_tokens() - kva_seq_publish(), with the frames' token ids
 * for the arena's KV events.
 * @seq:	as for kva_seq_publish().
 * @keys:	as for kva_seq_publish().
 * @nr:		as for kva_seq_publish().
 * @tokens:	@nr * tokens per frame token ids: those the @nr frames hold,
 *		in order (the ones kva_prefix_keys() hashed).
 *
 * In device mode each frame newly published is a STORED event of the
 * arena (KVARENA_IOC_EVENTS_FD; kvarenactl events), and these ids go into
 * it, for KV-cache-aware routers that index prefixes by their tokens.
 * The module neither checks them against the keys nor keeps them.  An
 * embedded arena has no events and ignores them.
 *
 * Return: as for kva_seq_publish(); also -EINVAL for a NULL @tokens, or
 * more than 4096 tokens per frame or 2^20 in all (device mode: the
 * module's limits, KVARENA_EVENT_MAX_TOKENS and
 * KVARENA_PUBLISH_MAX_TOKENS).
 */
int kva_seq_publish_tokens(struct kva_seq *seq, const struct kva_key *keys,
			   unsigned int nr, const uint32_t *tokens);

/**
 * kva_seq_attach_prefix() - look @keys up and map the frames found at the
 * start of @seq.
 *
 * @seq must be empty: no tokens, nothing mapped (as kva_seq_create()
 * makes it).  The longest leading run of @keys published in the arena -
 * by this process or any other - is held and mapped, read-only, at the
 * start of the range, and @seq->tokens becomes run * tokens per frame:
 * attention reads those tokens like any other KV, and the next grow maps
 * a new frame after them.  Keys beyond what max_tokens holds in whole
 * frames are not looked up.  In device mode the keys the arena lacks are
 * also asked of its lower tier (PROMOTE) and of the node's remote tier
 * agent (Documentation/remote.rst; KVA_OPEN_NO_REMOTE), each within its
 * own wait.  To recompute the last token of a prompt
 * found whole (for its logits), shrink by one token and grow again: the
 * grow copies the last frame first.  The frames count against this
 * handle's max; they return to the arena (and its cache) when the last
 * sequence using them lets go.
 *
 * Thread safety: takes the arena's lock; @seq must not be in use
 * elsewhere.
 *
 * Return: the number of frames attached (0 when the first key is not
 * there), or -EINVAL (@seq not empty, NULL argument), -ENOSPC (the
 * frames would take this handle past its max, or the cached ones among
 * them are more than it may take), -ENOMEM, or the backend's or module's
 * error.  On error @seq is unchanged.
 */
int kva_seq_attach_prefix(struct kva_seq *seq, const struct kva_key *keys,
			  unsigned int nr);

/**
 * kva_seq_kv_addr() - address of element 0 of head @head of the K
 * (@kv == KVA_K) or V cache of layer @layer at token @token of @seq.
 * Arithmetic only: any thread that may read @seq.
 */
static inline uint64_t kva_seq_kv_addr(const struct kva_seq *seq,
				       uint32_t layer, uint32_t kv,
				       uint32_t head, uint64_t token)
{
	return seq->base + kva_kv_offset(&seq->geo, layer, kv, head, token);
}

/** kva_seq_kv_ptr() - kva_seq_kv_addr() as a pointer (host backend). */
static inline void *kva_seq_kv_ptr(const struct kva_seq *seq, uint32_t layer,
				   uint32_t kv, uint32_t head, uint64_t token)
{
	return (void *)(uintptr_t)kva_seq_kv_addr(seq, layer, kv, head, token);
}

#ifdef __cplusplus
}
#endif

#endif /* KVARENA_H */
