// SPDX-License-Identifier: GPL-2.0
/*
 * Prints, as JSON, the size and field offsets of every struct the Python
 * binding mirrors with ctypes, and the ioctl numbers it computes, as the
 * C compiler sees them in lib/include/kvarena.h and the uapi header.
 * test_embedded.py compares them with the binding's.
 */
#include <stddef.h>
#include <stdio.h>

#include <kvarena.h>
#include <linux/kvarena.h>

static int first_struct = 1, first_field;

#define BEGIN(s)							\
	do {								\
		printf("%s\n  \"%s\": {\"size\": %zu, \"fields\": {",	\
		       first_struct ? "" : ",", #s, sizeof(struct s));	\
		first_struct = 0;					\
		first_field = 1;					\
	} while (0)
#define F(s, f)								\
	do {								\
		printf("%s\"%s\": %zu", first_field ? "" : ", ", #f,	\
		       offsetof(struct s, f));				\
		first_field = 0;					\
	} while (0)
#define END() printf("}}")

int main(void)
{
	printf("{\"structs\": {");
	BEGIN(kva_open_opts);
	F(kva_open_opts, mode); F(kva_open_opts, flags);
	F(kva_open_opts, name); F(kva_open_opts, label);
	F(kva_open_opts, device); F(kva_open_opts, min_frames);
	F(kva_open_opts, max_frames); F(kva_open_opts, nr_frames);
	F(kva_open_opts, mem_kind); F(kva_open_opts, frame_size);
	F(kva_open_opts, mem_dev); F(kva_open_opts, transport);
	F(kva_open_opts, cuda_library); F(kva_open_opts, promote_ms);
	F(kva_open_opts, reserved0); F(kva_open_opts, reserved);
	END();
	BEGIN(kva_arena_info);
	F(kva_arena_info, mode); F(kva_arena_info, backend);
	F(kva_arena_info, transport); F(kva_arena_info, flags);
	F(kva_arena_info, mode_reason); F(kva_arena_info, name);
	F(kva_arena_info, frame_size); F(kva_arena_info, nr_frames);
	F(kva_arena_info, client_id); F(kva_arena_info, mem_dev);
	F(kva_arena_info, backend_error); F(kva_arena_info, mem_uuid);
	F(kva_arena_info, domain); F(kva_arena_info, transport_reason);
	END();
	BEGIN(kva_stat);
	F(kva_stat, frame_size); F(kva_stat, nr_frames); F(kva_stat, nr_free);
	F(kva_stat, nr_held); F(kva_stat, nr_clients);
	F(kva_stat, filled_tokens); F(kva_stat, filled_bytes);
	F(kva_stat, alloc_calls); F(kva_stat, free_calls); F(kva_stat, held);
	F(kva_stat, nr_seqs); F(kva_stat, seq_tokens);
	F(kva_stat, my_filled_tokens); F(kva_stat, my_filled_bytes);
	F(kva_stat, nr_cached); F(kva_stat, nr_published);
	F(kva_stat, cache_hits); F(kva_stat, cache_misses);
	F(kva_stat, nr_shrinking); F(kva_stat, max_frames);
	END();
	BEGIN(kva_arena_params);
	F(kva_arena_params, name); F(kva_arena_params, nr_frames);
	F(kva_arena_params, mem_kind); F(kva_arena_params, frame_size);
	F(kva_arena_params, mem_dev); F(kva_arena_params, low_watermark);
	F(kva_arena_params, bytes_per_token); F(kva_arena_params, flags);
	F(kva_arena_params, max_frames); F(kva_arena_params, device);
	F(kva_arena_params, cuda_library); F(kva_arena_params, reserved);
	END();
	BEGIN(kva_rank_opts);
	F(kva_rank_opts, name); F(kva_rank_opts, label);
	F(kva_rank_opts, device); F(kva_rank_opts, client_id);
	F(kva_rank_opts, rank); F(kva_rank_opts, token);
	F(kva_rank_opts, flags); F(kva_rank_opts, reserved0);
	F(kva_rank_opts, cuda_library); F(kva_rank_opts, reserved);
	END();
	BEGIN(kva_geometry);
	F(kva_geometry, layers); F(kva_geometry, kv_heads);
	F(kva_geometry, head_dim); F(kva_geometry, dtype);
	F(kva_geometry, frame_size); F(kva_geometry, bytes_per_token);
	F(kva_geometry, tokens_per_frame); F(kva_geometry, head_stride);
	END();
	BEGIN(kva_seq);
	F(kva_seq, base); F(kva_seq, tokens); F(kva_seq, room);
	F(kva_seq, max_tokens); F(kva_seq, geo);
	END();
	BEGIN(kva_grow);
	F(kva_grow, seq); F(kva_grow, tokens); F(kva_grow, ahead);
	END();
	BEGIN(kvarena_version);
	F(kvarena_version, abi_version); F(kvarena_version, reserved0);
	F(kvarena_version, features); F(kvarena_version, reserved);
	END();
	BEGIN(kvarena_stat);
	F(kvarena_stat, name); F(kvarena_stat, flags); F(kvarena_stat, index);
	F(kvarena_stat, frame_size); F(kvarena_stat, nr_frames);
	F(kvarena_stat, nr_free); F(kvarena_stat, nr_held);
	F(kvarena_stat, nr_cached); F(kvarena_stat, nr_backed);
	F(kvarena_stat, nr_reserved); F(kvarena_stat, nr_clients);
	F(kvarena_stat, low_watermark); F(kvarena_stat, state);
	F(kvarena_stat, mem_kind); F(kvarena_stat, mem_dev);
	F(kvarena_stat, peak_held); F(kvarena_stat, filled_bytes);
	F(kvarena_stat, filled_tokens); F(kvarena_stat, bytes_per_token);
	F(kvarena_stat, alloc_calls); F(kvarena_stat, free_calls);
	F(kvarena_stat, alloc_failures); F(kvarena_stat, frames_allocated);
	F(kvarena_stat, frames_freed); F(kvarena_stat, owner_uid);
	F(kvarena_stat, owner_gid); F(kvarena_stat, mode);
	F(kvarena_stat, client_min_limit); F(kvarena_stat, client_max_default);
	F(kvarena_stat, client_max_limit); F(kvarena_stat, mem_uuid);
	F(kvarena_stat, nr_published); F(kvarena_stat, cache_domains);
	F(kvarena_stat, cache_hits); F(kvarena_stat, cache_misses);
	F(kvarena_stat, cache_reclaims); F(kvarena_stat, domain);
	F(kvarena_stat, nr_dirty); F(kvarena_stat, dom_cached);
	F(kvarena_stat, frames_cleared); F(kvarena_stat, domain_cached_max);
	F(kvarena_stat, nr_quarantined); F(kvarena_stat, max_frames);
	F(kvarena_stat, nr_absent); F(kvarena_stat, nr_shrinking);
	F(kvarena_stat, tier); F(kvarena_stat, frames_retired);
	F(kvarena_stat, tier_name);
	END();
	BEGIN(kvarena_client_info);
	F(kvarena_client_info, client_id); F(kvarena_client_info, pid);
	F(kvarena_client_info, label); F(kvarena_client_info, min_frames);
	F(kvarena_client_info, max_frames); F(kvarena_client_info, held);
	F(kvarena_client_info, shared); F(kvarena_client_info, peak);
	F(kvarena_client_info, uid); F(kvarena_client_info, filled_bytes);
	F(kvarena_client_info, filled_tokens);
	F(kvarena_client_info, alloc_calls);
	F(kvarena_client_info, free_calls);
	F(kvarena_client_info, alloc_failures);
	F(kvarena_client_info, charged); F(kvarena_client_info, dmem_refused);
	F(kvarena_client_info, domain);
	END();
	BEGIN(kvarena_clients);
	F(kvarena_clients, name); F(kvarena_clients, clients);
	F(kvarena_clients, count); F(kvarena_clients, nr_clients);
	F(kvarena_clients, flags); F(kvarena_clients, reserved0);
	F(kvarena_clients, reserved);
	END();
	BEGIN(kvarena_events_fd);
	F(kvarena_events_fd, name); F(kvarena_events_fd, flags);
	F(kvarena_events_fd, fd); F(kvarena_events_fd, reserved);
	END();
	BEGIN(kvarena_event);
	F(kvarena_event, size); F(kvarena_event, type);
	F(kvarena_event, flags); F(kvarena_event, seq);
	F(kvarena_event, time_ns); F(kvarena_event, lost);
	F(kvarena_event, client_id); F(kvarena_event, frame);
	F(kvarena_event, nr_tokens); F(kvarena_event, reserved);
	F(kvarena_event, key); F(kvarena_event, parent);
	END();
	BEGIN(kvarena_gang_create);
	F(kvarena_gang_create, name); F(kvarena_gang_create, members);
	F(kvarena_gang_create, nr_members); F(kvarena_gang_create, flags);
	F(kvarena_gang_create, reserved);
	END();
	printf("},\n \"ioctls\": {\"KVARENA_IOC_VERSION\": %lu, "
	       "\"KVARENA_IOC_STAT\": %lu, \"KVARENA_IOC_CLIENTS\": %lu, "
	       "\"KVARENA_IOC_EVENTS_FD\": %lu, "
	       "\"KVARENA_IOC_GANG_CREATE\": %lu}}\n",
	       (unsigned long)KVARENA_IOC_VERSION,
	       (unsigned long)KVARENA_IOC_STAT,
	       (unsigned long)KVARENA_IOC_CLIENTS,
	       (unsigned long)KVARENA_IOC_EVENTS_FD,
	       (unsigned long)KVARENA_IOC_GANG_CREATE);
	return 0;
}
