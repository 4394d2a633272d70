package dev.strata.memory.pool;

import dev.strata.memory.Allocator;

/**
 * Allocates runs of contiguous chunks from a pool's data area, with all state in the pool so that
 * several processes allocate and free concurrently, lock-free.
 *
 * <p>Design note. There is no global lock: a process that dies holding one would stop every other
 * process. Instead each chunk has a state word ({@link ChunkTable}) and each allocation a
 * descriptor at its head chunk ({@link ObjectDescriptorTable}).
 * <ul>
 *   <li><b>Allocate</b>: find a run of {@code n} free words (next-fit from a per-process cursor),
 *       claim it head first with one CAS per chunk ({@code 0 -> owner|head}); on a conflict,
 *       release the chunks claimed so far in reverse order and keep searching after the conflict.
 *       Then CAS the head descriptor FREE -&gt; WRITING(owner). The handle is the run's byte offset
 *       in the data area.</li>
 *   <li><b>Free</b> (any process): CAS the descriptor WRITING/PUBLISHED -&gt; FREEING(freer); zero
 *       the run's other chunks, relabel the head chunk with the freer, CAS FREEING -&gt; FREE, zero
 *       the head chunk. Exactly one CAS wins, so a double free is detected and reported.</li>
 *   <li><b>Reclaim</b> of a dead process (whoever finds it, on a full pool or in the periodic
 *       sweep): finish its FREEING descriptors, turn its WRITING descriptors into FREEING and
 *       finish those, then zero chunk words it claimed for runs whose descriptor is still FREE
 *       (a claim or rollback cut short), non-head chunks first.</li>
 * </ul>
 * PUBLISHED objects of a dead writer are kept: the pool exists so that objects outlive the
 * processes that made them (a KV block published by an engine that exited is still a cache hit
 * for the next one). Only allocations that never became readable are reclaimed; they cannot be
 * referenced by anyone but their dead writer.
 *
 * <p>Accounting ({@link AllocationCounters}, two shared words in the header). {@link #used()} and
 * {@link #allocationCount()} are one load each; the object store asks for {@code used()} on every
 * put, so a scan (about 1 ms per million chunks) is not affordable there. Update rules, chosen so
 * that every error a live process can cause is an over-count (the pool looks fuller than it is,
 * never emptier):
 * <ul>
 *   <li>the allocator that CASes a head descriptor FREE -&gt; WRITING adds {@code +runChunks, +1}
 *       after its chunk claims and that CAS;</li>
 *   <li>whoever wins the CAS WRITING/PUBLISHED -&gt; FREEING (a free, or reclaim of a dead
 *       writer's unpublished allocation) adds {@code -runChunks, -1} before it releases the chunks;</li>
 *   <li>chunk claims that are rolled back, cut short by a death, or cleared by reclaim were never
 *       counted and change nothing.</li>
 * </ul>
 * With no process death, the counters are exact whenever no operation is in flight (the property
 * tests check this after every step). A process that dies between its descriptor CAS and its
 * counter update leaves them off by one run (a claim not yet added under-counts; a free not yet
 * subtracted over-counts, and reclaim, finishing that FREEING run, does not subtract it).
 * The repair: after reclaiming any dead process, the reclaimer recounts ({@link #recount()}): it
 * reads both counters, scans the tables, and CASes the scanned values in only if the counters did
 * not change during the scan (else it scans again, a few times; reclaim is rare). A successful CAS
 * means no operation updated a counter during the scan, so the only operations the scan can
 * misjudge are those paused between their chunk CAS and their counter update; under the rules
 * above each of those leaves an over-count of its run, never an under-count, and the next recount
 * removes it. {@link #usedByScan()} and {@link #allocationCountByScan()} keep the scans for tests
 * and inspection.
 *
 * <p>Threads: any; one instance per process (it carries the process's slot).
 */
final class PoolAllocator implements Allocator {
    private final String tierName;
    private final ChunkTable chunks;
    private final ObjectDescriptorTable descriptors;
    private final AllocationCounters counters;
    private final long chunkSize; // bytes, power of two
    private final int chunkShift;
    private final int mySlot;
    private volatile long cursor; // next-fit start chunk; a hint only

