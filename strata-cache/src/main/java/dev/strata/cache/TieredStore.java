package dev.strata.cache;

import dev.strata.cache.peer.RevocableTier;
import dev.strata.cache.peer.RevokedHandles;
import dev.strata.cache.policy.EvictionPolicy;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.cache.policy.PolicyNode;
import dev.strata.memory.Allocator;
import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.Tier;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The tiered object store: KV blocks and expert weights placed over an ordered demotion chain of
 * tiers (e.g. DEVICE → HOST → POOL → DISK), moved down under pressure and up on use.
 *
 * <p>Protocol:
 * <ul>
 *   <li><b>put</b> stores an object in its target tier (default: the top). If that would take the
 *       tier past its high watermark, the tier's policy picks victims until the tier is back at its
 *       low watermark (or the allocation fits). A victim with another copy elsewhere simply loses
 *       this copy; otherwise it is demoted: copied into the next tier that can take it (applying
 *       pressure there the same way), and only then freed here. A victim that no lower tier can
 *       take is dropped if LOSSY (reported once to the {@link DropListener}) and skipped if BACKED.
 *       If the target tier still cannot hold the object, the put tries the next tiers down; if none
 *       can, it is refused ({@link PutStatus#REFUSED_NO_SPACE}): a BACKED object is never dropped to
 *       make room.</li>
 *   <li><b>get</b> returns a pinned {@link ObjectView} of the highest copy, after copying the object
 *       up where the {@link PromotionRule} says (best effort; the lower copy is kept: the chain is
 *       inclusive). A copy that fails its checksum is discarded and counted; the next copy serves;
 *       if none is left the object is dropped (reported once) and the get misses.</li>
 *   <li><b>Revocable tiers</b> (PEER, a {@link RevocableTier}): a BACKED object is never only
 *       there. A put of a BACKED object passes over revocable tiers, is stored in the first
 *       durable tier below that takes it, and then gets a best-effort cache copy in the revocable
 *       tier it passed (write-through); a BACKED object leaving a tier above is demoted to a
 *       durable tier. LOSSY objects are placed on revocable tiers like on any other. When a lease
 *       is revoked the tier tells the store which allocations died; the store queues them (on the
 *       thread that ends the revocation, without its lock) and absorbs them at the start of its next operation
 *       (or {@link #absorbRevocations()}): each copy on them is forgotten; an object left with no
 *       copy (LOSSY) is dropped and reported once with {@link DropReason#REVOKED}. A read that
 *       meets a revoked copy before that (the tier's read fails under the lease guard) falls back
 *       to the next copy, or drops the object the same way: never stale bytes. A copy written into
 *       a revocable tier is attached only if its allocation is still live afterwards.</li>
 *   <li>ACTIVE and pinned objects are never victims. Keys are content identities: putting a key
 *       that is stored leaves the object unchanged ({@link PutStatus#ALREADY_PRESENT}).</li>
 * </ul>
 *
 * <p>Invariants kept: a BACKED object's last copy is never freed before another exists (DESIGN
 * invariant 2); a LOSSY object that leaves the store other than by {@link #remove} is reported
 * exactly once (invariant 3); every allocation the store makes is freed exactly once, by remove,
 * eviction, drop or {@link #close()} (invariant 5); the store's reserved bytes in a tier equal the
 * sum of its copies there.
 *
 * <p>Threads: every method may be called from any thread. One lock guards placement, the policies
 * and the counters. A put copies an object of {@value #WRITE_OUTSIDE_LOCK_BYTES} bytes or more into
 * its reserved allocation without the lock (smaller ones under it: cheaper than a second lock
 * round trip); copies between tiers (demotion, promotion) run under the lock in this synchronous
 * version, all inside {@link ObjectMover} (Strata's one copy path, {@link dev.strata.memory.transfer.TierCopy},
 * which the transfer engine's links use too). Besides
 * {@link #tiers} and {@link #indexOf} (the chain never changes), exactly three methods never take
 * the lock: {@link #contains}, {@link #tierMask} and {@link #size}. They
 * read the {@link PlacementMap} under its sequence counter, so they never wait for a store
 * operation (an eviction pass, a copy between tiers) to finish; they retry only while one single
 * insert or removal of the map (a few stores; a resize copies the table) is in progress, and see
 * the map as of the last completed insert or removal. Every other method takes the lock. The bytes of an
 * open view are read without any lock: the pin keeps them in place. Drop reports are delivered
 * after the lock is released, on the thread that caused them. The store owns the allocations it
 * makes, not the tiers: closing the store frees its allocations and leaves the tiers open.
 */
public final class TieredStore implements AutoCloseable {

    private static final int MAX_TIERS = 31; // tier masks are ints
    /** Objects at least this large (bytes) are copied into their tier without holding the lock. */
    public static final long WRITE_OUTSIDE_LOCK_BYTES = 64 * 1024;

    /** One tier of the chain with its settings, policy and counters (guarded by the lock). */
    private static final class ChainTier {
        final Tier tier;
        final int index; // position in the chain
        final double high; // fraction of capacity that triggers eviction
        final double low; // fraction of capacity eviction brings the tier back to
        private long capacitySeen = -1; // bytes: the tier capacity the two marks below were computed for
        private long highBytes; // bytes: capacity * high
        private long lowBytes; // bytes: capacity * low
        final EvictionPolicy policy;
        final AdmissionFilter admission; // which demoted copies this tier takes
        final StoreTierCounters counters = new StoreTierCounters();
        long failedDemotionSize; // during a pressure pass: smallest size no lower tier could take
        final RevocableTier revocable; // the tier as revocable, or null for durable tiers
        final HashMap<Long, Residency> byHandle; // revocable tiers only: allocation handle -> copy there
        final ReusableBlocks reusable; // durable tiers of uniform blocks only: evicted blocks kept for the next allocations

        ChainTier(Tier tier, int index, double high, double low, EvictionPolicy policy, AdmissionFilter admission) {
            this.tier = tier;
            this.index = index;
            this.high = high;
            this.low = low;
            this.policy = policy;
            this.admission = admission;
            this.revocable = tier instanceof RevocableTier r && r.revocable() ? r : null;
            this.byHandle = revocable == null ? null : new HashMap<>();
            this.reusable = revocable == null ? ReusableBlocks.of(tier) : null;
        }

        /** A kept block for an object of {@code size} bytes, or {@link Allocator#FULL}. */
        long takeKept(long size) {
            return reusable == null ? Allocator.FULL : reusable.take(size);
        }

        /** The tier's used bytes less the blocks kept for reuse (room the store holds): what the watermarks are compared with. */
        long usedByCopies() {
            return reusable == null ? tier.used() : tier.used() - reusable.bytes();
        }

        /** Bytes at the high watermark (recomputed only if the tier's capacity changed). */
        long highBytes() {
            refreshMarks();
            return highBytes;
        }

        /** Bytes at the low watermark. */
        long lowBytes() {
            refreshMarks();
            return lowBytes;
        }

        private void refreshMarks() {
            long capacity = tier.capacity();
            if (capacity != capacitySeen) {
                highBytes = (long) (capacity * high);
                lowBytes = (long) (capacity * low);
                capacitySeen = capacity;
                if (reusable != null) {
                    reusable.trim(highBytes, lowBytes);
                }
            }
        }
    }

    private enum Demotion { DEMOTED, SOURCE_LOST, NO_ROOM }

    /** Allocations of chain tier {@code tierIndex} whose lease ended, waiting to be absorbed. */
    private record RevokedBatch(int tierIndex, long[] handles) {
    }

    /**
     * Copies the store lost to revocation so far.
     *
     * @param copiesLost   copies on revocable tiers whose memory was taken back (absorbed or met by a read)
     * @param lossyDropped objects dropped because their only copy was revoked (reported {@link DropReason#REVOKED})
     */
    public record Revocations(long copiesLost, long lossyDropped) {
    }

    private final ChainTier[] chain;
    private final ReentrantLock lock = new ReentrantLock();
    private final PlacementMap placement = new PlacementMap();
    private final HashMap<ObjectKey, StoredObject> removedPinned = new HashMap<>(); // removed while pinned; under the lock
    private final ObjectMover mover = new ObjectMover();
    private final PromotionRule promotion;
    private final DropListener dropListener;
    private final EvictionSink evictionSink; // told of copies evicted out of HOST tiers, under the lock
    private final ConcurrentLinkedQueue<RevokedBatch> revoked = new ConcurrentLinkedQueue<>(); // from the threads that end revocations
    private final RevokedHandles[] revocationListeners; // [chain] the listener installed on each revocable tier, or null
    private long revokedCopies; // under the lock
    private long revokedDrops; // under the lock
    private StoredObject pendingDrops; // dropped under the lock, reported after it: a queue linked by nextDrop
    private StoredObject pendingDropsTail; // last of that queue
    private boolean closed;

    // store-wide counters, guarded by the lock
    private long gets;
    private long hits;
    private long misses;
    private long puts;
    private long stored;
    private long alreadyPresent;
    private long refusedPuts;
    private long removes;
    private long dropsReported;
    private long bytesStored; // payload bytes of live objects
    private long pinnedObjects; // objects (live or removed-pending) with pins > 0

    private TieredStore(Builder b) {
        this.chain = new ChainTier[b.tiers.size()];
        for (int i = 0; i < chain.length; i++) {
            Builder.TierEntry e = b.tiers.get(i);
            chain[i] = new ChainTier(e.tier, i, e.high, e.low, e.policy, e.admission);
        }
        this.promotion = b.promotion;
        this.dropListener = b.dropListener;
        this.evictionSink = b.evictionSink;
        this.revocationListeners = new RevokedHandles[chain.length];
        for (ChainTier chainTier : chain) {
            if (chainTier.revocable != null) {
                final int index = chainTier.index;
                RevokedHandles l = (tier, handles, reason) -> revoked.add(new RevokedBatch(index, handles));
                revocationListeners[index] = l;
                chainTier.revocable.listen(l);
            }
        }
    }

    /** A builder for a store; add tiers top first. */
    public static Builder builder() {
        return new Builder();
    }

    // ------------------------------------------------------------------ put

    /** Stores an object in the top tier (or lower if the top has no room). See {@link #put(ObjectKey, ObjectKind, Durability, PriorityClass, MemorySegment, int)}. */
    public PutStatus put(ObjectKey key, ObjectKind kind, Durability durability, PriorityClass priority, MemorySegment bytes) {
        return put(key, kind, durability, priority, bytes, 0);
    }

    /**
     * Stores a copy of {@code bytes} as object {@code key}, in chain tier {@code targetTier} or, if
     * that tier cannot make room, in the first tier below it that can.
     *
     * @param targetTier chain index (0 is the top)
     * @return the outcome; never throws for lack of space
     * @throws IllegalArgumentException for an empty object or a tier index outside the chain
     */
    public PutStatus put(ObjectKey key, ObjectKind kind, Durability durability, PriorityClass priority,
                         MemorySegment bytes, int targetTier) {
        checkPutArguments(key, kind, durability, priority);
        Objects.requireNonNull(bytes, "bytes");
        long size = bytes.byteSize();
        if (size <= 0) {
            throw new IllegalArgumentException("object " + key + " is empty: size " + size);
        }
        checkTierIndex(targetTier);
        return put(key, kind, durability, priority, bytes, null, size, targetTier, true);
    }

    /**
     * Stores the concatenation of {@code parts} as object {@code key} (a gather-write: the parts
     * are copied straight into the tier, without a contiguous intermediate copy), in chain tier
     * {@code targetTier} or, if that tier cannot make room, in the first tier below it that can.
     *
     * @param targetTier chain index (0 is the top)
     * @return the outcome; never throws for lack of space
     * @throws IllegalArgumentException for an empty object or a tier index outside the chain
     */
    public PutStatus put(ObjectKey key, ObjectKind kind, Durability durability, PriorityClass priority,
                         List<MemorySegment> parts, int targetTier) {
        checkPutArguments(key, kind, durability, priority);
        long size = 0;
        for (MemorySegment part : parts) {
            size += part.byteSize();
        }
        if (size <= 0) {
            throw new IllegalArgumentException("object " + key + " is empty: size " + size);
        }
        checkTierIndex(targetTier);
        return parts.size() == 1 ? put(key, kind, durability, priority, parts.get(0), null, size, targetTier, true)
                : put(key, kind, durability, priority, null, parts, size, targetTier, true);
    }

    private static void checkPutArguments(ObjectKey key, ObjectKind kind, Durability durability, PriorityClass priority) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(durability, "durability");
        Objects.requireNonNull(priority, "priority");
    }

    /**
     * The put proper. The payload is {@code single} when it is one segment (no list is made for the
     * common case), else the concatenation of {@code parts}; exactly one of the two is non-null.
     */
    private PutStatus put(ObjectKey key, ObjectKind kind, Durability durability, PriorityClass priority,
                          MemorySegment single, List<MemorySegment> parts, long size, int targetTier, boolean countPut) {
        StoredObject object;
        ChainTier reservedTier = null; // a large object's room, written outside the lock
        long reservedHandle = Allocator.FULL;
        ChainTier peerCache = null; // a revocable tier a BACKED object passed over: it gets a cache copy once stored below
        lock.lock();
        try {
            checkOpen();
            absorbRevocationsLocked();
            if (countPut) {
                puts++;
            }
            long hash = key.hash64();
            if (placement.findForInsert(key, hash) != null) {
                alreadyPresent++;
                return PutStatus.ALREADY_PRESENT;
            }
            object = new StoredObject(key, hash, kind, durability, priority, size);
            boolean fitsSomewhere = false;
            for (int t = targetTier; t < chain.length; t++) {
                ChainTier chainTier = chain[t];
                if (size > chainTier.tier.capacity()) {
                    continue;
                }
                if (chainTier.revocable != null && durability == Durability.BACKED) {
                    if (peerCache == null) {
                        peerCache = chainTier;
                    }
                    continue; // never the only copy of a BACKED object
                }
                fitsSomewhere = true;
                long handle = allocateUnderPressure(chainTier, size);
                if (handle == Allocator.FULL) {
                    continue;
                }
                if (size >= WRITE_OUTSIDE_LOCK_BYTES) {
                    reservedTier = chainTier;
                    reservedHandle = handle;
                    break;
                }
                try {
                    writeParts(chainTier.tier, handle, single, parts);
                } catch (RuntimeException e) {
                    chainTier.tier.free(handle);
                    throw e;
                }
                if (!landed(chainTier, handle)) {
                    chainTier.tier.free(handle); // its lease ended during the write: try lower down
                    continue;
                }
                publish(object, chainTier, handle);
                if (peerCache != null) {
                    cacheOnRevocable(object, peerCache);
                }
                return PutStatus.STORED;
            }
            if (reservedTier == null) {
                refusedPuts++;
                chain[targetTier].counters.refusedPuts++;
                return fitsSomewhere ? PutStatus.REFUSED_NO_SPACE : PutStatus.REFUSED_TOO_LARGE;
            }
        } finally {
            unlockAndReportDrops();
        }
        return writeOutsideLockAndPublish(object, reservedTier, reservedHandle, single, parts, peerCache);
    }

    /** Writes the payload ({@code single}, or else the concatenation of {@code parts}) into {@code handle}. */
    private static void writeParts(Tier tier, long handle, MemorySegment single, List<MemorySegment> parts) {
        if (single != null) {
            tier.write(handle, single);
        } else if (parts.size() == 1) {
            tier.write(handle, parts.get(0));
        } else {
            tier.gatherWrite(handle, parts);
        }
    }

    /**
     * Second half of a large put: the allocation is reserved (invisible to policies and lookups),
     * the bytes are copied without the lock, then the object is published, unless a concurrent put
     * of the same key won meanwhile.
     */
    private PutStatus writeOutsideLockAndPublish(StoredObject object, ChainTier chainTier, long handle,
                                                 MemorySegment single, List<MemorySegment> parts,
                                                 ChainTier peerCache) {
        boolean written = false;
        boolean lost = false; // the tier's lease ended during the write
        try {
            writeParts(chainTier.tier, handle, single, parts);
            written = true;
        } finally {
            lock.lock();
            try {
                if (!written || closed) {
                    chainTier.tier.free(handle);
                    checkOpen();
                } else if (placement.get(object.key) != null) {
                    chainTier.tier.free(handle);
                    alreadyPresent++;
                    return PutStatus.ALREADY_PRESENT;
                } else if (!landed(chainTier, handle)) {
                    chainTier.tier.free(handle);
                    lost = true;
                } else {
                    publish(object, chainTier, handle);
                    if (peerCache != null) {
                        cacheOnRevocable(object, peerCache);
                    }
                }
            } finally {
                unlockAndReportDrops();
            }
        }
        if (lost) {
            if (chainTier.index + 1 < chain.length) {
                return put(object.key, object.kind, object.durability, object.priority, single, parts, object.sizeBytes, chainTier.index + 1,
                        false);
            }
            lock.lock();
            try {
                refusedPuts++;
                chainTier.counters.refusedPuts++;
            } finally {
                lock.unlock();
            }
            return PutStatus.REFUSED_NO_SPACE;
        }
        return PutStatus.STORED;
    }

    /** True unless {@code handle} is in a revocable tier whose lease ended (its bytes are not there). */
    private static boolean landed(ChainTier chainTier, long handle) {
        return chainTier.revocable == null || chainTier.revocable.live(handle);
    }

    /**
     * Under the lock: a best-effort cache copy of a just-stored BACKED object in the revocable
     * tier {@code peer} above its durable copy. The object is pinned meanwhile, so the pressure
     * this applies can never move its durable copy.
     */
    private void cacheOnRevocable(StoredObject object, ChainTier peer) {
        long size = object.sizeBytes;
        if (size > peer.tier.capacity() || !peer.admission.admit(object.key, object.kind, size)) {
            return;
        }
        pin(object);
        try {
            long handle = allocateUnderPressure(peer, size);
            if (handle == Allocator.FULL) {
                return;
            }
            Residency source = object.residencies;
            ChainTier from = chain[source.tierIndex];
            boolean copied;
            try {
                copied = mover.copy(from.tier, source.handle, peer.tier, handle, size);
            } catch (CorruptObjectException e) {
                peer.tier.free(handle);
                return; // a read of the durable copy meets it and discards it
            } catch (RuntimeException e) {
                peer.tier.free(handle);
                throw e;
            }
            if (!copied || !landed(peer, handle)) {
                peer.tier.free(handle);
                return;
            }
            from.counters.bytesOut += size;
            peer.counters.bytesIn += size;
            attach(object, peer, handle);
        } finally {
            unpin(object);
        }
    }

    private void publish(StoredObject object, ChainTier chainTier, long handle) {
        attach(object, chainTier, handle);
        placement.insert(object);
        chainTier.counters.puts++;
        stored++;
        bytesStored += object.sizeBytes;
    }

    // ------------------------------------------------------------------ get

    /**
     * A pinned, readable view of object {@code key}, or null on a miss. Close the view to unpin.
     * The hit is counted in the tier that served it, and a miss in each tier above it.
     */
    public ObjectView get(ObjectKey key) {
        Objects.requireNonNull(key, "key");
        lock.lock();
        try {
            checkOpen();
            absorbRevocationsLocked();
            gets++;
            StoredObject object = placement.get(key);
            if (object == null) {
                for (ChainTier s : chain) {
                    s.counters.misses++;
                }
                misses++;
                return null;
            }
            Residency top = object.residencies;
            ChainTier topTier = chain[top.tierIndex];
            object.accesses++;
            topTier.policy.onAccess(top);
            topTier.counters.hits++;
            for (int i = 0; i < top.tierIndex; i++) {
                chain[i].counters.misses++;
            }
            pin(object);
            Residency serving = top;
            int target = promotion.target(object.kind, object.priority, top.tierIndex, object.accesses);
            if (target < top.tierIndex) {
                Residency promoted = promote(object, top, Math.max(0, target));
                if (promoted != null) {
                    serving = promoted;
                }
            }
            ObjectView view = viewOf(object, serving);
            if (view == null) {
                misses++;
            } else {
                hits++;
            }
            return view;
        } finally {
            unlockAndReportDrops();
        }
    }

    /** Serves a view from {@code r}, falling back to lower copies when one is corrupt. Null if none is left. */
    private ObjectView viewOf(StoredObject object, Residency r) {
        while (r != null) {
            ChainTier chainTier = chain[r.tierIndex];
            Tier tier = chainTier.tier;
            if (tier.isPlainMemory()) {
                return new ObjectView(this, object, tier.segment(r.handle, 0, object.sizeBytes).asReadOnly(), tier.name());
            }
            if (object.sizeBytes > Integer.MAX_VALUE - 16) {
                throw new IllegalStateException("object " + object.key + " of " + object.sizeBytes
                        + " bytes in non-addressable tier '" + tier.name() + "' is too large for a private copy");
            }
            MemorySegment copy = MemorySegment.ofArray(new byte[(int) object.sizeBytes]);
            Residency next;
            try {
                if (mover.readOut(tier, r.handle, copy)) {
                    return new ObjectView(this, object, copy.asReadOnly(), tier.name());
                }
                next = discardLostCopy(object, r, false);
            } catch (CorruptObjectException e) {
                next = discardLostCopy(object, r, true);
            }
            r = next;
        }
        unpin(object); // lost: every copy failed
        return null;
    }

    /**
     * Discards a copy that could not be read (corrupt or gone). Returns the next copy to try, or
     * null if none is left, in which case the object is dropped and reported.
     */
    private Residency discardLostCopy(StoredObject object, Residency r, boolean corrupt) {
        ChainTier chainTier = chain[r.tierIndex];
        if (corrupt) {
            chainTier.counters.corruptCopies++;
        }
        Residency next = r.nextInObject;
        if (next == null) {
            next = object.residencies == r ? null : object.residencies;
        }
        boolean revokedCopy = !corrupt && chainTier.revocable != null;
        if (revokedCopy) {
            revokedCopies++;
        }
        freeCopy(object, r);
        if (object.copies == 0) {
            chainTier.counters.drops++;
            if (revokedCopy) {
                revokedDrops++;
            }
            forget(object, revokedCopy ? DropReason.REVOKED : DropReason.CORRUPT);
            return null;
        }
        return next;
    }

    // ------------------------------------------------------------------ pin, priority, remove

    /** Pins object {@code key}: its copies stay where they are until as many unpins. False if not stored. */
    public boolean pin(ObjectKey key) {
        lock.lock();
        try {
            checkOpen();
            absorbRevocationsLocked();
            StoredObject object = placement.get(key);
            if (object == null) {
                return false;
            }
            pin(object);
            return true;
        } finally {
            unlockAndReportDrops();
        }
    }

    /**
     * Undoes one {@link #pin}. A stored object is looked up first, then one removed while pinned.
     *
     * @return false if no such object is known
     * @throws IllegalStateException if the object is not pinned
     */
    public boolean unpin(ObjectKey key) {
        lock.lock();
        try {
            checkOpen();
            StoredObject object = placement.get(key);
            if (object == null) {
                object = removedPinned.get(key);
                if (object == null) {
                    return false;
                }
            }
            unpin(object);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Called by a view on close. */
    void release(StoredObject object) {
        lock.lock();
        try {
            if (!closed) {
                unpin(object);
            }
        } finally {
            lock.unlock();
        }
    }

    private void pin(StoredObject object) {
        boolean wasEvictable = object.evictable();
        if (object.pins++ == 0) {
            pinnedObjects++;
        }
        if (wasEvictable) {
            eligibilityChanged(object);
        }
    }

    private void unpin(StoredObject object) {
        if (object.pins <= 0) {
            throw new IllegalStateException("object " + object.key + " is not pinned");
        }
        object.pins--;
        if (object.pins == 0) {
            pinnedObjects--;
            if (object.state == StoredObject.State.REMOVED) {
                removedPinned.remove(object.key, object);
                freeAll(object);
                object.state = StoredObject.State.GONE;
            } else if (object.evictable()) {
                eligibilityChanged(object);
            }
        }
    }

    private void eligibilityChanged(StoredObject object) {
        for (Residency r = object.residencies; r != null; r = r.nextInObject) {
            chain[r.tierIndex].policy.onEligibilityChange(r);
        }
    }

    /** Changes the priority class of {@code key}. False if not stored. */
    public boolean setPriority(ObjectKey key, PriorityClass priority) {
        Objects.requireNonNull(priority, "priority");
        lock.lock();
        try {
            checkOpen();
            StoredObject object = placement.get(key);
            if (object == null) {
                return false;
            }
            PriorityClass previous = object.priority;
            if (previous == priority) {
                return true;
            }
            boolean wasEvictable = object.evictable();
            object.priority = priority;
            boolean evictable = object.evictable();
            for (Residency r = object.residencies; r != null; r = r.nextInObject) {
                EvictionPolicy policy = chain[r.tierIndex].policy;
                if (wasEvictable != evictable) {
                    policy.onEligibilityChange(r);
                } else {
                    policy.onPriorityChange(r, previous);
                }
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Removes object {@code key} and frees every copy (at the last unpin if it is pinned). No drop
     * is reported. False if not stored.
     */
    public boolean remove(ObjectKey key) {
        lock.lock();
        try {
            checkOpen();
            absorbRevocationsLocked();
            StoredObject object = placement.get(key);
            if (object == null) {
                return false;
            }
            placement.remove(object);
            bytesStored -= object.sizeBytes;
            removes++;
            if (object.pins > 0) {
                object.state = StoredObject.State.REMOVED;
                removedPinned.put(key, object);
            } else {
                freeAll(object);
                object.state = StoredObject.State.GONE;
            }
            return true;
        } finally {
            unlockAndReportDrops();
        }
    }

    // ------------------------------------------------------------------ queries

    /** True if {@code key} is stored. Lock-free. */
    public boolean contains(ObjectKey key) {
        return placement.contains(key);
    }

    /** Bit {@code i} set when chain tier {@code i} holds a copy of {@code key}. Lock-free. */
    public int tierMask(ObjectKey key) {
        return placement.tierMask(key);
    }

    /** The copies of {@code key}, top first; empty if not stored. */
    public List<ResidencyInfo> residencies(ObjectKey key) {
        lock.lock();
        try {
            if (!closed) {
                absorbRevocationsLocked();
            }
            StoredObject object = placement.get(key);
            if (object == null) {
                return List.of();
            }
            List<ResidencyInfo> out = new ArrayList<>(object.copies);
            for (Residency r = object.residencies; r != null; r = r.nextInObject) {
                out.add(new ResidencyInfo(chain[r.tierIndex].tier.name(), r.tierIndex, r.handle, r.reservedBytes));
            }
            return out;
        } finally {
            unlockAndReportDrops();
        }
    }

    /**
     * Absorbs the revocations the revocable tiers reported since the last store operation: the
     * copies on revoked leases are forgotten, LOSSY objects left without a copy are dropped and
     * reported ({@link DropReason#REVOKED}, on this thread, after the lock). Every other operation
     * that changes or reads placement does this first; call it to see a revocation at once.
     */
    public void absorbRevocations() {
        lock.lock();
        try {
            if (!closed) {
                absorbRevocationsLocked();
            }
        } finally {
            unlockAndReportDrops();
        }
    }

    /** Copies lost to revocation so far. */
    public Revocations revocations() {
        lock.lock();
        try {
            return new Revocations(revokedCopies, revokedDrops);
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: applies the queued revocations. */
    private void absorbRevocationsLocked() {
        RevokedBatch batch;
        while ((batch = revoked.poll()) != null) {
            ChainTier chainTier = chain[batch.tierIndex()];
            for (long handle : batch.handles()) {
                Residency r = chainTier.byHandle.get(handle);
                if (r == null) {
                    continue; // freed or discarded already (a read met it first)
                }
                StoredObject object = r.object;
                revokedCopies++;
                freeCopy(object, r);
                if (object.copies == 0) {
                    chainTier.counters.drops++;
                    revokedDrops++;
                    forget(object, DropReason.REVOKED);
                }
            }
        }
    }

    /** The pin count of {@code key} (0 if not stored). */
    public int pinCount(ObjectKey key) {
        lock.lock();
        try {
            StoredObject object = placement.get(key);
            return object == null ? 0 : object.pins;
        } finally {
            lock.unlock();
        }
    }

    /** The tiers of the chain, top first. */
    public List<Tier> tiers() {
        List<Tier> out = new ArrayList<>(chain.length);
        for (ChainTier s : chain) {
            out.add(s.tier);
        }
        return out;
    }

    /** Chain index of {@code tier}. */
    public int indexOf(Tier tier) {
        for (ChainTier s : chain) {
            if (s.tier == tier) {
                return s.index;
            }
        }
        throw new IllegalArgumentException("tier '" + tier.name() + "' is not in this store's chain");
    }

    /** Objects stored. Lock-free. */
    public int size() {
        return placement.size();
    }

    /** A consistent snapshot of every counter. */
    public StoreStats stats() {
        lock.lock();
        try {
            if (!closed) {
                absorbRevocationsLocked();
            }
            List<StoreTierStats> tiers = new ArrayList<>(chain.length);
            for (ChainTier s : chain) {
                StoreTierCounters c = s.counters;
                tiers.add(new StoreTierStats(s.tier.name(), s.tier.kind(), s.index, s.policy.name(),
                        s.tier.capacity(), s.tier.used(), s.high, s.low,
                        c.residentObjects, c.residentBytes, c.reservedBytes, s.reusable == null ? 0 : s.reusable.bytes(),
                        c.hits, c.misses, c.puts, c.refusedPuts, c.evictions, c.demotions, c.promotions,
                        c.drops, c.corruptCopies, c.bytesIn, c.bytesOut));
            }
            return new StoreStats(tiers, placement.size(), pinnedObjects, bytesStored, gets, hits, misses, puts, stored,
                    alreadyPresent, refusedPuts, removes, dropsReported, mover.bytesMoved());
        } finally {
            unlockAndReportDrops();
        }
    }

    // ------------------------------------------------------------------ pressure

    /**
     * Allocates {@code size} bytes in {@code chainTier}'s tier, first evicting down to the low watermark
     * if the allocation would pass the high one, then evicting one victim at a time while the
     * allocation does not fit. Returns {@link Allocator#FULL} when nothing more can be evicted.
     */
    private long allocateUnderPressure(ChainTier chainTier, long size) {
        Tier tier = chainTier.tier;
        long kept = chainTier.takeKept(size);
        if (kept != Allocator.FULL) {
            return kept;
        }
        if (chainTier.usedByCopies() + size <= chainTier.highBytes()) {
            long handle = tier.allocate(size);
            if (handle != Allocator.FULL) {
                return handle;
            }
        }
        long savedFailed = chainTier.failedDemotionSize;
        chainTier.failedDemotionSize = Long.MAX_VALUE;
        try {
            long target = chainTier.lowBytes() - size;
            while (chainTier.usedByCopies() > target) {
                if (!evictOne(chainTier)) {
                    break;
                }
            }
            long handle = allocateOrTakeKept(chainTier, size);
            while (handle == Allocator.FULL && evictOne(chainTier)) {
                handle = allocateOrTakeKept(chainTier, size);
            }
            return handle;
        } finally {
            chainTier.policy.restoreSkipped();
            chainTier.failedDemotionSize = savedFailed;
        }
    }

    /** A block the pass just kept for reuse, else a new allocation. */
    private static long allocateOrTakeKept(ChainTier chainTier, long size) {
        long kept = chainTier.takeKept(size);
        return kept != Allocator.FULL ? kept : chainTier.tier.allocate(size);
    }

    /** Frees room in {@code chainTier} by evicting one copy. False if no victim can leave. */
    private boolean evictOne(ChainTier chainTier) {
        EvictionPolicy policy = chainTier.policy;
        for (PolicyNode node = policy.victim(); node != null; node = policy.victim()) {
            Residency victim = (Residency) node;
            StoredObject object = victim.object;
            if (object.copies > 1) {
                chainTier.counters.evictions++;
                evicting(chainTier, victim);
                freeCopy(object, victim, true);
                return true;
            }
            Demotion d = demote(chainTier, victim);
            if (d == Demotion.DEMOTED) {
                chainTier.counters.evictions++;
                chainTier.counters.demotions++;
                evicting(chainTier, victim);
                freeCopy(object, victim, true);
                return true;
            }
            if (d == Demotion.SOURCE_LOST) {
                return true; // the copy was discarded (and the object dropped if it was the last)
            }
            if (object.durability == Durability.LOSSY) {
                chainTier.counters.evictions++;
                chainTier.counters.drops++;
                evicting(chainTier, victim);
                freeCopy(object, victim, true);
                forget(object, DropReason.EVICTED);
                return true;
            }
            policy.skip(victim); // BACKED and nowhere to go: it stays
        }
        return false;
    }

    /** Tells the eviction sink that {@code victim}, a copy in a HOST tier, is about to be freed. */
    private void evicting(ChainTier chainTier, Residency victim) {
        if (evictionSink != EvictionSink.NONE && chainTier.tier.kind() == dev.strata.memory.TierKind.HOST) {
            StoredObject o = victim.object;
            evictionSink.evicting(o.key, o.kind, chainTier.tier.segment(victim.handle, 0, o.sizeBytes));
        }
    }

    /** Copies the only copy {@code victim} (in {@code from}) into the first lower tier that takes it. */
    private Demotion demote(ChainTier from, Residency victim) {
        StoredObject object = victim.object;
        long size = object.sizeBytes;
        if (size >= from.failedDemotionSize) {
            return Demotion.NO_ROOM;
        }
        for (int j = from.index + 1; j < chain.length; j++) {
            ChainTier to = chain[j];
            if (to.revocable != null && object.durability == Durability.BACKED) {
                continue; // a BACKED object's only copy goes to a durable tier
            }
            if (size > to.tier.capacity() || !to.admission.admit(object.key, object.kind, size)) {
                continue;
            }
            long handle = allocateUnderPressure(to, size);
            if (handle == Allocator.FULL) {
                continue;
            }
            boolean copied;
            try {
                copied = mover.copy(from.tier, victim.handle, to.tier, handle, size);
            } catch (CorruptObjectException e) {
                to.tier.free(handle);
                discardLostCopy(object, victim, true);
                return Demotion.SOURCE_LOST;
            } catch (RuntimeException e) {
                to.tier.free(handle);
                throw e;
            }
            if (!copied) {
                to.tier.free(handle);
                discardLostCopy(object, victim, false);
                return Demotion.SOURCE_LOST;
            }
            if (!landed(to, handle)) {
                to.tier.free(handle); // the destination's lease ended during the copy: try lower down
                continue;
            }
            from.counters.bytesOut += size;
            to.counters.bytesIn += size;
            attach(object, to, handle);
            return Demotion.DEMOTED;
        }
        from.failedDemotionSize = Math.min(from.failedDemotionSize, size);
        return Demotion.NO_ROOM;
    }

    /** Copies {@code object} from {@code source} into the highest tier from {@code target} up to source that takes it. */
    private Residency promote(StoredObject object, Residency source, int target) {
        long size = object.sizeBytes;
        for (int j = target; j < source.tierIndex; j++) {
            ChainTier to = chain[j];
            if (size > to.tier.capacity()) {
                continue;
            }
            long handle = allocateUnderPressure(to, size);
            if (handle == Allocator.FULL) {
                continue;
            }
            ChainTier from = chain[source.tierIndex];
            boolean copied;
            try {
                copied = mover.copy(from.tier, source.handle, to.tier, handle, size);
            } catch (CorruptObjectException e) {
                to.tier.free(handle);
                return null; // the view path meets the corrupt copy and discards it
            } catch (RuntimeException e) {
                to.tier.free(handle);
                throw e;
            }
            if (!copied || !landed(to, handle)) {
                to.tier.free(handle);
                return null;
            }
            from.counters.bytesOut += size;
            to.counters.bytesIn += size;
            to.counters.promotions++;
            return attach(object, to, handle);
        }
        return null;
    }

    // ------------------------------------------------------------------ bookkeeping

    private Residency attach(StoredObject object, ChainTier chainTier, long handle) {
        Residency r = new Residency(object, chainTier.index, handle, chainTier.tier.allocationSize(handle));
        object.attach(r);
        chainTier.policy.onInsert(r);
        if (chainTier.byHandle != null) {
            chainTier.byHandle.put(handle, r);
        }
        StoreTierCounters c = chainTier.counters;
        c.residentObjects++;
        c.residentBytes += object.sizeBytes;
        c.reservedBytes += r.reservedBytes;
        return r;
    }

    private void freeCopy(StoredObject object, Residency r) {
        freeCopy(object, r, false);
    }

    /**
     * Takes copy {@code r} out of the store and frees its allocation, or, when {@code evicted} and
     * its tier keeps blocks for reuse ({@link ReusableBlocks}), keeps the allocation for the
     * tier's next one.
     */
    private void freeCopy(StoredObject object, Residency r, boolean evicted) {
        ChainTier chainTier = chain[r.tierIndex];
        chainTier.policy.onRemove(r);
        object.detach(r);
        if (chainTier.byHandle != null) {
            chainTier.byHandle.remove(r.handle, r);
        }
        if (!evicted || chainTier.reusable == null || !chainTier.reusable.keep(r.handle)) {
            chainTier.tier.free(r.handle);
        }
        StoreTierCounters c = chainTier.counters;
        c.residentObjects--;
        c.residentBytes -= object.sizeBytes;
        c.reservedBytes -= r.reservedBytes;
    }

    private void freeAll(StoredObject object) {
        Residency r;
        while ((r = object.residencies) != null) {
            freeCopy(object, r);
        }
    }

    /** Takes a copy-less object out of the store and queues its drop report (once). */
    private void forget(StoredObject object, DropReason reason) {
        freeAll(object);
        StoredObject.State previous = object.state;
        object.state = StoredObject.State.GONE;
        if (previous == StoredObject.State.LIVE) {
            placement.remove(object);
            bytesStored -= object.sizeBytes;
        } else if (previous == StoredObject.State.REMOVED) {
            removedPinned.remove(object.key, object);
            return; // its owner removed it: no report
        } else {
            return;
        }
        dropsReported++;
        object.dropReason = reason;
        if (pendingDrops == null) {
            pendingDrops = object;
        } else {
            pendingDropsTail.nextDrop = object;
        }
        pendingDropsTail = object;
    }

    /** Releases the lock, then tells the listener about the drops queued while it was held. */
    private void unlockAndReportDrops() {
        StoredObject drops = pendingDrops;
        pendingDrops = null;
        pendingDropsTail = null;
        lock.unlock();
        if (drops != null) {
            RuntimeException failure = null;
            for (StoredObject o = drops, next; o != null; o = next) {
                next = o.nextDrop;
                o.nextDrop = null;
                try {
                    dropListener.dropped(o.key, o.kind, o.durability, o.sizeBytes, o.dropReason);
                } catch (RuntimeException e) {
                    // every drop is still reported once; the listener's failure surfaces afterwards
                    if (failure == null) {
                        failure = e;
                    } else {
                        failure.addSuppressed(e);
                    }
                }
            }
            if (failure != null) {
                throw failure;
            }
        }
    }

    /**
     * Checks the placement map's table invariants and that every object in it is LIVE with at
     * least one copy; throws {@link IllegalStateException} naming the first broken one. For tests.
     */
    void checkPlacement() {
        lock.lock();
        try {
            placement.checkInvariants();
            long[] onRevocable = new long[chain.length];
            placement.forEach(o -> {
                if (o.state != StoredObject.State.LIVE || o.copies == 0 || o.residencies == null) {
                    throw new IllegalStateException("object " + o.key + " in the placement map is " + o.state
                            + " with " + o.copies + " copies");
                }
                boolean durableCopy = false;
                for (Residency r = o.residencies; r != null; r = r.nextInObject) {
                    ChainTier chainTier = chain[r.tierIndex];
                    if (chainTier.byHandle == null) {
                        durableCopy = true;
                    } else {
                        onRevocable[r.tierIndex]++;
                        if (chainTier.byHandle.get(r.handle) != r) {
                            throw new IllegalStateException("object " + o.key + ": its copy at handle " + r.handle + " in tier '"
                                    + chainTier.tier.name() + "' is not in the tier's handle index");
                        }
                    }
                }
                if (o.durability == Durability.BACKED && !durableCopy) {
                    throw new IllegalStateException("BACKED object " + o.key + " has no copy outside revocable tiers");
                }
            });
            for (StoredObject o : removedPinned.values()) {
                for (Residency r = o.residencies; r != null; r = r.nextInObject) {
                    if (chain[r.tierIndex].byHandle != null) {
                        onRevocable[r.tierIndex]++;
                    }
                }
            }
            for (ChainTier chainTier : chain) {
                if (chainTier.byHandle != null && chainTier.byHandle.size() != onRevocable[chainTier.index]) {
                    throw new IllegalStateException("tier '" + chainTier.tier.name() + "': handle index holds " + chainTier.byHandle.size()
                            + " copies, the objects " + onRevocable[chainTier.index]);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private void checkTierIndex(int index) {
        if (index < 0 || index >= chain.length) {
            throw new IllegalArgumentException("tier index " + index + " is outside the chain of " + chain.length + " tiers");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("store is closed");
        }
    }

    /**
     * Frees every copy the store holds (open views become invalid), and releases the staging
     * memory. The tiers stay open: their owner closes them.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            List<StoredObject> all = new ArrayList<>(placement.size() + removedPinned.size());
            placement.forEach(all::add);
            all.addAll(removedPinned.values());
            placement.clear();
            for (StoredObject o : all) {
                freeAll(o);
                o.state = StoredObject.State.GONE;
            }
            removedPinned.clear();
            for (ChainTier chainTier : chain) {
                if (chainTier.reusable != null) {
                    chainTier.reusable.release();
                }
            }
            mover.close();
            for (ChainTier chainTier : chain) {
                if (chainTier.revocable != null) {
                    chainTier.revocable.unlisten(revocationListeners[chainTier.index]);
                }
            }
            revoked.clear();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("TieredStore[");
        for (ChainTier s : chain) {
            if (s.index > 0) {
                sb.append(" -> ");
            }
            sb.append(s.tier.name()).append('(').append(s.policy.name()).append(')');
        }
        return sb.append(", ").append(placement.size()).append(" objects]").toString();
    }

    // ------------------------------------------------------------------ builder

    /**
     * Configures a store: the chain of tiers top first, each with its watermarks and policy; the
     * promotion rule; the drop listener. {@link #build()} validates everything and fails fast with
     * the offending values.
     *
     * <p>Threads: one thread builds.
     */
    public static final class Builder {
        /** Default high watermark: evict when a tier would pass 95% of its capacity. */
        public static final double DEFAULT_HIGH = 0.95;
        /** Default low watermark: evict until 85% of capacity. */
        public static final double DEFAULT_LOW = 0.85;

        private record TierEntry(Tier tier, double high, double low, EvictionPolicy policy, AdmissionFilter admission) {
        }

        private final List<TierEntry> tiers = new ArrayList<>();
        private PromotionRule promotion = PromotionRule.toTop();
        private DropListener dropListener = DropListener.NONE;
        private EvictionSink evictionSink = EvictionSink.NONE;

        private Builder() {
        }

        /** Appends {@code tier} below the previous ones, with default watermarks and the priority-LRU policy. */
        public Builder tier(Tier tier) {
            return tier(tier, DEFAULT_HIGH, DEFAULT_LOW, PolicyKind.PRIORITY_LRU);
        }

        /** Appends {@code tier} with watermarks (fractions of capacity) and a policy kind. */
        public Builder tier(Tier tier, double high, double low, PolicyKind policy) {
            return tier(tier, high, low, policy.create());
        }

        /** Appends {@code tier} with watermarks and a policy instance (not shared with another tier). */
        public Builder tier(Tier tier, double high, double low, EvictionPolicy policy) {
            tiers.add(new TierEntry(Objects.requireNonNull(tier, "tier"), high, low, Objects.requireNonNull(policy, "policy"),
                    AdmissionFilter.ALL));
            return this;
        }

        /**
         * Sets which demoted copies the tier added last takes (default: all); a copy the filter
         * refuses goes on to the next tier down, or is dropped (LOSSY) if none takes it. Puts that
         * target the tier are not filtered.
         *
         * @throws IllegalStateException if no tier was added yet
         */
        public Builder admission(AdmissionFilter filter) {
            Objects.requireNonNull(filter, "admission filter");
            if (tiers.isEmpty()) {
                throw new IllegalStateException("add a tier before its admission filter");
            }
            TierEntry last = tiers.removeLast();
            tiers.add(new TierEntry(last.tier, last.high, last.low, last.policy, filter));
            return this;
        }

        public Builder promotion(PromotionRule rule) {
            this.promotion = Objects.requireNonNull(rule, "promotion rule");
            return this;
        }

        public Builder dropListener(DropListener listener) {
            this.dropListener = Objects.requireNonNull(listener, "drop listener");
            return this;
        }

        /** Sets who is told of copies evicted out of HOST tiers (default: nobody); see {@link EvictionSink}. */
        public Builder evictionSink(EvictionSink sink) {
            this.evictionSink = Objects.requireNonNull(sink, "eviction sink");
            return this;
        }

        /** Checks the configuration; throws {@link IllegalArgumentException} naming what is wrong. */
        public Builder conclude() {
            if (tiers.isEmpty()) {
                throw new IllegalArgumentException("a store needs at least one tier");
            }
            if (tiers.size() > MAX_TIERS) {
                throw new IllegalArgumentException("a store chain holds at most " + MAX_TIERS + " tiers, got " + tiers.size());
            }
            IdentityHashMap<Object, Boolean> seen = new IdentityHashMap<>();
            java.util.Set<String> names = new java.util.HashSet<>();
            for (TierEntry e : tiers) {
                String n = e.tier.name();
                if (!(e.low > 0 && e.low <= e.high && e.high <= 1.0)) {
                    throw new IllegalArgumentException("tier '" + n + "': watermarks must satisfy 0 < low <= high <= 1, got low "
                            + e.low + ", high " + e.high);
                }
                if (seen.put(e.tier, Boolean.TRUE) != null || !names.add(n)) {
                    throw new IllegalArgumentException("tier '" + n + "' appears twice in the chain");
                }
                if (seen.put(e.policy, Boolean.TRUE) != null) {
                    throw new IllegalArgumentException("tier '" + n + "': its policy instance is shared with another tier");
                }
                if (e.policy.size() != 0) {
                    throw new IllegalArgumentException("tier '" + n + "': its policy already tracks " + e.policy.size() + " entries");
                }
            }
            return this;
        }

        public TieredStore build() {
            conclude();
            return new TieredStore(this);
        }
    }
}
