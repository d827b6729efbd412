package io.github.dlpack4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import javax.imageio.ImageIO;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchTest {
    @TempDir
    Path dir;

    @Test
    void aQuickBenchGivesEveryExchangeBesideItsPythonBaselineAndDrawsTheChart() throws Exception {
        Path svg = dir.resolve("bench.svg");
        Cli r = Cli.run("bench", "--quick", "--json", "--chart", svg.toString());
        assertThat(r.exitCode()).as(r.err()).isZero();
        assertThat(r.err()).contains("[#").contains("Java imports a numpy array, 4 B"); // the progress bar
        List<BenchCommand.Row> rows = Arrays.asList(new ObjectMapper().readValue(r.out(), BenchCommand.Row[].class));
        assertThat(rows).hasSize(Exchange.values().length * BenchCommand.QUICK_SIZES.size());
        assertThat(rows).allSatisfy(row -> {
            assertThat(row.javaNs()).isPositive();
            assertThat(row.pythonNs()).isPositive();
            assertThat(row.ratio()).isEqualTo(row.javaNs() / row.pythonNs());
        });
        assertThat(rows).extracting(BenchCommand.Row::bytes).containsOnly(4L, 1L << 20);
        assertThat(rows).extracting(BenchCommand.Row::exchange).as("both ways to import: one call, and in a GIL scope")
                .contains("JAVA_IMPORTS_NUMPY", "JAVA_IMPORTS_NUMPY_IN_SCOPE", "JAVA_IMPORTS_TORCH", "JAVA_IMPORTS_TORCH_IN_SCOPE");

        // a valid SVG that names every series it draws
        DocumentBuilderFactory xml = DocumentBuilderFactory.newInstance();
        xml.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false); // no network
        var doc = xml.newDocumentBuilder().parse(svg.toFile());
        assertThat(doc.getDocumentElement().getTagName()).isEqualTo("svg");
        String text = Files.readString(svg);
        for (Exchange e : Exchange.values()) {
            assertThat(text).contains(xml(e.javaLabel), xml("Python alone: " + e.pythonLabel));
        }

        // the same figures as a PNG
        Path png = dir.resolve("bench.png");
        BenchChart.write(rows.stream().map(row -> new Exchange.Timing(Exchange.valueOf(row.exchange()), row.bytes(),
                row.javaNs(), row.pythonNs())).toList(), png);
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image.getWidth()).isEqualTo(900);
        assertThat(image.getHeight()).isEqualTo(560);
    }

    @Test
    void sizesAreReadWithTheirUnits() {
        BenchCommand.SizeConverter c = new BenchCommand.SizeConverter();
        assertThat(List.of(c.convert("4"), c.convert("4B"), c.convert("1KiB"), c.convert("256MiB")))
                .containsExactly(4L, 4L, 1024L, 256L << 20);
        assertThat(BenchCommand.bytes(256L << 20)).isEqualTo("256 MiB");
        assertThat(BenchCommand.bytes(1536)).isEqualTo("1536 B");
    }

    private static String xml(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }

    @Test
    void djlsRowsAreTimedInAJvmOfItsOwn() {
        assertThat(DjlRow.present()).isTrue();
        java.util.Map<String, String> r = DjlRow.probe(List.of("--time", "4"));
        assertThat(r.get("status")).as(String.valueOf(r.get("error"))).isEqualTo("ok");
        String[] f = r.get("time").split(",");
        assertThat(f[0]).isEqualTo("4");
        assertThat(Long.parseLong(f[1])).as("of + close, ns").isPositive();
        assertThat(Long.parseLong(f[2])).as("toNDArray + close, ns").isPositive();
    }
}
