package dev.strata.cache.routing;

import java.nio.file.Path;

/**
 * A routing trace that cannot be read or written as given: a file that is not a trace (magic), an
 * unsupported major version, a truncated or corrupt record, an expert id out of range, a top-k
 * that disagrees with the header. The message names the file (or "(stream)"), the byte offset or
 * line, the record number and the offending value.
 *
 * <p>Records read before the one that failed stay valid: a reader delivers every record up to the
 * first bad one before it throws. Immutable; any thread.
 */
public final class RoutingTraceException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Path file; // null when the trace is not a file
    private final long offset; // byte offset in a binary trace, line number in a text trace; -1 if unknown
    private final long record; // 0-based record number, -1 for the header or unknown

    public RoutingTraceException(Path file, long offset, long record, String problem) {
        super(describe(file, offset, record) + problem);
        this.file = file;
        this.offset = offset;
        this.record = record;
    }

    public RoutingTraceException(Path file, long offset, long record, String problem, Throwable cause) {
        this(file, offset, record, problem);
        initCause(cause);
    }

    private static String describe(Path file, long offset, long record) {
        StringBuilder b = new StringBuilder("routing trace ").append(file == null ? "(stream)" : file.toString());
        if (offset >= 0) {
            b.append(" at offset ").append(offset);
        }
        if (record >= 0) {
            b.append(", record ").append(record);
        }
        return b.append(": ").toString();
    }

    /** The trace file, or null for a trace read from a stream. */
    public Path file() {
        return file;
    }

    /** Byte offset (binary) or 1-based line number (text) of the problem; -1 when unknown. */
    public long offset() {
        return offset;
    }

    /** 0-based number of the record that failed; -1 for the header. */
    public long record() {
        return record;
    }
}
