"""The example's job on Ray Data, for scripts/bench-spark: the same Parquet, mlp and output.

    python ray_data.py INPUT OUTPUT --weights FILE [--batch N] [--cpus N] [--repeat N]

ray.data.read_parquet, map_batches with the torch mlp (batches of --batch rows as pyarrow tables,
one torch thread per task; the model loaded once per Ray worker process and kept there, as dlpack4j
keeps it once per executor JVM), write_parquet; on a local Ray of --cpus CPUs (2). --repeat N runs
the job N times on the same Ray; the last line gives each run's seconds.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import ray  # noqa: E402
import torch  # noqa: E402

MODEL_DIR = str(Path(__file__).resolve().parents[1] / "src/main/resources")
sys.path.insert(0, MODEL_DIR)
import mlp  # noqa: E402

# pyarrow's arrays are read-only; torch reads them without writing, as it warns it would not check.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")

_models = {}


def score(batch: pa.Table, weights: str) -> pa.Table:
    """One batch: features list<float32>[256] in, id and scores list<float32>[16] out."""
    model = _models.get(weights)
    if model is None:
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        torch.set_num_threads(1)
        model = _models[weights] = mlp.load_model(weights)
    features = batch.column("features").combine_chunks()
    x = torch.from_numpy(features.values.to_numpy().reshape(-1, mlp.FEATURES))
    with torch.inference_mode():
        y = model(x).numpy()
    offsets = pa.array(np.arange(0, y.size + 1, mlp.SCORES, dtype=np.int32))
    return pa.table({"id": batch.column("id"), "scores": pa.ListArray.from_arrays(offsets, pa.array(y.reshape(-1)))})


def main() -> int:
    """Runs the job --repeat times and prints the runs' seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--weights", required=True)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, object_store_memory=2 * 1024**3,
             runtime_env={"env_vars": {"PYTHONPATH": MODEL_DIR}})  # the workers import mlp too
    ray.data.DataContext.get_current().enable_progress_bars = False
    runs = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        ds = ray.data.read_parquet(args.input)
        ds = ds.map_batches(score, batch_size=args.batch, batch_format="pyarrow", fn_kwargs={"weights": args.weights},
                            num_cpus=1)
        ds.write_parquet(args.output, mode="overwrite", use_dictionary=False)  # as the Spark route writes
        runs.append(time.perf_counter() - start)
    rows = ray.data.read_parquet(args.output).count()
    ray.shutdown()
    print(f"ray-data: {rows} rows, the last run {runs[-1]:.2f} s ({rows / runs[-1]:.0f} rows/s); "
          f"runs {' '.join(f'{r:.2f}' for r in runs)} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
