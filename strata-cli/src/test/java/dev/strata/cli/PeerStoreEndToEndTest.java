package dev.strata.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.strata.cache.DropReason;
import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.ObjectKind;
import dev.strata.cache.ObjectView;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.PutStatus;
import dev.strata.cache.ResidencyInfo;
import dev.strata.cache.StoreChecks;
import dev.strata.cache.TieredStore;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerClientStats;
import dev.strata.cache.peer.PeerLease;
import dev.strata.cache.peer.PeerTier;
import dev.strata.cache.peer.RevokedHandles;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.host.HostTier;
import dev.strata.node.peer.LendingStats;
import dev.strata.node.peer.ShmLenderOptions;
import dev.strata.node.peer.ShmPeerLender;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * Peer memory end to end across processes: a real {@code strata peer} agent JVM lends from a
 * {@code /dev/shm} file; this JVM runs a {@link TieredStore} over the chain PEER → HOST, where PEER
 * is a {@link PeerTier} over a {@link PeerClient} over a {@link ShmPeerLender}. Worker threads put
 * BACKED and LOSSY objects of seeded random bytes and odd sizes and read them back, verifying every
 * byte, while the agent is SIGKILLed, reclaims memory (its demand rises), or fences a client that
 * does not acknowledge in time. Afterwards: every BACKED object is served from HOST byte-exact;
 * every LOSSY object is either readable byte-exact or was reported dropped exactly once with
 * {@link DropReason#REVOKED} (and the store's own count agrees); no read or write through an ended
 * lease succeeds (attempted and counted); the store's placement, the tier's and the client's
 * invariants hold (checked during the run too).
 */
class PeerStoreEndToEndTest {
    private static final long KiB = 1024;
    private static final long REGION = 64 * KiB;            // bytes per agent region = one PeerTier chunk
    private static final int REGIONS = 16;                  // agent budget: 1 MiB
    private static final int WORKERS = 3;
    private static final int OBJECTS_PER_WORKER = 400;      // objects of 1..12000 bytes: ~7 MiB in all
    private static final long TIMEOUT_MILLIS = 30_000;      // generous: a loaded 2-core machine

    /** A {@code strata peer} agent in its own JVM, lending {@link #REGIONS} regions, its demand read from a file. */
    private static final class Agent implements AutoCloseable {
        final Path file;
        final Path demand;
        final Process process;
        final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();

        Agent(long graceMillis) throws Exception {
            this(graceMillis, Path.of("/dev/shm", "strata-peer-e2e-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + ".lend"));
        }

        /** An agent lending through {@code file}: a new one, or the file of an agent killed before (a restart). */
        Agent(long graceMillis, Path file) throws Exception {
            this.file = file;
            this.demand = Path.of(file + ".demand");
            demand(0);
            String java = System.getProperty("strata.java", ProcessHandle.current().info().command().orElse("java"));
            process = new ProcessBuilder(java, "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                    "-Xmx128m", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), StrataCommand.class.getName(),
                    "peer", "--file", file.toString(), "--budget", Long.toString(REGIONS * REGION), "--region", Long.toString(REGION),
                    "--demand", "file:" + demand, "--grace-ms", Long.toString(graceMillis)).redirectErrorStream(true).start();
            Thread.ofPlatform().daemon().start(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String l; (l = r.readLine()) != null; ) {
                        lines.add(l);
                    }
                } catch (IOException ignored) {
                    // the agent is gone
                }
            });
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
            List<String> seen = new ArrayList<>();
            while (true) {
                String l = lines.poll(100, TimeUnit.MILLISECONDS);
                if (l != null && l.startsWith("strata peer ready")) {
                    return;
                }
                if (l != null) {
                    seen.add(l);
                }
                if (System.nanoTime() > deadline || !process.isAlive() && lines.isEmpty()) {
                    close();
                    throw new AssertionError("the agent (pid " + process.pid() + ") did not get ready; it printed " + seen);
                }
            }
        }

        void demand(long bytes) throws IOException {
            Path temp = Path.of(demand + ".tmp");
            Files.writeString(temp, Long.toString(bytes), StandardCharsets.UTF_8);
            Files.move(temp, demand, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        }

        /** SIGKILL, and reap. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            assertThat(process.waitFor(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS)).as("the agent died").isTrue();
            assertThat(process.exitValue()).as("killed by SIGKILL").isEqualTo(137);
        }

        @Override
        public void close() throws Exception {
            process.destroyForcibly();
            process.waitFor(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            Files.deleteIfExists(file);
            Files.deleteIfExists(demand);
            Files.deleteIfExists(Path.of(file + ".lock"));
            Files.deleteIfExists(Path.of(demand + ".tmp"));
        }
    }

    /** The client side: lender, peer client, PEER → HOST store, and what the run observed. */
    private static final class Rig implements AutoCloseable {
        final Agent agent;
        Agent restarted;               // the agent started again on the first one's file, if any
        final ShmPeerLender lender;
        final ShmPeerLender observer;  // a second view of the file, for the agent's counters; never borrows
        final PeerClient client;
        final PeerTier peer;
        final HostTier host = HostTier.create("host-e2e-" + System.nanoTime(), 32 * 1024 * KiB);
        final TieredStore store;
        final Map<ObjectKey, AtomicInteger> drops = new ConcurrentHashMap<>();
        final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        final Map<ObjectKey, Long> stored = new ConcurrentHashMap<>();       // key -> id of its bytes
        final Map<ObjectKey, Durability> durability = new ConcurrentHashMap<>();
        final Set<PeerLease> leasesSeen = ConcurrentHashMap.newKeySet();
        final AtomicLong operations = new AtomicLong();
        final AtomicLong servedByPeer = new AtomicLong();
        final AtomicLong servedByPeerAfterLoss = new AtomicLong();
        final AtomicBoolean stop = new AtomicBoolean();
        volatile boolean lossSeen;    // the client saw the peer lost: no get may be served by PEER from then on
        final List<Thread> threads = new ArrayList<>();

        Rig(long graceMillis) throws Exception {
            agent = new Agent(graceMillis);
            lender = ShmPeerLender.open(agent.file, 0, ShmLenderOptions.defaults().withName("agent"));
            observer = ShmPeerLender.open(agent.file, 9);
            client = PeerClient.of(List.of(lender), "best-fit");
            peer = new PeerTier("peer", client, REGIONS * REGION, REGION, LeaseHints.of(Durability.LOSSY));
            store = TieredStore.builder()
                    .tier(peer, 0.95, 0.85, PolicyKind.PRIORITY_LRU)
                    .tier(host, 1.0, 0.9, PolicyKind.PRIORITY_LRU)
                    .dropListener((key, kind, d, size, reason) -> {
                        drops.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                        if (d != Durability.LOSSY || reason != DropReason.REVOKED) {
                            failures.add("drop of " + key + " (" + d + ") for " + reason);
                        }
                    })
                    .build();
        }

        /** Starts the workers and a thread that records every lease the client holds. */
        void start() {
            for (int w = 0; w < WORKERS; w++) {
                int worker = w;
                threads.add(Thread.ofPlatform().name("e2e-worker-" + w).start(() -> work(worker)));
            }
            threads.add(Thread.ofPlatform().name("e2e-lease-sampler").start(() -> {
                while (!stop.get()) {
                    leasesSeen.addAll(client.liveLeases());
                    sleep(1);
                }
            }));
        }

        /** One worker: puts its own objects (BACKED or LOSSY at random), reads them back and checks every byte. */
        void work(int worker) {
            SplittableRandom random = new SplittableRandom(1000 + worker);
            List<ObjectKey> mine = new ArrayList<>();
            try {
                while (!stop.get() && failures.isEmpty()) {
                    if (mine.size() < OBJECTS_PER_WORKER && (mine.isEmpty() || random.nextInt(10) == 0)) {
                        long id = (long) worker << 32 | mine.size();
                        ObjectKey key = ObjectKey.of(id);
                        Durability d = random.nextBoolean() ? Durability.BACKED : Durability.LOSSY;
                        durability.put(key, d);
                        stored.put(key, id);
                        PutStatus status = store.put(key, ObjectKind.KV_BLOCK, d, PriorityClass.RECENT, MemorySegment.ofArray(bytesOf(id)));
                        if (status != PutStatus.STORED) {
                            failures.add("put of " + key + " (" + d + "): " + status);
                        }
                        mine.add(key);
                    } else {
                        ObjectKey key = mine.get(random.nextInt(mine.size()));
                        boolean lostBefore = lossSeen;
                        try (ObjectView v = store.get(key)) {
                            if (v != null) {
                                byte[] got = v.bytes().toArray(ValueLayout.JAVA_BYTE);
                                if (!Arrays.equals(got, bytesOf(stored.get(key)))) {
                                    failures.add("get of " + key + " from tier '" + v.tierName() + "' returned other bytes");
                                }
                                if (v.tierName().equals(peer.name())) {
                                    servedByPeer.incrementAndGet();
                                    if (lostBefore) {
                                        servedByPeerAfterLoss.incrementAndGet();
                                    }
                                }
                            } else if (durability.get(key) == Durability.BACKED) {
                                failures.add("get of BACKED " + key + " missed");
                            }
                        }
                    }
                    operations.incrementAndGet();
                }
            } catch (Throwable e) {
                failures.add("worker " + worker + " failed: " + e);
            }
        }

        /** LOSSY objects whose one copy is on the peer now (the workers may change that at once). */
        long lossyOnlyOnPeer() {
            long n = 0;
            for (Map.Entry<ObjectKey, Durability> e : durability.entrySet()) {
                if (e.getValue() == Durability.LOSSY) {
                    List<ResidencyInfo> copies = store.residencies(e.getKey());
                    if (copies.size() == 1 && copies.getFirst().tierName().equals(peer.name())) {
                        n++;
                    }
                }
            }
            return n;
        }

        void awaitOperations(long more) {
            long target = operations.get() + more;
            await("workers did " + more + " more operations", () -> operations.get() >= target || !failures.isEmpty());
        }

        /** Checks the store's placement and the tier's and client's invariants. */
        void checkInvariants() {
            StoreChecks.checkPlacement(store);
            peer.checkInvariants();
            client.checkInvariants();
        }

        void stopWorkers() throws InterruptedException {
            stop.set(true);
            for (Thread t : threads) {
                t.join(TIMEOUT_MILLIS);
                assertThat(t.isAlive()).as(t.getName() + " stopped").isFalse();
            }
            assertThat(failures).as("what the workers saw").isEmpty();
        }

        /** Tries a read and a write through each lease in {@code leases}; returns how many succeeded. */
        long accessesThatSucceed(Iterable<PeerLease> leases) {
            long succeeded = 0;
            long attempts = 0;
            try (Arena arena = Arena.ofConfined()) {
                for (PeerLease lease : leases) {
                    long n = Math.min(lease.size(), 4099);
                    MemorySegment buffer = arena.allocate(n);
                    buffer.fill((byte) 0x3C);
                    attempts += 2;
                    if (client.read(lease, 0, buffer)) {
                        succeeded++;
                    }
                    if (client.write(lease, 0, buffer)) {
                        succeeded++;
                    }
                }
            }
            assertThat(attempts).as("accesses attempted through ended leases").isPositive();
            return succeeded;
        }

        /**
         * The end state: every BACKED object byte-exact (from HOST when {@code hostOnly}); every
         * LOSSY one byte-exact or dropped exactly once for REVOKED; returns the LOSSY objects dropped.
         */
        long checkObjects(boolean hostOnly) {
            store.absorbRevocations();
            checkInvariants();
            long lossyDropped = 0;
            for (Map.Entry<ObjectKey, Long> e : stored.entrySet()) {
                ObjectKey key = e.getKey();
                int dropped = drops.containsKey(key) ? drops.get(key).get() : 0;
                assertThat(dropped).as("drop reports of " + key).isLessThanOrEqualTo(1);
                try (ObjectView v = store.get(key)) {
                    if (dropped == 1) {
                        assertThat(durability.get(key)).as("a dropped object's durability").isEqualTo(Durability.LOSSY);
                        assertThat(v).as("a dropped object is gone: " + key).isNull();
                        lossyDropped++;
                        continue;
                    }
                    assertThat(v).as(durability.get(key) + " object " + key + " is still stored").isNotNull();
                    assertThat(v.bytes().toArray(ValueLayout.JAVA_BYTE)).as("bytes of " + key).isEqualTo(bytesOf(e.getValue()));
                    if (hostOnly) {
                        assertThat(v.tierName()).as("tier serving " + key).isEqualTo(host.name());
                    }
                }
            }
            assertThat(failures).isEmpty();
            assertThat(store.revocations().lossyDropped()).as("the store's count of LOSSY objects dropped by revocation")
                    .isEqualTo(lossyDropped);
            checkInvariants();
            return lossyDropped;
        }

        @Override
        public void close() throws Exception {
            stop.set(true);
            for (Thread t : threads) {
                t.join(TIMEOUT_MILLIS);
            }
            try {
                store.close();
                assertThat(host.used()).as("host bytes after the store closed").isZero();
                assertThat(peer.used()).as("peer bytes after the store closed").isZero();
                peer.close();
                client.close();
                observer.close();
                host.close();
            } finally {
                if (restarted != null) {
                    restarted.close();
                }
                agent.close();
            }
        }
    }

    /** The bytes of object {@code id}: seeded, 1..12000 bytes (mostly odd sizes), never all zero. */
    static byte[] bytesOf(long id) {
        SplittableRandom r = new SplittableRandom(id * 0x9E3779B97F4A7C15L + 41);
        byte[] b = new byte[1 + r.nextInt(12_000)];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (1 + r.nextInt(255));
        }
        return b;
    }

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + TIMEOUT_MILLIS + " ms: " + what);
            }
            sleep(2);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * Lets the workers fill the peer until it holds objects and at least four leases (so that a
     * demand leaving two regions lendable must revoke), checking invariants meanwhile.
     */
    private static void warmUp(Rig rig) {
        await("objects on the peer", () -> {
            rig.checkInvariants();
            return rig.peer.used() > 4 * REGION && rig.operations.get() > 300 || !rig.failures.isEmpty();
        });
        assertThat(rig.failures).isEmpty();
        rig.awaitOperations(200);
        await("LOSSY objects whose only copy is on the peer, four leases", () -> rig.lossyOnlyOnPeer() >= 3
                && rig.client.liveLeases().size() >= 4 || !rig.failures.isEmpty());
    }

    @Test
    void whenTheAgentIsKilledMidTransferBackedObjectsComeFromHostAndLossyOnesAreReportedOnce() throws Exception {
        try (Rig rig = new Rig(1000)) {
            rig.start();
            warmUp(rig);
            rig.leasesSeen.addAll(rig.client.liveLeases());
            assertThat(rig.leasesSeen).as("leases held before the kill").isNotEmpty();
            rig.agent.kill(); // workers are putting and reading meanwhile
            await("the client sees the peer lost", () -> !rig.lender.alive());
            await("every lease of the dead agent ended", () -> rig.client.liveLeases().isEmpty() && rig.client.revocationsIdle());
            rig.lossSeen = true;
            rig.checkInvariants();
            rig.awaitOperations(600); // the workers go on over HOST alone
            rig.stopWorkers();
            rig.leasesSeen.addAll(rig.client.liveLeases());

            assertThat(rig.accessesThatSucceed(rig.leasesSeen)).as("reads and writes through leases of the dead agent that succeeded")
                    .isZero();
            assertThat(rig.servedByPeerAfterLoss.get()).as("gets served by the dead peer after its loss").isZero();
            assertThat(rig.servedByPeer.get()).as("gets served by the peer before the kill").isPositive();
            long lossyDropped = rig.checkObjects(true);
            assertThat(lossyDropped).as("LOSSY objects lost with the agent").isPositive();
            PeerClientStats.Peer stats = rig.client.stats().peer(0);
            assertThat(stats.alive()).isFalse();
            assertThat(stats.lost()).as("leases ended as PEER_LOST").isPositive();
            // a chunk being given back as its lease is lost ends once, as given back: the tier may count fewer
            assertThat(rig.peer.counters().leasesRevoked()).isPositive().isLessThanOrEqualTo(stats.revocations());
            assertThat(rig.peer.borrowedBytes()).isZero();
            System.out.printf("agent killed: %d objects, %d LOSSY dropped, leases ended reclaimed/fenced/lost %d/%d/%d, %d gets from the peer before%n",
                    rig.stored.size(), lossyDropped, stats.reclaimed(), stats.fenced(), stats.lost(), rig.servedByPeer.get());
        }
    }

    /**
     * The agent is killed under load and a new {@code strata peer} starts on the same file: the
     * client re-attaches, the store puts objects on the new agent and reads them back byte-exact,
     * and no lease of the dead agent reads or writes anything, before or after.
     */
    @Test
    void whenTheAgentIsRestartedOnItsFileTheStoreBorrowsFromTheNewOneAndOldLeasesStayDead() throws Exception {
        try (Rig rig = new Rig(1000)) {
            rig.start();
            warmUp(rig);
            rig.agent.kill();
            await("the client sees the peer lost", () -> !rig.client.stats().peer(0).alive());
            await("every lease of the dead agent ended", () -> rig.client.liveLeases().isEmpty() && rig.client.revocationsIdle());
            rig.lossSeen = true;
            rig.awaitOperations(300); // over HOST alone while no agent lends
            assertThat(rig.servedByPeerAfterLoss.get()).as("gets served by the peer while it was absent").isZero();
            Set<PeerLease> dead = Set.copyOf(rig.leasesSeen);
            assertThat(dead).as("leases of the dead agent").isNotEmpty();

            rig.restarted = new Agent(1000, rig.agent.file);
            await("the peer alive again", () -> rig.client.stats().peer(0).alive());
            long servedBefore = rig.servedByPeer.get();
            await("gets served by the new agent", () -> rig.servedByPeer.get() > servedBefore + 50 || !rig.failures.isEmpty());
            await("leases on the new agent", () -> rig.observer.stats().lent() > 0 || !rig.failures.isEmpty());
            rig.checkInvariants();
            rig.stopWorkers(); // every get verified byte-exact
            assertThat(rig.client.liveLeases()).as("the live leases are all new").doesNotContainAnyElementsOf(dead);
            assertThat(rig.accessesThatSucceed(dead)).as("reads and writes through leases of the dead agent that succeeded").isZero();
            long lossyDropped = rig.checkObjects(false);
            PeerClientStats.Peer stats = rig.client.stats().peer(0);
            assertThat(stats.reattachments()).isEqualTo(1);
            assertThat(stats.lost()).as("leases ended as PEER_LOST").isPositive();
            assertThat(rig.client.stats().toPrometheus()).contains("strata_peer_alive{peer=\"agent\"} 1",
                    "strata_peer_reattach_total{peer=\"agent\"} 1");
            System.out.printf("agent restarted: %d objects, %d LOSSY dropped, %d leases lost, %d gets from the peer%n",
                    rig.stored.size(), lossyDropped, stats.lost(), rig.servedByPeer.get());
        }
    }

    @Test
    void whenTheAgentReclaimsMemoryBackedObjectsStayAndLossyOnesOnRevokedLeasesAreReportedOnce() throws Exception {
        try (Rig rig = new Rig(5000)) {
            rig.start();
            warmUp(rig);
            long revocationsBefore = rig.client.stats().peer(0).revocations();
            rig.agent.demand((REGIONS - 2) * REGION); // the agent keeps 2 regions lendable
            await("the agent took regions back", () -> rig.observer.stats().acknowledged() > 0 && rig.client.revocationsIdle()
                    && rig.client.stats().peer(0).revocations() > revocationsBefore);
            rig.checkInvariants();
            rig.awaitOperations(600);
            rig.stopWorkers();
            await("revocations idle", () -> rig.client.revocationsIdle());
            Set<PeerLease> ended = ConcurrentHashMap.newKeySet();
            ended.addAll(rig.leasesSeen);
            rig.client.liveLeases().forEach(ended::remove);
            assertThat(rig.accessesThatSucceed(ended)).as("reads and writes through ended leases that succeeded").isZero();

            long lossyDropped = rig.checkObjects(false);
            LendingStats agent = rig.observer.stats();
            PeerClientStats.Peer stats = rig.client.stats().peer(0);
            assertThat(stats.alive()).isTrue();
            assertThat(stats.reclaimed()).as("leases reclaimed").isPositive();
            assertThat(stats.fenced()).as("leases fenced (the client acknowledged in time)").isZero();
            assertThat(agent.fences()).isZero();
            assertThat(agent.acknowledged()).as("acknowledged: the leases revoked, and those the store was freeing when reclaimed")
                    .isEqualTo(stats.reclaimed() + stats.reclaimsOfFreed());
            assertThat(rig.peer.borrowedBytes()).as("borrowed within what the agent lends now")
                    .isLessThanOrEqualTo(2 * REGION);
            // the store keeps using what is left on the peer
            ObjectKey after = ObjectKey.of(99L << 40);
            rig.stored.put(after, 99L << 40);
            rig.durability.put(after, Durability.LOSSY);
            assertThat(rig.store.put(after, ObjectKind.KV_BLOCK, Durability.LOSSY, PriorityClass.RECENT,
                    MemorySegment.ofArray(bytesOf(99L << 40)))).isEqualTo(PutStatus.STORED);
            assertThat(rig.store.residencies(after).getFirst().tierName()).isEqualTo("peer");
            rig.checkObjects(false);
            System.out.printf("reclaim: %d objects, %d LOSSY dropped, %d leases reclaimed%n", rig.stored.size(), lossyDropped,
                    stats.reclaimed());
        }
    }

    @Test
    void aClientThatDoesNotAcknowledgeIsFencedAndTheStoreStillLosesNothingBackedAndReportsOnce() throws Exception {
        try (Rig rig = new Rig(300)) {
            // a listener of the tier that holds the client's revocation thread until the agent has fenced:
            // the client does not acknowledge within the grace period
            AtomicInteger held = new AtomicInteger();
            RevokedHandles stall = (tier, handles, reason) -> {
                if (held.getAndIncrement() == 0) {
                    await("the agent fences the silent client", () -> rig.observer.stats().fences() > 0);
                }
            };
            rig.peer.listen(stall);
            rig.start();
            warmUp(rig);
            rig.agent.demand(REGIONS * REGION); // every lent region is asked back
            await("the agent fenced a region", () -> rig.observer.stats().fences() > 0);
            await("the client ended the revoked leases", () -> rig.client.revocationsIdle()
                    && rig.client.stats().peer(0).revocations() > 0);
            rig.checkInvariants();
            rig.awaitOperations(600);
            rig.stopWorkers();
            await("revocations idle", () -> rig.client.revocationsIdle());
            Set<PeerLease> ended = ConcurrentHashMap.newKeySet();
            ended.addAll(rig.leasesSeen);
            rig.client.liveLeases().forEach(ended::remove);
            assertThat(rig.accessesThatSucceed(ended)).as("reads and writes through ended or fenced leases that succeeded").isZero();
            long lossyDropped = rig.checkObjects(false);
            PeerClientStats.Peer stats = rig.client.stats().peer(0);
            assertThat(held.get()).as("revocations the stalling listener saw").isPositive();
            assertThat(rig.observer.stats().fences()).isPositive();
            assertThat(stats.alive()).isTrue();
            System.out.printf("fenced: %d objects, %d LOSSY dropped, reclaimed/fenced/late fences %d/%d/%d, agent %s%n",
                    rig.stored.size(), lossyDropped, stats.reclaimed(), stats.fenced(), stats.lateFences(), rig.observer.stats());
        }
    }
}
