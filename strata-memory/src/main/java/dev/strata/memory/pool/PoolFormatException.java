package dev.strata.memory.pool;

import java.nio.file.Path;

/**
 * A pool file or device could not be attached: bad magic, unsupported major version, a layout that
 * disagrees with itself or with the caller, a file too small, or a creator that never finished.
 * The message names the file and the values found.
 */
public final class PoolFormatException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;

    public PoolFormatException(Path file, String problem) {
        super("pool file " + file + ": " + problem);
        this.file = file;
    }

    /** The file whose contents were refused. */
    public Path file() {
        return file;
    }
}
