package dev.strata.node.peer;

import static dev.strata.node.peer.LendingFileLayout.*;
import static dev.strata.node.peer.PeerTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.peer.LenderEvents;
import dev.strata.cache.peer.LentRegion;
import dev.strata.memory.shm.ShmFiles;
import dev.strata.testing.Property;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Random sequences of borrows, accesses (some held open across agent ticks), give-backs,
 * acknowledgements, demand changes, clock jumps and agent ticks, with events delivered at chosen
 * points; after every step the table's invariants, the agent's balance and every lease's guard
 * and bytes are checked.
 */
class PeerAgentPropertyTest {
    static final long REGION = 1024 + 64;
    static final int GRACE_MILLIS = 100;

    /** A lease as the test knows it. */
    static final class Lease {
        final LentRegion region;
        long sequence;          // last stamp written
        boolean revokeAsked;
        boolean ended;          // given back, acknowledged or fenced
        boolean open;           // an access is under way

        Lease(LentRegion region) {
            this.region = region;
        }

        long head() {
            return region.lease().region();
        }

        long epoch() {
            return region.lease().epoch();
        }
    }

    @Test
    void randomLendingKeepsTheTableAndEveryLeaseConsistent() {
        Property.forAll("peer-lending", 12, this::run);
    }

    private void run(SplittableRandom random) throws Exception {
        Path path = newFile("prop");
        SettableDemand demand = new SettableDemand();
        JumpingClock clock = new JumpingClock();
        long regions = random.nextLong(3, 14);
        try (PeerAgent agent = PeerAgent.create(PeerAgentConfig.builder().file(path).budget(regions * REGION).regionSize(REGION)
                .demand(demand).grace(Duration.ofMillis(GRACE_MILLIS)).clock(clock).conclude());
             ShmPeerLender lender = ShmPeerLender.open(path, 1, ShmLenderOptions.defaults()
                     .withHeartbeatTimeout(Duration.ofHours(1)), false);
             Arena arena = Arena.ofConfined()) {
            LendingTable table = view(path, arena);
            List<Object[]> events = new ArrayList<>(); // {"revoke" | "fenced" | "lost", region}: delivered on this thread by poll()
            lender.listen(new LenderEvents() {
                @Override
                public void revocationRequested(LentRegion region, long revokedAtNanos, long deadlineNanos) {
                    events.add(new Object[] {"revoke", region});
                }

                @Override
                public void fenced(LentRegion region) {
                    events.add(new Object[] {"fenced", region});
                }

                @Override
                public void peerLost(int peer) {
                    events.add(new Object[] {"lost", null});
                }
            });
            List<Lease> leases = new ArrayList<>();
            java.util.Map<Object, String> history = new java.util.IdentityHashMap<>();
            for (int step = 0; step < 400; step++) {
                String op;
                int pick = random.nextInt(100);
                if (pick < 20) {
                    op = "borrow";
                    LentRegion r = lender.borrow(random.nextLong(1, 3 * REGION + 1));
                    if (r != null) {
                        long w = table.stateWord(r.lease().region());
                        assertThat(state(w)).as("a new lease is LENT").isEqualTo(LENT);
                        assertThat(epoch(w)).isEqualTo(r.lease().epoch());
                        Lease l = new Lease(r);
                        history.put(r, "borrowed at " + step);
                        assertThat(r.enter()).isTrue();
                        stamp(r.memory(), l.head(), l.epoch(), l.sequence = random.nextLong(1, Long.MAX_VALUE));
                        r.exit();
                        leases.add(l);
                    }
                } else if (pick < 45 && !leases.isEmpty()) {
                    op = "access";
                    Lease l = leases.get(random.nextInt(leases.size()));
                    if (l.open) {
                        assertThat(verify(l.region.memory(), l.head(), l.epoch(), l.sequence))
                                .as("bytes of an access held open across ticks").isNull();
                        l.region.exit();
                        l.open = false;
                    } else {
                        boolean lentNow = table.stateWord(l.head()) == word(LENT, ProcessHandle.current().pid(), l.epoch());
                        boolean entered = l.region.enter();
                        assertThat(entered).as("enter succeeds exactly while the lease is LENT and not ended")
                                .isEqualTo(lentNow && !l.ended);
                        if (entered) {
                            assertThat(verify(l.region.memory(), l.head(), l.epoch(), l.sequence)).isNull();
                            stamp(l.region.memory(), l.head(), l.epoch(), l.sequence = random.nextLong(1, Long.MAX_VALUE));
                            if (random.nextInt(3) == 0) {
                                l.open = true; // stays inside across the next steps
                            } else {
                                l.region.exit();
                            }
                        }
                    }
                } else if (pick < 55 && !leases.isEmpty()) {
                    op = "give back";
                    Lease l = leases.get(random.nextInt(leases.size()));
                    if (!l.open) {
                        lender.giveBack(l.region);
                        history.merge(l.region, "; given back at " + step + (l.ended ? " (ended)" : ""), String::concat);
                        l.ended = true;
                        leases.remove(l);
                    }
                } else if (pick < 65) {
                    op = "acknowledge";
                    for (Lease l : leases) {
                        if (l.revokeAsked && !l.open && !l.ended && random.nextBoolean()) {
                            lender.acknowledge(l.region);
                            history.merge(l.region, "; acknowledged at " + step, String::concat);
                            l.ended = true;
                        }
                    }
                    leases.removeIf(l -> l.ended && !l.open);
                } else if (pick < 72) {
                    op = "demand";
                    demand.bytes.set(Math.max(0, random.nextLong(regions + 1) * REGION - random.nextLong(REGION)));
                } else if (pick < 78) {
                    op = "clock";
                    clock.offsetMillis.addAndGet(random.nextLong(0, 2L * GRACE_MILLIS));
                } else if (pick < 92) {
                    op = "tick";
                    agent.step();
                    LendingStats s = agent.stats();
                    long wanted = (s.demandBytes() + REGION - 1) / REGION;
                    assertThat(s.held()).as("the agent holds no more than it wants after a tick").isLessThanOrEqualTo(wanted);
                    if (s.held() < wanted) {
                        assertThat(s.free()).as("short of its demand, the agent leaves nothing FREE").isZero();
                    }
                } else {
                    op = "events";
                    lender.poll();
                    for (Object[] e : events) {
                        assertThat(e[0]).as("the agent is alive").isNotEqualTo("lost");
                        Lease l = leases.stream().filter(x -> x.region == e[1]).findFirst().orElseThrow(
                                () -> new AssertionError("an event for a lease the test does not hold: " + e[0] + " " + e[1] + "; history " + history.get(e[1])));
                        assertThat(l.ended).as("an event after the lease ended: " + e[0] + " " + l.region).isFalse();
                        if (e[0].equals("revoke")) {
                            assertThat(l.revokeAsked).as("revocation reported twice for " + l.region).isFalse();
                            l.revokeAsked = true;
                        } else {
                            l.ended = true;
                        }
                    }
                    events.clear();
                    long pid = ProcessHandle.current().pid();
                    for (Lease l : leases) {
                        long w = table.stateWord(l.head());
                        boolean current = epoch(w) == l.epoch() && pid(w) == pid && (state(w) == LENT || state(w) == REVOKING);
                        assertThat(current || l.ended).as("a lease fenced by the agent is reported fenced at the next poll: "
                                + l.region + " reads " + stateName(state(w)) + " at epoch " + epoch(w)).isTrue();
                        if (state(w) == REVOKING && current) {
                            assertThat(l.revokeAsked).as("a revocation is reported at the next poll").isTrue();
                        }
                    }
                    leases.removeIf(l -> l.ended && !l.open);
                }
                check(table, agent, leases, regions, op, step);
            }
            for (Lease l : leases) {
                if (l.open) {
                    assertThat(verify(l.region.memory(), l.head(), l.epoch(), l.sequence)).isNull();
                    l.region.exit();
                }
                lender.giveBack(l.region);
            }
            LendingStats before = agent.stats();
            System.out.println("peer-lending trial over " + regions + " regions: " + before.revocations() + " revocations, "
                    + before.acknowledged() + " acknowledged, " + before.fences() + " fences");
            demand.bytes.set(0);
            clock.offsetMillis.addAndGet(10L * GRACE_MILLIS);
            agent.step();
            agent.step();
            LendingStats s = agent.stats();
            assertThat(s.free()).as("everything FREE at the end: " + s).isEqualTo(regions);
            table.checkInvariants();
        } finally {
            delete(path);
        }
    }

