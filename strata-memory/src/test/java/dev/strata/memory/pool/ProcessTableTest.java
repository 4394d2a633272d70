package dev.strata.memory.pool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.memory.shm.ProcessLiveness;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ProcessTableTest {
    private final MemorySegment table = MemorySegment.ofArray(new long[(int) (8 * ProcessTable.SLOT_SIZE / 8)]);
    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final long me = ProcessHandle.current().pid();

    private static long deadPid() throws Exception {
        Process p = new ProcessBuilder("true").start();
        p.waitFor();
        return p.pid();
    }

    @Test
    void claimsSlotsAndReleasesThem() {
        ProcessTable t = new ProcessTable(table, 0, 8, clock::get, 10_000);
        int a = t.claim(me, ProcessLiveness.currentStartMillis());
        int b = t.claim(me, ProcessLiveness.currentStartMillis());
        assertThat(a).isNotEqualTo(b);
        assertThat(t.occupied()).isEqualTo(2);
        assertThat(t.isAlive(a, me)).isTrue();
        assertThat(t.tryStartReclaim(b, a)).as("a live process is not reclaimed").isFalse();
        t.release(b, me);
        assertThat(t.occupied()).isEqualTo(1);
    }

    @Test
    void aDeadPidIsReclaimedOnceAndItsSlotFreed() throws Exception {
        ProcessTable t = new ProcessTable(table, 0, 8, clock::get, 10_000);
        int mine = t.claim(me, ProcessLiveness.currentStartMillis());
        int dead = t.claim(deadPid(), 12345);
        assertThat(t.tryStartReclaim(dead, mine)).isTrue();
        assertThat(t.tryStartReclaim(dead, mine)).as("already being reclaimed by a live process").isFalse();
        t.finishReclaim(dead, mine);
        assertThat(t.occupied()).isEqualTo(1);
    }

    @Test
    void aReusedPidWithAnotherStartTimeIsDead() {
        ProcessTable t = new ProcessTable(table, 0, 8, clock::get, 0);
        int mine = t.claim(me, ProcessLiveness.currentStartMillis());
        long start = ProcessLiveness.currentStartMillis();
        int impostor = t.claim(me, start - 3_600_000); // same pid, started an hour earlier: an older process
        assertThat(t.isAlive(impostor, me)).isFalse();
        assertThat(t.tryStartReclaim(impostor, mine)).isTrue();
    }

    @Test
    void withoutAStartTimeAStaleHeartbeatMeansDead() {
        ProcessTable t = new ProcessTable(table, 0, 8, clock::get, 5_000);
        int mine = t.claim(me, ProcessLiveness.currentStartMillis());
        int unknown = t.claim(me, 0);
        clock.addAndGet(4_000);
        assertThat(t.isAlive(unknown, me)).isTrue();
        clock.addAndGet(2_000);
        assertThat(t.isAlive(unknown, me)).isFalse();
        t.beat(unknown);
        assertThat(t.isAlive(unknown, me)).isTrue();
        assertThat(t.isAlive(mine, me)).as("a verified start time is not judged by its heartbeat").isTrue();
    }

    @Test
    void aReclaimerThatDiedIsTakenOver() throws Exception {
        ProcessTable t = new ProcessTable(table, 0, 8, clock::get, 10_000);
        int mine = t.claim(me, ProcessLiveness.currentStartMillis());
        int deadReclaimer = t.claim(deadPid(), 1);
        int victim = t.claim(deadPid(), 2);
        // the dead reclaimer had started reclaiming the victim
        table.set(ValueLayout.JAVA_LONG, victim * ProcessTable.SLOT_SIZE, ((long) deadReclaimer << 8) | ProcessTable.RECLAIMING);
        assertThat(t.tryStartReclaim(victim, mine)).isTrue();
        t.finishReclaim(victim, mine);
        assertThat(t.tryStartReclaim(deadReclaimer, mine)).isTrue();
        t.finishReclaim(deadReclaimer, mine);
        assertThat(t.occupied()).isEqualTo(1);
    }
}
