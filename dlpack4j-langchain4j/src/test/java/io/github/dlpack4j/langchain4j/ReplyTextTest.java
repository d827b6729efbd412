package io.github.dlpack4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import io.github.dlpack4j.python.PyObject;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A streamed reply's text after each token ({@code dlpack4j_text._ReplyText}) is the tokenizer's
 * decode of all its tokens, where it decodes only the tokens after the last whole character (a
 * byte-level BPE) and where it decodes them all (any other tokenizer).
 */
class ReplyTextTest {
    @BeforeAll
    static void load() {
        // building a chat model loads dlpack4j_text into the interpreter
        PythonChatModel.transformers(TinyLm.DIR).python(Minilm.PY).name("tiny-reply-text").build().close();
        Minilm.PY.exec("""
                import random
                import dlpack4j_text
                from transformers import AutoTokenizer

                def reply_text_mismatches(directory, seed, sequences, length):
                    # (whether it decoded the tail alone, the checks made, the first mismatch or None)
                    tokenizer = AutoTokenizer.from_pretrained(directory)
                    vocab = tokenizer.get_vocab()
                    ids = sorted(vocab.values())
                    # GPT-2's stand-in characters of single bytes, where the vocabulary has them
                    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
                    stand_in = {b: chr(b) for b in printable}
                    extra = 0
                    for b in range(256):
                        if b not in stand_in:
                            stand_in[b] = chr(256 + extra)
                            extra += 1
                    byte_ids = {b: vocab[c] for b, c in stand_in.items() if c in vocab}
                    rng = random.Random(seed)
                    words = ["é", "日本", "🙂", "tensor", " the", "\\n", "ü", "Ω≈"]
                    specials = list(tokenizer.all_special_ids)
                    checks, first_bad, windowed = 0, None, None
                    for n in range(sequences):
                        kind = n % 4
                        if kind == 0:  # any tokens, special ones included
                            seq = [rng.choice(ids) for _ in range(length)]
                        elif kind == 1 and byte_ids:  # characters a byte a token, some cut short, some bytes lone
                            seq = []
                            while len(seq) < length:
                                data = rng.choice(words).encode("utf-8")
                                if rng.random() < 0.3:
                                    data = data[: rng.randrange(1, len(data) + 1)]
                                if rng.random() < 0.1:
                                    data = bytes([rng.randrange(128, 256)])
                                seq.extend(byte_ids[b] for b in data if b in byte_ids)
                                if rng.random() < 0.1:
                                    seq.append(rng.choice(specials))
                        else:  # the tokens of real text, mixed with single bytes and special tokens
                            text = "".join(rng.choice(words) for _ in range(length // 2))
                            seq = tokenizer(text, add_special_tokens=False)["input_ids"][:length]
                            for _ in range(length // 8):
                                at = rng.randrange(len(seq) + 1)
                                choice = rng.choice([*byte_ids.values(), *specials] or ids)
                                seq.insert(at, choice)
                        reply = dlpack4j_text._ReplyText(tokenizer)
                        windowed = reply._bytes
                        for k, token in enumerate(seq, 1):
                            got = reply.add(token)
                            want = tokenizer.decode(seq[:k], skip_special_tokens=True, clean_up_tokenization_spaces=False)
                            checks += 1
                            if got != want and first_bad is None:
                                first_bad = (seq[:k], got, want)
                    return windowed, checks, repr(first_bad)
                """);
    }

    private static List<?> check(String dir, int sequences, int length) {
        try (PyObject f = Minilm.PY.getGlobal("reply_text_mismatches");
             PyObject r = f.call(dir, 7, sequences, length)) {
            return (List<?>) r.toJava();
        }
    }

    @Test
    void aByteLevelBpeReplyDecodesOnlyTheTokensAfterItsLastWholeCharacterAndEqualsTheWholeDecodeAfterEveryToken() {
        List<?> r = check(TinyLm.DIR.toString(), 400, 48);
        assertThat(r.get(0)).as("tiny-lm's byte-level BPE takes the path that decodes the tail alone").isEqualTo(true);
        assertThat(((Number) r.get(1)).intValue()).isGreaterThan(10_000);
        assertThat(r.get(2)).as("the first token sequence whose text differs from the whole decode").isEqualTo("None");
    }

    @Test
    void anotherTokenizersReplyDecodesAllItsTokensAndEqualsTheWholeDecodeAfterEveryToken() {
        List<?> r = check(Minilm.EMBEDDING.toString(), 40, 24);
        assertThat(r.get(0)).as("all-MiniLM-L6-v2's WordPiece decodes all the tokens each time").isEqualTo(false);
        assertThat(r.get(2)).isEqualTo("None");
    }
}
