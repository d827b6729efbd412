package io.github.dlpack4j.langchain4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import io.github.dlpack4j.python.PyObject;

/** The tests' causal language model, made by {@code scripts/tiny-lm}, and transformers' own {@code generate} on it. */
final class TinyLm {
    static final Path DIR = dir();

    private TinyLm() {
    }

    private static Path dir() {
        String d = System.getProperty("dlpack4j.tiny-lm");
        if (d == null || !Files.isDirectory(Path.of(d))) {
            throw new IllegalStateException("no model directory at " + d + " (system property dlpack4j.tiny-lm): make it "
                    + "with scripts/tiny-lm, which scripts/test runs before the tests");
        }
        return Path.of(d);
    }

    /**
     * {@return transformers' greedy {@code generate} of the answer to one user message, run directly:
     * the text (special tokens skipped) and the number of tokens generated}
     */
    static Object[] generate(String user, int maxNewTokens) {
        Minilm.PY.setGlobal("tiny_dir", DIR.toString());
        Minilm.PY.setGlobal("user_text", user);
        Minilm.PY.exec("""
                if "direct_lm" not in globals():
                    import dlpack4j_text
                    dlpack4j_text._torchvision_usable()
                    import torch
                    from transformers import AutoModelForCausalLM, AutoTokenizer
                    direct_tok = AutoTokenizer.from_pretrained(tiny_dir)
                    direct_lm = AutoModelForCausalLM.from_pretrained(tiny_dir).eval()
                enc = direct_tok.apply_chat_template([{"role": "user", "content": user_text}], add_generation_prompt=True,
                                                     return_tensors="pt", return_dict=True)
                with torch.inference_mode():
                    out = direct_lm.generate(**enc, do_sample=False, max_new_tokens=%d)
                generated = out[0, enc["input_ids"].shape[1]:]
                direct_text = direct_tok.decode(generated, skip_special_tokens=True)
                direct_count = int(generated.shape[0])
                """.formatted(maxNewTokens));
        try (PyObject text = Minilm.PY.eval("direct_text"); PyObject count = Minilm.PY.eval("direct_count")) {
            return new Object[] {text.str(), (int) count.asLong()};
        }
    }

    static List<String> prompts() {
        return List.of("Hello there!", "How do I share a tensor with PyTorch?", "東京の天気は？ 😀");
    }
}
