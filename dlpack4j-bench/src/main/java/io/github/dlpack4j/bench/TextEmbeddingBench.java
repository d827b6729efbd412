package io.github.dlpack4j.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import dev.langchain4j.data.embedding.Embedding;
import dev.langchain4j.data.segment.TextSegment;
import dev.langchain4j.model.embedding.EmbeddingModel;
import dev.langchain4j.model.embedding.onnx.allminilml6v2.AllMiniLmL6V2EmbeddingModel;
import io.github.dlpack4j.langchain4j.PythonEmbeddingModel;
import io.github.dlpack4j.model.ModelStats;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * all-MiniLM-L6-v2's real weights ({@code scripts/minilm}; its directory in {@code DLPACK4J_MINILM})
 * in one JVM three ways: dlpack4j-langchain4j's {@link PythonEmbeddingModel} (sentence-transformers
 * in the embedded interpreter), LangChain4j's own {@link AllMiniLmL6V2EmbeddingModel} (ONNX Runtime
 * Java, its default executor), and sentence-transformers' {@code encode} called by Python in the same
 * process. JMH times {@code embedAll} of 32 texts; after it, each fork prints ({@code [in-fork]}
 * lines, every round):
 * <ul>
 *   <li>{@code textValues}: the lowest cosine between our embedding and each of the other two, over
 *       the same 1,000 texts (target at least 0.9999 for every text);</li>
 *   <li>{@code textEmbedAll}: three rounds, in turns, of {@code embedAll} of the 1,000 texts (5 to 60
 *       words each) on each side: our embeddings/s over LangChain4j's (target at least 1.0x), and
 *       our time over {@code encode}'s (target at most 1.1x);</li>
 *   <li>{@code textThroughput}: three rounds of 4 s, in turns: 64 virtual threads each embedding one
 *       text at a time with {@code batching(64, 2 ms)}, against LangChain4j's {@code embed} from 64
 *       platform threads: embeddings/s (target at least 1.5x).</li>
 * </ul>
 * {@code -p chunk=8} (texts per forward pass), {@code -p workers=2} (our calls at once) and
 * {@code -p torchThreads=1} (torch's threads in the process, {@code encode}'s too) vary our side.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class TextEmbeddingBench {
    private static final String WORDS = """
            the of and to in is that for it as was with be by on not he this are or his from at which but
            have an they you were her she there been one all we their has would when if so no will can
            more other what time up out some about into than them only could new these may first like
            tensor memory model python java thread batch queue search vector language sentence token
            market river mountain coffee city morning evening music library window garden question answer
            system network data share copy device kernel stream server client request response error
            simple quick slow large small early late open close read write start stop light dark
            """;
    private static final int TEXTS = 1_000;

    private Python py;
    private PythonEmbeddingModel ours;
    private EmbeddingModel theirs;
    private List<TextSegment> texts;
    private List<TextSegment> first32;
    private PyObject encode;

    /** {@return 1,000 texts of 5 to 60 words, the same in every fork} */
    static List<String> texts(int count, long seed) {
        String[] words = WORDS.trim().split("\\s+");
        Random r = new Random(seed);
        List<String> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int n = 5 + r.nextInt(56);
            StringBuilder s = new StringBuilder();
            for (int w = 0; w < n; w++) {
                String word = words[r.nextInt(words.length)];
                s.append(w == 0 ? Character.toUpperCase(word.charAt(0)) + word.substring(1) : " " + word);
            }
            out.add(s.append('.').toString());
        }
        return out;
    }

    /** Texts per forward pass of our model ({@code -p chunk=8}; sentence-transformers' 32 by default). */
    @Param({"32"})
    public int chunk;

    /** Our model's calls at once ({@code -p workers=2}). */
    @Param({"1"})
    public int workers;

    /** torch's intra-op threads for our model and {@code encode} alike ({@code -p torchThreads=1}; 0: one a core). */
    @Param({"0"})
    public int torchThreads;

    @Setup(Level.Trial)
    public void setUp() {
        String dir = System.getenv("DLPACK4J_MINILM");
        if (dir == null || !Files.isDirectory(Path.of(dir))) {
            throw new IllegalStateException("DLPACK4J_MINILM names no directory (" + dir + "): scripts/bench sets it from scripts/minilm");
        }
        py = Python.start();
        if (torchThreads > 0) {
            py.exec("import torch\ntorch.set_num_threads(" + torchThreads + ")");
        }
        ours = PythonEmbeddingModel.sentenceTransformers(Path.of(dir)).python(py).batching(64, Duration.ofMillis(2))
                .chunk(chunk).workers(workers).maxQueue(10_000).build();
        theirs = new AllMiniLmL6V2EmbeddingModel();
        texts = texts(TEXTS, 44).stream().map(TextSegment::from).toList();
        first32 = texts.subList(0, 32);
        py.setGlobal("minilm_dir", dir);
        py.setGlobal("texts", texts.stream().map(TextSegment::text).toList());
        py.exec("""
                import time
                import dlpack4j_text
                dlpack4j_text._torchvision_usable()
                from sentence_transformers import SentenceTransformer
                direct = dlpack4j_text._quietly(lambda: SentenceTransformer(minilm_dir, device="cpu"))

                def timed_encode():
                    # sentence-transformers' own encode as a Python program calls it: seconds, and the embeddings
                    start = time.perf_counter()
                    e = direct.encode(texts)
                    return time.perf_counter() - start, e
                """);
        encode = py.getGlobal("timed_encode");
    }

    /** {@code embedAll} of 32 texts, one call of the model. */
    @Benchmark
    public int embedAll32() {
        return ours.embedAll(first32).content().size();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        printValues();
        printEmbedAll();
        printThroughput();
        encode.close();
        ours.close();
    }

    private double encodeSeconds() {
        try (PyObject r = encode.call(); PyObject s = r.get(0)) {
            return s.asDouble();
        }
    }

    private void printValues() {
        List<Embedding> a = ours.embedAll(texts).content();
        List<Embedding> b = theirs.embedAll(texts).content();
        double minTheirs = 1;
        double minEncode = 1;
        try (PyObject r = encode.call(); PyObject e = r.get(1); PyObject list = e.callMethod("tolist")) {
            List<?> rows = (List<?>) list.toJava();
            for (int i = 0; i < a.size(); i++) {
                minTheirs = Math.min(minTheirs, cosine(a.get(i).vector(), b.get(i).vector()));
                List<?> row = (List<?>) rows.get(i);
                float[] v = new float[row.size()];
                for (int j = 0; j < v.length; j++) {
                    v[j] = ((Number) row.get(j)).floatValue();
                }
                minEncode = Math.min(minEncode, cosine(a.get(i).vector(), v));
            }
        }
        System.out.printf("%n[in-fork] textValues: over %,d texts the lowest cosine of ours with LangChain4j's %.6f, "
                + "with sentence-transformers' encode %.6f (target >= 0.9999 each)%n", a.size(), minTheirs, minEncode);
    }

    private void printEmbedAll() {
        double[] mine = new double[3];
        double[] lc4j = new double[3];
        double[] st = new double[3];
        for (int round = 0; round < 3; round++) {
            long t0 = System.nanoTime();
            ours.embedAll(texts);
            mine[round] = (System.nanoTime() - t0) / 1e9;
            t0 = System.nanoTime();
            theirs.embedAll(texts);
            lc4j[round] = (System.nanoTime() - t0) / 1e9;
            st[round] = encodeSeconds();
            System.out.printf("%n[in-fork] textEmbedAll round %d: %,d texts: ours %.2f s, LangChain4j %.2f s, encode %.2f s;"
                    + " our embeddings/s over LangChain4j's (%.2fx), our time over encode's (%.2fx)", round + 1, TEXTS,
                    mine[round], lc4j[round], st[round], lc4j[round] / mine[round], mine[round] / st[round]);
        }
        System.out.printf("%n[in-fork] textEmbedAll best of 3: ours %.0f, LangChain4j %.0f, encode %.0f embeddings/s%n",
                TEXTS / Arrays.stream(mine).min().orElseThrow(), TEXTS / Arrays.stream(lc4j).min().orElseThrow(),
                TEXTS / Arrays.stream(st).min().orElseThrow());
    }

    private void printThroughput() throws InterruptedException {
        List<String> plain = texts.stream().map(TextSegment::text).toList();
        for (int round = 0; round < 3; round++) {
            ModelStats before = ours.model().stats();
            double mine = rate(Thread.ofVirtual().factory(), plain, t -> ours.embed(t));
            ModelStats after = ours.model().stats();
            double lc4j = rate(Thread.ofPlatform().factory(), plain, t -> theirs.embed(t));
            System.out.printf("%n[in-fork] textThroughput round %d: 64 virtual threads, batching(64, 2 ms), chunk " + chunk + ", workers "
                    + workers + ", torch threads " + (torchThreads > 0 ? torchThreads : "default") + ": %.0f embeddings/s"
                    + " (%.1f texts a model call); LangChain4j's embed from 64 platform threads %.0f/s (%.2fx)", round + 1,
                    mine, (after.answered() - before.answered()) / (double) Math.max(1, after.batches() - before.batches()),
                    lc4j, mine / lc4j);
        }
        System.out.println();
    }

    /** {@return embeddings/s of 64 threads each embedding one text after another for 4 s, after 1 s of warm-up} */
    private static double rate(java.util.concurrent.ThreadFactory threads, List<String> texts, Consumer<String> embed)
            throws InterruptedException {
        AtomicLong done = new AtomicLong();
        long start = System.nanoTime();
        long warm = start + 1_000_000_000L;
        long end = warm + 4_000_000_000L;
        CountDownLatch finished = new CountDownLatch(64);
        for (int c = 0; c < 64; c++) {
            int caller = c;
            threads.newThread(() -> {
                try {
                    for (int i = caller; System.nanoTime() < end; i += 64) {
                        embed.accept(texts.get(i % texts.size()));
                        long now = System.nanoTime();
                        if (now > warm && now < end) {
                            done.incrementAndGet();
                        }
                    }
                } finally {
                    finished.countDown();
                }
            }).start();
        }
        finished.await();
        return done.get() / 4.0;
    }

    private static double cosine(float[] a, float[] b) {
        double dot = 0;
        double na = 0;
        double nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += (double) a[i] * b[i];
            na += (double) a[i] * a[i];
            nb += (double) b[i] * b[i];
        }
        return dot / Math.sqrt(na * nb);
    }
}
