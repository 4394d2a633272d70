package dev.strata.cache.peer;

import dev.strata.cache.Durability;
import dev.strata.memory.Allocator;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The PEER tier over a real {@link PeerClient} and {@link LocalLender}: sub-allocation, budgets, revocation. */
class PeerTierTest {
    private static final long KiB = 1024;

    private final List<AutoCloseable> open = new ArrayList<>();

    private LocalLender lender(int id, long budget) {
        return new LocalLender(LocalLender.Config.of(id, "peer" + id, budget));
    }

    private PeerClient client(LocalLender... lenders) {
        PeerClient c = PeerClient.of(List.of(lenders), "best-fit");
        open.add(c);
        return c;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    static byte[] randomBytes(SplittableRandom r, int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) r.nextInt(256);
        }
        b[0] |= 1;
        return b;
    }

    static byte[] readBack(PeerTier tier, long handle, int size) {
        byte[] out = new byte[size];
        assertThat(tier.read(handle, MemorySegment.ofArray(out))).as("read of handle %d", handle).isTrue();
        return out;
    }

    /** Waits until the lender has no region waiting for its client and the client no revocation in progress. */
    static void awaitRevocations(PeerClient client, LocalLender... lenders) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() < deadline) {
            boolean quiet = client.revocationsIdle();
            for (LocalLender l : lenders) {
                quiet &= l.stats().revokingBytes() == 0;
            }
            if (quiet && client.liveLeases().stream().allMatch(client::valid) && client.revocationsIdle()) {
                return;
            }
            Thread.sleep(1);
        }
        throw new AssertionError("revocations did not finish in 10 s");
    }

    @Test
    void objectsPackIntoChunksAndReadBackByteExact() {
        LocalLender lender = lender(0, 256 * KiB);
        PeerClient client = client(lender);
        PeerTier tier = new PeerTier("peer", client, 128 * KiB, 16 * KiB, LeaseHints.of(Durability.LOSSY));
        open.add(tier);
        SplittableRandom r = new SplittableRandom(11);
        List<Long> handles = new ArrayList<>();
        List<byte[]> data = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            int size = 1 + r.nextInt(3001); // odd sizes
            long h = tier.allocate(size);
            assertThat(h).isNotEqualTo(Allocator.FULL);
            byte[] b = randomBytes(r, size);
            tier.write(h, MemorySegment.ofArray(b));
            handles.add(h);
            data.add(b);
            tier.checkInvariants();
        }
        for (int i = 0; i < handles.size(); i++) {
            assertThat(readBack(tier, handles.get(i), data.get(i).length)).isEqualTo(data.get(i));
            assertThat(tier.live(handles.get(i))).isTrue();
        }
        long total = data.stream().mapToLong(b -> b.length).sum();
        assertThat(tier.used()).isGreaterThanOrEqualTo(total);
        assertThat(tier.borrowedBytes()).as("whole chunks, no more than needed plus one")
                .isBetween(tier.used(), tier.used() + 2 * 16 * KiB);
        assertThat(tier.counters().leasesBorrowed()).isEqualTo(tier.leaseCount());

        // a gather-write and scatter-read of one object in odd parts
        long h = tier.allocate(777);
        byte[] whole = randomBytes(r, 777);
        tier.gatherWrite(h, List.of(MemorySegment.ofArray(whole).asSlice(0, 100), MemorySegment.ofArray(whole).asSlice(100, 677)));
        byte[] a = new byte[333];
        byte[] b = new byte[444];
        assertThat(tier.scatterRead(h, List.of(MemorySegment.ofArray(a), MemorySegment.ofArray(b)))).isTrue();
        byte[] joined = new byte[777];
        System.arraycopy(a, 0, joined, 0, 333);
        System.arraycopy(b, 0, joined, 333, 444);
        assertThat(joined).isEqualTo(whole);
        tier.free(h);

        assertThatThrownBy(() -> tier.write(handles.get(0), MemorySegment.ofArray(new byte[5000])))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("5000 bytes");
        assertThatThrownBy(() -> tier.segment(handles.get(0), 0, 1)).isInstanceOf(UnsupportedOperationException.class);

        for (long x : handles) {
            tier.free(x);
            tier.checkInvariants();
        }
        assertThat(tier.used()).isZero();
        assertThat(tier.leaseCount()).as("one spare chunk is kept").isEqualTo(1);
        assertThatThrownBy(() -> tier.free(handles.get(0))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("is not allocated in tier 'peer'");
        tier.close();
        assertThat(lender.stats().lentBytes()).as("close gives the leases back").isZero();
    }

    @Test
    void aLargeObjectGetsALeaseOfItsOwnGivenBackWhenFreed() {
        LocalLender lender = lender(0, 256 * KiB);
        PeerClient client = client(lender);
        PeerTier tier = new PeerTier("peer", client, 128 * KiB, 8 * KiB, LeaseHints.of(Durability.BACKED));
        open.add(tier);
        long small = tier.allocate(100);
        long big = tier.allocate(20 * KiB + 3);
        assertThat(big).isNotEqualTo(Allocator.FULL);
        assertThat(tier.leaseCount()).isEqualTo(2);
        byte[] bytes = randomBytes(new SplittableRandom(3), (int) (20 * KiB + 3));
        tier.write(big, MemorySegment.ofArray(bytes));
        assertThat(readBack(tier, big, bytes.length)).isEqualTo(bytes);
        long other = tier.allocate(200);
        assertThat(tier.leaseOf(other)).as("small objects never go into a large object's lease").isEqualTo(tier.leaseOf(small));
        tier.free(big);
        assertThat(tier.leaseCount()).isEqualTo(1);
        assertThat(tier.counters().leasesReturned()).isEqualTo(1);
        assertThat(tier.allocate(200 * KiB)).as("over the budget").isEqualTo(Allocator.FULL);
        tier.free(small);
        tier.free(other);
        tier.checkInvariants();
    }

    @Test
    void theBudgetAndThePeersOfferBoundBorrowing() {
        LocalLender lender = lender(0, 64 * KiB);
        PeerClient client = client(lender);
        PeerTier tier = new PeerTier("peer", client, 32 * KiB, 16 * KiB, LeaseHints.of(Durability.LOSSY));
        open.add(tier);
        assertThat(tier.capacity()).isEqualTo(32 * KiB);
        long a = tier.allocate(16 * KiB);
        long b = tier.allocate(16 * KiB);
        assertThat(a).isNotEqualTo(Allocator.FULL);
        assertThat(b).isNotEqualTo(Allocator.FULL);
        assertThat(tier.allocate(64)).as("the budget is borrowed").isEqualTo(Allocator.FULL);
        tier.free(a);
        tier.free(b);
        assertThat(tier.leaseCount()).as("one empty chunk is kept").isEqualTo(1);
        lender.lendable(24 * KiB); // the kept chunk stays lent; 8 KiB more on offer
        tier.refresh();
        assertThat(tier.capacity()).as("the kept chunk plus what the peer offers").isEqualTo(16 * KiB + 8 * KiB);
        long c = tier.allocate(16 * KiB);
        assertThat(c).as("the kept chunk is reused").isNotEqualTo(Allocator.FULL);
        assertThat(tier.allocate(16 * KiB)).as("the peer offers too little for a new chunk").isEqualTo(Allocator.FULL);
        assertThat(tier.counters().borrowFailures()).isEqualTo(1);
        tier.free(c);
        tier.checkInvariants();
    }

    @Test
    void aRevokedLeaseReportsItsHandlesOnceAndTheirReadsMiss() throws Exception {
        LocalLender lender = lender(0, 256 * KiB);
        PeerClient client = client(lender);
        PeerTier tier = new PeerTier("peer", client, 128 * KiB, 16 * KiB, LeaseHints.of(Durability.LOSSY));
        open.add(tier);
        ConcurrentLinkedQueue<Long> told = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<RevocationReason> reasons = new ConcurrentLinkedQueue<>();
        tier.listen((t, handles, reason) -> {
            assertThat(t).isSameAs(tier);
            for (long h : handles) {
                told.add(h);
            }
            reasons.add(reason);
        });
        SplittableRandom r = new SplittableRandom(5);
        List<Long> handles = new ArrayList<>();
        List<byte[]> data = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            int size = 500 + r.nextInt(2500);
            long h = tier.allocate(size);
            byte[] b = randomBytes(r, size);
            tier.write(h, MemorySegment.ofArray(b));
            handles.add(h);
            data.add(b);
        }
        int leases = tier.leaseCount();
        assertThat(leases).isGreaterThan(1);

        lender.lendable(0); // the peer wants all of it back
        awaitRevocations(client, lender);

        assertThat(told).as("every live handle, once").containsExactlyInAnyOrderElementsOf(handles);
        assertThat(reasons).hasSize(leases).containsOnly(RevocationReason.RECLAIMED);
        assertThat(tier.used()).isZero();
        assertThat(tier.borrowedBytes()).isZero();
        assertThat(tier.counters().leasesRevoked()).isEqualTo(leases);
        assertThat(tier.counters().handlesRevoked()).isEqualTo(handles.size());
        for (int i = 0; i < handles.size(); i++) {
            long h = handles.get(i);
            assertThat(tier.live(h)).isFalse();
            byte[] dst = new byte[data.get(i).length];
            assertThat(tier.read(h, MemorySegment.ofArray(dst))).as("never stale bytes").isFalse();
            tier.write(h, MemorySegment.ofArray(data.get(i))); // stores nothing, no error
        }
        assertThat(tier.counters().lostWrites()).isEqualTo(handles.size());
        tier.checkInvariants();
        for (long h : handles) {
            tier.free(h); // releases nothing on the peer
        }
        tier.checkInvariants();
        assertThat(tier.read(handles.get(0), MemorySegment.ofArray(new byte[10]))).as("a forgotten chunk's handle misses").isFalse();

        lender.lendable(256 * KiB);
        tier.refresh();
        Set<Long> old = new HashSet<>(handles);
        long fresh = tier.allocate(600);
        assertThat(fresh).isNotEqualTo(Allocator.FULL);
        assertThat(old).as("a new lease never reuses a revoked handle").doesNotContain(fresh);
        byte[] b = randomBytes(r, 600);
        tier.write(fresh, MemorySegment.ofArray(b));
        assertThat(readBack(tier, fresh, 600)).isEqualTo(b);
        tier.free(fresh);
        lender.checkInvariants();
    }

    @Test
    void aKilledPeerFailsReadsAtOnceAndReportsPeerLost() throws Exception {
        LocalLender a = lender(0, 64 * KiB);
        LocalLender b = lender(1, 64 * KiB);
        PeerClient client = client(a, b);
        PeerTier tier = new PeerTier("peer", client, 128 * KiB, 16 * KiB, LeaseHints.of(Durability.LOSSY));
        open.add(tier);
        ConcurrentLinkedQueue<RevocationReason> reasons = new ConcurrentLinkedQueue<>();
        tier.listen((t, handles, reason) -> reasons.add(reason));
        List<Long> handles = new ArrayList<>();
        for (int i = 0; i < 18; i++) { // 3 per chunk; 4 chunks fill peer 0, best fit then goes to peer 1
            long h = tier.allocate(4 * KiB + 1);
            tier.write(h, MemorySegment.ofArray(randomBytes(new SplittableRandom(i), (int) (4 * KiB + 1))));
            handles.add(h);
        }
        assertThat(client.peers()).allMatch(p -> p.borrowedBytes() > 0);
        a.kill();
        int missed = 0;
        for (long h : handles) {
            byte[] dst = new byte[(int) (4 * KiB + 1)];
            if (!tier.read(h, MemorySegment.ofArray(dst))) {
                missed++;
            } else {
                assertThat(dst[0] & 1).isEqualTo(1);
            }
        }
        assertThat(missed).as("the dead peer's objects miss at once").isPositive().isLessThan(handles.size());
        awaitRevocations(client, a, b);
        assertThat(reasons).isNotEmpty().containsOnly(RevocationReason.PEER_LOST);
        for (long h : handles) {
            tier.free(h);
        }
        tier.checkInvariants();
        assertThat(tier.used()).isZero();
    }

    /**
     * A borrowing under way (its bytes reserved, the peer call not yet answered) is part of the
     * bookkeeping: the invariant check run at that moment passes, and still catches a real
     * mismatch afterwards.
     */
    @Test
    void invariantsHoldWhileABorrowingIsUnderWay() throws Exception {
        LocalLender lender = lender(0, 256 * KiB);
        PeerClient client = client(lender);
        java.util.concurrent.CountDownLatch inAlloc = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch answer = new java.util.concurrent.CountDownLatch(1);
        PeerMemory slowPeers = new PeerMemory() {
            @Override
            public java.util.Optional<PeerLease> alloc(long size, LeaseHints hints) {
                inAlloc.countDown();
                try {
                    answer.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return client.alloc(size, hints);
            }

            @Override
            public void free(PeerLease lease) {
                client.free(lease);
            }

            @Override
            public void onRevoke(PeerLease lease, RevocationCallback callback) {
                client.onRevoke(lease, callback);
            }

            @Override
            public boolean write(PeerLease lease, long offset, MemorySegment src) {
                return client.write(lease, offset, src);
            }

            @Override
            public boolean read(PeerLease lease, long offset, MemorySegment dst) {
                return client.read(lease, offset, dst);
            }

            @Override
            public boolean valid(PeerLease lease) {
                return client.valid(lease);
            }

            @Override
            public List<PeerStatus> peers() {
                return client.peers();
            }

            @Override
            public void close() {
            }
        };
        PeerTier tier = new PeerTier("peer", slowPeers, 64 * KiB, 16 * KiB, LeaseHints.of(Durability.LOSSY));
        open.add(tier);
        java.util.concurrent.CompletableFuture<Long> handle =
                java.util.concurrent.CompletableFuture.supplyAsync(() -> tier.allocate(1000));
        assertThat(inAlloc.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        assertThat(tier.borrowedBytes()).as("the borrowing's bytes are reserved").isEqualTo(16 * KiB);
        tier.checkInvariants(); // a borrowing under way: no live lease yet, but the reservation is accounted
        answer.countDown();
        assertThat(handle.get(10, java.util.concurrent.TimeUnit.SECONDS)).isNotEqualTo(Allocator.FULL);
        tier.checkInvariants();
        assertThat(tier.borrowedBytes()).isEqualTo(16 * KiB);
        assertThat(tier.leaseCount()).isEqualTo(1);
    }
}
