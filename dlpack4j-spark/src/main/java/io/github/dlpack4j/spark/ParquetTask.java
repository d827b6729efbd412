package io.github.dlpack4j.spark;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.arrow.ArrowTensors;

import org.apache.arrow.dataset.file.FileFormat;
import org.apache.arrow.dataset.file.FileSystemDatasetFactory;
import org.apache.arrow.dataset.jni.NativeMemoryPool;
import org.apache.arrow.dataset.scanner.ScanOptions;
import org.apache.arrow.dataset.jni.NativeDataset;
import org.apache.arrow.dataset.jni.NativeScanner;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FlatMapFunction;

/**
 * What one task of the Parquet route ({@link BatchInference#transformParquet}) runs: for each input
 * file of its partition, Arrow's C++ reader scans the columns it needs batch by batch, each batch's
 * columns become tensors without a copy ({@link ArrowBatch}), the executor's model runs on them
 * ({@link BatchScorer}), and its outputs, as Arrow vectors over the model's memory, go to Arrow's
 * C++ Parquet writer ({@link ParquetSink}), which writes one file into a directory of this task
 * attempt's own under the job's temporary directory. The driver commits the files of the attempts
 * that Spark took; the others are deleted with the temporary directory.
 */
final class ParquetTask extends TaskPlan implements FlatMapFunction<Iterator<String>, ParquetTask.Written> {
    private static final long serialVersionUID = 1L;
    /**
     * The allocator of this JVM's Parquet tasks, never closed: a batch's input buffers stay
     * allocated until the model's Python objects of them are gone, which the runtime may finish
     * after the task (a producer's deleter called without the GIL is deferred), so no task can close
     * an allocator of its own at its end without failing those releases.
     */
    private static volatile BufferAllocator root;
    /** Loads Arrow's dataset library ({@link ArrowLibrary}) while the first task starts Python. */
    private static Thread arrowLoader;
    /** Nanoseconds the load took; -1 until it is done, -2 once reported. */
    private static long arrowLoadNanos = -1;
    /** When the load was done, in epoch milliseconds; -1 until then. */
    private static volatile long arrowLoaded = -1;

    /** At most this many rows a read ({@link #readRows}), unless one model batch is more. */
    private static final long READ_ROWS = 16_384;
    /** At most this many bytes of the packed columns a read, unless one model batch is more. */
    private static final long READ_BYTES = 32L << 20;

    /** Whether this JVM's interpreter imports {@code pyarrow.parquet}; null until asked ({@link #hasPyarrow()}). */
    private static volatile Boolean pyarrow;

    /** The job's temporary directory. */
    private final String temporary;
    /** {@value ParquetJob#WRITER}'s value: {@code auto}, {@code pyarrow} or {@code arrow}. */
    private final String writer;

    ParquetTask(List<TensorColumn> packed, List<TensorColumn> inputs, List<TensorColumn> passThrough,
                List<TensorColumn> outputs, String key, ExecutorModel model, int batchSize, InferenceMetrics metrics,
                String temporary, String writer) {
        super(packed, inputs, passThrough, outputs, key, model, batchSize, metrics);
        this.temporary = temporary;
        this.writer = writer;
        ArrowColumns.outputSchema(written); // refuses what Arrow cannot hold, on the driver already
    }

    /**
     * The files a task attempt wrote for one input file.
     *
     * @param partition the task's partition: the input file's place in the job's sorted list
     * @param file      the input file
     * @param written   the Parquet file written, or null when the input held no rows
     * @param rows      the rows written
     */
    record Written(int partition, String file, String written, long rows) implements Serializable {
    }

