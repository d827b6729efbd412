package io.github.dlpack4j.cli;

import io.github.dlpack4j.cli.DoctorReport.Djl;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The DJL row of {@code doctor} and {@code bench}: dlpack4j-djl's {@code DjlProbe} run in a JVM of
 * its own on this JVM's class path, because this one imports torch and DJL's libtorch cannot load
 * beside it (docs/djl.md). Optional: without dlpack4j-djl and DJL on the class path there is no row.
 */
final class DjlRow {
    static final String PROBE = "io.github.dlpack4j.djl.DjlProbe";
    /** The child JVM's DJL settings, passed on when this JVM has them. */
    private static final List<String> PASSED_ON = List.of("ai.djl.offline", "ENGINE_CACHE_DIR", "DJL_CACHE_DIR");

    private DjlRow() {}

    /** {@return whether dlpack4j-djl is on the class path (DJL's engine runs there only)} */
    static boolean present() {
        if (DjlRow.class.getModule().isNamed()) {
            return false;
        }
        try {
            Class.forName(PROBE, false, DjlRow.class.getClassLoader());
            Class.forName("ai.djl.engine.Engine", false, DjlRow.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** The probe's {@code key=value} lines; {@code time} lines are gathered under {@code time}, one per line. */
    static Map<String, String> probe(List<String> args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xms1g", "-Xmx1g"));
        for (String p : PASSED_ON) {
            if (System.getProperty(p) != null) {
                cmd.add("-D" + p + "=" + System.getProperty(p));
            }
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), PROBE));
        cmd.addAll(args);
        Map<String, String> out = new LinkedHashMap<>();
        try {
            Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
            text.lines().filter(l -> l.indexOf('=') > 0).forEach(l -> out.merge(l.substring(0, l.indexOf('=')),
                    l.substring(l.indexOf('=') + 1), (a, b) -> a + "\n" + b));
        } catch (IOException e) {
            out.put("status", "error");
            out.put("error", "cannot start a JVM for DJL: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            out.put("status", "error");
            out.put("error", "interrupted");
        }
        out.putIfAbsent("status", "error");
        out.putIfAbsent("error", out.get("status").equals("ok") ? null : "the DJL probe printed no result");
        return out;
    }

    /** {@return the doctor's DJL report} */
    static Djl examine() {
        if (!present()) {
            return Djl.absent();
        }
        Map<String, String> r = probe(List.of());
        if (!r.get("status").equals("ok")) {
            return new Djl("error", null, null, null, null, r.get("error"));
        }
        return new Djl("ok", r.get("djl"), r.get("libtorch"), "view".equals(r.get("of")),
                "view".equals(r.get("toNDArray")), null);
    }
}
