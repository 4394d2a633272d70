package dev.strata.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs the JCStress tests of one class in a separate JVM and fails the calling test if any of
 * them has a FORBIDDEN outcome, an error, or did not run.
 *
 * <p>The regular suite runs JCStress's {@code quick} mode restricted to one JVM configuration
 * ({@code -jvmArgs -XX:+UseParallelGC}, unified compilation): over a million samples per test in
 * seconds. {@code -Dstrata.jcstress.mode=default} (or {@code tough}, {@code stress}) chooses the
 * full run over every JVM flag combination and split compilation, e.g.
 * {@code bin/test -pl strata-memory -Dtest=PublishProtocolStressTest -Dstrata.jcstress.mode=default}.
 *
 * <p>Threads: call from the test thread; it blocks until the JCStress JVM ends.
 */
public final class JcstressRun {
    private static final Pattern PROGRESS = Pattern.compile(
            "\\(Results: (\\d+) planned; (\\d+) passed, (\\d+) failed, (\\d+) soft errs, (\\d+) hard errs\\)");

    private JcstressRun() {
    }

    /**
     * Runs every JCStress test of {@code stressClass} and asserts that each of
     * {@code expectedTests} (simple names of its nested test classes) ran and passed.
     *
     * @param dir      a scratch directory for results and the log
     * @param jvmFlags flags for the JCStress JVM and every JVM it forks (modules, native access)
     */
    public static void assertNoForbiddenOutcomes(Path dir, Class<?> stressClass, List<String> jvmFlags,
            String... expectedTests) throws IOException, InterruptedException {
        String mode = System.getProperty("strata.jcstress.mode", "quick");
        List<String> command = new ArrayList<>();
        command.add(javaBinary());
        command.addAll(jvmFlags);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), "org.openjdk.jcstress.Main",
                "-t", stressClass.getName().replace(".", "\\."), "-m", mode, "-r", dir.resolve("results").toString()));
        if (!jvmFlags.isEmpty()) {
            command.addAll(List.of("-jvmArgsPrepend", String.join(" ", jvmFlags)));
        }
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
        Matcher m = PROGRESS.matcher(out);
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
        for (String test : expectedTests) {
            assertThat(out).as(test + " was found in the generated test list")
                    .contains("[OK] " + stressClass.getName() + "." + test);
        }
        assertThat(out).doesNotContain("[FAILED]");
    }

    /** The java binary: {@code strata.java} (set by surefire), else the one running this JVM. */
    private static String javaBinary() {
        String configured = System.getProperty("strata.java");
        if (configured != null && !configured.isBlank()) {
            return configured;
        }
        return ProcessHandle.current().info().command().orElse("java");
    }
}
