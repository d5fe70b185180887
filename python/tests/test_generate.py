"""Decoding from Python equals kiln-run generate's (same artifact, prompt and sampling)."""

import os
import subprocess
import threading

import pytest

import kiln
from conftest import model_path

FAMILIES = ["gpt2", "llama"]


@pytest.fixture(scope="module", params=FAMILIES)
def lm(request, artifacts):
    family = request.param
    path = artifacts(family, model_path("lm", family, "model.onnx"), max_context=64)
    tok = kiln.Tokenizer.from_file(model_path("lm", family, "tokenizer.json"))
    return family, path, tok


def kiln_run_generate(kiln_bin, artifact, *args):
    r = subprocess.run([os.path.join(kiln_bin, "kiln-run"), "generate", artifact, *args],
                       capture_output=True, check=True)
    return r.stdout


SAMPLINGS = [
    ({}, []),
    ({"temperature": 0.8, "top_k": 40, "seed": 7}, ["--temperature", "0.8", "--top-k", "40", "--seed", "7"]),
    ({"temperature": 1.2, "top_p": 0.9, "seed": 3, "repetition_penalty": 1.3},
     ["--temperature", "1.2", "--top-p", "0.9", "--seed", "3", "--repetition-penalty", "1.3"]),
]


@pytest.mark.parametrize("sampling,flags", SAMPLINGS)
def test_ids_equal_kiln_run(lm, kiln_bin, sampling, flags):
    family, path, _ = lm
    prompt = [1, 17, 42, 300, 7]
    want = kiln_run_generate(kiln_bin, path, "--prompt-ids", ",".join(map(str, prompt)), "--ids",
                             "--max-new-tokens", "20", *flags).split()
    gen = kiln.load(path).generator()
    got = [t.id for t in gen.generate(prompt, 20, **sampling)]
    assert got == [int(w) for w in want]
    assert len(got) == 20 and gen.finish_reason == "length"
    st = gen.stats
    assert st["new_tokens"] == 20 and st["prompt_tokens"] == len(prompt) and st["steps"] == 19
    assert st["tokens_per_second"] > 0 and st["time_to_first_token_ms"] > 0


def test_text_equals_kiln_run(lm, kiln_bin):
    family, path, tok = lm
    prompt = "Once upon a time"
    flags = ["--temperature", "0.9", "--top-k", "50", "--seed", "11"]
    want = kiln_run_generate(kiln_bin, path, "--tokenizer", model_path("lm", family, "tokenizer.json"),
                             "--prompt", prompt, "--max-new-tokens", "24", *flags)
    gen = kiln.load(path).generator(tokenizer=tok)
    pieces = list(gen.generate(prompt, 24, temperature=0.9, top_k=50, seed=11))
    text = "".join(p.text for p in pieces)
    assert want.endswith(b"\n")
    assert text.encode() == want[:-1]
    # The streamed pieces add up to decoding all ids at once (special tokens skipped).
    assert text == tok.decode([p.id for p in pieces], skip_special=True)


def test_stop_tokens_and_eos(lm):
    family, path, tok = lm
    gen = kiln.load(path).generator(tokenizer=tok)
    ids = gen.generate_ids([1, 2, 3], 15)
    # Stop at the third generated token: it ends the sequence and is included.
    stop_at = ids[2]
    first = ids.index(stop_at)
    got = gen.generate_ids([1, 2, 3], 15, stop=[stop_at])
    assert got == ids[: first + 1] and gen.finish_reason == "stop_token"
    assert tok.eos_id is not None and tok.id_to_token(tok.eos_id) in ("<|endoftext|>", "</s>")


def test_context_limit_and_errors(lm):
    family, path, _ = lm
    gen = kiln.load(path).generator(max_context=8)
    assert gen.max_context == 8
    ids = gen.generate_ids([1, 2, 3, 4, 5], 50)
    # 5 prompt tokens + the first sample, then one decode step per cache slot left.
    assert gen.finish_reason == "context" and len(ids) == 8 - 5 + 1
    with pytest.raises(kiln.OutOfRangeError):
        gen.generate(list(range(1, 10)), 4)
    with pytest.raises(kiln.InvalidArgumentError):
        gen.generate([1, 100000], 4)  # outside the vocabulary
    with pytest.raises(kiln.InvalidArgumentError):
        gen.generate("text", 4)  # no tokenizer
    with pytest.raises(kiln.InvalidArgumentError):
        gen.generate([1, 2], 0)
    with pytest.raises(kiln.InvalidArgumentError, match="token ids"):
        gen.generate([1, "two"], 4)
    with pytest.raises(kiln.InvalidArgumentError):
        gen.generate([], 4)  # an empty prompt
    with pytest.raises(kiln.InvalidArgumentError):
        gen.generate([1, 2], 4, top_p=1.5)


