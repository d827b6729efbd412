package io.github.dlpack4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CommandLineTest {
    @Test
    void everyCommandHasHelpThatNamesItsOptions() {
        assertThat(Cli.run("--help").out()).contains("demo", "doctor", "bench", "--version", "Exit codes");
        assertThat(Cli.run("demo", "--help").out()).contains("Usage: dlpack4j demo");
        assertThat(Cli.run("doctor", "--help").out()).contains("--python=EXE", "--json", "--module=M", "docs/doctor.schema.json");
        assertThat(Cli.run("bench", "--help").out()).contains("--quick", "--sizes=SIZE", "--chart=FILE", "--json");
        assertThat(Cli.run("help", "bench").out()).contains("Usage: dlpack4j bench");
    }

    @Test
    void versionNamesTheBuildTheDlpackVersionAndTheJvm() {
        Cli r = Cli.run("--version");
        assertThat(r.exitCode()).isZero();
        assertThat(r.out()).startsWith("dlpack4j " + Main.projectVersion() + " (DLPack 1.3)").contains("Java 25");
        assertThat(Main.projectVersion()).doesNotContain("${");
    }

    @Test
    void aCommandLineThatCannotBeParsedIsOneLineAndExitCode2() {
        Cli r = Cli.run("bench", "--sizes", "3");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err().strip()).doesNotContain("\n").contains("smaller than one float32").contains("dlpack4j bench --help");
        assertThat(Cli.run("frobnicate").err().strip()).doesNotContain("\n").contains("Unmatched argument");
    }

    @Test
    void aChartFileOfAnotherKindIsRefusedBeforeTheBenchRuns() {
        Cli r = Cli.run("bench", "--quick", "--chart", "chart.pdf");
        assertThat(r.exitCode()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("dlpack4j bench: --chart chart.pdf: the file name must end in .svg or .png");
    }
}
