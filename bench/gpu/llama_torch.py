"""Torch anchor for a llama-family decode step (RMSNorm, RoPE-free like the team's anchor, GQA, SiLU-gated
MLP, untied head), random weights, static KV cache: one decode step at position POS, eager and replayed
as a CUDA graph. Derived from the team's shared/gpu-runs/2026-12-04-h200/llama_decode.py; the shapes come
from a generation.json written by test/models/gen_lm.py or bench/gpu/make_large_decoder.py (default:
TinyLlama-1.1B's). TF32 off.

    python3 bench/gpu/llama_torch.py [--config generation.json] [--dtypes fp16,f32] [--pos 64] [--iters 50] [--ffn N]

Prints one line per dtype:
    RESULT llama <dtype> eager_ms=<median> graph_ms=<median> weight_bytes=<bytes read per token>
        hbm_bound_ms=<weight_bytes / 4.8 TB/s>
"""
import argparse, json, statistics, time
import torch, torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
HBM = 4.8e12  # H200 bytes/s


def run(cfg, dt, name, pos_, iters):
    H, L, NH, KV = cfg["hidden_size"], cfg["num_layers"], cfg["num_heads"], cfg["num_kv_heads"]
    D, FF, V = cfg["head_dim"], cfg.get("intermediate_size", 5632), cfg["vocab_size"]
    CAP = max(512, pos_ + 1)
    g = torch.Generator(device="cuda").manual_seed(0)
    W = lambda *s: (torch.randn(*s, device="cuda", generator=g, dtype=torch.float32) * 0.02).to(dt)
    layers = [dict(qkv=W(H + 2 * KV * D, H), o=W(H, H), gu=W(2 * FF, H), d=W(H, FF),
                   n1=torch.ones(H, device="cuda", dtype=dt), n2=torch.ones(H, device="cuda", dtype=dt))
              for _ in range(L)]
    emb, head, nf = W(V, H), W(V, H), torch.ones(H, device="cuda", dtype=dt)
    kc = torch.zeros(L, 1, KV, CAP, D, device="cuda", dtype=dt); vc = torch.zeros_like(kc)
    tok = torch.tensor([[5]], device="cuda"); pos = torch.tensor([pos_], device="cuda")
    nbytes = sum(t.numel() * t.element_size() for l in layers for t in l.values()) + head.numel() * head.element_size()

    def rms(x, w):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * w

    def step():
        x = emb[tok[0]][None]
        for i, l in enumerate(layers):
            qkv = rms(x, l["n1"]) @ l["qkv"].t()
            q, k, v = qkv.split([H, KV * D, KV * D], -1)
            q = q.view(1, 1, NH, D).transpose(1, 2); k = k.view(1, 1, KV, D).transpose(1, 2)
            v = v.view(1, 1, KV, D).transpose(1, 2)
            kc[i].index_copy_(2, pos, k); vc[i].index_copy_(2, pos, v)
            kk = kc[i][:, :, :pos_ + 1].repeat_interleave(NH // KV, 1)
            vv = vc[i][:, :, :pos_ + 1].repeat_interleave(NH // KV, 1)
            a = F.scaled_dot_product_attention(q, kk, vv).transpose(1, 2).reshape(1, 1, H)
            x = x + a @ l["o"].t()
            gu = rms(x, l["n2"]) @ l["gu"].t(); gg, uu = gu.split(FF, -1)
            x = x + (F.silu(gg) * uu) @ l["d"].t()
        return rms(x, nf) @ head.t()

    def bench(f):
        for _ in range(5):
            f()
        torch.cuda.synchronize(); t = []
        for _ in range(iters):
            t0 = time.perf_counter(); f(); torch.cuda.synchronize(); t.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(t)

    with torch.no_grad():
        e = bench(step)
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        gr = torch.cuda.CUDAGraph()
        with torch.cuda.graph(gr):
            step()
        gg = bench(gr.replay)
    print("RESULT llama %s eager_ms=%.4f graph_ms=%.4f weight_bytes=%d hbm_bound_ms=%.4f torch=%s" % (
        name, e, gg, nbytes, nbytes / HBM * 1e3, torch.__version__), flush=True)
    del layers, emb, head, kc, vc
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config")
    ap.add_argument("--dtypes", default="fp16,f32")
    ap.add_argument("--pos", type=int, default=64)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--ffn", type=int, default=0, help="MLP width when the config has no intermediate_size")
    a = ap.parse_args()
    cfg = dict(hidden_size=2048, num_layers=22, num_heads=32, num_kv_heads=4, head_dim=64,
               intermediate_size=5632, vocab_size=32000)
    if a.config:
        cfg.update(json.load(open(a.config)))
    if a.ffn:
        cfg["intermediate_size"] = a.ffn
    for name in a.dtypes.split(","):
        run(cfg, {"f32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name], name, a.pos, a.iters)


if __name__ == "__main__":
    main()
