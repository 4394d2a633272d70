package dev.strata.engine.synth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.engine.model.ModelDirectory;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo model's first use: two processes that make it at once leave one complete directory and
 * no temporary ones; a directory under the model's name that is not complete is refused, never
 * served; a temporary directory left by a dead writer is removed.
 */
class DemoModelTest {
    @TempDir
    Path root;

    /** A child JVM: {@code DemoModelTest$Child <cache root>} makes (or finds) the demo model and prints its path. */
    public static final class Child {
        public static void main(String[] args) {
            System.out.println("model " + DemoModel.ensure(Path.of(args[0]), System.err));
        }
    }

    private Process start() throws Exception {
        String java = System.getProperty("strata.java", Path.of(System.getProperty("java.home"), "bin", "java").toString());
        return new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), Child.class.getName(), root.toString())
                .redirectErrorStream(true).start();
    }

    @Test
    void concurrentFirstUseFromTwoProcessesLeavesOneCompleteModel() throws Exception {
        Path dead = root.resolve("." + DemoModel.directoryName() + ".tmp-" + Integer.MAX_VALUE + "-1");
        Files.createDirectories(dead);
        Files.writeString(dead.resolve("config.json"), "{ half"); // a writer that died mid-way
        List<Process> children = List.of(start(), start());
        List<String> outputs = new ArrayList<>();
        for (Process p : children) {
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("child finished").isTrue();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            outputs.add(out);
            assertThat(p.exitValue()).as(out).isZero();
        }
        Path target = root.resolve(DemoModel.directoryName());
        for (String out : outputs) {
            assertThat(out).contains("model " + target);
        }
        assertThat(DemoModel.isComplete(target)).isTrue();
        try (Stream<Path> entries = Files.list(root)) {
            assertThat(entries.map(p -> p.getFileName().toString()).toList()).containsExactly(DemoModel.directoryName());
        }
        try (ModelDirectory m = ModelDirectory.open(target)) {
            assertThat(m.config().numExperts()).isEqualTo(DemoModel.SPEC.experts());
            assertThat(m.config().numExperts()).isGreaterThan(8); // more experts than the demo's cap
        }
        // a third use finds it and writes nothing
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        assertThat(DemoModel.ensure(root, new PrintStream(progress, true, StandardCharsets.UTF_8))).isEqualTo(target);
        assertThat(progress.size()).isZero();
    }

    @Test
    void anIncompleteDirectoryUnderTheModelsNameIsRefused() throws Exception {
        Path target = root.resolve(DemoModel.directoryName());
        Files.createDirectories(target);
        Files.writeString(target.resolve("config.json"), "{}");
        assertThat(DemoModel.isComplete(target)).isFalse();
        assertThatThrownBy(() -> DemoModel.ensure(root, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(target.toString()).hasMessageContaining("not a complete model");
        Files.writeString(target.resolve(DemoModel.MARKER), "strata demo model, spec version 0\n");
        assertThat(DemoModel.isComplete(target)).as("a marker of another spec").isFalse();
    }
}
