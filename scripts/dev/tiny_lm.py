"""Makes tiny-lm, a small causal LM with random weights for tests and benchmarks, and checks it.

scripts/tiny-lm runs it with the project's .venv (torch, transformers, tokenizers); it can also be
run by hand:

    .venv/bin/python scripts/dev/tiny_lm.py --out DIR        # make DIR (and check it)
    .venv/bin/python scripts/dev/tiny_lm.py --check DIR      # check a made DIR again
    .venv/bin/python scripts/dev/tiny_lm.py --measure DIR    # time generate and chat_generator

The directory loads with ``transformers.AutoModelForCausalLM.from_pretrained`` and
``AutoTokenizer.from_pretrained``:

* a byte-level BPE tokenizer of VOCAB_SIZE tokens trained by ``tokenizers`` on the repository's
  LICENSE and examples/serve-torch/loadtest/sentences.txt and on sentences of made-up words drawn
  with SEED (``corpus``), with the special tokens ``<|begin|>`` (bos),
  ``<|end|>`` (eos, and the end of every chat turn), ``<|user|>``, ``<|assistant|>``,
  ``<|system|>`` and ``<pad>``, and a chat template;
* a ``LlamaForCausalLM`` (hidden 128, 4 layers, 4 heads, intermediate 384, 1024 positions) whose
  weights are drawn at random with the fixed seed SEED and never trained: its text is noise.

It is made twice, in two scratch directories beside the output, and the two must be the same byte
for byte. The first is then checked (``check``): it loads, ``generate`` runs, and dlpack4j-model's
``dlpack4j_text.chat_generator`` streams what ``generate`` makes, token for token, before it is
moved into place.
"""

from __future__ import annotations

import argparse
import filecmp
import gc
import hashlib
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "dlpack4j-model/src/main/resources/io/github/dlpack4j/model"))
import dlpack4j_text  # noqa: E402

# The package index here serves only torchvision's CUDA build, whose operators do not load into the
# CPU torch; transformers imports torchvision whenever it is installed (dlpack4j_text's remedy).
dlpack4j_text._torchvision_usable()

import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    TextIteratorStreamer,
)
from transformers.generation.streamers import BaseStreamer  # noqa: E402
from transformers.utils import logging as transformers_logging  # noqa: E402

SEED = 2026045
VOCAB_SIZE = 4096
BOS, EOS, USER, ASSISTANT, SYSTEM, PAD = "<|begin|>", "<|end|>", "<|user|>", "<|assistant|>", "<|system|>", "<pad>"
SPECIAL_TOKENS = [BOS, EOS, USER, ASSISTANT, SYSTEM, PAD]
CONTEXT = 1024
# Each turn is its role's token, a newline, the content and <|end|>; the generation prompt is the
# assistant's header, which the model's reply follows (ended by <|end|>, the eos).
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('tiny-lm knows the roles system, user and assistant, not ' + message['role']) }}"
    "{% endif %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
MODEL = {
    "hidden_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "intermediate_size": 384,
    "max_position_embeddings": CONTEXT,
}
PROMPTS = [
    [{"role": "user", "content": "What is DLPack?"}],
    [
        {"role": "system", "content": "You answer in one sentence."},
        {"role": "user", "content": "How does dlpack4j hand a tensor from Java to Python?"},
        {"role": "assistant", "content": "Through a DLPack capsule."},
        {"role": "user", "content": "And back?"},
    ],
    [{"role": "user", "content": "日本語で答えてください 🙂 テンソルとは何ですか？ 🚀"}],  # noqa: RUF001 - not ASCII on purpose
]
NEW_TOKENS = 128


# The tokenizer's corpus: files that do not change with the docs (a docs edit once remade the model, and
# a model made again from other text is another random model, whose checks may fail by chance), and
# sentences of made-up words drawn with the seed, which give the BPE enough text for VOCAB_SIZE tokens.
CORPUS_FILES = ("LICENSE", "examples/serve-torch/loadtest/sentences.txt")
SYLLABLES = (
    "ten", "sor", "py", "torch", "ja", "va", "dl", "pack", "ar", "row", "mo", "del", "stream", "to", "ken",
    "ex", "port", "im", "na", "ti", "ve", "me", "ry", "gil", "lock", "vir", "tu", "al", "thread", "ze", "ro",
    "co", "shape", "stride", "dev", "ice", "cu", "da", "byte", "float", "int", "bool",
)  # fmt: skip
MADE_UP_SENTENCES = 6000


