"""Write one v2 inference request for scripts/loadtest's wrk script, with a seeded random input.

``make_request.py MODEL FILE [--rows N] [--json]``: the file's first line is the
Inference-Header-Content-Length (-1 for a JSON request); the request body follows it. A binary
request asks for its output as binary data too.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

ROW_SHAPES = {"mlp": (256,), "resnet18": (3, 224, 224)}


def request(model: str, rows: int, binary: bool) -> tuple[int, bytes]:
    """Return the Inference-Header-Content-Length (-1 for JSON) and the body of a request."""
    x = np.random.default_rng(0).standard_normal((rows, *ROW_SHAPES[model]), dtype=np.float32)
    tensor = {"name": "x", "shape": list(x.shape), "datatype": "FP32"}
    if not binary:
        tensor["data"] = x.ravel().tolist()
        return -1, json.dumps({"inputs": [tensor]}).encode()
    tensor["parameters"] = {"binary_data_size": x.nbytes}
    outputs = [{"name": "y", "parameters": {"binary_data": True}}]
    header = json.dumps({"inputs": [tensor], "outputs": outputs}).encode()
    return len(header), header + x.tobytes()


def main() -> None:
    """Write the request file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=sorted(ROW_SHAPES))
    parser.add_argument("file")
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="JSON tensors instead of binary data")
    args = parser.parse_args()
    header_length, body = request(args.model, args.rows, not args.json)
    with open(args.file, "wb") as f:
        f.write(f"{header_length}\n".encode() + body)


if __name__ == "__main__":
    main()
