package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** {@link ParquetSink} alone, with either writer: who frees a batch when the writer fails or the task stops. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ParquetSinkTest {
    private static final Schema SCHEMA = new Schema(List.of(new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null)));

    private static List<FieldVector> batch(BufferAllocator allocator, int rows) {
        BigIntVector v = new BigIntVector(new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null), allocator);
        v.allocateNew(rows);
        for (int i = 0; i < rows; i++) {
            v.set(i, i);
        }
        v.setValueCount(rows);
        return List.of(v);
    }

    @ParameterizedTest
    @EnumSource(ParquetSink.Writer.class)
    void a_batch_put_after_the_writer_failed_is_freed_when_put_throws(ParquetSink.Writer writer, @TempDir Path dir)
            throws Exception {
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = new ParquetSink(writer, allocator, SCHEMA, dir.resolve("out").toUri().toString(),
                    "part-{i}.parquet", "test writer");
            List<FieldVector> twoColumns = new java.util.ArrayList<>(batch(allocator, 10));
            twoColumns.addAll(batch(allocator, 10));
            // not the schema's one column: the writer's Java side fails on it, before C++ has it; the
            // put itself may already see the writer stopped, as it checks the writer after queuing
            assertThatThrownBy(() -> {
                sink.put(twoColumns, 10);
                Thread.sleep(2000);
                sink.put(batch(allocator, 1000), 1000);
            }).isInstanceOf(IllegalStateException.class).hasMessageContaining("Arrow's Parquet writer stopped");
            sink.abandon();
            assertThat(allocator.getAllocatedMemory()).as("bytes left after the writer failed").isZero();
        }
    }

    @ParameterizedTest
    @EnumSource(ParquetSink.Writer.class)
    void a_task_interrupted_while_put_waits_for_a_busy_writer_leaves_no_batch_behind_not_even_those_arrow_read_ahead(
            ParquetSink.Writer writer, @TempDir Path dir) throws Exception {
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = new ParquetSink(writer, allocator, SCHEMA, dir.resolve("out").toUri().toString(),
                    "part-{i}.parquet", "test writer");
            Thread putter = Thread.currentThread();
            Thread interrupter = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(1500); // the writer encodes big batches; put waits for room most of the time
                } catch (InterruptedException e) {
                    return;
                }
                putter.interrupt();
            });
            int put = 0;
            boolean interrupted = false;
            try {
                for (; put < 500; put++) {
                    sink.put(batch(allocator, 2_000_000), 2_000_000);
                }
            } catch (InterruptedException e) {
                interrupted = true;
            }
            interrupter.join();
            assertThat(interrupted).as("put was interrupted (" + put + " batches put)").isTrue();
            sink.abandon();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (allocator.getAllocatedMemory() != 0 && System.nanoTime() < deadline) { // Arrow's threads let go late
                Thread.sleep(20);
            }
            assertThat(allocator.getAllocatedMemory()).as("bytes left after the interrupt and abandon").isZero();
        }
    }

    @Disabled("Arrow's bug, not ours to fix: arrow-dataset 18.3's writer, failing on its own (here: it cannot create "
            + "the directory), never releases the batches it had read from its input (the leaked buffers are those "
            + "ArrayStreamExporter.getNext exported), 17,024 bytes here; a task whose writer fails so leaks them for the "
            + "executor's life. Run alone, the test JVM then hung in its exit (a C++ thread of the writer attached and "
            + "parked in Feed.loadNextBatch)")
    @Test
    void a_writer_that_fails_on_its_own_releases_the_batches_it_had_read(@TempDir Path dir) throws Exception {
        Path notADirectory = Files.writeString(dir.resolve("file"), "x");
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = new ParquetSink(ParquetSink.Writer.ARROW, allocator, SCHEMA,
                    notADirectory.resolve("sub").toUri().toString(),
                    "part-{i}.parquet", "test writer");
            sink.put(batch(allocator, 1000), 1000);
            Thread.sleep(2000); // the writer takes it, fails and ends
            assertThatThrownBy(() -> sink.put(batch(allocator, 1000), 1000)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("Cannot create directory");
            sink.abandon();
            assertThat(allocator.getAllocatedMemory()).as("bytes left after the writer failed").isZero();
        }
    }

    @Test
    void pyarrows_writer_that_fails_on_its_own_releases_every_batch(@TempDir Path dir) throws Exception {
        Path notADirectory = Files.writeString(dir.resolve("file"), "x");
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = new ParquetSink(ParquetSink.Writer.PYARROW, allocator, SCHEMA,
                    notADirectory.resolve("sub").toUri().toString(), "part-{i}.parquet", "test writer");
            Thread.sleep(2000); // the writer fails and ends
            assertThatThrownBy(() -> sink.put(batch(allocator, 1000), 1000)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("Parquet writer stopped");
            sink.abandon();
            assertThat(allocator.getAllocatedMemory()).as("bytes left after the writer failed").isZero();
        }
    }

    @Test
    void pyarrows_writer_writes_every_batch_put_as_plain_pages_in_one_row_group(@TempDir Path dir) throws Exception {
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = new ParquetSink(ParquetSink.Writer.PYARROW, allocator, SCHEMA,
                    dir.resolve("out").toUri().toString(), "part-{i}.parquet", "test writer");
            for (int b = 0; b < 5; b++) {
                sink.put(batch(allocator, 1000), 1000);
            }
            sink.finish();
            Path file = dir.resolve("out").resolve("part-0.parquet");
            assertThat(file).exists();
            try (var python = ExecutorPython.get().eval("__import__('pyarrow.parquet').parquet.ParquetFile("
                    + Sparks.pyLiteral(file.toString()) + ").metadata")) {
                assertThat(python.attr("num_rows").asLong()).isEqualTo(5000);
                assertThat(python.attr("num_row_groups").asLong()).isEqualTo(1);
                try (var encodings = python.callMethod("row_group", 0).callMethod("column", 0).attr("encodings")) {
                    assertThat(encodings.str()).doesNotContain("DICTIONARY").contains("PLAIN");
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (allocator.getAllocatedMemory() != 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(allocator.getAllocatedMemory()).as("bytes left once the file is written").isZero();
        }
    }
}
