package io.github.dlpack4j.spark;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

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
 * Arrow's C++ Parquet writer fed by a task thread, one record batch at a time: the writer runs on a
 * thread of its own ({@code DatasetFileWriter.write} returns only when the file is written) and
 * pulls the batches that {@link #put} queues, a few at most, so that the model runs on the task's
 * thread while the previous batch is encoded and written.
 *
 * <p>A batch's vectors pass to the writer with {@link #put}: their buffers (the model's memory, the
 * input's) stay allocated until Arrow's C++ has written them and let go. {@link #finish} ends the
 * file and waits for it; {@link #abandon} ends the file at the batches the writer has taken (the
 * task deletes it) and waits for its thread to be done with every buffer.
 */
final class ParquetSink {
    /** Batches queued at most: the model may run ahead of the writer by this many. */
    private static final int QUEUED = 2;
    private static final Batch END = new Batch(List.of(), 0);

    private final BlockingQueue<Batch> queue = new ArrayBlockingQueue<>(QUEUED);
    private final Thread thread;
    private final Feed feed;
    private volatile boolean abandoned;
    private volatile Throwable failure;

    /**
     * Starts the writer of one Parquet file in {@code directory}.
     *
     * @param allocator accounts for the writer's buffers
     * @param schema    the batches' schema
     * @param directory the directory, which must be empty or absent (a {@code file:} URI)
     * @param fileName  the file's name; {@code {i}} in it becomes 0
     * @param thread    the writer thread's name
     */
    ParquetSink(BufferAllocator allocator, Schema schema, String directory, String fileName, String thread) {
        this.feed = new Feed(allocator, schema);
        this.thread = Thread.ofPlatform().name(thread).daemon().unstarted(() -> {
            try {
                DatasetFileWriter.write(allocator, feed, FileFormat.PARQUET, directory, new String[0], 1, fileName);
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
            }
        });
        this.thread.start();
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
        if (!thread.isAlive()) {
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

    /** Waits for the writer's thread, an interrupt kept for later: its buffers must not be freed under it. */
    private void join() {
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
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
                do {
                    if (abandoned) {
                        // Ends the file rather than failing it: Arrow's writer lets go of the batches it
                        // read ahead when its input ends, and never when its input fails. The task
                        // deletes the file.
                        return false;
                    }
                    b = queue.poll(50, TimeUnit.MILLISECONDS);
                } while (b == null);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            if (b == END) {
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
