package dev.strata.memory.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;

/**
 * Whether a process recorded in a shared file by pid and start instant is still the same, running
 * process: the one liveness check of every shared file's owner, client, borrower and pool member.
 *
 * <p>A process is alive when a process with its pid exists, is not a zombie (Linux
 * {@code /proc/<pid>/stat} state Z or X: exited but not yet reaped by its parent) and, where both
 * the recorded and the actual start instant are known, started at the recorded instant within
 * {@link #START_TOLERANCE_MILLIS} (this survives pid reuse). Pids are those of this host's pid
 * namespace: processes sharing a file must share it. Where a start instant is unknown on either
 * side the pid alone is checked, and {@link #check} says so ({@link Verdict#PID_RUNNING}), so that
 * a caller holding a heartbeat can judge by it instead.
 *
 * <p>Stateless; any thread. Costs a few file reads: call it at millisecond cadence, not per request.
 */
public final class ProcessLiveness {
    /**
     * Start instants are derived from the boot time each JVM reads once, which clock steps can
     * shift; two readings of one process's start may differ by this much. A pid reused within this
     * window of the dead process's start is not told apart.
     */
    public static final long START_TOLERANCE_MILLIS = 2000;

    /** What {@link #check} found. */
    public enum Verdict {
        /** No such pid, a zombie, or a pid now held by a process with another start instant. */
        DEAD,
        /** The pid runs and its start instant is the recorded one: the very process. */
        SAME_PROCESS,
        /** The pid runs, but a start instant is unknown (recorded 0 or not reported): identity unverified. */
        PID_RUNNING
    }

    private ProcessLiveness() {
    }

    /** The pid of the current process. */
    public static long currentPid() {
        return ProcessHandle.current().pid();
    }

    /** The start instant of the current process in epoch ms, 0 if the platform does not say. */
    public static long currentStartMillis() {
        return ProcessHandle.current().info().startInstant().map(Instant::toEpochMilli).orElse(0L);
    }

    /** True if the process {@code pid} started at {@code recordedStartMillis} (0: unknown) is running. */
    public static boolean isAlive(long pid, long recordedStartMillis) {
        return check(pid, recordedStartMillis) != Verdict.DEAD;
    }

    /** Whether the process {@code pid} started at {@code recordedStartMillis} (0: unknown) runs, and how sure that is. */
    public static Verdict check(long pid, long recordedStartMillis) {
        if (pid <= 0) {
            return Verdict.DEAD;
        }
        Optional<ProcessHandle> handle = ProcessHandle.of(pid);
        if (handle.isEmpty() || !handle.get().isAlive() || isZombie(pid)) {
            return Verdict.DEAD;
        }
        long actual = handle.get().info().startInstant().map(Instant::toEpochMilli).orElse(0L);
        if (recordedStartMillis == 0 || actual == 0) {
            return Verdict.PID_RUNNING;
        }
        return Math.abs(actual - recordedStartMillis) <= START_TOLERANCE_MILLIS ? Verdict.SAME_PROCESS : Verdict.DEAD;
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
