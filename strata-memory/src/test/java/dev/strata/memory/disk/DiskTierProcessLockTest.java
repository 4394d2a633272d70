package dev.strata.memory.disk;

import dev.strata.memory.TierIoException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A second process cannot take over the data files of a tier that is open: its open fails
 * naming the lock, and the first tier's objects are untouched. Once the first tier is closed, the
 * other process can open the directory.
 */
class DiskTierProcessLockTest {

    /** Run in a child JVM: tries to open a tier named "shared" in args[0] and prints the outcome. */
    public static void main(String[] args) {
        try (DiskTier tier = DiskTier.open(DiskTierOptions.in(Path.of(args[0]), 1L << 20).name("shared"))) {
            System.out.println("OPENED " + tier.ioMode());
        } catch (TierIoException e) {
            System.out.println("REFUSED " + e.getMessage());
        }
    }

    private static String runChild(Path dir) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process p = new ProcessBuilder(List.of(java, "-cp", System.getProperty("java.class.path"),
                "--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector",
                DiskTierProcessLockTest.class.getName(), dir.toString()))
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return out;
    }

    @Test
    void anotherProcessCannotOpenTheFilesOfAnOpenTier(@TempDir Path dir) throws Exception {
        byte[] data = DiskTestSupport.randomBytes(33_333, new SplittableRandom(71));
        try (DiskTier tier = DiskTier.open(DiskTierOptions.in(dir, 1L << 20).name("shared"))) {
            long h = tier.allocate(data.length);
            tier.write(h, MemorySegment.ofArray(data));

            String child = runChild(dir);
            assertThat(child).contains("REFUSED").contains("locked");

            byte[] back = new byte[data.length];
            assertThat(tier.read(h, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(data);
        }
        assertThat(runChild(dir)).contains("OPENED");
    }
}
