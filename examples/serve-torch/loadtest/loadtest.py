"""Drive the Java services and the FastAPI comparison with wrk on 127.0.0.1, side by side (scripts/loadtest).

For each model, every service is started with ``scripts/serve`` (Java + dlpack4j on Helidon SE, the
same with ``--batching``, the Spring Boot service with ``--spring`` and with ``--spring --batching``,
and FastAPI + uvicorn with ``--python``), and the time from its start to its ready line is taken;
they answer one request alike first (the same weights), then for each connection count each service
in turn gets a warm-up (a Java service until its JIT settles, see :func:`warm_up`) and a measured
wrk run, bounded by ``--duration``. The table has requests/s,
p50, p99 and errors of each service, the ratios of the Java ones to FastAPI's and of the Spring ones
to Helidon's; the settings and start-up time of each are printed beside it. ``--baseline DIR`` adds
each Java service of another commit's built checkout, measured right after this checkout's, and the
ratio of the two.

``--model minilm`` serves all-MiniLM-L6-v2 (``scripts/minilm``'s directory) with OpenAI's
``POST /v1/embeddings``: the Java service (batching by default) and FastAPI, at 64 connections
unless told, each request one sentence of ``sentences.txt`` (5 to 53 words, cycled by
``embeddings.lua``). Before the load, the same request of a few sentences goes to each service
and their embeddings must agree (cosine at least 0.9999 per sentence, the same token counts).

``--model tiny-lm`` serves the project's small causal LM (``scripts/tiny-lm``'s directory) with
OpenAI's ``POST /v1/chat/completions`` streamed as server-sent events: the Java service (one
``PythonModel.stream`` a request) and FastAPI + transformers' ``TextIteratorStreamer``, at 1, 8
and 64 concurrent streams, each stream a greedy reply of ``--max-tokens`` (128) to one sentence of
``sentences.txt``, read by :mod:`chat_load` (wrk cannot time a first token). Before the load, both
services' greedy replies to a few prompts, streamed and whole, must be equal token for token.

``--soak`` runs the Java service alone: its peak rate at 64 connections, then ``--soak-duration``
(10 minutes) at 80% of it. It passes with no errors, the resident set after the warm-up (the first
tenth) within 5% of its first value, and live exports and native bytes (``GET /admin/stats``) back
to their values from before the load once it stops.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import chat_load
import make_request
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
SERVE = ROOT / "scripts" / "serve"
LUA = HERE / "infer.lua"
EMBEDDINGS_LUA = HERE / "embeddings.lua"
SENTENCES = HERE / "sentences.txt"
MINILM = "minilm"
TINY_LM = chat_load.TINY_LM
MIN_COSINE = 0.9999  # the Java service's and FastAPI's embeddings of one sentence agree at least this well
READY = re.compile(r"^serve-torch: \S+ ready on http://127\.0\.0\.1:(\d+) \((.*)\)$")
SERVICES = {
    "java": ("Java + dlpack4j", []),
    "java-batching": ("Java + dlpack4j, batching", ["--batching"]),
    "spring": ("Spring Boot + dlpack4j", ["--spring"]),
    "spring-batching": ("Spring Boot + dlpack4j, batching", ["--spring", "--batching"]),
    "python": ("FastAPI + uvicorn", ["--python"]),
}
# A Spring service's Helidon counterpart, for the Spring / Helidon ratio.
HELIDON = {"spring": "java", "spring-batching": "java-batching"}
BASELINE = "@baseline"  # the suffix of a Java service's key when --baseline's checkout serves it


def kind(key: str) -> str:
    """Return the SERVICES key of a service's key: ``java`` for ``java`` and ``java@baseline``."""
    return key.removesuffix(BASELINE)


def title(key: str) -> str:
    """Return a service's name in the tables."""
    if key.endswith(BASELINE):
        return f"{SERVICES[kind(key)][0]} (baseline)"
    return SERVICES[key][0]


@dataclass
class Service:
    """A service started by scripts/serve: its process, port, settings (its ready line's) and start-up time."""

    key: str
    process: subprocess.Popen[str]
    port: int
    settings: str
    startup_s: float
    output: list[str] = field(default_factory=list)

    def url(self, path: str = "") -> str:
        """Return the URL of ``path`` on this service."""
        return f"http://127.0.0.1:{self.port}{path}"


