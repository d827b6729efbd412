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


def chat_generator(key: int) -> Callable[[list[str], list[str]], Iterator[dict[str, object]]]:
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
    (``do_sample=False``). Closed early, it lets go of its KV cache."""
    import torch

    model, tokenizer = _take(key)
    context = _context_length(model, tokenizer)
    keep_one = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    lock = threading.Lock()
    streams = [0]

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
        cache = None
        try:
            step = torch.tensor([prompt], dtype=torch.long, device=model.device)
            generated = 0
            reply: list[int] = []  # the generated tokens but an end-of-sequence one
            text, emitted, finish = "", 0, "length"
            while generated < budget:
                with torch.inference_mode():
                    out = model(input_ids=step, past_key_values=cache, use_cache=True, **keep_one)
                    cache = out.past_key_values
                    token = _next_token(out.logits[0, -1], temperature, top_p, sampler)
                    del out
                generated += 1
                if token in eos:
                    finish = "stop"
                    break
                reply.append(token)
                text = tokenizer.decode(reply, skip_special_tokens=True, clean_up_tokenization_spaces=False)
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
                step = torch.tensor([[token]], dtype=torch.long, device=model.device)
            if emitted < len(text):
                yield {"delta": text[emitted:]}
            yield {
                "delta": "",
                "finish": {"finish_reason": finish, "prompt_tokens": len(prompt), "completion_tokens": generated},
            }
        finally:
            cache = None
            with lock:
                streams[0] -= 1

    def open_streams() -> int:
        """How many of the call's generators have started and not yet ended (or been closed)."""
        with lock:
            return streams[0]

    run.model = model
    run.tokenizer = tokenizer
    run.context_length = context
    run.open_streams = open_streams
    return run


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
