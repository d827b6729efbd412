"""The comparison for the Java service: the same models and weights behind FastAPI + uvicorn.

It serves the same Open Inference Protocol (KServe v2) endpoints as the Java service, with JSON
tensors and the binary tensor data extension, with uvicorn's httptools and uvloop, in ``--workers``
processes (2), each with one torch thread (``torch.set_num_threads(1)``), as a FastAPI user tunes a
CPU model on a 2-core machine. For ``minilm`` it serves OpenAI's ``POST /v1/embeddings`` instead,
as a FastAPI user writes it: a pydantic request model, and sentence-transformers'
``SentenceTransformer.encode`` on each request's texts. For ``tiny-lm`` (a transformers causal LM
with a chat template, ``scripts/tiny-lm``'s directory) it serves OpenAI's
``POST /v1/chat/completions`` as Python services stream: a pydantic request model, the prompt
from the tokenizer's chat template, ``model.generate`` in a thread of its own for each request
with a ``TextIteratorStreamer``, and the reply one JSON answer or, with ``"stream": true``, a
``StreamingResponse`` of server-sent events (see :func:`chat_completions`).

``serve_fastapi.py --model mlp|resnet18|minilm|tiny-lm [--weights FILE|DIR] [--port 8080] [--workers 2]``
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
import uuid
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
import torch
import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, field_validator

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
CHAT_MODELS: dict[str, ChatModel] = {}  # tiny-lm: the causal LM and its tokenizer


@contextlib.asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    """Build the model before the worker takes requests."""
    name = os.environ["SERVE_MODEL"]
    weights = os.environ.get("SERVE_WEIGHTS") or None
    if name == MINILM:
        torch.set_num_threads(1)
        EMBEDDERS[name] = serve_models.sentence_transformer(weights)
    elif name == TINY_LM:
        torch.set_num_threads(1)
        torch.seed()  # a fresh seed for unseeded sampling, not torch's fixed default (the same in every worker)
        CHAT_MODELS[name] = ChatModel(name, weights)
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
    if len(loc) == 1 and first.get("type") == "extra_forbidden":
        return openai_error(400, f"unrecognized request argument supplied: {loc[0]}", loc[0])
    if loc == ["model"] and first.get("type") == "missing":
        return openai_error(400, "you must provide a model parameter", "model")
    if len(loc) == 1 and first.get("type") == "missing":
        return openai_error(400, f"missing required parameter: '{loc[0]}'", loc[0])
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


# ---------------------------------------------------------------- OpenAI's chat completions endpoint (tiny-lm)

TINY_LM = "tiny-lm"
DEFAULT_MAX_TOKENS = 256  # the most tokens of a reply when the request does not say (the Java service's)
MAX_STOP = 4  # the most stop strings of one request, as OpenAI's API takes
LONG = 1 << 63  # the Java service reads integers as longs: -LONG to LONG - 1
SEED_LOCK = threading.Lock()  # seeding torch's (one, global) generator and starting the seeded generate
Long = Annotated[int, Field(strict=True, ge=-LONG, le=LONG - 1)]
Tokens = Annotated[int, Field(strict=True, ge=1, le=LONG - 1)]


def _utf8(text: str, at: str) -> str:
    """Return ``text``; raise ``ValueError`` for a lone surrogate (from a JSON escape), which UTF-8 cannot carry."""
    try:
        text.encode()
    except UnicodeEncodeError as e:
        msg = f"{at} has a lone surrogate at index {e.start}, which UTF-8 cannot carry"
        raise ValueError(msg) from e
    return text


class ChatMessage(BaseModel):
    """One message of the conversation: its role and its content, a string (content parts are not taken)."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: StrictStr

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        """Refuse a content that UTF-8 cannot carry."""
        return _utf8(value, "content")


class StreamOptions(BaseModel):
    """``stream_options``: whether a streamed reply ends with a usage chunk."""

    model_config = ConfigDict(extra="forbid")

    include_usage: StrictBool = False


