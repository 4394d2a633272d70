package dev.strata.cache.peer;

import static dev.strata.cache.peer.PeerTesting.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.Durability;
import dev.strata.testing.Property;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Thousands of random revocations under concurrent load: worker threads allocate, write stamped
 * seeded bytes, read and verify them, and free, through a {@link PeerClient}, while the main thread
 * swings the lenders' offers (and kills one lender part way). Invariants after every step, and at
 * the end: every successful read returns exactly the bytes last written through that lease (stamped
 * with the lease's peer, region, epoch and a sequence number, so bytes of another lease or of reused
 * memory are caught); every lease ends exactly once (freed, or one callback); the client's borrowed
 * bytes per peer and per consumer equal its live leases; each lender's free + lent = budget.
 */
class PeerRevocationPropertyTest {
    private static final int HEADER = 32; // bytes: peer (8), region (8), epoch (8), sequence (8)
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final String[] POLICIES = {"BEST_FIT", "LOCALITY", "FAIRNESS", "STABILITY"};

    /** A lease a worker holds, with the bytes it last wrote through it. */
    private static final class Held {
        final PeerLease lease;
        byte[] expected;
        long sequence;

        Held(PeerLease lease) {
            this.lease = lease;
        }
    }

    /** What the whole trial observed. */
    private static final class Trial {
        final Map<PeerLease, AtomicInteger> callbacks = new ConcurrentHashMap<>();
        final Map<PeerLease, RevocationReason> reasons = new ConcurrentHashMap<>();
        final Set<PeerLease> allocated = ConcurrentHashMap.newKeySet();
        final Set<PeerLease> freedByOwner = ConcurrentHashMap.newKeySet();
        final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicInteger verifiedReads = new AtomicInteger();
        final AtomicInteger refusedAccesses = new AtomicInteger();
    }

    @Test
    void randomRevocationsUnderConcurrentLoadKeepEveryInvariant() {
        Property.forAll("peer revocations under concurrent load", 2, this::trial);
    }

    /** One seed: a run under each placement policy, each with its own lenders and client. */
    private void trial(SplittableRandom random) throws Exception {
        long revocations = 0;
        for (String policy : POLICIES) {
            revocations += run(random.split(), policy);
        }
        assertThat(revocations).as("revocations under all four policies").isGreaterThan(600);
    }

