package dev.strata.memory.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.strata.memory.Sizes;
import dev.strata.memory.TierIoException;
import dev.strata.memory.host.HostTier;
import dev.strata.memory.transfer.BatchResult;
import dev.strata.memory.transfer.NonTemporalCopy;
import dev.strata.memory.transfer.Transfer;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.memory.transfer.TransferResult;
import dev.strata.memory.transfer.TransferStatus;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A pool's space is reserved when it is created (a file system without room is refused at once,
 * naming the path, the size and the free space), and a pool file truncated under a running
 * process faults no thread: the access fails with a {@link TierIoException}, the tier stays
 * faulted without touching its mapping again, and close completes.
 */
class PoolFaultTest {
    private static final long MiB = Sizes.MiB;

    @Test
    void creatingAPoolLargerThanTheFreeSpaceOfItsFileSystemFailsAtOnceNamingPathSizeAndFreeSpace() throws Exception {
        try (PoolFiles files = new PoolFiles("nospace", 1)) {
            Path path = files.paths.getFirst();
            long chunk = 2 * MiB;
            long usable = Files.getFileStore(path.getParent()).getUsableSpace();
            long capacity = Sizes.alignUp(usable + 1024 * MiB, chunk); // more than the file system has free
            PoolConfig config = files.config().capacity(capacity).chunkSize(chunk).conclude();
            assertThatThrownBy(() -> PoolTier.open(config))
                    .isInstanceOf(TierIoException.class)
                    .hasMessageContaining(path.toString())
                    .hasMessageContaining("(" + PoolHeader.Layout.of(chunk, capacity / chunk, config.processSlots(), 1,
                            config.rootRegionSize()).perDeviceSize() + " bytes)")
                    .hasMessageContaining("free")
                    .hasMessageContaining("tiers.pool.capacity");
            assertThat(path).as("the half-created pool file is removed again").doesNotExist();
        }
    }

    @Test
    void aCreatedPoolFileHasItsSpaceAllocatedNotSparse() throws Exception {
        try (PoolFiles files = new PoolFiles("reserved", 1);
             PoolTier pool = PoolTier.open(files.config().capacity(16 * MiB).conclude())) {
            Path path = files.paths.getFirst();
            long size = Files.size(path);
            assertThat(size).isEqualTo(pool.layout().totalSize());
            assertThat(allocatedBytes(path)).as("blocks allocated behind the file").isGreaterThanOrEqualTo(size);
        }
    }

    @Test
    void aTruncatedPoolFileFaultsNoThreadAndTheTierClosesWithinBoundedTime() throws Exception {
        try (PoolFiles files = new PoolFiles("truncated", 1)) {
            PoolTier pool = PoolTier.open(files.config().capacity(8 * MiB).chunkSize(64 * 1024)
                    .heartbeatInterval(Duration.ofMillis(20)).conclude());
            SplittableRandom random = new SplittableRandom(7);
            byte[] bytes = PoolTierTest.randomBytes(random, 200_000);
            long handle = pool.allocate(bytes.length);
            pool.write(handle, MemorySegment.ofArray(bytes));
            MemorySegment back = MemorySegment.ofArray(new byte[bytes.length]);
            for (int i = 0; i < 60; i++) { // the copy paths run warm before the fault, as in a serving process
                pool.write(handle, MemorySegment.ofArray(bytes));
                assertThat(pool.read(handle, back)).isTrue();
            }

            truncate(files.paths.getFirst(), 0); // the whole file, tables included, is gone under the mapping

            assertFaultedThenClosed(pool, files.paths.getFirst(), () -> pool.read(handle, back),
                    () -> pool.write(pool.allocate(4096), MemorySegment.ofArray(new byte[4096])), pool::stats);
        }
    }