class ChatRequest(BaseModel):
    """OpenAI's chat completions request, as the Java service reads it; other fields refused.

    A field given as null counts as not given. ``max_completion_tokens`` (else ``max_tokens``, else
    256) bounds the reply; ``temperature`` 0 is greedy; ``n`` must be 1.
    """

    model_config = ConfigDict(extra="forbid")

    model: StrictStr
    messages: list[ChatMessage] = Field(min_length=1)
    stream: StrictBool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: Tokens | None = None
    max_completion_tokens: Tokens | None = None
    temperature: Annotated[float, Field(strict=True, ge=0, le=2)] | None = None
    top_p: Annotated[float, Field(strict=True, gt=0, le=1)] | None = None
    seed: Long | None = None
    stop: str | list[str] | None = None
    n: Annotated[int, Field(strict=True, ge=1)] | None = None
    user: StrictStr | None = None

    @field_validator("stop", mode="before")
    @classmethod
    def _stop(cls, value: object) -> object:
        """Take a string or up to four strings, each one UTF-8 can carry, as the Java service does."""
        if value is None or isinstance(value, str):
            return value if value is None else _utf8(value, "stop")
        if not isinstance(value, list):
            msg = "stop must be a string or an array of strings"
            raise ValueError(msg)  # pydantic turns a ValueError into the 400
        for i, text in enumerate(value):
            if not isinstance(text, str):
                msg = f"'$.stop[{i}]' is not a string"
                raise ValueError(msg)
            _utf8(text, f"'$.stop[{i}]'")
        if len(value) > MAX_STOP:
            msg = f"stop has more than {MAX_STOP} strings"
            raise ValueError(msg)
        return value

    @field_validator("n")
    @classmethod
    def _one(cls, value: int | None) -> int | None:
        """Refuse ``n`` other than 1: one choice a request."""
        if value is not None and value != 1:
            msg = "n must be 1: this service makes one choice a request"
            raise ValueError(msg)
        return value

    def most_tokens(self) -> int:
        """The most tokens of the reply: ``max_completion_tokens``, else ``max_tokens``, else 256."""
        for most in (self.max_completion_tokens, self.max_tokens):
            if most is not None:
                return most
        return DEFAULT_MAX_TOKENS

    def stop_strings(self) -> list[str]:
        """The stop strings, the empty ones left out (they would stop at once), as the Java service does."""
        given = [self.stop] if isinstance(self.stop, str) else self.stop or []
        return [s for s in given if s]