@dataclass
class Run:
    """One wrk run's figures."""

    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    requests: int


def parse_duration(text: str) -> float:
    """Return seconds for ``10s``, ``2m``, ``500ms`` or a plain number of seconds."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)?", text)
    if not m:
        msg = f"not a duration: {text!r} (e.g. 10s, 2m)"
        raise argparse.ArgumentTypeError(msg)
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    return float(m.group(1)) * scale


def start(key: str, model: str, extra: list[str], baseline: Path | None = None, timeout: float = 300) -> Service:
    """Start a service with scripts/serve (built already) on a free port and wait for its ready line.

    Its start-up time is from the process's start to its ready line: the JVM or Python's start, the
    model's load and warm-up, the web server's start. A key ending in ``@baseline`` is served by
    ``baseline``'s scripts/serve.
    """
    serve = baseline / "scripts" / "serve" if key.endswith(BASELINE) and baseline else SERVE
    args = [str(serve), "--no-build", *SERVICES[kind(key)][1], "--model", model, "--port", "0", *extra]
    started = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = started + timeout
    lines: list[str] = []
    assert p.stdout is not None
    ended = False  # its output ended before the deadline: it exited, or is about to
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            ended = True
            break
        lines.append(line.rstrip())
        m = READY.match(line.rstrip())
        if m:
            s = Service(key, p, int(m.group(1)), m.group(2), time.monotonic() - started, lines)
            threading.Thread(target=_drain, args=(s,), daemon=True).start()
            return s
    if ended:
        with contextlib.suppress(subprocess.TimeoutExpired):  # its own exit status, where it comes
            p.wait(timeout=10)
    p.kill()
    what = f"exited ({p.wait()}) before its ready line" if ended else f"printed no ready line within {timeout:.0f} s"
    msg = f"{key} ({serve}) {what}: " + "\n".join(lines[-20:])
    raise RuntimeError(msg)


def _drain(s: Service) -> None:
    """Keep reading the service's output (a full pipe would stop it)."""
    assert s.process.stdout is not None
    for line in s.process.stdout:
        s.output.append(line.rstrip())


def stop(s: Service) -> int:
    """SIGTERM the service; return its exit status (killed after 15 s)."""
    s.process.send_signal(signal.SIGTERM)
    try:
        return s.process.wait(15)
    except subprocess.TimeoutExpired:
        s.process.kill()
        return s.process.wait()


