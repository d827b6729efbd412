package io.github.dlpack4j.spark;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.dataset.file.DatasetFileWriter;
import org.apache.arrow.dataset.file.FileFormat;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Arrow's C++ Parquet writer fed by a task thread, one record batch at a time, on a thread of its
 * own that takes the batches {@link #put} queues, a few at most, so that the model runs on the task's
 * thread while the previous batch is encoded and written. Two writers, of the same C++ library:
 * <ul>
 *   <li>{@link Writer#PYARROW}: pyarrow in the executor's own interpreter, the batches handed over
 *       through Arrow's C data interface without a copy; plain pages (no dictionary), row groups of
 *       {@value #GROUP_ROWS} rows (the last one fewer);</li>
 *   <li>{@link Writer#ARROW}: Arrow Java's {@code DatasetFileWriter}, which pulls the batches as a
 *       reader; it has no write options, so its pages are dictionary-encoded (for a model's float
 *       outputs, several times the plain encoding's CPU and a third more bytes) and each batch is a
 *       row group of its own.</li>
 * </ul>
 * Both write the same rows and the same Parquet schema.
 *
 * <p>A batch's vectors pass to the writer with {@link #put}: their buffers stay allocated until
 * Arrow's C++ has written them and let go. {@link #finish} ends the file and waits for it;
 * {@link #abandon} ends the file at the batches the writer has taken (the task deletes it) and waits
 * for its thread to be done with every buffer.
 */
final class ParquetSink {
    /** Batches queued at most: the model may run ahead of the writer by this many. */
    private static final int QUEUED = 2;
    /** pyarrow's row groups: their rows, the last one's at most (pyarrow's own default). */
    static final long GROUP_ROWS = 1L << 20;

    /** Which of Arrow's writers writes the file. */
    enum Writer {
        /** pyarrow in the executor's interpreter: plain pages. */
        PYARROW,
        /** Arrow Java's {@code DatasetFileWriter}: dictionary pages. */
        ARROW
    }
    private static final Batch END = new Batch(List.of(), 0);
    /**
     * The writers' threads, kept for the JVM's life and reused file after file: a thread that calls
     * Python keeps a CPython thread state for its whole life, which CPython never frees when the
     * thread ends (one thread per file left one state behind per file). As many threads as files
     * are written at once (the executor's task slots), no more.
     */
    private static final ExecutorService WRITERS = new ThreadPoolExecutor(0, Integer.MAX_VALUE, Long.MAX_VALUE,
            TimeUnit.NANOSECONDS, new SynchronousQueue<>(),
            r -> Thread.ofPlatform().name("dlpack4j parquet writer").daemon().unstarted(r));

    private final BlockingQueue<Batch> queue = new ArrayBlockingQueue<>(QUEUED);
    /** Counted down when the writer is done with every buffer and its {@link #failure} is set. */
    private final CountDownLatch ended = new CountDownLatch(1);
    private final Feed feed;
    private volatile boolean abandoned;
    private volatile Throwable failure;

    /**
     * Starts the writer of one Parquet file in {@code directory}.
     *
     * @param writer    which writer
     * @param allocator accounts for the writer's buffers
     * @param schema    the batches' schema
     * @param directory the directory, which must be empty or absent (a {@code file:} URI)
     * @param fileName  the file's name; {@code {i}} in it becomes 0
     * @param thread    the writer thread's name while it writes this file
     */
    ParquetSink(Writer writer, BufferAllocator allocator, Schema schema, String directory, String fileName,
                String thread) {
        this.feed = new Feed(allocator, schema);
        WRITERS.execute(() -> {
            Thread current = Thread.currentThread();
            current.setName(thread);
            try {
                if (writer == Writer.PYARROW) {
                    Path dir = Files.createDirectories(Path.of(URI.create(directory))); // as Arrow Java's writer does
                    writeWithPyarrow(allocator, schema, dir.resolve(fileName.replace("{i}", "0")).toString());
                } else {
                    DatasetFileWriter.write(allocator, feed, FileFormat.PARQUET, directory, new String[0], 1, fileName);
                }
            } catch (Throwable e) {
                failure = e;
            } finally {
                try {
                    feed.close();
                } catch (Exception e) {
                    if (failure == null) {
                        failure = e;
                    }
                }
                current.setName("dlpack4j parquet writer");
                Thread.interrupted(); // not for the next file's writer
                ended.countDown();
            }
        });
    }

    /**
     * The pyarrow writer's loop, on the writer's thread: each batch exported through Arrow's C data
     * interface (pyarrow takes the structs: the vectors' buffers are released when pyarrow lets go of
     * them), the file closed at the end, or abandoned.
     */
    private void writeWithPyarrow(BufferAllocator allocator, Schema schema, String file) throws InterruptedException {
        Python python = ExecutorPython.get();
        PythonHelpers helpers = PythonHelpers.of(python);
        PyObject out;
        try (ArrowSchema exported = ArrowSchema.allocateNew(allocator)) {
            try {
                Data.exportSchema(allocator, schema, null, exported);
                out = helpers.parquetOut(file, exported.memoryAddress(), GROUP_ROWS);
            } finally {
                exported.release(); // nothing left to release once pyarrow took it
            }
        }
        boolean closed = false;
        try {
            Batch b;
            while ((b = take()) != null) {
                try (Batch taken = b; ArrowArray array = ArrowArray.allocateNew(allocator);
                     ArrowSchema types = ArrowSchema.allocateNew(allocator)) {
                    try {
                        Data.exportVectorSchemaRoot(allocator,
                                new VectorSchemaRoot(schema.getFields(), taken.vectors(), taken.rows()), null, array, types);
                        out.callMethod("put", array.memoryAddress(), types.memoryAddress()).close();
                    } finally {
                        array.release();
                        types.release();
                    }
                }
            }
            out.callMethod(abandoned ? "abandon" : "close").close();
            closed = true;
        } finally {
            try {
                if (!closed) {
                    out.callMethod("abandon").close(); // lets go of what it holds; the task deletes the file
                }
            } catch (RuntimeException e) {
                // the writer's own failure is the one to report
            } finally {
                out.close();
            }
        }
    }

    /**
     * {@return the next batch for the writer, or null when the file ends: at {@link #finish}, or at
     * once when {@link #abandon abandoned}}
     *
     * @throws InterruptedException if the writer's thread is interrupted
     */
    private Batch take() throws InterruptedException {
        Batch b;
        do {
            if (abandoned) {
                return null;
            }
            b = queue.poll(50, TimeUnit.MILLISECONDS);
        } while (b == null);
        return b == END ? null : b;
    }

    /**
     * Queues a batch for the writer, waiting while {@value #QUEUED} wait already.
     *
     * @param vectors the batch's columns, in the schema's order; the sink closes them
     * @param rows    the batch's rows
     * @throws InterruptedException if the task's thread is interrupted while it waits (the vectors are closed)
     * @throws IllegalStateException if the writer failed (the vectors are closed)
     */
    void put(List<FieldVector> vectors, int rows) throws InterruptedException {
        Batch b = new Batch(vectors, rows);
        boolean queued = false;
        try {
            while (!queue.offer(b, 50, TimeUnit.MILLISECONDS)) {
                checkWriter();
            }
            queued = true;
            checkWriter();
        } catch (InterruptedException | RuntimeException | Error e) {
            if (!queued || queue.remove(b)) {
                b.close(); // never queued, or taken back; one the writer took is the writer's to close
            }
            throw e;
        }
    }

    private void checkWriter() {
        if (ended.getCount() == 0) {
            throw new IllegalStateException("Arrow's Parquet writer stopped: " + failure, failure);
        }
    }

    /**
     * Ends the file and waits until it is written.
     *
     * @throws IllegalStateException if the writer failed
     */
    void finish() {
        try {
            while (!queue.offer(END, 50, TimeUnit.MILLISECONDS)) {
                checkWriter();
            }
        } catch (InterruptedException e) {
            abandon();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the Parquet file was written", e);
        }
        join();
        if (failure != null) {
            throw new IllegalStateException("Arrow's Parquet writer failed: " + failure.getMessage(), failure);
        }
    }

    /** Ends the file at the batches the writer has taken, and waits until its thread is done with every buffer. */
    void abandon() {
        abandoned = true;
        join();
        Batch b;
        while ((b = queue.poll()) != null) {
            b.close();
        }
    }

    /** Waits for the writer, an interrupt kept for later: its buffers must not be freed under it. */
    private void join() {
        boolean interrupted = false;
        while (ended.getCount() != 0) {
            try {
                ended.await();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** One batch's columns. */
    private record Batch(List<FieldVector> vectors, int rows) implements AutoCloseable {
        @Override
        public void close() {
            vectors.forEach(FieldVector::close);
        }
    }

    /** The batches as the reader that Arrow's writer pulls, on the writer's thread. */
    private final class Feed extends ArrowReader {
        private final Schema schema;

        Feed(BufferAllocator allocator, Schema schema) {
            super(allocator);
            this.schema = schema;
        }

        @Override
        protected Schema readSchema() {
            return schema;
        }

        @Override
        public boolean loadNextBatch() throws IOException {
            Batch b;
            try {
                // Abandoned, it ends the file rather than failing it: Arrow's writer lets go of the
                // batches it read ahead when its input ends, and never when its input fails. The
                // task deletes the file.
                b = take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            if (b == null) {
                return false;
            }
            Batch taken = b;
            try (taken; ArrowRecordBatch record = new VectorUnloader(
                    new VectorSchemaRoot(schema.getFields(), taken.vectors(), taken.rows())).getRecordBatch()) {
                loadRecordBatch(record); // the reader's root takes its own references to the buffers
            }
            return true;
        }

        @Override
        public long bytesRead() {
            return 0;
        }

        @Override
        protected void closeReadSource() {
        }
    }
}
