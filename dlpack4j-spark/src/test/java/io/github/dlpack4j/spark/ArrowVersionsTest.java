package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.arrow.c.Data;
import org.apache.arrow.dataset.jni.NativeDataset;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;

/**
 * The one combination of Arrow Java that the Parquet route works with (docs/spark.md): arrow-dataset
 * 18.3 (its classes with the native library in its jar) beside the rest of Arrow Java at 19, the
 * project's and Spark 4.2's, arrow-c-data included. With arrow-c-data 18.3, which arrow-dataset
 * asks for, closing the reader after an empty batch released its buffers twice.
 */
class ArrowVersionsTest {
    @Test
    void arrow_dataset_is_18_3_and_the_rest_of_arrow_java_arrow_c_data_included_is_19() {
        assertThat(NativeDataset.class.getPackage().getImplementationVersion()).startsWith("18.3.");
        assertThat(Data.class.getPackage().getImplementationVersion()).as("arrow-c-data").startsWith("19.");
        assertThat(VectorSchemaRoot.class.getPackage().getImplementationVersion()).as("arrow-vector").startsWith("19.");
    }
}
