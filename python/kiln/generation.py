"""Autoregressive decoding with a decoder artifact (one compiled with a KV cache)."""

from typing import Iterable, Iterator, List, NamedTuple, Optional, Sequence, Union

from . import _runtime


class Token(NamedTuple):
    """One generated token: its id, and with a tokenizer the text it completes (complete UTF-8
    only: a character split across tokens comes with the token that ends it)."""
    id: int
    text: Optional[str]


class Generator:
    """Decodes with a decoder artifact: ``for tok in gen.generate(prompt, 32): ...``.

    The KV caches are the runtime's, written in place each step. One generation at a time per
    generator; ``cancel()`` from any thread ends it after the current step. ``stats`` and
    ``finish_reason`` describe the last generation (as ``kiln-run generate --stats`` does).
    """

    def __init__(self, model, tokenizer=None, max_context: int = 0, threads: Optional[int] = None):
        self.model = model
        self._g = _runtime.Generator(model._handle_for(threads), max_context, tokenizer)
        self._batch = None  # (finish reasons, stats) of the last generate_batch

    @property
    def tokenizer(self):
        return self._g.tokenizer

    @property
    def vocab_size(self) -> int:
        return self._g.vocab_size

    @property
    def max_context(self) -> int:
        """KV cache capacity in tokens (prompt + new)."""
        return self._g.max_context

    def generate(self, prompt: Union[str, Sequence[int]], max_new_tokens: int = 64, *,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0,
                 repetition_penalty: float = 1.0, seed: int = 0, stop: Optional[Iterable[int]] = None,
                 add_special: bool = True) -> Iterator[Token]:
        """Starts a generation and returns an iterator of :class:`Token`.

        ``prompt``: token ids, or text (needs a tokenizer; encoded with its special tokens unless
        ``add_special=False``). Sampling as in ``kiln-run generate``: ``temperature`` 0 is greedy;
        the same ``seed`` gives the same tokens. ``stop``: ids that end the sequence (included);
        default the tokenizer's EOS, if any. The prompt runs here (errors are raised now); each
        ``next()`` runs one decode step with the GIL released.
        """
        stop_ids = None if stop is None else [int(s) for s in stop]
        self._batch = None
        self._g._start(prompt, max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty,
                       seed, stop_ids, add_special)
        return self._tokens()

    def _tokens(self) -> Iterator[Token]:
        step = self._g._next
        while True:
            r = step()
            if r is None:
                return
            yield Token(r[0], r[1])

    def generate_ids(self, prompt, max_new_tokens: int = 64, **sampling) -> List[int]:
        """The new token ids of a whole generation."""
        return [t.id for t in self.generate(prompt, max_new_tokens, **sampling)]

    def generate_text(self, prompt, max_new_tokens: int = 64, **sampling) -> str:
        """The new text of a whole generation (needs a tokenizer)."""
        if self.tokenizer is None:
            raise ValueError("generate_text needs a tokenizer: model.generator(tokenizer=...)")
        return "".join(t.text for t in self.generate(prompt, max_new_tokens, **sampling))

    def generate_batch(self, prompts: Sequence[Union[str, Sequence[int]]], max_new_tokens: int = 64, *,
                       temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0,
                       repetition_penalty: float = 1.0, seed: int = 0, stop: Optional[Iterable[int]] = None,
                       add_special: bool = True, speculate: Union[None, str, "Generator"] = None,
                       draft_tokens: int = 4, lookup_ngram: int = 3) -> List[List[int]]:
        """Decodes several prompts as one batch (left-padded, one model run per step for all of
        them; the C API's ``kiln_generate``) and returns each sequence's new token ids. Text
        prompts need a tokenizer. Sampling and ``stop`` as in :meth:`generate`;
        ``finish_reasons`` and ``stats`` describe the batch afterwards. Not streamed: the whole
        batch runs with the GIL released; ``cancel()`` from another thread stops it.

        ``speculate`` (one prompt; ignored for larger batches, where it costs throughput):
        ``"lookup"`` proposes up to ``draft_tokens`` tokens that followed an earlier occurrence of
        the last ``lookup_ngram`` tokens; a :class:`Generator` of a smaller decoder with the same
        vocabulary drafts ``draft_tokens`` tokens greedily. One model run verifies each draft; the
        tokens are those of decoding without it (greedy or sampled), and ``stats`` gains
        ``draft_tokens`` and ``accepted_tokens``."""
        ids = []
        for p in prompts:
            if isinstance(p, str):
                if self.tokenizer is None:
                    raise ValueError("a text prompt needs a tokenizer: model.generator(tokenizer=...)")
                p = self.tokenizer.encode(p, add_special=add_special)
            ids.append([int(t) for t in p])
        stop_ids = None if stop is None else [int(s) for s in stop]
        lookup, draft = 0, None
        if isinstance(speculate, Generator):
            draft = speculate._g
        elif speculate == "lookup":
            lookup = draft_tokens
        elif speculate is not None:
            raise ValueError("speculate must be None, 'lookup' or a Generator (a draft model), got %r" % (speculate,))
        if draft_tokens < 1 or lookup_ngram < 1:
            raise ValueError("draft_tokens and lookup_ngram must be >= 1")
        tokens, reasons, stats = self._g._generate_batch(ids, max_new_tokens, temperature, top_k, top_p, min_p,
                                                         repetition_penalty, seed, stop_ids, lookup, lookup_ngram,
                                                         draft, draft_tokens)
        self._batch = (reasons, stats)
        return tokens

    @property
    def finish_reasons(self) -> List[str]:
        """Per sequence of the last :meth:`generate_batch`: 'stop_token', 'length', 'cancelled' or 'context'."""
        return list(self._batch[0]) if self._batch else []

    def cancel(self) -> None:
        """Ends the current generation after its current step; safe from any thread."""
        self._g.cancel()

    @property
    def finish_reason(self) -> str:
        """'stop_token', 'length', 'cancelled', 'context' (cache full) or 'none' (running)."""
        return self._g.finish_reason

    @property
    def stats(self) -> dict:
        """prompt_tokens, new_tokens, steps, time_to_first_token_ms, decode_ms,
        inter_token_median_ms, inter_token_p99_ms, tokens_per_second (and finish_reason) of the
        last generation or batch."""
        if self._batch:
            return dict(self._batch[1])
        return self._g.stats
