"""The comparison for the Java service: the same models and weights behind FastAPI + uvicorn.

It serves the same Open Inference Protocol (KServe v2) endpoints as the Java service, with JSON
tensors and the binary tensor data extension, with uvicorn's httptools and uvloop, in ``--workers``
processes (2), each with one torch thread (``torch.set_num_threads(1)``), as a FastAPI user tunes a
CPU model on a 2-core machine. For ``minilm`` it serves OpenAI's ``POST /v1/embeddings`` instead,
as a FastAPI user writes it: a pydantic request model, and sentence-transformers'
``SentenceTransformer.encode`` on each request's texts.

``serve_fastapi.py --model mlp|resnet18|minilm [--weights FILE|DIR] [--port 8080] [--workers 2]``
binds 127.0.0.1, prints one line once every worker answers, and stops on SIGTERM (uvicorn's own).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import torch
import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve_models

DATATYPES = {
    "BOOL": 1, "UINT8": 1, "UINT16": 2, "UINT32": 4, "UINT64": 8, "INT8": 1, "INT16": 2, "INT32": 4,
    "INT64": 8, "FP16": 2, "FP32": 4, "FP64": 8, "BF16": 2, "BYTES": -1,
}  # fmt: skip
MAX_BODY = 64 << 20
# torch.frombuffer of the request's bytes (read-only) warns once per process; the model only reads them
warnings.filterwarnings("ignore", message="The given buffer is not writable")
HEADER = "inference-header-content-length"


class BadRequestError(Exception):
    """A request answered with a v2 error body and a status (400 unless told)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Served:
    """The model of this worker: its spec and its run function (under ``torch.inference_mode()``)."""

    def __init__(self, name: str, weights: str | None) -> None:
        torch.set_num_threads(1)
        self.spec = serve_models.SPECS[name]
        self.run = serve_models.runner(serve_models.build(name, weights))


SERVED: dict[str, Served] = {}
EMBEDDERS: dict[str, object] = {}  # minilm: the SentenceTransformer


@contextlib.asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    """Build the model before the worker takes requests."""
    name = os.environ["SERVE_MODEL"]
    weights = os.environ.get("SERVE_WEIGHTS") or None
    if name == MINILM:
        torch.set_num_threads(1)
        EMBEDDERS[name] = serve_models.sentence_transformer(weights)
    else:
        SERVED[name] = Served(name, weights)
    yield


app = FastAPI(lifespan=lifespan)


def error(status: int, message: str) -> JSONResponse:
    """Return a v2 error body."""
    return JSONResponse({"error": message}, status_code=status)


@app.get("/v2/health/live")
async def live() -> Response:
    """Answer 200 while the process runs."""
    return Response()


@app.get("/v2/health/ready")
async def ready() -> Response:
    """Answer 200 once the model is built, naming the worker's pid (the ready line counts workers)."""
    return Response(headers={"x-worker-pid": str(os.getpid())})


@app.get("/v2")
async def server_metadata() -> dict[str, object]:
    """Return the server's metadata."""
    return {"name": "serve-torch-fastapi", "version": "1.0", "extensions": ["binary_tensor_data"]}


def _tensor_metadata(t: serve_models.TensorSpec) -> dict[str, object]:
    return {"name": t.name, "datatype": t.datatype, "shape": list(t.shape)}


@app.get("/v2/models/{name}", response_model=None)
async def model_metadata(name: str) -> dict[str, object] | JSONResponse:
    """Return a model's metadata: its input and output with name, datatype and shape."""
    served = SERVED.get(name)
    if served is None:
        return error(404, f"unknown model '{name}'")
    spec = served.spec
    return {
        "name": name,
        "versions": ["1"],
        "platform": "pytorch_torch",
        "inputs": [_tensor_metadata(spec.input)],
        "outputs": [_tensor_metadata(spec.output)],
    }


def _check_shape(spec: serve_models.ModelSpec, tensor: dict[str, object]) -> tuple[list[int], int]:
    want = spec.input
    if tensor.get("name") != want.name:
        raise BadRequestError(f"model {spec.name} has no input '{tensor.get('name')}' (its input is {want.name})")
    datatype = tensor.get("datatype")
    if datatype not in DATATYPES:
        raise BadRequestError(f"unknown datatype '{datatype}'")
    if datatype != want.datatype:
        raise BadRequestError(f"input x has datatype {datatype}; model {spec.name} takes {want.datatype}")
    shape = tensor.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise BadRequestError("an input's shape must be an array of integers")
    if any(d < 0 for d in shape):
        raise BadRequestError(f"dimension {min(shape)} is negative")
    if any(d >= 1 << 63 for d in shape):
        raise BadRequestError(f"dimension {max(shape)} is out of range")
    numel = 1
    for d in shape:
        numel *= d
    if numel * 4 >= 1 << 63:
        raise BadRequestError(f"shape {shape} has more elements than a long counts")
    fits = len(shape) == len(want.shape) and shape[0] >= 1
    fits = fits and all(w < 0 or w == d for w, d in zip(want.shape[1:], shape[1:], strict=True))
    if not fits:
        raise BadRequestError(f"input x has shape {shape}; model {spec.name} takes {list(want.shape)}")
    return shape, numel


