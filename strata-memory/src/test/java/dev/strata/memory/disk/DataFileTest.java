package dev.strata.memory.disk;

import dev.strata.memory.posix.Libc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The vectored transfer loop of {@link DataFile} against real files: short transfers continue
 * from where they stopped, EINTR is retried, the end of the file and errno values are reported
 * with names, and an interrupted thread's transfer fails without touching the file.
 */
class DataFileTest {

    /**
     * The real {@code pwritev}/{@code preadv}, made to behave like a busy kernel: every odd call
     * answers EINTR without moving anything, every even call moves at most {@code cap} bytes (the
     * iovec array is trimmed before the real call, so the kernel really returns a short count).
     */
    private static final class ShortAndInterrupted implements DataFile.VectoredCall {
        private final long cap;  // bytes per real call at most
        int calls;               // calls seen
        int realCalls;           // calls passed to the kernel

        ShortAndInterrupted(long cap) {
            this.cap = cap;
        }

        @Override
        public long call(boolean write, int fd, MemorySegment scratch, int count, long position) {
            if (calls++ % 2 == 0) {
                return -Libc.EINTR;
            }
            long left = cap;
            int k = 0;
            while (k < count && left > 0) {
                long len = scratch.get(ValueLayout.JAVA_LONG, k * 16L + 8);
                if (len > left) {
                    scratch.set(ValueLayout.JAVA_LONG, k * 16L + 8, left);
                    len = left;
                }
                left -= len;
                k++;
            }
            realCalls++;
            return PosixFileIo.vectored(write, fd, scratch, k, position);
        }
    }

    private static MemorySegment random(Arena arena, long size, long align, SplittableRandom r) {
        MemorySegment s = arena.allocate(size, align);
        DiskTestSupport.fillRandom(s, r);
        return s;
    }

    private static MemorySegment scratch(Arena arena) {
        return arena.allocate(PosixFileIo.SCRATCH_BYTES, PosixFileIo.SCRATCH_ALIGNMENT);
    }

    @Test
    void shortTransfersAndEintrContinueUntilEveryByteMoved(@TempDir Path dir) throws IOException {
        SplittableRandom r = new SplittableRandom(7);
        ShortAndInterrupted kernel = new ShortAndInterrupted(1_000);
        Path path = dir.resolve("short.data");
        try (Arena arena = Arena.ofConfined(); DataFile file = DataFile.open(path, false, kernel)) {
            MemorySegment a = random(arena, 3_001, 1, r);
            MemorySegment b = random(arena, 10_007, 1, r);
            MemorySegment c = random(arena, 777, 1, r);
            long at = 5_003;
            file.transfer(true, scratch(arena), at, a, b, c);
            long total = a.byteSize() + b.byteSize() + c.byteSize();
            assertThat(kernel.realCalls).as("short writes resumed").isEqualTo((int) ((total + 999) / 1_000));
            assertThat(kernel.calls).as("every EINTR retried").isEqualTo(2 * kernel.realCalls);

            byte[] onDisk = Files.readAllBytes(path);
            assertThat(onDisk).hasSize((int) (at + total));
            MemorySegment disk = MemorySegment.ofArray(onDisk);
            assertThat(disk.asSlice(at, a.byteSize()).mismatch(a)).isEqualTo(-1);
            assertThat(disk.asSlice(at + a.byteSize(), b.byteSize()).mismatch(b)).isEqualTo(-1);
            assertThat(disk.asSlice(at + a.byteSize() + b.byteSize(), c.byteSize()).mismatch(c)).isEqualTo(-1);

            MemorySegment a2 = arena.allocate(a.byteSize());
            MemorySegment b2 = arena.allocate(b.byteSize());
            MemorySegment c2 = arena.allocate(c.byteSize());
            file.transfer(false, scratch(arena), at, a2, b2, c2);
            assertThat(a2.mismatch(a)).isEqualTo(-1);
            assertThat(b2.mismatch(b)).isEqualTo(-1);
            assertThat(c2.mismatch(c)).isEqualTo(-1);
            assertThat(file.ioCalls()).isEqualTo(kernel.calls);
        }
    }

    @Test
    void shortDirectTransfersResumeOnBlockBoundaries(@TempDir Path dir) throws IOException {
        FileStoreInfo info = FileStoreInfo.probe(dir);
        assumeTrue(info.directIoEffective(), "O_DIRECT does not work here: " + info.describe());
        long block = info.directIoAlignment();
        SplittableRandom r = new SplittableRandom(8);
        ShortAndInterrupted kernel = new ShortAndInterrupted(2 * block);
        try (Arena arena = Arena.ofConfined(); DataFile file = DataFile.open(dir.resolve("direct.data"), true, kernel)) {
            MemorySegment header = random(arena, block, block, r);
            MemorySegment payload = random(arena, 5 * block, block, r);
            MemorySegment tail = random(arena, block, block, r);
            file.transfer(true, scratch(arena), 3 * block, header, payload, tail);
            assertThat(kernel.realCalls).isEqualTo(4);
            MemorySegment back = arena.allocate(7 * block, block);
            file.transfer(false, scratch(arena), 3 * block, back);
            assertThat(back.asSlice(0, block).mismatch(header)).isEqualTo(-1);
            assertThat(back.asSlice(block, 5 * block).mismatch(payload)).isEqualTo(-1);
            assertThat(back.asSlice(6 * block, block).mismatch(tail)).isEqualTo(-1);
        }
    }

