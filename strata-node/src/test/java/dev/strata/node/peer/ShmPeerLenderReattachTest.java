package dev.strata.node.peer;

import static dev.strata.node.peer.PeerTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.Durability;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.LentRegion;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerLease;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A lender re-attaching to agents of this process that stop and start again on one lending file:
 * old leases never reach the new agent's memory, an access under way keeps the old file mapped
 * until it ends, a stuck agent that beats again is taken back, and looks at the path are rate-limited.
 */
class ShmPeerLenderReattachTest {
    static final long REGION = 4096;
    static final int REGIONS = 4;

    private final Path path = newFile("reattach");

    @AfterEach
    void cleanUp() throws Exception {
        delete(path);
    }

    /** An agent lending {@code REGIONS} regions, ticking on its own thread. */
    private PeerAgent agent() {
        return PeerAgent.start(config(), null);
    }

    private PeerAgentConfig config() {
        return PeerAgentConfig.builder().file(path).budget(REGIONS * REGION).regionSize(REGION).demand(new SettableDemand())
                .grace(Duration.ofSeconds(10)).tick(Duration.ofMillis(2)).conclude();
    }

    private static ShmLenderOptions options(Duration reattach) {
        return ShmLenderOptions.defaults().withName("agent").withReattachInterval(reattach);
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 10 s: " + what);
            }
            Thread.sleep(2);
        }
    }

    /** Polls a lender without an event thread until {@code condition} holds. */
    private static void pollUntil(ShmPeerLender lender, String what, BooleanSupplier condition) throws InterruptedException {
        await(what, () -> {
            lender.poll();
            return condition.getAsBoolean();
        });
    }

    @Test
    void aReattachedLenderNeverServesTheOldAgentsBytes() throws Exception {
        PeerAgent first = agent();
        try (PeerClient client = PeerClient.of(List.of(ShmPeerLender.open(path, 0, options(Duration.ofMillis(10)))), "best-fit");
             Arena arena = Arena.ofConfined()) {
            PeerLease old = client.alloc(REGION, LeaseHints.of(Durability.LOSSY)).orElseThrow();
            MemorySegment oldBytes = arena.allocate(REGION).fill((byte) 0xA1);
            assertThat(client.write(old, 0, oldBytes)).isTrue();

            first.close();
            await("the peer lost", () -> !client.stats().peer(0).alive());
            try (PeerAgent second = agent()) {
                await("the peer back", () -> client.stats().peer(0).alive());
                PeerLease fresh = client.alloc(REGION, LeaseHints.of(Durability.LOSSY)).orElseThrow();
                assertThat(fresh.region()).as("the same region of the new file, lent at the same table epoch").isEqualTo(old.region());
                assertThat(fresh).isNotEqualTo(old);
                MemorySegment read = arena.allocate(REGION).fill((byte) 0x77);
                assertThat(client.read(old, 0, read)).as("the old lease is no hit").isFalse();
                assertThat(client.valid(old)).isFalse();
                assertThat(client.read(fresh, 0, read)).isTrue();
                assertThat(read.mismatch(arena.allocate(REGION))).as("the new agent's memory reads zero, not the old agent's bytes")
                        .isEqualTo(-1);
                MemorySegment newBytes = arena.allocate(REGION).fill((byte) 0xB2);
                assertThat(client.write(fresh, 0, newBytes)).isTrue();
                assertThat(client.read(fresh, 0, read)).isTrue();
                assertThat(read.mismatch(newBytes)).isEqualTo(-1);
                assertThat(second.stats().lent()).as("the new lease lies in the new agent's table").isEqualTo(1);
                client.free(fresh);
                assertThat(second.stats().lent()).isZero();
                client.checkInvariants();
            }
        }
    }

    @Test
    void anAccessUnderWayKeepsTheReplacedFileMappedUntilItEnds() throws Exception {
        PeerAgent first = agent();
        try (ShmPeerLender lender = ShmPeerLender.open(path, 0, options(Duration.ofMillis(1)), false)) {
            LentRegion old = lender.borrow(REGION);
            assertThat(old.enter()).isTrue();
            stamp(old.memory(), old.lease().region(), old.lease().epoch(), 1);

            first.close();
            try (PeerAgent second = agent()) {
                pollUntil(lender, "re-attached", () -> lender.alive() && lender.reattachments() == 1);
                assertThat(lender.replacedMappings()).as("the access under way keeps the old file mapped").isEqualTo(1);
                Thread.sleep(5);
                lender.poll();
                assertThat(lender.replacedMappings()).isEqualTo(1);
                assertThat(verify(old.memory(), old.lease().region(), old.lease().epoch(), 1))
                        .as("the access under way still reads what it wrote").isNull();
                old.exit();
                assertThat(old.enter()).as("a lease of the old agent").isFalse();
                pollUntil(lender, "the old file unmapped", () -> lender.replacedMappings() == 0);
                assertThat(old.enter()).as("still refused, the file unmapped").isFalse();

                LentRegion fresh = lender.borrow(REGION);
                assertThat(fresh.lease().region()).isEqualTo(old.lease().region());
                assertThat(fresh.lease()).isNotEqualTo(old.lease());
                assertThat(fresh.enter()).isTrue();
                assertThat(fresh.memory().get(ValueLayout.JAVA_LONG, 0)).as("the new file's bytes").isZero();
                fresh.exit();
                assertThat(second.stats().lent()).isEqualTo(1);
                lender.giveBack(fresh);
                assertThat(second.stats().lent()).isZero();
            }
        }
    }

    @Test
    void aStuckAgentThatBeatsAgainIsTakenBackOnTheSameFile() throws Exception {
        // Driven by step(): its heartbeat stops between steps.
        try (PeerAgent agent = PeerAgent.create(config());
             ShmPeerLender lender = ShmPeerLender.open(path, 0,
                     options(Duration.ofMillis(1)).withHeartbeatTimeout(Duration.ofMillis(200)), false)) {
            LentRegion before = lender.borrow(REGION);
            assertThat(before).isNotNull();
            pollUntil(lender, "the stuck agent lost", () -> !lender.alive());
            assertThat(lender.lostBecause()).contains("heartbeat");
            assertThat(lender.borrow(REGION)).isNull();
            agent.step();
            pollUntil(lender, "taken back", lender::alive);
            assertThat(lender.reattachments()).isEqualTo(1);
            assertThat(lender.replacedMappings()).isZero();
            assertThat(before.enter()).as("a lease from before the loss").isFalse();
            assertThat(agent.stats().lent()).as("given back at the loss").isZero();
            LentRegion after = lender.borrow(REGION);
            assertThat(after).isNotNull();
            assertThat(after.lease()).isNotEqualTo(before.lease());
            assertThat(after.enter()).isTrue();
            after.exit();
            lender.giveBack(after);
        }
    }

    @Test
    void thePathIsLookedAtAtMostOncePerInterval() throws Exception {
        PeerAgent first = agent();
        try (ShmPeerLender slow = ShmPeerLender.open(path, 0, options(Duration.ofHours(1)), false);
             ShmPeerLender quick = ShmPeerLender.open(path, 1, options(Duration.ofMillis(1)), false)) {
            slow.poll(); // its one look of the hour
            first.close();
            try (PeerAgent second = agent()) {
                pollUntil(quick, "the quick lender re-attached", quick::alive);
                for (int i = 0; i < 100; i++) {
                    slow.poll();
                }
                assertThat(slow.alive()).as("lost, and no look at the path before the hour is up").isFalse();
                assertThat(slow.reattachments()).isZero();
                assertThat(slow.borrow(REGION)).isNull();
                assertThat(quick.reattachments()).isEqualTo(1);
            }
        }
    }

    /**
     * Three threads write and read back their own leases through a client while the agent is
     * stopped and started again five times: no access fails with an error, every read that
     * succeeds returns exactly what the thread last wrote into that lease, and every replaced file
     * is unmapped in the end.
     */
    @Test
    void restartsUnderConcurrentAccessNeverFailAnAccessNorServeForeignBytes() throws Exception {
        PeerAgent agent = agent();
        ShmPeerLender lender = ShmPeerLender.open(path, 0, options(Duration.ofMillis(5)));
        try (PeerClient client = PeerClient.of(List.of(lender), "best-fit")) {
            Queue<String> failures = new ConcurrentLinkedQueue<>();
            AtomicLong verified = new AtomicLong();
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < 3; w++) {
                int worker = w;
                workers.add(Thread.ofPlatform().start(() -> {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment out = arena.allocate(REGION / 2);
                        MemorySegment in = arena.allocate(REGION / 2);
                        PeerLease lease = null;
                        long sequence = 0;
                        while (!stop.get() && failures.isEmpty()) {
                            if (lease == null) {
                                lease = client.alloc(REGION / 2, LeaseHints.of(Durability.LOSSY)).orElse(null);
                                if (lease == null) {
                                    Thread.onSpinWait();
                                    continue;
                                }
                            }
                            sequence++;
                            out.fill((byte) (worker * 64 + sequence % 63 + 1));
                            if (!client.write(lease, 0, out) || !client.read(lease, 0, in)) {
                                client.free(lease); // revoked or lost: take another
                                lease = null;
                                continue;
                            }
                            if (in.mismatch(out) != -1) {
                                failures.add("worker " + worker + " read other bytes through " + lease);
                            }
                            verified.incrementAndGet();
                        }
                    } catch (Throwable t) {
                        failures.add("worker " + worker + " failed: " + t);
                    }
                }));
            }
            try {
                for (int restart = 1; restart <= 5; restart++) {
                    long before = verified.get();
                    await("accesses through the agent of round " + restart, () -> verified.get() > before + 100 || !failures.isEmpty());
                    agent.close();
                    agent = agent();
                    int round = restart;
                    await("re-attachment " + round, () -> lender.reattachments() == round && lender.alive());
                }
                long before = verified.get();
                await("accesses through the last agent", () -> verified.get() > before + 100 || !failures.isEmpty());
            } finally {
                stop.set(true);
                for (Thread t : workers) {
                    t.join(10_000);
                }
            }
            assertThat(failures).isEmpty();
            assertThat(client.stats().peer(0).reattachments()).isEqualTo(5);
            await("every replaced file unmapped", () -> lender.replacedMappings() == 0);
            client.checkInvariants();
        } finally {
            agent.close();
        }
    }
}