    @Override
    public Iterator<Written> call(Iterator<String> files) {
        TaskContext task = TaskContext.get();
        int partition = task == null ? 0 : task.partitionId();
        long attempt = task == null ? System.nanoTime() : task.taskAttemptId();
        long cpu = processCpuNanos();
        if (metrics != null) {
            metrics.taskStarted();
        }
        ExecutorPython.taskStarted();
        startArrowLoad();
        List<Written> done = new ArrayList<>();
        try (BatchScorer scorer = new BatchScorer(model, inputColumns(), outputs, metrics)) {
            for (int k = 0; files.hasNext(); k++) {
                Path dir = Path.of(temporary, "p" + partition + "-t" + attempt + "-f" + k);
                done.add(score(files.next(), partition, dir, scorer, task));
            }
        }
        if (metrics != null) {
            long load = takeArrowLoad();
            if (load >= 0) {
                metrics.arrowLoad(load);
            }
            metrics.processCpu(processCpuNanos() - cpu);
        }
        return done.iterator();
    }

    /** Scores one input file into a Parquet file in {@code dir}. */
    private Written score(String file, int partition, Path dir, BatchScorer scorer, TaskContext task) {
        String name = Path.of(file).getFileName().toString();
        deleteRecursively(dir);
        Set<String> read = new LinkedHashSet<>();
        packed.forEach(c -> read.add(c.name()));
        if (key != null) {
            read.add(key);
        }
        BufferAllocator allocator = allocator();
        ParquetSink sink = null;
        long rowsInFile = 0;
        String uri = Path.of(file).toUri().toString();
        try (FileSystemDatasetFactory factory = new FileSystemDatasetFactory(allocator, NativeMemoryPool.getDefault(),
                FileFormat.PARQUET, uri)) { // waits for the library, if it is still loading
            Schema schema = factory.inspect();
            ArrowColumns.checkFile(name, schema, packed, key);
            try (NativeDataset dataset = factory.finish();
                 NativeScanner scanner = dataset.newScan(new ScanOptions(readRows(packed, batchSize), Optional.of(read.toArray(String[]::new))));
                 ArrowReader reader = scanner.scanBatches()) {
                while (reader.loadNextBatch()) {
                    if (task != null) {
                        task.killTaskIfInterrupted();
                    }
                    VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                    int rows = batch.getRowCount();
                    if (rows == 0) {
                        continue;
                    }
                    if (sink == null) {
                        Files.createDirectory(dir); // not its parent: a late attempt of an ended job fails here
                        sink = new ParquetSink(writer(), allocator, ArrowColumns.outputSchema(written), dir.toUri().toString(),
                                String.format("part-%05d-{i}.parquet", partition), "dlpack4j parquet writer " + name);
                    }
                    sink.put(scoreRead(batch, reader, name, rowsInFile, scorer, allocator, task), rows);
                    rowsInFile += rows;
                }
                if (sink != null) {
                    sink.finish();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            abandon(sink, dir);
            if (task != null) {
                task.killTaskIfInterrupted();
            }
            throw new IllegalStateException("interrupted while scoring " + file, e);
        } catch (IOException e) {
            abandon(sink, dir);
            throw new UncheckedIOException("file " + name + ": " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            abandon(sink, dir);
            throw e;
        }
        return new Written(partition, file, sink == null ? null : onlyFile(dir), rowsInFile);
    }

    /**
     * Scores one batch of the reader: its columns become tensors without a copy, checked at once
     * ({@link ArrowBatch}); the model runs on views of {@link #batchSize} rows of them in turn; each
     * output's rows are copied into one compact tensor of the read batch's rows, which the writer's
     * vector then holds. A read with a refused row fails as the row route does: the model runs on
     * the model batches before that row's first (the row route scores them before it packs that
     * row's batch), so that its failure on one of them is the job's.
     *
     * @return the vectors of the written columns, in order; the caller hands them to the writer
     * @throws IllegalArgumentException for the read's first refused row, in the row route's words
     */
    private List<FieldVector> scoreRead(VectorSchemaRoot batch, ArrowReader reader, String name, long firstRow,
                                        BatchScorer scorer, BufferAllocator allocator, TaskContext task) {
        int rows = batch.getRowCount();
        long start = System.nanoTime();
        ArrowBatch.Checked checked = ArrowBatch.check(batch, reader, packed, key, name, firstRow);
        int scored = checked.refusal() == null ? rows : checked.rows() - checked.rows() % batchSize;
        if (scored == 0) {
            throw checked.refusal();
        }
        List<Tensor> tensors = ArrowBatch.tensors(batch, packed, scored);
        long pack = System.nanoTime() - start;
        List<Tensor> scores = new ArrayList<>();
        List<FieldVector> vectors = new ArrayList<>();
        try {
            for (TensorColumn c : outputs) { // every row is written below: a pooled block, not zeroed memory
                scores.add(NativeBlocks.tensor(NativeBlocks.acquire((long) scored * c.valuesPerRow() * c.dtype().byteSize()),
                        c.dtype(), c.shape(scored)));
            }
            int calls = (scored + batchSize - 1) / batchSize;
            long[] nanos = new long[2];
            long[][] timed = new long[calls][]; // rows, model and exchange nanoseconds of each call
            long unpack = 0;
            for (int from = 0; from < scored; from += batchSize) {
                if (task != null && from > 0) {
                    task.killTaskIfInterrupted();
                }
                int n = Math.min(batchSize, scored - from);
                List<Tensor> in = new ArrayList<>();
                try {
                    for (int i : inputs) {
                        in.add(tensors.get(i).slice(0, from, from + n, 1));
                    }
                    List<Tensor> results = scorer.score(in, n, nanos);
                    long copyStart = System.nanoTime();
                    try {
                        for (int j = 0; j < results.size(); j++) {
                            copyRows(results.get(j), scores.get(j), from);
                        }
                    } finally {
                        results.forEach(Tensor::close);
                    }
                    unpack += System.nanoTime() - copyStart;
                } finally {
                    in.forEach(Tensor::close);
                }
                timed[from / batchSize] = new long[] {n, nanos[0], nanos[1]};
            }
            if (checked.refusal() != null) {
                throw checked.refusal();
            }
            start = System.nanoTime();
            for (int i = 0; i < passThrough.length; i++) {
                vectors.add(ownedVector(tensors.get(passThrough[i]), allocator, written.get(i).name()));
            }
            for (int j = 0; j < scores.size(); j++) {
                vectors.add(ArrowTensors.toVector(scores.get(j), allocator, outputs.get(j).name()));
            }
            unpack += System.nanoTime() - start;
            if (metrics != null) { // the read's packing and unpacking shared among its model calls
                for (long[] t : timed) {
                    metrics.batch((int) t[0], t[1], t[2], pack / calls, unpack / calls);
                }
            }
            return vectors;
        } catch (RuntimeException | Error e) {
            vectors.forEach(FieldVector::close);
            throw e;
        } finally {
            scores.forEach(Tensor::close); // the vectors hold the memory
            tensors.forEach(Tensor::close);
        }
    }

    /**
     * {@return the rows of each read: as many whole model batches of {@code batchSize} rows as make at
     * most 16,384 rows or 32 MiB of the {@code packed} columns, at least one} The reader's, the
     * writer's and dlpack4j's own costs of a batch (Arrow Java's import and export, the checks, the
     * writer's call) are paid once a read, not once a model call.
     */
    static int readRows(List<TensorColumn> packed, int batchSize) {
        long rowBytes = 0;
        for (TensorColumn c : packed) {
            rowBytes += (long) c.valuesPerRow() * c.dtype().byteSize();
        }
        long batches = Math.min(READ_ROWS / batchSize, READ_BYTES / Math.max(1, rowBytes * batchSize));
        return (int) Math.min(Integer.MAX_VALUE, batchSize * Math.max(1, batches));
    }

    /** Copies {@code from}, a model's output for a model batch, into rows {@code row}... of the compact {@code to}. */
    static void copyRows(Tensor from, Tensor to, long row) {
        try (Tensor compact = from.isContiguous() ? from.share() : from.copy()) {
            long rowBytes = to.numel() == 0 ? 0 : to.dtype().byteSize() * (to.numel() / to.shape()[0]);
            to.withData(target -> compact.withData(source -> {
                MemorySegment.copy(source, 0, target, row * rowBytes, source.byteSize());
                return null;
            }));
        }
    }

    /**
     * A vector over a copy of a pass-through column, compact and in memory the task owns: pyarrow
     * keeps a row group's batches until the group is full, and a view would keep the whole read
     * batch (the model's input included) allocated that long. The model's outputs are copied the same
     * way, into one tensor a read ({@link #copyRows}): the writer reads them after the model has run
     * on the next batches, and a model may write each batch into the same memory (a buffer it keeps,
     * {@code out=}). The copies (64 + 8 bytes a row for the example's mlp and its key, where the
     * inputs are viewed without one) also take strided views ({@code x.t()}, {@code x[:, ::2]}) and
     * read-only arrays, which the row route writes as they are, and let the model's memory go at once.
     */
    static FieldVector ownedVector(Tensor t, BufferAllocator allocator, String name) {
        try (Tensor copy = t.copy()) {
            return ArrowTensors.toVector(copy, allocator, name); // the vector holds the copy's memory
        }
    }

    /**
     * {@return the writer of this task's files: {@code pyarrow} and {@code arrow} as set, and for
     * {@code auto} pyarrow when this executor's interpreter has it (asked once per JVM), else Arrow Java's}
     */
    private ParquetSink.Writer writer() {
        return switch (writer) {
            case "pyarrow" -> ParquetSink.Writer.PYARROW;
            case "arrow" -> ParquetSink.Writer.ARROW;
            default -> hasPyarrow() ? ParquetSink.Writer.PYARROW : ParquetSink.Writer.ARROW;
        };
    }

    /**
     * {@return whether this JVM's interpreter imports {@code pyarrow.parquet}}, asked once per JVM
     * (the import stays in {@code sys.modules}): by the warm-up as the executor starts, or by the
     * first task of the {@code auto} writer
     */
    static boolean hasPyarrow() {
        Boolean has = pyarrow;
        if (has == null) {
            has = PythonHelpers.of(ExecutorPython.get()).hasPyarrow();
            pyarrow = has;
        }
        return has;
    }

    /** Starts loading Arrow's dataset library on a thread of its own, once per JVM. */
    static synchronized void startArrowLoad() {
        if (arrowLoader == null) {
            arrowLoader = Thread.ofPlatform().name("dlpack4j arrow library").daemon().start(() -> {
                long start = System.nanoTime();
                try {
                    ArrowLibrary.load();
                } catch (RuntimeException | Error e) {
                    // the first dataset factory loads it again, and throws what stops it
                }
                synchronized (ParquetTask.class) {
                    arrowLoadNanos = System.nanoTime() - start;
                }
                arrowLoaded = System.currentTimeMillis();
            });
        }
    }

    /** {@return when Arrow's dataset library had loaded in this JVM, in epoch milliseconds; -1 until then} */
    static long arrowLoaded() {
        return arrowLoaded;
    }

    /** {@return the nanoseconds the library took to load, the first time they are asked for once it is loaded; else -1} */
    private static synchronized long takeArrowLoad() {
        long n = arrowLoadNanos;
        if (n < 0) {
            return -1;
        }
        arrowLoadNanos = -2;
        return n;
    }

    /** Stops the writer and deletes the attempt's directory; a failure to delete is left to the driver's sweep. */
    private static void abandon(ParquetSink sink, Path dir) {
        if (sink != null) {
            sink.abandon();
        }
        try {
            deleteRecursively(dir);
        } catch (UncheckedIOException e) {
            // the task's own failure is the one to report; the driver deletes _temporary
        }
    }

    private static String onlyFile(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            List<Path> all = files.toList();
            if (all.size() != 1) {
                throw new IllegalStateException("Arrow's writer left " + all.size() + " files in " + dir + ", not one");
            }
            return all.getFirst().toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + dir, e);
        }
    }

    /** {@return the bytes this JVM's Parquet tasks hold now: 0 once every task and its model's objects let go} */
    static long allocatedBytes() {
        BufferAllocator a = root;
        return a == null ? 0 : a.getAllocatedMemory();
    }

    static BufferAllocator allocator() {
        BufferAllocator a = root;
        if (a == null) {
            synchronized (ParquetTask.class) {
                if (root == null) {
                    root = new RootAllocator();
                }
                a = root;
            }
        }
        return a;
    }

    static long processCpuNanos() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getProcessCpuTime() : 0;
    }
}
