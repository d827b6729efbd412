package io.github.dlpack4j.langchain4j;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.langchain4j.data.embedding.Embedding;
import dev.langchain4j.data.segment.TextSegment;
import dev.langchain4j.model.embedding.EmbeddingModel;
import dev.langchain4j.model.output.Response;
import dev.langchain4j.model.output.TokenUsage;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.ModelListener;
import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.SentenceTransformers;
import io.github.dlpack4j.model.TensorSpec;
import io.github.dlpack4j.python.Python;

/**
 * A Python text-embedding model as LangChain4j's {@link EmbeddingModel}: any sentence-transformers
 * model directory run by its own Python in the JVM's process ({@link #sentenceTransformers}), or any
 * {@link PythonModel} with one text input and one FLOAT32 output {@code [-1, dim]} ({@link #of}).
 * Calls from many threads are batched together by the runtime ({@link Builder#batching});
 * {@link #embedAll} runs its texts as one call, which the model runs in length-sorted chunks.
 *
 * {@snippet :
 * try (PythonEmbeddingModel model = PythonEmbeddingModel.sentenceTransformers(Path.of("all-MiniLM-L6-v2"))
 *         .batching(64, Duration.ofMillis(2))
 *         .build()) {
 *     Embedding cat = model.embed("A cat sits on the mat").content();
 *     List<Embedding> all = model.embedAll(List.of(TextSegment.from("a"), TextSegment.from("b"))).content();
 *     int dim = model.dimension();   // 384, from the model
 * }
 * }
 *
 * <p>A text longer than the model's {@code max_seq_length} (256 tokens for all-MiniLM-L6-v2) is
 * truncated to it, as sentence-transformers does; a {@link Response}'s {@link TokenUsage} counts the
 * tokens the model read (special tokens included, after truncation). Close it to close the model it
 * made; a model given to {@link #of} stays its owner's.
 */
public final class PythonEmbeddingModel implements EmbeddingModel, AutoCloseable {
    private final PythonModel model;
    private final boolean owned;
    private final String input;
    private final String output;
    private final String tokens;
    private final int dimension;

    private PythonEmbeddingModel(PythonModel model, boolean owned) {
        this.model = Objects.requireNonNull(model, "model");
        this.owned = owned;
        if (model.textInputs().size() != 1 || !model.inputs().isEmpty()) {
            throw new IllegalArgumentException("model " + model.name() + " has text inputs " + model.textInputs()
                    + " and tensor inputs " + model.inputs() + "; an embedding model has one text input and no other");
        }
        List<TensorSpec> outputs = model.outputs();
        if (outputs.size() != 1 || !outputs.getFirst().dtype().equals(DataType.FLOAT32) || outputs.getFirst().ndim() != 2
                || outputs.getFirst().shape()[1] < 1) {
            throw new IllegalArgumentException("model " + model.name() + " has tensor outputs " + outputs
                    + "; an embedding model has one, FLOAT32 [-1, dim] with its dimension declared");
        }
        this.input = model.textInputs().getFirst();
        this.output = outputs.getFirst().name();
        this.dimension = (int) outputs.getFirst().shape()[1];
        this.tokens = model.valueOutputs().contains(SentenceTransformers.TOKENS) ? SentenceTransformers.TOKENS : null;
    }

    /**
     * {@return a builder of an embedding model over {@code sentence_transformers.SentenceTransformer(dir)}}
     *
     * @param dir a sentence-transformers model directory
     */
    public static Builder sentenceTransformers(Path dir) {
        return new Builder(SentenceTransformers.embeddings(dir));
    }

    /**
     * Wraps a model with one text input and one FLOAT32 output {@code [-1, dim]} (and optionally a
     * value output {@code tokens}, a token count a row, for {@link TokenUsage}). The model stays
     * the caller's: closing this does not close it.
     *
     * @param model the model
     * @return the embedding model
     * @throws IllegalArgumentException if the model's signature is not one text in and one FLOAT32 {@code [-1, dim]} out
     */
    public static PythonEmbeddingModel of(PythonModel model) {
        return new PythonEmbeddingModel(model, false);
    }

