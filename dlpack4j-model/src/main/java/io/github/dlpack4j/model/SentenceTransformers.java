package io.github.dlpack4j.model;

import java.nio.file.Path;

import io.github.dlpack4j.DataType;

/**
 * A sentence-transformers model directory as a {@link PythonModel}: the model's own Python
 * ({@code sentence_transformers.SentenceTransformer} or {@code CrossEncoder}) in the embedded
 * interpreter, strings in, tensors out, batched across Java callers by the runtime.
 *
 * {@snippet :
 * try (PythonModel model = SentenceTransformers.embeddings(Path.of("all-MiniLM-L6-v2"))
 *         .batching(64, Duration.ofMillis(2))
 *         .build();
 *      ModelResult r = model.run(Map.of(SentenceTransformers.TEXT, List.of("a cat", "a kitten")))) {
 *     Tensor embeddings = r.tensor(SentenceTransformers.EMBEDDING);   // FLOAT32 [2, 384]
 *     List<Object> tokens = r.values(SentenceTransformers.TOKENS);    // [4, 5]: Longs
 * }
 * }
 *
 * <p>An embedding model has one text input, {@value #TEXT}, and two outputs: {@value #EMBEDDING},
 * FLOAT32 {@code [-1, dim]} with the dimension the model reports, and {@value #TOKENS}, each text's
 * token count (special tokens included) as a {@code Long}. A call runs as
 * {@code SentenceTransformer.encode} does: its texts sorted by length and run in chunks of
 * {@link Builder#chunk} (32 by default) under {@code torch.inference_mode}; a text longer than the
 * model's {@code max_seq_length} is truncated to it, as sentence-transformers does.
 *
 * <p>A cross-encoder (a reranker) has two text inputs, {@value #QUERY} and {@value #PASSAGE} (a
 * pair a row), and one output, {@value #SCORE}: FLOAT32 {@code [-1]}, {@code CrossEncoder.predict}'s
 * score of each pair (the model's activation applied).
 *
 * <p>The Python environment needs {@code sentence-transformers} (and so torch and transformers).
 */
public final class SentenceTransformers {
    /** The text input of an embedding model. */
    public static final String TEXT = "text";
    /** The embedding output: FLOAT32 {@code [-1, dim]}. */
    public static final String EMBEDDING = "embedding";
    /** The token counts output: a {@code Long} a row. */
    public static final String TOKENS = "tokens";
    /** A cross-encoder's first text input: the query of each pair. */
    public static final String QUERY = "query";
    /** A cross-encoder's second text input: the passage of each pair. */
    public static final String PASSAGE = "passage";
    /** A cross-encoder's output: FLOAT32 {@code [-1]}, a score a pair. */
    public static final String SCORE = "score";

    /** The Python helpers of text models, {@code dlpack4j_text.py}. */
    static final String HELPERS = "dlpack4j_text";

    private SentenceTransformers() {
    }

    /**
     * {@return a builder of an embedding model over {@code SentenceTransformer(dir)}}
     *
     * @param dir a sentence-transformers model directory (its {@code modules.json} and modules)
     */
    public static Builder embeddings(Path dir) {
        return new Builder(dir, false);
    }

    /**
     * {@return a builder of a scoring model over {@code CrossEncoder(dir)}}
     *
     * @param dir a cross-encoder's model directory (a transformers sequence-classification model)
     */
    public static Builder crossEncoder(Path dir) {
        return new Builder(dir, true);
    }

    /**
     * The settings of a sentence-transformers model: {@link #normalize} and {@link #chunk}, and
     * those of the runtime ({@link #batching}, {@link #workers}, {@link #maxQueue}, {@link #timeout},
     * {@link #listener}), which are {@link PythonModel.Builder}'s.
     */
    public static final class Builder extends TextModelBuilder<Builder> {
        private final boolean crossEncoder;
        private boolean normalize;
        private int chunk = 32;

        private Builder(Path dir, boolean crossEncoder) {
            super(dir);
            this.crossEncoder = crossEncoder;
        }

        @Override
        Builder self() {
            return this;
        }

        /**
         * Normalizes each embedding to length 1 ({@code encode(normalize_embeddings=True)}), for a
         * model without a {@code Normalize} module of its own; off by default (the model's own
         * modules decide). Ignored by a cross-encoder.
         *
         * @param normalize whether to normalize
         * @return this builder
         */
        public Builder normalize(boolean normalize) {
            this.normalize = normalize;
            return this;
        }

        /**
         * How many texts (or pairs) one forward pass takes at most (default 32, as {@code encode}'s
         * {@code batch_size}): a model call with more rows runs them in chunks of this many, the
         * texts sorted by length so that a chunk pads little.
         *
         * @param texts the most rows of one forward pass, at least 1
         * @return this builder
         */
        public Builder chunk(int texts) {
            if (texts < 1) {
                throw new IllegalArgumentException("chunk(" + texts + "): at least 1");
            }
            this.chunk = texts;
            return this;
        }

        /**
         * Loads the model once, declares its inputs and outputs (the embedding's dimension from the
         * model) and builds the {@link PythonModel}, warmed up.
         *
         * @return the model, ready for calls
         * @throws IllegalArgumentException if {@code dir} is not a directory
         * @throws io.github.dlpack4j.python.PythonException if sentence-transformers cannot load it
         */
        public PythonModel build() {
            return build(crossEncoder ? "load_cross_encoder" : "load_embedder", (model, loaded) -> {
                long key = (Long) loaded.get(0);
                if (crossEncoder) {
                    model.factory(HELPERS, "cross_encoder", key, chunk)
                            .textInput(QUERY).textInput(PASSAGE).output(SCORE, DataType.FLOAT32, -1);
                } else {
                    model.factory(HELPERS, "embedder", key, normalize, chunk)
                            .textInput(TEXT).output(EMBEDDING, DataType.FLOAT32, -1, (Long) loaded.get(1))
                            .valueOutput(TOKENS);
                }
            });
        }
    }
}
