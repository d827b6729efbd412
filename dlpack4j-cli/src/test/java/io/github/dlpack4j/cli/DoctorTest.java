package io.github.dlpack4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.dlpack4j.cli.DoctorReport.Library;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class DoctorTest {
    static final Path SCHEMA = Path.of(System.getProperty("maven.multiModuleProjectDirectory", "..")).resolve("docs/doctor.schema.json");
    static DoctorReport report;
    static String text;

    @BeforeAll
    static void runDoctorOnTheProjectVenv() throws Exception {
        Cli r = Cli.run("doctor", "--json");
        assertThat(r.exitCode()).as(r.out()).isZero();
        // unknown fields fail by default; missing ones fail too
        report = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
                .readValue(r.out(), DoctorReport.class);
        text = Cli.run("doctor").out();
    }

    private static Library library(String name) {
        return report.libraries().stream().filter(l -> l.name().equals(name)).findFirst().orElseThrow();
    }

    @Test
    void theJsonHasEveryFieldOfTheDocumentedSchemaAndNoOther() throws Exception {
        JsonNode schema = new ObjectMapper().readTree(Files.readString(SCHEMA));
        assertThat(schema.get("properties").get("schemaVersion").get("const").asInt()).isEqualTo(DoctorReport.SCHEMA_VERSION);
        List<String> mismatches = new ArrayList<>();
        compare(schema, schema, DoctorReport.class, "$", mismatches);
        assertThat(mismatches).isEmpty();
        assertThat(report.schemaVersion()).isEqualTo(1);
        assertThat(report.ok()).isTrue();
        assertThat(report.problems()).isEmpty();
    }

    /** Each record component is a required property of the schema object, and nothing else is. */
    private static void compare(JsonNode root, JsonNode node, Type type, String where, List<String> mismatches) {
        if (node.has("oneOf")) { // a record that may be null: [{"$ref": ...}, {"type": "null"}]
            node = node.get("oneOf").get(0);
        }
        if (node.has("$ref")) {
            node = root.at(node.get("$ref").asText().substring(1));
        }
        if (type instanceof ParameterizedType p) {
            Type arg = p.getActualTypeArguments()[p.getActualTypeArguments().length - 1];
            JsonNode inner = p.getRawType() == List.class ? node.get("items") : node.get("additionalProperties");
            if (inner == null) {
                mismatches.add(where + ": the schema does not describe the elements");
            } else {
                compare(root, inner, arg, where + "[]", mismatches);
            }
            return;
        }
        if (!(type instanceof Class<?> c) || !c.isRecord()) {
            return;
        }
        List<String> names = new ArrayList<>();
        for (RecordComponent rc : c.getRecordComponents()) {
            names.add(rc.getName());
            JsonNode property = node.path("properties").get(rc.getName());
            if (property == null) {
                mismatches.add(where + "." + rc.getName() + ": missing in the schema");
            } else {
                compare(root, property, rc.getGenericType(), where + "." + rc.getName(), mismatches);
            }
        }
        List<String> documented = new ArrayList<>();
        node.path("properties").fieldNames().forEachRemaining(documented::add);
        List<String> required = new ArrayList<>();
        for (Iterator<JsonNode> it = node.path("required").elements(); it.hasNext(); ) {
            required.add(it.next().asText());
        }
        if (!documented.equals(names) || !required.equals(names) || node.path("additionalProperties").asBoolean(true)) {
            mismatches.add(where + ": schema properties " + documented + " required " + required + " vs " + names);
        }
    }

    @Test
    void numpyGivesVersionedCapsulesWhenAskedAndHonoursReadOnlyBothWays() {
        Library numpy = library("numpy");
        assertThat(numpy.status()).isEqualTo("ok");
        assertThat(numpy.version()).isEqualTo("2.4.6");
        assertThat(numpy.protocol().capsule()).isEqualTo("dltensor");
        assertThat(numpy.protocol().versionedCapsule()).isEqualTo("dltensor_versioned");
        assertThat(numpy.protocol().keywords()).containsOnly(Map.entry("stream", "accepted"), Map.entry("max_version", "accepted"),
                Map.entry("dl_device", "accepted"), Map.entry("copy", "accepted"));
        assertThat(numpy.protocol().javaImportRoute().detail()).startsWith("DLPACK:");
        assertThat(numpy.protocol().readOnlyToJava().result()).isEqualTo("yes");
        assertThat(numpy.protocol().readOnlyFromJava().detail()).contains("assignment destination is read-only");
        assertThat(numpy.dtypes()).hasSize(Doctor.DTYPES.size()).filteredOn(d -> d.dtype().equals("float32"))
                .singleElement().satisfies(d -> {
                    assertThat(d.toJava().result()).isEqualTo("yes");
                    assertThat(d.fromJava()).isEqualTo(DoctorReport.Outcome.yes("zero-copy"));
                });
        assertThat(numpy.dtypes()).filteredOn(d -> d.dtype().equals("bfloat16")).singleElement()
                .satisfies(d -> assertThat(d.toJava().detail()).contains("BufferError"));
    }

    @Test
    void torchHasTheExchangeApiThatJavaImportsThrough() {
        Library torch = library("torch");
        assertThat(torch.protocol().exchangeApi()).startsWith("__dlpack_c_exchange_api__");
        assertThat(torch.protocol().exchangeApiVersion()).isEqualTo("1.3");
        assertThat(torch.protocol().javaImportRoute().detail()).startsWith("EXCHANGE_API:");
        assertThat(torch.dtypes()).filteredOn(d -> d.dtype().equals("float8_e4m3fn")).singleElement()
                .satisfies(d -> assertThat(List.of(d.toJava().result(), d.fromJava().result())).containsOnly("yes"));
    }

    @Test
    void pyarrowAppearsWithWhatItReallyDoes() {
        Library pyarrow = library("pyarrow");
        assertThat(pyarrow.version()).isEqualTo("25.0.1");
        assertThat(pyarrow.protocol().keywords().get("stream")).isEqualTo("accepted");
        assertThat(pyarrow.protocol().keywords().get("max_version")).startsWith("refused: TypeError");
        assertThat(pyarrow.protocol().versionedCapsule()).isNull();
        assertThat(pyarrow.protocol().javaImportRoute().detail()).startsWith("DLPACK_LEGACY_RETRY:");
        assertThat(pyarrow.dtypes()).filteredOn(d -> d.dtype().equals("int64")).singleElement().satisfies(d -> {
            assertThat(d.toJava().result()).isEqualTo("yes");
            assertThat(d.fromJava().result()).isEqualTo("n/a");
        });
    }

    @Test
    void jaxWithout64BitTypesShowsThemAsMissingNotBroken() {
        assertThat(library("jax").dtypes()).filteredOn(d -> d.dtype().equals("int64")).singleElement()
                .satisfies(d -> assertThat(d.toJava()).isEqualTo(DoctorReport.Outcome.notApplicable(d.toJava().detail())));
    }

    @Test
    void theTextReportShowsTheSameFacts() {
        assertThat(text).contains("numpy      2.4.6", "C Exchange API        __dlpack_c_exchange_api__ (PyCapsule), table version 1.3",
                "capsules              dltensor; with max_version=(1, 3): refused", "Every check passed.");
        assertThat(text).containsPattern("float32 +yes/yes +yes/yes +yes/yes +yes/-");
    }

    @Test
    void onnxRuntimeJavaIsReportedWithTheTenDtypesThatCrossBothWaysWithoutACopy() {
        DoctorReport.OnnxRuntime ort = report.onnxRuntime();
        assertThat(ort.status()).isEqualTo("ok");
        assertThat(ort.version()).isEqualTo("1.26.0");
        assertThat(ort.outputsZeroCopy()).isTrue();
        assertThat(ort.dtypes()).extracting(DoctorReport.DtypeRow::dtype)
                .containsExactlyElementsOf(Doctor.DTYPES.stream().map(Object::toString).toList());
        assertThat(ort.dtypes()).filteredOn(d -> d.toJava().result().equals("yes") && d.fromJava().result().equals("yes"))
                .extracting(DoctorReport.DtypeRow::dtype).containsExactly("bool", "int8", "int16", "int32", "int64",
                        "uint8", "float16", "bfloat16", "float32", "float64");
        assertThat(ort.dtypes()).filteredOn(d -> d.dtype().equals("uint16")).singleElement().satisfies(d -> {
            assertThat(d.toJava().result()).isEqualTo("n/a");
            assertThat(d.fromJava().detail()).contains("uint16", "convert");
        });
        assertThat(text).contains("ONNX Runtime Java 1.26.0 (dlpack4j-onnxruntime): inputs without a copy, outputs over "
                + "ORT's memory", "dtypes both ways: bool, int8, int16, int32, int64, uint8, float16, bfloat16, float32, float64");
    }

    @Test
    void javaImagesAreReportedWithEveryLayoutOfImageIoBecomingATensorAndBack() {
        DoctorReport.Images images = report.images();
        assertThat(images.status()).isEqualTo("ok");
        assertThat(images.readers()).contains("jpeg", "png");
        assertThat(images.layouts()).extracting(DoctorReport.LayoutRow::layout)
                .containsExactly("TYPE_3BYTE_BGR", "TYPE_4BYTE_ABGR", "TYPE_BYTE_GRAY", "TYPE_INT_RGB", "TYPE_INT_ARGB");
        assertThat(images.layouts()).allSatisfy(row -> {
            assertThat(row.toTensor().result()).as(row.toTensor().detail()).isEqualTo("yes");
            assertThat(row.fromTensor().result()).as(row.fromTensor().detail()).isEqualTo("yes");
        });
        assertThat(images.files()).containsOnlyKeys("png", "jpeg")
                .allSatisfy((format, o) -> assertThat(o.result()).as(o.detail()).isEqualTo("yes"));
        assertThat(text).contains("Images (dlpack4j-image): ImageIO reads", "layouts to a tensor (one copy) and back "
                + "(an image over the tensor): TYPE_3BYTE_BGR, TYPE_4BYTE_ABGR, TYPE_BYTE_GRAY, TYPE_INT_RGB, TYPE_INT_ARGB",
                "files read into tensors: png yes, jpeg yes");
    }

    @Test
    void djlIsReportedFromAJvmOfItsOwnWithBothDirectionsOverTheSameMemory() {
        DoctorReport.Djl djl = report.djl();
        assertThat(djl.status()).as(String.valueOf(djl.error())).isEqualTo("ok");
        assertThat(djl.djlVersion()).isEqualTo("0.36.0");
        assertThat(djl.libtorchVersion()).isEqualTo("2.7.1");
        assertThat(djl.ofZeroCopy()).isTrue();
        assertThat(djl.toNDArrayZeroCopy()).isTrue();
        assertThat(text).contains("DJL 0.36.0, libtorch 2.7.1 (dlpack4j-djl, in a JVM of its own): arrays as tensors "
                + "over libtorch's memory, tensors as arrays over the tensor's memory");
    }
}
