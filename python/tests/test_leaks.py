"""No growth of the process's memory over many runs (outputs, inputs, errors, profiles)."""

import gc

import numpy as np

import kiln


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_10000_runs_do_not_grow_rss(artifacts):
    s = kiln.load(artifacts("mlp"), threads=1).session()
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    bad = np.zeros((4, 64))

    def work(n):
        for i in range(n):
            y = s.run({"x": x})["probs"]
            assert y.shape == (4, 10)
            if i % 100 == 0:
                try:
                    s.run({"x": bad})
                except kiln.InvalidArgumentError:
                    pass
                s.run({"x": x}, profile=True)

    work(2000)  # warm up: allocator pools, the runtime's arena, interned strings
    gc.collect()
    before = rss_kib()
    work(10000)
    gc.collect()
    grown = rss_kib() - before
    # 10,000 runs leaking even one 160-byte output each would add 1.5 MiB.
    assert grown < 512, f"RSS grew by {grown} KiB over 10,000 runs"


def test_string_outputs_do_not_leak(tmp_path):
    from test_run import passthrough_model

    m = kiln.load(kiln.compile(passthrough_model("string"), tmp_path / "s.kiln"))
    s = m.session()
    x = np.array([["kiln" * 10, "b", "c"]] * 8, dtype=object)
    for _ in range(1000):
        s.run({"x": x})
    gc.collect()
    before = rss_kib()
    for _ in range(5000):
        s.run({"x": x})
    gc.collect()
    grown = rss_kib() - before
    assert grown < 512, f"RSS grew by {grown} KiB over 5,000 string runs"


def test_generations_do_not_leak(artifacts):
    from conftest import model_path

    m = kiln.load(artifacts("gpt2", model_path("lm", "gpt2", "model.onnx"), max_context=64), threads=1)
    tok = kiln.Tokenizer.from_file(model_path("lm", "gpt2", "tokenizer.json"))

    def work(n):
        for i in range(n):
            gen = m.generator(tokenizer=tok)  # a generator (and its caches) made and dropped each time
            text = gen.generate_text("Once upon", 8, temperature=0.7, seed=i)
            assert isinstance(text, str)

    work(50)
    gc.collect()
    before = rss_kib()
    work(300)
    gc.collect()
    grown = rss_kib() - before
    assert grown < 1024, f"RSS grew by {grown} KiB over 300 generations"
