package dev.strata.memory.shm;

import java.nio.file.Path;

/**
 * A shared-memory file (pool file, block index, RPC region, lending file) could not be attached
 * because of what it holds: bad magic, another kind of file, a header never published, an
 * unsupported major version, a layout that disagrees with itself or with the caller, or a file too
 * small. The message names the kind of file, its path, the field and the value found, then the
 * problem: {@code "<kind> <path>: field <field> = <value>: <problem>"}.
 */
public final class ShmFormatException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final String field;
    private final String value;

    /**
     * @param kind    what the file should be, for people ("pool file", "rpc region", ...)
     * @param file    the file whose contents were refused
     * @param field   the header field (or "file size") that is wrong
     * @param value   the value found, as it should be printed
     * @param problem what is wrong with it and, where known, what was expected
     */
    public ShmFormatException(String kind, Path file, String field, String value, String problem) {
        super(kind + " " + file + ": field " + field + " = " + value + ": " + problem);
        this.file = file;
        this.field = field;
        this.value = value;
    }

    /** The file whose contents were refused. */
    public Path file() {
        return file;
    }

    /** The field found wrong. */
    public String field() {
        return field;
    }

    /** The value found in that field. */
    public String value() {
        return value;
    }
}
