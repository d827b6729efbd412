package io.github.dlpack4j.langchain4j;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.langchain4j.data.segment.TextSegment;
import dev.langchain4j.model.output.Response;
import dev.langchain4j.model.scoring.ScoringModel;
import io.github.dlpack4j.model.ModelListener;
import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.SentenceTransformers;
import io.github.dlpack4j.python.Python;

/**
 * A cross-encoder (a reranker) as LangChain4j's {@link ScoringModel}: {@code
 * sentence_transformers.CrossEncoder(dir)} in the JVM's process, each (query, text) pair scored by
 * {@code CrossEncoder.predict} (the model's activation applied: for a one-label reranker, a sigmoid
 * score in 0 to 1). {@link #scoreAll} scores its texts in one call; calls from many threads are
 * batched together with {@link Builder#batching}.
 *
 * {@snippet :
 * try (PythonScoringModel reranker = PythonScoringModel.crossEncoder(Path.of("ms-marco-MiniLM-L6-v2")).build()) {
 *     List<Double> scores = reranker.scoreAll(hits, "how do I close a tensor?").content();
 * }
 * }
 *
 * <p>A pair longer than the model's {@code max_length} is truncated, as sentence-transformers does.
 */
public final class PythonScoringModel implements ScoringModel, AutoCloseable {
    private final PythonModel model;

    private PythonScoringModel(PythonModel model) {
        this.model = model;
    }

    /**
     * {@return a builder of a scoring model over {@code sentence_transformers.CrossEncoder(dir)}}
     *
     * @param dir a cross-encoder's model directory
     */
    public static Builder crossEncoder(Path dir) {
        return new Builder(SentenceTransformers.crossEncoder(dir));
    }

    /**
     * Scores each text against the query, in one call of the model.
     *
     * @param segments the texts
     * @param query    the query
     * @return a score per text, in order
     * @throws io.github.dlpack4j.model.ModelOverloadedException if the model's queue is full
     * @throws io.github.dlpack4j.model.ModelTimeoutException    if the model's deadline passed
     * @throws io.github.dlpack4j.python.PythonException        if the model raised
     */
    @Override
    public Response<List<Double>> scoreAll(List<TextSegment> segments, String query) {
        Objects.requireNonNull(segments, "segments");
        Objects.requireNonNull(query, "query");
        if (segments.isEmpty()) {
            return Response.from(List.of());
        }
        List<String> passages = new ArrayList<>(segments.size());
        for (TextSegment s : segments) {
            passages.add(Objects.requireNonNull(s, "a text segment is null").text());
        }
        try (ModelResult r = model.run(Map.of(SentenceTransformers.QUERY, Collections.nCopies(passages.size(), query),
                SentenceTransformers.PASSAGE, passages))) {
            float[] scores = r.tensor(SentenceTransformers.SCORE).toFloatArray();
            List<Double> out = new ArrayList<>(scores.length);
            for (float s : scores) {
                out.add((double) s);
            }
            return Response.from(out);
        }
    }

    /** {@return the model it runs: its stats, its queue} */
    public PythonModel model() {
        return model;
    }

    /** Closes the model. */
    @Override
    public void close() {
        model.close();
    }

    @Override
    public String toString() {
        return "PythonScoringModel[" + model.name() + "]";
    }

    /** The settings of a cross-encoder: {@link SentenceTransformers.Builder}'s. */
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
         * How many pairs one forward pass takes at most (default 32).
         *
         * @param pairs the most pairs of one forward pass, at least 1
         * @return this builder
         */
        public Builder chunk(int pairs) {
            settings.chunk(pairs);
            return this;
        }

        /**
         * Batches the calls of many threads into one model call, as {@link PythonModel.Builder#batching}.
         *
         * @param maxBatchRows the most pairs of one model call
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
         * Loads the cross-encoder and builds the scoring model, which owns it.
         *
         * @return the scoring model
         * @throws io.github.dlpack4j.python.PythonException if sentence-transformers cannot load the directory
         */
        public PythonScoringModel build() {
            return new PythonScoringModel(settings.build());
        }
    }
}
