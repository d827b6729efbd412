"""sentence-transformers models for dlpack4j-model's ``SentenceTransformers``, and causal LMs.

Runs once per interpreter as the module ``dlpack4j_text``. Java loads a model with ``load_embedder``
or ``load_cross_encoder`` (which report what the Java side declares: the embedding's dimension),
then builds a ``PythonModel`` whose factory, ``embedder`` or ``cross_encoder``, takes the loaded
model by its key: the weights load once. A causal LM and its tokenizer load with ``load_causal_lm``;
``chat_generator`` takes them and streams a chat's reply, a piece of text an item."""

import importlib.util
import inspect
import itertools
import json
import math
import pathlib
import threading
import weakref
from collections.abc import Callable, Iterator

_loaded: dict[int, object] = {}
_keys = itertools.count()
_lock = threading.Lock()
_schemas: list[object] = []


def _torchvision_usable() -> None:
    """Let transformers import a torchvision whose C operators cannot load.

    A CUDA build of torchvision beside a CPU torch (the only one some package indexes serve) fails
    ``import torchvision`` on registering fake kernels for ``nms`` and ``qnms``; transformers
    imports torchvision whenever it is installed. Their schemas are defined here (never their
    kernels) only when the operator library does not load; a working torchvision is left alone."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return
    import torch

    library = next(pathlib.Path(spec.origin).parent.glob("_C*.so"), None)
    if library is not None:
        try:
            torch.ops.load_library(str(library))
            return
        except OSError:
            pass
    try:
        torch.ops.torchvision.nms  # noqa: B018 - defined already (by another loader here)
        return
    except (AttributeError, RuntimeError):
        pass
    schemas = torch.library.Library("torchvision", "DEF")
    for op in ("nms", "qnms"):
        schemas.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _schemas.append(schemas)  # the library object keeps the schemas defined while it lives


def _quietly(load: Callable[[], object]) -> object:
    """``load()`` without transformers' progress bars (a service's log is no terminal); their setting is kept."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return load()
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def _keep(model: object) -> int:
    with _lock:
        key = next(_keys)
        _loaded[key] = model
        return key


def _take(key: int) -> object:
    with _lock:
        return _loaded.pop(key)


def discard(key: int) -> None:
    """Lets go of a loaded model that no factory took (its ``PythonModel`` failed to build)."""
    with _lock:
        _loaded.pop(key, None)


def load_embedder(path: str, device: str) -> tuple[int, int, int]:
    """Loads ``SentenceTransformer(path)``: (its key, the embedding's dimension, its max_seq_length or -1)."""
    _torchvision_usable()
    from sentence_transformers import SentenceTransformer

    model = _quietly(lambda: SentenceTransformer(path, device=device))
    model.eval()
    dimension, max_seq_length = _dimension(model, path), int(model.max_seq_length or -1)
    return _keep(model), dimension, max_seq_length  # kept last: Java discards only a model whose key it got


def _dimension(model: object, path: str) -> int:
    """The embedding's dimension, as the model reports it."""
    report = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dim = report()
    if dim is None:
        raise ValueError(f"{path}: the model does not say its embedding's dimension")
    return int(dim)


def load_cross_encoder(path: str, device: str) -> tuple[int, int]:
    """Loads ``CrossEncoder(path)``: (its key, its max_length or -1)."""
    _torchvision_usable()
    from sentence_transformers import CrossEncoder

    model = _quietly(lambda: CrossEncoder(path, device=device))
    model.eval()
    max_length = int(getattr(model, "max_length", None) or -1)
    return _keep(model), max_length  # kept last: Java discards only a model whose key it got


