package dev.strata.node.index;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the JCStress tests of the block index ({@link LeaseTableStress}) in a separate JVM and
 * fails on any FORBIDDEN outcome or error. The regular suite runs JCStress's {@code quick} mode
 * with one JVM configuration; {@code -Dstrata.jcstress.mode=default} (or {@code tough}) runs
 * every configuration, e.g.
 * {@code bin/test -pl strata-node -am -Dtest=LeaseTableStressTest -Dstrata.jcstress.mode=default
 * -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class LeaseTableStressTest {

    @Test
    void pinProtocolHasNoForbiddenOutcomes(@TempDir Path dir) throws Exception {
        String mode = System.getProperty("strata.jcstress.mode", "quick");
        String java = System.getProperty("strata.java");
        if (java == null || java.isBlank()) {
            java = ProcessHandle.current().info().command().orElse("java");
        }
        List<String> command = new ArrayList<>(List.of(java, "--add-modules=jdk.incubator.vector",
                "-cp", System.getProperty("java.class.path"), "org.openjdk.jcstress.Main",
                "-t", "dev\\.strata\\.node\\.index\\.LeaseTableStress",
                "-m", mode, "-r", dir.resolve("results").toString(),
                "-jvmArgsPrepend", "--add-modules=jdk.incubator.vector"));
        boolean regularSuite = "quick".equals(mode);
        if (regularSuite) {
            command.addAll(List.of("-jvmArgs", "-XX:+UseParallelGC", "-sc", "false"));
        }
        Path log = dir.resolve("jcstress.out");
        Process process = new ProcessBuilder(command).directory(dir.toFile())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        boolean finished = process.waitFor(regularSuite ? 5 : 180, TimeUnit.MINUTES);
        if (!finished) {
            process.destroyForcibly();
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        System.out.println(out);
        assertThat(finished).as("jcstress finished").isTrue();
        assertThat(process.exitValue()).as("jcstress exit status").isZero();
        Matcher m = Pattern.compile("\\(Results: (\\d+) planned; (\\d+) passed, (\\d+) failed, (\\d+) soft errs, (\\d+) hard errs\\)")
                .matcher(out);
        String last = null;
        while (m.find()) {
            last = m.group();
            assertThat(Integer.parseInt(m.group(3)) + Integer.parseInt(m.group(4)) + Integer.parseInt(m.group(5)))
                    .as("failures and errors in " + m.group()).isZero();
        }
        assertThat(last).as("jcstress results line").isNotNull();
        Matcher fin = Pattern.compile("(\\d+) planned; (\\d+) passed").matcher(last);
        assertThat(fin.find()).isTrue();
        assertThat(Integer.parseInt(fin.group(2))).as(last).isEqualTo(Integer.parseInt(fin.group(1))).isPositive();
        assertThat(out).contains("RUN RESULTS:", "Failed tests: No matches.", "Error tests: No matches.");
        assertThat(out).contains("[OK] dev.strata.node.index.LeaseTableStress.PinAgainstEviction",
                "[OK] dev.strata.node.index.LeaseTableStress.EntryPublication");
        assertThat(out).doesNotContain("[FAILED]");
    }
}
