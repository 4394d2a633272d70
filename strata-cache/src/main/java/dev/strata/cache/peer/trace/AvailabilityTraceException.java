package dev.strata.cache.peer.trace;

/**
 * A peer availability trace that cannot be read as given: a line that is not JSON, a missing or
 * mistyped field, a negative {@code free}, a {@code t} earlier than the line before. The message
 * names the source (file or stream), the 1-based line number, the field and the offending value,
 * e.g. {@code availability trace peers.jsonl line 7: field 'free' is -4096: must be >= 0 bytes}.
 *
 * <p>A bad-input error (it extends {@link IllegalArgumentException}, which the {@code strata}
 * command reports as one line with status 2). Samples read before the bad line stay valid. Immutable;
 * any thread.
 */
public final class AvailabilityTraceException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String source; // the file name, or "(stream)"
    private final long line; // 1-based line number; -1 when the problem is not on one line
    private final String field; // the offending field, or null when the line as a whole is bad
    private final String value; // the offending value as written, or null when absent

    public AvailabilityTraceException(String source, long line, String field, String value, String problem) {
        super(describe(source, line, field, value) + problem);
        this.source = source;
        this.line = line;
        this.field = field;
        this.value = value;
    }

    public AvailabilityTraceException(String source, long line, String field, String value, String problem, Throwable cause) {
        this(source, line, field, value, problem);
        initCause(cause);
    }

    private static String describe(String source, long line, String field, String value) {
        StringBuilder b = new StringBuilder("availability trace ").append(source);
        if (line >= 0) {
            b.append(" line ").append(line);
        }
        b.append(": ");
        if (field != null) {
            b.append("field '").append(field).append("' ");
            b.append(value == null ? "is missing" : "is " + value).append(": ");
        }
        return b.toString();
    }

    /** The trace's file name, or {@code (stream)}. */
    public String source() {
        return source;
    }

    /** 1-based line number of the problem; -1 when it is not on one line. */
    public long line() {
        return line;
    }

    /** The offending field ({@code t}, {@code peer} or {@code free}), or null when the line as a whole is bad. */
    public String field() {
        return field;
    }

    /** The offending value as written in the line, or null when the field is missing. */
    public String value() {
        return value;
    }
}
