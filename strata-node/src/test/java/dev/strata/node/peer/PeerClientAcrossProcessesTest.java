package dev.strata.node.peer;

import static dev.strata.node.peer.PeerTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.Durability;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerLease;
import dev.strata.cache.peer.RevocationCallback;
import dev.strata.cache.peer.RevocationReason;
import dev.strata.node.rpc.ChildJvm;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A {@link PeerClient} of this JVM over a {@code strata peer} agent JVM: a lease with no access
 * under way is ended on the lender's event thread as the revocation arrives, one with an access
 * under way waits for it on the client's revocation thread, an access that outlives the deadline
 * gets the lease fenced at the deadline, and a revocation racing accesses that end calls back once,
 * with its reason, never while an access is inside the lease.
 */
class PeerClientAcrossProcessesTest {
    static final long REGION = 64 * 1024 + 192;
    static final int REGIONS = 4;
    static final long LEASE = 2 * REGION;
    static final long WAIT_MILLIS = 15_000;
    static final String EVENT_THREAD = "strata-peer-lender-0";
    static final String REVOCATION_THREAD = "strata-peer-client-revocations";

    record Ended(PeerLease lease, RevocationReason reason, String thread) {
    }

    private final Path path = newFile("client");
    private final Path demandFile = Path.of(path + ".demand");

    @AfterEach
    void cleanUp() throws Exception {
        delete(path);
        Files.deleteIfExists(demandFile);
    }

