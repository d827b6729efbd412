package io.github.dlpack4j.spring;

import java.util.Map;

import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.Python;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ResourceLoader;

/**
 * Makes the {@code dlpack4j.*} properties into beans, when {@code dlpack4j-model} is on the class
 * path: the process's {@link Python}, one {@link PythonModel} per {@code dlpack4j.models.<name>}
 * entry (the bean named after the entry), with a {@link SentenceTransformersEmbeddingModel} beside
 * each sentence-transformers model and a {@link TransformersChatModel} beside each transformers-chat
 * model when Spring AI is there (the beans {@code <name>EmbeddingModel} and {@code <name>ChatModel}),
 * the {@code dlpack4j} health indicator when Spring Boot's health is there, each model's meters when
 * Micrometer is, and a {@link org.springframework.context.SmartLifecycle} that closes the models
 * after the web server's graceful shutdown.
 */
@AutoConfiguration
@ConditionalOnClass(PythonModel.class)
@EnableConfigurationProperties(Dlpack4jProperties.class)
public class Dlpack4jAutoConfiguration {
    /** Makes the auto-configuration (Spring Boot does, from its imports file). */
    public Dlpack4jAutoConfiguration() {
    }

    /**
     * The process's one interpreter: {@code dlpack4j.python} names its executable, else the library's default.
     *
     * @param properties the {@code dlpack4j.*} properties
     * @return the started interpreter
     */
    @Bean
    @ConditionalOnMissingBean
    public Python python(Dlpack4jProperties properties) {
        if (properties.python() != null && !properties.python().isBlank()) {
            System.setProperty("dlpack4j.python", properties.python());
        }
        return Python.start();
    }

    /**
     * Registers one {@link PythonModel} bean per {@code dlpack4j.models.<name>} entry, and an
     * {@code EmbeddingModel} beside each sentence-transformers one and a {@code ChatModel} beside each
     * transformers-chat one when Spring AI is on the class path.
     *
     * @param environment the application's environment, where the entries are
     * @return the registrar
     */
    @Bean
    static PythonModelRegistrar dlpack4jModelRegistrar(Environment environment) {
        return new PythonModelRegistrar(environment);
    }

    @Bean(PythonModelFactory.BEAN)
    PythonModelFactory dlpack4jModelFactory(Python python, ResourceLoader resources, Dlpack4jProperties properties) {
        return new PythonModelFactory(python, resources, properties);
    }

    @Bean
    PythonModelLifecycle dlpack4jModelLifecycle(ObjectProvider<PythonModel> models) {
        return new PythonModelLifecycle(models);
    }

    /** The {@code dlpack4j} health indicator, when Spring Boot's health is on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(HealthIndicator.class)
    static class Health {
        @Bean
        @ConditionalOnMissingBean(name = "dlpack4jHealthIndicator")
        PythonModelHealthIndicator dlpack4jHealthIndicator(Python python, ObjectProvider<Map<String, PythonModel>> models) {
            return new PythonModelHealthIndicator(python, models.getIfAvailable(Map::of));
        }
    }

    /** Each model's meters, when Micrometer is on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    static class Meters {
        @Bean
        PythonModelMeters dlpack4jModelMeters(ObjectProvider<Map<String, PythonModel>> models, PythonModelFactory factory) {
            return new PythonModelMeters(models.getIfAvailable(Map::of), factory);
        }
    }
}
