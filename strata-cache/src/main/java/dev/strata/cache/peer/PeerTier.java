package dev.strata.cache.peer;

import dev.strata.memory.Allocator;
import dev.strata.memory.Sizes;
import dev.strata.memory.TierKind;
import dev.strata.memory.TierMeter;
import dev.strata.memory.TierStats;
import dev.strata.memory.alloc.BestFitAllocator;
import dev.strata.memory.alloc.FreeRange;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The PEER tier: objects sub-allocated inside chunks of memory borrowed from a {@link PeerMemory},
 * read and written only through {@link PeerMemory#read}/{@link PeerMemory#write}, so that the
 * lease's guard brackets every access (invariant 4 of docs/ARCHITECTURE.md).
 *
 * <p>Design (policy):
 * <ul>
 *   <li>Memory is borrowed in chunks of {@code chunkBytes} (an object larger than a chunk gets a
 *       lease of its own size; when no peer lends a whole chunk, an object gets a lease of just
 *       its size), up to a budget of {@code maxBytes} borrowed at once. Inside a
 *       chunk a {@link BestFitAllocator} carves the objects; an allocation tries the chunks in the
 *       order they were borrowed, so objects pack into the oldest chunks and later ones empty
 *       first.</li>
 *   <li>A chunk that becomes empty is given back to its peer unless it is the only empty one
 *       (one spare chunk is kept, so a tier at a steady fill does not borrow and return a chunk on
 *       every put). A chunk of its own for one large object is given back as soon as it is
 *       empty.</li>
 *   <li>Handles are {@code serial << 36 | offset}: the chunk's serial number (never reused while
 *       this tier lives) and the offset in it. A handle of a revoked chunk therefore never names
 *       memory of a later lease.</li>
 *   <li>{@link #capacity()} is what this tier could hold now: the bytes it has borrowed plus what
 *       the live peers offer (refreshed at most every {@value #LENDABLE_REFRESH_NANOS} ns, and on
 *       {@link #refresh()}), capped by the budget. It changes as peers lend and take back.</li>
 *   <li>Revocation: when a lease ends (reclaimed, fenced, peer lost) the chunk is marked dead, its
 *       bytes leave {@link #used()} and {@link #capacity()}, and every {@link RevokedHandles}
 *       listener is told which handles were live on it. Those handles stay allocated (reads miss,
 *       writes store nothing) until their owner frees them, which releases nothing on the peer.</li>
 *   <li>Peer calls ({@code alloc}, {@code free}, {@code onRevoke}) are made without this tier's
 *       lock, so a revocation callback, which takes it, can never wait for a thread that waits for
 *       the peer client.</li>
 * </ul>
 *
 * <p>Not addressable: there is no view of lent memory; every byte goes through the lease guard.
 *
 * <p>Threads: every method may be called from any thread. One lock guards the chunk list and the
 * allocators' changes; reads and writes look their chunk up in a concurrent map and do not take
 * it. Listeners run on the thread that ends the revocation (see {@link RevocationCallback}).
 *
 * <p>Invariants (checked by {@link #checkInvariants()}): the live chunks' leases plus the bytes of
 * borrowings under way (reserved before the peer call, installed or given back after it) sum to
 * {@link #borrowedBytes()} ≤ {@code maxBytes}; their allocators' used bytes sum to
 * {@link #used()}; a dead chunk is no longer offered to allocations and is forgotten once its last
 * handle is freed; every lease this tier borrowed is freed exactly once or ended by its peer.
 */
public final class PeerTier implements RevocableTier {

    /** Default chunk borrowed from a peer: 4 MiB. */
    public static final long DEFAULT_CHUNK = 4 * Sizes.MiB;
    /** Alignment of every allocation inside a chunk, in bytes. */
    public static final long ALIGNMENT = 64;
    /** Bits of a handle that hold the offset in its chunk. */
    static final int OFFSET_BITS = 36;
    /** Largest lease one handle space can address: 64 GiB. */
    public static final long MAX_LEASE = 1L << OFFSET_BITS;
    private static final long OFFSET_MASK = MAX_LEASE - 1;
    private static final long MAX_SERIAL = (1L << (63 - OFFSET_BITS)) - 1;
    static final long LENDABLE_REFRESH_NANOS = 5_000_000;

    /** One borrowed lease and the allocator that carves it. */
    private static final class Chunk {
        final long serial;                 // this tier's number for the lease, unique while the tier lives
        final PeerLease lease;
        final BestFitAllocator allocator;  // [0, lease.size()) of the lent region
        volatile boolean dead;             // revoked, lost or given back: no new allocation, reads miss

        Chunk(long serial, PeerLease lease) {
            this.serial = serial;
            this.lease = lease;
            this.allocator = new BestFitAllocator(lease.size(), ALIGNMENT);
        }
    }

    /**
     * This tier's lease counts since it opened.
     *
     * @param leasesBorrowed leases borrowed from peers
     * @param leasesReturned leases given back because they were empty (or at close)
     * @param leasesRevoked  leases the peers took back (reclaimed, fenced or lost)
     * @param handlesRevoked allocations that were live on revoked leases
     * @param borrowFailures times no peer could lend a chunk when one was needed
     * @param lostWrites     writes that stored nothing because the lease was revoking or gone
     */
    public record Counters(long leasesBorrowed, long leasesReturned, long leasesRevoked, long handlesRevoked,
                           long borrowFailures, long lostWrites) {
    }

    private final String name;
    private final PeerMemory peers;
    private final long maxBytes;    // bytes: most this tier borrows at once
    private final long chunkBytes;  // bytes of one borrowed chunk
    private final LeaseHints hints;
    private final ReentrantLock lock = new ReentrantLock(); // guards liveChunks, nextSerial, borrowed, used, allocator changes
    private final ConcurrentHashMap<Long, Chunk> chunks = new ConcurrentHashMap<>(); // serial -> chunk, live or dead with handles left
    private final ArrayList<Chunk> liveChunks = new ArrayList<>(); // under the lock, in borrowing order
    private final CopyOnWriteArrayList<RevokedHandles> listeners = new CopyOnWriteArrayList<>();
    private final TierMeter meter = new TierMeter();
    private long nextSerial = 1;         // under the lock
    private volatile long serialsIssued = 1; // nextSerial, for readers without the lock
    private volatile long borrowed;      // bytes of live leases (and borrowings under way)
    private long reserving;              // bytes: borrowings under way (reserved, not yet live chunks); under the lock
    private volatile long used;          // bytes allocated in live chunks
    private volatile long lendable;      // bytes the live peers offered at the last refresh
    private volatile long lendableAt = Long.MIN_VALUE; // System.nanoTime() of that refresh
    private final AtomicLong leasesBorrowed = new AtomicLong();
    private final AtomicLong leasesReturned = new AtomicLong();
    private final AtomicLong leasesRevoked = new AtomicLong();
    private final AtomicLong handlesRevoked = new AtomicLong();
    private final AtomicLong borrowFailures = new AtomicLong();
    private final AtomicLong lostWrites = new AtomicLong();
    private volatile boolean closed;

    /**
     * @param name       the tier's name, e.g. {@code peer}
     * @param peers      the client that borrows from peers (not owned: closing the tier gives its
     *                   leases back but leaves the client open)
     * @param maxBytes   the most bytes borrowed at once
     * @param chunkBytes bytes of one borrowed chunk, a multiple of {@value #ALIGNMENT}
     * @param hints      what the leases ask of the peers
     */
    public PeerTier(String name, PeerMemory peers, long maxBytes, long chunkBytes, LeaseHints hints) {
        this.name = Objects.requireNonNull(name, "name");
        this.peers = Objects.requireNonNull(peers, "peer memory");
        this.hints = Objects.requireNonNull(hints, "lease hints");
        if (chunkBytes <= 0 || chunkBytes % ALIGNMENT != 0 || chunkBytes > MAX_LEASE) {
            throw new IllegalArgumentException("tier '" + name + "': chunk " + chunkBytes + " bytes must be a positive multiple of "
                    + ALIGNMENT + " up to " + MAX_LEASE);
        }
        if (maxBytes < chunkBytes) {
            throw new IllegalArgumentException("tier '" + name + "': budget " + maxBytes + " bytes is below one chunk of "
                    + chunkBytes);
        }
        this.maxBytes = maxBytes;
        this.chunkBytes = chunkBytes;
    }

    // ------------------------------------------------------------------ handles

    private static long handle(Chunk c, long offset) {
        return (c.serial << OFFSET_BITS) | offset;
    }

    private static long serialOf(long handle) {
        return handle >>> OFFSET_BITS;
    }

    private static long offsetOf(long handle) {
        return handle & OFFSET_MASK;
    }

    private Chunk chunkOf(long handle) {
        return handle < 0 ? null : chunks.get(serialOf(handle));
    }

    // ------------------------------------------------------------------ allocation

    @Override
    public long allocate(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("tier '" + name + "': allocation size must be positive, got " + size);
        }
        long rounded = Sizes.alignUp(size, ALIGNMENT);
        if (rounded > MAX_LEASE || rounded > maxBytes) {
            return Allocator.FULL;
        }
        lock.lock();
        try {
            checkOpen();
            if (rounded <= chunkBytes) {
                long h = allocateInLiveChunks(rounded);
                if (h != Allocator.FULL) {
                    return h;
                }
            }
        } finally {
            lock.unlock();
        }
        long leaseBytes = Math.max(chunkBytes, rounded);
        PeerLease lease = borrow(leaseBytes);
        if (lease == null && rounded < leaseBytes) {
            leaseBytes = rounded; // no peer lends a whole chunk now: a lease just this large
            lease = borrow(leaseBytes);
        }
        if (lease == null) {
            return Allocator.FULL;
        }
        if (lease.size() < leaseBytes) {
            unreserve(leaseBytes);
            peers.free(lease);
            throw new IllegalStateException("tier '" + name + "': peer memory lent " + lease + " for a request of " + leaseBytes
                    + " bytes");
        }
        Chunk chunk;
        boolean serialsLeft = true;
        lock.lock();
        try {
            reserving -= leaseBytes; // the borrowing ends here: installed, or given back
            if (closed || nextSerial > MAX_SERIAL) {
                serialsLeft = closed;
                borrowed -= leaseBytes;
                chunk = null;
            } else {
                chunk = new Chunk(nextSerial++, lease);
                serialsIssued = nextSerial;
                borrowed += chunk.lease.size() - leaseBytes; // the lease may be larger than asked
                chunks.put(chunk.serial, chunk);
                liveChunks.add(chunk);
                leasesBorrowed.incrementAndGet();
            }
        } finally {
            lock.unlock();
        }
        if (chunk == null) {
            peers.free(lease);
            checkOpen();
            if (!serialsLeft) {
                throw new IllegalStateException("tier '" + name + "' has used all " + MAX_SERIAL + " chunk serials");
            }
        }
        peers.onRevoke(lease, (l, reason) -> chunkEnded(chunk, reason));
        if (!peers.valid(lease)) {
            chunkEnded(chunk, RevocationReason.RECLAIMED); // ended before the callback was registered
            return Allocator.FULL;
        }
        lock.lock();
        try {
            if (chunk.dead) {
                return Allocator.FULL;
            }
            long offset = chunk.allocator.allocate(rounded);
            if (offset == Allocator.FULL) {
                return Allocator.FULL; // cannot happen for a fresh chunk of at least this size
            }
            used += chunk.allocator.sizeOf(offset);
            return handle(chunk, offset);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Borrows a lease of {@code leaseBytes} within the budget, without this tier's lock held
     * during the peer call (the bytes are reserved meanwhile). Null when the budget or the peers
     * refuse (nothing stays reserved); a lease returned keeps its reservation for the caller to
     * install.
     */
    private PeerLease borrow(long leaseBytes) {
        lock.lock();
        try {
            checkOpen();
            if (borrowed + leaseBytes > maxBytes) {
                return null;
            }
            borrowed += leaseBytes;
            reserving += leaseBytes;
        } finally {
            lock.unlock();
        }
        Optional<PeerLease> got;
        try {
            got = peers.alloc(leaseBytes, hints);
        } catch (RuntimeException e) {
            unreserve(leaseBytes);
            throw e;
        }
        if (got.isEmpty()) {
            unreserve(leaseBytes);
            borrowFailures.incrementAndGet();
            lendableAt = Long.MIN_VALUE; // the peers' offer changed: look again next time
            return null;
        }
        return got.get();
    }

    /** Under the lock: the first live chunk with room. */
    private long allocateInLiveChunks(long rounded) {
        for (int i = 0; i < liveChunks.size(); i++) {
            Chunk c = liveChunks.get(i);
            if (c.dead || c.lease.size() > chunkBytes) {
                continue; // a chunk of its own belongs to its one object
            }
            long offset = c.allocator.allocate(rounded);
            if (offset != Allocator.FULL) {
                used += c.allocator.sizeOf(offset);
                return handle(c, offset);
            }
        }
        return Allocator.FULL;
    }

    private void unreserve(long bytes) {
        lock.lock();
        try {
            borrowed -= bytes;
            reserving -= bytes;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void free(long handle) {
        Chunk giveBack = null;
        lock.lock();
        try {
            Chunk c = chunkOf(handle);
            long offset = offsetOf(handle);
            long size = c == null ? Allocator.NOT_ALLOCATED : c.allocator.sizeIfAllocated(offset);
            if (size == Allocator.NOT_ALLOCATED) {
                throw new IllegalArgumentException("handle " + handle + " is not allocated in tier '" + name + "'");
            }
            c.allocator.free(offset);
            if (c.dead) {
                if (c.allocator.allocationCount() == 0) {
                    chunks.remove(c.serial);
                }
                return;
            }
            used -= size;
            if (c.allocator.allocationCount() == 0 && (c.lease.size() > chunkBytes || anotherEmptyChunk(c))) {
                c.dead = true;
                liveChunks.remove(c);
                chunks.remove(c.serial);
                borrowed -= c.lease.size();
                giveBack = c;
            }
        } finally {
            lock.unlock();
        }
        if (giveBack != null) {
            leasesReturned.incrementAndGet();
            peers.free(giveBack.lease);
        }
    }

    private boolean anotherEmptyChunk(Chunk c) {
        for (Chunk o : liveChunks) {
            if (o != c && !o.dead && o.allocator.allocationCount() == 0 && o.lease.size() <= chunkBytes) {
                return true;
            }
        }
        return false;
    }

    @Override
    public long allocationSize(long handle) {
        Chunk c = chunkOf(handle);
        long size = c == null ? Allocator.NOT_ALLOCATED : c.allocator.sizeIfAllocated(offsetOf(handle));
        if (size == Allocator.NOT_ALLOCATED) {
            throw new IllegalArgumentException("handle " + handle + " is not allocated in tier '" + name + "'");
        }
        return size;
    }

    // ------------------------------------------------------------------ revocation

    /** The lease under {@code chunk} ended: forget its bytes and tell the listeners (the thread that ends the revocation). */
    private void chunkEnded(Chunk chunk, RevocationReason reason) {
        long[] handles;
        lock.lock();
        try {
            if (chunk.dead) {
                return; // given back, or told already
            }
            chunk.dead = true;
            liveChunks.remove(chunk);
            borrowed -= chunk.lease.size();
            used -= chunk.allocator.used();
            List<FreeRange> live = chunk.allocator.liveRanges();
            handles = new long[live.size()];
            for (int i = 0; i < handles.length; i++) {
                handles[i] = handle(chunk, live.get(i).offset());
            }
            if (handles.length == 0) {
                chunks.remove(chunk.serial);
            }
        } finally {
            lock.unlock();
        }
        leasesRevoked.incrementAndGet();
        handlesRevoked.addAndGet(handles.length);
        lendableAt = Long.MIN_VALUE;
        RuntimeException failure = null;
        for (RevokedHandles l : listeners) {
            try {
                l.revoked(this, handles, reason);
            } catch (RuntimeException e) { // every listener is still told
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

    @Override
    public void listen(RevokedHandles listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    @Override
    public void unlisten(RevokedHandles listener) {
        listeners.remove(listener);
    }

    @Override
    public boolean live(long handle) {
        Chunk c = chunkOf(handle);
        return c != null && !c.dead && c.allocator.isAllocated(offsetOf(handle)) && peers.valid(c.lease);
    }

    /** The lease that holds {@code handle}, or null when it is not allocated or its lease ended. */
    public PeerLease leaseOf(long handle) {
        Chunk c = chunkOf(handle);
        return c == null || c.dead ? null : c.lease;
    }

    // ------------------------------------------------------------------ data path

    @Override
    public void write(long handle, MemorySegment src) {
        Chunk c = chunkForAccess(handle, src.byteSize());
        if (c == null) {
            lostWrites.incrementAndGet();
            return;
        }
        long start = meter.startWrite();
        if (peers.write(c.lease, offsetOf(handle), src)) {
            meter.writeDone(src.byteSize(), start);
        } else {
            lostWrites.incrementAndGet();
        }
    }

    @Override
    public void gatherWrite(long handle, List<MemorySegment> parts) {
        long total = 0;
        for (MemorySegment p : parts) {
            total += p.byteSize();
        }
        Chunk c = chunkForAccess(handle, total);
        if (c == null) {
            lostWrites.incrementAndGet();
            return;
        }
        long start = meter.startWrite();
        long at = offsetOf(handle);
        for (MemorySegment p : parts) {
            if (!peers.write(c.lease, at, p)) {
                lostWrites.incrementAndGet();
                return;
            }
            at += p.byteSize();
        }
        meter.writeDone(total, start);
    }

    @Override
    public boolean read(long handle, MemorySegment dst) {
        Chunk c = chunkForAccess(handle, dst.byteSize());
        if (c == null) {
            return false;
        }
        long start = meter.startRead();
        if (!peers.read(c.lease, offsetOf(handle), dst)) {
            return false;
        }
        meter.readDone(dst.byteSize(), start);
        return true;
    }

    @Override
    public boolean scatterRead(long handle, List<MemorySegment> parts) {
        long total = 0;
        for (MemorySegment p : parts) {
            total += p.byteSize();
        }
        Chunk c = chunkForAccess(handle, total);
        if (c == null) {
            return false;
        }
        long start = meter.startRead();
        long at = offsetOf(handle);
        for (MemorySegment p : parts) {
            if (!peers.read(c.lease, at, p)) {
                return false;
            }
            at += p.byteSize();
        }
        meter.readDone(total, start);
        return true;
    }

    /**
     * The chunk of an allocation about to be accessed for {@code length} bytes, or null when its
     * lease ended (an expected outcome).
     *
     * @throws IllegalArgumentException  if the handle is not allocated (a freed or foreign handle)
     * @throws IndexOutOfBoundsException if {@code length} exceeds the allocation
     */
    private Chunk chunkForAccess(long handle, long length) {
        Chunk c = chunkOf(handle);
        long size = c == null ? Allocator.NOT_ALLOCATED : c.allocator.sizeIfAllocated(offsetOf(handle));
        if (size == Allocator.NOT_ALLOCATED) {
            if (c == null && serialOf(handle) > 0 && serialOf(handle) < serialsIssued) {
                return null; // its lease ended and every handle on it was freed since: the bytes are gone
            }
            throw new IllegalArgumentException("handle " + handle + " is not allocated in tier '" + name + "'");
        }
        if (length > size) {
            throw new IndexOutOfBoundsException("tier '" + name + "': " + length + " bytes do not fit allocation " + handle
                    + " of " + size + " bytes");
        }
        return c.dead ? null : c;
    }

    @Override
    public MemorySegment segment(long handle, long offset, long length) {
        throw new UnsupportedOperationException("tier '" + name + "' (PEER) is not addressable: lent memory is reached through"
                + " its lease guard only");
    }

    // ------------------------------------------------------------------ capacity and stats

    @Override
    public String name() {
        return name;
    }

    @Override
    public TierKind kind() {
        return TierKind.PEER;
    }

    /** Borrowed bytes plus what the live peers offer now, at most the budget. */
    @Override
    public long capacity() {
        long now = System.nanoTime();
        if (lendableAt == Long.MIN_VALUE || now - lendableAt > LENDABLE_REFRESH_NANOS) {
            refreshLendable(now);
        }
        return Math.min(maxBytes, borrowed + lendable);
    }

    /** Asks the peers again what they offer (capacity otherwise refreshes every few milliseconds). */
    public void refresh() {
        refreshLendable(System.nanoTime());
    }

    private void refreshLendable(long now) {
        long sum = 0;
        for (PeerStatus p : peers.peers()) {
            if (p.alive()) {
                sum += p.lendableBytes();
            }
        }
        lendable = Math.max(0, sum);
        lendableAt = now;
    }

    @Override
    public long used() {
        return used;
    }

    /** Bytes of the leases this tier holds now. */
    public long borrowedBytes() {
        return borrowed;
    }

    /** The most bytes this tier borrows at once. */
    public long maxBytes() {
        return maxBytes;
    }

    /** Bytes of one borrowed chunk. */
    public long chunkBytes() {
        return chunkBytes;
    }

    /** Leases held now. */
    public int leaseCount() {
        lock.lock();
        try {
            return liveChunks.size();
        } finally {
            lock.unlock();
        }
    }

    /** The lease counts since the tier opened. */
    public Counters counters() {
        return new Counters(leasesBorrowed.get(), leasesReturned.get(), leasesRevoked.get(), handlesRevoked.get(),
                borrowFailures.get(), lostWrites.get());
    }

    @Override
    public boolean sharedAcrossProcesses() {
        return false;
    }

    @Override
    public boolean revocable() {
        return true;
    }

    @Override
    public boolean isAddressable() {
        return false;
    }

    @Override
    public boolean isPlainMemory() {
        return false;
    }

    @Override
    public TierStats stats() {
        long allocations = 0;
        lock.lock();
        try {
            for (Chunk c : liveChunks) {
                allocations += c.allocator.allocationCount();
            }
        } finally {
            lock.unlock();
        }
        return meter.snapshot(name, TierKind.PEER, capacity(), used, allocations);
    }

    /**
     * Checks the bookkeeping: live leases sum to the borrowed bytes within the budget, their
     * allocators to the used bytes, every allocator's own invariants. Throws
     * {@link IllegalStateException} naming the first violation. For tests.
     */
    public void checkInvariants() {
        lock.lock();
        try {
            long leaseSum = 0;
            long usedSum = 0;
            for (Chunk c : liveChunks) {
                if (c.dead) {
                    throw new IllegalStateException("tier '" + name + "': dead chunk " + c.serial + " is offered to allocations");
                }
                if (chunks.get(c.serial) != c) {
                    throw new IllegalStateException("tier '" + name + "': live chunk " + c.serial + " is missing from the handle map");
                }
                c.allocator.checkInvariants();
                leaseSum += c.lease.size();
                usedSum += c.allocator.used();
            }
            if (reserving < 0 || leaseSum + reserving != borrowed || borrowed > maxBytes) {
                throw new IllegalStateException("tier '" + name + "': live leases sum to " + leaseSum + " bytes and "
                        + reserving + " bytes are being borrowed, borrowed says " + borrowed + ", budget " + maxBytes);
            }
            if (usedSum != used) {
                throw new IllegalStateException("tier '" + name + "': live allocations sum to " + usedSum + " bytes, used says " + used);
            }
            for (Chunk c : chunks.values()) {
                if (c.dead && c.allocator.allocationCount() == 0) {
                    throw new IllegalStateException("tier '" + name + "': dead chunk " + c.serial + " with no handle is still mapped");
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("tier '" + name + "' is closed");
        }
    }

    /** Gives every lease back (the peer client stays open); every later call fails. */
    @Override
    public void close() {
        List<Chunk> giveBack;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            giveBack = new ArrayList<>(liveChunks);
            for (Chunk c : giveBack) {
                c.dead = true;
            }
            liveChunks.clear();
            chunks.clear();
            borrowed = reserving; // borrowings under way give their bytes back when they finish
            used = 0;
        } finally {
            lock.unlock();
        }
        for (Chunk c : giveBack) {
            leasesReturned.incrementAndGet();
            peers.free(c.lease);
        }
    }

    @Override
    public String toString() {
        return "PeerTier[" + name + ", " + leaseCount() + " leases, " + Sizes.format(borrowed) + " borrowed, " + Sizes.format(used)
                + " used]";
    }
}
