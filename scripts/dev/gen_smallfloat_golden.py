"""Writes the golden data that SmallFloatTest checks SmallFloat against, with ml_dtypes as the oracle.

Run from the repository root, in any Python with numpy and ml_dtypes installed (a scratch venv will do):

    python3 -m venv /tmp/sfvenv && /tmp/sfvenv/bin/pip install ml_dtypes numpy
    /tmp/sfvenv/bin/python scripts/dev/gen_smallfloat_golden.py

It takes a few minutes (the runs tables cast all 2^32 float32 bit patterns) and writes, under
dlpack4j-core/src/test/resources/smallfloat/, all numbers in lower-case hex without 0x:
  <type>.decode.csv  pattern,float32          every bit pattern of an 8/6/4-bit type, decoded
  <type>.encode.csv  float32,pattern,category sampled float32 inputs, encoded (also float16, bfloat16);
                     category: exact, tie, near (a tie +- 1 ulp), tiny, overflow, special, random
  <type>.runs.csv    float32,pattern          each row starts a maximal run of float32 bit patterns
                     (in unsigned order) that encode to one pattern; the run ends where the next begins
"""
import os
import sys

import ml_dtypes
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../dlpack4j-core/src/test/resources/smallfloat")
SMALL = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
         "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"]
NANS = [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000, 0x7FFFFFFF, 0xFFFFFFFF]


def dtype(name):
    """The numpy dtype of the type called `name`."""
    return np.float16 if name == "float16" else getattr(ml_dtypes, name)


def encode(name, f32_bits):
    """The bit patterns of the type `name` that the float32 bit patterns `f32_bits` encode to."""
    with np.errstate(all="ignore"):
        out = np.asarray(f32_bits, np.uint32).view(np.float32).astype(dtype(name))
    return out.view(np.uint16 if out.itemsize == 2 else np.uint8).astype(np.uint32)


def f32(values):
    """The float32 bit patterns of `values`."""
    return np.asarray(values, np.float32).view(np.uint32)


def next_up(bits):
    """One float32 ulp further from zero, then closer to zero (bits of non-negative floats)."""
    return np.concatenate([bits + 1, bits[bits > 0] - 1])


def samples(name, rng, pairs=None):
    """(float32 bits, category) rows: see the module docstring for the categories."""
    info = ml_dtypes.finfo(dtype(name))
    nbits = info.bits
    with np.errstate(all="ignore"):
        values = np.arange(1 << nbits, dtype=np.uint32).astype(np.uint16 if nbits == 16 else np.uint8)
        values = values.view(dtype(name)).astype(np.float32)
    finite = np.unique(np.abs(values[np.isfinite(values)]))  # sorted non-negative magnitudes
    top, tiny = np.float32(info.max), np.float32(info.smallest_subnormal)
    idx = np.arange(len(finite) - 1)
    if pairs is not None:  # 16-bit types: the lowest ties (subnormals), the highest, and a random sample
        idx = np.unique(np.concatenate([idx[:40], idx[-40:], rng.choice(idx, pairs, replace=False)]))
    ties = f32((finite[idx].astype(np.float64) + finite[idx + 1]) / 2)  # exact: the types are narrower
    ulp_top = np.exp2(np.floor(np.log2(top)) - info.nmant)  # of the binade of the largest finite value
    f32_max = float(np.finfo(np.float32).max)
    over = f32([top, top + ulp_top / 2, min(2 * float(top), f32_max), 1e38, f32_max])
    rows = {
        "exact": f32(finite[idx]),
        "tie": ties,
        "near": next_up(ties),
        "tiny": np.concatenate([f32([tiny, tiny / 2, tiny / 4]), next_up(f32([tiny / 2])), [1, 0x400000, 0x7FFFFF]]),
        "overflow": np.concatenate([over, next_up(over[1:2])]),
    }
    exp_lo, exp_hi = int(np.floor(np.log2(tiny))) - 3, min(int(np.log2(top)) + 2, 128)
    rand = rng.uniform(1, 2, 1000) * np.exp2(rng.integers(exp_lo, exp_hi, 1000)).astype(np.float64)
    out = []
    for cat, bits in rows.items():
        bits = np.asarray(bits, np.uint32)
        out += [(b, cat) for b in np.concatenate([bits, bits | 0x80000000])]
    out += [(b, "special") for b in [0, 0x80000000, 0x7F800000, 0xFF800000, *NANS]]
    out += [(b, "random") for b in np.concatenate([f32(rand) ^ (rng.integers(0, 2, 1000, dtype=np.uint32) << 31),
                                                   rng.integers(0, 1 << 32, 200, dtype=np.uint32)])]
    seen, unique = set(), []
    for b, cat in out:
        if int(b) not in seen:
            seen.add(int(b))
            unique.append((int(b), cat))
    return unique


def runs(name):
    """(float32 bits, pattern) rows, each starting a maximal run that encodes to one pattern."""
    base, rows, last = np.arange(1 << 24, dtype=np.uint32), [], None
    for chunk in range(256):
        x = base + np.uint32(chunk << 24)
        y = encode(name, x)
        starts = np.flatnonzero(y[1:] != y[:-1]) + 1
        if last != y[0]:
            rows.append((int(x[0]), int(y[0])))
        rows += [(int(x[i]), int(y[i])) for i in starts]
        last = y[-1]
    return rows


def write(path, header, rows, widths):
    """Writes `rows` under OUT/`path` as CSV: ints in lower-case hex of the given widths."""
    with open(os.path.join(OUT, path), "w") as f:
        f.write(header + "\n")
        for row in rows:
            cells = (f"{v:0{w}x}" if isinstance(v, int) else v for v, w in zip(row, widths, strict=True))
            f.write(",".join(cells) + "\n")


def main():
    """Writes every golden file."""
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20250611)
    for name in [*SMALL, "float16", "bfloat16"]:
        width = 4 if name in ("float16", "bfloat16") else 2
        rows = samples(name, rng, pairs=300 if width == 4 else None)
        pats = encode(name, [b for b, _ in rows])
        encoded = [(b, int(p), c) for (b, c), p in zip(rows, pats, strict=True)]
        write(f"{name}.encode.csv", "float32,pattern,category", encoded, (8, width, 0))
        if name in SMALL:
            n = 1 << ml_dtypes.finfo(dtype(name)).bits
            with np.errstate(all="ignore"):
                dec = np.arange(n, dtype=np.uint8).view(dtype(name)).astype(np.float32).view(np.uint32)
            write(f"{name}.decode.csv", "pattern,float32", [(p, int(d)) for p, d in enumerate(dec)], (2, 8))
            write(f"{name}.runs.csv", "float32,pattern", runs(name), (8, 2))
        print(name, file=sys.stderr)


if __name__ == "__main__":
    main()
