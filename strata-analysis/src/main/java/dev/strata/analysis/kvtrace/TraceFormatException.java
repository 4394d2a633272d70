package dev.strata.analysis.kvtrace;

import java.nio.file.Path;

/**
 * A trace file that cannot be read as a prefix trace: names the file, the line (1-based) and the
 * problem, e.g. {@code trace.jsonl:17: input_length -5 is negative}.
 *
 * <p>Immutable; any thread.
 */
public final class TraceFormatException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final long line; // 1-based; 0 when the problem is the file itself
    private final String problem;

    public TraceFormatException(Path file, long line, String problem) {
        super(line > 0 ? file + ":" + line + ": " + problem : file + ": " + problem);
        this.file = file;
        this.line = line;
        this.problem = problem;
    }

    /** The trace file. */
    public Path file() {
        return file;
    }

    /** The offending line, 1-based; 0 when the file as a whole is the problem. */
    public long line() {
        return line;
    }

    /** What is wrong, without the file and line. */
    public String problem() {
        return problem;
    }
}
