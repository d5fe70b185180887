#!/usr/bin/python3
"""End-to-end tests of kiln-serve over loopback, standard library only (plus numpy/onnx for the
CNN's reference tensors). Usage: serve_test.py --bin BUILD/bin --artifacts DIR --models test/models
DIR holds llama.kiln (--max-context 256) and cnn.kiln (test/CMakeLists.txt compiles them)."""
import argparse, http.client, json, os, re, signal, socket, subprocess, sys, tempfile, threading, time

import numpy as np
from onnx import TensorProto, numpy_helper

ARGS = None
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)
    return cond


class Server:
    def __init__(self, extra, models=None):
        self.trace_dir = tempfile.mkdtemp(prefix="kiln-serve-trace-")
        a = ARGS.artifacts
        if models is None:
            models = ["--model", "llama=" + os.path.join(a, "llama.kiln"),
                      "--tokenizer", os.path.join(ARGS.models, "lm/llama/tokenizer.json"),
                      "--chat-template", "chatml", "--max-sequences", "2", "--max-queue", "62", "--threads", "1",
                      "--model", "cnn=" + os.path.join(a, "cnn.kiln"), "--max-sequences", "1", "--threads", "1"]
        cmd = [os.path.join(ARGS.bin, "kiln-serve")] + models + [
               "--host", "127.0.0.1", "--port", "0", "--trace-dir", self.trace_dir,
               "--request-timeout", "20", "--max-body-bytes", "1000000", "--min-step-ms", "20"] + extra
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.port = None
        got = threading.Event()

        def reader():
            for line in self.proc.stderr:
                self.lines.append(line)
                if not line.startswith("{"):  # not a log line: a sanitizer's report, a crash
                    print("kiln-serve: " + line, end="", flush=True)
                m = re.search(r'"event":"listening".*"port":(\d+)', line)
                if m:
                    self.port = int(m.group(1))
                    got.set()
            got.set()
        threading.Thread(target=reader, daemon=True).start()
        if not got.wait(10) or self.port is None:
            raise RuntimeError("kiln-serve did not start: " + "".join(self.lines))
        deadline = time.time() + 20
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("kiln-serve never became healthy: " + "".join(self.lines))

    def conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, raw=None, headers=None):
        c = self.conn()
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        c.request(method, path, body=data, headers=headers or {"Content-Type": "application/json"})
        r = c.getresponse()
        out = r.read()
        c.close()
        return r.status, out, r

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body):
        st, out, r = self.request("POST", path, body)
        try:
            j = json.loads(out)
        except ValueError:
            j = None
        return st, j, r

    def metrics(self):
        st, out, _ = self.get("/metrics")
        assert st == 200
        values = {}
        for line in out.decode().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, v = line.rsplit(" ", 1)
            values[name] = float(v)
        return values

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def metric(m, name, model="llama", **labels):
    key = name + '{model_name="%s"' % model + "".join(',%s="%s"' % kv for kv in labels.items()) + "}"
    return m.get(key, 0.0)


def stream_events(resp):
    """Reads an SSE response to the end: the JSON events and whether [DONE] came."""
    events, done = [], False
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            done = True
            continue
        events.append(json.loads(line[6:]))
    return events, done


def kiln_run_ids(prompt_ids, n, sampling=(), artifact="llama.kiln"):
    out = subprocess.run([os.path.join(ARGS.bin, "kiln-run"), "generate", os.path.join(ARGS.artifacts, artifact),
                          "--prompt-ids", ",".join(map(str, prompt_ids)), "--max-new-tokens", str(n), "--ids",
                          "--no-eos", "--threads", "1"] + list(sampling),
                         capture_output=True, text=True, check=True).stdout
    return [int(t) for t in out.split()]


