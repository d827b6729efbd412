package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * pyarrow's writer in {@link ParquetSink} where it fails or is abandoned: every buffer exported to
 * pyarrow is released exactly once, by the time the sink's call returns (run it with
 * {@code MALLOC_PERTURB_} set to see a late read as wrong values).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ParquetSinkReviewTest {
    private static final Field ID = new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null);
    private static final Schema SCHEMA = new Schema(List.of(ID));

    /** A batch of ids {@code from, from + 1, ...}. */
    private static List<FieldVector> batch(BufferAllocator allocator, long from, int rows) {
        BigIntVector v = new BigIntVector(ID, allocator);
        v.allocateNew(rows);
        for (int i = 0; i < rows; i++) {
            v.set(i, from + i);
        }
        v.setValueCount(rows);
        return List.of(v);
    }

    private static ParquetSink sink(BufferAllocator allocator, Path dir) {
        return new ParquetSink(ParquetSink.Writer.PYARROW, allocator, SCHEMA, dir.toUri().toString(),
                "part-{i}.parquet", "review writer");
    }

    /** Runs {@code body} with {@code ParquetOut.put} replaced by {@code put} (Python source of a function). */
    private static void withPut(String put, ThrowingRunnable body) throws Exception {
        withMethod("put", put, body);
    }

    /**
     * Runs {@code body} with {@code ParquetOut}'s method {@code name} replaced by {@code _review_new_<name>},
     * defined in {@code source}, which may call the original as {@code _review_old_<name>}.
     */
    private static void withMethod(String name, String source, ThrowingRunnable body) throws Exception {
        Python python = ExecutorPython.get();
        PythonHelpers.of(python);
        python.exec("import sys\n_review_m = sys.modules['" + PythonHelpers.MODULE + "']\n"
                + "_review_old_" + name + " = _review_m.ParquetOut." + name + "\n" + source
                + "\n_review_m.ParquetOut." + name + " = _review_new_" + name + "\n");
        try {
            body.run();
        } finally {
            python.exec("_review_m.ParquetOut." + name + " = _review_old_" + name + "\n");
        }
    }

    /** A writer whose every row group fails as a full disk does; pyarrow's own writer underneath closes the file. */
    private static final String FULL_DISK = """
            class _ReviewFullDisk:
                def __init__(self, writer):
                    self._writer = writer

                def write_table(self, table, **options):
                    raise OSError(28, "No space left on device (review)")

                def close(self):
                    self._writer.close()

            def _review_new___init__(self, *args):
                _review_old___init__(self, *args)
                self._writer = _ReviewFullDisk(self._writer)
            """;

    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    /** Waits for the writer to take what was queued (it polls every 50 ms), or to fail as it starts (a first import of pyarrow on a loaded machine). */
    private static void letTheWriterTake() throws InterruptedException {
        Thread.sleep(2000);
    }

    @Test
    void finish_returns_only_once_pyarrow_has_released_every_batch_it_kept_for_its_row_group(@TempDir Path dir)
            throws Exception {
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = sink(allocator, dir.resolve("out"));
            for (int b = 0; b < 5; b++) {
                sink.put(batch(allocator, b * 1000L, 1000), 1000);
            }
            sink.finish();
            assertThat(allocator.getAllocatedMemory()).as("bytes left as finish returns").isZero();
        }
    }

    @Test
    void abandoning_while_pyarrow_holds_pending_batches_releases_them_before_abandon_returns(@TempDir Path dir)
            throws Exception {
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = sink(allocator, dir.resolve("out"));
            for (int b = 0; b < 5; b++) {
                sink.put(batch(allocator, b * 1000L, 1000), 1000);
            }
            letTheWriterTake();
            assertThat(allocator.getAllocatedMemory()).as("pyarrow holds the batches of its row group").isPositive();
            sink.abandon();
            assertThat(allocator.getAllocatedMemory()).as("bytes left as abandon returns").isZero();
        }
    }

    /**
     * Two batches put, the writer given time between them: one of the puts fails with
     * {@code message} (the first may already see the writer stopped: it checks the writer after
     * queuing), and once abandoned the sink holds no byte.
     */
    private static void assertTwoPutsFailWith(String message, Path dir) throws Exception {
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = sink(allocator, dir.resolve("out"));
            assertThatThrownBy(() -> {
                sink.put(batch(allocator, 0, 1000), 1000);
                letTheWriterTake();
                sink.put(batch(allocator, 1000, 1000), 1000);
            }).isInstanceOf(IllegalStateException.class).hasMessageContaining(message);
            sink.abandon();
            assertThat(allocator.getAllocatedMemory()).as("bytes left after the failed put").isZero();
        }
    }

    @Test
    void a_python_error_in_put_before_pyarrow_took_the_batch_releases_the_export_once(@TempDir Path dir)
            throws Exception {
        withPut("""
                def _review_new_put(self, array_address, schema_address):
                    raise ValueError("refused before the import")
                """, () -> {
            assertTwoPutsFailWith("refused before the import", dir);
        });
    }

    @Test
    void a_python_error_in_put_after_pyarrow_took_the_batch_releases_it_once_by_the_time_abandon_returns(
            @TempDir Path dir) throws Exception {
        withPut("""
                def _review_new_put(self, array_address, schema_address):
                    _review_old_put(self, array_address, schema_address)
                    raise ValueError(f"refused after the import of {self._rows} rows")
                """, () -> {
            assertTwoPutsFailWith("refused after the import", dir);
        });
    }

    @Test
    void a_row_group_that_pyarrow_fails_to_write_releases_every_batch_before_abandon_returns(@TempDir Path dir)
            throws Exception {
        withMethod("__init__", FULL_DISK, () -> {
            try (BufferAllocator allocator = new RootAllocator()) {
                ParquetSink sink = sink(allocator, dir.resolve("out"));
                IllegalStateException failed = null;
                try {
                    for (long b = 0; b < 12; b++) { // 12 x 100k rows: a row group is written, and fails, in put
                        sink.put(batch(allocator, b * 100_000, 100_000), 100_000);
                    }
                    sink.finish();
                } catch (IllegalStateException e) {
                    failed = e;
                    sink.abandon();
                }
                assertThat(failed).as("the sink failed").isNotNull();
                assertThat(failed.getMessage()).contains("No space left on device (review)");
                assertThat(allocator.getAllocatedMemory()).as("bytes left after pyarrow failed").isZero();
            }
        });
    }

    @Test
    void the_last_row_group_that_pyarrow_fails_to_write_at_close_releases_every_batch_and_fails_finish(
            @TempDir Path dir) throws Exception {
        withMethod("__init__", FULL_DISK, () -> {
            try (BufferAllocator allocator = new RootAllocator()) {
                ParquetSink sink = sink(allocator, dir.resolve("out"));
                for (long b = 0; b < 3; b++) {
                    sink.put(batch(allocator, b * 1000, 1000), 1000);
                }
                assertThatThrownBy(sink::finish).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("No space left on device (review)");
                sink.abandon();
                assertThat(allocator.getAllocatedMemory()).as("bytes left after pyarrow failed").isZero();
            }
        });
    }

    @Test
    void an_output_file_that_cannot_be_written_fails_the_sink_and_leaves_no_batch_behind(@TempDir Path dir)
            throws Exception {
        Path out = Files.createDirectories(dir.resolve("out"));
        Files.createSymbolicLink(out.resolve("part-0.parquet"), Path.of("/dev/full"));
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = sink(allocator, out);
            letTheWriterTake();
            assertThatThrownBy(() -> sink.put(batch(allocator, 0, 1000), 1000)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("No space left on device");
            sink.abandon();
            assertThat(allocator.getAllocatedMemory()).as("bytes left after pyarrow failed").isZero();
        }
    }

    @Test
    void the_row_groups_are_of_1mi_rows_but_the_last_and_hold_every_id_once_in_order(@TempDir Path dir) throws Exception {
        long rows = 0;
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = sink(allocator, dir.resolve("out"));
            for (int b = 0; b < 25; b++) { // 25 x 100,003 rows: 3 row groups, batches split across them
                sink.put(batch(allocator, rows, 100_003), 100_003);
                rows += 100_003;
            }
            sink.finish();
            assertThat(allocator.getAllocatedMemory()).isZero();
        }
        Path file = dir.resolve("out").resolve("part-0.parquet");
        Python python = ExecutorPython.get();
        python.exec("import pyarrow.parquet as _pq, numpy as _np\n_f = _pq.ParquetFile(" + Sparks.pyLiteral(file.toString())
                + ")\n_ids = _f.read().column('id').to_numpy()\n"
                + "_review = [_f.metadata.num_row_groups, len(_ids), bool(_np.array_equal(_ids, _np.arange(" + rows + ")))]\n");
        try (PyObject review = python.getGlobal("_review")) {
            assertThat(review.str()).isEqualTo("[3, " + rows + ", True]");
        }
    }

    @Test
    void interrupting_the_writer_thread_fails_the_sink_and_leaves_no_batch_behind(@TempDir Path dir) throws Exception {
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink sink = sink(allocator, dir.resolve("out"));
            for (int b = 0; b < 3; b++) {
                sink.put(batch(allocator, b * 1000L, 1000), 1000);
            }
            letTheWriterTake();
            Thread writer = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().equals("review writer")).findFirst().orElseThrow();
            writer.interrupt();
            letTheWriterTake(); // it stops at its next poll
            assertThatThrownBy(() -> sink.put(batch(allocator, 3000, 1000), 1000))
                    .isInstanceOf(IllegalStateException.class);
            sink.abandon();
            assertThat(allocator.getAllocatedMemory()).as("bytes left after the interrupt").isZero();
        }
    }

    @Test
    void a_python_error_in_the_writers_constructor_before_the_schema_import_releases_the_schema_export(
            @TempDir Path dir) throws Exception {
        withMethod("__init__", """
                def _review_new___init__(self, *args):
                    raise ImportError("no pyarrow here (review)")
                """, () -> {
            try (BufferAllocator allocator = new RootAllocator()) {
                ParquetSink sink = sink(allocator, dir.resolve("out"));
                letTheWriterTake();
                assertThatThrownBy(() -> sink.put(batch(allocator, 0, 1000), 1000))
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining("no pyarrow here (review)");
                sink.abandon();
                assertThat(allocator.getAllocatedMemory()).as("bytes left after the failed start").isZero();
            }
        });
    }

    /** {@return the thread states of this JVM's interpreter} */
    private static long threadStates() {
        try (PyObject n = ExecutorPython.get().eval("(lambda c: (lambda api: [api.PyInterpreterState_Get.__setattr__("
                + "'restype', c.c_void_p), api.PyInterpreterState_ThreadHead.__setattr__('restype', c.c_void_p), "
                + "api.PyInterpreterState_ThreadHead.__setattr__('argtypes', [c.c_void_p]), "
                + "api.PyThreadState_Next.__setattr__('restype', c.c_void_p), "
                + "api.PyThreadState_Next.__setattr__('argtypes', [c.c_void_p]), "
                + "(lambda walk: walk(walk, api.PyInterpreterState_ThreadHead(api.PyInterpreterState_Get()), 0))("
                + "lambda walk, t, k: k if not t else walk(walk, api.PyThreadState_Next(t), k + 1))][-1])"
                + "(c.pythonapi))(__import__('ctypes'))")) {
            return n.asLong();
        }
    }

    @Test
    void files_written_one_after_another_leave_no_python_thread_state_behind(@TempDir Path dir) throws Exception {
        try (BufferAllocator allocator = new RootAllocator()) {
            ParquetSink first = sink(allocator, dir.resolve("first"));
            first.put(batch(allocator, 0, 10), 10);
            first.finish();
            long before = threadStates();
            for (int f = 0; f < 50; f++) {
                ParquetSink sink = sink(allocator, dir.resolve("out" + f));
                sink.put(batch(allocator, 0, 10), 10);
                sink.finish();
            }
            assertThat(threadStates() - before).as("thread states added by 50 files").isLessThan(5);
        }
    }

    @Test
    void a_pyarrow_whose_parquet_module_fails_to_import_counts_as_none_for_the_auto_writer() {
        Python python = ExecutorPython.get();
        PythonHelpers helpers = PythonHelpers.of(python);
        assertThat(helpers.hasPyarrow()).as("this interpreter's pyarrow").isTrue();
        python.exec("import sys\n_review_pq = {k: sys.modules.pop(k) for k in list(sys.modules) if k.startswith('pyarrow.parquet')}\n"
                + "sys.modules['pyarrow.parquet'] = None\n"); // import pyarrow.parquet fails, as in a build without Parquet
        try {
            assertThat(helpers.hasPyarrow()).as("pyarrow without its Parquet writer").isFalse();
        } finally {
            python.exec("del sys.modules['pyarrow.parquet']\nsys.modules.update(_review_pq)\n");
        }
    }
}
