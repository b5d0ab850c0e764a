# SPDX-License-Identifier: MIT
"""PyTorch's scaled_dot_product_attention on the decode shapes of
gpu_check (Llama-3-8B: 32 query heads, 8 KV heads, head_dim 128, bf16),
as a peer: K/V bytes read per second, and that over the copy bandwidth
measured here the same way gpu_check measures it (read + written bytes of
a 2 GiB device-to-device copy).  Each case cycles through enough K/V
copies to read at least 1 GiB per pass.  One JSON object per line."""
import json

import torch
import torch.nn.functional as F

dev = "cuda"


def timed(fn, passes=20, warm=2):
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for i in range(passes + warm):
        a.record()
        fn()
        b.record()
        b.synchronize()
        if i >= warm:
            best = min(best, a.elapsed_time(b) * 1e-3)
    return best


def copy_gbs():
    x = torch.ones(2 << 30, dtype=torch.uint8, device=dev)
    y = torch.empty_like(x)
    t = timed(lambda: y.copy_(x), passes=10)
    return 2 * x.numel() / t / 1e9


def sdpa(q, k, v):
    try:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    except TypeError:  # before torch 2.5
        rep = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(
            q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1))


def main():
    copy = copy_gbs()
    print(json.dumps({"kind": "sdpa_copy", "torch": torch.__version__,
                      "copy_gbs": round(copy, 1)}), flush=True)
    for tokens, batch in ((1024, 1), (8192, 1), (8192, 16), (32768, 1),
                          (32768, 16)):
        per_call = batch * tokens * 8 * 128 * 2 * 2
        copies = max(1, min(32, (1 << 30) // per_call))
        kv = [(torch.randn(batch, 8, tokens, 128, dtype=torch.bfloat16,
                           device=dev),
               torch.randn(batch, 8, tokens, 128, dtype=torch.bfloat16,
                           device=dev)) for _ in range(copies)]
        q = torch.randn(batch, 32, 1, 128, dtype=torch.bfloat16, device=dev)

        def run():
            for k, v in kv:
                sdpa(q, k, v)

        t = timed(run)
        gbs = per_call * copies / t / 1e9
        print(json.dumps({"kind": "sdpa", "tokens": tokens, "batch": batch,
                          "dtype": "bf16", "layers": copies,
                          "us_per_layer": round(t * 1e6 / copies, 2),
                          "kv_gbs": round(gbs, 1),
                          "ratio": round(gbs / copy, 3)}), flush=True)
        del kv
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