def corpus(root: Path) -> tuple[list[str], str]:
    """The tokenizer's training texts (CORPUS_FILES, then the made-up sentences) and their sha256."""
    digest = hashlib.sha256()
    texts = []
    for name in CORPUS_FILES:
        data = (root / name).read_bytes()
        digest.update(name.encode() + b"\0" + data + b"\0")
        texts.append(data.decode("utf-8"))
    draw = random.Random(SEED)
    lines = []
    for _ in range(MADE_UP_SENTENCES):
        words = [
            "".join(draw.choice(SYLLABLES) for _ in range(draw.randint(1, 3))) for _ in range(draw.randint(4, 14))
        ]
        lines.append(" ".join(words).capitalize() + draw.choice(".,?!:"))
    made_up = "\n".join(lines)
    digest.update(made_up.encode())
    texts.append(made_up)
    return texts, digest.hexdigest()


def train_tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    """A byte-level BPE (GPT-2's pre-tokenizer) trained on texts, wrapped for transformers."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer=trainer)
    # A plain text gets the bos, as Llama's tokenizers give it; the chat template writes its own.
    backend.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B:1", special_tokens=[(BOS, backend.token_to_id(BOS))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        extra_special_tokens=[USER, ASSISTANT, SYSTEM],
        model_max_length=CONTEXT,
        clean_up_tokenization_spaces=False,
        chat_template=CHAT_TEMPLATE,
    )


def write_readme(out: Path, parameters: int, vocab: int, corpus_sha: str) -> None:
    """The directory's README.md (what it is) and the project's LICENSE (Apache-2.0)."""
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    if "Apache License" not in license_text or "Version 2.0" not in license_text:
        raise SystemExit("the repository's LICENSE is not the Apache License 2.0 text this note needs")
    specials = ", ".join(f"`{t}`" for t in SPECIAL_TOKENS)
    (out / "README.md").write_text(
        f"""# tiny-lm

NOT A TRAINED MODEL. A LlamaForCausalLM of {parameters:,} parameters (hidden {MODEL["hidden_size"]},
{MODEL["num_hidden_layers"]} layers, {MODEL["num_attention_heads"]} heads, intermediate {MODEL["intermediate_size"]}, \
a context of {CONTEXT} tokens) whose weights were drawn at
random with the fixed seed {SEED} and never trained: its text is noise. dlpack4j makes it for
tests and benchmarks of text generation (scripts/tiny-lm, scripts/dev/tiny_lm.py), the same byte
for byte on every make from the same checkout and packages.

The tokenizer is a byte-level BPE of {vocab} tokens, trained with `tokenizers` on dlpack4j's
LICENSE and examples/serve-torch/loadtest/sentences.txt and on sentences of made-up words drawn with
the seed (sha256 {corpus_sha[:16]}...).
Special tokens: {specials}.
`{BOS}` is the bos, `{EOS}` the eos and the end of every chat turn, `{PAD}` the padding. The
chat template writes a turn as its role's token, a newline, the content and `{EOS}`; the
generation prompt is `{ASSISTANT}` and a newline.

