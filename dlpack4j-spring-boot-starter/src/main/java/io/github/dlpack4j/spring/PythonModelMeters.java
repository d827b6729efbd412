package io.github.dlpack4j.spring;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.model.ModelListener;
import io.github.dlpack4j.model.PythonModel;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;

/**
 * Each model's Micrometer meters, tagged {@code model}: the timers {@code dlpack4j.model.queue.wait}
 * and {@code dlpack4j.model.run} (with percentile histograms), the distribution summary
 * {@code dlpack4j.model.batch.rows}, the counter {@code dlpack4j.model.requests} tagged
 * {@code outcome} ({@code answered}, {@code failed}, {@code rejected}, {@code timed_out}) and the
 * gauge {@code dlpack4j.model.queue.depth}. They count from the binding on: what a model did before
 * it (its warm-up is never counted) is in its {@link PythonModel#stats()} only.
 */
public final class PythonModelMeters implements MeterBinder {
    private final Map<String, PythonModel> models;
    private final PythonModelFactory factory;

    PythonModelMeters(Map<String, PythonModel> models, PythonModelFactory factory) {
        this.models = Map.copyOf(models);
        this.factory = factory;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        models.forEach((name, model) -> factory.relay(name).add(new Meters(registry, name, model)));
    }

    /** One model's meters, fed by its listener. */
    private static final class Meters implements ModelListener {
        private final Timer queueWait;
        private final Timer run;
        private final DistributionSummary rows;
        private final Counter answered;
        private final Counter failed;
        private final Counter rejected;
        private final Counter timedOut;

        Meters(MeterRegistry registry, String name, PythonModel model) {
            queueWait = Timer.builder("dlpack4j.model.queue.wait").description("Time from a request's admission to the start of its model call")
                    .tag("model", name).publishPercentileHistogram().minimumExpectedValue(Duration.ofNanos(1000)).register(registry);
            run = Timer.builder("dlpack4j.model.run").description("Time of one model call, with its inputs' and outputs' exchange")
                    .tag("model", name).publishPercentileHistogram().minimumExpectedValue(Duration.ofNanos(1000)).register(registry);
            rows = DistributionSummary.builder("dlpack4j.model.batch.rows").description("Rows of one model call")
                    .baseUnit("rows").tag("model", name).register(registry);
            answered = requests(registry, name, "answered");
            failed = requests(registry, name, "failed");
            rejected = requests(registry, name, "rejected");
            timedOut = requests(registry, name, "timed_out");
            Gauge.builder("dlpack4j.model.queue.depth", model, PythonModel::queued)
                    .description("Requests waiting for a model call").tag("model", name).register(registry);
        }

        private static Counter requests(MeterRegistry registry, String name, String outcome) {
            return Counter.builder("dlpack4j.model.requests").description("Requests by outcome")
                    .tag("model", name).tag("outcome", outcome).register(registry);
        }

        @Override
        public void waited(long nanos) {
            queueWait.record(nanos, TimeUnit.NANOSECONDS);
        }

        @Override
        public void ran(long batchRows, long nanos) {
            run.record(nanos, TimeUnit.NANOSECONDS);
            rows.record(batchRows);
        }

        @Override
        public void answered() {
            answered.increment();
        }

        @Override
        public void failed() {
            failed.increment();
        }

        @Override
        public void rejected() {
            rejected.increment();
        }

        @Override
        public void timedOut() {
            timedOut.increment();
        }
    }
}
