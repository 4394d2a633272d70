package dev.strata.node.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
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
 * Runs the JCStress tests of the RPC slot handoff ({@link SlotHandoffStress}) in a separate
 * JVM and fails if any of them has a FORBIDDEN outcome or an error.
 *
 * <p>The regular suite runs JCStress's {@code quick} mode restricted to one JVM configuration
 * ({@code -jvmArgs -XX:+UseParallelGC}, unified compilation): about 15 s on 2 cores and over a
 * million samples per test. The full run, every JVM flag combination and split compilation, is
 * chosen with {@code -Dstrata.jcstress.mode=default} (or {@code tough}, {@code stress}), e.g.
 * {@code bin/test -pl strata-node -am -Dtest=SlotHandoffStressTest -Dstrata.jcstress.mode=default}.
 */
class SlotHandoffStressTest {

    @Test
    void slotHandoffHasNoForbiddenOutcomes(@TempDir Path dir) throws Exception {
        String mode = System.getProperty("strata.jcstress.mode", "quick");
        List<String> command = new ArrayList<>(List.of(ChildJvm.javaBinary(),
                "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"),
                "org.openjdk.jcstress.Main",
                "-t", "dev\\.strata\\.node\\.rpc\\.SlotHandoffStress",
                "-m", mode,
                "-r", dir.resolve("results").toString(),
                "-jvmArgsPrepend", "--enable-native-access=ALL-UNNAMED"));
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
        assertThat(process.exitValue()).as("jcstress exit status; output in " + log + File.separator).isZero();
        // JCStress 0.16 prints progress lines "(Results: N planned; P passed, F failed, S soft errs, H hard errs)"
        // and ends with a "RUN RESULTS" summary listing failing and erroring tests under these headings.
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
        assertThat(out).as("both tests were found in the generated test list")
                .contains("[OK] dev.strata.node.rpc.SlotHandoffStress.Request",
                        "[OK] dev.strata.node.rpc.SlotHandoffStress.StaleResponse");
        assertThat(out).doesNotContain("[FAILED]");
    }
}
