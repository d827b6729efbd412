package io.github.dlpack4j.spring;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/**
 * The tests' causal language model, made by {@code scripts/tiny-lm} (the pom passes its directory as
 * the system property {@code dlpack4j.tiny-lm}): random weights, so its text is noise, and greedy
 * decoding that never meets its end-of-sequence token in 200 tokens on these prompts; and
 * transformers' own {@code generate} run directly on it in the tests' interpreter.
 */
final class TinyLm {
    static final Python PY = Python.start();
    static final Path DIR = dir();
    static final List<String> PROMPTS = List.of("Hello there!", "How do I share a tensor with PyTorch?", "東京の天気は？ 😀");

    private TinyLm() {
    }

    /**
     * What transformers' greedy {@code generate} made.
     *
     * @param text             the generated tokens' text, special tokens skipped
     * @param promptTokens     the chat template's prompt, in tokens
     * @param completionTokens the tokens generated
     */
    record Generated(String text, int promptTokens, int completionTokens) {
    }

    /** One message of a conversation. */
    record Turn(String role, String content) {
    }

    private static Path dir() {
        String d = System.getProperty("dlpack4j.tiny-lm");
        if (d == null || !Files.isDirectory(Path.of(d))) {
            throw new IllegalStateException("no model directory at " + d + " (system property dlpack4j.tiny-lm): make it"
                    + " with scripts/tiny-lm, which scripts/test runs before the tests");
        }
        return Path.of(d);
    }

    /** {@return transformers' greedy {@code generate} of the reply to one user message} */
    static Generated generate(String user, int maxNewTokens) {
        return generate(List.of(new Turn("user", user)), maxNewTokens);
    }

    /**
     * {@return transformers' greedy {@code generate} of the reply to a conversation, on the prompt
     * of the tokenizer's chat template, run directly after a model bean loaded the library's helpers}
     */
    static Generated generate(List<Turn> conversation, int maxNewTokens) {
        PY.setGlobal("tiny_dir", DIR.toString());
        PY.setGlobal("tiny_roles", conversation.stream().map(Turn::role).toList());
        PY.setGlobal("tiny_contents", conversation.stream().map(Turn::content).toList());
        PY.exec("""
                if "tiny_direct_lm" not in globals():
                    import dlpack4j_text
                    dlpack4j_text._torchvision_usable()
                    import torch
                    from transformers import AutoModelForCausalLM, AutoTokenizer
                    tiny_direct_tok = AutoTokenizer.from_pretrained(tiny_dir)
                    tiny_direct_lm = AutoModelForCausalLM.from_pretrained(tiny_dir).eval()
                tiny_messages = [{"role": r, "content": c} for r, c in zip(tiny_roles, tiny_contents)]
                tiny_enc = tiny_direct_tok.apply_chat_template(tiny_messages, add_generation_prompt=True,
                                                               return_tensors="pt", return_dict=True)
                with torch.inference_mode():
                    tiny_out = tiny_direct_lm.generate(**tiny_enc, do_sample=False, max_new_tokens=%d)
                tiny_prompt = int(tiny_enc["input_ids"].shape[1])
                tiny_generated = tiny_out[0, tiny_prompt:]
                tiny_text = tiny_direct_tok.decode(tiny_generated, skip_special_tokens=True)
                tiny_count = int(tiny_generated.shape[0])
                """.formatted(maxNewTokens));
        try (PyObject text = PY.eval("tiny_text"); PyObject prompt = PY.eval("tiny_prompt"); PyObject count = PY.eval("tiny_count")) {
            return new Generated(text.str(), (int) prompt.asLong(), (int) count.asLong());
        }
    }
}
