package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.model.ModelStats;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The executors' models run through dlpack4j-model's runtime, one per model in each executor JVM (local mode: this one). */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RuntimeInferenceTest {
    private static SparkSession spark;

    @BeforeAll
    static void startSpark() {
        spark = Sparks.local();
    }

    @Test
    void a_loaders_model_runs_through_the_runtime_which_counts_each_batch_and_reads_a_dict_by_output_name() {
        // A Java loader: a callable made in Java, not by source; its dict has the outputs in another order.
        ExecutorModel model = ExecutorModel.of("dict-by-name", python -> python.eval(
                "lambda x: (lambda t: {'plus_one': t + 1, 'twice': t * 2})(__import__('torch').from_dlpack(x))"));
        List<Row> rows = new ArrayList<>();
        for (long id = 0; id < 30; id++) {
            rows.add(RowFactory.create(id, (double) id));
        }
        Dataset<Row> in = spark.createDataFrame(rows, new StructType(new StructField[] {
                new StructField("id", DataTypes.LongType, false, Metadata.empty()),
                new StructField("x", DataTypes.DoubleType, false, Metadata.empty())})).coalesce(1);
        BatchInference inference = BatchInference.builder().input("x").passThrough("id").batchSize(4).model(model)
                .output("twice", DataTypes.DoubleType).output("plus_one", DataTypes.DoubleType).build();
        InferenceMetrics metrics = InferenceMetrics.register(spark.sparkContext());

        List<Row> out = inference.transform(in, metrics).collectAsList();

        assertThat(out).hasSize(30).allSatisfy(r -> {
            assertThat(r.getDouble(1)).isEqualTo(r.getLong(0) * 2.0);
            assertThat(r.getDouble(2)).isEqualTo(r.getLong(0) + 1.0);
        });
        assertThat(metrics.batches()).isEqualTo(8);
        ModelStats stats = ExecutorPython.model(model, List.of(TensorColumn.scalar("twice", DataTypes.DoubleType),
                TensorColumn.scalar("plus_one", DataTypes.DoubleType))).stats();
        assertThat(stats.requests()).as("the runtime's calls: one per batch").isEqualTo(8);
        assertThat(stats.answered()).isEqualTo(8);
        assertThat(stats.batches()).isEqualTo(8);
    }

    @Test
    void the_runtime_has_a_model_thread_per_task_slot_of_the_executor() {
        assertThat(spark.sparkContext().master()).isEqualTo("local[2]");

        assertThat(ExecutorPython.taskSlots()).isEqualTo(2);
    }
}