    private static void check(LendingTable table, PeerAgent agent, List<Lease> leases, long regions, String op, int step) {
        String at = "after step " + step + " (" + op + ")";
        try {
            table.checkInvariants();
        } catch (IllegalStateException e) {
            throw new AssertionError(at + ": " + e.getMessage() + "; " + agent.stats(), e);
        }
        LendingStats s = agent.stats();
        assertThat(s.free() + s.claiming() + s.lent() + s.members() + s.revoking() + s.fenced() + s.held())
                .as(at + ": every region in one state").isEqualTo(regions);
        long pid = ProcessHandle.current().pid();
        Set<Long> heads = new HashSet<>();
        for (Lease l : leases) {
            long w = table.stateWord(l.head());
            boolean current = epoch(w) == l.epoch() && pid(w) == pid && (state(w) == LENT || state(w) == REVOKING);
            if (current) {
                assertThat(heads.add(l.head())).as(at + ": two current leases on head " + l.head()).isTrue();
            }
            if (!l.ended) {
                assertThat(current || state(w) == FENCED || epoch(w) > l.epoch())
                        .as(at + ": lease " + l.region + " reads " + stateName(state(w)) + " at epoch " + epoch(w)).isTrue();
            }
            if (l.open) {
                assertThat(state(w) == HELD || state(w) == FREE)
                        .as(at + ": the memory of lease " + l.region + " reused under an open access").isFalse();
                assertThat(verify(l.region.memory(), l.head(), l.epoch(), l.sequence)).as(at).isNull();
            }
        }
    }

    /** A second mapping of the lending file, for the test's own look at the table. */
    static LendingTable view(Path path, Arena arena) throws Exception {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            Geometry g = LendingFileLayout.Header.of(ShmFiles.readHeader(ch, (int) LendingFileLayout.HEADER_SIZE)).validate(path);
            MemorySegment m = ch.map(FileChannel.MapMode.READ_WRITE, 0, g.totalSize(), arena);
            return new LendingTable(m, g);
        }
    }
}
