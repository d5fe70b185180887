#!/usr/bin/python3
"""Prefix caching in kiln-serve: requests that share a long system prompt, with and without the
cache, same artifact, same prompts, same run.

    bench/prefix_cache.py --artifact /tmp/tl/tl16.kiln      # a paged artifact (kiln-compile --kv-block-size 16)
    bench/prefix_cache.py --artifact build/test/decode/llama_paged16.kiln --system-len 256

Starts `kiln-serve --model bench=ARTIFACT` twice, once with the prefix cache (the default) and once
with --no-prefix-cache. Each time it sends, one after another, --requests streaming requests whose
prompts are the same --system-len tokens followed by --suffix-len tokens of their own, greedy, each
to exactly --max-tokens tokens. The first request computes the system prompt in both servers; the
figures are over the others: time to first token (send to first token event) median and worst,
with the ratio of the medians, and whether every request decoded the same tokens in both servers.
Standard library only."""
import argparse, json, os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from serve import REPO, one_request, start_server  # noqa: E402


def run(a, cached):
    cmd = [os.path.join(a.bin, "kiln-serve"), "--model", "bench=" + a.artifact, "--max-sequences", "1",
           "--threads", str(a.threads), "--port", "0", "--no-request-log", "--prefill-chunk", str(a.prefill_chunk)]
    if not cached:
        cmd.append("--no-prefix-cache")
    proc, port = start_server(cmd)
    try:
        system = [(7 + 31 * i) % a.vocab for i in range(a.system_len)]
        out = []
        for r in range(a.requests):
            suffix = [(3 + 17 * i + 101 * r) % a.vocab for i in range(a.suffix_len)]
            out.append(one_request("127.0.0.1", port, None, system + suffix, a.max_tokens))
        return out
    finally:
        proc.terminate()
        proc.wait(60)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    p.add_argument("--artifact", default=os.path.join(REPO, "build", "test", "decode", "llama_paged16.kiln"))
    p.add_argument("--requests", type=int, default=9, help="the first fills the cache (default 9: 1 + 8)")
    p.add_argument("--system-len", type=int, default=512)
    p.add_argument("--suffix-len", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=8)
    p.add_argument("--vocab", type=int, default=500, help="prompt ids are below this")
    p.add_argument("--threads", type=int, default=0, help="kernel threads (0: all cores)")
    p.add_argument("--prefill-chunk", type=int, default=0, help="kiln-serve --prefill-chunk (0: whole prompts)")
    a = p.parse_args()
    with_cache = run(a, True)
    without = run(a, False)
    same = [x["ids"] == y["ids"] for x, y in zip(with_cache, without)]
    ttft = lambda rs: [r["ttft"] * 1e3 for r in rs[1:]]
    med_with, med_without = statistics.median(ttft(with_cache)), statistics.median(ttft(without))
    print(json.dumps({"artifact": os.path.basename(a.artifact), "requests": a.requests, "system_len": a.system_len,
                      "suffix_len": a.suffix_len, "max_tokens": a.max_tokens, "threads": a.threads,
                      "cores": os.cpu_count()}))
    print("%-16s %14s %14s %18s" % ("", "first req ms", "ttft p50 ms", "ttft worst ms"))
    for name, rs in (("prefix cache", with_cache), ("no prefix cache", without)):
        print("%-16s %14.1f %14.1f %18.1f" % (name, rs[0]["ttft"] * 1e3, statistics.median(ttft(rs)), max(ttft(rs))))
    print("time to first token after the first request: %.2fx sooner with the cache; identical tokens: %s" % (
        med_without / med_with, "yes" if all(same) else "NO (requests %s)" % [i for i, s in enumerate(same) if not s]))
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
