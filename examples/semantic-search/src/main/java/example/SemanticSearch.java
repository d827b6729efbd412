package example;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import dev.langchain4j.data.embedding.Embedding;
import dev.langchain4j.data.segment.TextSegment;
import dev.langchain4j.model.output.Response;
import io.github.dlpack4j.langchain4j.PythonEmbeddingModel;
import io.github.dlpack4j.langchain4j.PythonScoringModel;
import io.github.dlpack4j.model.ModelStats;

/**
 * Semantic search over the dlpack4j docs: the paragraphs of the project's {@code README.md} and
 * {@code docs/*.md} ({@link Corpus}), each after its page's title and heading, embedded by a sentence-transformers model in the JVM's own
 * CPython ({@link PythonEmbeddingModel}, LangChain4j's {@code EmbeddingModel}), queries answered by
 * cosine similarity over an in-memory matrix ({@link VectorIndex}), and the nearest hits reranked
 * by a cross-encoder ({@link PythonScoringModel}, LangChain4j's {@code ScoringModel}).
 *
 * <p>Arguments: {@code [--model DIR] [--reranker DIR] [--top K] [QUERY...]}. The model directories
 * default to the system properties {@code minilm} and {@code reranker} (the pom sets them to
 * {@code scripts/minilm}'s directories); without queries it answers three of its own.
 */
public final class SemanticSearch {
    /** The queries answered when none are given. */
    public static final List<String> DEFAULT_QUERIES = List.of(
            "how do I share a tensor with PyTorch without copying",
            "what happens when the queue is full",
            "how do I run a model in Spark");

    /** What {@code scripts/minilm} writes at the top of its untrained cross-encoder's README.md. */
    private static final String UNTRAINED_MARK = "NOT A TRAINED RERANKER";
    private static final int SNIPPET = 90;

    private SemanticSearch() {}

