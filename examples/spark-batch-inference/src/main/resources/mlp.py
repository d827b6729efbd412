"""The example's model, `mlp`: 256 features to 16 scores, and what each Spark executor runs.

The executors run this file as a module of its own (dlpack4j's ExecutorModel.fromSource) and call
`load` once per executor JVM; python/tools.py and the benchmark's Ray Data and single-process
runs import it, so that every route scores with the same model.
"""

import torch

FEATURES = 256
SCORES = 16


def make_model(seed: int = 0) -> torch.nn.Sequential:
    """The mlp, its weights drawn by torch's default initialisation from `seed`."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 256), torch.nn.ReLU(), torch.nn.Linear(256, SCORES))


def save_weights(path: str, seed: int = 0) -> None:
    """Writes the seeded mlp's state_dict (keys 0.weight, 0.bias, 2.weight, 2.bias) with torch.save."""
    torch.save(make_model(seed).state_dict(), path)


def load_model(weights: str) -> torch.nn.Sequential:
    """The mlp with the weights of a state_dict file, read with weights_only=True, in eval mode."""
    model = make_model()
    model.load_state_dict(torch.load(weights, weights_only=True))
    return model.eval()


def load(weights: str, threads: int):
    """What an executor loads: a callable from a DLPack float32 [rows, 256] batch to torch's [rows, 16]."""
    torch.set_num_threads(threads)
    model = load_model(weights)

    def score(features):
        with torch.inference_mode():
            return model(torch.from_dlpack(features))

    return score
