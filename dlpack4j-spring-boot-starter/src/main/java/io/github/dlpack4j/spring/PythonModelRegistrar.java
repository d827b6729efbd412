package io.github.dlpack4j.spring;

import java.util.Map;

import io.github.dlpack4j.model.PythonModel;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * Registers one {@link PythonModel} bean per {@code dlpack4j.models.<name>} entry, named after the
 * entry; {@link PythonModelFactory} builds it when the bean is made.
 */
final class PythonModelRegistrar implements BeanDefinitionRegistryPostProcessor {
    private final Environment environment;

    PythonModelRegistrar(Environment environment) {
        this.environment = environment;
    }

    @Override
    public void postProcessBeanDefinitionRegistry(BeanDefinitionRegistry registry) {
        Map<String, Object> entries = Binder.get(environment)
                .bind("dlpack4j.models", Bindable.mapOf(String.class, Object.class))
                .orElse(Map.of());
        BeanFactory beans = (BeanFactory) registry;
        for (String name : entries.keySet()) {
            if (registry.containsBeanDefinition(name)) { // e.g. an entry named python: the interpreter's bean
                throw new ModelPropertyException("dlpack4j.models." + name, null,
                        "a bean named " + name + " exists already (" + registry.getBeanDefinition(name).getBeanClassName()
                                + "), and each model's bean is named after its entry",
                        "Rename the entry dlpack4j.models." + name + " (its bean and its meters' model tag take the new name).");
            }
            RootBeanDefinition model = new RootBeanDefinition(PythonModel.class,
                    () -> beans.getBean(PythonModelFactory.class).create(name));
            model.setDestroyMethodName("close");
            registry.registerBeanDefinition(name, model);
        }
    }
}
