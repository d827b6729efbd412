package io.github.dlpack4j.spring;

import java.util.Map;
import java.util.Objects;

import io.github.dlpack4j.model.PythonModel;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * Registers one {@link PythonModel} bean per {@code dlpack4j.models.<name>} entry, named after the
 * entry; {@link PythonModelFactory} builds it when the bean is made. Beside the model of each
 * {@code sentence-transformers} entry it registers Spring AI's {@code EmbeddingModel} as the bean
 * {@code <name>EmbeddingModel}, and beside that of each {@code transformers-chat} entry Spring AI's
 * {@code ChatModel} as the bean {@code <name>ChatModel}, when Spring AI is on the application's
 * class path.
 */
final class PythonModelRegistrar implements BeanDefinitionRegistryPostProcessor {
    /** The class whose presence means that the application has Spring AI. */
    static final String SPRING_AI = "org.springframework.ai.embedding.EmbeddingModel";
    /** What an entry's name takes to name its {@code EmbeddingModel} bean. */
    static final String EMBEDDING_MODEL = "EmbeddingModel";
    /** What an entry's name takes to name its {@code ChatModel} bean. */
    static final String CHAT_MODEL = "ChatModel";

    private final Environment environment;

    PythonModelRegistrar(Environment environment) {
        this.environment = environment;
    }

    /** The properties of an entry that the registrar reads, to know its beans. */
    record Source(String sentenceTransformers, String transformersChat) {
    }

    @Override
    public void postProcessBeanDefinitionRegistry(BeanDefinitionRegistry registry) {
        Binder binder = Binder.get(environment);
        Map<String, Object> entries = binder.bind("dlpack4j.models", Bindable.mapOf(String.class, Object.class)).orElse(Map.of());
        Map<String, Source> sources = binder.bind("dlpack4j.models", Bindable.mapOf(String.class, Source.class)).orElse(Map.of());
        BeanFactory beans = (BeanFactory) registry;
        for (String name : entries.keySet()) {
            free(registry, name, name, "each model's bean is named after its entry");
            RootBeanDefinition model = new RootBeanDefinition(PythonModel.class,
                    () -> beans.getBean(PythonModelFactory.class).create(name));
            model.setDestroyMethodName("close");
            model.setDependsOn(PythonModelFactory.BEAN); // which deletes the temp copies of its files after it closed
            registry.registerBeanDefinition(name, model);
        }
        if (!ClassUtils.isPresent(SPRING_AI, ((ConfigurableBeanFactory) registry).getBeanClassLoader())) {
            return;
        }
        for (String name : entries.keySet()) {
            Source s = sources.get(name);
            if (s != null && s.sentenceTransformers() != null) {
                String embeddingModel = name + EMBEDDING_MODEL;
                free(registry, name, embeddingModel, "the EmbeddingModel bean of a sentence-transformers entry is named after it");
                registry.registerBeanDefinition(embeddingModel, SpringAi.embeddingModel(beans, name));
            }
            if (s != null && s.transformersChat() != null) {
                String chatModel = name + CHAT_MODEL;
                free(registry, name, chatModel, "the ChatModel bean of a transformers-chat entry is named after it");
                registry.registerBeanDefinition(chatModel, SpringAi.chatModel(beans, name));
            }
        }
    }

    /** Refuses a bean name that is taken (by the interpreter's bean, say, for an entry named python). */
    private static void free(BeanDefinitionRegistry registry, String entry, String bean, String why) {
        if (registry.containsBeanDefinition(bean)) {
            throw new ModelPropertyException("dlpack4j.models." + entry, null,
                    "a bean named " + bean + " exists already (" + registry.getBeanDefinition(bean).getBeanClassName()
                            + "), and " + why,
                    "Rename the entry dlpack4j.models." + entry + " (its beans and its meters' model tag take the new name).");
        }
    }

    /** The only code that names Spring AI's types: loaded only when they are on the class path. */
    private static final class SpringAi {
        private SpringAi() {
        }

        /** {@return the definition of the {@link SentenceTransformersEmbeddingModel} over the model bean {@code model}} */
        static RootBeanDefinition embeddingModel(BeanFactory beans, String model) {
            RootBeanDefinition d = new RootBeanDefinition(SentenceTransformersEmbeddingModel.class,
                    () -> new SentenceTransformersEmbeddingModel(beans.getBean(model, PythonModel.class)));
            d.setDependsOn(model);
            return d;
        }

        /**
         * {@return the definition of the {@link TransformersChatModel} over the model bean {@code model},
         * with its entry's chat defaults}
         */
        static RootBeanDefinition chatModel(BeanFactory beans, String model) {
            RootBeanDefinition d = new RootBeanDefinition(TransformersChatModel.class, () -> {
                PythonModel m = beans.getBean(model, PythonModel.class); // made first: its factory checked the defaults
                Dlpack4jProperties.Chat c = beans.getBean(PythonModelFactory.class).chat(model);
                TransformersChatModel.Defaults standard = TransformersChatModel.Defaults.STANDARD;
                return new TransformersChatModel(m, new TransformersChatModel.Defaults(
                        Objects.requireNonNullElse(c.maxNewTokens(), standard.maxNewTokens()),
                        Objects.requireNonNullElse(c.temperature(), standard.temperature()),
                        Objects.requireNonNullElse(c.topP(), standard.topP()),
                        c.seed(), c.stop().isEmpty() ? standard.stop() : c.stop()));
            });
            d.setDependsOn(model);
            return d;
        }
    }
}
