package example.serve.protocol;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code scripts/serve} as a user runs it, in a process of its own (the script named by the system
 * property {@code serve.script}, built already: {@code --no-build}), started on a free port and
 * read until its ready line; its output kept.
 */
public final class ServeProcess implements AutoCloseable {
    private static final Pattern READY = Pattern.compile("^serve-torch: (\\S+) ready on http://127\\.0\\.0\\.1:(\\d+) \\((.*)\\)$");

    private final Process process;
    private final List<String> lines = new ArrayList<>();
    private final Thread reader;
    private final int port;
    private final String ready;

    /**
     * Starts {@code scripts/serve --no-build ARGS --port 0} and waits for its ready line.
     *
     * @param args its options
     */
    public ServeProcess(String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(System.getProperty("serve.script"), "--no-build"));
        command.addAll(List.of(args));
        command.addAll(List.of("--port", "0"));
        process = new ProcessBuilder(command).redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        int found = -1;
        String line = null;
        for (String l; found < 0 && (l = out.readLine()) != null; ) {
            lines.add(l);
            Matcher m = READY.matcher(l);
            if (m.find()) {
                found = Integer.parseInt(m.group(2));
                line = l;
            }
        }
        if (found < 0) {
            process.destroyForcibly();
        }
        assertTrue(found > 0, "no ready line: " + lines);
        port = found;
        ready = line;
        reader = Thread.ofPlatform().daemon().start(() -> out.lines().forEach(l -> {
            synchronized (lines) {
                lines.add(l);
            }
        }));
    }

    /** {@return the port it listens on} */
    public int port() {
        return port;
    }

    /** {@return its ready line} */
    public String readyLine() {
        return ready;
    }

    /** Sends it SIGTERM ({@link Process#destroy()} would close this end of its output too). */
    public void sigterm() {
        process.toHandle().destroy();
    }

    /**
     * {@return its exit status, once it exited within {@code seconds}}; fails the test otherwise
     */
    public int exitStatus(long seconds) throws InterruptedException {
        assertTrue(process.waitFor(seconds, TimeUnit.SECONDS), "the service did not exit within " + seconds + " s; "
                + "output: " + lines());
        return process.exitValue();
    }

    /** {@return what it printed so far, once its output ended (at most 5 s after it exited)} */
    public List<String> lines() throws InterruptedException {
        if (!process.isAlive()) {
            reader.join(5000);
        }
        synchronized (lines) {
            return List.copyOf(lines);
        }
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }
}
