package dev.strata.node.rpc;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;

/**
 * Whether a process recorded by pid and start instant is still the same, running process.
 *
 * <p>A process is alive when a process with its pid exists, is not a zombie (Linux
 * {@code /proc/<pid>/stat} state Z or X: killed but not yet reaped by its parent), and has the
 * recorded start instant within {@link #START_TOLERANCE_MILLIS} (this survives pid reuse). A
 * recorded start of 0 (unknown) checks the pid alone.
 *
 * <p>Stateless; any thread. Costs a few file reads: call it at millisecond cadence, not per request.
 */
public final class ProcessLiveness {
    /** Two readings of one process's start (derived from boot time) may differ by this much. */
    public static final long START_TOLERANCE_MILLIS = 2000;

    private ProcessLiveness() {
    }

    /** The start instant of the current process in epoch ms, 0 if the platform does not say. */
    public static long currentStartMillis() {
        return ProcessHandle.current().info().startInstant().map(Instant::toEpochMilli).orElse(0L);
    }

    /** True if the process {@code pid} started at {@code recordedStartMillis} (0: unknown) is running. */
    public static boolean isAlive(long pid, long recordedStartMillis) {
        if (pid <= 0) {
            return false;
        }
        Optional<ProcessHandle> handle = ProcessHandle.of(pid);
        if (handle.isEmpty() || !handle.get().isAlive() || isZombie(pid)) {
            return false;
        }
        if (recordedStartMillis == 0) {
            return true;
        }
        long actual = handle.get().info().startInstant().map(Instant::toEpochMilli).orElse(0L);
        return actual == 0 || Math.abs(actual - recordedStartMillis) <= START_TOLERANCE_MILLIS;
    }

    private static boolean isZombie(long pid) {
        Path stat = Path.of("/proc", Long.toString(pid), "stat");
        try {
            String s = Files.readString(stat);
            int close = s.lastIndexOf(')'); // the command name may contain spaces and parentheses
            if (close < 0 || close + 2 >= s.length()) {
                return false;
            }
            char state = s.charAt(close + 2);
            return state == 'Z' || state == 'X';
        } catch (NoSuchFileException e) {
            return true; // gone between the two checks
        } catch (IOException | UnsupportedOperationException e) {
            return false; // no procfs: the pid check stands alone
        }
    }
}