class ChatModel:
    """This worker's causal LM and its tokenizer, with what a reply needs of them."""

    def __init__(self, name: str, directory: str) -> None:
        """Load ``AutoModelForCausalLM`` and ``AutoTokenizer`` from ``directory`` on the CPU, in eval mode."""
        serve_models.torchvision_usable()  # before transformers is imported (see there)
        from transformers import AutoModelForCausalLM, AutoTokenizer, StoppingCriteria, TextIteratorStreamer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a service's log is no terminal
        self.name = name
        self.tokenizer = AutoTokenizer.from_pretrained(directory)
        self.model = AutoModelForCausalLM.from_pretrained(directory).to("cpu").eval()
        self.streamer_type = TextIteratorStreamer
        self.criterion_type = StoppingCriteria
        self.context = self._context_length()
        self.eos = self._eos_ids()

    def _context_length(self) -> int:
        """The most tokens, prompt and reply together: ``max_position_embeddings`` (as the Java side), or -1."""
        positions = getattr(self.model.config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            return positions
        limit = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(limit, int) and 0 < limit < 1_000_000_000:  # unset: a huge sentinel
            return limit
        return -1

    def _eos_ids(self) -> set[int]:
        """The tokens that end a reply: the generation config's ``eos_token_id`` (one or a list) and the tokenizer's."""
        ids: set[int] = set()
        for eos in (self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if isinstance(eos, int):
                ids.add(eos)
            elif isinstance(eos, list | tuple):
                ids.update(int(i) for i in eos)
        return ids

    def prompt(self, messages: list[ChatMessage]) -> list[int]:
        """Return the prompt's tokens: ``apply_chat_template(messages, add_generation_prompt=True)``."""
        conversation = [{"role": m.role, "content": m.content} for m in messages]
        ids = self.tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=True,
                                                 return_dict=False)  # fmt: skip
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return [int(i) for i in ids]


class Generation:
    """One reply: ``model.generate`` in a thread of its own, its text streamed by a ``TextIteratorStreamer``.

    The thread runs ``model.generate(..., streamer=streamer)`` (keeping what it returns, or what it
    raised); the request's coroutine takes the streamer's pieces of text (``TextIteratorStreamer``
    sends text up to a word's end) with one of anyio's worker threads a piece, since the streamer's
    iterator blocks. ``stopping_criteria`` holds one that ends generate once :meth:`cancel` was
    called: a client that went away, or a stop string seen in the text. Stop strings also go to
    generate's own ``stop_strings``, which ends it at the token that completes one; the text is cut
    before the first of them, and held back by their longest length less one until it cannot begin
    one, so that no part of a stop string is sent.

    A seeded request (sampling, ``temperature`` over 0) seeds torch's generator, which the process's
    threads share, under a lock, and starts its generate; so a seed makes a reply reproducible only
    while no other request samples meanwhile: concurrent seeded requests are not reproducible here,
    unlike the Java service's, which gives each reply its own generator.
    """

    def __init__(self, lm: ChatModel, prompt: list[int], request: ChatRequest) -> None:
        """Prepare the reply to ``request`` from ``prompt`` (its tokens); :meth:`start` starts it."""
        self.lm = lm
        self.prompt = prompt
        self.stops = request.stop_strings()
        self.budget = request.most_tokens() if lm.context <= 0 else min(request.most_tokens(), lm.context - len(prompt))
        self.temperature = 1.0 if request.temperature is None else request.temperature
        self.seed = request.seed if self.temperature > 0 else None
        self.cancelled = threading.Event()
        self.stop_seen = False  # a stop string in the text
        self.output: torch.Tensor | None = None  # generate's return: the prompt's tokens and the reply's
        self.error: Exception | None = None
        self.streamer = lm.streamer_type(lm.tokenizer, skip_prompt=True, skip_special_tokens=True,
                                         clean_up_tokenization_spaces=False)  # fmt: skip
        kwargs: dict[str, Any] = {
            "input_ids": torch.tensor([prompt], dtype=torch.long),
            "attention_mask": torch.ones(1, len(prompt), dtype=torch.long),
            "max_new_tokens": self.budget,
            "eos_token_id": sorted(lm.eos),
            "stopping_criteria": [_cancelled(lm, self.cancelled)],
            "streamer": self.streamer,
        }
        if self.stops:
            kwargs.update(stop_strings=self.stops, tokenizer=lm.tokenizer)
        if self.temperature > 0:  # top_k=0: no top-k cut (generate's default is 50), as the Java side samples
            top_p = 1.0 if request.top_p is None else request.top_p
            kwargs.update(do_sample=True, temperature=self.temperature, top_p=top_p, top_k=0)
        else:
            kwargs.update(do_sample=False)
        self.thread = threading.Thread(target=self._generate, kwargs=kwargs, name="generate", daemon=True)

    def _generate(self, **kwargs: object) -> None:
        """Run ``model.generate(**kwargs)``, keeping its return or its error (then ending the streamer itself)."""
        try:
            self.output = self.lm.model.generate(**kwargs)
        except Exception as e:  # the model's error, whatever it is, goes back to the client
            self.error = e
            self.streamer.end()

    def start(self) -> None:
        """Start generate's thread (after seeding torch's generator, for a seeded request)."""
        if self.seed is None:
            self.thread.start()
            return
        with SEED_LOCK:
            torch.manual_seed(self.seed)
            self.thread.start()

    def cancel(self) -> None:
        """End generate at its next token (a no-op once it ended)."""
        self.cancelled.set()

    async def pieces(self) -> AsyncIterator[str]:
        """Yield the reply's text as the streamer sends it (no piece empty), cut before a stop string."""
        hold = max((len(s) for s in self.stops), default=1) - 1
        text, emitted = "", 0
        pieces = iter(self.streamer)
        while (piece := await anyio.to_thread.run_sync(next, pieces, None, abandon_on_cancel=True)) is not None:
            if self.stop_seen:
                continue  # the rest, until generate ends
            text += piece
            cut = min((i for i in (text.find(s) for s in self.stops) if i >= 0), default=-1)
            if cut >= 0:
                self.stop_seen = True
                self.cancel()  # generate's stop_strings ended it already, but for a match that only the text shows
            ready = cut if cut >= 0 else len(text) - hold
            if ready > emitted:
                yield text[emitted:ready]
                emitted = ready
        if not self.stop_seen and emitted < len(text):
            yield text[emitted:]
        await anyio.to_thread.run_sync(self.thread.join, abandon_on_cancel=True)

    def finish(self) -> tuple[str, dict[str, int]]:
        """Return the finish reason and the usage, once :meth:`pieces` ended without an error.

        The completion tokens are generate's new tokens, an end-of-sequence token counted (as the
        Java side counts it); "stop": an end-of-sequence token or a stop string ended the reply,
        "length": ``max_tokens`` or the context did.
        """
        assert self.output is not None
        new = self.output[0, len(self.prompt) :].tolist()
        stopped = self.stop_seen or (bool(new) and new[-1] in self.lm.eos) or len(new) < self.budget
        usage = {"prompt_tokens": len(self.prompt), "completion_tokens": len(new),
                 "total_tokens": len(self.prompt) + len(new)}  # fmt: skip
        return ("stop" if stopped else "length"), usage


def _cancelled(lm: ChatModel, event: threading.Event) -> object:
    """Return a ``StoppingCriteria`` that ends generate once ``event`` is set."""

    class Cancelled(lm.criterion_type):  # type: ignore[name-defined, misc]
        """Ends generate (every row) once the request's event is set."""

        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: object) -> torch.Tensor:
            """Return, for each row, whether the event is set."""
            return torch.full((input_ids.shape[0],), event.is_set(), dtype=torch.bool, device=input_ids.device)

    return Cancelled()