    @ParameterizedTest(name = "the first access after the truncation: {0}")
    @ValueSource(strings = {"scatter read", "gather write"})
    void aTruncatedPoolFileUnderTheStreamingLoopIsTheSameFaultAndTheProcessLives(String first) throws Exception {
        assumeTrue(NonTemporalCopy.guardsMappings(), "no guarded streaming loop on this machine");
        try (PoolFiles files = new PoolFiles("streamed", 1); Arena arena = Arena.ofShared()) {
            PoolTier pool = PoolTier.open(files.config().capacity(8 * MiB).chunkSize(64 * 1024)
                    .heartbeatInterval(Duration.ofMillis(20)).conclude());
            // a KV block as layer pieces of whole 256-byte passes in private memory: the streaming loop's case
            List<MemorySegment> pieces = new ArrayList<>();
            List<MemorySegment> back = new ArrayList<>();
            SplittableRandom random = new SplittableRandom(11);
            for (int i = 0; i < 8; i++) {
                MemorySegment piece = arena.allocate(20 * 1024, 64);
                MemorySegment.copy(PoolTierTest.randomBytes(random, 20 * 1024), 0, piece, ValueLayout.JAVA_BYTE, 0, 20 * 1024);
                pieces.add(piece);
                back.add(arena.allocate(20 * 1024, 64));
            }
            long handle = pool.allocate(8 * 20 * 1024);
            long streamed = NonTemporalCopy.bytesStreamed();
            for (int i = 0; i < 60; i++) {
                pool.gatherWrite(handle, pieces);
                assertThat(pool.scatterRead(handle, back)).isTrue();
            }
            assertThat(NonTemporalCopy.bytesStreamed() - streamed).as("the pool's copies streamed")
                    .isGreaterThanOrEqualTo(60L * 2 * 8 * 20 * 1024);
            for (int i = 0; i < pieces.size(); i++) {
                assertThat(back.get(i).mismatch(pieces.get(i))).as("piece %d read back", i).isEqualTo(-1);
            }

            // the tables stay, and the block's first page (the handle is its offset in the data area):
            // the fault is the loop's, part way through the block
            truncate(files.paths.getFirst(), dataOffset(files.paths.getFirst()) + handle + 4096);

            ThrowingCallable read = () -> pool.scatterRead(handle, back);
            ThrowingCallable write = () -> pool.gatherWrite(handle, pieces);
            boolean readFirst = first.equals("scatter read");
            Throwable fault = assertFaultedThenClosed(pool, files.paths.getFirst(), readFirst ? read : write, readFirst ? write : read);
            assertThat(fault).rootCause().as("the fault the guard caught in the loop").hasMessageContaining("a streaming copy met a page");
        }
    }

