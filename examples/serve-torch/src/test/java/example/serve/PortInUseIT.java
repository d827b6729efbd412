package example.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code scripts/serve} on a port another process listens on: it says so and exits with status 1,
 * instead of printing a ready line for a server that never listened.
 */
class PortInUseIT {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aPortInUseEndsTheServiceWithAClearErrorAndStatusOne() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Process p = new ProcessBuilder(System.getProperty("serve.script"), "--no-build", "--model", "mlp", "--port",
                    String.valueOf(taken.getLocalPort())).redirectErrorStream(true).start();
            try {
                assertTrue(p.waitFor(100, TimeUnit.SECONDS), "the service did not exit");
                String out = output(p);
                assertEquals(1, p.exitValue(), out);
                assertFalse(out.contains(" ready on "), out);
                assertTrue(out.contains("serve-torch: cannot listen on 127.0.0.1:" + taken.getLocalPort()), out);
            } finally {
                p.destroyForcibly();
            }
        }
    }

    private static String output(Process p) throws IOException {
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
}
