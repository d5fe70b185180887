"""Torch anchor for kiln's bench GPT (bench/models/gen_bench_models.py "gpt": hidden 256, 4 heads of 64,
FFN 1024, 4 layers, vocab 4096, seq 128, batch 1, pre-LN, tanh GELU, untied head), forward pass, eager
and replayed as a CUDA graph, on the GPU gpu-check.sh runs on. Derived from the team's
shared/gpu-runs/2026-12-04-h200/gpt_torch.py (same model and timing loop); TF32 off, like kiln's f32.

    python3 bench/gpu/gpt_torch.py [--dtypes f32,bf16] [--iters 200]

Prints one line per dtype:  RESULT gpt <dtype> eager_ms=<median> graph_ms=<median>
"""
import argparse, statistics, time
import torch, torch.nn as nn, torch.nn.functional as F

SEQ, HID, HEADS, FFN, LAYERS, VOCAB = 128, 256, 4, 1024, 4, 4096
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Block(nn.Module):
    def __init__(s):
        super().__init__(); s.ln1 = nn.LayerNorm(HID); s.qkv = nn.Linear(HID, 3 * HID); s.o = nn.Linear(HID, HID)
        s.ln2 = nn.LayerNorm(HID); s.fc = nn.Linear(HID, FFN); s.pr = nn.Linear(FFN, HID)

    def forward(s, x):
        q, k, v = s.qkv(s.ln1(x)).view(1, SEQ, 3, HEADS, HID // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(1, SEQ, HID)
        x = x + s.o(a)
        return x + s.pr(F.gelu(s.fc(s.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(s):
        super().__init__(); s.wte = nn.Embedding(VOCAB, HID); s.wpe = nn.Embedding(SEQ, HID)
        s.h = nn.ModuleList(Block() for _ in range(LAYERS)); s.ln = nn.LayerNorm(HID)
        s.head = nn.Linear(HID, VOCAB, bias=False)

    def forward(s, ids, pos):
        x = s.wte(ids) + s.wpe(pos)
        for b in s.h:
            x = b(x)
        return s.head(s.ln(x))


def bench(f, n):
    for _ in range(20):
        f()
    torch.cuda.synchronize(); t = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); torch.cuda.synchronize(); t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtypes", default="f32")
    ap.add_argument("--iters", type=int, default=200)
    a = ap.parse_args()
    torch.manual_seed(0)
    for name in a.dtypes.split(","):
        dt = {"f32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
        m = GPT().cuda().to(dt).eval()
        ids = torch.randint(0, VOCAB, (1, SEQ), device="cuda"); pos = torch.arange(SEQ, device="cuda")[None]
        with torch.no_grad():
            eager = bench(lambda: m(ids, pos), a.iters)
            g = torch.cuda.CUDAGraph(); s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    m(ids, pos)
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(g):
                m(ids, pos)
            graph = bench(g.replay, a.iters)
        print("RESULT gpt %s eager_ms=%.4f graph_ms=%.4f torch=%s" % (name, eager, graph, torch.__version__), flush=True)


if __name__ == "__main__":
    main()
