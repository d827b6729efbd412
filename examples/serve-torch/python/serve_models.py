"""The serve-torch example's models, shared by the Java service and the FastAPI comparison.

Both services build their model with :func:`build`, so they serve the same weights: FastAPI runs
it with the function :func:`runner` returns, the Java service with the one :func:`served` returns
(dlpack4j-model's calling convention). Without a weights file the weights are torch's own
initialisation after ``torch.manual_seed(seed)``; nothing is downloaded. ``minilm``, the text
embedding model, is a sentence-transformers directory instead: FastAPI loads it with
:func:`sentence_transformer`, the Java service with dlpack4j-model's ``SentenceTransformers``.

``python serve_models.py save MODEL FILE [--seed N]`` writes such a ``state_dict`` to FILE.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a model: its name, v2 datatype and shape (-1: any extent)."""

    name: str
    datatype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class ModelSpec:
    """A model's one input and one output, as its v2 metadata shows them."""

    name: str
    input: TensorSpec
    output: TensorSpec


SPECS: dict[str, ModelSpec] = {
    "mlp": ModelSpec("mlp", TensorSpec("x", "FP32", (-1, 256)), TensorSpec("y", "FP32", (-1, 16))),
    "resnet18": ModelSpec("resnet18", TensorSpec("x", "FP32", (-1, 3, 224, 224)), TensorSpec("y", "FP32", (-1, 1000))),
}


def torchvision_usable() -> bool:
    """Let ``import torchvision`` work also where torchvision's C operators cannot load; return whether it is installed.

    The package index here serves torchvision's CUDA build only, whose ``_C`` library needs torch's
    CUDA libraries, which the CPU torch lacks. ``import torchvision`` then fails on registering
    fake kernels for ``torchvision::nms`` and ``torchvision::qnms``, operators that ``_C`` would
    have defined; transformers imports torchvision whenever it is installed, so sentence-transformers
    fails the same way. ResNet-18 and the text models use none of torchvision's operators, so their
    schemas are defined here (never their kernels) when ``_C`` does not load; a working torchvision
    is left as it is.
    """
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return False
    library = next(pathlib.Path(spec.origin).parent.glob("_C*.so"), None)
    if not _loads(library) and not _defined("nms"):
        schemas = torch.library.Library("torchvision", "DEF")
        for op in ("nms", "qnms"):
            schemas.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _SCHEMAS.append(schemas)  # the library object keeps the schemas defined while it lives
    return True


def _torchvision_models() -> object:
    """Import ``torchvision.models`` (see :func:`torchvision_usable`)."""
    if not torchvision_usable():
        msg = "resnet18 needs torchvision, which this Python lacks"
        raise ModuleNotFoundError(msg)
    import torchvision.models

    return torchvision.models


def sentence_transformer(directory: str) -> object:
    """Load ``SentenceTransformer(directory)`` on the CPU in eval mode (minilm's directory is ``scripts/minilm``'s)."""
    torchvision_usable()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(directory, device="cpu").eval()


def _loads(library: pathlib.Path | None) -> bool:
    """Whether torchvision's operator library is there and loads into this torch."""
    if library is None:
        return False
    try:
        torch.ops.load_library(str(library))
    except OSError:
        return False
    return True


def _defined(op: str) -> bool:
    """Whether ``torchvision::op`` has a schema in this process (defined by ``_C`` or, before, here)."""
    try:
        getattr(torch.ops.torchvision, op)
    except (AttributeError, RuntimeError):
        return False
    return True


_SCHEMAS: list[torch.library.Library] = []


def _construct(name: str) -> torch.nn.Module:
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 16))
    if name == "resnet18":
        return _torchvision_models().resnet18(num_classes=1000)  # type: ignore[attr-defined]
    msg = f"unknown model {name!r}: choose one of {', '.join(SPECS)}"
    raise ValueError(msg)


def build(name: str, weights: str | None = None, seed: int = 0) -> torch.nn.Module:
    """Make model ``name`` in eval mode without gradients.

    Its weights are those of ``weights`` (a ``state_dict`` file, loaded with ``weights_only=True``),
    else torch's initialisation after ``torch.manual_seed(seed)``.
    """
    torch.manual_seed(seed)
    model = _construct(name)
    if weights:
        model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    return model.eval().requires_grad_(False)


def runner(model: torch.nn.Module) -> Callable[[object], torch.Tensor]:
    """Return ``run(x)``: the model on ``x`` under ``torch.inference_mode()``, a contiguous result."""

    def run(x: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return model(x).contiguous()

    return run


def served(name: str, weights: str | None, torch_threads: int | str) -> Callable[[object], torch.Tensor]:
    """Return the Java service's model: ``run(x)`` on a torch tensor, for dlpack4j-model's ``factory``.

    Sets torch's intra-op threads to ``torch_threads`` and builds model ``name`` with :func:`build`.
    The arguments may come as strings, as the Spring Boot starter's ``args`` give them: an empty
    ``weights`` is none, ``torch_threads`` a number.
    The runtime calls ``run`` on its own threads (each set to the same thread count), under
    ``torch.inference_mode()``, with a torch tensor over the request's (or the batch's) memory that
    the Java side made without a copy (``torchInputs()``); given dlpack4j's Python tensor instead (a
    model built without ``torchInputs()``), it views it with ``torch.from_dlpack``.
    """
    torch.set_num_threads(int(torch_threads))
    model = build(name, weights or None)

    def run(x: object) -> torch.Tensor:
        return model(x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)).contiguous()

    return run


def main() -> None:
    """Write a ``state_dict`` made with a seed: ``serve_models.py save MODEL FILE [--seed N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    save = commands.add_parser("save", help="write a seeded model's state_dict (torch.save)")
    save.add_argument("model", choices=sorted(SPECS))
    save.add_argument("file")
    save.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.save(build(args.model, seed=args.seed).state_dict(), args.file)


if __name__ == "__main__":
    main()
