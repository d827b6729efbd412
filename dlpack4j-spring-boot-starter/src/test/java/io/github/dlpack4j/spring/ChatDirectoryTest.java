package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** A transformers-chat directory on the class path, inside a jar. */
class ChatDirectoryTest {
    @Test
    void aClasspathChatDirectoryInsideAJarIsCopiedToATempDirectoryAndAnswersAsTheDirectoryDoes(@TempDir Path dir) throws IOException {
        Path jar = dir.resolve("tiny-lm.jar");
        List<Path> files = new ArrayList<>();
        try (Stream<Path> all = Files.walk(TinyLm.DIR)) {
            all.filter(Files::isRegularFile).forEach(files::add);
        }
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(out)) {
            for (Path f : files) {
                j.putNextEntry(new JarEntry("models/tiny-lm/" + TinyLm.DIR.relativize(f).toString().replace('\\', '/')));
                Files.copy(f, j);
                j.closeEntry();
            }
        }
        ClassLoader inJar = new URLClassLoader(new URL[] {jar.toUri().toURL()},
                getClass().getClassLoader());
        List<Path> copies = new ArrayList<>();
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class))
                .withClassLoader(inJar)
                .withPropertyValues("dlpack4j.models.jarredlm.transformers-chat=classpath:models/tiny-lm")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    try (Stream<Path> temps = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
                        temps.filter(p -> p.getFileName().toString().startsWith("dlpack4j-jarredlm-")).forEach(copies::add);
                    }
                    assertThat(copies).singleElement().satisfies(c -> assertThat(c.resolve("config.json")).isRegularFile());
                    String p = TinyLm.PROMPTS.getFirst();
                    ChatModel chat = context.getBean(ChatModel.class);
                    assertThat(chat.call(new Prompt(p, ChatOptions.builder().maxTokens(6).build())).getResult().getOutput().getText())
                            .isEqualTo(TinyLm.generate(p, 6).text());
                });
        assertThat(copies.getFirst()).as("deleted with the context").doesNotExist();
    }
}
