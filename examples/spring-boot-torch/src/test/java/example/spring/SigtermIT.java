package example.spring;

import static org.junit.jupiter.api.Assertions.assertTrue;

import example.serve.protocol.ServeProcess;
import example.serve.protocol.Sigterm;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code scripts/serve --spring} as a user runs it, in a process of its own: SIGTERM while four
 * requests run closes the context with Spring's graceful shutdown, every one of them is answered,
 * then the models close, and the service exits with status 0 within 10 s.
 */
class SigtermIT {
    @Test
    @Timeout(value = 170, unit = TimeUnit.SECONDS)
    void sigtermAnswersEveryRequestInFlightAndExitsZero() throws Exception {
        try (ServeProcess service = new ServeProcess("--spring", "--model", "resnet18")) {
            assertTrue(service.readyLine().contains("(Java + dlpack4j, Spring Boot "), service.readyLine());
            Sigterm.Outcome o = Sigterm.assertInFlightAnsweredAndExitZero(service, 4);
            System.out.printf("SIGTERM: %d of 4 requests answered, exit 0 after %d ms%n", o.answered(), o.tookMs());
        }
    }
}
