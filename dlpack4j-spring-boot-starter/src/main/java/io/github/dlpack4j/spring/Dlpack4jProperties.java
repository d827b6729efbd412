package io.github.dlpack4j.spring;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The {@code dlpack4j.*} properties: the interpreter, and one {@link io.github.dlpack4j.model.PythonModel}
 * bean per entry under {@code dlpack4j.models}, named after the entry.
 *
 * @param python the Python executable whose environment the embedded interpreter sees; when not set,
 *               the library's own default (the system property {@code dlpack4j.python}, the
 *               environment variable {@code DLPACK4J_PYTHON}, else {@code python3} on the path)
 * @param models the models by bean name
 */
@ConfigurationProperties("dlpack4j")
public record Dlpack4jProperties(String python, @DefaultValue Map<String, Model> models) {
    /**
     * One model: exactly one of {@code torchscript}, {@code exported-program}, {@code factory},
     * {@code sentence-transformers} or {@code transformers-chat}, and the settings that differ from
     * {@link io.github.dlpack4j.model.PythonModel.Builder}'s defaults.
     *
     * @param torchscript          a TorchScript file ({@code torch.jit.save}): a path, or a {@code classpath:} resource
     * @param exportedProgram      an exported program ({@code torch.export.save}): a path, or a {@code classpath:} resource
     * @param factory              a Python function that returns the model's callable, as {@code module:function}
     * @param sentenceTransformers a sentence-transformers model's directory, for
     *                             {@link io.github.dlpack4j.model.SentenceTransformers#embeddings}: a path, or a
     *                             {@code classpath:} directory (one inside a jar is copied to a temp directory
     *                             first); the model declares its own inputs and outputs, and with Spring AI on
     *                             the class path an {@code EmbeddingModel} bean {@code <name>EmbeddingModel}
     *                             comes beside it
     * @param transformersChat     a transformers causal language model's directory, with its tokenizer and chat
     *                             template, for {@link io.github.dlpack4j.model.Transformers#chat}: a path, or a
     *                             {@code classpath:} directory (one inside a jar is copied to a temp directory
     *                             first); the model declares its own inputs and outputs and only streams, and
     *                             with Spring AI on the class path a {@code ChatModel} bean {@code <name>ChatModel}
     *                             comes beside it
     * @param args                 the factory's arguments, as strings
     * @param torchInputs          whether the factory's callable gets torch tensors, made in Java through torch's C
     *                             Exchange API, instead of dlpack4j's Python tensors (default false; TorchScript
     *                             files and exported programs always get torch tensors)
     * @param inputs               the declared inputs, in the order the model takes them
     * @param outputs              the declared outputs, in the order the model returns them
     * @param batching             dynamic batching; off unless {@code max-rows} is set (for a chat model: the
     *                             most streams of one shared decode step, {@code Transformers.Builder#batching})
     * @param workers              how many model calls may run at once (default 1); for a chat model, how many
     *                             generations advance at once, a token each in turn
     * @param maxQueue             how many requests may wait before a call is refused (default 1000); at most
     *                             {@code max-queue} plus {@code workers} streams are open at once
     * @param timeout              a deadline per call, waiting and running together (default none); for a stream,
     *                             to its first item
     * @param streamTimeout        a deadline per stream as a whole, from its subscription to its last item (default none)
     * @param chat                 a {@code transformers-chat} model's generation defaults, where a prompt does not say
     */
    public record Model(String torchscript, String exportedProgram, String factory, String sentenceTransformers, String transformersChat,
                        @DefaultValue List<String> args, @DefaultValue("false") boolean torchInputs, @DefaultValue List<Spec> inputs,
                        @DefaultValue List<Spec> outputs, @DefaultValue Batching batching, Integer workers, Integer maxQueue, Duration timeout,
                        Duration streamTimeout, @DefaultValue Chat chat) {
    }

    /**
     * A chat model's generation defaults ({@code dlpack4j.models.<name>.chat.*}), which a prompt's
     * options override: {@code maxTokens}, {@code temperature}, {@code topP} and
     * {@code stopSequences} in Spring AI's {@code ChatOptions}.
     *
     * @param maxNewTokens the most tokens generated (default 256)
     * @param temperature  0 for greedy decoding (the default), else the sampling temperature
     * @param topP         nucleus sampling's probability mass, more than 0 and at most 1 (default 1: every token)
     * @param seed         the sampler's seed, for the same sampled text every time (default none: a fresh one each time)
     * @param stop         stop sequences: the text ends before the first of them (default none)
     */
    public record Chat(Integer maxNewTokens, Double temperature, Double topP, Long seed, @DefaultValue List<String> stop) {
    }

    /**
     * A declared input or output.
     *
     * @param name  its name: the key of {@code predict(Map)}, or of the dict the model returns
     * @param dtype its element type, NumPy-style: {@code float32}, {@code int64}, {@code bfloat16}, ...
     * @param shape its extents, -1 for any; with batching, dim 0 is the rows
     */
    public record Spec(String name, String dtype, @DefaultValue List<Long> shape) {
    }

    /**
     * Dynamic batching: requests stacked along dim 0 into one model call.
     *
     * @param maxRows  the most rows of one model call; batching is off unless it is set
     * @param maxDelay the longest a batch waits for more requests (default 0: it runs as soon as a worker is free)
     */
    public record Batching(Integer maxRows, @DefaultValue("0ms") Duration maxDelay) {
    }
}
