"""The floor for scripts/bench-spark: the example's job in one Python process, no framework.

    python one_process.py INPUT OUTPUT --weights FILE [--batch N] [--threads N] [--repeat N]

pyarrow reads the Parquet, the torch mlp scores it --batch rows at a time on --threads threads
(torch's default: one per core), pyarrow writes id and scores. --repeat N runs it N times in this
process; the last line gives each run's seconds.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

MODEL_DIR = str(Path(__file__).resolve().parents[1] / "src/main/resources")
sys.path.insert(0, MODEL_DIR)
import mlp  # noqa: E402

# pyarrow's arrays are read-only; torch reads them without writing, as it warns it would not check.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


def run(input_dir: str, output_dir: str, model: torch.nn.Module, batch: int) -> int:
    """Reads, scores and writes once; returns the rows."""
    table = pq.read_table(input_dir, columns=["id", "features"])
    x = table.column("features").combine_chunks().values.to_numpy().reshape(-1, mlp.FEATURES)
    y = np.empty((len(x), mlp.SCORES), dtype=np.float32)
    with torch.inference_mode():
        for i in range(0, len(x), batch):
            y[i : i + batch] = model(torch.from_numpy(x[i : i + batch])).numpy()
    offsets = pa.array(np.arange(0, y.size + 1, mlp.SCORES, dtype=np.int32))
    scores = pa.ListArray.from_arrays(offsets, pa.array(y.reshape(-1)))
    os.makedirs(output_dir, exist_ok=True)
    # Without dictionary pages, as the Spark route writes its scores (floats that do not repeat).
    pq.write_table(pa.table({"id": table.column("id"), "scores": scores}), f"{output_dir}/part-00000.parquet",
                   use_dictionary=False)
    return len(x)


def main() -> int:
    """Runs the job --repeat times and prints the runs' seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--weights", required=True)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = mlp.load_model(args.weights)
    runs = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        rows = run(args.input, args.output, model, args.batch)
        runs.append(time.perf_counter() - start)
    print(f"one-process ({args.threads} torch threads): {rows} rows, the last run {runs[-1]:.2f} s ({rows / runs[-1]:.0f} rows/s); "
          f"runs {' '.join(f'{r:.2f}' for r in runs)} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
