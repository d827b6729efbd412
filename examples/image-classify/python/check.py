"""Checks ImageClassify's scores against torch run here, in a process of its own, on the same decoded pixels.

python check.py OUT_DIR HEIGHT WIDTH: reads OUT_DIR/pixels.u8 (the pixels Java decoded, [HEIGHT, WIDTH, 3] uint8)
and OUT_DIR/scores.f32 (the scores Java read back), runs the example's own classify() on the pixels and compares.
"""
import pathlib
import runpy
import sys

import numpy as np

out, height, width = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
here = pathlib.Path(__file__).resolve().parent
classify = runpy.run_path(str(here.parent / "src" / "main" / "resources" / "classify.py"))["classify"]
pixels = np.fromfile(out / "pixels.u8", dtype=np.uint8).reshape(height, width, 3)
java_scores = np.fromfile(out / "scores.f32", dtype=np.float32)
torch_scores = classify(pixels).numpy()


def top(scores):
    """The indices of the five highest scores, highest first."""
    return [int(i) for i in np.argsort(-scores, kind="stable")[:5]]


diff = float(np.max(np.abs(torch_scores - java_scores)))
print(f"check: torch on the same pixels, top-5 {top(torch_scores)}, Java's {top(java_scores)}: "
      f"{'equal' if top(torch_scores) == top(java_scores) else 'DIFFERENT'}, max |diff| {diff:g}")
sys.exit(0 if top(torch_scores) == top(java_scores) and diff <= 1e-5 else 1)
