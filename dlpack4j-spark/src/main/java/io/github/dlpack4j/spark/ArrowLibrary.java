package io.github.dlpack4j.spark;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.Set;
import java.util.jar.JarEntry;

import org.apache.arrow.dataset.jni.JniLoader;

/**
 * Loads Arrow's dataset library (arrow-dataset's JNI library, Arrow's C++ linked in: 76 MB) from a
 * copy unpacked once per version, instead of as arrow-dataset does it, which inflates it from its jar
 * into a new temporary file in every JVM that loads it (0.4-0.7 s of CPU each time, the driver's
 * and every executor's, and a file that an executor killed with SIGKILL leaves behind).
 *
 * <p>The copy lives in {@code java.io.tmpdir/dlpack4j-USER/}, a directory of this user's alone
 * (created {@code rwx------}; one that another user owns, or that others may write, is not used), and
 * is named by the jar entry's CRC-32 and size, so that another arrow-dataset version unpacks its own.
 * It is written to a temporary file and moved into place, so that JVMs starting together never
 * load half a file. After loading it, arrow-dataset's {@link JniLoader} is told the library is
 * loaded, as it would have been by its own load (its set of libraries left to load emptied, its
 * shutdown hook for S3 added), so that it never loads a second copy.
 *
 * <p>Anything unusual falls back to arrow-dataset's own load: a library that is not in a jar, an
 * architecture the jar has no library for, a class loader for arrow-dataset other than this
 * module's (a library belongs to the class loader of the class that loads it, and arrow-dataset's
 * native methods bind to theirs), a {@code JniLoader} whose fields are not what version 18.3 has, a
 * directory that cannot be made private.
 */
final class ArrowLibrary {
    private static final String NAME = "arrow_dataset_jni";

    private ArrowLibrary() {
    }

    /** Loads the library, from the kept copy where it can, else through arrow-dataset's own loader. */
    static void load() {
        if (!loadKeptCopy()) {
            JniLoader.get().ensureLoaded();
        }
    }

    /** {@return whether the library was loaded from the kept copy (and {@link JniLoader} told so)} */
    static boolean loadKeptCopy() {
        try {
            return loadKept();
        } catch (IOException | ReflectiveOperationException | RuntimeException e) {
            return false; // arrow-dataset's own load, which reports what stops it
        }
    }

    private static boolean loadKept() throws IOException, ReflectiveOperationException {
        String arch = switch (System.getProperty("os.arch", "").toLowerCase(Locale.ROOT)) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64" -> "aarch_64";
            default -> null;
        };
        ClassLoader arrow = JniLoader.class.getClassLoader();
        if (arch == null || arrow != ArrowLibrary.class.getClassLoader()) {
            return false;
        }
        JniLoader loader = JniLoader.get();
        Field remaining = JniLoader.class.getDeclaredField("librariesToLoad");
        remaining.setAccessible(true);
        Method s3 = JniLoader.class.getDeclaredMethod("ensureS3FinalizedOnShutdown");
        s3.setAccessible(true);
        if (!(remaining.get(loader) instanceof Set<?> libraries) || !libraries.equals(Set.of(NAME))) {
            return false; // loaded already, or not the JniLoader this was written for
        }
        URL url = arrow.getResource(NAME + "/" + arch + "/" + System.mapLibraryName(NAME));
        if (url == null || !"jar".equals(url.getProtocol())) {
            return false;
        }
        URLConnection connection = url.openConnection();
        if (!(connection instanceof JarURLConnection jar)) {
            return false;
        }
        connection.setUseCaches(false); // not the JDK's cached open jar, which another loader may share
        JarEntry entry = jar.getJarEntry();
        if (entry == null || entry.getSize() < 0 || entry.getCrc() < 0) {
            jar.getJarFile().close();
            return false;
        }
        Path dir = privateDirectory();
        if (dir == null) {
            jar.getJarFile().close();
            return false;
        }
        Path copy = dir.resolve(String.format(Locale.ROOT, "lib%s-%08x-%d.so", NAME, entry.getCrc(), entry.getSize()));
        if (!Files.isRegularFile(copy, LinkOption.NOFOLLOW_LINKS) || Files.size(copy) != entry.getSize()) {
            Path part = Files.createTempFile(dir, "lib" + NAME + "-", ".part");
            try (InputStream in = connection.getInputStream()) {
                Files.copy(in, part, StandardCopyOption.REPLACE_EXISTING);
                if (Files.size(part) != entry.getSize()) {
                    return false;
                }
                try {
                    Files.move(part, copy, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    return false;
                }
            } finally {
                Files.deleteIfExists(part);
            }
        } else {
            jar.getJarFile().close();
        }
        synchronized (loader) { // JniLoader's own lock, which its load holds
            if (!libraries.contains(NAME)) {
                return true; // loaded meanwhile by arrow-dataset itself
            }
            System.load(copy.toString()); // this class's loader, which is arrow-dataset's (checked above)
            libraries.remove(NAME);
        }
        s3.invoke(loader);
        return true;
    }

    /** {@return {@code java.io.tmpdir/dlpack4j-USER}, made {@code rwx------} if absent; null if it is not this user's alone} */
    private static Path privateDirectory() throws IOException {
        String user = System.getProperty("user.name", "").replaceAll("[^A-Za-z0-9._-]", "_");
        Path dir = Path.of(System.getProperty("java.io.tmpdir"), "dlpack4j-" + (user.isEmpty() ? "user" : user));
        Set<PosixFilePermission> owner = PosixFilePermissions.fromString("rwx------");
        try {
            Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(owner));
        } catch (java.nio.file.FileAlreadyExistsException e) {
            // made before, by this JVM's user or not: checked below
        } catch (UnsupportedOperationException e) {
            return null; // no POSIX permissions to make it private with
        }
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)
                || !Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS).getName().equals(System.getProperty("user.name"))
                || !Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS).equals(owner)) {
            return null;
        }
        return dir;
    }
}
