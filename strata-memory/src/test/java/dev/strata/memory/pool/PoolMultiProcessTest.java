package dev.strata.memory.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.memory.Allocator;
import dev.strata.memory.Sizes;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Several real JVMs ({@link PoolChild}) sharing one pool. */
class PoolMultiProcessTest {

    private static PoolConfig.Builder parentConfig(PoolFiles files, long capacity, long chunk) {
        return files.config().capacity(capacity).chunkSize(chunk).sweepInterval(Duration.ZERO);
    }

    private static String readLineStartingWith(BufferedReader in, String prefix) throws Exception {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith(prefix)) {
                return line;
            }
        }
        throw new AssertionError("child ended without printing a line starting with '" + prefix + "'");
    }

    private static List<String> finish(Process p) throws Exception {
        List<String> lines = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))
                .lines().toList();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("child finished").isTrue();
        assertThat(p.exitValue()).as("child exit status, output " + lines).isZero();
        return lines;
    }

    private record Held(int process, long handle, long size, long from, long until) {
    }

    @Test
    void concurrentAllocatorsInSeveralProcessesNeverHoldOverlappingSpace(@TempDir Path dir) throws Exception {
        try (PoolFiles files = new PoolFiles("churn", 2);
             PoolTier pool = PoolTier.open(parentConfig(files, 3 * Sizes.MiB, 16 * Sizes.KiB).conclude())) {
            int children = 3;
            List<Process> processes = new ArrayList<>();
            for (int c = 0; c < children; c++) {
                processes.add(ChildJvm.start(PoolChild.class, "churn", files.name, files.joined(),
                        Long.toString(77 + c), "1500", dir.resolve("held-" + c + ".log").toString()));
            }
            for (Process p : processes) {
                assertThat(finish(p)).anyMatch(l -> l.startsWith("ok"));
            }
            List<Held> held = new ArrayList<>();
            for (int c = 0; c < children; c++) {
                for (String line : Files.readAllLines(dir.resolve("held-" + c + ".log"))) {
                    String[] f = line.split(" ");
                    held.add(new Held(c, Long.parseLong(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3])));
                }
            }
            assertThat(held).hasSizeGreaterThan(children * 300);
            int overlappingInTime = 0;
            for (int i = 0; i < held.size(); i++) {
                Held a = held.get(i);
                for (int j = i + 1; j < held.size(); j++) {
                    Held b = held.get(j);
                    boolean timeOverlap = a.from() < b.until() && b.from() < a.until();
                    if (!timeOverlap) {
                        continue;
                    }
                    overlappingInTime++;
                    boolean spaceOverlap = a.handle() < b.handle() + b.size() && b.handle() < a.handle() + a.size();
                    assertThat(spaceOverlap).as("%s and %s held the same bytes at the same time", a, b).isFalse();
                }
            }
            assertThat(overlappingInTime).as("processes really ran concurrently").isPositive();
            assertThat(pool.used()).isZero();
            assertThat(pool.usedByScan()).isZero();
            assertThat(pool.allocationCountByScan()).isZero();
            assertThat(pool.stats().allocations()).isZero();
            assertThat(pool.attachedProcesses()).isEqualTo(1);
        }
    }

    @Test
    void objectsPublishedByOneProcessAreReadByAnother(@TempDir Path dir) throws Exception {
        try (PoolFiles files = new PoolFiles("xread", 1);
             PoolTier pool = PoolTier.open(parentConfig(files, 24 * Sizes.MiB, 64 * Sizes.KiB).conclude())) {
            Process writer = ChildJvm.start(PoolChild.class, "write", files.name, files.joined(), "4242", "40");
            List<String> written = finish(writer);
            assertThat(written).contains("done");
            Path spec = dir.resolve("objects.txt");
            Files.write(spec, written);
            // the writer has exited: its published objects stay
            Process reader = ChildJvm.start(PoolChild.class, "read", files.name, files.joined(), spec.toString());
            assertThat(finish(reader)).contains("verified 40");
            for (String line : written) {
                String[] f = line.split(" ");
                if (f[0].equals("obj")) {
                    long h = Long.parseLong(f[1]);
                    byte[] back = new byte[Integer.parseInt(f[2])];
                    assertThat(pool.read(h, MemorySegment.ofArray(back))).isTrue();
                    assertThat(back).isEqualTo(PoolChild.bytes(Long.parseLong(f[3]), back.length));
                    pool.free(h);
                }
            }
            assertThat(pool.used()).isZero();
        }
    }

    @Test
    void aWriterKilledMidWriteNeverExposesItsObjectAndItsSpaceIsReclaimed() throws Exception {
        try (PoolFiles files = new PoolFiles("kill", 1);
             PoolTier pool = PoolTier.open(parentConfig(files, 16 * Sizes.MiB, 64 * Sizes.KiB).conclude())) {
            long big = 8 * Sizes.MiB + 4321;
            Process writer = ChildJvm.start(PoolChild.class, "slowwrite", files.name, files.joined(), Long.toString(big));
            BufferedReader out = new BufferedReader(new InputStreamReader(writer.getInputStream(), StandardCharsets.UTF_8));
            String[] small = readLineStartingWith(out, "published ").split(" ");
            long smallHandle = Long.parseLong(small[1]);
            long h = Long.parseLong(readLineStartingWith(out, "writing ").split(" ")[1]);
            byte[] dst = new byte[(int) big];
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(400);
            int reads = 0;
            while (System.nanoTime() < deadline) {
                assertThat(pool.read(h, MemorySegment.ofArray(dst))).as("object being written is not readable").isFalse();
                assertThat(pool.publishedLength(h)).isEqualTo(-1);
                reads++;
            }
            assertThat(reads).isPositive();
            writer.destroyForcibly();
            assertThat(writer.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(pool.read(h, MemorySegment.ofArray(dst))).isFalse();
            long smallSize = pool.allocationSize(smallHandle);
            assertThat(pool.used()).as("the dead writer's space is still held until reclaimed")
                    .isEqualTo(smallSize + Sizes.alignUp(big, 64 * Sizes.KiB));
            // fewer chunks than the big object needs are free, so allocating it again only
            // succeeds because the allocation failure reclaims the dead writer's space
            assertThat(pool.available()).isLessThan(big);
            long all = pool.allocate(big);
            assertThat(all).isNotEqualTo(Allocator.FULL);
            assertThat(pool.attachedProcesses()).as("the dead writer's slot is free again").isEqualTo(1);
            assertThat(pool.used()).as("counter matches a scan after reclaim").isEqualTo(pool.usedByScan())
                    .isEqualTo(smallSize + pool.allocationSize(all));
            assertThat(pool.stats().allocations()).isEqualTo(pool.allocationCountByScan()).isEqualTo(2);
            assertThat(pool.read(h, MemorySegment.ofArray(dst))).isFalse();
            pool.free(all);
            assertThat(pool.used()).as("capacity accounting restored").isEqualTo(smallSize);
            // the dead writer's published object is durable
            byte[] back = new byte[Integer.parseInt(small[2])];
            assertThat(pool.read(smallHandle, MemorySegment.ofArray(back))).isTrue();
            assertThat(back).isEqualTo(PoolChild.bytes(Long.parseLong(small[3]), back.length));
            pool.free(smallHandle);
            assertThat(pool.used()).isZero();
            assertThat(pool.reclaimDead()).isZero();
        }
    }

    @Test
    void thePeriodicSweepReclaimsAKilledWriterWithoutAnAllocationFailure() throws Exception {
        try (PoolFiles files = new PoolFiles("sweep", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(16 * Sizes.MiB)
                     .heartbeatInterval(Duration.ofMillis(20)).sweepInterval(Duration.ofMillis(100)).conclude())) {
            Process writer = ChildJvm.start(PoolChild.class, "slowwrite", files.name, files.joined(), Long.toString(3 * Sizes.MiB));
            BufferedReader out = new BufferedReader(new InputStreamReader(writer.getInputStream(), StandardCharsets.UTF_8));
            long smallHandle = Long.parseLong(readLineStartingWith(out, "published ").split(" ")[1]);
            readLineStartingWith(out, "writing ");
            writer.destroyForcibly();
            assertThat(writer.waitFor(30, TimeUnit.SECONDS)).isTrue();
            long smallSize = pool.allocationSize(smallHandle);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            // the sweep reclaims the dead writer's chunks, then frees its process slot: wait for both
            while ((pool.used() != smallSize || pool.attachedProcesses() != 1) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(pool.used()).isEqualTo(smallSize).isEqualTo(pool.usedByScan());
            assertThat(pool.stats().allocations()).isEqualTo(pool.allocationCountByScan()).isEqualTo(1);
            assertThat(pool.attachedProcesses()).isEqualTo(1);
            pool.free(smallHandle);
        }
    }
}
