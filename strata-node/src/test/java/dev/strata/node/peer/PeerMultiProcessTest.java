package dev.strata.node.peer;

import static dev.strata.node.peer.PeerTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.peer.LenderEvents;
import dev.strata.cache.peer.LentRegion;
import dev.strata.node.rpc.ChildJvm;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** An agent JVM and borrower JVMs (and this JVM as a borrower): revocation, fencing, SIGKILL on either side, load. */
class PeerMultiProcessTest {
    static final long REGION = 64 * 1024 + 192;
    static final int GRACE_MILLIS = 300;

    private final Path path = newFile("mp");
    private final Path demandFile = Path.of(path + ".demand");

    @AfterEach
    void cleanUp() throws Exception {
        delete(path);
        Files.deleteIfExists(demandFile);
    }

    private void demand(long bytes) throws IOException {
        Path temp = Path.of(demandFile + ".tmp");
        Files.writeString(temp, Long.toString(bytes), StandardCharsets.UTF_8);
        Files.move(temp, demandFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private ChildJvm agent(int regions) throws Exception {
        demand(0);
        ChildJvm agent = ChildJvm.start(PeerAgentMain.class, path.toString(), Integer.toString(regions), Long.toString(REGION),
                demandFile.toString(), Integer.toString(GRACE_MILLIS));
        agent.expect("strata peer ready", 30_000);
        return agent;
    }

    private static void await(String what, long timeoutMillis, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + timeoutMillis + " ms: " + what);
            }
            Thread.sleep(5);
        }
    }

    @Test
    void aBorrowerDrainsAndAcknowledgesARevocationAcrossProcesses() throws Exception {
        try (ChildJvm agent = agent(8); ShmPeerLender view = ShmPeerLender.open(path, 9)) {
            ChildJvm borrower = ChildJvm.start(BorrowerMain.class, path.toString(), "hold", "3", Long.toString(2 * REGION - 11));
            borrower.expect("borrowed", 30_000);
            assertThat(view.stats().lent()).isEqualTo(3);
            demand(4 * REGION); // two FREE regions, then one run of two revoked
            borrower.expect("revoke", 10_000);
            borrower.expect("acked", 10_000);
            await("four regions held by the agent", 10_000, () -> view.stats().held() == 4);
            LendingStats s = view.stats();
            assertThat(s.acknowledged()).isEqualTo(1);
            assertThat(s.fences()).isZero();
            assertThat(s.lent()).isEqualTo(2);
            assertThat(borrower.process.isAlive()).as("its remaining leases verify in a loop").isTrue();
            borrower.close();
        }
    }

    @Test
    void aBorrowerThatDoesNotAcknowledgeIsFencedAndItsMemoryReusedOnlyAfterItsAccessEnds() throws Exception {
        try (ChildJvm agent = agent(4); ShmPeerLender view = ShmPeerLender.open(path, 9)) {
            ChildJvm borrower = ChildJvm.start(BorrowerMain.class, path.toString(), "noack", Long.toString(2 * REGION + 5)); // three regions
            borrower.expect("entered", 30_000);
            demand(4 * REGION);
            borrower.expect("revoke 0", 10_000);
            borrower.expect("fenced 0", 10_000);
            LendingStats s = view.stats();
            assertThat(s.fences()).isEqualTo(1);
            Thread.sleep(100);
            s = view.stats();
            assertThat(s.fenced()).as("its access is still under way").isEqualTo(1);
            assertThat(s.held()).as("only the region never lent").isEqualTo(1);
            borrower.process.getOutputStream().write('\n');
            borrower.process.getOutputStream().flush();
            assertThat(borrower.expect("intact", 10_000)).isEqualTo("intact");
            assertThat(borrower.expect("enter after fence", 10_000)).isEqualTo("enter after fence false");
            await("the fenced run reused", 10_000, () -> view.stats().held() == 4);
            assertThat(view.stats().fenced()).isZero();
            borrower.close();
        }
    }

    @Test
    void whenTheAgentIsKilledMidTransferTheBorrowerLosesThePeerAndEntersNoMore() throws Exception {
        try (ChildJvm agent = agent(4)) {
            ChildJvm borrower = ChildJvm.start(BorrowerMain.class, path.toString(), "transfer", Long.toString(2 * REGION + 1));
            borrower.expect("transferring", 30_000);
            Thread.sleep(50);
            agent.kill();
            assertThat(agent.process.exitValue()).isEqualTo(137);
            borrower.expect("lost 1", 10_000);
            assertThat(borrower.expect("enters after lost", 10_000)).startsWith("enters after lost 0 ");
            assertThat(borrower.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
            assertThat(borrower.process.exitValue()).isZero();
        }
    }

    @Test
    void theAgentReapsTheRegionsOfABorrowerKilledHoldingThem() throws Exception {
        try (ChildJvm agent = agent(6); ShmPeerLender view = ShmPeerLender.open(path, 9)) {
            ChildJvm borrower = ChildJvm.start(BorrowerMain.class, path.toString(), "hold", "2", Long.toString(2 * REGION));
            borrower.expect("borrowed", 30_000);
            assertThat(view.stats().borrowed()).isEqualTo(4);
            borrower.kill();
            await("both leases reaped", 10_000, () -> view.stats().reaped() == 2);
            demand(0);
            await("every region free again", 10_000, () -> view.stats().free() == 6);
            assertThat(view.lendableBytes()).isEqualTo(6 * REGION);
            LentRegion again = view.borrow(6 * REGION);
            assertThat(again).isNotNull();
            assertThat(again.lease().epoch()).as("lent, reaped (fenced), lent again").isEqualTo(3);
            view.giveBack(again);
        }
    }

    /**
     * Three threads of this JVM read and write their leases (every write stamped with region,
     * epoch and sequence, every read verified) beside a second borrower JVM verifying its own, while
     * the agent's demand swings at random; a quarter of this JVM's revocations are acknowledged
     * late, past the deadline, so fences happen too.
     */
    @Test
    void randomRevocationsUnderConcurrentLoadNeverExposeForeignOrReusedBytes() throws Exception {
        int regions = 12;
        try (ChildJvm agent = agent(regions); ShmPeerLender lender = ShmPeerLender.open(path, 5);
             ChildJvm other = ChildJvm.start(BorrowerMain.class, path.toString(), "hold", "2", Long.toString(REGION + 333))) {
            other.expect("borrowed", 30_000);
            Set<LentRegion> ended = ConcurrentHashMap.newKeySet();
            List<String> failures = new CopyOnWriteArrayList<>();
            AtomicLong reads = new AtomicLong();
            AtomicLong lateAcks = new AtomicLong();
            AtomicLong events = new AtomicLong();
            SplittableRandom ackRandom = new SplittableRandom(11);
            lender.listen(new LenderEvents() {
                @Override
                public void revocationRequested(LentRegion region, long revokedAtNanos, long deadlineNanos) {
                    events.incrementAndGet();
                    ended.add(region);
                    if (ackRandom.nextInt(4) == 0) {
                        lateAcks.incrementAndGet();
                        Thread.ofVirtual().start(() -> {
                            try {
                                Thread.sleep(GRACE_MILLIS + 100);
                            } catch (InterruptedException e) {
                                return;
                            }
                            lender.acknowledge(region); // too late: the agent has fenced it
                        });
                    } else {
                        lender.acknowledge(region);
                    }
                }

                @Override
                public void fenced(LentRegion region) {
                    events.incrementAndGet();
                    ended.add(region);
                }

                @Override
                public void peerLost(int peer) {
                    failures.add("peer lost");
                }
            });
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                long seed = 100 + t;
                workers.add(Thread.ofPlatform().start(() -> work(lender, seed, stop, ended, failures, reads)));
            }
            SplittableRandom random = new SplittableRandom(7);
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
            while (System.nanoTime() < end && failures.isEmpty()) {
                demand(random.nextInt(3) == 0 ? 0 : random.nextLong(regions + 1) * REGION - random.nextLong(100));
                Thread.sleep(random.nextInt(20, 120));
            }
            stop.set(true);
            for (Thread w : workers) {
                w.join(10_000);
            }
            assertThat(failures).isEmpty();
            assertThat(other.process.isAlive()).as("the other borrower found no corrupt byte in its leases").isTrue();
            LendingStats s = lender.stats();
            System.out.println("load: " + reads.get() + " verified reads, " + lateAcks.get() + " late acknowledgements; " + s);
            assertThat(reads.get()).as("verified reads").isGreaterThan(100);
            assertThat(s.revocations()).as("revocations").isGreaterThan(3);
            assertThat(s.acknowledged()).isPositive();
            assertThat(events.get()).isPositive();
            if (lateAcks.get() > 0) {
                await("late acknowledgements fenced", 5_000, () -> lender.stats().fences() > 0);
            }
            assertThat(s.free() + s.claiming() + s.lent() + s.members() + s.revoking() + s.fenced() + s.held())
                    .isEqualTo(regions);
        }
    }

    private static void work(ShmPeerLender lender, long seed, AtomicBoolean stop, Set<LentRegion> ended,
                             List<String> failures, AtomicLong reads) {
        SplittableRandom random = new SplittableRandom(seed);
        List<LentRegion> mine = new ArrayList<>();
        java.util.Map<LentRegion, Long> written = new java.util.HashMap<>(); // lease -> last sequence written
        long sequence = 0;
        while (!stop.get() && failures.isEmpty()) {
            mine.removeIf(ended::contains);
            if (mine.size() < 2 && random.nextInt(3) == 0) {
                LentRegion r = lender.borrow(random.nextLong(1, 2 * REGION + 1));
                if (r != null) {
                    mine.add(r);
                }
            }
            if (mine.isEmpty()) {
                Thread.onSpinWait();
                continue;
            }
            LentRegion r = mine.get(random.nextInt(mine.size()));
            if (random.nextInt(50) == 0) {
                mine.remove(r);
                lender.giveBack(r);
                continue;
            }
            if (!r.enter()) {
                continue;
            }
            try {
                Long last = written.get(r);
                if (last != null) {
                    String problem = verify(r.memory(), r.lease().region(), r.lease().epoch(), last);
                    if (problem != null) {
                        failures.add("before write: " + problem);
                    }
                    reads.incrementAndGet();
                }
                if (random.nextBoolean()) {
                    sequence++;
                    stamp(r.memory(), r.lease().region(), r.lease().epoch(), sequence);
                    written.put(r, sequence);
                    String problem = verify(r.memory(), r.lease().region(), r.lease().epoch(), sequence);
                    if (problem != null) {
                        failures.add("after write: " + problem);
                    }
                    reads.incrementAndGet();
                }
            } finally {
                r.exit();
            }
        }
        for (LentRegion r : mine) {
            if (!ended.contains(r)) {
                lender.giveBack(r);
            }
        }
    }
}