License: Apache-2.0, as dlpack4j is (LICENSE). Not part of the dlpack4j distribution.
""",
        encoding="utf-8",
    )
    (out / "LICENSE").write_text(license_text, encoding="utf-8")


def make(out: Path) -> None:
    """Writes tiny-lm into the directory out (made; it must not exist)."""
    texts, corpus_sha = corpus(ROOT)
    tokenizer = train_tokenizer(texts)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
        pad_token_id=ids[PAD],
        tie_word_embeddings=False,
        dtype="float32",
        **MODEL,
    )
    with torch.random.fork_rng():
        torch.manual_seed(SEED)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=ids[BOS], eos_token_id=ids[EOS], pad_token_id=ids[PAD])
    out.mkdir(parents=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    write_readme(out, sum(p.numel() for p in model.parameters()), len(tokenizer), corpus_sha)


def same_files(a: Path, b: Path) -> list[str]:
    """The files that differ between two directories (or lie in only one), by name."""
    names = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    names |= {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    return sorted(
        n for n in names if not ((a / n).is_file() and (b / n).is_file() and filecmp.cmp(a / n, b / n, False))
    )


def fail(message: str) -> None:
    """Stops the maker with a message."""
    raise SystemExit(f"tiny-lm: {message}")


def chat(run: object, messages: list[dict[str, str]], **parameters: object) -> list[dict[str, object]]:
    """All the items of one chat_generator stream."""
    return list(run([json.dumps(messages, ensure_ascii=False)], [json.dumps(parameters)]))


def deltas(items: list[dict[str, object]]) -> tuple[list[str], dict[str, object]]:
    """A stream's deltas (the finish item's empty one left out) and its finish; checks the shapes."""
    *pieces, last = items
    if set(last) != {"delta", "finish"} or last["delta"] != "":
        fail(f"the last item is {last!r}")
    if set(last["finish"]) != {"finish_reason", "prompt_tokens", "completion_tokens"}:
        fail(f"the finish is {last['finish']!r}")
    for item in pieces:
        if set(item) != {"delta"} or not isinstance(item["delta"], str) or not item["delta"]:
            fail(f"an item before the last is {item!r}")
    return [p["delta"] for p in pieces], last["finish"]


class Recorder:
    """Records the tokens dlpack4j_text picks, by wrapping its ``_next_token``."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.pick = dlpack4j_text._next_token

    def __enter__(self) -> Recorder:
        def recorded(*args: object) -> int:
            token = self.pick(*args)
            self.tokens.append(token)
            return token

        dlpack4j_text._next_token = recorded
        return self

    def __exit__(self, *_: object) -> None:
        dlpack4j_text._next_token = self.pick


def forcing(model: torch.nn.Module, script: dict[int, int]) -> object:
    """A forward hook that makes the model pick script[length] after a sequence of that length."""

    def hook(_module: object, _args: object, kwargs: dict[str, object], output: object) -> object:
        length = output.past_key_values.get_seq_length()
        if length in script:
            output.logits[:, -1, :] = float("-inf")
            output.logits[:, -1, script[length]] = 0.0
        return output

    return model.register_forward_hook(hook, with_kwargs=True)


