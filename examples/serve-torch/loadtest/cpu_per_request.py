"""CPU time a service spends per request, by thread group, under wrk (a profile, not a benchmark).

Starts one service with ``scripts/serve`` (built already: run ``scripts/serve --build-only`` first),
warms it up with ``--warmup`` seconds of wrk at 8 connections (the JIT takes about ten seconds to
settle on this path), then for each connection count runs wrk for ``--duration`` seconds and prints
the requests/s and the CPU microseconds and context switches (voluntary and involuntary) per
request of each group of the service's threads, read from ``/proc/PID/task/*/schedstat`` and
``status`` before and after, of the service's process and the processes
it started (FastAPI's uvicorn workers). Threads named alike, digits aside, form one group: the
model's threads, the virtual threads' carriers, the JIT compilers, ... CPU per request is steadier
than requests/s on a shared machine: another process's load slows a service down but adds little to
the CPU each of its requests costs.

    .venv-serve/bin/python examples/serve-torch/loadtest/cpu_per_request.py [--service java|python|...]
        [--model mlp] [--connections 1,8,64] [--warmup 15] [--duration 5]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from pathlib import Path

import loadtest


def cpu_by_group(pid: int) -> tuple[Counter[str], Counter[str]]:
    """Return the CPU nanoseconds and context switches of each thread group of ``pid`` and its children so far."""
    used: Counter[str] = Counter()
    switches: Counter[str] = Counter()
    for p in loadtest.family(pid):
        try:
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:  # the process ended meanwhile
            continue
        for task in tasks:
            try:
                name = (task / "comm").read_text().strip()
                nanos = int((task / "schedstat").read_text().split()[0])
                status = (task / "status").read_text()
            except OSError:  # the thread ended meanwhile
                continue
            group = re.sub(r"\d+", "N", re.sub(r"[-#]?\d+$", "", name))
            used[group] += nanos
            counts = re.findall(r"^(?:non)?voluntary_ctxt_switches:\s+(\d+)", status, re.M)
            switches[group] += sum(int(n) for n in counts)
    return used, switches


def main() -> None:
    """Profile one service and print a line per connection count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service", default="java", choices=list(loadtest.SERVICES))
    parser.add_argument("--model", default="mlp", choices=["mlp", "resnet18", loadtest.MINILM])
    parser.add_argument("--connections", default="1,8,64")
    parser.add_argument("--warmup", type=float, default=15)
    parser.add_argument("--duration", type=float, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path, _, _ = loadtest.request_file(Path(tmp), args.model)
        service = loadtest.start(args.service, args.model, [])
        try:
            loadtest.wrk(service, args.model, path, 8, args.warmup)
            for connections in (int(c) for c in args.connections.split(",")):
                before, switched_before = cpu_by_group(service.process.pid)
                run = loadtest.wrk(service, args.model, path, connections, args.duration)
                after, switched_after = cpu_by_group(service.process.pid)
                per_request = {g: (after[g] - before.get(g, 0)) / run.requests / 1e3 for g in after}
                groups = sorted(per_request.items(), key=lambda kv: -kv[1])
                shown = ", ".join(
                    f"{g} {us:.0f} ({(switched_after[g] - switched_before.get(g, 0)) / run.requests:.2f} switches)"
                    for g, us in groups
                    if us >= 1
                )
                print(f"{args.service} {args.model} {connections} connections: {run.rps:,.0f} req/s, "
                      f"CPU {sum(per_request.values()):.0f} us/request: {shown}", flush=True)
        finally:
            service.process.terminate()
            service.process.wait(60)


if __name__ == "__main__":
    main()