    PoolAllocator(String tierName, ChunkTable chunks, ObjectDescriptorTable descriptors, AllocationCounters counters,
                  long chunkSize, int mySlot) {
        this.tierName = tierName;
        this.chunks = chunks;
        this.descriptors = descriptors;
        this.counters = counters;
        this.chunkSize = chunkSize;
        this.chunkShift = Long.numberOfTrailingZeros(chunkSize);
        this.mySlot = mySlot;
        this.cursor = chunks.chunkCount() == 0 ? 0 : Math.floorMod(ProcessHandle.current().pid() * 7919L, chunks.chunkCount());
    }

    int slot() {
        return mySlot;
    }

    @Override
    public long allocate(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("allocation size " + size + " must be positive in tier '" + tierName + "'");
        }
        long total = chunks.chunkCount();
        long n = (size + chunkSize - 1) >>> chunkShift;
        if (n > total) {
            return FULL;
        }
        long i = cursor % total;
        long scanned = 0;
        while (scanned < total) {
            if (i + n > total) {
                scanned += total - i;
                i = 0;
                continue;
            }
            long k = 0;
            while (k < n && chunks.get(i + k) == 0) {
                k++;
            }
            if (k < n) {
                scanned += k + 1;
                i += k + 1;
                continue;
            }
            long claimed = claimRun(i, n);
            if (claimed < n) {
                scanned += claimed + 1;
                i += claimed + 1;
                continue;
            }
            long free = descriptors.stateAcquire(i);
            if (ObjectDescriptorTable.state(free) != ObjectDescriptorTable.FREE) {
                throw new IllegalStateException("pool '" + tierName + "' is inconsistent: chunk " + i
                        + " was free but its descriptor is " + ObjectDescriptorTable.describe(free));
            }
            descriptors.setRunChunks(i, n);
            long writing = ObjectDescriptorTable.word(ObjectDescriptorTable.WRITING, mySlot,
                    ObjectDescriptorTable.generation(free) + 1);
            if (!descriptors.compareAndSetState(i, free, writing)) {
                throw new IllegalStateException("pool '" + tierName + "' is inconsistent: descriptor of claimed chunk "
                        + i + " changed to " + ObjectDescriptorTable.describe(descriptors.stateAcquire(i)));
            }
            counters.add(n, 1);
            cursor = (i + n) % total;
            return i << chunkShift;
        }
        return FULL;
    }

    /** Claims chunks {@code [head, head+n)} head first; on a conflict releases them and returns how many were free. */
    private long claimRun(long head, long n) {
        long label = ChunkTable.word(mySlot, head);
        long k = 0;
        while (k < n && chunks.compareAndSet(head + k, 0L, label)) {
            k++;
        }
        if (k == n) {
            return n;
        }
        for (long j = k - 1; j >= 0; j--) {
            if (!chunks.compareAndSet(head + j, label, 0L)) {
                throw new IllegalStateException("pool '" + tierName + "': chunk " + (head + j)
                        + " claimed by slot " + mySlot + " was changed by another process");
            }
        }
        return k;
    }

    @Override
    public void free(long offset) {
        long head = headChunk(offset);
        while (true) {
            long w = descriptors.stateAcquire(head);
            int s = ObjectDescriptorTable.state(w);
            if (s != ObjectDescriptorTable.WRITING && s != ObjectDescriptorTable.PUBLISHED) {
                throw new IllegalStateException("handle " + offset + " is not allocated in tier '" + tierName
                        + "' (descriptor " + ObjectDescriptorTable.describe(w) + "): double free?");
            }
            long freeing = ObjectDescriptorTable.word(ObjectDescriptorTable.FREEING, mySlot,
                    ObjectDescriptorTable.generation(w) + 1);
            if (descriptors.compareAndSetState(head, w, freeing)) {
                counters.add(-descriptors.runChunks(head), -1);
                finishFree(head, freeing);
                return;
            }
        }
    }

    /**
     * The generation of the allocation at {@code offset} (WRITING or PUBLISHED), or -1 if none is
     * there. The generation changes whenever the head chunk is allocated again, so it tells one
     * allocation at an offset from a later one.
     */
    long generationIfAllocated(long offset) {
        if (offset < 0 || (offset & (chunkSize - 1)) != 0 || (offset >>> chunkShift) >= chunks.chunkCount()) {
            return -1;
        }
        long w = descriptors.stateAcquire(offset >>> chunkShift);
        int s = ObjectDescriptorTable.state(w);
        return s == ObjectDescriptorTable.WRITING || s == ObjectDescriptorTable.PUBLISHED
                ? ObjectDescriptorTable.generation(w) : -1;
    }

    /**
     * Frees the allocation at {@code offset} if it is still the one of {@code generation}
     * (WRITING or PUBLISHED); a later allocation at the same offset, or none, is left alone.
     *
     * @return true if this call freed it
     */
    boolean freeIfGeneration(long offset, long generation) {
        long head = headChunk(offset);
        while (true) {
            long w = descriptors.stateAcquire(head);
            int s = ObjectDescriptorTable.state(w);
            if ((s != ObjectDescriptorTable.WRITING && s != ObjectDescriptorTable.PUBLISHED)
                    || ObjectDescriptorTable.generation(w) != generation) {
                return false;
            }
            long freeing = ObjectDescriptorTable.word(ObjectDescriptorTable.FREEING, mySlot, generation + 1);
            if (descriptors.compareAndSetState(head, w, freeing)) {
                counters.add(-descriptors.runChunks(head), -1);
                finishFree(head, freeing);
                return true;
            }
        }
    }

    /** Releases the chunks of the run at {@code head} whose descriptor holds {@code freeing}. */
    private void finishFree(long head, long freeing) {
        long n = descriptors.runChunks(head);
        for (long j = head + n - 1; j > head; j--) {
            long w = chunks.get(j);
            if (ChunkTable.inUse(w) && ChunkTable.head(w) == head) {
                chunks.compareAndSet(j, w, 0L);
            }
        }
        long mine = ChunkTable.word(mySlot, head);
        long hw = chunks.get(head);
        if (ChunkTable.inUse(hw) && ChunkTable.head(hw) == head && hw != mine) {
            chunks.compareAndSet(head, hw, mine);
        }
        long free = ObjectDescriptorTable.word(ObjectDescriptorTable.FREE, -1, ObjectDescriptorTable.generation(freeing));
        if (descriptors.compareAndSetState(head, freeing, free)) {
            chunks.compareAndSet(head, mine, 0L);
        }
    }

    /**
     * Returns the unpublished allocations of the dead process in {@code deadSlot} to the free
     * state. The caller holds {@code deadSlot} in RECLAIMING (see {@link ProcessTable}), or
     * {@code deadSlot} is the caller's own slot at close. The caller of a dead slot's reclaim then
     * calls {@link #recount()}.
     *
     * @return bytes returned to the free state
     */
    long reclaimSlot(int deadSlot) {
        long before = chunks.countInUse();
        long total = chunks.chunkCount();
        for (long h = 0; h < total; h++) {
            long w = descriptors.stateAcquire(h);
            if (ObjectDescriptorTable.owner(w) != deadSlot) {
                continue;
            }
            int s = ObjectDescriptorTable.state(w);
            if (s == ObjectDescriptorTable.WRITING) {
                long freeing = ObjectDescriptorTable.word(ObjectDescriptorTable.FREEING, mySlot,
                        ObjectDescriptorTable.generation(w) + 1);
                if (descriptors.compareAndSetState(h, w, freeing)) {
                    counters.add(-descriptors.runChunks(h), -1);
                    finishFree(h, freeing);
                }
            } else if (s == ObjectDescriptorTable.FREEING) {
                finishFree(h, w);
            }
        }
        // Claims or rollbacks cut short: the run's descriptor is still FREE. Non-head chunks first.
        for (int pass = 0; pass < 2; pass++) {
            for (long j = 0; j < total; j++) {
                long cw = chunks.get(j);
                if (!ChunkTable.inUse(cw) || ChunkTable.owner(cw) != deadSlot) {
                    continue;
                }
                long head = ChunkTable.head(cw);
                if ((pass == 0) == (head == j)) {
                    continue;
                }
                if (ObjectDescriptorTable.state(descriptors.stateAcquire(head)) == ObjectDescriptorTable.FREE) {
                    chunks.compareAndSet(j, cw, 0L);
                }
            }
        }
        return Math.max(0, before - chunks.countInUse()) << chunkShift;
    }

    /** The head chunk of handle {@code offset}, validating its range and alignment. */
    long headChunk(long offset) {
        if (offset < 0 || (offset & (chunkSize - 1)) != 0 || (offset >>> chunkShift) >= chunks.chunkCount()) {
            throw new IllegalArgumentException("handle " + offset + " is not a chunk offset in tier '" + tierName
                    + "' (chunk size " + chunkSize + ", " + chunks.chunkCount() + " chunks)");
        }
        return offset >>> chunkShift;
    }

    @Override
    public long sizeIfAllocated(long offset) {
        if (offset < 0 || (offset & (chunkSize - 1)) != 0 || (offset >>> chunkShift) >= chunks.chunkCount()) {
            return NOT_ALLOCATED;
        }
        long head = offset >>> chunkShift;
        int s = ObjectDescriptorTable.state(descriptors.stateAcquire(head));
        return s == ObjectDescriptorTable.WRITING || s == ObjectDescriptorTable.PUBLISHED
                ? descriptors.runChunks(head) << chunkShift : NOT_ALLOCATED;
    }

    @Override
    public long sizeOf(long offset) {
        long head = headChunk(offset);
        long w = descriptors.stateAcquire(head);
        int s = ObjectDescriptorTable.state(w);
        if (s != ObjectDescriptorTable.WRITING && s != ObjectDescriptorTable.PUBLISHED) {
            throw new IllegalArgumentException("handle " + offset + " is not allocated in tier '" + tierName
                    + "' (descriptor " + ObjectDescriptorTable.describe(w) + ")");
        }
        return descriptors.runChunks(head) << chunkShift;
    }

    @Override
    public long capacity() {
        return chunks.chunkCount() << chunkShift;
    }

    /** Bytes held by allocations, from the shared counter: O(1). See the accounting note. */
    @Override
    public long used() {
        return Math.clamp(counters.allocatedChunks(), 0, chunks.chunkCount()) << chunkShift;
    }

    /** Bytes held by allocations, by a scan of the chunk table: O(chunks), for tests and inspection. */
    long usedByScan() {
        return chunks.countInUse() << chunkShift;
    }

    /**
     * Replaces the counters by a scan of the tables if no operation changes them meanwhile (tried
     * a few times). Called after a dead process is reclaimed.
     *
     * @return true if both counters now hold scanned values
     */
    boolean recount() {
        boolean chunksDone = false;
        boolean allocationsDone = false;
        for (int attempt = 0; attempt < 4 && !(chunksDone && allocationsDone); attempt++) {
            long c0 = counters.allocatedChunks();
            long a0 = counters.liveAllocations();
            long scannedChunks = chunksDone ? 0 : chunks.countInUse();
            long scannedAllocations = allocationsDone ? 0 : allocationCountByScan();
            chunksDone = chunksDone || counters.compareAndSetChunks(c0, scannedChunks);
            allocationsDone = allocationsDone || counters.compareAndSetAllocations(a0, scannedAllocations);
        }
        return chunksDone && allocationsDone;
    }

    @Override
    public long alignment() {
        return chunkSize;
    }

    /** Allocations WRITING or PUBLISHED, from the shared counter: O(1). */
    @Override
    public long allocationCount() {
        return Math.max(0, counters.liveAllocations());
    }

    /** Allocations WRITING or PUBLISHED, by a scan of the descriptors: O(chunks). */
    long allocationCountByScan() {
        long n = 0;
        for (long h = 0; h < descriptors.chunkCount(); h++) {
            int s = ObjectDescriptorTable.state(descriptors.stateAcquire(h));
            if (s == ObjectDescriptorTable.WRITING || s == ObjectDescriptorTable.PUBLISHED) {
                n++;
            }
        }
        return n;
    }
}