    /**
     * A batch of the transfer engine whose copies into or out of the pool run many to a call, over a
     * pool file truncated part way through its first object: every copy of the run fails with the
     * tier's fault (none is reported not found, none completes), the process lives, and the tier
     * is faulted and closes.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"into the pool", "out of the pool"})
    void aTruncatedPoolFileUnderARunOfCopiesFailsEveryCopyOfTheRun(String direction) throws Exception {
        assumeTrue(NonTemporalCopy.guardsMappings(), "no guarded streaming loop on this machine");
        int n = 16;
        long size = 16 * 1024;
        try (PoolFiles files = new PoolFiles("run", 1);
             HostTier host = HostTier.create("run-host", 4 * MiB);
             TransferEngine engine = new TransferEngine()) {
            PoolTier pool = PoolTier.open(files.config().capacity(4 * MiB).chunkSize(16 * 1024)
                    .heartbeatInterval(Duration.ofMillis(20)).conclude());
            long[] hosted = new long[n];
            long[] pooled = new long[n];
            SplittableRandom random = new SplittableRandom(5);
            for (int i = 0; i < n; i++) {
                hosted[i] = host.allocate(size);
                host.write(hosted[i], MemorySegment.ofArray(PoolTierTest.randomBytes(random, (int) size)));
                pooled[i] = pool.allocate(size);
                pool.write(pooled[i], host.segment(hosted[i], 0, size));
            }
            long first = java.util.Arrays.stream(pooled).min().orElseThrow();
            truncate(files.paths.getFirst(), dataOffset(files.paths.getFirst()) + first + 4096); // tables and one page stay

            boolean into = direction.equals("into the pool");
            List<Transfer> batch = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                batch.add(into ? Transfer.copy(host, hosted[i], pool, pooled[i], size) : Transfer.copy(pool, pooled[i], host, hosted[i], size));
            }
            BatchResult result = engine.submitBatch(batch).get(30, TimeUnit.SECONDS);

            assertThat(result.results()).extracting(TransferResult::status).containsOnly(TransferStatus.FAILED);
            assertThat(result.firstFailure()).cause().isInstanceOf(TierIoException.class)
                    .hasMessageContaining(files.paths.getFirst().toString()).hasMessageContaining("truncated");
            assertThat(pool.fault()).isNotNull();
            assertTimeoutPreemptively(Duration.ofSeconds(20), pool::close);
        }
    }

    @Test
    void aFaultThatCompiledCodeMeetsIsThrownInsideTheTierNotAfterIt() throws Exception {
        try (PoolFiles files = new PoolFiles("compiled", 1)) {
            PoolTier pool = PoolTier.open(files.config().capacity(8 * MiB).heartbeatInterval(Duration.ofHours(1)).conclude());
            long sum = 0;
            for (int i = 0; i < 200_000; i++) { // compiled: the JDK then throws a fault at the next safepoint poll
                sum += pool.used();
            }
            assertThat(sum).isZero();
            truncate(files.paths.getFirst(), 0);
            // not an InternalError thrown here, after the call returned: the tier's own fault, from inside it
            assertFaultedThenClosed(pool, files.paths.getFirst(), pool::used, pool::stats);
        }
    }

    @Test
    void aTruncationMetPartWayThroughACompiledReadIsTheFaultNotACorruptObject() throws Exception {
        try (PoolFiles files = new PoolFiles("midread", 1)) {
            PoolTier pool = PoolTier.open(files.config().capacity(8 * MiB).chunkSize(64 * 1024)
                    .heartbeatInterval(Duration.ofHours(1)).conclude());
            byte[] bytes = PoolTierTest.randomBytes(new SplittableRandom(3), 200_000); // heap parts: the stepped copy
            long handle = pool.allocate(bytes.length);
            pool.write(handle, MemorySegment.ofArray(bytes));
            MemorySegment back = MemorySegment.ofArray(new byte[bytes.length]);
            for (int i = 0; i < 3_000; i++) { // compiled: a fault in the copy is thrown at a later safepoint poll
                assertThat(pool.read(handle, back)).isTrue();
            }
            truncate(files.paths.getFirst(), dataOffset(files.paths.getFirst()) + handle + 4096); // tables and a page stay
            assertFaultedThenClosed(pool, files.paths.getFirst(), () -> pool.read(handle, back), pool::stats);
        }
    }

    @Test
    void metricsThatMeetATruncatedHeaderFirstGetTheFaultNotAnInternalError() throws Exception {
        try (PoolFiles files = new PoolFiles("statsfirst", 1)) {
            PoolTier pool = PoolTier.open(files.config().capacity(8 * MiB).heartbeatInterval(Duration.ofHours(1)).conclude());
            truncate(files.paths.getFirst(), 0);
            assertThatThrownBy(pool::stats).isInstanceOf(TierIoException.class).hasMessageContaining("truncated");
            assertThat(pool.fault()).isNotNull();
            assertThatThrownBy(pool::used).isInstanceOf(TierIoException.class);
            assertTimeoutPreemptively(Duration.ofSeconds(20), pool::close);
        }
    }

    @Test
    void aFaultRecordedByACallerThatCopiesItselfStopsEveryLaterAccess() throws Exception {
        try (PoolFiles files = new PoolFiles("recorded", 1)) {
            PoolTier pool = PoolTier.open(files.config().capacity(8 * MiB).conclude());
            long handle = pool.allocate(1 << 20);
            truncate(files.paths.getFirst(), 64 * 1024);
            MemorySegment view = pool.segment(handle, 0, 1 << 20);
            Throwable fault = null;
            try {
                view.fill((byte) 1); // a caller's own copy into the mapping
            } catch (InternalError e) {
                fault = e;
            }
            assertThat(fault).as("the JDK reports the SIGBUS").isNotNull();
            assertThat(PoolTier.isMappingFault(fault)).isTrue();
            assertThat(PoolTier.isMappingFault(new InternalError("something else"))).isFalse();
            TierIoException reported = pool.recordFault(fault);
            assertThat(reported).hasMessageContaining(files.paths.getFirst().toString()).hasRootCause(fault);
            assertThatThrownBy(() -> pool.allocate(4096)).isInstanceOf(TierIoException.class);
            assertTimeoutPreemptively(Duration.ofSeconds(20), pool::close);
        }
    }

    /**
     * Asserts that {@code faulting}, the first access after {@code file} was truncated, fails with
     * the tier's fault naming the file, that the tier is marked faulted and refuses {@code later}
     * without touching its mapping, and that it still closes within bounded time; returns the fault.
     */
    private static Throwable assertFaultedThenClosed(PoolTier pool, Path file, ThrowingCallable faulting, ThrowingCallable... later) {
        Throwable fault = catchThrowable(faulting);
        assertThat(fault).isInstanceOf(TierIoException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("truncated");
        assertThat(pool.fault()).isNotNull();
        for (ThrowingCallable call : later) {
            assertThatThrownBy(call).as("a faulted tier refuses without touching its mapping").isInstanceOf(TierIoException.class);
        }
        assertTimeoutPreemptively(Duration.ofSeconds(20), pool::close);
        return fault;
    }

    /** The offset of the data area in the pool file at {@code path}, as its header records it. */
    private static long dataOffset(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            java.nio.ByteBuffer word = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder());
            ch.read(word, PoolHeader.DATA_OFFSET_OFFSET);
            return word.getLong(0);
        }
    }

    private static void truncate(Path path, long size) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE)) {
            ch.truncate(size);
        }
    }

    /** Bytes of storage allocated to {@code path} ({@code stat}'s blocks times their size). */
    private static long allocatedBytes(Path path) throws Exception {
        Process stat = new ProcessBuilder("stat", "-c", "%b %B", path.toString()).redirectErrorStream(true).start();
        String out = new String(stat.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertThat(stat.waitFor()).as(out).isZero();
        String[] parts = out.split(" ");
        return Long.parseLong(parts[0]) * Long.parseLong(parts[1]);
    }
}
