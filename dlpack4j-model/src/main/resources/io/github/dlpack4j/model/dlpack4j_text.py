"""sentence-transformers models for dlpack4j-model's ``SentenceTransformers``.

Runs once per interpreter as the module ``dlpack4j_text``. Java loads a model with ``load_embedder``
or ``load_cross_encoder`` (which report what the Java side declares: the embedding's dimension),
then builds a ``PythonModel`` whose factory, ``embedder`` or ``cross_encoder``, takes the loaded
model by its key: the weights load once."""

import importlib.util
import itertools
import pathlib
import threading
from collections.abc import Callable

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
    return _keep(model), _dimension(model, path), int(model.max_seq_length or -1)


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
    return _keep(model), int(getattr(model, "max_length", None) or -1)


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