    /**
     * Embeds the corpus, then answers each query: the nearest paragraphs by cosine similarity, and
     * their order after the reranker.
     *
     * @param args {@code [--model DIR] [--reranker DIR] [--top K] [QUERY...]}
     * @throws Exception if a model cannot be loaded or run
     */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        String modelDir = System.getProperty("minilm");
        String rerankerDir = System.getProperty("reranker");
        int top = 10;
        List<String> queries = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--model" -> modelDir = value(args, ++i);
                case "--reranker" -> rerankerDir = value(args, ++i);
                case "--top" -> top = Integer.parseInt(value(args, ++i));
                default -> {
                    if (args[i].startsWith("--")) {
                        usage("unknown option " + args[i]);
                    }
                    if (!args[i].isBlank()) {
                        queries.add(args[i]);
                    }
                }
            }
        }
        if (modelDir == null || rerankerDir == null) {
            usage("no model directory: --model DIR and --reranker DIR, or -Dminilm=DIR and -Dreranker=DIR");
        }
        if (queries.isEmpty()) {
            queries = DEFAULT_QUERIES;
        }

        Path corpusDir = Corpus.shipped();
        List<TextSegment> corpus = Corpus.read(corpusDir);
        long files = corpus.stream().map(s -> s.metadata().getString(Corpus.FILE)).distinct().count();
        out.printf("corpus: %,d paragraphs of %d files (the project's README.md and docs/*.md, copied at build time; "
                + "code blocks and tables left out)%n", corpus.size(), files);

        long t0 = System.nanoTime();
        try (PythonEmbeddingModel embedder = PythonEmbeddingModel.sentenceTransformers(Path.of(modelDir))
                     .chunk(32)                               // texts of one forward pass
                     .batching(32, Duration.ofMillis(5))      // concurrent calls (the queries below) run together
                     .build();
             PythonScoringModel reranker = PythonScoringModel.crossEncoder(Path.of(rerankerDir)).build()) {
            out.printf("models: %s (dimension %d) and the cross-encoder %s, loaded in %s%n",
                    embedder.modelName(), embedder.dimension(), reranker.model().name(), seconds(System.nanoTime() - t0));
            boolean untrained = untrained(Path.of(rerankerDir));
            if (untrained) {
                out.println("NOTE: the reranker " + reranker.model().name() + " is an UNTRAINED cross-encoder "
                        + "(scripts/minilm --cross-encoder: a random, seeded head): its scores are not meaningful, "
                        + "and the reranked order is shown only to show the API; pass --reranker DIR with a trained "
                        + "one (e.g. cross-encoder/ms-marco-MiniLM-L6-v2) for a meaningful order");
            }

            // The corpus: one embedAll call, which the model runs in length-sorted forward passes.
            long t1 = System.nanoTime();
            List<TextSegment> inContext = corpus.stream().map(Corpus::inContext).toList();
            Response<List<Embedding>> embedded = embedder.embedAll(inContext);
            long embedNanos = System.nanoTime() - t1;
            VectorIndex index = new VectorIndex(embedded.content());
            out.printf("embedded the corpus in %s: %,d paragraphs, %,d tokens, %.0f paragraphs/s (one embedAll call, "
                            + "forward passes of 32)%n", seconds(embedNanos), index.size(),
                    embedded.tokenUsage() == null ? 0 : embedded.tokenUsage().inputTokenCount(),
                    index.size() / (embedNanos / 1e9));

            // The queries: each embedded from a virtual thread of its own, batched into one model call.
            ModelStats before = embedder.model().stats();
            long t2 = System.nanoTime();
            List<Embedding> queryVectors = new ArrayList<>();
            try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<Embedding>> calls = new ArrayList<>();
                for (String q : queries) {
                    calls.add(threads.submit(() -> embedder.embed(q).content()));
                }
                for (Future<Embedding> c : calls) {
                    queryVectors.add(c.get());
                }
            }
            ModelStats after = embedder.model().stats();
            out.printf("embedded %d queries in %s, from %d virtual threads in %d model call(s)%n", queries.size(),
                    millis(System.nanoTime() - t2), queries.size(), after.batches() - before.batches());

            for (int q = 0; q < queries.size(); q++) {
                String query = queries.get(q);
                out.println();
                out.printf("query %d: %s%n", q + 1, query);
                long t3 = System.nanoTime();
                List<VectorIndex.Hit> hits = index.search(queryVectors.get(q), top);
                out.printf("  nearest %d by cosine similarity (%,d rows searched in %s):%n", hits.size(), index.size(),
                        millis(System.nanoTime() - t3));
                List<TextSegment> segments = new ArrayList<>();
                for (int h = 0; h < hits.size(); h++) {
                    TextSegment s = corpus.get(hits.get(h).row());
                    segments.add(inContext.get(hits.get(h).row()));
                    out.printf(Locale.ROOT, "  %2d. %.4f  %s: %s%n", h + 1, hits.get(h).cosine(), where(s),
                            snippet(s.text()));
                }

                long t4 = System.nanoTime();
                List<Double> scores = reranker.scoreAll(segments, query).content();
                long rerankNanos = System.nanoTime() - t4;
                List<Integer> order = new ArrayList<>();
                for (int h = 0; h < hits.size(); h++) {
                    order.add(h);
                }
                order.sort(Comparator.comparingDouble((Integer h) -> scores.get(h)).reversed());
                out.printf("  reranked by %s (%d pairs in one scoreAll call, %s)%s:%n", reranker.model().name(),
                        segments.size(), millis(rerankNanos), untrained ? ", UNTRAINED: not a meaningful order" : "");
                for (int r = 0; r < order.size(); r++) {
                    int h = order.get(r);
                    out.printf(Locale.ROOT, "  %2d. %.4f  (cosine #%d)  %s%n", r + 1, scores.get(h), h + 1,
                            where(segments.get(h)));
                }
            }
        }
    }

    /** Whether a cross-encoder's directory is scripts/minilm's untrained one, as its README says first. */
    private static boolean untrained(Path dir) throws IOException {
        Path readme = dir.resolve("README.md");
        return Files.isRegularFile(readme) && Files.readString(readme, StandardCharsets.UTF_8).contains(UNTRAINED_MARK);
    }

    private static String where(TextSegment s) {
        return s.metadata().getString(Corpus.FILE) + " \u00a7 " + s.metadata().getString(Corpus.HEADING);
    }

    private static String snippet(String text) {
        if (text.length() <= SNIPPET) {
            return text;
        }
        int cut = text.lastIndexOf(' ', SNIPPET);
        return text.substring(0, cut > SNIPPET / 2 ? cut : SNIPPET) + " ...";
    }

    private static String seconds(long nanos) {
        return String.format(Locale.ROOT, "%.2f s", nanos / 1e9);
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            usage(args[i - 1] + " needs a value");
        }
        return args[i];
    }

    private static void usage(String problem) {
        System.err.println("semantic-search: " + problem);
        System.err.println("usage: SemanticSearch [--model DIR] [--reranker DIR] [--top K] [QUERY...]");
        System.exit(2);
    }
}
