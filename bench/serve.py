#!/usr/bin/python3
"""Load benchmark of kiln-serve on loopback: N concurrent streaming clients against one stream
alone, same server, same prompts, same run.

    bench/serve.py --bin build/bin                                  # tiny llama (test/decode)
    bench/serve.py --bin build/bin --clients 16 --max-sequences 8 --max-tokens 128
    bench/serve.py --url http://127.0.0.1:8080 --model lm           # a server already running
    bench/serve.py --artifact build/test/decode/llama_paged16.kiln --kv-cache-blocks 64   # paged cache

Starts `kiln-serve --model bench=ARTIFACT --max-sequences S --port 0` (unless --url), warms it up,
then runs two phases, each with fixed prompts (ids (1 + 13*i + 7*r) % 500, --prompt-len long, a
different one per request) decoded greedily to exactly --max-tokens tokens (ignore_eos):

  single:     one client, --requests requests one after another
  concurrent: --clients clients at once, --requests requests each

Every request streams (SSE, return_token_ids) so that the client timestamps each token. Reported
per phase: requests, tokens, wall time, aggregate tokens/s (all new tokens / wall time), time to
first token p50/p99 (send to first token event) and inter-token latency p50/p99 (between token
events of one stream), and the concurrent phase's speed-up over the single stream. Standard
library only; bounded by --requests and --max-tokens (and a 600 s guard)."""
import argparse, http.client, json, os, re, statistics, subprocess, sys, threading, time
from urllib.parse import urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def one_request(host, port, model, prompt, max_tokens):
    c = http.client.HTTPConnection(host, port, timeout=600)
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "stream": True,
            "return_token_ids": True}
    if model:
        body["model"] = model
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError("HTTP %d: %s" % (r.status, r.read()[:200]))
    stamps, tokens, ids = [], 0, []
    for raw in r:
        line = raw.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        ev = json.loads(line[6:])
        n = sum(len(ch.get("token_ids", [])) for ch in ev.get("choices", []))
        for ch in ev.get("choices", []):
            ids += ch.get("token_ids", [])
        if n:
            stamps.append(time.perf_counter())
            tokens += n
    c.close()
    return {"ttft": stamps[0] - t0 if stamps else float("nan"),
            "itl": [b - a for a, b in zip(stamps, stamps[1:])], "tokens": tokens, "ids": ids,
            "end": time.perf_counter()}


def start_server(cmd):
    """Starts kiln-serve (cmd with --port 0) and waits until it is ready: (process, port)."""
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        m = re.search(r'"event":"listening".*"port":(\d+)', line)
        if m:
            port = int(m.group(1))
        if '"event":"ready"' in line:
            break
        if '"event":"startup_failed"' in line:
            sys.exit("kiln-serve failed: " + line)
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port


def prompt_of(n, prompt_len):
    """The n-th fixed prompt."""
    return [(1 + 13 * i + 7 * n) % 500 for i in range(prompt_len)]


def phase(host, port, model, clients, requests, prompt_len, max_tokens, prompts=None):
    """prompt_len: a length, or a function of the prompt's number giving it."""
    """`clients` clients at once, `requests` each; client k sends prompts k*requests ... (or the
    given list of prompt numbers, one client)."""
    results, errors = [], []
    lock = threading.Lock()

    def client(k):
        for n in prompts if prompts is not None else range(k * requests, (k + 1) * requests):
            prompt = prompt_of(n, prompt_len(n) if callable(prompt_len) else prompt_len)
            try:
                res = one_request(host, port, model, prompt, max_tokens)
                res["prompt"] = n
                with lock:
                    results.append(res)
            except Exception as e:
                with lock:
                    errors.append(str(e))
    t0 = time.perf_counter()
    ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    tokens = sum(r["tokens"] for r in results)
    itl = [x for r in results for x in r["itl"]]
    ttft = [r["ttft"] for r in results]
    return {"clients": clients, "requests": len(results), "errors": len(errors), "tokens": tokens,
            "ids": {r["prompt"]: r["ids"] for r in results},
            "wall_s": round(wall, 3), "tokens_per_s": round(tokens / wall, 1) if wall > 0 else 0,
            "ttft_ms_p50": round(pct(ttft, 50) * 1e3, 2), "ttft_ms_p99": round(pct(ttft, 99) * 1e3, 2),
            "itl_ms_p50": round(pct(itl, 50) * 1e3, 3), "itl_ms_p99": round(pct(itl, 99) * 1e3, 3),
            "first_error": errors[0] if errors else None}