def embedder(key: int, normalize: bool, batch_size: int) -> Callable[[list[str]], dict[str, object]]:
    """The call of a loaded ``SentenceTransformer``: texts in, ``embedding`` (float32 [rows, dim])
    and ``tokens`` (each text's tokens after truncation, special tokens included) out.

    It runs as ``encode`` does: the texts sorted by length, longest first, in chunks of
    ``batch_size``, each tokenized (texts beyond ``max_seq_length`` truncated) and run through the
    model's modules (pooling, and normalization if the model has it), then back in order;
    ``normalize`` normalizes as ``encode(normalize_embeddings=True)`` does. It runs under
    ``torch.inference_mode`` and returns one tensor, without ``encode``'s conversions."""
    import torch

    model = _take(key)
    dim = _dimension(model, "the model")

    def run(texts: list[str]) -> dict[str, object]:
        n = len(texts)
        order = sorted(range(n), key=lambda i: -len(texts[i]))
        out = torch.empty(n, dim, dtype=torch.float32)
        tokens = [0] * n
        with torch.inference_mode():
            for start in range(0, n, batch_size):
                rows = order[start : start + batch_size]
                features = model.preprocess([texts[i] for i in rows])
                embeddings = model(features)["sentence_embedding"]
                if normalize:
                    embeddings = torch.nn.functional.normalize(embeddings, p=2, dim=1)
                out[rows] = embeddings.float()
                for i, count in zip(rows, features["attention_mask"].sum(dim=1).tolist(), strict=True):
                    tokens[i] = count
        return {"embedding": out, "tokens": tokens}

    run.model = model
    return run


def cross_encoder(key: int, batch_size: int) -> Callable[[list[str], list[str]], object]:
    """The call of a loaded ``CrossEncoder``: queries and passages in (a pair a row), ``score``
    (float32 [rows]) out: ``CrossEncoder.predict`` of the pairs, its activation applied."""
    import torch

    model = _take(key)

    def run(queries: list[str], passages: list[str]) -> object:
        scores = model.predict(
            list(zip(queries, passages, strict=True)),
            batch_size=batch_size,
            convert_to_tensor=True,
            show_progress_bar=False,
        )
        return scores.reshape(-1).to(torch.float32)

    run.model = model
    return run


def load_causal_lm(path: str, device: str) -> tuple[int, int]:
    """Loads ``AutoModelForCausalLM`` (in eval mode, on ``device``) and ``AutoTokenizer`` from ``path``.

    Returns (their key, the model's context length: its ``max_position_embeddings``, else the
    tokenizer's ``model_max_length``, else -1). ``chat_generator`` takes the pair by the key."""
    _torchvision_usable()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = _quietly(lambda: AutoTokenizer.from_pretrained(path))
    model = _quietly(lambda: AutoModelForCausalLM.from_pretrained(path))
    model.to(device)
    model.eval()
    context_length = _context_length(model, tokenizer)
    return _keep((model, tokenizer)), context_length  # kept last: Java discards only a model whose key it got


def _context_length(model: object, tokenizer: object) -> int:
    """The most tokens (prompt and reply together) the model takes, or -1 where it does not say."""
    positions = getattr(model.config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        return positions
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 1_000_000_000:  # unset: a huge sentinel
        return limit
    return -1


_CHAT_DEFAULTS: dict[str, object] = {"max_new_tokens": 256, "temperature": 0.0, "top_p": 1.0, "seed": None, "stop": []}


def _chat_messages(text: str) -> list[dict[str, object]]:
    """The ``messages`` input: a JSON list of objects, each with a string ``role`` and ``content``."""
    messages = json.loads(text)
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"messages must be a non-empty JSON list of {{role, content}} objects, not {text[:200]!r}")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not all(isinstance(message.get(k), str) for k in ("role", "content")):
            raise ValueError(f"messages[{i}] must be an object with string role and content, not {message!r:.200}")
    return messages


