package example.serve;

import static org.junit.jupiter.api.Assertions.assertTrue;

import example.serve.protocol.ServeProcess;
import example.serve.protocol.Sigterm;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code scripts/serve} as a user runs it, in a process of its own: SIGTERM while requests run lets
 * each of them finish with its answer, and the service exits with status 0 within 10 s.
 */
class SigtermIT {
    @Test
    @Timeout(value = 170, unit = TimeUnit.SECONDS)
    void sigtermAnswersTheRequestsInFlightAndExitsZero() throws Exception {
        try (ServeProcess service = new ServeProcess("--model", "resnet18")) {
            // resnet18's runner threads take every core; without batching the virtual threads get one carrier
            assertTrue(service.readyLine().endsWith(", virtual thread carriers 1)"), service.readyLine());
            Sigterm.Outcome o = Sigterm.assertInFlightAnsweredAndExitZero(service, 1);
            System.out.printf("SIGTERM: %d of 4 requests answered, exit 0 after %d ms%n", o.answered(), o.tookMs());
        }
    }
}