def byte_tokens(tokenizer: object) -> dict[int, int]:
    """The id of each byte's own token (byte-level BPE: GPT-2's printable stand-in for each byte)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    vocab = tokenizer.get_vocab()
    return {b: vocab[c] for b, c in chars.items()}


def check(directory: Path) -> None:
    """Loads the directory as transformers and dlpack4j_text do, and checks generation and streaming."""
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory)
    if type(model).__name__ != "LlamaForCausalLM":
        fail(f"the model loads as {type(model).__name__}")
    eos = tokenizer.eos_token_id
    if [tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token] != [BOS, EOS, PAD]:
        fail(f"bos, eos, pad are {tokenizer.bos_token}, {tokenizer.eos_token}, {tokenizer.pad_token}")
    if model.generation_config.eos_token_id != eos or model.generation_config.pad_token_id != tokenizer.pad_token_id:
        fail(f"the generation config's eos and pad are not the tokenizer's: {model.generation_config}")
    rendered = tokenizer.apply_chat_template(PROMPTS[1], add_generation_prompt=True, tokenize=False)
    expected = (
        f"{BOS}<|system|>\nYou answer in one sentence.{EOS}\n<|user|>\nHow does dlpack4j hand a tensor from Java to"
        f" Python?{EOS}\n<|assistant|>\nThrough a DLPack capsule.{EOS}\n<|user|>\nAnd back?{EOS}\n<|assistant|>\n"
    )
    if rendered != expected:
        fail(f"the chat template renders {rendered!r}")
    ids = tokenizer.apply_chat_template(PROMPTS[1], add_generation_prompt=True, return_dict=False)
    if ids != tokenizer(expected, add_special_tokens=False)["input_ids"] or ids.count(tokenizer.bos_token_id) != 1:
        fail(f"apply_chat_template's ids are {ids}")
    if tokenizer("x")["input_ids"][0] != tokenizer.bos_token_id:
        fail("a plain text gets no bos")
    for text in ("DLPack tensors", "日本語 🙂 テンソル", " spaces  and\ttabs\n"):
        if tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"]) != text:
            fail(f"the tokenizer does not decode {text!r} to itself")
    parameters = sum(p.numel() for p in model.parameters())
    print(f"tiny-lm: {type(model).__name__}, {parameters:,} parameters, vocab {len(tokenizer)}, context {CONTEXT}")

    key, context = dlpack4j_text.load_causal_lm(str(directory), "cpu")
    if context != CONTEXT:
        fail(f"load_causal_lm says the context is {context}")
    run = dlpack4j_text.chat_generator(key)
    model, tokenizer = run.model, run.tokenizer

    # Greedy: generate's tokens, and the deltas join to their decoded text.
    greedy = []
    for messages in PROMPTS:
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=False)
        with Recorder() as picked:
            pieces, finish = deltas(chat(run, messages, max_new_tokens=NEW_TOKENS))
        with torch.inference_mode():
            out = model.generate(
                torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                do_sample=False, max_new_tokens=NEW_TOKENS,
            )  # fmt: skip
        theirs = out[0, len(prompt) :].tolist()
        if picked.tokens != theirs:
            first = next((i for i, (a, b) in enumerate(zip(picked.tokens, theirs, strict=False)) if a != b), None)
            fail(f"greedy tokens differ from generate's at {first}: {picked.tokens[:20]} and {theirs[:20]}")
        text = "".join(pieces)
        reference = tokenizer.decode(theirs, skip_special_tokens=True)
        if text != reference:
            fail(f"the deltas join to {text[:80]!r}, generate's tokens decode to {reference[:80]!r}")
        want = {
            "finish_reason": "stop" if theirs[-1] == eos else "length",
            "prompt_tokens": len(prompt),
            "completion_tokens": len(theirs),
        }
        if finish != want:
            fail(f"finish {finish}, not {want}")
        if any(p.endswith("\ufffd") for p in pieces[:-1]):
            fail("a delta ends with U+FFFD")
        greedy.append((messages, prompt, text, pieces, finish))
        print(
            f"tiny-lm: greedy {finish['prompt_tokens']} + {finish['completion_tokens']} tokens "
            f"({finish['finish_reason']}) in {len(pieces)} deltas, the same as generate's: {text[:60]!r}"
        )

    # The eos, forced after 5 tokens: "stop", the eos counted but not in the text, as generate stops.
    messages, prompt, text, pieces, _ = greedy[0]
    hook = forcing(model, {len(prompt) + 4: eos})
    try:
        with Recorder() as picked:
            forced, finish = deltas(chat(run, messages, max_new_tokens=NEW_TOKENS))
        with torch.inference_mode():
            out = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=NEW_TOKENS)
    finally:
        hook.remove()
    theirs = out[0, len(prompt) :].tolist()
    if picked.tokens != theirs or len(theirs) != 5 or theirs[-1] != eos:
        fail(f"with the eos forced at the 5th token: {picked.tokens}, generate {theirs}")
    if finish != {"finish_reason": "stop", "prompt_tokens": len(prompt), "completion_tokens": 5}:
        fail(f"with the eos forced at the 5th token the finish is {finish}")
    if "".join(forced) != tokenizer.decode(theirs, skip_special_tokens=True) or EOS in "".join(forced):
        fail(f"with the eos forced the text is {''.join(forced)!r}")
    print(f"tiny-lm: eos at the 5th token: {finish}, as generate stops")

    # Stop strings: the text before the first one, held back so that no prefix of one leaks.
    start = next(
        (i for i in range(20, len(text) - 6) if text.find(text[i : i + 5]) == i and text[i : i + 5].strip()), None
    )
    if start is None:
        fail(f"no stop string to cut the greedy text {text!r} with")
    for stop, want in (
        ([text[start : start + 5], "never-in-it"], text[:start]),
        ([text[start : start + 3] + "\0\0\0"], text),  # a prefix that never completes: nothing lost
        # two stop strings: the text ends before whichever is found first (the 5-gram where the character does
        # not come before it)
        ([text[start + 2 : start + 3], text[start : start + 5]], text[: min(start, text.find(text[start + 2]))]),
    ):
        pieces, finish = deltas(chat(run, messages, max_new_tokens=NEW_TOKENS, stop=stop))
        reason = "length" if want == text else "stop"
        if "".join(pieces) != want or finish["finish_reason"] != reason:
            fail(f"stop {stop!r}: {''.join(pieces)!r} ({finish}), not {want!r}")
    print(
        f"tiny-lm: stop strings cut the text before them ({start} of {len(text)} characters, "
        f"before {text[start : start + 5]!r})"
    )

    # Sampling: the same tokens for the same seed, other tokens for another; the deltas decode them.
    sampled = []
    for seed in (7, 7, 8):
        with Recorder() as picked:
            pieces, finish = deltas(chat(run, PROMPTS[2], max_new_tokens=96, temperature=1.0, top_p=0.95, seed=seed))
        if "".join(pieces) != tokenizer.decode(picked.tokens, skip_special_tokens=True):
            fail(f"sampled deltas {''.join(pieces)!r} are not the text of tokens {picked.tokens}")
        if any(p.endswith("\ufffd") for p in pieces[:-1]):
            fail("a sampled delta ends with U+FFFD")
        sampled.append(picked.tokens)
    if sampled[0] != sampled[1] or sampled[0] == sampled[2]:
        fail(f"seeded sampling: seed 7 gave {sampled[0][:10]} and {sampled[1][:10]}, seed 8 {sampled[2][:10]}")
    with Recorder() as picked:
        chat(run, PROMPTS[2], max_new_tokens=96, temperature=0.7, top_p=0.5, seed=7)
    if picked.tokens == sampled[0]:
        fail("temperature and top_p change nothing")
    print(f"tiny-lm: sampling with seed 7 twice gives the same {len(sampled[0])} tokens, seed 8 others")

    # Multi-byte characters, a byte a token: each is yielded whole, when its last byte has come.
    word = "é日本🙂!"
    singles = byte_tokens(tokenizer)
    script = [singles[b] for b in word.encode("utf-8")] + [tokenizer.convert_tokens_to_ids("Ġthe"), eos]
    hook = forcing(model, {len(prompt) + i: t for i, t in enumerate(script)})
    try:
        pieces, finish = deltas(chat(run, messages, max_new_tokens=NEW_TOKENS))
    finally:
        hook.remove()
    if pieces != [*word, " the"] or finish["completion_tokens"] != len(script):
        fail(f"a byte a token, {word!r} streams as {pieces} ({finish})")
    print(f"tiny-lm: {word!r} a byte a token ({len(script) - 2} tokens) streams as {pieces}")

    # Closed early: its finally lets go of the KV cache.
    caches = []
    hook = model.register_forward_hook(lambda _m, _a, out: caches.append(weakref.ref(out.past_key_values)) and None)
    try:
        stream = run([json.dumps(PROMPTS[0])], [json.dumps({"max_new_tokens": NEW_TOKENS})])
        items = [next(stream) for _ in range(3)]
        if run.open_streams() != 1 or any("finish" in i for i in items):
            fail(f"3 items in: {items}, {run.open_streams()} open")
        stream.close()
    finally:
        hook.remove()
    gc.collect()
    if run.open_streams() != 0 or any(c() is not None for c in caches) or next(stream, None) is not None:
        fail("closed after 3 items, the stream is still open or its KV cache alive")
    print("tiny-lm: a stream closed after 3 items ran its finally and let go of its KV cache")

    # The context's end, no tokens asked for, and bad inputs.
    long = [{"role": "user", "content": " ".join(["tensor"] * 1000)}]
    long_prompt = len(tokenizer.apply_chat_template(long, add_generation_prompt=True, return_dict=False))
    _, finish = deltas(chat(run, long, max_new_tokens=NEW_TOKENS))
    if finish != {"finish_reason": "length", "prompt_tokens": long_prompt, "completion_tokens": CONTEXT - long_prompt}:
        fail(f"at the context's end: {finish}")
    if chat(run, messages, max_new_tokens=0) != [
        {"delta": "", "finish": {"finish_reason": "length", "prompt_tokens": len(prompt), "completion_tokens": 0}}
    ]:
        fail("max_new_tokens 0 yields more than its finish")
    for bad_messages, bad_parameters in (
        ('[{"role": "tool", "content": "x"}]', "{}"),
        ("[]", "{}"),
        ('{"role": "user"}', "{}"),
        (json.dumps(PROMPTS[0]), '{"max_tokens": 5}'),
        (json.dumps(PROMPTS[0]), '{"temperature": -1}'),
        (json.dumps(PROMPTS[0]), '{"top_p": 0}'),
        (json.dumps(PROMPTS[0]), '{"seed": 1.5}'),
        (json.dumps(PROMPTS[0]), '{"stop": [1]}'),
        (json.dumps([{"role": "user", "content": "tensor " * 1100}]), "{}"),
    ):
        try:
            run([bad_messages], [bad_parameters])
        except Exception:  # refused, as it should be
            continue
        fail(f"messages {bad_messages[:60]!r} with parameters {bad_parameters} were not refused by the call")
    if run.open_streams() != 0:
        fail(f"{run.open_streams()} streams open after the checks")
    print(f"tiny-lm: the context's end ({long_prompt} + {CONTEXT - long_prompt} tokens), 0 tokens, bad inputs refused")


def replace(stage: Path, out: Path) -> None:
    """Moves the checked stage directory to out, replacing what was there."""
    if out.exists():
        shutil.rmtree(out)
    stage.rename(out)


class FirstToken(BaseStreamer):
    """generate's streamer that notes when the first generated token comes (the first put is the prompt)."""

    def __init__(self) -> None:
        self.puts = 0
        self.first: float | None = None

    def put(self, value: object) -> None:
        """Notes the time of the first generated token."""
        self.puts += 1
        if self.puts == 2 and self.first is None:
            self.first = time.perf_counter()

    def end(self) -> None:
        """Nothing to flush."""


