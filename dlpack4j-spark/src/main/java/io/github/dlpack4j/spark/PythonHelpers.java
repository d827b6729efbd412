package io.github.dlpack4j.spark;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/**
 * The module {@value #MODULE} of an executor's interpreter, made once per JVM: the factories through
 * which dlpack4j-model's runtime ({@code PythonModel.Builder.factory}) gets a Spark model's callable,
 * each wrapped in {@code Timed}, which times the model's own call for {@link InferenceMetrics}.
 *
 * <p>{@code Timed} takes one argument more than the model: an int64 tensor {@code [1]} of the
 * calling task (its clock), into which it writes the nanoseconds of the model's call; the model gets
 * the arguments before it. The loading itself is dlpack4j-model's: {@code source} runs a model's
 * source through the runtime's own {@code load_source} (of its module {@code dlpack4j_model}, which
 * the runtime makes before it calls a factory), and {@code made} hands over a callable that a
 * {@link ExecutorModel.Loader} made in Java.
 */
final class PythonHelpers {
    /** The module's name in {@code sys.modules}, which the runtime's factory imports. */
    static final String MODULE = "dlpack4j_spark";

    private static final String SOURCE = """
            import sys
            import time
            import traceback
            from typing import Any, Callable

            # Callables that Java loaders made, until the runtime takes them (made).
            _made: dict[str, Callable[..., Any]] = {}


            class Timed:
                \"""The model, called with the arguments but the last: the task's clock, int64 [1],
                into which it writes the nanoseconds of the model's call.\"""

                def __init__(self, model: Callable[..., Any]) -> None:
                    self.model = model

                def __call__(self, *args: Any) -> Any:
                    start = time.perf_counter_ns()
                    try:
                        return self.model(*args[:-1])
                    finally:
                        elapsed = time.perf_counter_ns() - start
                        framework = sys.modules.get("torch") or sys.modules.get("numpy")
                        if framework is not None:
                            framework.from_dlpack(args[-1])[0] = elapsed


            def source(name: str, code: str, function: str, args: list[Any]) -> Timed:
                return Timed(sys.modules["dlpack4j_model"].load_source(name, code, function, args))


            def put(key: str, model: Callable[..., Any]) -> None:
                _made[key] = model


            def discard(key: str) -> None:
                _made.pop(key, None)


            def made(key: str) -> Timed:
                return Timed(_made.pop(key))


            def has_pyarrow() -> bool:
                \"""Whether pyarrow's Parquet writer imports: a pyarrow built without Parquet, or one that
                fails to import, counts as none.\"""
                try:
                    import pyarrow.parquet  # noqa: F401
                except Exception:
                    return False
                return True


            class ParquetOut:
                \"""One Parquet file written by pyarrow (Arrow's C++ writer) from record batches that Java
                exports through Arrow's C data interface: plain pages, no dictionary (a model's float
                outputs do not repeat: dictionary pages cost several times the plain encoding and make
                the file larger), uncompressed, row groups of group_rows rows (the last one fewer). A
                batch is written when its row group is full or the file closes; until then pyarrow holds
                its buffers. A call that fails lets go of every batch before it raises.\"""

                def __init__(self, path: str, schema_address: int, group_rows: int) -> None:
                    import pyarrow as pa
                    import pyarrow.parquet as pq

                    self._pa = pa
                    schema = pa.Schema._import_from_c(schema_address)
                    self._writer = pq.ParquetWriter(path, schema, use_dictionary=False, compression="none")
                    self._pending: list[Any] = []
                    self._rows = 0
                    self._group_rows = group_rows

                def put(self, array_address: int, schema_address: int) -> None:
                    try:
                        # no local names the batch: a failure's traceback keeps this frame
                        self._pending.append(self._pa.RecordBatch._import_from_c(array_address, schema_address))
                        self._rows += self._pending[-1].num_rows
                        if self._rows >= self._group_rows:
                            self._write(last=False)
                    except BaseException as e:
                        self._let_go(e)
                        raise

                def _write(self, last: bool) -> None:
                    \"""Writes the pending rows' whole row groups, or all of them when last; keeps the rest.\"""
                    table = self._pa.Table.from_batches(self._pending)
                    whole = table.num_rows if last else table.num_rows - table.num_rows % self._group_rows
                    self._pending = table.slice(whole).to_batches()
                    self._rows = table.num_rows - whole
                    self._writer.write_table(table.slice(0, whole), row_group_size=self._group_rows)

                def close(self) -> None:
                    try:
                        if self._pending:
                            self._write(last=True)
                        self._writer.close()
                    except BaseException as e:
                        self._let_go(e)
                        raise

                def abandon(self) -> None:
                    \"""Lets go of the batches not written and ends the file (which the task deletes).\"""
                    self._pending = []
                    self._rows = 0
                    self._writer.close()

                def _let_go(self, e: BaseException) -> None:
                    \"""Lets go of every batch when a call fails. Java keeps the exception, with its traceback
                    and so its frames, until the JVM collects it: the finished frames' locals (a row group's
                    table) are cleared, or the batches' buffers would be released that late.\"""
                    self._pending = []
                    self._rows = 0
                    traceback.clear_frames(e.__traceback__)
            """;

    private static volatile PythonHelpers instance;

    private final PyObject module;

    private PythonHelpers(Python python) {
        module = python.withGil(() -> {
            try (PyObject types = python.importModule("types");
                 PyObject builtins = python.importModule("builtins");
                 PyObject sys = python.importModule("sys");
                 PyObject modules = sys.attr("modules")) {
                PyObject m = types.callMethod("ModuleType", MODULE);
                try (PyObject namespace = m.attr("__dict__");
                     PyObject ignored = builtins.callMethod("exec", SOURCE, namespace);
                     PyObject registered = modules.callMethod("__setitem__", MODULE, m)) {
                    return m;
                }
            }
        });
    }

    /** {@return the module of this JVM's interpreter, made on first use} */
    static PythonHelpers of(Python python) {
        PythonHelpers h = instance;
        if (h == null) {
            synchronized (PythonHelpers.class) {
                if (instance == null) {
                    instance = new PythonHelpers(python);
                }
                h = instance;
            }
        }
        return h;
    }

    /** {@return whether this interpreter imports pyarrow's Parquet writer ({@code pyarrow.parquet})} */
    boolean hasPyarrow() {
        try (PyObject has = module.callMethod("has_pyarrow")) {
            return has.asBoolean();
        }
    }

    /**
     * {@return a new {@code ParquetOut}: a Parquet file written by pyarrow}
     *
     * @param path          the file
     * @param schemaAddress an exported {@code ArrowSchema} of the batches, which pyarrow takes
     * @param groupRows     the rows of a row group at most
     */
    PyObject parquetOut(String path, long schemaAddress, long groupRows) {
        return module.callMethod("ParquetOut", path, schemaAddress, groupRows);
    }

    /** Keeps {@code model}, made by a loader, for the factory {@code made(key)}. */
    void put(String key, PyObject model) {
        module.callMethod("put", key, model).close();
    }

    /** Lets go of what {@link #put} kept under {@code key}, if the factory did not take it. */
    void discard(String key) {
        module.callMethod("discard", key).close();
    }
}
