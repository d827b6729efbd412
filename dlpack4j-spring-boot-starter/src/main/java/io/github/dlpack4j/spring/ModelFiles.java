package io.github.dlpack4j.spring;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.JarURLConnection;
import java.net.URLConnection;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import org.springframework.core.io.FileSystemResource;
import org.springframework.core.io.Resource;
import org.springframework.core.io.ResourceLoader;

/**
 * The files of the models' properties on the file system, where Python opens them: a plain path, a
 * {@code file:} URL or a {@code classpath:} resource. One in a class path folder is used where it
 * is; one inside a jar (a Spring Boot fat jar's {@code BOOT-INF/classes} included) is copied to a
 * temp directory of its own, once per location, and {@link #close()} (at the context's shutdown,
 * after the models closed) deletes the copies.
 */
final class ModelFiles implements AutoCloseable {
    /** The kinds of model directory: what one has at its top, and what to say of one that lacks it. */
    enum Kind {
        /** Its modules, or a plain transformers model's configuration. */
        SENTENCE_TRANSFORMERS(List.of("modules.json", "config.json"), "a sentence-transformers model's directory",
                "the one SentenceTransformer(path) loads", "not a sentence-transformers model's directory (it has neither modules.json nor config.json)"),
        /** A transformers model's configuration (its tokenizer's files beside it). */
        CAUSAL_LM(List.of("config.json"), "a transformers causal language model's directory",
                "the one AutoModelForCausalLM.from_pretrained(path) and AutoTokenizer.from_pretrained(path) load",
                "not a transformers model's directory (it has no config.json)");

        private final List<String> markers;
        private final String what;
        private final String loader;
        private final String without;

        Kind(List<String> markers, String what, String loader, String without) {
            this.markers = markers;
            this.what = what;
            this.loader = loader;
            this.without = without;
        }
    }

    private final ResourceLoader resources;
    private final Map<String, Path> copies = new ConcurrentHashMap<>();
    private final List<Path> temps = new CopyOnWriteArrayList<>();

    ModelFiles(ResourceLoader resources) {
        this.resources = resources;
    }

    private Resource resource(String location) {
        // A plain path is a file, relative to the working directory (a context's getResource reads it from the class path).
        return location.startsWith(ResourceLoader.CLASSPATH_URL_PREFIX) || location.startsWith("file:")
                ? resources.getResource(location) : new FileSystemResource(location);
    }

    /**
     * {@return the file at {@code location}, copied to a temp directory when inside a jar}
     *
     * @param property the property that names it, for the error
     * @param location a path, a {@code file:} URL or a {@code classpath:} resource
     * @param model    the model's name, in the temp directory's
     */
    Path file(String property, String location, String model) {
        Resource r = resource(location);
        if (!r.exists()) {
            throw new ModelPropertyException(property, location, "no such file",
                    "Set " + property + " to an existing file (a path, or classpath:name for a resource).");
        }
        try {
            if (r.isFile()) {
                return r.getFile().toPath();
            }
            return copies.computeIfAbsent(location, l -> {
                Path copy = temp(model).resolve(Objects.requireNonNullElse(r.getFilename(), "model"));
                try (InputStream in = r.getInputStream()) {
                    Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
                } catch (IOException e) {
                    throw new UncheckedIOException("copying " + property + " = " + location, e);
                }
                return copy;
            });
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + property + " = " + location, e);
        }
    }

    /**
     * {@return the model directory at {@code location}, copied to a temp directory when inside a jar}
     *
     * @param property the property that names it, for the error
     * @param location a path, a {@code file:} URL or a {@code classpath:} resource
     * @param model    the model's name, in the temp directory's
     * @param kind     what the directory must have
     */
    Path directory(String property, String location, String model, Kind kind) {
        String base = location;
        while (base.endsWith("/") && base.length() > 1) {
            base = base.substring(0, base.length() - 1);
        }
        // Found by a file in it: a jar need not list its directories as entries of their own.
        Resource marker = null;
        for (String m : kind.markers) {
            Resource r = resource(base + "/" + m);
            if (r.exists()) {
                marker = r;
                break;
            }
        }
        String fix = "Set " + property + " to " + kind.what + " (a path, or classpath:name for one on the class path), "
                + kind.loader + ".";
        try {
            if (marker == null) {
                Resource dir = resource(base);
                String problem = !dir.exists() ? "no such directory"
                        : dir.isFile() && Files.isRegularFile(dir.getFile().toPath()) ? "a file, not a directory"
                        : kind.without;
                throw new ModelPropertyException(property, location, problem, fix);
            }
            if (marker.isFile()) {
                return marker.getFile().toPath().getParent();
            }
            Resource found = marker;
            return copies.computeIfAbsent(location, l -> copyFromJar(property, location, found, model, fix));
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + property + " = " + location, e);
        }
    }

    /** Copies the jar's entries beside {@code marker}, and those below them, to a temp directory. */
    private Path copyFromJar(String property, String location, Resource marker, String model, String fix) {
        try {
            URLConnection c = marker.getURL().openConnection();
            if (!(c instanceof JarURLConnection jar)) {
                throw new ModelPropertyException(property, location, "neither a directory nor inside a jar (" + marker.getURL() + ")", fix);
            }
            jar.setUseCaches(false); // a JarFile of our own, to close: the class loader's cached one stays open
            String markerEntry = jar.getEntryName();
            String prefix = markerEntry.substring(0, markerEntry.lastIndexOf('/') + 1);
            Path dir = temp(model);
            try (JarFile files = jar.getJarFile()) {
                for (JarEntry e : Collections.list(files.entries())) {
                    if (e.isDirectory() || !e.getName().startsWith(prefix)) {
                        continue;
                    }
                    Path to = dir.resolve(e.getName().substring(prefix.length())).normalize();
                    if (!to.startsWith(dir)) { // an entry named with ../ stays out of the copy
                        continue;
                    }
                    Files.createDirectories(to.getParent());
                    try (InputStream in = files.getInputStream(e)) {
                        Files.copy(in, to, StandardCopyOption.REPLACE_EXISTING);
                    }
                }
            }
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException("copying " + property + " = " + location + " out of its jar", e);
        }
    }

    private Path temp(String model) {
        try {
            Path dir = Files.createTempDirectory("dlpack4j-" + model.replaceAll("[^A-Za-z0-9._-]", "_") + "-");
            temps.add(dir);
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException("making a temp directory for model " + model, e);
        }
    }

    /** Deletes the copies, best effort: what cannot be deleted now is left to the system's temp cleaning. */
    @Override
    public void close() {
        for (Path dir : temps) {
            try (Stream<Path> all = Files.walk(dir)) {
                for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            } catch (IOException | UncheckedIOException e) {
                // left behind; the next temp directory has another name
            }
        }
        temps.clear();
        copies.clear();
    }
}