def test_cancel_from_another_thread(lm):
    family, path, _ = lm
    gen = kiln.load(path).generator()
    seen = []
    for t in gen.generate([1, 2, 3], 50):
        seen.append(t.id)
        if len(seen) == 3:
            th = threading.Thread(target=gen.cancel)
            th.start()
            th.join()
    assert len(seen) == 3 and gen.finish_reason == "cancelled"
    assert gen.stats["new_tokens"] == 3
    # The generator is reusable after a cancel.
    assert len(gen.generate_ids([1, 2, 3], 4)) == 4


def test_tokenizer(lm):
    family, _, tok = lm
    ids = tok.encode("Hello world, hello kiln!")
    assert ids and all(0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids, skip_special=True) == "Hello world, hello kiln!"
    with pytest.raises(kiln.InvalidArgumentError):
        tok.decode([tok.vocab_size + 5])
    with open(model_path("lm", family, "tokenizer.json")) as f:
        again = kiln.Tokenizer.from_str(f.read())
    assert again.encode("Hello world") == tok.encode("Hello world")
    with pytest.raises(kiln.ArtifactIOError):
        kiln.Tokenizer.from_file("/nonexistent/tokenizer.json")
    with pytest.raises(kiln.InvalidArgumentError):
        kiln.Tokenizer.from_str("{not json")


def test_batch_equals_kiln_run(lm, kiln_bin):
    family, path, _ = lm
    prompts = [[1, 2, 3, 4], [7, 8], [300, 5, 9]]
    args = []
    for p in prompts:
        args += ["--prompt-ids", ",".join(map(str, p))]
    out = kiln_run_generate(kiln_bin, path, *args, "--ids", "--max-new-tokens", "6", "--temperature", "0.7",
                            "--seed", "3").decode()
    want = [[] for _ in prompts]
    for line in out.split("\n"):
        if line.strip():
            seq, tok = line.split()
            want[int(seq.strip("[]"))].append(int(tok))
    gen = kiln.load(path).generator()
    got = gen.generate_batch(prompts, 6, temperature=0.7, seed=3)
    assert got == want
    assert gen.finish_reasons == ["length"] * 3
    assert gen.stats["new_tokens"] == 18 and gen.stats["prompt_tokens"] == 9
    # The stats of a later single generation are its own again.
    gen.generate_ids([1, 2], 2)
    assert gen.stats["new_tokens"] == 2


# A prompt whose greedy continuation repeats text of its own (the tiny llama falls into a loop).
REPEATING = [5, 17, 300, 42, 99, 7, 256, 11, 3, 64, 9, 120, 33, 5, 17, 300]


@pytest.mark.parametrize("sampling", [{}, {"temperature": 0.8, "top_k": 40, "seed": 7}])
def test_speculation_gives_the_tokens_of_plain_decoding(lm, sampling):
    _, path, _ = lm
    model = kiln.load(path)
    gen = model.generator()
    plain = gen.generate_batch([REPEATING], 48, **sampling)
    assert "draft_tokens" not in gen.stats
    # Prompt lookup: the same tokens; something was drafted (the context repeats) and counted.
    looked = gen.generate_batch([REPEATING], 48, speculate="lookup", draft_tokens=4, **sampling)
    assert looked == plain
    assert gen.stats["draft_tokens"] > 0 and 0 <= gen.stats["accepted_tokens"] <= gen.stats["draft_tokens"]
    # A draft model: the model drafting for itself proposes the greedy tokens, so greedy decoding
    # accepts every one; sampled, the tokens are still plain decoding's.
    drafter = model.generator()
    drafted = gen.generate_batch([REPEATING], 48, speculate=drafter, draft_tokens=3, **sampling)
    assert drafted == plain
    assert gen.stats["draft_tokens"] > 0
    if not sampling:
        assert gen.stats["accepted_tokens"] == gen.stats["draft_tokens"]
        assert gen.stats["steps"] < 47  # fewer model runs than one per token


def test_speculation_errors(lm):
    _, path, _ = lm
    gen = kiln.load(path).generator()
    with pytest.raises(ValueError, match="speculate"):
        gen.generate_batch([REPEATING], 4, speculate="ngram")
    with pytest.raises(ValueError, match="draft_tokens"):
        gen.generate_batch([REPEATING], 4, speculate="lookup", draft_tokens=0)
    with pytest.raises(kiln.InvalidArgumentError, match="its own draft"):
        gen.generate_batch([REPEATING], 4, speculate=gen)
