package dev.strata.memory.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ProcessLivenessTest {

    @Test
    void theCurrentProcessIsItselfAndAnotherStartTimeIsAnotherProcess() {
        long me = ProcessLiveness.currentPid();
        long start = ProcessLiveness.currentStartMillis();
        assumeThat(start).as("the platform reports process start times").isNotZero();
        assertThat(ProcessLiveness.check(me, start)).isEqualTo(ProcessLiveness.Verdict.SAME_PROCESS);
        assertThat(ProcessLiveness.check(me, start + ProcessLiveness.START_TOLERANCE_MILLIS / 2))
                .isEqualTo(ProcessLiveness.Verdict.SAME_PROCESS);
        assertThat(ProcessLiveness.check(me, 0)).isEqualTo(ProcessLiveness.Verdict.PID_RUNNING);
        // the same pid with a start an hour earlier: the pid was reused, the recorded process is gone
        assertThat(ProcessLiveness.check(me, start - TimeUnit.HOURS.toMillis(1))).isEqualTo(ProcessLiveness.Verdict.DEAD);
        assertThat(ProcessLiveness.isAlive(me, start)).isTrue();
        assertThat(ProcessLiveness.isAlive(0, 0)).isFalse();
        assertThat(ProcessLiveness.isAlive(-5, 0)).isFalse();
    }

    @Test
    void anExitedProcessIsDead() throws Exception {
        Process p = new ProcessBuilder("true").start();
        long pid = p.pid();
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(ProcessLiveness.isAlive(pid, 0)).isFalse();
    }

    @Test
    void aZombieIsDead() throws Exception {
        assumeThat(Files.isDirectory(Path.of("/proc/self"))).as("procfs").isTrue();
        assumeThat(onPath("python3")).as("python3 on the PATH").isTrue();
        // a parent that forks a child which exits at once, and never reaps it (SIGCHLD at its
        // default, which a shell could not restore if it was ignored on entry)
        Process parent = new ProcessBuilder("python3", "-c", String.join("\n",
                "import os, signal, sys, time",
                "signal.signal(signal.SIGCHLD, signal.SIG_DFL)",
                "pid = os.fork()",
                "if pid == 0: os._exit(0)",
                "print(pid); sys.stdout.flush()",
                "time.sleep(20)")).start();
        try {
            long zombie;
            try (BufferedReader out = new BufferedReader(new InputStreamReader(parent.getInputStream(), StandardCharsets.US_ASCII))) {
                zombie = Long.parseLong(out.readLine().trim());
                Path stat = Path.of("/proc", Long.toString(zombie), "stat");
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!isZombie(stat) && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                }
                assertThat(isZombie(stat)).as("pid %d became a zombie", zombie).isTrue();
            }
            assertThat(ProcessLiveness.check(zombie, 0)).isEqualTo(ProcessLiveness.Verdict.DEAD);
            assertThat(ProcessLiveness.check(parent.pid(), 0)).isNotEqualTo(ProcessLiveness.Verdict.DEAD);
        } finally {
            parent.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static boolean onPath(String program) {
        String path = System.getenv("PATH");
        return path != null && java.util.Arrays.stream(path.split(":"))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Path.of(dir, program)));
    }

    private static boolean isZombie(Path stat) {
        try {
            String s = Files.readString(stat);
            return s.charAt(s.lastIndexOf(')') + 2) == 'Z';
        } catch (Exception e) {
            return false;
        }
    }
}
