package dev.strata.node.peer;

import java.nio.file.Path;

/**
 * A lending file could not be opened: bad magic, unsupported major version, an unfinished header,
 * a geometry that disagrees with itself, or a truncated file. The message names the file and the
 * values found.
 */
public final class LendingFormatException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;

    public LendingFormatException(Path file, String problem) {
        super("lending file " + file + ": " + problem);
        this.file = file;
    }

    /** The file whose contents were refused. */
    public Path file() {
        return file;
    }
}
