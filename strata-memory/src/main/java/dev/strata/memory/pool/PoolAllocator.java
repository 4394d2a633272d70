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
 * <p>Accounting: {@link #used()} and {@link #allocationCount()} scan the tables (O(chunks)); they
 * are exact when no operation is in flight.
 *
 * <p>Threads: any; one instance per process (it carries the process's slot).
 */
final class PoolAllocator implements Allocator {
    private final String tierName;
    private final ChunkTable chunks;
    private final ObjectDescriptorTable descriptors;
    private final long chunkSize; // bytes, power of two
    private final int chunkShift;
    private final int mySlot;
    private volatile long cursor; // next-fit start chunk; a hint only

    PoolAllocator(String tierName, ChunkTable chunks, ObjectDescriptorTable descriptors, long chunkSize, int mySlot) {
        this.tierName = tierName;
        this.chunks = chunks;
        this.descriptors = descriptors;
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
                finishFree(head, freeing);
                return;
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
     * state. The caller holds {@code deadSlot} in RECLAIMING (see {@link ProcessTable}).
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

    @Override
    public long used() {
        return chunks.countInUse() << chunkShift;
    }

    @Override
    public long alignment() {
        return chunkSize;
    }

    @Override
    public long allocationCount() {
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