def open_stream(srv, body):
    """Sends a streaming request and returns (socket, file) once the response headers are in."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    f = s.makefile("rb")
    status = f.readline()
    while f.readline() not in (b"\r\n", b""):
        pass
    return s, f, status


def read_to_end(f):
    """The rest of a chunked response read from a raw socket: up to its last (empty) chunk, or
    until the server closes the connection."""
    out = b""
    while not out.endswith(b"\r\n0\r\n\r\n"):
        line = f.readline()
        if not line:
            break
        out += line
    return out.decode()


def ends_with_error_then_done(rest, code):
    events = [l for l in rest.splitlines() if l.startswith("data: ")]
    return len(events) >= 2 and '"code":%d' % code in events[-2] and events[-1] == "data: [DONE]"


def wait_for(pred, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def test_models_and_greedy(srv):
    st, out, _ = srv.get("/v1/models")
    ids = [m["id"] for m in json.loads(out)["data"]]
    check(st == 200 and ids == ["llama", "cnn"], "/v1/models lists both models: %s" % ids)
    # Greedy ids equal kiln-run generate's (the generator alone).
    want = kiln_run_ids([292], 8)
    st, j, r = srv.post("/v1/completions", {"model": "llama", "prompt": [292], "max_tokens": 8, "temperature": 0,
                                            "ignore_eos": True, "return_token_ids": True})
    check(st == 200, "greedy completion answers 200 (%s)" % st)
    check(j["choices"][0]["token_ids"] == want, "greedy ids %s equal kiln-run's %s" % (j["choices"][0]["token_ids"], want))
    check(j["usage"] == {"prompt_tokens": 1, "completion_tokens": 8, "total_tokens": 9}, "usage %s" % j["usage"])
    check(j["choices"][0]["finish_reason"] == "length", "finish_reason length")
    check(j["object"] == "text_completion" and isinstance(j["choices"][0]["text"], str), "completion shape")
    check(len(r.headers.get_all("x-kiln-timing") or []) == 1, "one x-kiln-timing header")
    timing = r.getheader("x-kiln-timing") or ""
    check(all(s in timing for s in ("validate=", "queue=", "prefill=", "decode=", "return=")),
          "x-kiln-timing has the five stages: %s" % timing)
    # Sampling with a seed: the same ids as kiln-run with the same parameters.
    samp = ["--temperature", "0.8", "--top-k", "40", "--top-p", "0.95", "--seed", "7"]
    want = kiln_run_ids([292, 143], 12, samp)
    st, j, _ = srv.post("/v1/completions", {"model": "llama", "prompt": [292, 143], "max_tokens": 12,
                                            "temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 7,
                                            "ignore_eos": True, "return_token_ids": True})
    check(st == 200 and j["choices"][0]["token_ids"] == want, "seeded sampling ids equal kiln-run's")


def test_stream_equals_plain(srv):
    body = {"model": "llama", "prompt": "The quick brown fox", "max_tokens": 20, "temperature": 0,
            "return_token_ids": True}
    st, plain, _ = srv.post("/v1/completions", body)
    check(st == 200, "text completion 200")
    c = srv.conn()
    c.request("POST", "/v1/completions", json.dumps(dict(body, stream=True, stream_options={"include_usage": True})),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    check(r.status == 200 and r.getheader("Content-Type", "").startswith("text/event-stream"), "SSE content type")
    events, done = stream_events(r)
    c.close()
    check(done, "stream ends with data: [DONE]")
    text = "".join(e["choices"][0]["text"] for e in events if e["choices"])
    ids = [i for e in events if e["choices"] for i in e["choices"][0].get("token_ids", [])]
    check(text == plain["choices"][0]["text"], "streamed text equals the plain answer")
    check(ids == plain["choices"][0]["token_ids"], "streamed ids equal the plain answer's")
    per_event = [len(e["choices"][0].get("token_ids", [])) for e in events if e["choices"]]
    check(per_event[:-1] == [1] * (len(per_event) - 1) and per_event[-1] == 0, "one token per event: %s" % per_event)
    finishes = [e["choices"][0]["finish_reason"] for e in events if e["choices"]]
    check(finishes[-1] == plain["choices"][0]["finish_reason"] and all(f is None for f in finishes[:-1]),
          "finish_reason only on the last choice chunk")
    check(events[-1]["choices"] == [] and events[-1]["usage"] == plain["usage"], "include_usage chunk")
    # Stop strings: the text ends before the stop string, finish_reason stop.
    full = plain["choices"][0]["text"]
    if len(full) > 6:
        stop = full[3:6]
        st, j, _ = srv.post("/v1/completions", dict(body, stop=[stop]))
        check(st == 200 and j["choices"][0]["text"] == full[:full.find(stop)] and j["choices"][0]["finish_reason"] == "stop",
              "stop string cuts the text: %r" % (j["choices"][0]["text"],))


def test_chat(srv):
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    st, chat, _ = srv.post("/v1/chat/completions", {"model": "llama", "messages": msgs, "max_tokens": 6,
                                                    "temperature": 0, "return_token_ids": True})
    check(st == 200 and chat["object"] == "chat.completion" and chat["choices"][0]["message"]["role"] == "assistant",
          "chat completion shape (%s)" % st)
    # The ChatML rendering, written here independently, sent as a plain prompt, gives the same ids
    # (the completions endpoint adds the post-processor's BOS, which this tokenizer has none of).
    rendered = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n"
    st, comp, _ = srv.post("/v1/completions", {"model": "llama", "prompt": rendered, "max_tokens": 6, "temperature": 0,
                                               "return_token_ids": True})
    check(chat["choices"][0]["prompt_token_ids"] == comp["choices"][0]["prompt_token_ids"], "chat prompt is ChatML")
    check(chat["choices"][0]["message"]["content"] == comp["choices"][0]["text"], "chat answer equals the rendered prompt's")
    c = srv.conn()
    c.request("POST", "/v1/chat/completions", json.dumps({"model": "llama", "messages": msgs, "max_tokens": 6,
                                                          "temperature": 0, "stream": True}),
              {"Content-Type": "application/json"})
    events, done = stream_events(c.getresponse())
    check(done and events[0]["choices"][0]["delta"].get("role") == "assistant", "chat stream starts with the role")
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events)
    check(text == chat["choices"][0]["message"]["content"], "chat stream text equals the plain chat answer")
    st, j, _ = srv.post("/v1/chat/completions", {"model": "llama", "messages": [{"role": "wizard", "content": "x"}]})
    check(st == 400 and j["error"]["param"] == "messages[0].role", "unknown chat role is a 400 naming it")


def test_concurrent_equal_alone(srv):
    prompts = [[292], [292, 143], [5, 6, 7], [100], [42, 43], [311, 12, 9]]
    seeds = [1, 2, 3, 4, 5, 6]
    want = [kiln_run_ids(p, 16, ["--temperature", "0.9", "--seed", str(s)]) for p, s in zip(prompts, seeds)]
    got = [None] * len(prompts)

    def one(i):
        st, j, _ = srv.post("/v1/completions", {"model": "llama", "prompt": prompts[i], "max_tokens": 16,
                                                "temperature": 0.9, "seed": seeds[i], "ignore_eos": True,
                                                "return_token_ids": True})
        got[i] = j["choices"][0]["token_ids"] if st == 200 else st
    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i in range(len(prompts)):
        check(got[i] == want[i], "concurrent request %d: %s equals decoding alone %s" % (i, got[i], want[i]))


def test_errors(srv):
    def err(body, status, param=None, raw=None, path="/v1/completions"):
        st, out, r = srv.request("POST", path, body, raw=raw)
        j = json.loads(out) if out else {}
        ok = check(st == status, "%s -> %d (got %d: %s)" % (raw or json.dumps(body)[:80], status, st, out[:200]))
        if ok and param is not None:
            check(j.get("error", {}).get("param") == param, "error names %s: %s" % (param, j))
        return j, r
    err(None, 400, raw=b"{not json")
    err(None, 400, raw=b"[1,2]")
    err({"model": "llama", "prompt": [1], "bogus": 1}, 400, "bogus")
    err({"model": "llama", "prompt": [1], "temperature": -1}, 400, "temperature")
    err({"model": "llama", "prompt": [1], "temperature": "hot"}, 400, "temperature")
    err({"model": "llama", "prompt": [1], "top_p": 1.5}, 400, "top_p")
    err({"model": "llama", "prompt": [1], "max_tokens": 0}, 400, "max_tokens")
    err({"model": "llama", "prompt": [1], "logprobs": 3}, 400, "logprobs")
    err({"model": "llama", "prompt": [1], "n": 2}, 400, "n")
    err({"model": "llama", "prompt": [1], "presence_penalty": 0.5}, 400, "presence_penalty")
    err({"model": "llama", "prompt": [1], "stop": 5}, 400, "stop")
    err({"model": "llama", "prompt": [999999]}, 400, "prompt")
    err({"model": "llama", "prompt": []}, 400, "prompt")
    err({"model": "llama", "prompt": {"a": 1}}, 400, "prompt")
    err({"model": "llama"}, 400, "prompt")
    j, _ = err({"model": "llama", "prompt": [5] * 300}, 400, "prompt")
    check("300" in j["error"]["message"] and "256" in j["error"]["message"], "too-long prompt names both counts")
    j, _ = err({"model": "llama", "prompt": [5] * 200, "max_tokens": 100}, 400, "max_tokens")
    check("200" in j["error"]["message"] and "100" in j["error"]["message"], "too-long request names the counts")
    err({"model": "nope", "prompt": [1]}, 404, "model")
    err({"model": "cnn", "prompt": [1]}, 400, "model")
    err({"model": "llama", "messages": "hi"}, 400, "messages", path="/v1/chat/completions")
    err(None, 413, raw=b'{"prompt": "' + b"a" * 1100000 + b'"}')
    st, _, _ = srv.get("/v1/nothing")
    check(st == 404, "unknown route 404")
    # The server is still fine.
    st, j, _ = srv.post("/v1/completions", {"model": "llama", "prompt": [292], "max_tokens": 2})
    check(st == 200, "server healthy after the error paths")


def test_v2(srv):
    check(srv.get("/v2/health/live")[0] == 200 and srv.get("/v2/health/ready")[0] == 200, "v2 health")
    st, out, _ = srv.get("/v2/models/cnn")
    meta = json.loads(out)
    check(st == 200 and meta["name"] == "cnn" and meta["inputs"], "v2 model metadata")
    check(srv.get("/v2/models/cnn/ready")[0] == 200, "v2 model ready")
    check(srv.get("/v2/models/none/ready")[0] == 404, "v2 unknown model 404")
    check(srv.get("/v2/models/cnn/versions/1/ready")[0] == 200, "v2 version 1 ready")
    check(srv.get("/v2/models/cnn/versions/2")[0] == 404, "v2 unknown version 404")
    base = os.path.join(ARGS.models, "cnn")
    for ds in sorted(d for d in os.listdir(base) if d.startswith("test_data_set")):
        t = TensorProto()
        t.ParseFromString(open(os.path.join(base, ds, "input_0.pb"), "rb").read())
        x = numpy_helper.to_array(t)
        o = TensorProto()
        o.ParseFromString(open(os.path.join(base, ds, "output_0.pb"), "rb").read())
        ref = numpy_helper.to_array(o)
        inp = meta["inputs"][0]
        body = {"id": "x1", "inputs": [{"name": inp["name"], "shape": list(x.shape), "datatype": "FP32",
                                         "data": x.flatten().tolist()}]}
        st, j, r = srv.post("/v2/models/cnn/infer", body)
        check(st == 200 and j["id"] == "x1", "v2 infer 200 (%s %s)" % (st, j if st != 200 else ""))
        if st == 200:
            out = j["outputs"][0]
            got = np.array(out["data"], dtype=np.float32).reshape(out["shape"])
            check(got.shape == ref.shape and np.allclose(got, ref, rtol=1e-3, atol=1e-4),
                  "v2 infer %s equals ONNX Runtime's reference (max diff %g)" %
                  (ds, float(np.abs(got - ref).max()) if got.shape == ref.shape else -1))
        check("forward=" in (r.getheader("x-kiln-timing") or ""), "v2 timing header has the forward stage")
        bad = json.loads(json.dumps(body))
        bad["inputs"][0]["shape"] = [1] + list(x.shape)
        st, j, _ = srv.post("/v2/models/cnn/infer", bad)
        check(st == 400 and inp["name"] in j["error"], "v2 wrong rank names the input: %s" % j)
        bad = json.loads(json.dumps(body))
        bad["inputs"][0]["datatype"] = "INT64"
        st, j, _ = srv.post("/v2/models/cnn/infer", bad)
        check(st == 400 and inp["name"] in j["error"], "v2 wrong datatype names the input")
        bad = json.loads(json.dumps(body))
        bad["inputs"][0]["data"] = bad["inputs"][0]["data"][:-1]
        st, j, _ = srv.post("/v2/models/cnn/infer", bad)
        check(st == 400 and "elements" in j["error"], "v2 short data is a 400")
        st, j, _ = srv.post("/v2/models/cnn/infer", {"inputs": []})
        check(st == 400 and "missing" in j["error"], "v2 missing input is a 400")
        break


def test_cancel_and_capacity(srv):
    long_body = {"model": "llama", "prompt": [292], "max_tokens": 250, "temperature": 0, "ignore_eos": True,
                 "stream": True}
    before = srv.metrics()
    # Mid-stream disconnect frees the slot.
    s, f, status = open_stream(srv, long_body)
    check(b"200" in status, "stream opened")
    f.readline()
    check(wait_for(lambda: metric(srv.metrics(), "kiln:num_requests_running") == 1, 2), "the stream holds a slot")
    f.close()
    s.close()
    check(wait_for(lambda: metric(srv.metrics(), "kiln:num_requests_running") == 0, 2),
          "a disconnected stream frees its slot")
    m = srv.metrics()
    check(metric(m, "kiln:request_failure_total", reason="client_disconnected") >
          metric(before, "kiln:request_failure_total", reason="client_disconnected"), "disconnect counted")

    # 64 open streams: 2 decoding, 62 queued; health and metrics still answer at once.
    streams = [open_stream(srv, long_body) for _ in range(64)]
    check(all(b"200" in st for _, _, st in streams), "64 streams admitted")
    t0 = time.time()
    ok = srv.get("/health")[0] == 200 and srv.get("/metrics")[0] == 200
    check(ok and time.time() - t0 < 0.5, "health and metrics answer with 64 streams open (%.3f s)" % (time.time() - t0))
    m = srv.metrics()
    check(metric(m, "kiln:num_requests_running") == 2 and metric(m, "kiln:num_requests_waiting") == 62,
          "2 running, 62 waiting: %s %s" % (metric(m, "kiln:num_requests_running"), metric(m, "kiln:num_requests_waiting")))
    st, j, r = srv.post("/v1/completions", {"model": "llama", "prompt": [1], "max_tokens": 2})
    check(st == 429 and r.getheader("Retry-After"), "a full queue answers 429 with Retry-After")
    # A queued non-streaming client that disconnects is noticed.
    c = socket.create_connection(("127.0.0.1", srv.port))
    for s, f, _ in streams[-1:]:
        f.close(), s.close()
    check(wait_for(lambda: metric(srv.metrics(), "kiln:num_requests_waiting") == 61, 2), "a queued stream leaves")
    data = json.dumps({"model": "llama", "prompt": [1], "max_tokens": 2}).encode()
    c.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
    check(wait_for(lambda: metric(srv.metrics(), "kiln:num_requests_waiting") == 62, 2), "plain request queued")
    c.close()
    check(wait_for(lambda: metric(srv.metrics(), "kiln:num_requests_waiting") == 61, 2),
          "a queued plain client that disconnects leaves the queue")
    for s, f, _ in streams[:-1]:
        f.close(), s.close()
    check(wait_for(lambda: metric(srv.metrics(), "kiln:num_requests_running") == 0 and
                   metric(srv.metrics(), "kiln:num_requests_waiting") == 0, 3), "all slots free after disconnects")


def test_garbage(srv):
    """Nothing a client sends crashes the server or gets a 5xx: mutated fields, random bytes,
    deep nesting (seeded, so a failure reproduces)."""
    import random
    rng = random.Random(23)
    values = [None, -1, 0, 1, 2, 0.5, 2 ** 63, -2 ** 63, 2 ** 64 + 5, 1e308, -1e308, "x", "", [], {}, [1, 2],
              [[1]], True, False, {"a": [None]}, ["a", 1], "\u00ff\u4e2d", [-5], [10 ** 12]]
    fields = ["model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop",
              "repetition_penalty", "stream", "stream_options", "return_token_ids", "ignore_eos", "n", "logprobs",
              "echo", "messages", "max_completion_tokens", "zzz"]
    bad = []
    for i in range(150):
        body = {"model": "llama", "prompt": [292, 5], "max_tokens": 2}
        for _ in range(rng.randint(1, 3)):
            body[rng.choice(fields)] = rng.choice(values)
        if body.get("max_tokens") not in (None, 0, 1, 2, -1) and not isinstance(body.get("max_tokens"), (str, list, dict, float)):
            body["max_tokens"] = 2  # keep every accepted request short
        path = rng.choice(["/v1/completions", "/v1/chat/completions"])
        st, out, _ = srv.request("POST", path, body)
        if st >= 500 or st not in (200, 400, 404):
            bad.append((st, body, out[:120]))
    for i in range(40):
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
        st, out, _ = srv.request("POST", rng.choice(["/v1/completions", "/v2/models/cnn/infer"]), raw=raw)
        if st >= 500:
            bad.append((st, raw[:40], out[:120]))
    for path in ("/v1/completions", "/v2/models/cnn/infer"):
        st, out, _ = srv.request("POST", path, raw=b"[" * 200000 + b"]" * 200000)
        if st != 400:
            bad.append((st, "deep nesting " + path, out[:120]))
    st, out, _ = srv.request("POST", "/v2/models/cnn/infer", {"inputs": [{"name": "input", "datatype": "FP32",
                             "shape": [1], "data": json.loads("[" * 40 + "1" + "]" * 40)}]})
    if st != 400:
        bad.append((st, "deep data", out[:120]))
    check(not bad, "garbage gets 4xx, never 5xx: %s" % bad[:3])
    check(srv.proc.poll() is None and srv.get("/health")[0] == 200, "server alive after garbage")


def test_metrics_and_traces(srv):
    m = srv.metrics()
    check(metric(m, "kiln:prompt_tokens_total") > 0 and metric(m, "kiln:generation_tokens_total") > 0, "token counters")
    check(m.get('kiln:time_to_first_token_seconds_count{model_name="llama"}', 0) > 0, "ttft histogram")
    check(m.get('kiln:inter_token_latency_seconds_count{model_name="llama"}', 0) > 0, "itl histogram")
    check(m.get('kiln:e2e_request_latency_seconds_count{model_name="llama"}', 0) > 0, "e2e histogram")
    check(m.get('kiln:request_queue_time_seconds_count{model_name="llama"}', 0) > 0, "queue histogram")
    check(metric(m, "kiln:slots_total") == 2, "slots_total")
    check(metric(m, "kiln:request_failure_total", reason="bad_request") > 0, "failures by reason")
    before = metric(m, "kiln:generation_tokens_total")
    srv.post("/v1/completions", {"model": "llama", "prompt": [292], "max_tokens": 3, "ignore_eos": True})
    check(metric(srv.metrics(), "kiln:generation_tokens_total") == before + 3, "generation counter moves by 3")
    files = [f for f in os.listdir(srv.trace_dir) if f.endswith(".json")]
    check(len(files) > 10, "trace files written")
    names = set()
    for fn in files:
        for e in json.load(open(os.path.join(srv.trace_dir, fn)))["traceEvents"]:
            if e.get("ph") == "X":
                names.add(e["name"])
    check({"validate", "queue", "prefill", "decode", "return", "forward"} <= names, "trace stages: %s" % names)
    logs = [json.loads(l) for l in srv.lines if l.startswith('{"event":"request"')]
    check(logs and all("id" in l and "status" in l for l in logs), "one JSON log line per request")


def test_drain(srv):
    s, f, status = open_stream(srv, {"model": "llama", "prompt": [292], "max_tokens": 60, "temperature": 0,
                                     "ignore_eos": True, "stream": True})
    f.readline()
    srv.proc.send_signal(signal.SIGTERM)
    check(wait_for(lambda: srv.get("/health")[0] == 503, 2), "health is 503 while draining")
    st, j, _ = srv.post("/v1/completions", {"model": "llama", "prompt": [1], "max_tokens": 2})
    check(st == 503, "new requests refused while draining")
    rest = read_to_end(f)
    check("data: [DONE]" in rest and '"finish_reason":"length"' in rest, "the in-flight stream finishes")
    check(srv.proc.wait(10) == 0, "exit status 0 after the drain")


# Templates in the style of each family's tokenizer_config.json (written for this test), and the
# text each must render for a system + user conversation.
TEMPLATES = {
    "llama3": ("{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
               "'<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
               "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
               "<|begin_of_text|>",
               "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n"),
    "qwen": ("{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}"
             "{% endif %}{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
             "'<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
             None,
             "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"),
    "llama2": ("{% for message in messages %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + "
               "message['content'] + ' [/INST]' }}{% elif message['role'] == 'system' %}{{ '<<SYS>>\n' + "
               "message['content'] + '\n<</SYS>>\n\n' }}{% endif %}{% endfor %}",
               "<s>",
               "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi there [/INST]"),
    "gemma": ("{{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + message['role'] + '\n' + "
              "message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{{ '<start_of_turn>model\n' }}",
              "<bos>",
              "<bos><start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n<start_of_turn>model\n"),
    "unknown": ("{% for m in messages %}{{ m['content'] }}{% endfor %}", None, None),
}


def test_chat_templates():
    d = tempfile.mkdtemp(prefix="kiln-serve-chat-")
    models = []
    for name, (tpl, bos, _) in TEMPLATES.items():
        cfg = {"chat_template": tpl}
        if bos:
            cfg["bos_token"] = bos
        path = os.path.join(d, name + ".json")
        json.dump(cfg, open(path, "w"))
        models += ["--model", name + "=" + os.path.join(ARGS.artifacts, "llama.kiln"),
                   "--tokenizer", os.path.join(ARGS.models, "lm/llama/tokenizer.json"),
                   "--tokenizer-config", path, "--max-sequences", "1", "--max-queue", "4", "--threads", "1"]
    srv = Server([], models)
    try:
        msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
        for name, (_, _, want) in TEMPLATES.items():
            st, chat, _ = srv.post("/v1/chat/completions", {"model": name, "messages": msgs, "max_tokens": 2,
                                                            "temperature": 0, "return_token_ids": True})
            if want is None:
                check(st == 400 and "recognizes" in chat["error"]["message"], "unknown template refused clearly: %s" % chat)
                continue
            st2, comp, _ = srv.post("/v1/completions", {"model": name, "prompt": want, "max_tokens": 2, "temperature": 0,
                                                        "return_token_ids": True})
            check(st == 200 and st2 == 200 and
                  chat["choices"][0]["prompt_token_ids"] == comp["choices"][0]["prompt_token_ids"],
                  "%s template renders %r" % (name, want))
        # Without a system message, the ChatML template's default system turn is written.
        st, chat, _ = srv.post("/v1/chat/completions", {"model": "qwen", "messages": msgs[1:], "max_tokens": 2,
                                                        "temperature": 0, "return_token_ids": True})
        want = ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
                "<|im_start|>assistant\n")
        st2, comp, _ = srv.post("/v1/completions", {"model": "qwen", "prompt": want, "max_tokens": 2, "temperature": 0,
                                                    "return_token_ids": True})
        check(st == 200 and chat["choices"][0]["prompt_token_ids"] == comp["choices"][0]["prompt_token_ids"],
              "ChatML default system turn")
        lines = "".join(srv.lines)
        for name, form in (("llama3", "llama3"), ("qwen", "chatml"), ("llama2", "llama2"), ("gemma", "gemma")):
            check('"chat_template":"%s","event":"model_loaded"' % form in lines or
                  re.search(r'"chat_template":"%s"[^\n]*"model":"%s"' % (form, name), lines),
                  "%s recognized as %s" % (name, form))
    finally:
        srv.stop()


def test_timeouts():
    srv = Server(["--request-timeout", "0.3"], ["--model", "llama=" + os.path.join(ARGS.artifacts, "llama.kiln"),
                                                "--max-sequences", "1", "--max-queue", "2", "--threads", "1"])
    try:
        body = {"prompt": [292], "max_tokens": 250, "temperature": 0, "ignore_eos": True}
        res = [None, None]

        def one(i):
            res[i] = srv.post("/v1/completions", body)[:2]
        ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        check([r[0] for r in res] == [504, 504], "running and queued requests past --request-timeout get 504: %s" %
              [r[0] for r in res])
        m = srv.metrics()
        check(metric(m, "kiln:request_failure_total", reason="timeout") == 2, "timeouts counted")
        # The 504 goes out when the deadline passes; the scheduler frees the sequence's slot at its
        # next step, a moment later (under ASan the metrics were read before that step once).
        check(wait_for(lambda: metric(srv.metrics(), "kiln:num_requests_running") == 0, 5),
              "timed-out sequences freed their slot")
        s, f, status = open_stream(srv, dict(body, stream=True))
        rest = read_to_end(f)
        check(ends_with_error_then_done(rest, 504),
              "a stream past the timeout ends with an error event and [DONE]: %r" % rest[-200:])
        f.close(), s.close()
        st, j, _ = srv.post("/v1/completions", {"prompt": [292], "max_tokens": 4, "ignore_eos": True})
        check(st == 200, "served after timeouts (the model is optional with one model served)")
        check(st == 200 and len(j["choices"][0]["token_ids"]) == 4 and j["choices"][0]["text"] == "",
              "without a tokenizer the answer carries the ids")
        st, j, _ = srv.post("/v1/completions", {"prompt": "text"})
        check(st == 400 and j["error"]["param"] == "prompt", "text prompt without a tokenizer is a 400")
    finally:
        srv.stop()


def test_drain_grace_expires():
    srv = Server(["--drain-timeout", "0.3"], ["--model", "llama=" + os.path.join(ARGS.artifacts, "llama.kiln"),
                                              "--max-sequences", "1", "--max-queue", "2", "--threads", "1"])
    try:
        body = {"prompt": [292], "max_tokens": 250, "temperature": 0, "ignore_eos": True}
        s, f, _ = open_stream(srv, dict(body, stream=True))
        f.readline()
        res = []
        queued = threading.Thread(target=lambda: res.append(srv.post("/v1/completions", body)[:2]))
        queued.start()
        check(wait_for(lambda: metric(srv.metrics(), "kiln:num_requests_waiting") == 1, 2), "second request queued")
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        rest = read_to_end(f)
        queued.join(5)
        check(ends_with_error_then_done(rest, 503) and "shutting down" in rest,
              "a stream cut by the drain ends with a 503 error event and [DONE]: %r" % rest[-200:])
        check(res and res[0][0] == 503, "a queued request cut by the drain gets 503: %s" % res)
        check(srv.proc.wait(10) == 0 and time.time() - t0 < 3, "exit 0 soon after the grace period (%.2f s)" %
              (time.time() - t0))
        f.close(), s.close()
    finally:
        srv.stop()


def load_pb(path):
    t = TensorProto()
    t.ParseFromString(open(path, "rb").read())
    return numpy_helper.to_array(t)


def json_float(v):
    v = float(v)
    return "NaN" if v != v else "Infinity" if v == float("inf") else "-Infinity" if v == -float("inf") else v


def from_json_float(v):
    return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(v, v)) if isinstance(v, str) else float(v)


def to_json_data(x, datatype):
    """A numpy array as the protocol's flat data for `datatype` (the model's); JSON has no NaN or
    infinity, which kiln-serve takes and gives as strings."""
    if datatype == "BF16":  # these test files hold bfloat16 as its uint16 bits
        x = (x.astype(np.uint32) << 16).view(np.float32) if x.dtype == np.uint16 else x
        return [json_float(v) for v in x.astype(np.float32).flatten()]
    if datatype == "BYTES":
        return [v.decode() if isinstance(v, bytes) else str(v) for v in x.flatten()]
    if datatype in ("FP16", "FP32", "FP64"):
        return [json_float(v) for v in x.astype(np.float64).flatten()]
    return x.flatten().tolist()


def test_v2_dtypes():
    """Every dtype through /v2 infer: ONNX node tests compiled by the build, their reference
    inputs in, their reference outputs compared (exactly, floats within 1e-6)."""
    if not ARGS.dtype_artifacts:
        print("SKIPPED: test_v2_dtypes (no --dtype-artifacts)")
        return
    names = sorted(f[:-5] for f in os.listdir(ARGS.dtype_artifacts) if f.endswith(".kiln"))
    models = []
    for n in names:
        models += ["--model", n + "=" + os.path.join(ARGS.dtype_artifacts, n + ".kiln"), "--max-sequences", "1",
                   "--max-queue", "2", "--threads", "1"]
    srv = Server([], models)
    seen_in, seen_out = set(), set()
    try:
        for n in names:
            st, out, _ = srv.get("/v2/models/" + n)
            meta = json.loads(out)
            data_dir = os.path.join(ARGS.onnx_node_data, n, "test_data_set_0")
            inputs = []
            for k, inp in enumerate(meta["inputs"]):
                x = load_pb(os.path.join(data_dir, "input_%d.pb" % k))
                inputs.append({"name": inp["name"], "shape": list(x.shape), "datatype": inp["datatype"],
                               "data": to_json_data(x, inp["datatype"])})
                seen_in.add(inp["datatype"])
            st, j, _ = srv.post("/v2/models/%s/infer" % n, {"inputs": inputs})
            if not check(st == 200, "%s: infer 200 (%s %s)" % (n, st, j)):
                continue
            for k, o in enumerate(j["outputs"]):
                ref = load_pb(os.path.join(data_dir, "output_%d.pb" % k))
                seen_out.add(o["datatype"])
                ok = o["shape"] == list(ref.shape)
                if o["datatype"] == "BYTES":
                    ok = ok and o["data"] == to_json_data(ref, "BYTES")
                elif o["datatype"] in ("FP16", "FP32", "FP64", "BF16"):
                    got = np.array([from_json_float(v) for v in o["data"]], dtype=np.float64)
                    ok = ok and np.allclose(got, ref.astype(np.float64).flatten(), rtol=1e-6, atol=0, equal_nan=True)
                else:
                    ok = ok and o["data"] == ref.flatten().tolist()
                check(ok and o["datatype"] == meta["outputs"][k]["datatype"], "%s: output %s (%s) equals the reference"
                      % (n, o["name"], o["datatype"]))
        every = {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32",
                 "FP64", "BF16", "BYTES"}
        check(seen_in | seen_out == every, "every datatype covered: missing %s" % (every - (seen_in | seen_out)))
    finally:
        srv.stop()


def test_loading_then_refused():
    """/health is 503 while a model loads: the artifact is a FIFO, whose open() blocks until a
    writer comes (the runtime then refuses it as no regular file, and start-up fails)."""
    d = tempfile.mkdtemp()
    fifo = os.path.join(d, "slow.kiln")
    os.mkfifo(fifo)
    proc = subprocess.Popen([os.path.join(ARGS.bin, "kiln-serve"), "--model", "slow=" + fifo, "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        port = int(re.search(r'"port":(\d+)', line).group(1))
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/health")
        r = c.getresponse()
        check(r.status == 503 and json.loads(r.read())["status"] == "loading", "/health is 503 while loading")
        c.request("GET", "/v1/models")
        r = c.getresponse()
        check(r.status == 503 and "loading" in r.read().decode(), "model routes are 503 while loading")
        c.close()
        os.close(os.open(fifo, os.O_WRONLY))  # lets the runtime's open() return
        rest = proc.stderr.read()
        check(proc.wait(10) == 1 and "not a regular file" in rest, "start-up fails with the runtime's message")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_config_file():
    d = tempfile.mkdtemp()
    cfg = os.path.join(d, "kiln-serve.json")
    os.symlink(os.path.abspath(os.path.join(ARGS.artifacts, "llama.kiln")), os.path.join(d, "lm.kiln"))
    json.dump({"request_timeout": 30, "models": [
        {"name": "lm", "path": "lm.kiln",  # relative: beside the config file
         "tokenizer": os.path.abspath(os.path.join(ARGS.models, "lm/llama/tokenizer.json")), "max_sequences": 1,
         "threads": 1},
        {"name": "vision", "path": os.path.abspath(os.path.join(ARGS.artifacts, "cnn.kiln")), "max_sequences": 1, "threads": 1}]},
        open(cfg, "w"))
    srv = Server([], ["--config", cfg])
    try:
        st, out, _ = srv.get("/v1/models")
        check(st == 200 and [m["id"] for m in json.loads(out)["data"]] == ["lm", "vision"], "config file models")
        st, out, _ = srv.get("/v2/models/vision")
        check(st == 200, "config file: forward model served")
        st, j, _ = srv.post("/v1/completions", {"model": "lm", "prompt": "Hello", "max_tokens": 3, "temperature": 0})
        check(st == 200 and j["usage"]["completion_tokens"] >= 1, "config file: decoder served")
        st, j, _ = srv.post("/v1/completions", {"prompt": "Hello"})
        check(st == 400 and j["error"]["param"] == "model", "model required with several models")
    finally:
        srv.stop()


def test_paged():
    # A paged artifact (blocks of 16 tokens) with a pool of 5 blocks for 3 slots: sequences are
    # admitted by the blocks they may take at most (prompt + max_tokens), the rest wait; one that
    # could never fit is refused before it costs anything.
    srv = Server([], ["--model", "llama=" + os.path.join(ARGS.artifacts, "llama_paged16.kiln"), "--max-sequences", "3",
                      "--kv-cache-blocks", "5", "--max-queue", "8", "--threads", "1"])
    try:
        m = srv.metrics()
        check(metric(m, "kiln:kv_cache_blocks_total") == 5, "paged: 5 blocks in the pool")
        # Three short sequences (1 block each) run together; each equals decoding it alone.
        prompts = [[292], [5, 6, 7], [42, 43]]
        want = [kiln_run_ids(p, 12, artifact="llama_paged16.kiln") for p in prompts]
        got = [None] * len(prompts)

        def one(i, n, out):
            st, j, _ = srv.post("/v1/completions", {"prompt": prompts[i], "max_tokens": n, "temperature": 0,
                                                    "ignore_eos": True, "return_token_ids": True})
            out[i] = j["choices"][0]["token_ids"] if st == 200 else (st, j)
        ts = [threading.Thread(target=one, args=(i, 12, got)) for i in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for i in range(3):
            check(got[i] == want[i], "paged request %d: %s equals decoding alone %s" % (i, got[i], want[i]))
        # Three that may take 3 blocks each (3 + 40 tokens): one runs at a time, the others wait.
        long = [None] * 3
        ts = [threading.Thread(target=one, args=(i, 40, long)) for i in range(3)]
        for t in ts:
            t.start()
        most_reserved, most_running, waited = 0, 0, False
        while any(t.is_alive() for t in ts):
            m = srv.metrics()
            most_reserved = max(most_reserved, metric(m, "kiln:kv_cache_blocks_reserved"))
            most_running = max(most_running, metric(m, "kiln:num_requests_running"))
            waited |= metric(m, "kiln:num_requests_waiting") >= 1
            check(metric(m, "kiln:kv_cache_blocks_in_use") <= 5, "paged: blocks in use within the pool")
            time.sleep(0.05)
        for t in ts:
            t.join()
        check(all(isinstance(x, list) and len(x) == 40 for x in long), "paged: every waiting request ran: %s" %
              [x if not isinstance(x, list) else len(x) for x in long])
        check(most_reserved == 3, "paged: at most one 3-block sequence admitted at once (reserved %s)" % most_reserved)
        check(most_running == 1 and waited, "paged: the others waited for blocks (running %s, waited %s)" %
              (most_running, waited))
        # 3 + 100 tokens need 7 blocks: more than the whole pool, refused up front.
        st, j, _ = srv.post("/v1/completions", {"prompt": [1, 2, 3], "max_tokens": 100})
        check(st == 400 and "7 KV cache blocks" in j["error"]["message"] and j["error"].get("param") == "max_tokens",
              "paged: a request larger than the pool is refused: %s %s" % (st, j))
        m = srv.metrics()
        check(metric(m, "kiln:kv_cache_blocks_in_use") == 0 and metric(m, "kiln:kv_cache_blocks_reserved") == 0,
              "paged: every block back in the pool after the requests")
    finally:
        srv.stop()


def test_prefix_cache():
    # Requests that share a 40-token prompt start: the first computes it, the later ones share its two
    # full blocks of 16 (the counters say so) and decode the tokens of decoding alone without a cache.
    # --no-prefix-cache computes every prompt whole.
    system = [(i * 37 + 11) % 400 for i in range(40)]
    prompts = [system + [300 + k, 301 + k, 302 + k] for k in range(3)]
    want = [kiln_run_ids(p, 6, artifact="llama_paged16.kiln") for p in prompts]
    for cached in (True, False):
        srv = Server([], ["--model", "llama=" + os.path.join(ARGS.artifacts, "llama_paged16.kiln"), "--max-sequences",
                          "2", "--threads", "1"] + ([] if cached else ["--no-prefix-cache"]))
        try:
            for i, p in enumerate(prompts):
                st, j, _ = srv.post("/v1/completions", {"prompt": p, "max_tokens": 6, "temperature": 0,
                                                        "ignore_eos": True, "return_token_ids": True})
                got = j["choices"][0]["token_ids"] if st == 200 else (st, j)
                check(got == want[i], "prefix cache %s, request %d: %s equals decoding alone %s" % (
                    cached, i, got, want[i]))
            # The engine publishes the cache gauges after it retires a sequence: shortly after the answer.
            for _ in range(100):
                m = srv.metrics()
                if metric(m, "kiln:kv_cache_blocks_in_use") == 0:
                    break
                time.sleep(0.02)
            hits, queries = metric(m, "kiln:prefix_cache_hits_total"), metric(m, "kiln:prefix_cache_queries_total")
            if cached:
                check(hits == 2 * 32 and queries == 3 * 43, "prefix cache: 64 of 129 prompt tokens found (%s of %s)" % (
                    hits, queries))
                check(metric(m, "kiln:kv_cache_blocks_cached") >= 2, "prefix cache: blocks kept for later requests")
            else:
                check(hits == 0 and queries == 0, "--no-prefix-cache: nothing looked up (%s, %s)" % (hits, queries))
            check(metric(m, "kiln:kv_cache_blocks_in_use") == 0, "prefix cache: no block held after the requests")
        finally:
            srv.stop()


SEEDED = ["--temperature", "0.8", "--seed", "3"]  # kiln-run generate's flags for the request's sampling


def check_equals_plain(srv, prompt, n, sampling, what):
    """A completion of n tokens (greedy, or SEEDED sampling) equals kiln-run generate's."""
    want = kiln_run_ids(prompt, n, sampling)
    body = {"prompt": prompt, "max_tokens": n, "ignore_eos": True, "return_token_ids": True,
            "temperature": 0.8 if sampling else 0}
    if sampling:
        body["seed"] = 3
    st, j, _ = srv.post("/v1/completions", body)
    got = j["choices"][0]["token_ids"] if st == 200 else (st, j)
    check(got == want, "%s %s: %s equals plain decoding %s" % (what, "sampled" if sampling else "greedy", got, want))


