package dev.strata.cache;

import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerTier;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import dev.strata.testing.Property;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store over a DEVICE → PEER → HOST chain whose PEER tier borrows from real in-process peers
 * ({@link PeerClient} over {@link LocalLender}s) that take their memory back at random.
 */
class TieredStorePeerTest {
    private static final long KiB = 1024;

    /** One chain with its peers and the drops the store reported. */
    private static final class Rig implements AutoCloseable {
        final LocalLender[] lenders;
        final PeerClient client;
        final PeerTier peer;
        final DeviceTier device = DeviceTier.cpu("device-" + System.nanoTime(), 16 * KiB);
        final HostTier host = HostTier.create("host-" + System.nanoTime(), 2048 * KiB);
        final TieredStore store;
        final Map<ObjectKey, AtomicInteger> drops = new ConcurrentHashMap<>();
        final ConcurrentLinkedQueue<String> wrongDrops = new ConcurrentLinkedQueue<>();

        Rig(long peerBudget, long chunk, int lenderCount) {
            lenders = new LocalLender[lenderCount];
            for (int i = 0; i < lenderCount; i++) {
                lenders[i] = new LocalLender(LocalLender.Config.of(i, "peer" + i, peerBudget));
            }
            client = PeerClient.of(List.of(lenders), "best-fit");
            peer = new PeerTier("peer", client, peerBudget * lenderCount, chunk, LeaseHints.of(Durability.LOSSY));
            store = TieredStore.builder()
                    .tier(device, 0.95, 0.85, PolicyKind.PRIORITY_LRU)
                    .tier(peer, 0.95, 0.85, PolicyKind.PRIORITY_LRU)
                    .tier(host, 1.0, 0.9, PolicyKind.PRIORITY_LRU)
                    .dropListener((key, kind, durability, size, reason) -> {
                        drops.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                        if (durability != Durability.LOSSY || (reason != DropReason.REVOKED && reason != DropReason.EVICTED)) {
                            wrongDrops.add(key + " " + durability + " " + reason);
                        }
                    })
                    .build();
        }

        int dropsOf(ObjectKey key) {
            AtomicInteger n = drops.get(key);
            return n == null ? 0 : n.get();
        }

        void awaitRevocations() throws InterruptedException {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (System.nanoTime() < deadline) {
                boolean quiet = client.revocationsIdle();
                for (LocalLender l : lenders) {
                    quiet &= l.stats().revokingBytes() == 0;
                }
                if (quiet && client.liveLeases().stream().allMatch(client::valid) && client.revocationsIdle()) {
                    store.absorbRevocations();
                    return;
                }
                Thread.sleep(1);
            }
            throw new AssertionError("revocations did not finish in 10 s");
        }

        void checkAll() {
            store.checkPlacement();
            peer.checkInvariants();
            for (LocalLender l : lenders) {
                l.checkInvariants();
            }
            assertThat(wrongDrops).as("drops of BACKED objects or for other reasons").isEmpty();
        }

        @Override
        public void close() {
            store.close();
            assertThat(device.used()).as("device bytes after the store closed").isZero();
            assertThat(peer.used()).as("peer bytes after the store closed").isZero();
            assertThat(host.used()).as("host bytes after the store closed").isZero();
            peer.close();
            client.close();
            device.close();
            host.close();
        }
    }

    /** The bytes of object {@code id}: seeded, odd-sized, never all zero. */
    static byte[] bytesOf(long id) {
        SplittableRandom r = new SplittableRandom(id * 0x9E3779B97F4A7C15L + 17);
        return TestBytes.random(r, 1 + r.nextInt(2999));
    }

    static byte[] read(TieredStore store, ObjectKey key) {
        try (ObjectView v = store.get(key)) {
            return v == null ? null : TestBytes.toArray(v.bytes());
        }
    }

    private static List<String> tierNames(TieredStore store, ObjectKey key) {
        return store.residencies(key).stream().map(ResidencyInfo::tierName).toList();
    }