def measure(directory: Path, runs: int = 3) -> None:
    """Times generate and chat_generator greedily for NEW_TOKENS tokens, and their first token or text."""
    key, _ = dlpack4j_text.load_causal_lm(str(directory), "cpu")
    run = dlpack4j_text.chat_generator(key)
    model, tokenizer = run.model, run.tokenizer
    messages = PROMPTS[0]
    prompt = torch.tensor([tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=False)])
    mask = torch.ones_like(prompt)
    parameters = [json.dumps({"max_new_tokens": NEW_TOKENS})]

    def generate(**kwargs: object) -> object:
        with torch.inference_mode():
            return model.generate(
                prompt, attention_mask=mask, do_sample=False, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                **kwargs,
            )  # fmt: skip

    def drain() -> tuple[int, float]:
        start = time.perf_counter()
        first = None
        for item in run([json.dumps(messages)], parameters):
            if first is None and item["delta"]:
                first = time.perf_counter() - start
        return item["finish"]["completion_tokens"], first

    generate()
    drain()  # warm-up
    print(f"tiny-lm: torch {torch.__version__}, {torch.get_num_threads()} threads, prompt {prompt.shape[1]} tokens")
    rates: dict[str, list[float]] = {"generate": [], "chat_generator": []}
    for _ in range(runs):  # the two take turns, so that a busy machine slows both alike
        for name, once in (
            ("generate", lambda: generate().shape[1] - prompt.shape[1]),
            ("chat_generator", lambda: drain()[0]),
        ):
            start = time.perf_counter()
            tokens = once()
            seconds = time.perf_counter() - start
            rates[name].append(tokens / seconds)
            print(f"tiny-lm: {name}: {tokens} tokens in {seconds * 1000:.1f} ms, {tokens / seconds:.0f} tokens/s")
    for name, values in rates.items():
        print(f"tiny-lm: {name}: median {statistics.median(values):.0f} tokens/s of {runs} runs")
    for _ in range(runs):
        streamer = FirstToken()
        start = time.perf_counter()
        generate(streamer=streamer)
        first_token = streamer.first - start
        texts = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
        start = time.perf_counter()
        thread = threading.Thread(target=generate, kwargs={"streamer": texts})
        thread.start()
        first_text = next(t for t in texts if t)
        first_text_s = time.perf_counter() - start
        for _ in texts:
            pass
        thread.join()
        _, first_delta = drain()
        print(
            f"tiny-lm: first token of generate {first_token * 1000:.2f} ms (streamer callback), first text of "
            f"TextIteratorStreamer {first_text_s * 1000:.2f} ms ({first_text!r}), first delta of chat_generator "
            f"{first_delta * 1000:.2f} ms"
        )


def main(argv: list[str] | None = None) -> None:
    """Makes (twice, compared), checks and moves tiny-lm into place; or checks or times one made."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--out", type=Path, help="make tiny-lm in this directory (replacing it)")
    action.add_argument("--check", type=Path, help="check a tiny-lm directory")
    action.add_argument("--measure", type=Path, help="time generate and chat_generator on a tiny-lm directory")
    args = parser.parse_args(argv)
    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()
    if args.check:
        check(args.check)
        return
    if args.measure:
        measure(args.measure)
        return
    out = args.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}-", dir=out.parent) as scratch:
        first, second = Path(scratch, "first"), Path(scratch, "second")
        make(first)
        make(second)
        differ = same_files(first, second)
        if differ:
            fail(f"two makes differ in {differ}")
        files = sorted(p.name for p in first.iterdir())
        print(f"tiny-lm: made twice, the same byte for byte: {', '.join(files)}")
        check(first)
        replace(first, out)


if __name__ == "__main__":
    main()