def _parse(spec: serve_models.ModelSpec, body: bytes, header_length: int | None) -> tuple[torch.Tensor, bool]:
    """Read a request: its input as a tensor over the body's bytes or the JSON data, and whether binary output."""
    json_part = body if header_length is None else body[:header_length]
    try:
        request = json.loads(json_part)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequestError(f"malformed JSON: {e}") from e
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        raise BadRequestError("the request must be a JSON object with inputs")
    inputs = request["inputs"]
    if len(inputs) != 1 or not isinstance(inputs[0], dict):
        raise BadRequestError(f"model {spec.name} needs exactly its input {spec.input.name}")
    tensor = inputs[0]
    shape, numel = _check_shape(spec, tensor)
    size = (tensor.get("parameters") or {}).get("binary_data_size")
    if size is not None:
        if header_length is None:
            raise BadRequestError("binary_data_size without the Inference-Header-Content-Length header")
        if size != len(body) - header_length:
            raise BadRequestError(f"binary_data_size {size} but the body holds {len(body) - header_length} bytes")
        if size != numel * 4:
            raise BadRequestError(f"binary_data_size {size}; shape {shape} of FP32 has {numel * 4} bytes")
        x = torch.frombuffer(body, dtype=torch.float32, count=numel, offset=header_length)
    else:
        data = tensor.get("data")
        if not isinstance(data, list):
            raise BadRequestError("input x has neither data nor binary_data_size")
        try:
            x = torch.tensor(data, dtype=torch.float32).reshape(-1)
        except (TypeError, ValueError, RuntimeError) as e:
            raise BadRequestError(f"input x: data must be numbers: {e}") from e
        if x.numel() != numel:
            raise BadRequestError(f"input x has {x.numel()} values in data; shape {shape} has {numel}")
    binary = bool((request.get("parameters") or {}).get("binary_data_output", False))
    for o in request.get("outputs") or []:
        if o.get("name") != spec.output.name:
            raise BadRequestError(f"model {spec.name} has no output '{o.get('name')}'")
        if "binary_data" in (o.get("parameters") or {}):
            binary = bool(o["parameters"]["binary_data"])
    return x.reshape(shape), binary


@app.post("/v2/models/{name}/infer", response_model=None)
async def infer(name: str, request: Request) -> Response:
    """Run the model on a v2 inference request, JSON or binary, and answer in kind."""
    served = SERVED.get(name)
    if served is None:
        return error(404, f"unknown model '{name}'")
    try:
        declared = request.headers.get("content-length")
        if declared is not None and int(declared) > MAX_BODY:
            raise BadRequestError(f"the body has {declared} bytes, more than the limit of {MAX_BODY}")
        body = await request.body()
        header = request.headers.get(HEADER)
        header_length = None if header is None else int(header)
        if header_length is not None and not 0 <= header_length <= len(body):
            raise BadRequestError(f"Inference-Header-Content-Length {header_length} does not fit the body")
        x, binary = _parse(served.spec, body, header_length)
    except BadRequestError as e:
        return error(e.status, str(e))
    except ValueError as e:
        return error(400, str(e))
    try:
        y = served.run(x)
    except Exception as e:  # the model's error, whatever it is, goes back to the client
        return error(500, f"the model raised {type(e).__name__}: {e}")
    out = {"name": served.spec.output.name, "datatype": "FP32", "shape": list(y.shape)}
    response = {"model_name": name, "model_version": "1", "outputs": [out]}
    if binary:
        data = y.numpy().tobytes()
        out["parameters"] = {"binary_data_size": len(data)}
        header_bytes = json.dumps(response, separators=(",", ":")).encode()
        return Response(
            header_bytes + data,
            media_type="application/octet-stream",
            headers={"Inference-Header-Content-Length": str(len(header_bytes))},
        )
    out["data"] = y.reshape(-1).tolist()
    return Response(json.dumps(response, separators=(",", ":")), media_type="application/json")


# ---------------------------------------------------------------- OpenAI's embeddings endpoint (minilm)

MINILM = "minilm"
MAX_INPUTS = 2048  # the most texts of one request, as OpenAI's API takes


class EmbeddingsRequest(BaseModel):
    """OpenAI's embeddings request: one string or 1 to 2,048 strings, none empty; other fields refused."""

    model_config = ConfigDict(extra="forbid")

    input: str | list[str] = Field(min_length=1)
    model: str
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None

    @field_validator("input")
    @classmethod
    def _texts(cls, value: str | list[str]) -> str | list[str]:
        texts = [value] if isinstance(value, str) else value
        if len(texts) > MAX_INPUTS:
            msg = f"input has more than {MAX_INPUTS} items"
            raise ValueError(msg)
        for i, text in enumerate(texts):
            if not text:
                msg = f"'$.input[{i}]' is an empty string, which OpenAI's API refuses too"
                raise ValueError(msg)
            try:
                text.encode()
            except UnicodeEncodeError as e:  # a lone surrogate from a \ud800 escape
                msg = f"'$.input[{i}]' has a lone surrogate at index {e.start}, which UTF-8 cannot carry"
                raise ValueError(msg) from e
        return value


