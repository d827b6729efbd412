package example.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import example.serve.protocol.V2Client;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The service's {@code /actuator/prometheus}, read as a scraper reads it. */
record Prometheus(String text) {
    /** {@return the service's meters now} */
    static Prometheus scrape(int port) throws Exception {
        HttpResponse<String> r = V2Client.http().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/actuator/prometheus")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return new Prometheus(r.body());
    }

    /** {@return the sum of the samples {@code name} whose labels hold each of {@code labels}; 0 if none} */
    double value(String name, String... labels) {
        Matcher m = Pattern.compile("^" + name + "\\{(.*)} (\\S+)$", Pattern.MULTILINE).matcher(text);
        double sum = 0;
        while (m.find()) {
            boolean all = true;
            for (String l : labels) {
                all &= m.group(1).contains(l);
            }
            if (all) {
                sum += Double.parseDouble(m.group(2));
            }
        }
        return sum;
    }

    /** {@return how much the sample grew since {@code before}} */
    double since(Prometheus before, String name, String... labels) {
        return value(name, labels) - before.value(name, labels);
    }
}
