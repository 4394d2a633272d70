package dev.strata.node.peer;

import dev.strata.memory.Sizes;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * A demand read from a file that operators or tests write: the file holds one size (bytes, or
 * with a unit such as {@code 64MiB}). The file is re-read when its modification time or size
 * changes; a missing file means no demand yet.
 *
 * <p>Bad content never stops the agent: the previous demand stays in force and the problem is
 * logged once per distinct content, naming the file and the text found. Write the file atomically
 * (write a temporary file, then rename it over the path) so the agent never reads half a number.
 *
 * <p>Threads: the agent's tick thread only.
 */
public final class FileDemand implements DemandSignal {
    private static final System.Logger LOG = System.getLogger(FileDemand.class.getName());

    private final Path path;
    private long demand;              // bytes, the last good value
    private String lastProblem;

    public FileDemand(Path path) {
        this.path = java.util.Objects.requireNonNull(path, "path");
    }

    public Path path() {
        return path;
    }

    @Override
    public long demandBytes(long elapsedNanos) {
        String text;
        try {
            text = Files.readString(path, StandardCharsets.UTF_8).strip();
        } catch (NoSuchFileException e) {
            return demand;
        } catch (IOException e) {
            report("cannot be read: " + e);
            return demand;
        }
        try {
            long parsed = Sizes.parse(text);
            demand = parsed;
            lastProblem = null;
        } catch (IllegalArgumentException e) {
            report("holds '" + text + "', which is not a size (" + e.getMessage() + "); keeping the demand of "
                    + demand + " bytes");
        }
        return demand;
    }

    private void report(String problem) {
        if (!problem.equals(lastProblem)) {
            lastProblem = problem;
            LOG.log(System.Logger.Level.WARNING, "demand file " + path + " " + problem);
        }
    }

    /** The last problem found in the file, or null if its content is good. */
    public String lastProblem() {
        return lastProblem;
    }

    @Override
    public String describe() {
        return "demand read from " + path;
    }
}