def _event(data: dict[str, object]) -> str:
    """Return one server-sent event: ``data: {json}`` and a blank line."""
    return f"data: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n"


def _model_error(e: Exception) -> dict[str, object]:
    """Return OpenAI's error object for the model raising ``e`` (500, ``server_error``)."""
    return {"message": f"the model raised {type(e).__name__}: {e}", "type": "server_error", "param": None,
            "code": None}  # fmt: skip


@app.post("/v1/chat/completions", response_model=None)
async def chat_completions(request: ChatRequest) -> Response:
    """Answer a chat: the prompt from the chat template, the reply from ``model.generate`` in its own thread.

    Without ``stream``: one ``chat.completion`` once generate ended. With ``"stream": true``: a
    ``StreamingResponse`` of ``chat.completion.chunk`` events, the first with the role, one for
    each piece of text the streamer sends, one with the finish reason, a usage chunk if
    ``stream_options.include_usage``, then ``data: [DONE]``; an error after the status went out is
    an event ``data: {"error": {…}}`` without ``[DONE]``. A client that goes away mid-stream
    (Starlette then cancels the response's iterator) ends its generate at the next token.
    """
    if request.stream_options is not None and not request.stream:
        return openai_error(400, "stream_options are only allowed when 'stream' is true", "stream_options")
    lm = CHAT_MODELS.get(request.model)
    if lm is None:
        return openai_error(404, f"the model '{request.model}' does not exist: this service serves "
                            f"'{os.environ['SERVE_MODEL']}'", "model", code="model_not_found")  # fmt: skip
    try:
        prompt = lm.prompt(request.messages)
    except Exception as e:  # the chat template's error, whatever it is, goes back to the client
        return JSONResponse({"error": _model_error(e)}, 500)
    if 0 < lm.context <= len(prompt):
        return openai_error(400, f"the prompt's {len(prompt)} tokens leave no room in the model's context of "
                            f"{lm.context}", "messages")  # fmt: skip
    generation = Generation(lm, prompt, request)
    head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": lm.name}
    if request.stream:
        include_usage = request.stream_options is not None and request.stream_options.include_usage
        return StreamingResponse(_chunks(generation, head, include_usage), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})  # fmt: skip
    generation.start()
    try:
        content = "".join([piece async for piece in generation.pieces()])
    finally:
        generation.cancel()
    if generation.error is not None:
        return JSONResponse({"error": _model_error(generation.error)}, 500)
    finish_reason, usage = generation.finish()
    return JSONResponse({
        "id": head["id"], "object": "chat.completion", "created": head["created"], "model": lm.name,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "logprobs": None,
                     "finish_reason": finish_reason}],
        "usage": usage,
    })  # fmt: skip


async def _chunks(generation: Generation, head: dict[str, object], include_usage: bool) -> AsyncIterator[str]:
    """Start generate and yield the reply's events; generate is cancelled however this ends (a client gone)."""
    chunk = {"id": head["id"], "object": "chat.completion.chunk", "created": head["created"], "model": head["model"]}
    usage_field: dict[str, object] = {"usage": None} if include_usage else {}

    def choice(delta: dict[str, str], finish_reason: str | None) -> str:
        """Return the event of one chunk with ``delta`` and ``finish_reason``."""
        return _event({**chunk, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                             "finish_reason": finish_reason}], **usage_field})  # fmt: skip

    generation.start()
    try:
        yield choice({"role": "assistant", "content": ""}, None)
        async for piece in generation.pieces():
            yield choice({"content": piece}, None)
        if generation.error is not None:
            yield _event({"error": _model_error(generation.error)})
            return
        finish_reason, usage = generation.finish()
        yield choice({}, finish_reason)
        if include_usage:
            yield _event({**chunk, "choices": [], "usage": usage})
        yield "data: [DONE]\n\n"
    finally:
        generation.cancel()


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
    parser.add_argument("--model", required=True, choices=[*sorted(serve_models.SPECS), MINILM, TINY_LM])
    parser.add_argument("--weights", help="a state_dict file; for minilm the sentence-transformers directory, for "
                        "tiny-lm the transformers causal LM's directory (with a chat template)")  # fmt: skip
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batching", action="store_true", help="accepted as scripts/serve's; no batching here")
    args = parser.parse_args()
    if args.model == MINILM and not (args.weights and Path(args.weights).is_dir()):
        parser.error("--model minilm needs --weights DIR, a sentence-transformers directory (scripts/serve gives "
                     "scripts/minilm's)")  # fmt: skip
    if args.model == TINY_LM and not (args.weights and Path(args.weights).is_dir()):
        parser.error("--model tiny-lm needs --weights DIR, a transformers causal LM's directory with a chat template "
                     "(scripts/serve gives scripts/tiny-lm's)")  # fmt: skip
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
