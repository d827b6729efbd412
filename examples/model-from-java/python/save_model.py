"""Saves the example's model, a small torch MLP, as TorchScript; and runs it directly, for the check.

Run it on its own as `python save_model.py mlp.pt`; the Java example imports it in the embedded
interpreter and calls `save` and `answers`.
"""

import sys

import torch


def save(path: str) -> None:
    """Writes `Linear(16, 32), ReLU, Linear(32, 4)` with seeded weights to `path` (torch.jit.save)."""
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    torch.jit.save(torch.jit.script(mlp.eval()), path)


def answers(path: str, rows: object) -> torch.Tensor:
    """Torch's own answers: the saved model run directly on `rows` (any DLPack tensor), one row at a time."""
    model = torch.jit.load(path, map_location="cpu").eval()
    x = torch.from_dlpack(rows)
    with torch.inference_mode():
        return torch.cat([model(x[i : i + 1]) for i in range(len(x))])


if __name__ == "__main__":
    save(sys.argv[1])
