package dev.strata.memory.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.Sizes;
import dev.strata.memory.TierIoException;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.memory.shm.ShmHeader;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class PoolInspectorTest {
    static final long CHUNK = 64 * Sizes.KiB;

    private static String lineStartingWith(BufferedReader in, String prefix) throws Exception {
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.startsWith(prefix)) {
                return line;
            }
        }
        throw new AssertionError("child ended without a line starting with '" + prefix + "'");
    }

    @Test
    void reportsHeaderProcessesAndOccupancyOfALivePoolWithoutJoiningIt() throws Exception {
        try (PoolFiles files = new PoolFiles("inspect", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(16 * Sizes.MiB).chunkSize(CHUNK)
                     .sweepInterval(Duration.ZERO).conclude())) {
            SplittableRandom random = new SplittableRandom(5);
            byte[] payload = PoolTierTest.randomBytes(random, 100_003);
            long published = pool.allocate(payload.length);
            pool.write(published, MemorySegment.ofArray(payload));
            long writing = pool.allocate(3 * CHUNK + 17); // a live writer: allocated, not published

            long bigSize = 2 * Sizes.MiB + 999;
            Process child = ChildJvm.start(PoolChild.class, "slowwrite", files.name, files.joined(), Long.toString(bigSize));
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            long childSmall = Long.parseLong(lineStartingWith(out, "published ").split(" ")[1]);
            long childBig = Long.parseLong(lineStartingWith(out, "writing ").split(" ")[1]);
            long childPid = child.pid();
            child.destroyForcibly();
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
            int attachedBefore = pool.attachedProcesses();

            PoolInspector.Report r = PoolTier.inspect(files.paths.getFirst());

            assertThat(r.magic()).isEqualTo(PoolHeader.MAGIC);
            assertThat(r.major()).isEqualTo(PoolHeader.MAJOR);
            assertThat(r.minor()).isEqualTo(PoolHeader.MINOR);
            assertThat(r.name()).isEqualTo(files.name);
            assertThat(r.layout()).isEqualTo(pool.layout());
            assertThat(r.creatorPid()).isEqualTo(ProcessHandle.current().pid());
            assertThat(r.creatorAlive()).isTrue();
            assertThat(r.creatorHeartbeatAgeMillis()).isBetween(-1_000L, 60_000L);
            assertThat(r.processes()).hasSize(2);
            assertThat(r.processes()).anySatisfy(p -> {
                assertThat(p.slot()).isEqualTo(pool.processSlot());
                assertThat(p.pid()).isEqualTo(ProcessHandle.current().pid());
                assertThat(p.alive()).isTrue();
                assertThat(p.state()).isEqualTo("ACTIVE");
            });
            assertThat(r.processes()).anySatisfy(p -> {
                assertThat(p.pid()).isEqualTo(childPid);
                assertThat(p.alive()).as("the killed process is reported dead").isFalse();
                assertThat(p.state()).isEqualTo("ACTIVE");
                assertThat(p.heartbeatAgeMillis()).isNotNegative();
            });

            PoolInspector.Occupancy o = r.occupancy();
            long publishedChunks = (pool.allocationSize(published) + pool.allocationSize(childSmall)) / CHUNK;
            long writingChunks = (pool.allocationSize(writing) + pool.allocationSize(childBig)) / CHUNK;
            assertThat(o.publishedChunks()).isEqualTo(publishedChunks);
            assertThat(o.writingChunks()).isEqualTo(writingChunks);
            assertThat(o.freeingChunks()).isZero();
            assertThat(o.claimingChunks()).isZero();
            assertThat(o.freeChunks()).isEqualTo(pool.layout().chunkCount() - publishedChunks - writingChunks);
            assertThat(o.usedBytes()).isEqualTo(pool.usedByScan()).isEqualTo((publishedChunks + writingChunks) * CHUNK);
            assertThat(o.countedUsedBytes()).isEqualTo(pool.used());
            assertThat(o.objectsPublished()).isEqualTo(2);
            assertThat(o.allocationsWriting()).isEqualTo(2);

            // inspecting changed nothing: the dead process still holds its slot and its allocation
            assertThat(pool.attachedProcesses()).isEqualTo(attachedBefore).isEqualTo(2);
            long childBigSize = pool.allocationSize(childBig);
            assertThat(pool.reclaimDead()).isEqualTo(childBigSize);
            PoolInspector.Occupancy after = PoolTier.inspect(files.paths.getFirst()).occupancy();
            assertThat(after.writingChunks()).isEqualTo(pool.allocationSize(writing) / CHUNK);
            assertThat(after.usedBytes()).isEqualTo(after.countedUsedBytes()).isEqualTo(pool.used());
        }
    }

    @Test
    void leavesEveryByteOfAClosedPoolAsItWas() throws Exception {
        try (PoolFiles files = new PoolFiles("inspect-ro", 1)) {
            byte[] payload = PoolTierTest.randomBytes(new SplittableRandom(9), 7_777);
            try (PoolTier pool = PoolTier.open(files.config().capacity(2 * Sizes.MiB).chunkSize(16 * Sizes.KiB).conclude())) {
                long h = pool.allocate(payload.length);
                pool.write(h, MemorySegment.ofArray(payload));
            }
            byte[] before = Files.readAllBytes(files.paths.getFirst());
            PoolInspector.Report r = PoolInspector.inspect(files.paths);
            assertThat(Files.readAllBytes(files.paths.getFirst())).as("file unchanged").isEqualTo(before);
            assertThat(r.processes()).isEmpty();
            assertThat(r.creatorAlive()).as("the creator is this process, still running").isTrue();
            assertThat(r.occupancy().objectsPublished()).isEqualTo(1);
            assertThat(r.occupancy().publishedChunks()).isEqualTo(1);
            assertThat(r.occupancy().allocationsWriting()).isZero();
        }
    }

    @Test
    void refusesWhatOpenRefusesWithTheSameMessages() throws Exception {
        try (PoolFiles files = new PoolFiles("inspect-bad", 1)) {
            assertThatThrownBy(() -> PoolTier.inspect(files.paths.getFirst()))
                    .isInstanceOf(TierIoException.class).hasMessageContaining(files.paths.getFirst().toString());

            PoolTier.open(files.config().capacity(2 * Sizes.MiB).conclude()).close();
            try (FileChannel ch = FileChannel.open(files.paths.getFirst(), StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, (7L << 32) | 3).rewind(),
                        ShmHeader.VERSION_OFFSET);
            }
            assertThatThrownBy(() -> PoolTier.inspect(files.paths.getFirst()))
                    .isInstanceOf(ShmFormatException.class)
                    .hasMessageContaining(files.paths.getFirst().toString()).hasMessageContaining("field version = 7.3").hasMessageContaining("major version 7 is not supported");

            byte[] junk = new byte[(int) (4 * Sizes.MiB)];
            new SplittableRandom(1).nextBytes(junk);
            Files.write(files.paths.getFirst(), junk);
            assertThatThrownBy(() -> PoolTier.inspect(files.paths.getFirst()))
                    .isInstanceOf(ShmFormatException.class).hasMessageContaining("field magic = ");

            Files.write(files.paths.getFirst(), new byte[8192]);
            assertThatThrownBy(() -> PoolTier.inspect(files.paths.getFirst()))
                    .isInstanceOf(ShmFormatException.class).hasMessageContaining("no initialised pool");
        }
    }
}