def test_speculate():
    # --speculate lookup: a request decoding alone drafts from its own text and gets the tokens of
    # plain decoding (greedy and seeded sampling); the counters say what was drafted and accepted.
    srv = Server([], ["--model", "llama=" + os.path.join(ARGS.artifacts, "llama.kiln"), "--max-sequences", "2",
                      "--threads", "1", "--speculate", "lookup:4"])
    try:
        prompt = [5, 17, 300, 42, 99, 7, 256, 11, 3, 64, 9, 120, 33, 5, 17, 300]
        for sampling in ([], SEEDED):
            check_equals_plain(srv, prompt, 30, sampling, "speculate")
        m = srv.metrics()
        drafted = metric(m, "kiln:spec_decode_num_draft_tokens_total")
        accepted = metric(m, "kiln:spec_decode_num_accepted_tokens_total")
        check(drafted > 0 and 0 <= accepted <= drafted, "speculate: %s of %s drafted tokens accepted" % (accepted, drafted))
    finally:
        srv.stop()
    r = subprocess.run([os.path.join(ARGS.bin, "kiln-serve"), "--model", "x=" + os.path.join(ARGS.artifacts, "llama.kiln"),
                        "--speculate", "draft"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 2 and "expected lookup[:K] or draft:PATH[:K]" in r.stderr, "--speculate with a bad value refused")

    # --speculate draft:PATH:K: a draft decoder proposes K tokens per step. The model drafting for
    # itself proposes exactly its greedy tokens, so greedy requests accept every draft; every
    # request, greedy or sampled, one after another with different prompts (the draft's sequence
    # follows each), gets the tokens of plain decoding.
    llama = os.path.join(ARGS.artifacts, "llama.kiln")
    srv = Server([], ["--model", "llama=" + llama, "--max-sequences", "2", "--threads", "1",
                      "--speculate", "draft:" + llama + ":3"])
    try:
        prompts = [[5, 17, 300, 42, 99, 7, 256, 11, 3, 64, 9, 120, 33, 5, 17, 300], [292, 8, 41, 7]]
        for i, sampling in enumerate(([], [], SEEDED)):
            check_equals_plain(srv, prompts[i % 2], 24, sampling, "speculate draft")
            if i == 1:
                m = srv.metrics()
                drafted = metric(m, "kiln:spec_decode_num_draft_tokens_total")
                accepted = metric(m, "kiln:spec_decode_num_accepted_tokens_total")
                check(drafted > 0 and accepted == drafted,
                      "speculate draft, greedy self-draft: %s of %s drafted tokens accepted" % (accepted, drafted))
    finally:
        srv.stop()
    r = subprocess.run([os.path.join(ARGS.bin, "kiln-serve"), "--model", "x=" + llama, "--speculate",
                        "draft:" + os.path.join(ARGS.artifacts, "cnn.kiln"), "--port", "0"],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode != 0 and "not a decoder artifact" in r.stderr, "a forward model as draft refused at startup")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--artifacts", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--dtype-artifacts", help="ONNX node tests compiled for the v2 dtype checks")
    p.add_argument("--onnx-node-data", default="/usr/share/libonnx-testdata/data/node")
    p.add_argument("--skip", default="", help="comma-separated tests not to run, each reported as SKIPPED (the "
                   "sanitizer runs skip test_timeouts: its 0.3 s request limit also times out ordinary requests "
                   "of a server slowed 5-15x)")
    ARGS = p.parse_args()
    skip = set(filter(None, ARGS.skip.split(",")))
    t0 = time.time()
    srv = Server([])
    try:
        for t in (test_models_and_greedy, test_stream_equals_plain, test_chat, test_concurrent_equal_alone,
                  test_errors, test_v2, test_garbage, test_cancel_and_capacity, test_metrics_and_traces, test_drain):
            t1 = time.time()
            try:
                t(srv)
            except Exception as e:  # a crash of one test is a failure, the others still run
                import traceback
                traceback.print_exc()
                check(False, "%s raised %r" % (t.__name__, e))
            print("%-32s %.2f s" % (t.__name__, time.time() - t1), flush=True)
            check(srv.proc.poll() is None or t is test_drain, "server alive after " + t.__name__)
    finally:
        srv.stop()
    for t in (test_chat_templates, test_timeouts, test_drain_grace_expires, test_loading_then_refused, test_config_file,
              test_v2_dtypes, test_paged, test_prefix_cache, test_speculate):
        if t.__name__ in skip:
            print("SKIPPED: %s (--skip)" % t.__name__, flush=True)
            continue
        t1 = time.time()
        try:
            t()
        except Exception as e:
            import traceback
            traceback.print_exc()
            check(False, "%s raised %r" % (t.__name__, e))
        print("%-32s %.2f s" % (t.__name__, time.time() - t1), flush=True)
    # Startup refuses what it cannot run, with the runtime's message.
    bad = tempfile.NamedTemporaryFile(suffix=".kiln", delete=False)
    bad.write(b"not an artifact")
    bad.close()
    r = subprocess.run([os.path.join(ARGS.bin, "kiln-serve"), "--model", "x=" + bad.name, "--port", "0"],
                       capture_output=True, text=True, timeout=10)
    check(r.returncode == 1 and "startup_failed" in r.stderr and "model 'x'" in r.stderr, "bad artifact refused at startup")
    # A valid artifact for CPU features this host lacks: refused with the runtime's message.
    if "avx512f" in open("/proc/cpuinfo").read():
        print("SKIPPED: incompatible-artifact check (this host has AVX-512)")
    else:
        spr = os.path.join(tempfile.mkdtemp(), "mlp-spr.kiln")
        subprocess.run([os.path.join(ARGS.bin, "kiln-compile"), os.path.join(ARGS.models, "mlp/model.onnx"), "-o", spr,
                        "--target-cpu=sapphirerapids"], check=True, capture_output=True, timeout=60)
        r = subprocess.run([os.path.join(ARGS.bin, "kiln-serve"), "--model", "m=" + spr, "--port", "0"],
                           capture_output=True, text=True, timeout=10)
        check(r.returncode == 1 and "CPU features this host lacks" in r.stderr, "artifact for another CPU refused: %s" %
              r.stderr[-200:])
    print("%d failure(s), %.1f s" % (len(FAILS), time.time() - t0))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