    /** Returns the revocations the run went through. */
    private long run(SplittableRandom random, String policy) throws Exception {
        int lenderCount = 3;
        List<LocalLender> lenders = new ArrayList<>();
        for (int i = 0; i < lenderCount; i++) {
            long budget = 96 * 1024 + random.nextInt(160 * 1024) + 1;
            long grace = 1_000_000L + random.nextInt(4_000_000); // 1-5 ms: slow callbacks get fenced
            lenders.add(new LocalLender(LocalLender.Config.of(i, "peer" + i, budget).withDistance(1 + random.nextInt(2))
                    .withFirstByteLatency(1_000 + random.nextInt(5_000)).withGrace(grace)));
        }
        Trial t = new Trial();
        try (PeerClient client = PeerClient.builder().lenders(lenders).policy(policy).revocationHalfLifeNanos(50_000_000L).build()) {
            List<PeerClient.ConsumerView> views = List.of(client.forConsumer("kv", new ConsumerLimits(200 * 1024, 1e6, 64)),
                    client.forConsumer("experts", ConsumerLimits.bytes(400 * 1024)));
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < 3; w++) {
                SplittableRandom wr = random.split();
                PeerClient.ConsumerView view = views.get(w % views.size());
                workers.add(Thread.ofPlatform().name("peer-worker-" + w).start(() -> work(client, view, wr, t)));
            }
            long started = System.nanoTime();
            int steps = 500;
            int killAt = steps * 3 / 4;
            LocalLender killed = lenders.get(random.nextInt(lenderCount));
            for (int step = 0; step < steps && t.failures.isEmpty(); step++) {
                LocalLender l = lenders.get(random.nextInt(lenderCount));
                long budget = l.config().budgetBytes();
                long offer = switch (random.nextInt(4)) {
                    case 0 -> 0;
                    case 1 -> budget;
                    default -> random.nextLong(budget + 1);
                };
                l.lendable(offer);
                if (step == killAt) {
                    killed.kill();
                }
                LockSupport.parkNanos(200_000 + random.nextInt(300_000));
                client.checkInvariants();
                for (LocalLender each : lenders) {
                    each.checkInvariants();
                }
            }
            long stepsDone = System.nanoTime();
            t.stop.set(true);
            for (Thread w : workers) {
                w.join(30_000);
                assertThat(w.isAlive()).as("worker " + w.getName() + " stopped").isFalse();
            }
            assertThat(t.failures).as("failures seen by the workers").isEmpty();

            long joined = System.nanoTime();
            for (LocalLender l : lenders) {
                l.lendable(l.config().budgetBytes());
            }
            // leases the workers dropped because an access was refused end when their revocation
            // event arrives (it may still be queued at the lender): every one must end, in time
            await("every lease ended, revocations idle", 10_000,
                    () -> client.liveLeases().isEmpty() && client.revocationsIdle());
            client.checkInvariants();
            PeerClientStats stats = client.stats();
            assertThat(stats.borrowedBytes()).isZero();
            for (LocalLender l : lenders) {
                await("lender " + l.name() + " empty", 10_000, () -> l.stats().freeBytes() == l.config().budgetBytes());
                l.checkInvariants();
                LocalLender.Stats s = l.stats();
                if (l != killed) {
                    assertThat(s.acknowledgements() + s.giveBacks() + s.fences()).as("every region of " + l.name() + " ended once")
                            .isEqualTo(s.borrows());
                }
            }

            long drained = System.nanoTime();
            long revoked = 0;
            for (PeerLease lease : t.allocated) {
                AtomicInteger ran = t.callbacks.get(lease);
                int n = ran == null ? 0 : ran.get();
                if (n > 1) {
                    throw new AssertionError(lease + " ran its callbacks " + n + " times");
                }
                if (n == 0 && !t.freedByOwner.contains(lease)) {
                    throw new AssertionError(lease + " ended without a callback and was never freed by its owner");
                }
                revoked += n;
            }
            long total = stats.peers().stream().mapToLong(PeerClientStats.Peer::revocations).sum();
            assertThat(total).as("revocations counted = callbacks run").isEqualTo(revoked);
            System.out.printf("trial %s: %d steps in %.2f s, join %.2f s, drain %.2f s, end %.2f s, %d revocations (%s), %d verified reads, %d refused%n",
                    policy, steps, (stepsDone - started) / 1e9, (joined - stepsDone) / 1e9, (drained - joined) / 1e9, (System.nanoTime() - drained) / 1e9, revoked,
                    stats.peers().stream().map(p -> p.reclaimed() + "/" + p.fenced() + "/" + p.lost()).toList(),
                    t.verifiedReads.get(), t.refusedAccesses.get());
            assertThat(revoked).as("revocations in this trial (" + policy + ")").isGreaterThan(50);
            assertThat(t.verifiedReads.get()).as("verified reads").isGreaterThan(200);
            assertThat(t.refusedAccesses.get()).as("accesses refused on revoked leases").isPositive();
            for (RevocationReason reason : RevocationReason.values()) {
                long seen = t.reasons.values().stream().filter(r -> r == reason).count();
                long counted = stats.peers().stream().mapToLong(p -> p.revocations(reason)).sum();
                assertThat(seen).as("callbacks with reason " + reason + " = revocations counted for it").isEqualTo(counted);
            }
            assertThat(stats.peer(killed.id()).alive()).isFalse();
            return revoked;
        }
    }

    /** One worker: owns its leases, so it knows exactly what each must hold. */
    private static void work(PeerClient client, PeerClient.ConsumerView view, SplittableRandom random, Trial t) {
        List<Held> held = new ArrayList<>();
        LeaseHints hints = LeaseHints.of(Durability.LOSSY);
        try {
            while (!t.stop.get() && t.failures.isEmpty()) {
                int action = random.nextInt(100);
                if (held.isEmpty() || (action < 25 && held.size() < 8)) {
                    int size = HEADER + 8 + random.nextInt(16 * 1024);
                    Optional<PeerLease> got = view.alloc(size, hints, (lease, reason) -> {
                        t.callbacks.computeIfAbsent(lease, k -> new AtomicInteger()).incrementAndGet();
                        t.reasons.put(lease, reason);
                        if (random.nextInt(400) == 0) {
                            LockSupport.parkNanos(6_000_000); // a slow callback: later revocations get fenced
                        }
                    });
                    if (got.isEmpty()) {
                        LockSupport.parkNanos(50_000);
                        continue;
                    }
                    t.allocated.add(got.get());
                    Held h = new Held(got.get());
                    if (write(client, h, random, t)) {
                        held.add(h);
                    }
                } else if (action < 55) {
                    Held h = held.get(random.nextInt(held.size()));
                    if (!write(client, h, random, t)) {
                        held.remove(h);
                    }
                } else if (action < 90) {
                    Held h = held.get(random.nextInt(held.size()));
                    if (!readAndVerify(client, h, random, t)) {
                        held.remove(h);
                    }
                } else {
                    Held h = held.remove(random.nextInt(held.size()));
                    client.free(h.lease);
                    t.freedByOwner.add(h.lease);
                }
            }
        } catch (Throwable e) {
            t.failures.add("worker failed: " + e);
        } finally {
            for (Held h : held) {
                client.free(h.lease);
                t.freedByOwner.add(h.lease);
            }
        }
    }

    /** Writes a fresh stamped image of the whole lease; false when the lease is no longer valid. */
    private static boolean write(PeerClient client, Held h, SplittableRandom random, Trial t) {
        long size = h.lease.size();
        byte[] image = PeerTesting.random(random, (int) size);
        MemorySegment s = MemorySegment.ofArray(image);
        s.set(LONG, 0, h.lease.peer());
        s.set(LONG, 8, h.lease.region());
        s.set(LONG, 16, h.lease.epoch());
        s.set(LONG, 24, h.sequence + 1);
        if (client.write(h.lease, 0, s)) {
            h.expected = image;
            h.sequence++;
            return true;
        }
        t.refusedAccesses.incrementAndGet();
        if (client.valid(h.lease)) {
            t.failures.add("write refused on a lease still valid: " + h.lease);
        }
        return false;
    }

    /** Reads the lease (whole, or a random range in place) and checks every byte; false when refused. */
    private static boolean readAndVerify(PeerClient client, Held h, SplittableRandom random, Trial t) {
        int size = (int) h.lease.size();
        boolean ok;
        if (random.nextBoolean()) {
            byte[] back = new byte[size];
            ok = client.read(h.lease, 0, MemorySegment.ofArray(back));
            if (ok) {
                check(h, back, 0, t);
            }
        } else {
            int from = random.nextInt(size);
            int length = 1 + random.nextInt(size - from);
            byte[][] seen = new byte[1][];
            ok = client.access(h.lease, from, length, view -> seen[0] = view.toArray(ValueLayout.JAVA_BYTE));
            if (ok) {
                check(h, seen[0], from, t);
            }
        }
        if (ok) {
            t.verifiedReads.incrementAndGet();
        } else {
            t.refusedAccesses.incrementAndGet();
        }
        return ok;
    }

    private static void check(Held h, byte[] got, int from, Trial t) {
        byte[] want = Arrays.copyOfRange(h.expected, from, from + got.length);
        if (!Arrays.equals(want, got)) {
            String stamp = "";
            if (from == 0 && got.length >= HEADER) {
                MemorySegment s = MemorySegment.ofArray(got);
                stamp = " (stamp read: peer " + s.get(LONG, 0) + ", region " + s.get(LONG, 8) + ", epoch " + s.get(LONG, 16)
                        + ", sequence " + s.get(LONG, 24) + "; expected sequence " + h.sequence + ")";
            }
            t.failures.add("read of " + h.lease + " at " + from + " (" + got.length + " bytes) returned other bytes" + stamp);
        }
    }
}