def openai_error(status: int, message: str, param: str | None = None, type_: str = "invalid_request_error",
                 code: str | None = None) -> JSONResponse:  # fmt: skip
    """Return OpenAI's error object."""
    return JSONResponse({"error": {"message": message, "type": type_, "param": param, "code": code}}, status)


@app.exception_handler(RequestValidationError)
async def invalid_request(_: Request, exc: RequestValidationError) -> Response:
    """Answer a request that pydantic refused as OpenAI does: 400, the field at fault as ``param``."""
    first = exc.errors()[0]
    if first.get("type") == "json_invalid":
        return openai_error(400, f"malformed JSON: {first.get('ctx', {}).get('error', first.get('msg'))}")
    loc = [str(part) for part in first.get("loc", ()) if part != "body"]
    return openai_error(400, f"{'.'.join(loc) or 'the request'}: {first.get('msg')}", loc[0] if loc else None)


@app.post("/v1/embeddings", response_model=None)
async def embeddings(request: EmbeddingsRequest) -> Response:
    """Embed the request's texts with ``encode`` (this worker's one torch thread) and count their tokens."""
    model = EMBEDDERS.get(request.model)
    if model is None:
        return openai_error(404, f"the model '{request.model}' does not exist: this service serves '{MINILM}'",
                            "model", code="model_not_found")  # fmt: skip
    dim = model.get_embedding_dimension()
    if request.dimensions is not None and request.dimensions != dim:
        return openai_error(400, f"model {MINILM} makes embeddings of {dim} dimensions and cannot make them of "
                            f"{request.dimensions}", "dimensions")  # fmt: skip
    texts = [request.input] if isinstance(request.input, str) else request.input
    try:
        vectors = model.encode(texts)
        tokens = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
    except Exception as e:  # the model's error, whatever it is, goes back to the client
        return openai_error(500, f"the model raised {type(e).__name__}: {e}", type_="server_error")
    if request.encoding_format == "base64":
        data = [base64.b64encode(v.astype("<f4").tobytes()).decode() for v in vectors]
    else:
        data = vectors.tolist()
    used = sum(len(ids) for ids in tokens)
    return JSONResponse({
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(data)],
        "model": request.model,
        "usage": {"prompt_tokens": used, "total_tokens": used},
    })  # fmt: skip


def _wait_for_workers(port: int, workers: int, line: str) -> None:
    """Print ``line`` once ``workers`` distinct workers answered the ready endpoint (at most 300 s)."""
    pids: set[str] = set()
    deadline = time.monotonic() + 300
    while len(pids) < workers and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=5) as r:
                pids.add(r.headers.get("x-worker-pid", ""))
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    print(line if len(pids) >= workers else f"serve-torch (FastAPI): only {len(pids)} workers answered", flush=True)


def main() -> None:
    """Bind 127.0.0.1:PORT and serve with uvicorn's workers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=[*sorted(serve_models.SPECS), MINILM])
    parser.add_argument("--weights", help="a state_dict file; for minilm the sentence-transformers directory")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batching", action="store_true", help="accepted as scripts/serve's; no batching here")
    args = parser.parse_args()
    if args.model == MINILM and not (args.weights and Path(args.weights).is_dir()):
        parser.error("--model minilm needs --weights DIR, a sentence-transformers directory (scripts/serve gives "
                     "scripts/minilm's)")  # fmt: skip
    if args.batching:
        print("serve_fastapi: --batching: FastAPI + uvicorn has no dynamic batching here; ignored", file=sys.stderr)
    os.environ["SERVE_MODEL"] = args.model
    os.environ["SERVE_WEIGHTS"] = args.weights or ""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]
    weights = f"weights {args.weights}" if args.weights else "seeded weights"
    line = (
        f"serve-torch: {args.model} ready on http://127.0.0.1:{port} (FastAPI + uvicorn, {args.workers} workers, "
        f"httptools + uvloop, torch threads 1 per worker, {weights})"
    )
    threading.Thread(target=_wait_for_workers, args=(port, args.workers, line), daemon=True).start()
    # timeout_worker_healthcheck: uvicorn kills a worker that does not answer its supervisor's ping
    # within 5 s by default; on 2 cores a worker importing torch and transformers beside the other
    # held the GIL longer than that, and minilm's workers were killed and restarted for minutes.
    config = uvicorn.Config(
        "serve_fastapi:app", workers=args.workers, http="httptools", loop="uvloop",
        log_level="warning", access_log=False, timeout_graceful_shutdown=8, timeout_worker_healthcheck=60,
    )  # fmt: skip
    server = uvicorn.Server(config)
    if args.workers > 1:
        uvicorn.supervisors.Multiprocess(config, sockets=[sock]).run()
    else:
        server.run(sockets=[sock])


if __name__ == "__main__":
    main()
