package dev.strata.cache.expert;

import dev.strata.cache.Durability;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.PeerMemory;
import dev.strata.cache.peer.PeerTier;
import dev.strata.cache.peer.RevocableTier;
import dev.strata.cache.peer.RevocationReason;
import dev.strata.memory.Allocator;
import dev.strata.memory.Sizes;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.metrics.PrometheusText;
import dev.strata.memory.transfer.StagingPool;
import dev.strata.memory.transfer.TierCopy;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The expert rebalancer: keeps copies of the most frequently routed experts in memory lent by
 * peers, so that an {@link ExpertPager} miss fetches them from a peer instead of over the host
 * link, and falls back to the HOST masters for every expert whose peer copy is gone.
 *
 * <p>Design (policy):
 * <ul>
 *   <li>Frequency: each {@link #rebalance()} pass reads the pager's per-expert route counts and
 *       keeps a decayed score per expert ({@code score = score × decay + calls since the last
 *       pass}), so placement follows hotspots that move.</li>
 *   <li>Placement: experts are ranked by score; the best ones without a peer copy are copied from
 *       their masters into a {@link PeerTier} (BACKED hints: the masters stay authoritative) as
 *       long as the tier can borrow, at most {@code maxMovesPerPass} per pass (a rate limit on
 *       the copies a pass makes). When the tier is full, a candidate displaces the coldest placed
 *       expert only if its score is above that expert's by the factor {@code displaceRatio}
 *       (hysteresis: two experts of similar heat do not swap back and forth).</li>
 *   <li>Capacity appears and disappears: a pass borrows when peers lend ({@link PeerTier} borrows
 *       chunks on demand), and {@link #start(Duration)} runs passes on a period.</li>
 *   <li>Revocation: when a lease is taken back, the experts on it lose their peer copy at once
 *       (on the thread that ends the revocation, without a lock); their handles are freed at the next pass.
 *       The pager then fetches them from the masters. Nothing is ever written back: masters are
 *       never changed.</li>
 *   <li>A pager miss never places an expert on a peer: {@link #fetch} only reads.</li>
 * </ul>
 *
 * <p>Counters ({@link #stats()}): fetches served from a peer copy, fetches that went to the host
 * masters (no copy, or a copy revoked under the read), and bytes kept off the host link (the
 * bytes of the fetches served from peers).
 *
 * <p>Threads: {@link #fetch} on the pager's driving thread; {@link #rebalance()} on one thread at
 * a time (the caller's, or the periodic thread of {@link #start}); {@link #stats()} from any
 * thread; revocation callbacks on the peer client's thread. A read-write lock keeps a placed
 * copy's handle from being freed or reused while a fetch reads it; copies into the peer are made
 * without it.
 *
 * <p>Invariants: an expert's peer handle, when set, names a live-or-revoked allocation of this
 * rebalancer's tier that was written with the master's bytes before it was published; a fetch
 * returns true only after reading a whole image under a valid lease, so a slot filled from a
 * peer is byte-equal to its master; each handle is freed exactly once.
 */
public final class ExpertRebalancer implements ExpertPeerSource, AutoCloseable {

    /**
     * What the rebalancer did since it started.
     *
     * @param name                  the rebalancer's name (its tier's; metrics label {@code rebalancer})
     * @param fetchesFromPeer       pager misses served from a peer copy
     * @param fetchesFromHost       pager misses that went to the masters (no valid peer copy)
     * @param revokedReads          of those, misses whose peer copy was revoked under the read
     * @param bytesKeptOffHostLink  bytes of the misses served from peers
     * @param placements            experts copied onto peers
     * @param displacements         placed experts removed to make room for hotter ones
     * @param revokedExperts        placed experts whose lease was taken back
     * @param expertsOnPeers        experts with a peer copy now
     * @param borrowedBytes         bytes the rebalancer's tier borrows now
     */
    public record Stats(String name, long fetchesFromPeer, long fetchesFromHost, long revokedReads, long bytesKeptOffHostLink,
                        long placements, long displacements, long revokedExperts, int expertsOnPeers, long borrowedBytes) {

        /**
         * Appends the families {@code strata_expert_peer_*}, labelled {@code rebalancer}:
         * {@code strata_expert_peer_fetches_total{source="peer"|"host"}},
         * {@code strata_expert_peer_revoked_reads_total}, {@code strata_expert_peer_bytes_kept_off_host_link_total},
         * {@code strata_expert_peer_placements_total}, {@code strata_expert_peer_displacements_total},
         * {@code strata_expert_peer_revoked_experts_total}, and the gauges
         * {@code strata_expert_peer_experts} and {@code strata_expert_peer_borrowed_bytes}.
         */
        public void writeTo(PrometheusText out) {
            out.family("strata_expert_peer_fetches_total", PrometheusText.Type.COUNTER,
                    "Pager misses by where the expert came from: a peer copy or the host masters");
            out.sample("strata_expert_peer_fetches_total", fetchesFromPeer, "rebalancer", name, "source", "peer");
            out.sample("strata_expert_peer_fetches_total", fetchesFromHost, "rebalancer", name, "source", "host");
            counter(out, "strata_expert_peer_revoked_reads_total", "Misses whose peer copy was revoked under the read",
                    revokedReads);
            counter(out, "strata_expert_peer_bytes_kept_off_host_link_total", "Bytes of misses served from peer copies",
                    bytesKeptOffHostLink);
            counter(out, "strata_expert_peer_placements_total", "Experts copied onto peers", placements);
            counter(out, "strata_expert_peer_displacements_total", "Placed experts removed for hotter ones", displacements);
            counter(out, "strata_expert_peer_revoked_experts_total", "Placed experts whose lease was taken back", revokedExperts);
            out.family("strata_expert_peer_experts", PrometheusText.Type.GAUGE, "Experts with a peer copy now");
            out.sample("strata_expert_peer_experts", expertsOnPeers, "rebalancer", name);
            out.family("strata_expert_peer_borrowed_bytes", PrometheusText.Type.GAUGE, "Bytes borrowed from peers now");
            out.sample("strata_expert_peer_borrowed_bytes", borrowedBytes, "rebalancer", name);
        }

        private void counter(PrometheusText out, String family, String help, long value) {
            out.family(family, PrometheusText.Type.COUNTER, help);
            out.sample(family, value, "rebalancer", name);
        }
    }

    private static final long NONE = -1;

    private final ExpertMasters masters;
    private final int layers;
    private final int experts;
    private final long expertBytes;             // bytes of one expert image
    private final PeerTier tier;                // owned: closed with the rebalancer
    private final double decay;                 // score weight kept per pass, in [0, 1)
    private final double displaceRatio;         // a candidate displaces a placed expert with score below candidate / ratio
    private final int maxMovesPerPass;          // copies onto peers per pass
    private final AtomicLongArray peerHandle;   // [layers x experts] handle in tier, or NONE
    private final ConcurrentHashMap<Long, Integer> keyOfHandle = new ConcurrentHashMap<>(); // placed handle -> expert key
    private final ConcurrentLinkedQueue<Long> revokedHandles = new ConcurrentLinkedQueue<>(); // to free at the next pass
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock(); // read: a fetch reading a copy; write: freeing one
    private final double[] score;               // [layers x experts] decayed route counts, rebalancing thread only
    private final long[] seenCounts;            // [layers x experts] route counts at the last pass, rebalancing thread only
    private final Integer[] order;              // [layers x experts] scratch for ranking, rebalancing thread only
    private final TierCopy copyPath;            // masters -> peer copies; one expert-sized bounce buffer when masters are not plain memory
    private volatile ExpertPager pager;         // the route counts' source
    private ScheduledExecutorService periodic;  // null until start
    private final LongAdder fetchesFromPeer = new LongAdder();
    private final LongAdder fetchesFromHost = new LongAdder();
    private final LongAdder revokedReads = new LongAdder();
    private final LongAdder placements = new LongAdder();
    private final LongAdder displacements = new LongAdder();
    private final LongAdder revokedExperts = new LongAdder();
    private volatile boolean closed;

    private ExpertRebalancer(Builder b) {
        this.masters = b.masters;
        this.layers = masters.layers();
        this.experts = masters.experts();
        this.expertBytes = masters.layout().bytes();
        long image = Sizes.alignUp(expertBytes, PeerTier.ALIGNMENT);
        long chunk = b.chunkBytes > 0 ? b.chunkBytes : Math.max(image, (PeerTier.DEFAULT_CHUNK / image) * image);
        this.tier = new PeerTier(b.name, b.peers, b.maxBytes, chunk, LeaseHints.of(Durability.BACKED));
        this.decay = b.decay;
        this.displaceRatio = b.displaceRatio;
        this.maxMovesPerPass = b.maxMovesPerPass;
        int n = layers * experts;
        this.peerHandle = new AtomicLongArray(n);
        for (int i = 0; i < n; i++) {
            peerHandle.set(i, NONE);
        }
        this.score = new double[n];
        this.seenCounts = new long[n];
        this.order = new Integer[n];
        this.copyPath = masters.isPlainMemory() ? TierCopy.direct() : new TierCopy(new StagingPool("expert-rebalancer-staging", 1,
                expertBytes, OffHeapRegion.PAGE, StagingPool.Reserve.ON_FIRST_BORROW));
        tier.listen(this::revoked);
    }

    /** Starts a rebalancer for {@code masters} that borrows from {@code peers}. */
    public static Builder builder(ExpertMasters masters, PeerMemory peers) {
        return new Builder(masters, peers);
    }

    /** Reads route counts from {@code source} from now on (the pager this rebalancer serves). */
    public ExpertRebalancer follow(ExpertPager source) {
        if (source.masters() != masters) {
            throw new IllegalArgumentException("expert pager '" + source.pagerName() + "' pages other masters than this rebalancer's");
        }
        this.pager = source;
        return this;
    }

    // ------------------------------------------------------------------ the pager's side

    @Override
    public boolean fetch(int layer, int expert, MemorySegment dst) {
        int key = layer * experts + expert;
        lock.readLock().lock();
        try {
            long h = peerHandle.get(key);
            if (h == NONE) {
                fetchesFromHost.increment();
                return false;
            }
            if (tier.read(h, dst.asSlice(0, expertBytes))) {
                fetchesFromPeer.increment();
                return true;
            }
            revokedReads.increment();
            fetchesFromHost.increment();
            return false;
        } finally {
            lock.readLock().unlock();
        }
    }

    // ------------------------------------------------------------------ revocation

    /** On the thread that ends the revocation: the experts on these handles lose their peer copy now. */
    private void revoked(RevocableTier from, long[] handles, RevocationReason reason) {
        for (long h : handles) {
            Integer key = keyOfHandle.remove(h); // whoever removes the mapping owns the free
            if (key == null) {
                continue; // being placed (the placing pass sees the lease gone) or freed already
            }
            if (peerHandle.compareAndSet(key, h, NONE)) {
                revokedExperts.increment();
            }
            revokedHandles.add(h);
        }
    }

    // ------------------------------------------------------------------ placement

    /**
     * One pass: frees the handles of revoked copies, updates the scores from the pager's route
     * counts, and places the hottest experts without a peer copy while the peers lend (displacing
     * colder ones past the hysteresis when the tier is full).
     *
     * @return experts placed onto peers in this pass
     */
    public synchronized int rebalance() {
        if (closed) {
            return 0;
        }
        freeRevoked();
        ExpertPager source = pager;
        if (source == null) {
            return 0;
        }
        int n = layers * experts;
        for (int key = 0; key < n; key++) {
            long count = source.routeCount(key / experts, key % experts);
            long delta = count - seenCounts[key];
            seenCounts[key] = count;
            score[key] = score[key] * decay + delta;
        }
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Double.compare(score[b], score[a]));
        tier.refresh();
        int moves = 0;
        int coldest = n - 1; // scan position for displacement victims, from the cold end
        for (int rank = 0; rank < n && moves < maxMovesPerPass; rank++) {
            int key = order[rank];
            if (score[key] <= 0) {
                break;
            }
            if (peerHandle.get(key) != NONE) {
                continue;
            }
            long h = tier.allocate(expertBytes);
            while (h == Allocator.FULL) {
                while (coldest > rank && (peerHandle.get(order[coldest]) == NONE)) {
                    coldest--;
                }
                if (coldest <= rank || score[order[coldest]] * displaceRatio >= score[key]) {
                    return moves; // nothing cold enough to give way
                }
                unplace(order[coldest]);
                displacements.increment();
                coldest--;
                h = tier.allocate(expertBytes);
            }
            if (place(key, h)) {
                moves++;
            }
        }
        return moves;
    }

    /** Copies expert {@code key}'s master into {@code h} and publishes it; false if the lease ended meanwhile. */
    private boolean place(int key, long h) {
        int layer = key / experts;
        int expert = key % experts;
        if (copyPath.copy(masters.tier(), masters.handle(layer, expert), tier, h, expertBytes) == TierCopy.NOT_FOUND) {
            tier.free(h);
            return false; // a master never written: nothing to copy
        }
        keyOfHandle.put(h, key);
        lock.writeLock().lock();
        try {
            peerHandle.set(key, h);
            if (!tier.live(h)) { // revoked during the copy: the chunk is marked dead before its callback runs
                peerHandle.compareAndSet(key, h, NONE);
                if (keyOfHandle.remove(h) != null) {
                    tier.free(h); // the callback has not taken it
                }
                return false;
            }
        } finally {
            lock.writeLock().unlock();
        }
        placements.increment();
        return true;
    }

    /** Removes expert {@code key}'s peer copy (the master stays). */
    private void unplace(int key) {
        lock.writeLock().lock();
        try {
            long h = peerHandle.getAndSet(key, NONE);
            if (h != NONE && keyOfHandle.remove(h) != null) {
                tier.free(h);
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    private void freeRevoked() {
        Long h;
        while ((h = revokedHandles.poll()) != null) {
            lock.writeLock().lock();
            try {
                tier.free(h);
            } finally {
                lock.writeLock().unlock();
            }
        }
    }

    /**
     * Runs {@link #rebalance()} every {@code period} on a daemon thread until {@link #close()}.
     *
     * @throws IllegalStateException if already started or closed
     */
    public synchronized ExpertRebalancer start(Duration period) {
        if (closed || periodic != null) {
            throw new IllegalStateException("expert rebalancer '" + tier.name() + "' is " + (closed ? "closed" : "already started"));
        }
        long nanos = Math.max(1, period.toNanos());
        periodic = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "expert-rebalancer-" + tier.name());
            t.setDaemon(true);
            return t;
        });
        periodic.scheduleWithFixedDelay(() -> {
            try {
                rebalance();
            } catch (RuntimeException e) {
                // a failed pass changes nothing placed; the next one tries again
            }
        }, nanos, nanos, TimeUnit.NANOSECONDS);
        return this;
    }

    // ------------------------------------------------------------------ queries

    /** True if expert {@code expert} of {@code layer} has a peer copy now (it may be revoked at any moment). */
    public boolean onPeer(int layer, int expert) {
        return peerHandle.get(layer * experts + expert) != NONE;
    }

    /** The decayed routing score of an expert as of the last pass (rebalancing thread). */
    public synchronized double score(int layer, int expert) {
        return score[layer * experts + expert];
    }

    /** The tier the copies live in (for its lease counts and stats). */
    public PeerTier tier() {
        return tier;
    }

    public Stats stats() {
        int on = 0;
        for (int i = 0; i < peerHandle.length(); i++) {
            if (peerHandle.get(i) != NONE) {
                on++;
            }
        }
        long fromPeer = fetchesFromPeer.sum();
        return new Stats(tier.name(), fromPeer, fetchesFromHost.sum(), revokedReads.sum(), fromPeer * expertBytes, placements.sum(),
                displacements.sum(), revokedExperts.sum(), on, tier.borrowedBytes());
    }

    /**
     * Checks that every placed handle maps back to its expert and the tier's own bookkeeping;
     * throws {@link IllegalStateException} naming the first violation. Call with no pass running.
     */
    public synchronized void checkInvariants() {
        for (int key = 0; key < peerHandle.length(); key++) {
            long h = peerHandle.get(key);
            if (h != NONE) {
                Integer back = keyOfHandle.get(h);
                if (back == null || back != key) {
                    throw new IllegalStateException("expert key " + key + " is placed at handle " + h + " which maps to " + back);
                }
            }
        }
        tier.checkInvariants();
    }

    /** Stops the periodic pass, frees every copy and gives the leases back. The masters stay. */
    @Override
    public void close() {
        ScheduledExecutorService p;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            p = periodic;
        }
        if (p != null) {
            p.shutdownNow();
            try {
                p.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (this) {
            lock.writeLock().lock();
            try {
                for (int key = 0; key < peerHandle.length(); key++) {
                    peerHandle.set(key, NONE);
                }
                keyOfHandle.clear();
                revokedHandles.clear();
            } finally {
                lock.writeLock().unlock();
            }
            tier.close();
            if (copyPath.staging() != null) {
                copyPath.staging().close();
            }
        }
    }

    /**
     * Configures a rebalancer. Defaults: name {@code expert-peer}, a budget of every expert, chunks
     * of about 4 MiB holding whole experts, decay 0.5, displacement ratio 2, 8 moves per pass.
     *
     * <p>Confined to one thread.
     */
    public static final class Builder {
        private final ExpertMasters masters;
        private final PeerMemory peers;
        private String name = "expert-peer";
        private long maxBytes = -1;
        private long chunkBytes = -1;
        private double decay = 0.5;
        private double displaceRatio = 2.0;
        private int maxMovesPerPass = 8;

        private Builder(ExpertMasters masters, PeerMemory peers) {
            this.masters = Objects.requireNonNull(masters, "expert masters");
            this.peers = Objects.requireNonNull(peers, "peer memory");
        }

        public Builder name(String value) {
            this.name = Objects.requireNonNull(value, "name");
            return this;
        }

        /** The most bytes borrowed from peers at once. */
        public Builder maxBytes(long value) {
            this.maxBytes = value;
            return this;
        }

        /** Bytes of one borrowed chunk (a multiple of {@value PeerTier#ALIGNMENT}). */
        public Builder chunkBytes(long value) {
            this.chunkBytes = value;
            return this;
        }

        /** Weight a score keeps per pass, in [0, 1). */
        public Builder decay(double value) {
            this.decay = value;
            return this;
        }

        /** A candidate displaces a placed expert only if its score is more than this factor above, {@code >= 1}. */
        public Builder displaceRatio(double value) {
            this.displaceRatio = value;
            return this;
        }

        /** Experts copied onto peers per pass at most, {@code >= 1}. */
        public Builder maxMovesPerPass(int value) {
            this.maxMovesPerPass = value;
            return this;
        }

        /**
         * Checks the settings and builds the rebalancer (it borrows nothing until its first pass).
         *
         * @throws IllegalArgumentException naming the setting and value that is not valid
         */
        public ExpertRebalancer build() {
            long image = Sizes.alignUp(masters.layout().bytes(), PeerTier.ALIGNMENT);
            if (maxBytes == -1) {
                maxBytes = Math.max(image * masters.layers() * masters.experts(), PeerTier.DEFAULT_CHUNK);
            }
            if (maxBytes < image) {
                throw new IllegalArgumentException("expert rebalancer '" + name + "': budget " + maxBytes
                        + " bytes is below one expert of " + image);
            }
            if (!(decay >= 0 && decay < 1)) {
                throw new IllegalArgumentException("expert rebalancer '" + name + "': decay must be in [0, 1), got " + decay);
            }
            if (!(displaceRatio >= 1)) {
                throw new IllegalArgumentException("expert rebalancer '" + name + "': displacement ratio must be >= 1, got "
                        + displaceRatio);
            }
            if (maxMovesPerPass < 1) {
                throw new IllegalArgumentException("expert rebalancer '" + name + "': moves per pass must be >= 1, got "
                        + maxMovesPerPass);
            }
            if (chunkBytes != -1 && (chunkBytes < image || chunkBytes % PeerTier.ALIGNMENT != 0)) {
                throw new IllegalArgumentException("expert rebalancer '" + name + "': chunk " + chunkBytes
                        + " bytes must be a multiple of " + PeerTier.ALIGNMENT + " holding one expert of " + image);
            }
            if (chunkBytes != -1 && maxBytes < chunkBytes) {
                throw new IllegalArgumentException("expert rebalancer '" + name + "': budget " + maxBytes + " bytes is below one chunk of "
                        + chunkBytes);
            }
            return new ExpertRebalancer(this);
        }
    }
}