    @Test
    void backedObjectsOnPeersAreWrittenThroughAndServedFromHostAfterRevocation() throws Exception {
        try (Rig rig = new Rig(128 * KiB, 8 * KiB, 1)) {
            List<ObjectKey> keys = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                ObjectKey k = ObjectKey.of(100 + i);
                assertThat(rig.store.put(k, ObjectKind.EXPERT, Durability.BACKED, PriorityClass.RECENT,
                        TestBytes.segment(bytesOf(100 + i)), 1)).isEqualTo(PutStatus.STORED);
                assertThat(tierNames(rig.store, k)).containsExactly("peer", rig.host.name());
                keys.add(k);
            }
            rig.checkAll();
            rig.lenders[0].lendable(0);
            rig.awaitRevocations();
            rig.checkAll();
            for (int i = 0; i < keys.size(); i++) {
                assertThat(tierNames(rig.store, keys.get(i))).containsExactly(rig.host.name());
                try (ObjectView v = rig.store.get(keys.get(i))) {
                    assertThat(v).isNotNull();
                    assertThat(TestBytes.toArray(v.bytes())).isEqualTo(bytesOf(100 + i));
                }
            }
            assertThat(rig.drops).isEmpty();
            assertThat(rig.store.revocations().copiesLost()).isEqualTo(12);
            assertThat(rig.store.revocations().lossyDropped()).isZero();
            for (ObjectKey k : keys) {
                rig.store.remove(k);
            }
        }
    }

    @Test
    void lossyObjectsOnlyOnPeersAreDroppedAndReportedOnceAsRevoked() throws Exception {
        try (Rig rig = new Rig(128 * KiB, 8 * KiB, 1)) {
            List<ObjectKey> keys = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                ObjectKey k = ObjectKey.of(200 + i);
                assertThat(rig.store.put(k, ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.RECENT,
                        TestBytes.segment(bytesOf(200 + i)), 1)).isEqualTo(PutStatus.STORED);
                assertThat(tierNames(rig.store, k)).containsExactly("peer");
                keys.add(k);
            }
            assertThat(read(rig.store, keys.get(0))).isEqualTo(bytesOf(200));
            assertThat(tierNames(rig.store, keys.get(0))).as("promoted to the top, inclusive").containsExactly(
                    rig.device.name(), "peer");
            rig.lenders[0].lendable(0);
            rig.awaitRevocations();
            rig.checkAll();
            rig.store.absorbRevocations();
            assertThat(rig.dropsOf(keys.get(0))).as("its DEVICE copy survives").isZero();
            for (int i = 1; i < keys.size(); i++) {
                assertThat(rig.dropsOf(keys.get(i))).as("drops of %s", keys.get(i)).isEqualTo(1);
                assertThat(rig.store.contains(keys.get(i))).isFalse();
                assertThat(read(rig.store, keys.get(i))).isNull();
            }
            assertThat(rig.store.revocations().lossyDropped()).isEqualTo(11);
            rig.store.remove(keys.get(0));
        }
    }

    @Test
    void readsRacingADeadPeerMissOrServeTheHostCopyAndDropsStayExactlyOnce() throws Exception {
        try (Rig rig = new Rig(64 * KiB, 8 * KiB, 2)) {
            List<ObjectKey> lossy = new ArrayList<>();
            List<ObjectKey> backed = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                ObjectKey k = ObjectKey.of(300 + i);
                Durability d = i % 2 == 0 ? Durability.LOSSY : Durability.BACKED;
                assertThat(rig.store.put(k, ObjectKind.KV_BLOCK, d, PriorityClass.RECENT, TestBytes.segment(bytesOf(300 + i)), 1))
                        .isEqualTo(PutStatus.STORED);
                (d == Durability.LOSSY ? lossy : backed).add(k);
            }
            rig.lenders[0].kill(); // its leases' epochs advance now; the client hears of it later
            for (ObjectKey k : lossy) {
                byte[] got = read(rig.store, k);
                if (got != null) {
                    assertThat(got).isEqualTo(bytesOf(k.low()));
                }
            }
            for (ObjectKey k : backed) {
                assertThat(read(rig.store, k)).as("BACKED %s", k).isEqualTo(bytesOf(k.low()));
            }
            rig.awaitRevocations();
            rig.checkAll();
            int dropped = 0;
            for (ObjectKey k : lossy) {
                if (rig.store.contains(k)) {
                    assertThat(rig.dropsOf(k)).isZero();
                    assertThat(read(rig.store, k)).isEqualTo(bytesOf(k.low()));
                } else {
                    assertThat(rig.dropsOf(k)).as("drops of %s", k).isEqualTo(1);
                    dropped++;
                }
            }
            assertThat(dropped).as("the dead peer held some LOSSY objects").isPositive();
            for (ObjectKey k : backed) {
                assertThat(rig.dropsOf(k)).isZero();
                assertThat(read(rig.store, k)).isEqualTo(bytesOf(k.low()));
            }
            for (ObjectKey k : lossy) {
                rig.store.remove(k);
            }
            for (ObjectKey k : backed) {
                rig.store.remove(k);
            }
        }
    }

    @Test
    void randomRevocationsUnderLoadKeepEveryInvariant() {
        AtomicLong revokedCopies = new AtomicLong();
        AtomicLong revokedDrops = new AtomicLong();
        AtomicLong concurrentReads = new AtomicLong();
        Property.forAll("tiered-store-peer-revocations", 8, random -> {
            try (Rig rig = new Rig(48 * KiB, 8 * KiB, 2)) {
                List<ObjectKey> stored = new ArrayList<>();
                Set<ObjectKey> removed = new HashSet<>();
                Map<ObjectKey, Durability> durability = new ConcurrentHashMap<>();
                AtomicInteger published = new AtomicInteger(); // ids below this may be read by the reader
                AtomicBoolean stop = new AtomicBoolean();
                AtomicReference<Throwable> readerFailure = new AtomicReference<>();
                long readerSeed = random.nextLong();
                Thread reader = Thread.ofPlatform().name("store-reader").start(() -> {
                    SplittableRandom r = new SplittableRandom(readerSeed);
                    try {
                        while (!stop.get()) {
                            int n = published.get();
                            if (n == 0) {
                                Thread.onSpinWait();
                                continue;
                            }
                            long id = r.nextInt(n);
                            byte[] got = read(rig.store, ObjectKey.of(id));
                            if (got != null && !java.util.Arrays.equals(got, bytesOf(id))) {
                                throw new AssertionError("object " + id + " read back different bytes");
                            }
                            concurrentReads.incrementAndGet();
                        }
                    } catch (Throwable t) {
                        readerFailure.compareAndSet(null, t);
                    }
                });
                boolean killed = false;
                try {
                    for (int step = 0; step < 250; step++) {
                        int op = random.nextInt(100);
                        if (op < 35) {
                            long id = published.get();
                            ObjectKey k = ObjectKey.of(id);
                            Durability d = random.nextInt(3) == 0 ? Durability.BACKED : Durability.LOSSY;
                            durability.put(k, d);
                            PutStatus s = rig.store.put(k, ObjectKind.KV_BLOCK, d, PriorityClass.RECENT,
                                    TestBytes.segment(bytesOf(id)), random.nextInt(3));
                            published.incrementAndGet();
                            if (s == PutStatus.STORED) {
                                stored.add(k);
                            } else {
                                assertThat(s).isIn(PutStatus.REFUSED_NO_SPACE, PutStatus.REFUSED_TOO_LARGE);
                            }
                        } else if (op < 60 && !stored.isEmpty()) {
                            ObjectKey k = stored.get(random.nextInt(stored.size()));
                            byte[] got = read(rig.store, k);
                            if (got != null) {
                                assertThat(got).as("bytes of %s", k).isEqualTo(bytesOf(k.low()));
                            } else if (!removed.contains(k)) {
                                assertThat(durability.get(k)).as("a BACKED object is always readable: %s", k)
                                        .isEqualTo(Durability.LOSSY);
                            }
                        } else if (op < 68 && !stored.isEmpty()) {
                            ObjectKey k = stored.get(random.nextInt(stored.size()));
                            if (rig.store.remove(k)) {
                                removed.add(k);
                            }
                        } else if (op < 88) {
                            LocalLender l = rig.lenders[random.nextInt(rig.lenders.length)];
                            l.lendable(random.nextInt(4) == 0 ? 0 : random.nextLong(48 * KiB + 1));
                        } else if (op < 90 && !killed && random.nextInt(4) == 0) {
                            rig.lenders[1].kill();
                            killed = true;
                        } else {
                            rig.store.absorbRevocations();
                        }
                        rig.checkAll();
                    }
                } finally {
                    stop.set(true);
                    reader.join();
                }
                assertThat(readerFailure.get()).as("the concurrent reader").isNull();
                rig.awaitRevocations();
                rig.checkAll();
                for (ObjectKey k : stored) {
                    if (removed.contains(k)) {
                        assertThat(rig.dropsOf(k)).as("a removed object is never reported: %s", k).isZero();
                    } else if (rig.store.contains(k)) {
                        assertThat(rig.dropsOf(k)).as("a stored object is not reported: %s", k).isZero();
                        assertThat(read(rig.store, k)).isEqualTo(bytesOf(k.low()));
                    } else {
                        assertThat(durability.get(k)).as("only LOSSY objects leave: %s", k).isEqualTo(Durability.LOSSY);
                        assertThat(rig.dropsOf(k)).as("drop reports of %s", k).isEqualTo(1);
                    }
                }
                revokedCopies.addAndGet(rig.store.revocations().copiesLost());
                revokedDrops.addAndGet(rig.store.revocations().lossyDropped());
                for (ObjectKey k : stored) {
                    rig.store.remove(k);
                }
            }
        });
        assertThat(revokedCopies.get()).as("revocations hit stored copies").isPositive();
        assertThat(revokedDrops.get()).as("revocations dropped LOSSY objects").isPositive();
        assertThat(concurrentReads.get()).as("reads ran alongside").isPositive();
    }
}
