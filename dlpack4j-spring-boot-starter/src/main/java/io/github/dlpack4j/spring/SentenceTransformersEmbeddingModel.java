package io.github.dlpack4j.spring;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.SentenceTransformers;
import io.github.dlpack4j.model.TensorSpec;

import org.springframework.ai.chat.metadata.DefaultUsage;
import org.springframework.ai.chat.metadata.EmptyUsage;
import org.springframework.ai.chat.metadata.Usage;
import org.springframework.ai.document.Document;
import org.springframework.ai.embedding.Embedding;
import org.springframework.ai.embedding.EmbeddingModel;
import org.springframework.ai.embedding.EmbeddingOptions;
import org.springframework.ai.embedding.EmbeddingRequest;
import org.springframework.ai.embedding.EmbeddingResponse;
import org.springframework.ai.embedding.EmbeddingResponseMetadata;

/**
 * A sentence-transformers model's {@link PythonModel} as Spring AI's {@link EmbeddingModel}: the
 * starter makes one, the bean {@code <name>EmbeddingModel}, beside the model bean of each
 * {@code dlpack4j.models.<name>.sentence-transformers} entry when Spring AI is on the class path.
 *
 * {@snippet :
 * class Search {                                 // a @Service of the application's
 *     private final EmbeddingModel embeddings;   // minilmEmbeddingModel, the only one
 *
 *     Search(EmbeddingModel embeddings) {
 *         this.embeddings = embeddings;
 *     }
 *
 *     float[] vector(String text) {
 *         return embeddings.embed(text);          // 384 floats for all-MiniLM-L6-v2
 *     }
 * }
 * }
 *
 * <p>{@link #call} runs all of a request's texts as one call of the model, which runs them as
 * sentence-transformers' {@code encode} does (sorted by length, in chunks); calls from many threads
 * are batched together by the model's runtime when its entry sets {@code batching}. Each
 * {@link Embedding} has its text's index in the request; the response's
 * {@link EmbeddingResponseMetadata} names the model (its entry's name) and counts, as
 * {@link Usage#getPromptTokens()} and {@link Usage#getTotalTokens()}, the tokens the model read
 * (special tokens included, after truncation to the model's {@code max_seq_length}).
 *
 * <p>It does not own the model: closing the context closes the model bean once (this has nothing
 * to close), after which a call fails with the model's {@link IllegalStateException}. The model's
 * health and meters are the model bean's, under its name.
 */
public final class SentenceTransformersEmbeddingModel implements EmbeddingModel {
    private final PythonModel model;
    private final String input;
    private final String output;
    private final int dimensions;
    private final boolean countsTokens;

    /**
     * Wraps a model of {@link SentenceTransformers#embeddings}'s signature: one text input and one
     * FLOAT32 output {@code [-1, dim]} with its dimension declared, and optionally the value output
     * {@value SentenceTransformers#TOKENS}, a token count a text. The model stays its owner's.
     *
     * @param model the model
     * @throws IllegalArgumentException if the model has another signature
     */
    public SentenceTransformersEmbeddingModel(PythonModel model) {
        this.model = Objects.requireNonNull(model, "model");
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
        this.dimensions = Math.toIntExact(outputs.getFirst().shape()[1]);
        this.countsTokens = model.valueOutputs().contains(SentenceTransformers.TOKENS);
    }

    /**
     * Embeds the request's texts in one call of the model.
     *
     * @param request the texts, and options: their {@code dimensions}, when set, must be the model's;
     *                their {@code model} is not read (the bean is one model)
     * @return an embedding a text, in the request's order, with the tokens the model read
     * @throws IllegalArgumentException if the options ask for other dimensions, or a text is null
     * @throws IllegalStateException    if the model is closed
     * @throws io.github.dlpack4j.model.ModelOverloadedException if the model's queue is full
     * @throws io.github.dlpack4j.model.ModelTimeoutException    if the model's deadline passed
     * @throws io.github.dlpack4j.python.PythonException        if the model raised
     */
    @Override
    public EmbeddingResponse call(EmbeddingRequest request) {
        Objects.requireNonNull(request, "request");
        EmbeddingOptions options = request.getOptions();
        if (options != null && options.getDimensions() != null && options.getDimensions() != dimensions) {
            throw new IllegalArgumentException("the request asks for " + options.getDimensions() + " dimensions; model "
                    + model.name() + " embeds in " + dimensions);
        }
        List<String> texts = Objects.requireNonNull(request.getInstructions(), "the request's texts");
        if (texts.isEmpty()) {
            return new EmbeddingResponse(List.of(), metadata(0));
        }
        try (ModelResult r = model.run(Map.of(input, texts))) {
            float[] flat = r.tensor(output).toFloatArray();
            List<Embedding> embeddings = new ArrayList<>(texts.size());
            for (int i = 0; i < texts.size(); i++) {
                float[] v = new float[dimensions];
                System.arraycopy(flat, i * dimensions, v, 0, dimensions);
                embeddings.add(new Embedding(v, i));
            }
            long tokens = 0;
            if (countsTokens) {
                for (Object c : r.values(SentenceTransformers.TOKENS)) {
                    tokens += ((Number) c).longValue();
                }
            }
            return new EmbeddingResponse(embeddings, metadata(tokens));
        }
    }

    private EmbeddingResponseMetadata metadata(long tokens) {
        Usage usage = countsTokens ? new DefaultUsage(Math.toIntExact(tokens), 0, Math.toIntExact(tokens)) : new EmptyUsage();
        return new EmbeddingResponseMetadata(model.name(), usage);
    }

    /**
     * Embeds the document's text ({@link #getEmbeddingContent}: {@link Document#getText()}, without
     * its metadata).
     *
     * @param document a text document
     * @return its embedding
     * @throws IllegalArgumentException if the document has no text (a media document)
     */
    @Override
    public float[] embed(Document document) {
        Objects.requireNonNull(document, "document");
        String text = getEmbeddingContent(document);
        if (text == null) {
            throw new IllegalArgumentException("document " + document.getId() + " has no text; model " + model.name()
                    + " embeds texts");
        }
        return embed(text);
    }

    /** {@return the embeddings' dimension, as the model declares it (nothing is embedded to find it)} */
    @Override
    public int dimensions() {
        return dimensions;
    }

    /** {@return the model it runs: its name, stats and queue} */
    public PythonModel model() {
        return model;
    }

    @Override
    public String toString() {
        return "SentenceTransformersEmbeddingModel[" + model.name() + ", " + dimensions + " dimensions]";
    }
}