def _chat_parameters(text: str) -> dict[str, object]:
    """The ``parameters`` input (a JSON object; a missing or null entry takes its default), checked."""
    given = json.loads(text) if text.strip() else {}
    if not isinstance(given, dict):
        raise ValueError(f"parameters must be a JSON object, not {text[:200]!r}")
    unknown = sorted(set(given) - set(_CHAT_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown parameters {unknown}; known: {sorted(_CHAT_DEFAULTS)}")
    options = {k: default if given.get(k) is None else given[k] for k, default in _CHAT_DEFAULTS.items()}
    n, temperature, top_p, seed, stop = (options[k] for k in ("max_new_tokens", "temperature", "top_p", "seed", "stop"))
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"max_new_tokens must be an integer of 0 or more, not {n!r}")
    if not _is_number(temperature) or not 0 <= temperature < math.inf:
        raise ValueError(f"temperature must be a finite number of 0 or more, not {temperature!r}")
    if not _is_number(top_p) or not 0 < top_p <= 1:
        raise ValueError(f"top_p must be a number in (0, 1], not {top_p!r}")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ValueError(f"seed must be an integer or null, not {seed!r}")
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise ValueError(f"stop must be a list of strings, not {stop!r}")
    options.update(temperature=float(temperature), top_p=float(top_p), stop=[s for s in stop if s])
    return options


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _eos_ids(model: object, tokenizer: object) -> set[int]:
    """The tokens that end a reply: the generation config's ``eos_token_id`` (one or a list) and the tokenizer's."""
    ids: set[int] = set()
    config = getattr(model, "generation_config", None)
    for eos in (getattr(config, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None)):
        if isinstance(eos, int):
            ids.add(eos)
        elif isinstance(eos, (list, tuple)):
            ids.update(int(i) for i in eos)
    return ids


def chat_generator(
    key: int, max_batch: int = 1, max_delay: float = 0.0
) -> Callable[[list[str], list[str]], Iterator[dict[str, object]]]:
    """The call of a loaded causal LM (``load_causal_lm``) that streams a chat's reply.

    It takes two text inputs of one row each: ``messages``, a JSON list of ``{"role", "content"}``
    objects, and ``parameters``, a JSON object with ``max_new_tokens`` (256), ``temperature`` (0:
    greedy), ``top_p`` (1.0), ``seed`` (an integer, or null for a fresh one) and ``stop`` (a list of
    strings, []). The prompt is ``tokenizer.apply_chat_template(messages, add_generation_prompt=True)``,
    and a malformed input or a prompt that fills the context is refused by the call itself.

    The call returns a generator, which decodes a token a step on the model's KV cache and yields
    ``{"delta": text}`` for each piece of new text (a token that adds no text, or only part of a
    character, yields nothing yet; no prefix of a stop string is yielded before it is known not to
    be one), then ``{"delta": "", "finish": {"finish_reason": "stop" | "length", "prompt_tokens": n,
    "completion_tokens": m}}``. "stop": an end-of-sequence token (counted, not in the text) or a
    stop string (the text ends before it); "length": ``max_new_tokens`` or the context reached.
    The deltas of a reply that no stop string cut join to ``tokenizer.decode(ids,
    skip_special_tokens=True)`` of its tokens; greedy, its tokens are ``model.generate``'s
    (``do_sample=False``). Closed early, it lets go of its KV cache.

    With ``max_batch`` over 1, the decode steps of the streams that wait for their next token at
    the same moment run as one forward pass of up to ``max_batch`` rows (``_DecodeSteps``); a step
    waits up to ``max_delay`` seconds for the other open streams. A stream alone takes the
    one-stream path."""
    import torch

    model, tokenizer = _take(key)
    context = _context_length(model, tokenizer)
    keep_one = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    lock = threading.Lock()
    streams = [0]
    steps = _DecodeSteps(model, keep_one, max_batch, max_delay, lambda: streams[0])

    def run(messages: list[str], parameters: list[str]) -> Iterator[dict[str, object]]:
        if len(messages) != 1 or len(parameters) != 1:
            raise ValueError(
                f"a chat takes one row of messages and parameters, not {len(messages)} and {len(parameters)}"
            )
        conversation = _chat_messages(messages[0])
        options = _chat_parameters(parameters[0])
        prompt = tokenizer.apply_chat_template(
            conversation, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        if isinstance(prompt, dict) or hasattr(prompt, "input_ids"):
            prompt = prompt["input_ids"]
        prompt = [int(i) for i in prompt]
        if context > 0 and len(prompt) >= context:
            raise ValueError(f"the prompt's {len(prompt)} tokens leave no room in the model's context of {context}")
        return stream(prompt, options)

    def stream(prompt: list[int], options: dict[str, object]) -> Iterator[dict[str, object]]:
        budget = options["max_new_tokens"]
        if context > 0:
            budget = min(budget, context - len(prompt))
        temperature, top_p, stop = options["temperature"], options["top_p"], options["stop"]
        hold = max((len(s) for s in stop), default=1) - 1
        eos = _eos_ids(model, tokenizer)
        sampler = None
        if temperature > 0:
            sampler = torch.Generator()
            if options["seed"] is None:
                sampler.seed()
            else:
                sampler.manual_seed(options["seed"])
        with lock:
            streams[0] += 1
        with _lock:
            _decode_totals["open"] += 1
        cache = None
        try:
            device = model.device
            step = torch.tensor([prompt], dtype=torch.long, device=device)
            generated = 0
            reply = _ReplyText(tokenizer)  # the text of the generated tokens but an end-of-sequence one
            text, emitted, finish = "", 0, "length"
            while generated < budget:
                with torch.inference_mode():
                    if cache is None:  # the prompt: a forward pass of its own
                        out = model(input_ids=step, use_cache=True, **keep_one)
                        cache, logits = out.past_key_values, out.logits[0, -1]
                        del out
                    else:
                        cache, logits = steps.step(step, cache, len(prompt) + generated - 1)
                    token = _next_token(logits, temperature, top_p, sampler)
                    del logits
                generated += 1
                if token in eos:
                    finish = "stop"
                    break
                text = reply.add(token)
                cut = min((i for i in (text.find(s, emitted) for s in stop) if i >= 0), default=-1)
                if cut >= 0:
                    if cut > emitted:
                        yield {"delta": text[emitted:cut]}
                    emitted = len(text)
                    finish = "stop"
                    break
                # A trailing U+FFFD may be a character whose bytes have not all come yet.
                ready = len(text.rstrip("\ufffd")) - hold
                if ready > emitted:
                    yield {"delta": text[emitted:ready]}
                    emitted = ready
                step = torch.tensor([[token]], dtype=torch.long, device=device)
            if emitted < len(text):
                yield {"delta": text[emitted:]}
            yield {
                "delta": "",
                "finish": {"finish_reason": finish, "prompt_tokens": len(prompt), "completion_tokens": generated},
            }
        finally:
            left = cache.batch if isinstance(cache, _Rows) else None
            cache = None
            with lock:
                streams[0] -= 1
            with _lock:
                _decode_totals["open"] -= 1
            steps.left(left)
            del left

    def open_streams() -> int:
        """How many of the call's generators have started and not yet ended (or been closed)."""
        with lock:
            return streams[0]

    run.model = model
    run.tokenizer = tokenizer
    run.context_length = context
    run.open_streams = open_streams
    run.decode_steps = steps
    return run


class _ReplyText:
    """A reply's text as its tokens come: after each token, ``tokenizer.decode(tokens,
    skip_special_tokens=True, clean_up_tokenization_spaces=False)`` of all the tokens so far.

    Where that decode is a ``tokenizers`` byte-level decoder's, called by transformers'
    ``TokenizersBackend`` as it is (``_decodes_bytes``), the text is kept up to its last whole
    character and only the tokens after that are decoded again. The decoder joins the tokens' bytes
    and decodes them as UTF-8 once, malformed bytes replaced, and after a whole character that
    decoding starts afresh: the kept text and the decoded rest join to the whole decode. Any other
    tokenizer decodes all the tokens after each one."""

    __slots__ = ("_bytes", "_decode", "_head", "_start", "_tokens")

    def __init__(self, tokenizer: object) -> None:
        self._bytes = _decodes_bytes(tokenizer)
        self._decode = tokenizer.backend_tokenizer.decode if self._bytes else tokenizer.decode
        self._tokens: list[int] = []
        self._start = 0  # the tokens before it are in ``_head``
        self._head = ""  # their text, ending with a whole character (or empty)

    def add(self, token: int) -> str:
        """Adds a token; returns the text of all the tokens added."""
        tokens = self._tokens
        tokens.append(token)
        if not self._bytes:
            return self._decode(tokens, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        tail = self._decode(tokens[self._start :], skip_special_tokens=True)
        text = self._head + tail
        if tail and tail[-1] != "\ufffd":  # a whole character last (a U+FFFD may be bytes still coming)
            self._head, self._start = text, len(tokens)
        return text


def _decodes_bytes(tokenizer: object) -> bool:
    """Whether ``tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)`` is
    its ``tokenizers`` backend's own decode of ``ids`` by a byte-level decoder (GPT-2's BPE and its kind):
    transformers' ``TokenizersBackend``, its ``decode`` and ``_decode`` not overridden (nor set on the instance)."""
    try:
        from tokenizers import decoders
        from transformers.tokenization_utils_base import PreTrainedTokenizerBase
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:
        return False
    kind = type(tokenizer)
    own = vars(tokenizer) if hasattr(tokenizer, "__dict__") else {}
    return (
        isinstance(tokenizer, TokenizersBackend)
        and "decode" not in own  # nor patched on the instance
        and "_decode" not in own
        and kind.decode is PreTrainedTokenizerBase.decode
        and kind._decode is TokenizersBackend._decode
        and type(tokenizer.backend_tokenizer.decoder) is decoders.ByteLevel
    )


class _DecodeSteps:
    """The decode steps of one causal LM's streams: those that wait for their next token at once run
    as one forward pass.

    Each stream's thread calls ``step``; the first to find no step running leads: it takes itself
    and up to ``max_batch - 1`` waiting streams, runs them, hands each its cache and logits, and
    hands the lead to the stream waiting longest, if any; the others wait (without the GIL), each
    on its own event, woken only for its result or the lead. Before it takes them, the leader waits up to
    ``max_delay`` seconds while fewer streams wait than are open (``open_streams()``, up to
    ``max_batch``): a stream alone never waits.
    A step of one stream runs as a lone stream does, so that its tokens are the one-stream path's.
    A step of several left-pads their KV caches to the longest, masks the padding, and gives each
    stream its own positions; it runs only where every cache layer is a plain ``DynamicLayer`` (no
    sliding window, no recurrent state), else each stream steps alone. With ``max_batch`` 1 there is
    no batch to lead: the steps run one at a time under a lock, each as a lone stream's."""

    def __init__(
        self, model: object, keep_one: dict[str, int], max_batch: int, max_delay: float, open_streams: Callable[[], int]
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        if not 0 <= max_delay < math.inf:
            raise ValueError(f"max_delay must be a finite number of seconds of 0 or more, not {max_delay!r}")
        self._model = model
        self._keep_one = keep_one
        self._max_batch = max_batch
        self._max_delay = max_delay
        self._open_streams = open_streams
        self._cond = threading.Condition()
        self._alone = threading.Lock()  # a step's, where max_batch is 1
        self._waiting: list[_Step] = []
        self._running = False
        self._left: list[weakref.ref[_Batch]] = []  # batches a stream left: never reused, let go of
        self.batches = 0  # forward passes run by ``step``
        self.rows = 0  # the streams' steps they ran

    def step(self, token: object, cache: object, length: int) -> tuple[object, object]:
        """Feed ``token`` (a ``[1, 1]`` tensor) to a stream whose ``cache`` holds ``length`` tokens; return
        its cache with the token and its next-token logits (a vector)."""
        if self._max_batch == 1:  # no batch to lead: the steps run one at a time, as a leader runs them
            with self._alone:  # no order among the waiting steps: Java's stream threads take the streams in turns
                self.batches += 1
                self.rows += 1
                with _lock:
                    _decode_totals["steps"] += 1
                    _decode_totals["rows"] += 1
                out = self._model(input_ids=token, past_key_values=cache, use_cache=True, **self._keep_one)
            return out.past_key_values, out.logits[0, -1]
        mine = _Step(token, cache, length)
        with self._cond:
            self._waiting.append(mine)
            lead = not self._running
            if lead:
                self._running = True
            else:
                self._cond.notify()  # a leader waiting for more streams counts this one
        if not lead:
            mine.wake.wait()  # its step ran, or the lead is handed to it
            if mine.done:
                return mine.result()
        batch = [mine]
        try:
            with self._cond:
                batch = self._take(mine)
            self._run(batch)
        except BaseException as e:  # noqa: BLE001 (every stream of the batch fails with it, then it is raised)
            with self._cond:
                if mine in self._waiting:  # _take failed before it took the batch
                    self._waiting.remove(mine)
            for s in batch:
                s.fail(e, s is mine)
        finally:
            for s in batch:
                if s is not mine:
                    s.wake.set()
            self._hand_on()
        return mine.result()

    def left(self, batch: "_Batch | None") -> None:
        """A stream ended (its rows were of ``batch``, if any): a leader waiting for the open streams counts
        again, and the batch, never reused now, lets go of its other streams' rows (they copy them out)."""
        with self._cond:
            self._cond.notify()
            if batch is None:
                return
            self._left.append(weakref.ref(batch))
            if self._running:
                return  # the leader lets go of it before it hands the lead on
            self._running = True
        self._hand_on()

    def _hand_on(self) -> None:
        """At the end of a lead: the batches streams left copy their other rows out; then the stream waiting
        longest takes the lead (woken alone), or none does."""
        while True:
            with self._cond:
                refs, self._left = self._left, []
                if not refs:
                    after = self._waiting[0] if self._waiting else None
                    self._running = after is not None
                    break
            try:
                for ref in refs:
                    old = ref()
                    if old is not None:
                        for held in old.holders:
                            rows = held()
                            if rows is not None and rows.batch is old:
                                rows.detach()
                        old.holders.clear()
            except Exception:  # noqa: BLE001 (the rows stay in the old batch; the lead must go on)
                pass
        if after is not None:
            after.wake.set()

    def _take(self, mine: "_Step") -> list["_Step"]:
        """The leader's batch, under the lock: itself first, then those waiting longest, after the delay."""
        if self._max_batch > 1 and self._max_delay > 0 and _packable(mine.cache):
            deadline = _now() + self._max_delay
            while len(self._waiting) < min(self._max_batch, self._open_streams()) and (left := deadline - _now()) > 0:
                self._cond.wait(left)
        self._waiting.remove(mine)
        batch = [mine, *self._waiting[: self._max_batch - 1]]
        del self._waiting[: self._max_batch - 1]
        return batch

    def _run(self, batch: list["_Step"]) -> None:
        import torch

        alone = len(batch) == 1 or not all(_packable(s.cache) for s in batch)
        self.batches += len(batch) if alone else 1
        self.rows += len(batch)
        with _lock:
            _decode_totals["steps"] += len(batch) if alone else 1
            _decode_totals["rows"] += len(batch)
        if alone:
            with self._cond:  # a stream stepping alone leaves its batch, never reused now
                self._left.extend(
                    weakref.ref(s.cache.batch) for s in batch if isinstance(s.cache, _Rows) and s.cache.batch
                )
            for s in batch:
                out = self._model(
                    input_ids=s.token, past_key_values=_unpacked(s.cache), use_cache=True, **self._keep_one
                )
                s.done_with(out.past_key_values, out.logits[0, -1])
                del out
            return
        from transformers import DynamicCache

        shared = _reusable(batch)
        if shared is not None:  # the last step's streams, all of them: its cache grows by a column in place
            batch.sort(key=lambda s: s.cache.row)
            cache, width = shared.cache, shared.width
        else:  # another set of streams: their caches left-padded into one, [rows, heads, width, dim] a layer
            own = [_layers(s.cache) for s in batch]
            width = max(s.length for s in batch)
            padded = []
            for i, (keys, values) in enumerate(own[0]):
                k = keys.new_zeros((len(batch), keys.shape[0], width, keys.shape[2]))
                v = values.new_zeros((len(batch), values.shape[0], width, values.shape[2]))
                for row, s in enumerate(batch):
                    k[row, :, width - s.length :] = own[row][i][0]
                    v[row, :, width - s.length :] = own[row][i][1]
                padded.append((k, v))
            del own
            _let_go(batch)
            cache = DynamicCache(padded)
            del padded
        lengths = torch.tensor([s.length for s in batch], dtype=torch.long, device=batch[0].token.device)
        mask = (torch.arange(width + 1, device=lengths.device)[None, :] >= (width - lengths)[:, None]).long()
        out = self._model(
            input_ids=torch.cat([s.token for s in batch]),
            attention_mask=mask,
            position_ids=lengths[:, None],
            past_key_values=cache,
            use_cache=True,
            **self._keep_one,
        )
        logits = out.logits[:, -1]
        grown = _Batch(out.past_key_values, width + 1)
        del out, cache
        for row, s in enumerate(batch):
            s.done_with(grown.rows_of(row, s.length + 1), logits[row])


class _Batch:
    """The KV cache a batched step returned, [rows, heads, width, dim] a layer, each row a stream's
    cache left-padded to ``width``; its streams hold ``_Rows`` of it (by weak reference here)."""

    def __init__(self, cache: object, width: int) -> None:
        self.cache, self.width = cache, width
        self.holders: list[weakref.ref[_Rows]] = []

    def rows_of(self, row: int, length: int) -> "_Rows":
        rows = _Rows(self, row, length)
        self.holders.append(weakref.ref(rows))
        return rows


class _Rows:
    """A stream's cache as its row of a ``_Batch`` (``batch`` set), or as its own layers (``own``)."""

    __slots__ = ("__weakref__", "batch", "length", "own", "row")

    def __init__(self, batch: _Batch, row: int, length: int) -> None:
        self.batch: _Batch | None = batch
        self.row, self.length = row, length
        self.own: tuple[tuple[object, object], ...] | None = None

    def layers(self, copy: bool) -> tuple[tuple[object, object], ...]:
        """Its layers' (keys, values), [heads, length, dim]: views of the batch's, or copies."""
        if self.batch is None:
            return self.own
        start = self.batch.width - self.length
        return tuple(
            (k[self.row, :, start:].clone(), v[self.row, :, start:].clone()) if copy
            else (k[self.row, :, start:], v[self.row, :, start:])
            for k, v in ((layer.keys, layer.values) for layer in self.batch.cache.layers)
        )  # fmt: skip

    def detach(self) -> None:
        """Copies its rows out of the batch's cache and lets go of it."""
        if self.batch is not None:
            self.own, self.batch = self.layers(copy=True), None


def _reusable(batch: list["_Step"]) -> "_Batch | None":
    """The last step's ``_Batch`` when ``batch`` is exactly its streams, each one column on, else None."""
    first = batch[0].cache
    if not isinstance(first, _Rows) or first.batch is None:
        return None
    shared = first.batch
    if len(batch) != len(shared.holders):
        return None
    rows = set()
    for s in batch:
        c = s.cache
        if not isinstance(c, _Rows) or c.batch is not shared or c.length != s.length:
            return None
        rows.add(c.row)
    return shared if len(rows) == len(shared.holders) else None


def _let_go(batch: list["_Step"]) -> None:
    """After a new batch's caches were copied: the streams of the batches they came from that are not
    in it copy their rows out, so that no old batch's cache stays alive for one slow stream."""
    taken = {id(s.cache) for s in batch}
    olds = {id(s.cache.batch): s.cache.batch for s in batch if isinstance(s.cache, _Rows) and s.cache.batch}
    for old in olds.values():
        for ref in old.holders:
            rows = ref()
            if rows is not None and id(rows) not in taken and rows.batch is old:
                rows.detach()
        old.holders.clear()
    for s in batch:
        if isinstance(s.cache, _Rows):
            s.cache.batch = None  # copied into the new batch already


_decode_totals = {"steps": 0, "rows": 0, "open": 0}


def decode_stats() -> dict[str, int]:
    """The decode steps every chat model of this interpreter ran (``steps``), the streams' steps in
    them (``rows``: ``rows / steps`` is the mean batch), and the chat streams open now (``open``:
    started, not yet ended or closed)."""
    with _lock:
        return dict(_decode_totals)


class _Step:
    """One stream's decode step: its token and cache in, its cache and logits (or the error) out."""

    __slots__ = ("_own_error", "cache", "done", "error", "length", "logits", "token", "wake")

    def __init__(self, token: object, cache: object, length: int) -> None:
        self.token, self.cache, self.length = token, cache, length
        self.wake = threading.Event()  # set once its step ran, or to hand it the lead
        self.logits = None
        self.error: BaseException | None = None
        self._own_error = False
        self.done = False

    def done_with(self, cache: object, logits: object) -> None:
        self.cache, self.logits, self.done = cache, logits, True

    def fail(self, error: BaseException, own: bool) -> None:
        if not self.done:
            self.error, self._own_error, self.done = error, own, True

    def result(self) -> tuple[object, object]:
        if self.error is not None:
            if self._own_error:
                raise self.error
            raise RuntimeError(f"the decode step shared with other streams failed: {self.error!r}") from self.error
        return self.cache, self.logits


def _packable(cache: object) -> bool:
    """Whether a stream's cache can join a batched step: a ``_Rows`` of one, or a ``DynamicCache`` of one
    row whose layers are all plain ``DynamicLayer`` (they pad on the left)."""
    if isinstance(cache, _Rows):
        return True
    layers = getattr(cache, "layers", None)
    if not layers or not all(type(layer).__name__ == "DynamicLayer" for layer in layers):
        return False
    return all(layer.keys.shape[0] == 1 and layer.values.shape[0] == 1 for layer in layers)


def _layers(cache: object) -> tuple[tuple[object, object], ...]:
    """A stream's cache as its layers' (keys, values), each [heads, length, dim] (views where they can be)."""
    if isinstance(cache, _Rows):
        return cache.layers(copy=False)
    return tuple((layer.keys[0], layer.values[0]) for layer in cache.layers)


def _unpacked(cache: object) -> object:
    """A stream's cache as the model takes it: a ``DynamicCache`` (one made of its rows of a batch)."""
    if not isinstance(cache, _Rows):
        return cache
    from transformers import DynamicCache

    own = DynamicCache([(k[None], v[None]) for k, v in cache.layers(copy=False)])  # copies them
    cache.batch, cache.own = None, None
    return own


def _now() -> float:
    import time

    return time.monotonic()


def _next_token(logits: object, temperature: float, top_p: float, sampler: object) -> int:
    """The argmax of ``logits`` (temperature 0), or a token sampled from their softmax at ``temperature``,
    cut to the smallest set of most likely tokens whose probability reaches ``top_p``, by ``sampler``."""
    import torch

    if temperature == 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float() / temperature, dim=-1).cpu()
    if top_p >= 1:
        return int(torch.multinomial(probs, 1, generator=sampler))
    probs, order = torch.sort(probs, descending=True)
    kept = int(torch.count_nonzero(torch.cumsum(probs, 0) - probs < top_p))
    return int(order[torch.multinomial(probs[: max(kept, 1)], 1, generator=sampler)])
