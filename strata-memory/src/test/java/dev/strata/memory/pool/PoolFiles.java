package dev.strata.memory.pool;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/** Unique pool file names under /dev/shm for tests, removed again by {@link #close()}. */
final class PoolFiles implements AutoCloseable {
    private static final AtomicInteger COUNTER = new AtomicInteger();

    final String name;
    final List<Path> paths = new ArrayList<>();

    PoolFiles(String test, int devices) {
        name = "test-" + test + "-" + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet();
        for (int d = 0; d < devices; d++) {
            paths.add(Path.of("/dev/shm", "strata-" + name + (devices == 1 ? "" : "-dev" + d) + ".pool"));
        }
    }

    String joined() {
        return String.join(",", paths.stream().map(Path::toString).toList());
    }

    PoolConfig.Builder config() {
        return PoolConfig.builder(name).paths(paths);
    }

    @Override
    public void close() throws IOException {
        for (Path p : paths) {
            Files.deleteIfExists(p);
        }
    }
}
