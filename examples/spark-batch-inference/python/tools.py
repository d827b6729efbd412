"""The example's Parquet, and torch run directly on it to check what Spark wrote.

    python tools.py make-input DIR --rows N [--seed S] [--rows-per-file N]
    python tools.py check INPUT OUTPUT [--weights FILE]

make-input writes DIR/part-NNNNN.parquet: `id` (int64, 0 to N-1) and `features` (list<float32>
of 256 standard normal values), one row group per file. check reads INPUT and OUTPUT with pyarrow,
scores INPUT with the mlp in this process, and compares that with OUTPUT's `scores` row by row (by
`id`); it exits with 1 if an id is missing or a score differs by more than 1e-5.
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src/main/resources"))
import mlp  # noqa: E402  (the example's model, shipped to the executors from src/main/resources)

SEEDED_WEIGHTS = "seed 0"


def features_array(x: np.ndarray) -> pa.ListArray:
    """A list<float32> array of the rows of `x`, [rows, 256]."""
    offsets = pa.array(np.arange(0, x.size + 1, mlp.FEATURES, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(x.reshape(-1)))


def make_input(directory: str, rows: int, seed: int, rows_per_file: int) -> None:
    """Writes the input Parquet."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    for part, start in enumerate(range(0, rows, rows_per_file)):
        n = min(rows_per_file, rows - start)
        x = rng.standard_normal((n, mlp.FEATURES), dtype=np.float32)
        table = pa.table({"id": pa.array(np.arange(start, start + n, dtype=np.int64)), "features": features_array(x)})
        pq.write_table(table, f"{directory}/part-{part:05d}.parquet", row_group_size=n)
    print(f"make-input: {rows} rows in {directory}")


def read_sorted(directory: str, column: str, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The ids and the `column` arrays of a Parquet directory, as [rows] and [rows, width], by id."""
    table = pq.read_table(directory, columns=["id", column]).sort_by("id")
    values = table.column(column).combine_chunks()
    if len(values) and (values.value_lengths().to_numpy() != width).any():
        raise SystemExit(f"check: {directory}: a {column} array does not hold {width} values")
    return table.column("id").to_numpy(), values.values.to_numpy().reshape(-1, width).copy()


def check(input_dir: str, output_dir: str, weights: str) -> int:
    """Compares Spark's scores with torch's own, run here on the same input."""
    ids, x = read_sorted(input_dir, "features", mlp.FEATURES)
    out_ids, got = read_sorted(output_dir, "scores", mlp.SCORES)
    if not np.array_equal(ids, out_ids):
        print(f"check: the output holds {len(out_ids)} rows, not the input's {len(ids)} ids", file=sys.stderr)
        return 1
    model = mlp.make_model(0).eval() if weights == SEEDED_WEIGHTS else mlp.load_model(weights)
    with torch.inference_mode():
        want = torch.cat([model(torch.from_numpy(x[i : i + 1024])) for i in range(0, len(x), 1024)]).numpy()
    diff = float(np.abs(got - want).max()) if len(ids) else 0.0
    equal = int((got == want).all(axis=1).sum())
    print(f"check: {len(ids)} rows, every id once; scores against torch run directly: max |diff| {diff:.3g}, "
          f"{equal} of {len(ids)} rows bitwise equal")
    return 0 if diff <= 1e-5 else 1


def main() -> int:
    """Runs one command."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("make-input")
    make.add_argument("directory")
    make.add_argument("--rows", type=int, required=True)
    make.add_argument("--seed", type=int, default=1)
    make.add_argument("--rows-per-file", type=int, default=16384)
    compare = commands.add_parser("check")
    compare.add_argument("input")
    compare.add_argument("output")
    compare.add_argument("--weights", default=SEEDED_WEIGHTS, help="the state_dict file; the seed-0 mlp if none")
    args = parser.parse_args()
    if args.command == "make-input":
        make_input(args.directory, args.rows, args.seed, args.rows_per_file)
        return 0
    return check(args.input, args.output, args.weights)


if __name__ == "__main__":
    sys.exit(main())