    @Test
    void aReadPastTheEndIsShortThenEof(@TempDir Path dir) throws IOException {
        SplittableRandom r = new SplittableRandom(9);
        try (Arena arena = Arena.ofConfined(); DataFile file = DataFile.open(dir.resolve("eof.data"), false)) {
            MemorySegment data = random(arena, 10_003, 1, r);
            file.transfer(true, scratch(arena), 0, data);
            MemorySegment back = arena.allocate(20_011);
            long before = file.ioCalls();
            assertThatThrownBy(() -> file.transfer(false, scratch(arena), 0, back))
                    .isInstanceOf(EOFException.class)
                    .hasMessageContaining("ends at 10003").hasMessageContaining("10008 more bytes");
            assertThat(file.ioCalls() - before).as("a short read, then the end").isEqualTo(2);
            assertThat(back.asSlice(0, data.byteSize()).mismatch(data)).isEqualTo(-1);
        }
    }

    @Test
    void aRefusedCallNamesTheErrnoTheCallAndTheFile(@TempDir Path dir) throws IOException {
        FileStoreInfo info = FileStoreInfo.probe(dir);
        assumeTrue(info.directIoEffective(), "O_DIRECT does not work here: " + info.describe());
        long block = info.directIoAlignment();
        Path path = dir.resolve("einval.data");
        try (Arena arena = Arena.ofConfined(); DataFile file = DataFile.open(path, true)) {
            MemorySegment misaligned = arena.allocate(2 * block, block).asSlice(1, block); // O_DIRECT refuses it
            DiskTestSupport.fillRandom(misaligned, new SplittableRandom(10));
            assertThatThrownBy(() -> file.transfer(true, scratch(arena), block, misaligned))
                    .isInstanceOfSatisfying(PosixFileIo.ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(22))
                    .hasMessageContaining("pwritev of " + block + " bytes").hasMessageContaining("at offset " + block)
                    .hasMessageContaining(path.toString()).hasMessageContaining("O_DIRECT")
                    .hasMessageContaining("EINVAL (Invalid argument)");
        }
    }

    @Test
    void anErrnoFromTheKernelIsReportedNotRetried(@TempDir Path dir) throws IOException {
        int[] calls = {0};
        DataFile.VectoredCall failing = (write, fd, scratch, count, position) -> {
            calls[0]++;
            return -5; // EIO
        };
        try (Arena arena = Arena.ofConfined(); DataFile file = DataFile.open(dir.resolve("eio.data"), false, failing)) {
            MemorySegment data = random(arena, 4_099, 1, new SplittableRandom(11));
            assertThatThrownBy(() -> file.transfer(false, scratch(arena), 8_192, data))
                    .isInstanceOfSatisfying(PosixFileIo.ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(5))
                    .hasMessageContaining("preadv of 4099 bytes").hasMessageContaining("EIO (Input/output error)");
            assertThat(calls[0]).isEqualTo(1);
        }
    }

    @Test
    void errnoNames() {
        assertThat(Libc.describe(Libc.ENOSPC)).isEqualTo("ENOSPC (No space left on device)");
        assertThat(Libc.describe(Libc.EINTR)).isEqualTo("EINTR (Interrupted system call)");
        assertThat(Libc.describe(122)).isEqualTo("EDQUOT (Disk quota exceeded)");
        assertThat(Libc.describe(4_321)).isEqualTo("errno 4321");
    }

    @Test
    void openingAMissingDirectoryNamesTheErrno(@TempDir Path dir) {
        assertThatThrownBy(() -> PosixFileIo.open(dir.resolve("absent").resolve("x.data"), Libc.O_RDWR))
                .isInstanceOf(IOException.class).hasMessageContaining("absent")
                .hasMessageContaining("ENOENT (No such file or directory)");
    }

    @Test
    void anInterruptedThreadsTransferFailsBeforeTouchingTheFile(@TempDir Path dir) throws IOException {
        try (Arena arena = Arena.ofConfined(); DataFile file = DataFile.open(dir.resolve("int.data"), false)) {
            MemorySegment data = random(arena, 1_003, 1, new SplittableRandom(12));
            Thread.currentThread().interrupt();
            try {
                assertThatThrownBy(() -> file.transfer(true, scratch(arena), 0, data))
                        .isInstanceOf(InterruptedIOException.class);
                assertThat(Thread.currentThread().isInterrupted()).isTrue();
            } finally {
                Thread.interrupted();
            }
            assertThat(file.ioCalls()).isZero();
            file.transfer(true, scratch(arena), 0, data); // the file is still open and usable
            MemorySegment back = arena.allocate(data.byteSize());
            file.transfer(false, scratch(arena), 0, back);
            assertThat(back.mismatch(data)).isEqualTo(-1);
        }
    }
}
