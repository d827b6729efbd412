package example.spring;

import example.serve.protocol.InferenceProtocol;
import example.serve.protocol.ServeOptions;
import example.serve.protocol.ServedModels;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.spring.Dlpack4jProperties;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * A Spring Boot web service that serves torch models from the embedded CPython with the Open
 * Inference Protocol (KServe v2): {@code scripts/serve --spring --model mlp|resnet18 [--weights FILE]
 * [--port 8080] [--batching]}, the options of the Helidon service (examples/serve-torch). The models
 * are {@link PythonModel} beans that dlpack4j-spring-boot-starter makes from
 * {@code dlpack4j.models.*} in {@code application.yml}; the options only set properties. It binds
 * 127.0.0.1 only, prints one line when it is ready, and on SIGTERM (or SIGINT) closes the context:
 * the web server answers the requests in flight (Spring's graceful shutdown), then the models close,
 * and it exits with status 0.
 */
@SpringBootApplication
public class SpringBootTorch {
    /** Makes the application (Spring does, from {@link #main}). */
    public SpringBootTorch() {
    }

    /**
     * Makes the models' Python code, a resource of serve-protocol's jar, the module
     * {@code serve_models} as soon as the interpreter bean is there: the models' factory
     * ({@code serve_models:served}) imports it.
     *
     * @return the post-processor
     */
    @Bean
    static BeanPostProcessor servedModelsModule() {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof Python py) {
                    ServedModels.register(py);
                }
                return bean;
            }
        };
    }

    /**
     * The protocol's endpoints over the model beans.
     *
     * @param models       the model beans, by name
     * @param properties   the starter's properties, for the settings {@code /admin/stats} shows
     * @param maxBodyBytes the largest request body accepted ({@code serve.max-body-bytes})
     * @return the endpoints' answers
     */
    @Bean
    InferenceProtocol inferenceProtocol(Map<String, PythonModel> models, Dlpack4jProperties properties,
                                        @Value("${serve.max-body-bytes}") long maxBodyBytes) {
        return new InferenceProtocol(models, maxBodyBytes, settings(properties));
    }

    /**
     * {@return the models' settings as the Helidon service's ready line words them}: read from the
     * properties the starter made the models from, whatever set them.
     */
    static String settings(Dlpack4jProperties properties) {
        List<Dlpack4jProperties.Model> models = List.copyOf(properties.models().values());
        Dlpack4jProperties.Model first = models.getFirst();
        String weights = first.args().get(1);   // args: name, weights, torch threads (serve_models.served)
        return ServeOptions.describe(Integer.parseInt(first.args().get(2)),
                models.stream().map(m -> m.workers() == null ? 1 : m.workers()).toList(),
                first.batching().maxRows() != null, first.batching().maxDelay().toNanos() / 1000,
                models.stream().map(m -> m.batching().maxRows()).toList(), weights.isEmpty() ? null : weights);
    }

    /**
     * {@return {@code scripts/serve}'s options as Spring properties}: command-line arguments, which
     * win over {@code application.yml}
     */
    static String[] properties(ServeOptions options) {
        List<String> p = new ArrayList<>(List.of(
                "--spring.profiles.active=" + String.join(",", options.models()),
                "--server.port=" + options.port(),
                "--serve.weights=" + (options.weights() == null ? "" : options.weights()),
                "--serve.torch-threads=" + options.torchThreads(),
                "--serve.max-body-bytes=" + options.maxBodyBytes()));
        for (String model : options.models()) {
            String at = "--dlpack4j.models." + model + ".";
            p.add(at + "workers=" + options.runnerThreads(model));
            if (options.batching()) {
                p.add(at + "batching.max-rows=" + options.maxBatch(model));
                p.add(at + "batching.max-delay=" + options.batchWindowMicros() + "us");
            }
        }
        return p.toArray(String[]::new);
    }

    /** {@return the ready line's words for the stack: Spring Boot's version, the web server, the request threads} */
    static String stack(ConfigurableApplicationContext context) {
        String server = ((WebServerApplicationContext) context).getWebServer().getClass().getSimpleName()
                .replace("WebServer", "");
        Environment env = context.getEnvironment();
        boolean virtual = env.getProperty("spring.threads.virtual.enabled", Boolean.class, false);
        return "Spring Boot " + SpringBootVersion.getVersion() + ", Spring MVC on " + server + ", "
                + (virtual ? "virtual threads" : "platform threads");
    }

    /**
     * Starts the service with {@code scripts/serve}'s options.
     *
     * @param args the options ({@link ServeOptions#USAGE})
     * @throws InterruptedException if interrupted while it serves
     */
    public static void main(String[] args) throws InterruptedException {
        ServeOptions options = ServeOptions.parseOrExit(args);
        ConfigurableApplicationContext context = SpringApplication.run(SpringBootTorch.class, properties(options));
        InferenceProtocol protocol = context.getBean(InferenceProtocol.class);
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicInteger exitCode = new AtomicInteger();
        AtomicBoolean stopping = new AtomicBoolean();
        SignalHandler onSignal = signal -> Thread.ofPlatform().name("serve-stop").start(() -> {
            if (!stopping.compareAndSet(false, true)) {
                return;   // a second signal while the first one's shutdown runs
            }
            try {
                // the context's close: the server's graceful shutdown, then the models' (the starter's phases)
                exitCode.set(SpringApplication.exit(context));
                boolean drained = protocol.inFlight() == 0;
                System.out.println("serve-torch: stopped on SIG" + signal.getName()
                        + (drained ? ", every request in flight answered" : ", requests still in flight after "
                        + context.getEnvironment().getProperty("spring.lifecycle.timeout-per-shutdown-phase")));
                System.out.println(protocol.statsLines());
                System.out.flush();
            } finally {
                stopped.countDown();
            }
        });
        Signal.handle(new Signal("TERM"), onSignal);
        Signal.handle(new Signal("INT"), onSignal);
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        System.out.println("serve-torch: " + String.join(", ", options.models()) + " ready on http://127.0.0.1:"
                + port + " (Java + dlpack4j, " + stack(context) + ", "
                + settings(context.getBean(Dlpack4jProperties.class)) + ")");
        System.out.flush();
        stopped.await();
        System.exit(exitCode.get());
    }
}