class MetricsSampler:
    """Polls /metrics every 50 ms and keeps the peak of each kiln:kv_cache_* gauge and of
    kiln:num_requests_running."""

    def __init__(self, host, port):
        self.host, self.port, self.peaks, self.done = host, port, {}, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.wait(0.05):
            try:
                c = http.client.HTTPConnection(self.host, self.port, timeout=10)
                c.request("GET", "/metrics")
                text = c.getresponse().read().decode()
                c.close()
            except OSError:
                continue
            for line in text.splitlines():
                m = re.match(r'(kiln:(?:kv_cache_\w+|num_requests_running))\{[^}]*\} ([0-9.e+-]+)$', line)
                if m:
                    self.peaks[m.group(1)] = max(self.peaks.get(m.group(1), 0.0), float(m.group(2)))

    def stop(self):
        self.done.set()
        self.thread.join()
        return {k.split(":", 1)[1]: v for k, v in sorted(self.peaks.items())}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    p.add_argument("--artifact", default=os.path.join(REPO, "build", "test", "decode", "llama.kiln"))
    p.add_argument("--url", help="benchmark a running server instead of starting one")
    p.add_argument("--model", default=None, help="model name (default: the only one)")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--requests", type=int, default=4, help="requests per client")
    p.add_argument("--max-sequences", type=int, default=None, help="decode slots (default: --clients)")
    p.add_argument("--threads", type=int, default=0, help="kernel threads of the model (0: all cores)")
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--prompt-len-max", type=int, default=0,
                   help="mixed prompt lengths: the concurrent requests' prompts spread evenly from --prompt-len "
                        "to this (the single stream's take --prompt-len)")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--min-step-ms", type=float, default=0, help="kiln-serve --min-step-ms (emulated step time)")
    p.add_argument("--kv-cache-blocks", type=int, default=0,
                   help="kiln-serve --kv-cache-blocks (a paged artifact's pool; 0: the default)")
    p.add_argument("--check-alone", action="store_true",
                   help="afterwards decode every concurrent request's prompt alone and compare the token ids")
    p.add_argument("--metrics", action="store_true",
                   help="report the server's KV cache gauges (kiln:kv_cache_*) sampled during the concurrent phase")
    p.add_argument("--json", action="store_true", help="print one JSON object only")
    a = p.parse_args()

    proc = None
    if a.url:
        u = urlparse(a.url)
        host, port = u.hostname, u.port or 80
    else:
        cmd = [os.path.join(a.bin, "kiln-serve"), "--model", "bench=" + a.artifact,
               "--max-sequences", str(a.max_sequences or a.clients), "--max-queue", str(a.clients * 2),
               "--threads", str(a.threads), "--port", "0", "--no-request-log"]
        if a.min_step_ms:
            cmd += ["--min-step-ms", str(a.min_step_ms)]
        if a.kv_cache_blocks:
            cmd += ["--kv-cache-blocks", str(a.kv_cache_blocks)]
        proc, port = start_server(cmd)
        host = "127.0.0.1"
    try:
        guard = threading.Timer(600, lambda: os._exit(3))
        guard.daemon = True
        guard.start()
        phase(host, port, a.model, min(a.clients, 2), 1, a.prompt_len, 8)  # warm-up
        single = phase(host, port, a.model, 1, a.requests, a.prompt_len, a.max_tokens)
        total = a.clients * a.requests
        mixed = lambda n: a.prompt_len + (a.prompt_len_max - a.prompt_len) * n // max(1, total - 1)
        conc_len = mixed if a.prompt_len_max else a.prompt_len
        sampler = MetricsSampler(host, port) if a.metrics else None
        conc = phase(host, port, a.model, a.clients, a.requests, conc_len, a.max_tokens)
        kv = sampler.stop() if sampler else None
        alone = None
        if a.check_alone:
            alone = phase(host, port, a.model, 1, 0, conc_len, a.max_tokens, prompts=sorted(conc["ids"]))
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)
    out = {"config": {"clients": a.clients, "requests_per_client": a.requests, "prompt_len": a.prompt_len,
                      "prompt_len_max": a.prompt_len_max,
                      "max_tokens": a.max_tokens, "max_sequences": a.max_sequences or a.clients, "threads": a.threads,
                      "min_step_ms": a.min_step_ms, "kv_cache_blocks": a.kv_cache_blocks,
                      "artifact": os.path.basename(a.artifact) if not a.url else None, "cores": os.cpu_count()},
           "single": single, "concurrent": conc, "kv_cache": kv,
           "speedup_tokens_per_s": round(conc["tokens_per_s"] / single["tokens_per_s"], 2) if single["tokens_per_s"] else None}
    if alone is not None:
        same = sum(1 for n, ids in conc["ids"].items() if alone["ids"].get(n) == ids)
        compared = len(conc["ids"])
        out["tokens_equal_alone"] = "%d of %d" % (same, compared)
    for r in (single, conc):
        r.pop("ids")
    if a.json:
        print(json.dumps(out))
        return 0 if alone is None or same == compared else 1
    print(json.dumps(out["config"]))
    print("%-11s %8s %7s %8s %10s %9s %9s %9s %9s %6s" % ("phase", "requests", "tokens", "wall_s", "tokens/s",
                                                          "ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "errors"))
    for name, r in (("single", single), ("concurrent", conc)):
        print("%-11s %8d %7d %8.3f %10.1f %9.2f %9.2f %9.3f %9.3f %6d" % (
            name, r["requests"], r["tokens"], r["wall_s"], r["tokens_per_s"], r["ttft_ms_p50"], r["ttft_ms_p99"],
            r["itl_ms_p50"], r["itl_ms_p99"], r["errors"]))
    print("concurrent / single tokens/s: %s  (latencies in ms)" % out["speedup_tokens_per_s"])
    if kv:
        print("KV cache during the concurrent phase (peaks): " + json.dumps(kv))
    if alone is not None:
        print("concurrent requests' tokens equal to decoding each alone: " + out["tokens_equal_alone"])
        if same != compared:
            return 1
    return 1 if single["errors"] or conc["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