    /**
     * Embeds the texts in one call of the model.
     *
     * @param textSegments the texts
     * @return their embeddings, in order, with the tokens the model read when it counts them
     * @throws io.github.dlpack4j.model.ModelOverloadedException if the model's queue is full
     * @throws io.github.dlpack4j.model.ModelTimeoutException    if the model's deadline passed
     * @throws io.github.dlpack4j.python.PythonException        if the model raised
     */
    @Override
    public Response<List<Embedding>> embedAll(List<TextSegment> textSegments) {
        Objects.requireNonNull(textSegments, "textSegments");
        if (textSegments.isEmpty()) {
            return Response.from(List.of());
        }
        List<String> texts = new ArrayList<>(textSegments.size());
        for (TextSegment s : textSegments) {
            texts.add(Objects.requireNonNull(s, "a text segment is null").text());
        }
        try (ModelResult r = model.run(Map.of(input, texts))) {
            Tensor t = r.tensor(output);
            float[] flat = t.toFloatArray();
            List<Embedding> embeddings = new ArrayList<>(texts.size());
            for (int i = 0; i < texts.size(); i++) {
                float[] v = new float[dimension];
                System.arraycopy(flat, i * dimension, v, 0, dimension);
                embeddings.add(Embedding.from(v));
            }
            return Response.from(embeddings, tokens == null ? null : new TokenUsage(sum(r.values(tokens))));
        }
    }

    private static int sum(List<Object> counts) {
        long total = 0;
        for (Object c : counts) {
            total += ((Number) c).longValue();
        }
        return Math.toIntExact(total);
    }

    /** {@return the embedding's dimension, as the model declares it (nothing is embedded to find it)} */
    @Override
    public int dimension() {
        return dimension;
    }

    /** {@return the model's name} */
    @Override
    public String modelName() {
        return model.name();
    }

    /** {@return the model it runs: its stats, its queue} */
    public PythonModel model() {
        return model;
    }

    /** Closes the model it made ({@link #sentenceTransformers}); a model given to {@link #of} stays open. */
    @Override
    public void close() {
        if (owned) {
            model.close();
        }
    }

    @Override
    public String toString() {
        return "PythonEmbeddingModel[" + model.name() + ", dimension " + dimension + "]";
    }

    /** The settings of a sentence-transformers embedding model: {@link SentenceTransformers.Builder}'s. */
    public static final class Builder {
        private final SentenceTransformers.Builder settings;

        private Builder(SentenceTransformers.Builder settings) {
            this.settings = settings;
        }

        /**
         * The interpreter to load the model into; {@link Python#start()} when not given.
         *
         * @param python the process's interpreter
         * @return this builder
         */
        public Builder python(Python python) {
            settings.python(python);
            return this;
        }

        /**
         * Names the model; the directory's name by default.
         *
         * @param name the model's name
         * @return this builder
         */
        public Builder name(String name) {
            settings.name(name);
            return this;
        }

        /**
         * Normalizes each embedding to length 1, for a model without a {@code Normalize} module
         * (off by default: the model's own modules decide; all-MiniLM-L6-v2 normalizes).
         *
         * @param normalize whether to normalize
         * @return this builder
         */
        public Builder normalize(boolean normalize) {
            settings.normalize(normalize);
            return this;
        }

        /**
         * How many texts one forward pass takes at most (default 32), as {@link SentenceTransformers.Builder#chunk}.
         *
         * @param texts the most texts of one forward pass, at least 1
         * @return this builder
         */
        public Builder chunk(int texts) {
            settings.chunk(texts);
            return this;
        }

        /**
         * Batches the calls of many threads into one model call, as {@link PythonModel.Builder#batching}.
         *
         * @param maxBatchRows the most texts of one model call
         * @param maxDelay     the longest a batch waits for more calls
         * @return this builder
         */
        public Builder batching(int maxBatchRows, Duration maxDelay) {
            settings.batching(maxBatchRows, maxDelay);
            return this;
        }

        /**
         * How many model calls may run at once, as {@link PythonModel.Builder#workers}.
         *
         * @param calls the number of the model's threads
         * @return this builder
         */
        public Builder workers(int calls) {
            settings.workers(calls);
            return this;
        }

        /**
         * How many calls may wait, as {@link PythonModel.Builder#maxQueue}.
         *
         * @param requests the queue's size
         * @return this builder
         */
        public Builder maxQueue(int requests) {
            settings.maxQueue(requests);
            return this;
        }

        /**
         * A deadline per call, as {@link PythonModel.Builder#timeout}.
         *
         * @param perCall the deadline
         * @return this builder
         */
        public Builder timeout(Duration perCall) {
            settings.timeout(perCall);
            return this;
        }

        /**
         * A listener of each call's outcome, as {@link PythonModel.Builder#listener}.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder listener(ModelListener listener) {
            settings.listener(listener);
            return this;
        }

        /**
         * Loads the model and builds the embedding model, which owns it.
         *
         * @return the embedding model
         * @throws io.github.dlpack4j.python.PythonException if sentence-transformers cannot load the directory
         */
        public PythonEmbeddingModel build() {
            return new PythonEmbeddingModel(settings.build(), true);
        }
    }
}