    private void demand(long bytes) throws Exception {
        Path temp = Path.of(demandFile + ".tmp");
        Files.writeString(temp, Long.toString(bytes), StandardCharsets.UTF_8);
        Files.move(temp, demandFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private ChildJvm agent(long graceMillis) throws Exception {
        demand(0);
        ChildJvm agent = ChildJvm.start(PeerAgentMain.class, path.toString(), Integer.toString(REGIONS), Long.toString(REGION),
                demandFile.toString(), Long.toString(graceMillis));
        agent.expect("strata peer ready", 30_000);
        return agent;
    }

    /** The agent wants all its memory ({@code true}) or none of it, rung at once. */
    private void takeBack(ShmPeerLender lender, boolean all) throws Exception {
        demand(all ? REGIONS * REGION : 0);
        lender.wakeAgent();
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + WAIT_MILLIS + " ms: " + what);
            }
            Thread.sleep(1);
        }
    }

    /** Borrows a lease with {@code callback}, retrying while the agent has not yet made its memory lendable again. */
    private static PeerLease borrow(PeerClient client, RevocationCallback callback) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS);
        while (true) {
            Optional<PeerLease> lease = client.alloc(LEASE, LeaseHints.of(Durability.LOSSY), callback);
            if (lease.isPresent()) {
                return lease.get();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the agent lent no " + LEASE + " bytes within " + WAIT_MILLIS + " ms");
            }
            Thread.sleep(1);
        }
    }

    private static RevocationCallback recordInto(List<Ended> ended) {
        return (l, r) -> ended.add(new Ended(l, r, Thread.currentThread().getName()));
    }

    /** A thread inside an access to the whole of {@code lease}: counts {@code inside} down, then stays until {@code release}. */
    private static Thread holdAccess(PeerClient client, PeerLease lease, CountDownLatch inside, CountDownLatch release) {
        return Thread.ofPlatform().start(() -> client.access(lease, 0, LEASE, view -> {
            inside.countDown();
            try {
                release.await(WAIT_MILLIS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
    }

    @Test
    void aLeaseWithNoAccessUnderWayIsEndedOnTheLendersEventThreadOnceAndAcknowledged() throws Exception {
        try (ChildJvm agent = agent(10_000)) {
            ShmPeerLender lender = ShmPeerLender.open(path, 0, ShmLenderOptions.defaults().withName("agent"));
            try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
                List<Ended> ended = new CopyOnWriteArrayList<>();
                PeerLease lease = borrow(client, recordInto(ended));
                assertThat(client.write(lease, 0, MemorySegment.ofArray(new byte[] {1, 2, 3}))).isTrue();
                takeBack(lender, true);
                await("called back", () -> ended.size() == 1);
                assertThat(ended).containsExactly(new Ended(lease, RevocationReason.RECLAIMED, EVENT_THREAD));
                await("the agent holds every region again", () -> lender.stats().held() == REGIONS);
                assertThat(lender.stats().acknowledged()).isEqualTo(1);
                assertThat(lender.stats().fences()).isZero();
                assertThat(client.read(lease, 0, MemorySegment.ofArray(new byte[3]))).isFalse();
                Thread.sleep(50);
                assertThat(ended).as("callbacks once").hasSize(1);
                await("idle", client::revocationsIdle);
                client.checkInvariants();
            }
        }
    }

    @Test
    void aLeaseWithAnAccessUnderWayWaitsForItAndEndsOnTheRevocationThread() throws Exception {
        try (ChildJvm agent = agent(10_000)) {
            ShmPeerLender lender = ShmPeerLender.open(path, 0, ShmLenderOptions.defaults().withName("agent"));
            try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
                List<Ended> ended = new CopyOnWriteArrayList<>();
                PeerLease lease = borrow(client, recordInto(ended));
                CountDownLatch inside = new CountDownLatch(1);
                CountDownLatch release = new CountDownLatch(1);
                Thread holder = holdAccess(client, lease, inside, release);
                assertThat(inside.await(10, TimeUnit.SECONDS)).isTrue();
                takeBack(lender, true);
                await("revoking", () -> client.revoking(lease));
                Thread.sleep(100);
                assertThat(ended).as("no callback while the access is under way").isEmpty();
                assertThat(lender.stats().acknowledged()).as("no acknowledgement while the access is under way").isZero();
                release.countDown();
                holder.join(10_000);
                await("called back after the drain", () -> ended.size() == 1);
                assertThat(ended).containsExactly(new Ended(lease, RevocationReason.RECLAIMED, REVOCATION_THREAD));
                await("acknowledged", () -> lender.stats().acknowledged() == 1);
                assertThat(lender.stats().fences()).isZero();
                assertThat(client.stats().peer(0).drainMaxNanos()).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(100));
            }
        }
    }

    @Test
    void anAccessThatOutlivesTheDeadlineGetsTheLeaseFencedAtTheDeadlineAndCalledBackOnceAsFenced() throws Exception {
        long graceMillis = 300;
        try (ChildJvm agent = agent(graceMillis)) {
            ShmPeerLender lender = ShmPeerLender.open(path, 0, ShmLenderOptions.defaults().withName("agent"));
            try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
                List<Ended> ended = new CopyOnWriteArrayList<>();
                PeerLease lease = borrow(client, recordInto(ended));
                CountDownLatch inside = new CountDownLatch(1);
                CountDownLatch release = new CountDownLatch(1);
                Thread holder = holdAccess(client, lease, inside, release);
                assertThat(inside.await(10, TimeUnit.SECONDS)).isTrue();
                long asked = System.nanoTime();
                takeBack(lender, true);
                await("fenced by the agent", () -> lender.stats().fences() == 1);
                long fencedAfter = System.nanoTime() - asked;
                // the deadline is kept in milliseconds: the fence comes no sooner than the grace, less that rounding
                assertThat(fencedAfter).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(graceMillis - 1));
                assertThat(lender.stats().fenced()).as("the fenced run waits for the access").isEqualTo(1);
                assertThat(ended).as("no callback while the access is under way").isEmpty();
                release.countDown();
                holder.join(10_000);
                await("called back", () -> ended.size() == 1);
                assertThat(ended.getFirst().reason()).isEqualTo(RevocationReason.FENCED);
                assertThat(ended.getFirst().lease()).isEqualTo(lease);
                await("the agent holds every region again", () -> lender.stats().held() == REGIONS);
                assertThat(lender.stats().acknowledged()).isZero();
                Thread.sleep(50);
                assertThat(ended).as("callbacks once").hasSize(1);
                assertThat(client.stats().peer(0).revocations(RevocationReason.FENCED)).isEqualTo(1);
            }
        }
    }

    @Test
    void revocationsRacingAccessesThatEndCallBackOnceWithTheirReasonAndNeverDuringAnAccess() throws Exception {
        int rounds = 30;
        try (ChildJvm agent = agent(10_000)) {
            ShmPeerLender lender = ShmPeerLender.open(path, 0, ShmLenderOptions.defaults().withName("agent"));
            try (PeerClient client = PeerClient.of(List.of(lender), "best_fit")) {
                SplittableRandom random = new SplittableRandom(31);
                AtomicInteger inside = new AtomicInteger(); // accesses between their entry and their exit
                AtomicInteger calledDuringAccess = new AtomicInteger();
                List<List<Ended>> all = new ArrayList<>();
                for (int round = 0; round < rounds; round++) {
                    List<Ended> ended = new CopyOnWriteArrayList<>();
                    all.add(ended);
                    PeerLease lease = borrow(client, (l, r) -> {
                        if (inside.get() != 0) {
                            calledDuringAccess.incrementAndGet();
                        }
                        ended.add(new Ended(l, r, Thread.currentThread().getName()));
                    });
                    int spins = random.nextInt(0, 50_000);
                    AtomicBoolean stop = new AtomicBoolean();
                    Thread reader = Thread.ofPlatform().start(() -> {
                        boolean admitted = true;
                        while (admitted && !stop.get()) {
                            admitted = client.access(lease, 0, LEASE, view -> {
                                inside.incrementAndGet();
                                try {
                                    for (int i = 0; i < spins; i++) {
                                        Thread.onSpinWait();
                                    }
                                    view.get(ValueLayout.JAVA_BYTE, spins % LEASE);
                                } finally {
                                    inside.decrementAndGet();
                                }
                            });
                        }
                    });
                    LockSupport.parkNanos(random.nextLong(0, 2_000_000)); // the access may be under way, ending, or not begun
                    takeBack(lender, true);
                    int r = round;
                    await("round " + r + " called back", () -> ended.size() == 1);
                    stop.set(true);
                    reader.join(10_000);
                    assertThat(ended.getFirst().lease()).isEqualTo(lease);
                    assertThat(ended.getFirst().reason()).isEqualTo(RevocationReason.RECLAIMED);
                    assertThat(ended.getFirst().thread()).isIn(EVENT_THREAD, REVOCATION_THREAD);
                    await("round " + r + " settled", () -> client.revocationsIdle() && lender.stats().revoking() == 0);
                    takeBack(lender, false);
                }
                Thread.sleep(50);
                assertThat(calledDuringAccess).as("callbacks that ran while an access was inside the lease").hasValue(0);
                assertThat(all).allSatisfy(ended -> assertThat(ended).as("callbacks once").hasSize(1));
                assertThat(client.stats().peer(0).revocations(RevocationReason.RECLAIMED)).isEqualTo(rounds);
                assertThat(lender.stats().acknowledged()).isEqualTo(rounds);
                assertThat(lender.stats().fences()).isZero();
                client.checkInvariants();
            }
        }
    }
}
