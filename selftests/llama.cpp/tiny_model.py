#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tiny_model.py - a llama-architecture GGUF with random weights, small
enough to write in under a second and to serve on a CPU at once, for the
llama.cpp integration tests (selftests/llama.cpp/run.sh).

    PYTHONPATH=LLAMA_DIR/gguf-py tiny_model.py OUT.gguf [--layers N]
        [--embd N] [--heads N] [--kv-heads N] [--ctx N] [--seed N]

The writer is the llama.cpp tree's own gguf-py (the reader the server uses
comes from the same tree); numpy makes the weights.  The vocabulary is a
SentencePiece one: <unk>, <s>, </s>, the 256 byte tokens and the printable
ASCII characters, so that any prompt tokenizes.  Weights are N(0, 0.02)
(norms 1): the model's output is noise, but a deterministic function of
the prompt, which is what the tests compare.
"""
import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("tiny_model.py: gguf-py not found: set PYTHONPATH=LLAMA_DIR/gguf-py")


def vocab():
    toks, scores, types = [], [], []

    def add(text, score, kind):
        toks.append(text.encode())
        scores.append(score)
        types.append(kind)

    add("<unk>", 0.0, gguf.TokenType.UNKNOWN)
    add("<s>", 0.0, gguf.TokenType.CONTROL)
    add("</s>", 0.0, gguf.TokenType.CONTROL)
    for b in range(256):
        add("<0x%02X>" % b, 0.0, gguf.TokenType.BYTE)
    # SentencePiece marks a word start with U+2581
    add("\u2581", -1.0, gguf.TokenType.NORMAL)
    for c in range(0x21, 0x7f):
        add(chr(c), -2.0, gguf.TokenType.NORMAL)
        add("\u2581" + chr(c), -1.5, gguf.TokenType.NORMAL)
    return toks, scores, types


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--kv-heads", type=int, default=1)
    ap.add_argument("--ff", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=32768)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.embd % a.heads or a.heads % a.kv_heads:
        sys.exit("tiny_model.py: heads must divide embd, kv-heads heads")

    rng = np.random.default_rng(a.seed)
    head_dim = a.embd // a.heads
    kv = a.kv_heads * head_dim
    toks, scores, types = vocab()
    nv = len(toks)

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("kvarena-tiny")
    w.add_context_length(a.ctx)
    w.add_embedding_length(a.embd)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ff)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(nv)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)

    def rand(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    ones = np.ones(a.embd, dtype=np.float32)
    # numpy shapes are ggml's ne reversed: (rows = outputs, inputs)
    w.add_tensor("token_embd.weight", rand(nv, a.embd))
    for i in range(a.layers):
        p = "blk.%d." % i
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "attn_q.weight", rand(a.embd, a.embd))
        w.add_tensor(p + "attn_k.weight", rand(kv, a.embd))
        w.add_tensor(p + "attn_v.weight", rand(kv, a.embd))
        w.add_tensor(p + "attn_output.weight", rand(a.embd, a.embd))
        w.add_tensor(p + "ffn_norm.weight", ones)
        w.add_tensor(p + "ffn_gate.weight", rand(a.ff, a.embd))
        w.add_tensor(p + "ffn_up.weight", rand(a.ff, a.embd))
        w.add_tensor(p + "ffn_down.weight", rand(a.embd, a.ff))
    w.add_tensor("output_norm.weight", ones)
    w.add_tensor("output.weight", rand(nv, a.embd))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
