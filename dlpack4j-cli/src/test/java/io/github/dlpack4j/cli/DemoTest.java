package io.github.dlpack4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.Dlpack;
import java.util.List;
import java.util.regex.MatchResult;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class DemoTest {
    /** The demo's one run, which both tests read. */
    private static Cli demo;

    private static synchronized Cli demo() {
        if (demo == null) {
            demo = Cli.run("demo");
        }
        return demo;
    }

    @Test
    void theDemoShowsTheSameAddressesOnBothSidesTheRoutesAndPythonSeeingJavasWrites() {
        Cli r = demo();
        assertThat(r.exitCode()).as(r.err()).isZero();
        String out = r.out();
        assertThat(out).contains("(the same memory, no copy)", "the deleter ran exactly once (live exports: 0");
        // torch and numpy imported: Python's address then Java's, equal; Python prints the 42 Java wrote
        for (String section : List.of("A torch tensor in Java", "A NumPy array in Java")) {
            String part = out.substring(out.indexOf(section));
            List<String> addresses = addresses(part.substring(0, part.indexOf("route")));
            assertThat(addresses).hasSize(2);
            assertThat(addresses.get(0)).isEqualTo(addresses.get(1));
            assertThat(part.substring(0, part.indexOf("\n\n"))).contains("[ 3.,  4., 42.]");
        }
        assertThat(out).contains("route   EXCHANGE_API", "route   DLPACK: __dlpack__(max_version=(1, 3)) gave a DLManagedTensorVersioned");
        // the Java tensor in numpy, torch and jax: four addresses (Java's first), all equal
        String export = out.substring(out.indexOf("A Java tensor in numpy"));
        List<String> addresses = addresses(export.substring(0, export.indexOf("Python sets")));
        assertThat(addresses).hasSize(4).containsOnly(addresses.get(0));
        assertThat(export).contains("-> dltensor_versioned", "__dlpack__(stream=None) -> dltensor",
                "Java reads t[0, 0] = -1.0");
        assertThat(out).containsPattern("Java imports a numpy array +\\d+ ns   Python: numpy.from_dlpack\\(ndarray\\) +\\d+ ns   ratio \\d+\\.\\d\\dx")
                .as("the import in a GIL scope beside the one-call import, and which to use")
                .containsPattern("the same in a GIL scope \\(numpy\\) +\\d+ ns   Python: numpy.from_dlpack\\(ndarray\\) +\\d+ ns   ratio \\d+\\.\\d\\dx")
                .contains(Exchange.ADVICE);
        assertThat(Dlpack.liveExports()).isZero();
    }

    @Test
    void theDemoEmbedsThreeSentencesAndACatIsCloserToAKittenThanToAStockMarket() {
        Cli r = demo();
        assertThat(r.exitCode()).as(r.err()).isZero();
        String out = r.out();
        assertThat(out).contains("Strings in, embeddings out: all-MiniLM-L6-v2")
                .containsPattern("float32 \\[3, 384\\] in [\\d,]+ us, \\[\\d+, \\d+, \\d+\\] tokens");
        double catKitten = cosine(out, "\"A cat sits on the mat\" +\"A kitten rests on a rug\"");
        double catMarket = cosine(out, "\"A cat sits on the mat\" +\"The stock market fell sharply today\"");
        assertThat(catKitten).isGreaterThan(0.5).isGreaterThan(catMarket + 0.3);
    }

    private static double cosine(String out, String pair) {
        var m = Pattern.compile("cosine " + pair + " +(\\d\\.\\d\\d)").matcher(out);
        assertThat(m.find()).as(out).isTrue();
        return Double.parseDouble(m.group(1));
    }

    private static List<String> addresses(String text) {
        return Pattern.compile("0x[0-9a-f]+").matcher(text).results().map(MatchResult::group).toList();
    }
}
