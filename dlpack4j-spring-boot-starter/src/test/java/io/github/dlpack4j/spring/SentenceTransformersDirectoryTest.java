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
import java.util.zip.Deflater;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.ai.embedding.EmbeddingModel;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** A sentence-transformers directory on the class path: in a class path folder, and inside a jar. */
class SentenceTransformersDirectoryTest {
    private static final Path TMP = Path.of(System.getProperty("java.io.tmpdir"));

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class));

    /** {@return the temp directories whose names start with {@code prefix}} */
    private static List<Path> temps(String prefix) throws IOException {
        try (Stream<Path> all = Files.list(TMP)) {
            return all.filter(p -> p.getFileName().toString().startsWith(prefix)).toList();
        }
    }

    private static void embedsAsSentenceTransformers(EmbeddingModel model) {
        String text = Minilm.SENTENCES.getFirst();
        Minilm.assertEmbedding(text, model.embed(text), Minilm.encode(List.of(text))[0]);
    }

    /** {@return a jar with the model's files under {@code models/all-MiniLM-L6-v2/}, without directory entries} */
    private static Path jar(Path dir) throws IOException {
        Path jar = dir.resolve("minilm.jar");
        List<Path> files = new ArrayList<>();
        try (Stream<Path> all = Files.walk(Minilm.DIR)) {
            all.filter(Files::isRegularFile).forEach(files::add);
        }
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(out)) {
            j.setLevel(Deflater.NO_COMPRESSION); // 87 MB of weights: quick to write, as quick to read
            for (Path f : files) {
                j.putNextEntry(new JarEntry("models/all-MiniLM-L6-v2/" + Minilm.DIR.relativize(f).toString().replace('\\', '/')));
                Files.copy(f, j);
                j.closeEntry();
            }
        }
        return jar;
    }

    @Test
    void aClasspathDirectoryInAFolderIsLoadedWhereItIsWithoutACopy() throws IOException {
        List<Path> before = temps("dlpack4j-folder-");
        ClassLoader folder = new URLClassLoader(new URL[] {Minilm.DIR.getParent().toUri().toURL()}, getClass().getClassLoader());
        runner.withClassLoader(folder)
                .withPropertyValues("dlpack4j.models.folder.sentence-transformers=classpath:" + Minilm.DIR.getFileName())
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    embedsAsSentenceTransformers(context.getBean(EmbeddingModel.class));
                    assertThat(temps("dlpack4j-folder-")).isEqualTo(before);
                });
    }

    @Test
    void aClasspathDirectoryInsideAJarIsCopiedToATempDirectoryOnceAndDeletedWithTheContext(@TempDir Path dir) throws IOException {
        List<Path> before = temps("dlpack4j-jarred-");
        ClassLoader inJar = new URLClassLoader(new URL[] {jar(dir).toUri().toURL()}, getClass().getClassLoader());
        List<Path> during = new ArrayList<>();
        runner.withClassLoader(inJar)
                .withPropertyValues("dlpack4j.models.jarred.sentence-transformers=classpath:models/all-MiniLM-L6-v2/")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    embedsAsSentenceTransformers(context.getBean(EmbeddingModel.class));
                    List<Path> now = new ArrayList<>(temps("dlpack4j-jarred-"));
                    now.removeAll(before);
                    assertThat(now).hasSize(1);
                    during.add(now.getFirst());
                    assertThat(now.getFirst().resolve("modules.json")).isRegularFile();
                    assertThat(now.getFirst().resolve("1_Pooling/config.json")).isRegularFile();
                    assertThat(Files.size(now.getFirst().resolve("model.safetensors")))
                            .isEqualTo(Files.size(Minilm.DIR.resolve("model.safetensors")));
                });
        assertThat(during.getFirst()).doesNotExist();
    }
}
