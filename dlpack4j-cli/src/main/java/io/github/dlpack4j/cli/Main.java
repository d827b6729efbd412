package io.github.dlpack4j.cli;

import io.github.dlpack4j.DlpackVersion;
import io.github.dlpack4j.python.PythonException;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code dlpack4j} command: {@code demo}, {@code doctor}, {@code bench}. Every failure is one line
 * on standard error and a non-zero exit code, never a stack trace.
 */
@Command(name = "dlpack4j", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        subcommands = {DemoCommand.class, DoctorCommand.class, BenchCommand.class, CommandLine.HelpCommand.class},
        description = "DLPack for the JVM: zero-copy tensors between Java and NumPy, PyTorch, JAX and native code.",
        footerHeading = "%nExit codes:%n",
        footer = {"  0  success", "  1  a failure, or a check of doctor that failed (each says what and the fix)",
                "  2  a command line that could not be understood"})
public final class Main {
    /** Exit code of a failure: the command printed one line saying what failed. */
    static final int FAILED = 1;
    /** Exit code of a command line that could not be parsed. */
    static final int USAGE = 2;

    private Main() {}

    /**
     * Runs the command and exits with its code.
     *
     * @param args the command line, e.g. {@code doctor --json}
     */
    public static void main(String[] args) {
        System.setProperty("java.awt.headless", "true"); // charts are drawn without a display
        System.exit(run(System.out, System.err, args));
    }

    /** Runs the command with the given streams and returns its exit code (tests call this in-process). */
    static int run(PrintStream out, PrintStream err, String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setOut(new PrintWriter(out, true, StandardCharsets.UTF_8));
        cli.setErr(new PrintWriter(err, true, StandardCharsets.UTF_8));
        cli.setParameterExceptionHandler((e, a) -> {
            String command = e.getCommandLine().getCommandName();
            e.getCommandLine().getErr().printf("%s: %s (see: %s --help)%n", qualifiedName(e.getCommandLine()),
                    e.getMessage(), command.equals("dlpack4j") ? "dlpack4j" : "dlpack4j " + command);
            return USAGE;
        });
        cli.setExecutionExceptionHandler((e, c, parsed) -> {
            c.getErr().printf("%s: %s%n", qualifiedName(c), oneLine(e));
            return FAILED;
        });
        return cli.execute(args);
    }

    private static String qualifiedName(CommandLine c) {
        return c.getParent() == null ? c.getCommandName() : "dlpack4j " + c.getCommandName();
    }

    /** What went wrong in one line: the message, with the Python type for Python errors. */
    static String oneLine(Throwable e) {
        String message = e instanceof PythonException p ? p.pythonType() + ": " + p.pythonMessage() : e.getMessage();
        if (message == null || message.isBlank()) {
            message = e.getClass().getSimpleName();
        }
        return message.strip().replace('\n', ' ');
    }

    /** {@code --version}: this build, the DLPack version it speaks, and the JVM. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"dlpack4j " + projectVersion() + " (DLPack " + dlpack() + ")",
                    "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"};
        }
    }

    /** The DLPack version this build speaks, e.g. {@code 1.3}. */
    static String dlpack() {
        return DlpackVersion.CURRENT.toString();
    }

    static String projectVersion() {
        try (InputStream in = Main.class.getResourceAsStream("version.txt")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
