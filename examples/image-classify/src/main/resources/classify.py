"""The model and its input transform, shared by ImageClassify (in the JVM) and python/check.py."""
import torch

try:
    import torchvision
except RuntimeError:
    # A CUDA build of torchvision beside a CPU torch (this project's package index has no other; see
    # examples/serve-torch/python/serve_models.py): its operator library cannot load, and the import
    # fails on the schemas of two operators it would have defined. resnet18 uses neither of them.
    _schemas = torch.library.Library("torchvision", "DEF")
    for _op in ("nms", "qnms"):
        _schemas.define(f"{_op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    import torchvision

torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()  # random weights, seeded: nothing downloaded
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def classify(pixels):
    """Scores of the 1000 ImageNet classes for a uint8 [height, width, 3] RGB image (any DLPack producer)."""
    x = torch.from_dlpack(pixels)  # the producer's memory, no copy
    x = x.permute(2, 0, 1).unsqueeze(0).float().div(255)
    x = torch.nn.functional.interpolate(x, size=(224, 224), mode="bilinear", antialias=True, align_corners=False)
    with torch.no_grad():
        return model((x - MEAN) / STD)[0]
