package io.github.dlpack4j.cli;

import java.io.PrintWriter;

/** A one-line progress bar on standard error, redrawn in place: {@code [#####.....]  5/10  label}. */
final class ProgressBar {
    private static final int WIDTH = 30;
    private final PrintWriter err;
    private final int total;
    private int done;
    private int lastLength;

    ProgressBar(PrintWriter err, int total) {
        this.err = err;
        this.total = total;
    }

    /** Shows that the step {@code label} starts. */
    void step(String label) {
        int filled = WIDTH * done / total;
        String line = "[" + "#".repeat(filled) + ".".repeat(WIDTH - filled) + "] " + String.format("%3d/%d  ", done, total) + label;
        err.print("\r" + line + " ".repeat(Math.max(0, lastLength - line.length())));
        err.flush();
        lastLength = line.length();
        done++;
    }

    /** Clears the bar. */
    void finish() {
        err.print("\r" + " ".repeat(lastLength) + "\r");
        err.flush();
    }
}
