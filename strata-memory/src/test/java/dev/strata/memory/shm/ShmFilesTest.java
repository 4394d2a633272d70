package dev.strata.memory.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ShmFilesTest {
    private final Path path = Path.of("/dev/shm", "strata-shmfiles-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    @org.junit.jupiter.api.io.TempDir
    Path dir;

    @AfterEach
    void clean() throws IOException {
        Files.deleteIfExists(path);
        Files.deleteIfExists(ShmFiles.lockPathOf(path));
        Files.deleteIfExists(ShmFiles.tempBeside(path));
    }

    @Test
    void filesAreCreatedExclusivelyOwnerOnlyAndReadBackZeroBeyondTheirEnd() throws IOException {
        ShmFiles.createExclusive(path);
        assertThat(mode(path)).isEqualTo("rw-------");
        assertThatThrownBy(() -> ShmFiles.createExclusive(path)).isInstanceOf(FileAlreadyExistsException.class);

        Files.write(path, new byte[] {1, 0, 0, 0, 0, 0, 0, 0, 2});
        ShmFiles.Found found = ShmFiles.readHeader(path, 64);
        assertThat(found.fileSize()).isEqualTo(9);
        assertThat(found.header().getLong(0)).isEqualTo(1);
        assertThat(found.header().get(8)).isEqualTo((byte) 2);
        assertThat(found.header().getLong(16)).isZero();
    }

    @Test
    void theLockFileIsOwnerOnlyAndASecondOwnerIsRefused() throws IOException {
        FileChannel lock = ShmFiles.lockOwnership(path, lockPath -> "busy: " + lockPath);
        try {
            assertThat(mode(ShmFiles.lockPathOf(path))).isEqualTo("rw-------");
            assertThatThrownBy(() -> ShmFiles.lockOwnership(path, lockPath -> "busy: " + lockPath))
                    .isInstanceOf(IllegalStateException.class).hasMessage("busy: " + ShmFiles.lockPathOf(path));
        } finally {
            ShmFiles.closeQuietly(lock);
        }
        ShmFiles.closeQuietly(ShmFiles.lockOwnership(path, lockPath -> "busy: " + lockPath)); // free again
    }

    @Test
    void onlyTheFileThisProcessCreatedIsRemoved() throws IOException {
        Path temp = ShmFiles.tempBeside(path);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mine = ShmFiles.createMapped(temp, 4096, arena);
            assertThat(mode(temp)).isEqualTo("rw-------");
            assertThat(mine.get(ValueLayout.JAVA_LONG, 4088)).isZero();
            Object key = ShmFiles.fileKey(temp);
            Files.move(temp, path, StandardCopyOption.ATOMIC_MOVE);

            // a successor renames its own file over the path: ours is no longer there to remove
            Path successors = path.resolveSibling(path.getFileName() + ".successor");
            Files.write(successors, new byte[] {7});
            Files.move(successors, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            assertThat(ShmFiles.removeIfSame(path, key)).isFalse();
            assertThat(Files.readAllBytes(path)).containsExactly(7);

            Object successorsKey = ShmFiles.fileKey(path);
            assertThat(ShmFiles.removeIfSame(path, successorsKey)).isTrue();
            assertThat(path).doesNotExist();
            assertThat(ShmFiles.removeIfSame(path, successorsKey)).isFalse(); // already gone
        }
    }

    private static String mode(Path p) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
    }

    /**
     * {@code strata inspect pool} on a FIFO used to block in the open until a writer came; it
     * is refused at once, naming the path and what it is.
     */
    @Test
    void aFifoIsRefusedAtOnceInsteadOfBlockingTheReader() throws Exception {
        Path fifo = dir.resolve("not-a-pool.pool");
        Process mk = new ProcessBuilder("mkfifo", fifo.toString()).redirectErrorStream(true).start();
        org.junit.jupiter.api.Assumptions.assumeTrue(mk.waitFor() == 0, "mkfifo is not available here");
        java.util.concurrent.CompletableFuture<Throwable> inspected = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                dev.strata.memory.pool.PoolInspector.inspect(fifo);
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        });
        try {
            Throwable failure = inspected.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(failure).isNotNull();
            String message = failure.getMessage() + (failure.getCause() == null ? "" : " " + failure.getCause().getMessage());
            assertThat(message).contains(fifo.toString()).contains("a FIFO");
            assertThatThrownBy(() -> ShmFiles.readHeader(fifo, 64)).isInstanceOf(IOException.class).hasMessageContaining("a FIFO");
            assertThatThrownBy(() -> ShmFiles.readHeader(dir, 64)).isInstanceOf(IOException.class).hasMessageContaining("a directory");
        } finally {
            if (!inspected.isDone()) { // release a reader blocked in the open, so the test thread pool does not keep it
                try (var w = java.nio.channels.FileChannel.open(fifo, java.nio.file.StandardOpenOption.WRITE)) {
                    w.force(false);
                }
            }
        }
    }
}
