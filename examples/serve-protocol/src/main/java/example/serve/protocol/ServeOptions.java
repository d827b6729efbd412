package example.serve.protocol;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The service's settings, from {@code scripts/serve}'s options (the same for the Helidon and the Spring service).
 *
 * @param models            the models served ({@code --model mlp|resnet18|minilm|tiny-lm}; a comma-separated
 *                          list of mlp and resnet18 serves both; minilm and tiny-lm are served alone)
 * @param weights           mlp's or resnet18's {@code state_dict} file ({@code --weights}), or null for the
 *                          seeded weights; for minilm the sentence-transformers directory, for tiny-lm the
 *                          causal LM's directory (required)
 * @param port              the port on 127.0.0.1 ({@code --port}, 8080; 0 picks a free one)
 * @param batching          dynamic batching ({@code --batching}, {@code --no-batching}; off by default for mlp
 *                          and resnet18, on for minilm: see {@link #parse})
 * @param batchWindowMicros how long a batch waits for more requests ({@code --batch-window-us}, 2000)
 * @param maxBatchRows      the most rows in one batch ({@code --max-batch}; 0: 64 for mlp and minilm, 8 for resnet18)
 * @param runnerThreadsOption the model's threads ({@code PythonModel.Builder.workers}), each running one
 *                          model call at a time ({@code --runner-threads}; 0: see {@link #runnerThreads(String)})
 * @param torchThreadsOption torch's intra-op threads ({@code --torch-threads}; 0: 1)
 * @param maxBodyBytes      the largest request body accepted ({@code --max-body-mb}, 64 MiB)
 * @param maxQueue          how many requests of one model may wait for it; past it the service answers 503
 *                          (v2) or 429 ({@code /v1/embeddings}, {@code /v1/chat/completions}) ({@code --max-queue},
 *                          1,000; for tiny-lm the streams open at once are this plus its threads)
 * @param timeoutMillis     each model call's deadline from its admission, queue wait included; past it the
 *                          service answers 504 ({@code --timeout-ms}; 0, the default: none); for tiny-lm the
 *                          deadline of a reply's first token
 * @param chunk             minilm's texts per forward pass ({@code --chunk}, 8): a model call runs its texts
 *                          sorted by length in chunks of this many, each padded to its longest text
 */
public record ServeOptions(List<String> models, Path weights, int port, boolean batching, long batchWindowMicros,
                           int maxBatchRows, int runnerThreadsOption, int torchThreadsOption, long maxBodyBytes,
                           int maxQueue, long timeoutMillis, int chunk) {
    /**
     * all-MiniLM-L6-v2, a sentence-transformers embedding model, answered at {@code POST /v1/embeddings}
     * (its directory from {@code --weights}; {@code scripts/serve} passes {@code scripts/minilm}'s).
     */
    public static final String MINILM = "minilm";

    /**
     * The project's small causal LM ({@code scripts/tiny-lm}), answered at {@code POST /v1/chat/completions}
     * (its directory from {@code --weights}; {@code scripts/serve} passes {@code scripts/tiny-lm}'s).
     */
    public static final String TINY_LM = "tiny-lm";

    /** The models a service can serve. */
    public static final Set<String> MODELS = Set.of("mlp", "resnet18", MINILM, TINY_LM);

    /** The models that take text, each served alone from a directory. */
    private static final Set<String> TEXT_MODELS = Set.of(MINILM, TINY_LM);

    /** The options, as a usage message prints them. */
    public static final String USAGE = """
            usage: serve --model mlp|resnet18|minilm|tiny-lm [--weights FILE|DIR] [--port 8080] [--batching|--no-batching]
                         [--batch-window-us 2000] [--max-batch N] [--runner-threads N] [--torch-threads 1]
                         [--max-body-mb 64] [--max-queue 1000] [--timeout-ms 0] [--chunk 8]""";

    /** A bad command line: the message says what, and {@link #USAGE} the rest. */
    public static final class UsageException extends IllegalArgumentException {
        UsageException(String message) {
            super(message);
        }
    }

    /**
     * Reads the command line. Batching is off unless {@code --batching} for mlp and resnet18, and on
     * unless {@code --no-batching} for minilm and tiny-lm: one text a request is the embedding
     * endpoint's usual load, and a forward pass of many texts costs little more Python than one of a
     * single text, so the texts of requests in flight at once run as one call; tiny-lm's streams
     * that wait for their next token at once share one decode step in the same way (up to
     * {@code --max-batch} streams, a step waiting up to {@code --batch-window-us} for the other open
     * streams). Its chunks are 8 texts rather than
     * sentence-transformers' 32: a call's texts are the few requests that came together, of any
     * length, and each chunk is padded to its longest; {@code encode}'s 32 suits a corpus sorted by
     * length as a whole.
     *
     * @param args the options above
     * @return the settings
     * @throws UsageException naming the option that is wrong or missing
     */
    public static ServeOptions parse(String... args) {
        List<String> models = null;
        Path weights = null;
        int port = 8080;
        Boolean batching = null;
        long window = 2000;
        int maxBatch = 0;
        int runnerThreads = 0;
        int torchThreads = 0;
        long maxBodyMb = 64;
        int maxQueue = ServedModels.MAX_QUEUE;
        long timeoutMillis = 0;
        int chunk = 8;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--batching" -> batching = true;
                case "--no-batching" -> batching = false;
                case "--model" -> {
                    models = new ArrayList<>();
                    for (String m : value(args, ++i, a).split(",")) {
                        if (!MODELS.contains(m)) {
                            throw new UsageException("unknown model '" + m + "': choose mlp, resnet18, minilm or tiny-lm");
                        }
                        models.add(m);
                    }
                }
                case "--weights" -> {
                    weights = Path.of(value(args, ++i, a));
                    if (!Files.exists(weights)) {
                        throw new UsageException("--weights " + weights + ": no such file or directory");
                    }
                }
                case "--port" -> port = (int) number(args, ++i, a, 0, 65535);
                case "--batch-window-us" -> window = number(args, ++i, a, 0, 1_000_000);
                case "--max-batch" -> maxBatch = (int) number(args, ++i, a, 1, 4096);
                case "--runner-threads" -> runnerThreads = (int) number(args, ++i, a, 1, 64);
                case "--torch-threads" -> torchThreads = (int) number(args, ++i, a, 1, 256);
                case "--max-body-mb" -> maxBodyMb = number(args, ++i, a, 1, 1024);
                case "--max-queue" -> maxQueue = (int) number(args, ++i, a, 1, 1_000_000);
                case "--timeout-ms" -> timeoutMillis = number(args, ++i, a, 0, 3_600_000);
                case "--chunk" -> chunk = (int) number(args, ++i, a, 1, 4096);
                default -> throw new UsageException("unknown option '" + a + "'");
            }
        }
        if (models == null) {
            throw new UsageException("--model is required");
        }
        String text = models.stream().filter(TEXT_MODELS::contains).findFirst().orElse(null);
        if (text != null && models.size() > 1) {
            throw new UsageException("--model " + String.join(",", models) + ": " + text + " is served alone");
        }
        if (text != null && (weights == null || !Files.isDirectory(weights))) {
            String kind = text.equals(MINILM) ? "a sentence-transformers model directory" : "a causal LM directory";
            String script = text.equals(MINILM) ? "scripts/minilm" : "scripts/tiny-lm";
            throw new UsageException("--model " + text + " needs --weights DIR, " + kind + " (scripts/serve gives "
                    + script + "'s)" + (weights == null ? "" : "; " + weights + " is not one"));
        }
        if (text == null && weights != null && !Files.isRegularFile(weights)) {
            throw new UsageException("--weights " + weights + ": not a file (mlp and resnet18 take a state_dict file)");
        }
        return new ServeOptions(List.copyOf(models), weights, port, batching != null ? batching : text != null, window,
                maxBatch, runnerThreads, torchThreads, maxBodyMb << 20, maxQueue, timeoutMillis, chunk);
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new UsageException(option + " needs a value");
        }
        return args[i];
    }

    private static long number(String[] args, int i, String option, long min, long max) {
        String v = value(args, i, option);
        try {
            long n = Long.parseLong(v);
            if (n < min || n > max) {
                throw new UsageException(option + " " + v + ": must be " + min + ".." + max);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new UsageException(option + " " + v + ": not a number");
        }
    }

    /** {@return the most rows in one batch, and in the batch buffer each model thread keeps, for {@code model}} */
    public int maxBatch(String model) {
        return maxBatchRows > 0 ? maxBatchRows : model.equals("resnet18") ? 8 : 64;
    }

    /**
     * {@return the platform threads that run {@code model}'s calls: the option; else as many as the
     * cores, but 1 for mlp (its calls are Python-bound: a second thread would only wait for the GIL,
     * and with batching split the batches; unbatched at 64 connections one thread answered 1.34x two
     * threads' requests/s on 2 cores), and the most streams of a decode step for tiny-lm with
     * batching}
     */
    public int runnerThreads(String model) {
        if (runnerThreadsOption > 0) {
            return runnerThreadsOption;
        }
        if (batching && model.equals(TINY_LM)) {
            return maxBatch(model);   // each stream waiting for a shared decode step holds a thread
        }
        return model.equals("mlp") ? 1 : Math.max(1, Runtime.getRuntime().availableProcessors());
    }

    /**
     * {@return the carrier threads of the JVM's virtual-thread scheduler ({@code
     * jdk.virtualThreadScheduler.parallelism}) that the Helidon service sets where the JVM's options
     * leave it unset, or 0 to keep the JVM's default of one a core}: without batching, a tensor
     * model's runner threads keep a core each busy under load, and carriers beside them only take
     * turns with them on those cores: the cores less the runner threads, at least 1. With batching,
     * or a text model (its requests' and tokens' own handling is most of the service's work), every
     * core carries virtual threads. {@code scripts/loadtest} measures both settings with {@code
     * SERVE_JAVA_OPTS} (docs/serving.md).
     */
    public int virtualThreadCarriers() {
        if (batching || models.stream().anyMatch(TEXT_MODELS::contains)) {
            return 0;
        }
        int runners = models.stream().mapToInt(this::runnerThreads).sum();
        return Math.max(1, Runtime.getRuntime().availableProcessors() - runners);
    }

    /** {@return torch's intra-op threads: the option, else 1 (the runner threads run model calls side by side)} */
    public int torchThreads() {
        return torchThreadsOption > 0 ? torchThreadsOption : 1;
    }

    /**
     * {@return one line of the settings, as the ready line and scripts/loadtest print them}: minilm's
     * chunk, queue and deadline too, and tiny-lm's queue and first-token deadline
     */
    public String describe() {
        String line = describe(torchThreads(), models.stream().map(this::runnerThreads).toList(), batching,
                batchWindowMicros, models.stream().map(this::maxBatch).toList(), weights == null ? null : weights.toString());
        String limits = "queue " + maxQueue + ", " + (timeoutMillis > 0 ? "deadline " + timeoutMillis + " ms" : "no deadline");
        if (models.contains(MINILM)) {
            return line + ", chunks of " + chunk + " texts, " + limits;
        }
        if (models.contains(TINY_LM)) {
            return line + ", " + limits.replace("deadline", "first-token deadline");
        }
        return line;
    }

    /**
     * {@return one line of a service's settings, in the words of the ready line}
     *
     * @param torchThreads      torch's intra-op threads
     * @param runnerThreads     each model's threads, in the order the models are served
     * @param batching          whether the models batch
     * @param batchWindowMicros how long a batch waits for more requests
     * @param maxBatch          each model's most rows in one batch
     * @param weights           the {@code state_dict} file, or null for the seeded weights
     */
    public static String describe(int torchThreads, List<Integer> runnerThreads, boolean batching,
                                  long batchWindowMicros, List<Integer> maxBatch, String weights) {
        return "torch threads " + torchThreads + ", "
                + "runner threads " + String.join("/", runnerThreads.stream().map(String::valueOf).toList()) + ", "
                + (batching ? "batching (window " + batchWindowMicros + " us, max batch "
                        + String.join("/", maxBatch.stream().map(String::valueOf).toList()) + ")"
                        : "no batching")
                + (weights == null ? ", seeded weights" : ", weights " + weights);
    }

    /**
     * {@link #parse(String...)} for a {@code main}: bad options print the reason and the usage on
     * standard error and exit with status 2.
     *
     * @param args the command line
     * @return the options
     */
    public static ServeOptions parseOrExit(String... args) {
        try {
            return parse(args);
        } catch (UsageException e) {
            System.err.println("serve: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            throw e; // not reached
        }
    }
}