def post(url: str, header_length: int, body: bytes, timeout: float = 60) -> tuple[int, bytes, dict[str, str]]:
    """POST a request; return the status, the body and the headers."""
    headers = {"Content-Type": "application/octet-stream"}
    if header_length >= 0:
        headers["Inference-Header-Content-Length"] = str(header_length)
    req = urllib.request.Request(url, data=body, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read(), {k.lower(): v for k, v in r.headers.items()}


def answer(s: Service, model: str, header_length: int, body: bytes) -> np.ndarray:
    """Return a service's output for one request (binary or JSON)."""
    status, data, headers = post(s.url(f"/v2/models/{model}/infer"), header_length, body)
    if status != 200:
        msg = f"{s.key}: status {status}: {data[:300]!r}"
        raise RuntimeError(msg)
    if "inference-header-content-length" in headers:
        n = int(headers["inference-header-content-length"])
        return np.frombuffer(data[n:], dtype="<f4")
    return np.asarray(json.loads(data)["outputs"][0]["data"], dtype=np.float32)


def embed(s: Service, texts: list[str]) -> tuple[np.ndarray, int]:
    """Return a service's embeddings of ``texts`` (one request) and its token count, its answer's shape checked."""
    body = json.dumps({"input": texts, "model": MINILM}).encode()
    req = urllib.request.Request(s.url("/v1/embeddings"), data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        answer = json.loads(r.read())
    if answer.get("object") != "list" or answer.get("model") != MINILM:
        msg = f"{s.key}: not an embeddings list of {MINILM}: {str(answer)[:300]}"
        raise RuntimeError(msg)
    data = answer["data"]
    if [d["index"] for d in data] != list(range(len(texts))) or any(d["object"] != "embedding" for d in data):
        msg = f"{s.key}: the data's items are not the embeddings of the inputs in order"
        raise RuntimeError(msg)
    usage = answer["usage"]
    if usage["prompt_tokens"] != usage["total_tokens"]:
        msg = f"{s.key}: prompt_tokens {usage['prompt_tokens']} and total_tokens {usage['total_tokens']} differ"
        raise RuntimeError(msg)
    return np.asarray([d["embedding"] for d in data], dtype=np.float32), usage["prompt_tokens"]


def check_embeddings(services: list[Service]) -> str:
    """Send the same sentences to each service; fail unless their embeddings and token counts agree with the first's."""
    texts = sentences()[:5]
    first, first_tokens = embed(services[0], texts)
    worst = 1.0
    for s in services[1:]:
        got, tokens = embed(s, texts)
        if got.shape != first.shape or tokens != first_tokens:
            msg = f"{s.key}: shape {got.shape}, {tokens} tokens; {services[0].key}: {first.shape}, {first_tokens}"
            raise RuntimeError(msg)
        cosine = np.sum(got * first, axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(first, axis=1))
        worst = min(worst, float(cosine.min()))
        if cosine.min() < MIN_COSINE:
            msg = f"{s.key} embeds otherwise than {services[0].key}: cosine {cosine.min():.6f} < {MIN_COSINE}"
            raise RuntimeError(msg)
    return (f"the services agree on {len(texts)} sentences: cosine at least {worst:.7f} (>= {MIN_COSINE}), "
            f"{first_tokens} tokens, {first.shape[1]} dimensions")  # fmt: skip


def sentences() -> list[str]:
    """Return the load test's sentences (sentences.txt, one a line)."""
    return [line for line in SENTENCES.read_text(encoding="utf-8").splitlines() if line]


def model_dir(model: str) -> str:
    """Return minilm's or tiny-lm's directory (both services serve it), made by its script if not there yet."""
    script = ROOT / "scripts" / model
    return subprocess.run([str(script)], capture_output=True, text=True, check=True).stdout.strip()


def stats(s: Service) -> dict[str, object]:
    """Return the Java service's ``GET /admin/stats``."""
    with urllib.request.urlopen(s.url("/admin/stats"), timeout=30) as r:
        return json.loads(r.read())


def model_stats(s: Service) -> dict[str, object] | None:
    """Return a Java service's ``GET /admin/stats``; None for FastAPI, or a baseline without them."""
    if s.key == "python":
        return None
    try:
        return stats(s)
    except (OSError, ValueError):  # a baseline: no such endpoint in that commit, or not JSON
        if not s.key.endswith(BASELINE):
            raise
        return None


def family(pid: int) -> list[int]:
    """Return process ``pid`` and every process it started, directly or not, that runs now."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # the process ended meanwhile
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def cpu_seconds(pid: int) -> float:
    """Return the CPU time (user and system) used so far by process ``pid`` and the processes it started."""
    ticks = 0
    for p in family(pid):
        try:
            fields = (Path(f"/proc/{p}/stat")).read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime and stime, fields 14 and 15 of proc(5)
    return ticks / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    """Return the resident set of process ``pid``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return -1


def wrk(s: Service, model: str, request_file: Path, connections: int, seconds: float, rate: float = 0) -> Run:
    """Run wrk against a service for ``seconds`` (bounded: wrk stops itself) and read its figures."""
    threads = min(2, connections)
    args = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "30s",
            *script(s, model, request_file)]  # fmt: skip
    if rate:
        args.append(str(rate / threads))
    out = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    return read_wrk(out)


def script(s: Service, model: str, request_file: Path) -> list[str]:
    """Return wrk's script, URL and script arguments for ``model``'s requests in ``request_file``."""
    if model == MINILM:
        return ["-s", str(EMBEDDINGS_LUA), s.url(), "--", str(request_file)]
    return ["-s", str(LUA), s.url(), "--", model, str(request_file)]


JIT_SETTLED = 0.05  # the JIT compilers' share of a core below which a Java service counts as warm
JIT_WARMUP_LIMIT = 60.0  # the longest warm-up of a Java service, in seconds


def jit_seconds(pid: int) -> float:
    """Return the CPU seconds process ``pid``'s JIT compiler threads have used so far."""
    nanos = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if (task / "comm").read_text().startswith(("C1 Compiler", "C2 Compiler")):
                nanos += int((task / "schedstat").read_text().split()[0])
        except OSError:  # the thread ended meanwhile
            continue
    return nanos / 1e9


def warm_up(s: Service, model: str, request_file: Path, connections: int, seconds: float) -> float:
    """Load a service before it is measured; return how long.

    FastAPI gets ``seconds``. A Java service gets at least that, then 2-s slices until its JIT
    compilers used under 5% of a core in one (at most a minute): on 2 cores shared with the load
    generator, C2 took 15-20 s of load to settle on the served path, and a cell measured before
    that times the compiler, not the service.
    """
    wrk(s, model, request_file, connections, seconds)
    if s.key == "python":
        return seconds
    waited = seconds
    while waited < JIT_WARMUP_LIMIT:
        before = jit_seconds(s.process.pid)
        wrk(s, model, request_file, connections, 2)
        waited += 2
        if (jit_seconds(s.process.pid) - before) / 2 < JIT_SETTLED:
            break
    return waited


def measured(s: Service, model: str, request_file: Path, connections: int, seconds: float) -> tuple[Run, str]:
    """Run wrk as :func:`wrk` does; return its figures and the service's CPU per request (and mean batch)."""
    before = model_stats(s)
    cpu = cpu_seconds(s.process.pid)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # wrk's CPU: it ends (and is waited for) in wrk()
    run = wrk(s, model, request_file, connections, seconds)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = ended.ru_utime + ended.ru_stime - children.ru_utime - children.ru_stime
    n = max(1, run.requests)
    cost = f"{(cpu_seconds(s.process.pid) - cpu) * 1e6 / n:,.0f} us (wrk {load * 1e6 / n:,.0f} us)"
    after = model_stats(s) if before is not None else None
    if before is not None and after is not None:
        # A baseline's stats may name the answered requests otherwise, or lack them.
        done = next((k for k in ("answered", "requests") if k in after and k in before), None)
        if done is not None and "batches" in after and "batches" in before:
            batches = int(after["batches"]) - int(before["batches"])  # type: ignore[call-overload]
            answered = int(after[done]) - int(before[done])  # type: ignore[call-overload]
            cost += f", {answered / max(1, batches):.1f} rows a call"
    return run, cost


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if not m:
        msg = f"not a wrk latency: {text}"
        raise ValueError(msg)
    return float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[m.group(2)]


def read_wrk(out: str) -> Run:
    """Read requests/s, p50, p99, errors and the request count from wrk's output."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    errors = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors += sum(int(g) for g in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors += int(m.group(1))
    return Run(rps, p50, p99, errors, requests)


def request_file(directory: Path, model: str) -> tuple[Path, int, bytes]:
    """Write the binary request of ``model`` (one row) for wrk; return it, its header length and body.

    For minilm: the embeddings requests of one sentence each, a JSON body a line (the first body returned).
    """
    if model == MINILM:
        bodies = [json.dumps({"input": t, "model": MINILM}) for t in sentences()]
        path = directory / "minilm.bodies"
        path.write_text("\n".join(bodies) + "\n", encoding="ascii")
        return path, -1, bodies[0].encode()
    header_length, body = make_request.request(model, 1, binary=True)
    path = directory / f"{model}.request"
    path.write_bytes(f"{header_length}\n".encode() + body)
    return path, header_length, body


MIN_REQUESTS = 20  # fewer answers in a cell than this: no ratio (resnet18 at 64 connections on 2 cores)


def fmt(r: Run | None) -> list[str]:
    """Return the four cells of one run."""
    if r is None:
        return ["-", "-", "-", "-"]
    rps = f"{r.rps:,.0f}" if r.rps >= 100 else f"{r.rps:.1f}"
    if r.requests < MIN_REQUESTS:
        rps += f" ({r.requests} requests)"
    return [rps, f"{r.p50_ms:.2f} ms", f"{r.p99_ms:.2f} ms", str(r.errors)]


def loadtest(args: argparse.Namespace) -> int:
    """Run the side-by-side load test; print the table and the settings."""
    keys = args.services.split(",")
    connections = [int(c) for c in args.connections.split(",")]
    models = ["mlp", "resnet18"] if args.model == "all" else [args.model]
    agreement = ""
    rows: list[list[str]] = []
    costs: dict[tuple[str, int, str], str] = {}
    warmed: dict[tuple[str, int, str], float] = {}
    settings: dict[str, str] = {}
    statuses: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            path, header_length, body = request_file(Path(tmp), model)
            services = []
            try:
                for key in keys:
                    print(f"loadtest: starting {key} for {model}", file=sys.stderr, flush=True)
                    extra = args.java_args.split() if key != "python" else []
                    services.append(start(key, model, extra, args.baseline))
                    settings[f"{title(key)} ({model})"] = (
                        f"{services[-1].settings}; start-up to the ready line {services[-1].startup_s:.1f} s"
                    )
                if model == MINILM:
                    agreement = check_embeddings(services)
                    print(f"loadtest: {agreement}", file=sys.stderr, flush=True)
                else:
                    answers = [answer(s, model, header_length, body) for s in services]
                    for s, a in zip(services[1:], answers[1:], strict=True):
                        if not np.allclose(a, answers[0], rtol=1e-4, atol=1e-5):
                            msg = f"{s.key} answers other than {services[0].key}: the weights differ?"
                            raise RuntimeError(msg)
                for c in connections:
                    runs: dict[str, Run] = {}
                    for s in services:
                        print(f"loadtest: {model}, {c} connections, {s.key}", file=sys.stderr, flush=True)
                        warmed[(model, c, s.key)] = warm_up(s, model, path, c, args.warmup)
                        runs[s.key], costs[(model, c, s.key)] = measured(s, model, path, c, args.duration)
                    row = [model, str(c)]
                    for key in keys:
                        row += fmt(runs.get(key))
                    for key, base_key in ratios(keys):
                        base = runs[base_key]
                        few = min(base.requests, runs[key].requests) < MIN_REQUESTS
                        row.append("n/a" if few else f"{runs[key].rps / base.rps:.2f}x")
                    rows.append(row)
            finally:
                statuses += [f"{s.key} ({model}): exit {stop(s)} after SIGTERM" for s in services]
    head = ["model", "conns"]
    for key in keys:
        head += [f"{title(key)} req/s", "p50", "p99", "errors"]
    head += [f"{title(k)} / {'FastAPI' if b == 'python' else title(b)}" for k, b in ratios(keys)]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    print("CPU per request (the service's processes, user and system, over the measured seconds; in brackets"
          " wrk's own, the load generator on the same cores), for the Java services the mean rows of a model"
          " call, and each cell's warm-up:")
    print("| model | conns | " + " | ".join(title(k) for k in keys) + " |")
    print("|" + " --- |" * (len(keys) + 2))
    for model, c in dict.fromkeys((m, n) for m, n, _ in costs):
        cells = [f"{costs[(model, c, k)]}; warmed {warmed[(model, c, k)]:.0f} s" if (model, c, k) in costs else "-"
                 for k in keys]
        print(f"| {model} | {c} | " + " | ".join(cells) + " |")
    print()
    what = (f"embeddings requests of one sentence each, {len(sentences())} sentences of 5-53 words cycled "
            "(embeddings.lua)" if args.model == MINILM else "binary requests of one row with binary output (infer.lua)")
    print(f"wrk {wrk_version()}: -t1 (1 connection) or -t2, --latency, --timeout 30s, {what}, "
          f"{args.warmup:g} s warm-up (Java: then until its JIT settled) then "
          f"{args.duration:g} s measured per cell, "
          "the services of a model started together and measured in turn, all on 127.0.0.1 of this machine "
          f"({os.cpu_count()} cores, load generator included).")
    for name, text in settings.items():
        print(f"{name}: {text}")
    print(f"Java JVM options (Helidon and Spring): {os.environ.get('SERVE_JAVA_OPTS', DEFAULT_JAVA_OPTS)}")
    if agreement:
        print(f"Correctness, before the load: {agreement}")
    print("; ".join(statuses))
    return 0 if all(st.endswith("exit 0 after SIGTERM") for st in statuses) else 1


DEFAULT_JAVA_OPTS = "-Xms512m -Xmx512m (scripts/serve's default)"
GREEDY_CHECK_PROMPTS = 4


def chat_warm_up(s: Service, streams: int, seconds: float, max_tokens: int) -> float:
    """Load a chat service before it is measured, as :func:`warm_up` does with wrk; return how long."""
    chat_load.load(s.port, streams, seconds, sentences(), max_tokens)
    if s.key == "python":
        return seconds
    waited = seconds
    while waited < JIT_WARMUP_LIMIT:
        before = jit_seconds(s.process.pid)
        chat_load.load(s.port, streams, 2, sentences(), max_tokens)
        waited += 2
        if (jit_seconds(s.process.pid) - before) / 2 < JIT_SETTLED:
            break
    return waited


def chat_loadtest(args: argparse.Namespace) -> int:
    """Run the streamed chat load test (tiny-lm); print the table and the settings."""
    keys = args.services.split(",")
    connections = [int(c) for c in args.connections.split(",")]
    cells: dict[tuple[int, str], chat_load.Cell] = {}
    costs: dict[tuple[int, str], str] = {}
    settings: dict[str, str] = {}
    services: list[Service] = []
    statuses: list[str] = []
    try:
        for key in keys:
            print(f"loadtest: starting {key} for {TINY_LM}", file=sys.stderr, flush=True)
            services.append(start(key, TINY_LM, args.java_args.split() if key != "python" else []))
            settings[SERVICES[key][0]] = (
                f"{services[-1].settings}; start-up to the ready line {services[-1].startup_s:.1f} s"
            )
        agreement = chat_load.check_greedy({s.key: s.port for s in services}, sentences()[:GREEDY_CHECK_PROMPTS],
                                           args.max_tokens)  # fmt: skip
        print(f"loadtest: {agreement}", file=sys.stderr, flush=True)
        for c in connections:
            for s in services:
                print(f"loadtest: {TINY_LM}, {c} streams, {s.key}", file=sys.stderr, flush=True)
                warmed = chat_warm_up(s, c, args.warmup, args.max_tokens)
                cpu = cpu_seconds(s.process.pid)
                cell = chat_load.load(s.port, c, args.duration, sentences(), args.max_tokens)
                used = cpu_seconds(s.process.pid) - cpu
                cells[(c, s.key)] = cell
                per_token = used * 1e3 / max(1, cell.tokens)
                costs[(c, s.key)] = (
                    f"{per_token:.2f} ms CPU a token, {cell.replies} replies in {cell.wall_s:.1f} s; "
                    f"warmed {warmed:.0f} s"
                )
                if cell.errors:
                    print(f"loadtest: {s.key}: {cell.errors} errors, the first: {cell.first_error}",
                          file=sys.stderr, flush=True)  # fmt: skip
    finally:
        statuses += [f"{s.key}: exit {stop(s)} after SIGTERM" for s in services]
    head = ["streams"]
    for key in keys:
        head += [f"{SERVICES[key][0]} tokens/s", "first token p50", "p99", "a stream's tokens/s p50 (min)", "errors"]
    pairs = [k for k in keys if k != "python" and "python" in keys]
    head += [f"{SERVICES[k][0]} / FastAPI: tokens/s, first token p99" for k in pairs]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for c in connections:
        row = [str(c)]
        for key in keys:
            cell = cells.get((c, key))
            if cell is None:
                row += ["-"] * 5
                continue
            row += [f"{cell.total_tps:,.0f}", f"{cell.ttft_p50_ms:.1f} ms", f"{cell.ttft_p99_ms:.1f} ms",
                    f"{cell.stream_tps_p50:.1f} ({cell.stream_tps_min:.1f})", str(cell.errors)]  # fmt: skip
        for key in pairs:
            a, b = cells.get((c, key)), cells.get((c, "python"))
            if a is None or b is None or not b.total_tps or not b.ttft_p99_ms:
                row.append("-")
            else:
                row.append(f"{a.total_tps / b.total_tps:.2f}x, {a.ttft_p99_ms / b.ttft_p99_ms:.2f}x")
        print("| " + " | ".join(row) + " |")
    print()
    print("CPU a token (the service's processes, user and system, over the measured time) and each cell's replies:")
    print("| streams | " + " | ".join(SERVICES[k][0] for k in keys) + " |")
    print("|" + " --- |" * (len(keys) + 1))
    for c in connections:
        print(f"| {c} | " + " | ".join(costs.get((c, k), "-") for k in keys) + " |")
    print()
    print(f"chat_load.py: each stream one keep-alive connection sending greedy streamed requests of at most "
          f"{args.max_tokens} tokens (one sentence of sentences.txt as the user's message, include_usage) one after "
          f"the other for {args.duration:g} s, every reply read to [DONE]; first token: from writing the request "
          "to the first event with text; a stream's tokens/s: its completion tokens over its whole time; tokens/s: "
          f"all completion tokens over the cell's time. {args.warmup:g} s warm-up per cell (Java: then until its JIT "
          f"settled); the services started together and measured in turn on 127.0.0.1 of this machine "
          f"({os.cpu_count()} cores, load generator included).")  # fmt: skip
    for name, text in settings.items():
        print(f"{name}: {text}")
    print(f"Java JVM options: {os.environ.get('SERVE_JAVA_OPTS', DEFAULT_JAVA_OPTS)}")
    print(f"Correctness, before the load: {agreement}")
    print("; ".join(statuses))
    errors = sum(cell.errors for cell in cells.values())
    clean = all(st.endswith("exit 0 after SIGTERM") for st in statuses) and errors == 0
    return 0 if clean else 1


def ratios(keys: list[str]) -> list[tuple[str, str]]:
    """Return the (service, base) pairs whose requests/s ratio the table shows.

    Each Java service's to FastAPI's, then each Spring service's to its Helidon counterpart's, then
    each service's to its baseline's (``--baseline``), of those measured.
    """
    pairs = [(k, "python") for k in keys if k != "python" and "python" in keys and not k.endswith(BASELINE)]
    pairs += [(k, HELIDON[k]) for k in keys if k in HELIDON and HELIDON[k] in keys]
    return pairs + [(k, k + BASELINE) for k in keys if k + BASELINE in keys]


def wrk_version() -> str:
    """Return wrk's version."""
    out = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
    m = re.search(r"wrk (\S+)", out.stdout + out.stderr)
    return m.group(1) if m else "?"


def soak(args: argparse.Namespace) -> int:
    """Run the soak against the Java service; print its figures and PASS or FAIL."""
    model = "mlp" if args.model == "all" else args.model
    extra = args.java_args.split()
    with tempfile.TemporaryDirectory() as tmp:
        path, _, _ = request_file(Path(tmp), model)
        s = start("java", model, extra)
        try:
            pid = s.process.pid
            baseline = stats(s)
            print(f"soak: {model}, {s.settings}; before the load: live exports {baseline['live_exports']}, "
                  f"native bytes {baseline['native_bytes']}, RSS {rss_bytes(pid) / 2**20:.0f} MiB", flush=True)
            wrk(s, model, path, args.soak_connections, args.warmup)
            peak = wrk(s, model, path, args.soak_connections, args.duration)
            rate = 0.8 * peak.rps
            print(f"soak: peak {peak.rps:,.0f} req/s at {args.soak_connections} connections "
                  f"(p99 {peak.p99_ms:.2f} ms); now {args.soak_duration:g} s at {rate:,.0f} req/s", flush=True)
            samples: list[tuple[float, int]] = []
            wrk_args = ["wrk", "-t2", f"-c{args.soak_connections}", f"-d{round(args.soak_duration)}s", "--latency",
                        "--timeout", "30s", "-s", str(LUA), s.url(), "--", model, str(path), str(rate / 2)]  # fmt: skip
            started = time.monotonic()
            load = subprocess.Popen(wrk_args, stdout=subprocess.PIPE, text=True)
            every = max(1.0, args.soak_duration / 60)
            while load.poll() is None and time.monotonic() - started < args.soak_duration + 60:
                samples.append((time.monotonic() - started, rss_bytes(pid)))
                time.sleep(every)
            out, _ = load.communicate(timeout=60)
            run = read_wrk(out)
            time.sleep(2)
            after = stats(s)
        finally:
            status = stop(s)
    warm = [r for t, r in samples if t >= args.soak_duration / 10]
    first = warm[0] if warm else 0
    drift = max(abs(r - first) / first for r in warm) if first > 0 else float("inf")
    checks = {
        "no errors": run.errors == 0,
        "RSS after the warm-up within 5%": drift <= 0.05,
        "live exports back to their baseline": after["live_exports"] == baseline["live_exports"],
        "native bytes back to their baseline": after["native_bytes"] == baseline["native_bytes"],
        "no request in flight": after["in_flight"] == 0,
        "exit 0 after SIGTERM": status == 0,
    }
    print(f"soak: {run.requests:,} requests in {args.soak_duration:g} s, {run.rps:,.0f} req/s "
          f"(asked {rate:,.0f}), p50 {run.p50_ms:.2f} ms, p99 {run.p99_ms:.2f} ms, errors {run.errors}")
    print(f"soak: RSS after the warm-up {first / 2**20:.0f} MiB, min {min(warm) / 2**20:.0f}, max "
          f"{max(warm) / 2**20:.0f}, last {warm[-1] / 2**20:.0f} MiB: within {drift:.1%} of the first "
          f"({len(warm)} samples)")
    print(f"soak: after the load: live exports {after['live_exports']} (before {baseline['live_exports']}), "
          f"native bytes {after['native_bytes']} (before {baseline['native_bytes']}), in flight {after['in_flight']}, "
          f"batches {after['batches']}, model errors {after['model_errors']}; exit {status} after SIGTERM")
    for name, ok in checks.items():
        print(f"soak: {'ok  ' if ok else 'FAIL'} {name}")
    return 0 if all(checks.values()) else 1


def main() -> int:
    """Parse the options and run the load test or the soak."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all", choices=["all", "mlp", "resnet18", MINILM, TINY_LM],
                        help="all: mlp and resnet18; minilm: POST /v1/embeddings; "
                             "tiny-lm: POST /v1/chat/completions")  # fmt: skip
    parser.add_argument("--duration", type=parse_duration, default=10.0, help="measured seconds per cell (10s)")
    parser.add_argument("--warmup", type=parse_duration, default=3.0, help="warm-up seconds per cell, at least (3s)")
    parser.add_argument("--connections", help="(1,8,64; minilm: 64)")
    parser.add_argument(
        "--services",
        help="of java, java-batching, spring, spring-batching, python (all; minilm: java,python, batching by default)",
    )
    parser.add_argument("--max-tokens", type=int, default=128, help="tiny-lm: the most tokens of a reply (128)")
    parser.add_argument("--java-args", default="", help="more scripts/serve options for the Java services")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="a checkout of another commit, its services built: each Java service is measured from it too, "
        "right after this checkout's, with the ratio of the two",
    )
    parser.add_argument("--soak", action="store_true", help="the soak instead: Java alone, 80%% of its peak")
    parser.add_argument("--soak-duration", type=parse_duration, default=600.0, help="(10m)")
    parser.add_argument("--soak-connections", type=int, default=64)
    args = parser.parse_args()
    minilm = args.model == MINILM
    text = args.model in (MINILM, TINY_LM)
    args.connections = args.connections or ("64" if minilm else "1,8,64")
    args.services = args.services or ("java,python" if text else "java,java-batching,spring,spring-batching,python")
    for key in args.services.split(","):
        if key not in SERVICES:
            parser.error(f"unknown service {key!r}: choose of {', '.join(SERVICES)}")
        if text and key.startswith("spring"):
            parser.error(f"{key}: the Spring Boot service does not serve {args.model}")
        if args.model == TINY_LM and key == "java-batching":
            parser.error("java-batching: tiny-lm's streams are not batched; measure java")
    if text and args.soak:
        parser.error("the soak runs mlp or resnet18")
    if args.baseline is not None:
        if text or args.soak:
            parser.error("--baseline compares the mlp and resnet18 services' load test")
        if not (args.baseline / "scripts" / "serve").is_file():
            parser.error(f"--baseline {args.baseline}: no scripts/serve there (a checkout of dlpack4j?)")
        args.baseline = args.baseline.resolve()
        keys = args.services.split(",")
        if all(k == "python" for k in keys):
            parser.error("--baseline measures the Java services: name one in --services")
        # A checkout from before the Spring Boot example has no Spring services to measure.
        spring = (args.baseline / "examples" / "spring-boot-torch").is_dir()
        compared = [k for k in keys if k != "python" and (spring or k in HELIDON.values())]
        args.services = ",".join(k2 for k in keys for k2 in ([k, k + BASELINE] if k in compared else [k]))
    if args.max_tokens < 1:
        parser.error("--max-tokens must be at least 1")
    if minilm:
        print(f"loadtest: minilm from {model_dir(MINILM)}", file=sys.stderr, flush=True)
    if args.model == TINY_LM:
        print(f"loadtest: tiny-lm from {model_dir(TINY_LM)}", file=sys.stderr, flush=True)
        return chat_loadtest(args)
    return soak(args) if args.soak else loadtest(args)


if __name__ == "__main__":
    sys.exit(main())
