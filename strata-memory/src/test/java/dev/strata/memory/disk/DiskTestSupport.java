package dev.strata.memory.disk;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;

/** Shared pieces of the DISK tier tests: seeded data, log capture, mounts. Test threads only. */
final class DiskTestSupport {

    private DiskTestSupport() {
    }

    /** Fills {@code segment} with seeded random bytes, never all zero (the first byte is forced non-zero). */
    static void fillRandom(MemorySegment segment, SplittableRandom random) {
        long size = segment.byteSize();
        long i = 0;
        for (; i + Long.BYTES <= size; i += Long.BYTES) {
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong());
        }
        for (; i < size; i++) {
            segment.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
        }
        if (size > 0 && segment.get(ValueLayout.JAVA_BYTE, 0) == 0) {
            segment.set(ValueLayout.JAVA_BYTE, 0, (byte) 0x5A);
        }
    }

    /** Random bytes of the given length on the heap, never all zero. */
    static byte[] randomBytes(int length, SplittableRandom random) {
        byte[] bytes = new byte[length];
        fillRandom(MemorySegment.ofArray(bytes), random);
        return bytes;
    }

    /** Records what DiskTier logs, through java.util.logging (the default System.Logger backend). */
    static final class LogCapture implements AutoCloseable {
        private final Logger logger = Logger.getLogger(DiskTier.class.getName());
        private final List<LogRecord> records = new CopyOnWriteArrayList<>();
        private final Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                records.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };

        LogCapture() {
            handler.setLevel(Level.ALL);
            logger.addHandler(handler);
        }

        List<String> warnings() {
            List<String> out = new ArrayList<>();
            for (LogRecord r : records) {
                if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                    out.add(r.getMessage());
                }
            }
            return out;
        }

        @Override
        public void close() {
            logger.removeHandler(handler);
        }
    }

    /**
     * Mounts a file system of {@code type} on {@code dir} with {@code options} (may be null).
     *
     * @return null on success, else why it failed (so the caller can skip with that message)
     */
    static String mount(String type, String options, Path dir) {
        List<String> command = new ArrayList<>(List.of("mount", "-t", type));
        if (options != null) {
            command.add("-o");
            command.add(options);
        }
        command.add(type);
        command.add(dir.toString());
        return run(command);
    }

    /** Unmounts {@code dir} (lazily if it is busy); returns null on success, else why not. */
    static String unmount(Path dir) {
        String problem = run(List.of("umount", dir.toString()));
        if (problem != null) {
            problem = run(List.of("umount", "-l", dir.toString()));
        }
        return problem;
    }

    /** Runs {@code command}; returns null if it exits 0, else what went wrong with its output. */
    static String run(List<String> command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output = new String(p.getInputStream().readAllBytes()).trim();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return String.join(" ", command) + " did not finish in 30 s";
            }
            return p.exitValue() == 0 ? null : String.join(" ", command) + " exited " + p.exitValue() + ": " + output;
        } catch (IOException e) {
            return String.join(" ", command) + " could not run: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return String.join(" ", command) + " interrupted";
        }
    }

    /** A fresh directory under /dev/shm (a tmpfs), or null if there is none. */
    static Path shmDirectory(String prefix) throws IOException {
        Path shm = Path.of("/dev/shm");
        if (!Files.isDirectory(shm) || !Files.isWritable(shm)) {
            return null;
        }
        return Files.createTempDirectory(shm, prefix);
    }

    /** Deletes {@code dir} and everything below it, if it exists. */
    static void deleteTree(Path dir) throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
