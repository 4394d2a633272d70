package dev.strata.memory.pool;

import dev.strata.memory.Checksum64;
import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.posix.Libc;
import dev.strata.memory.transfer.NonTemporalCopy;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * Makes objects in the pool readable by other processes only once they are whole, and lets
 * readers detect objects that are freed or rewritten while they copy.
 *
 * <p>Design note (single writer, many readers, per allocation; the descriptor is in
 * {@link ObjectDescriptorTable}):
 * <ul>
 *   <li><b>Write</b>: the allocation's descriptor is WRITING and owned by the writer (a PUBLISHED
 *       object being rewritten is first CASed to WRITING with a new generation, which readers in
 *       flight will notice). The writer copies the payload and computes its
 *       {@link Checksum64} in the same pass ({@link Checksum64#copyPartsToMappedAndUpdate}, one trip
 *       through memory, the mapping touched only by {@link java.lang.foreign.MemorySegment#copy} or
 *       the guarded streaming loop, so that a fault on it is an {@link InternalError} rather than
 *       the end of the JVM; a payload
 *       placed through a zero-copy view is checksummed in place instead, through
 *       {@link Checksum64#updateMapped}),
 *       stores length and checksum with plain stores, then CASes WRITING -&gt; PUBLISHED. The CAS is the release
 *       that orders every payload byte before the state; it also fails if the allocation was freed
 *       or reclaimed meanwhile, which is reported.</li>
 *   <li><b>Read</b> (a seqlock): acquire-load the state word; anything but PUBLISHED is "no
 *       object" ({@code false}). Load length and checksum, copy the payload out while checksumming
 *       it (one pass, {@link Checksum64#copyMappedToPartsAndUpdate}), then
 *       {@link VarHandle#loadLoadFence()} and load the state word again: if it changed (freed,
 *       reused, rewritten: every such change bumps the generation) the copy may be torn and the
 *       read returns {@code false}. Otherwise the checksum of the copy is compared with the stored one: a mismatch
 *       means corruption of the pool memory itself and throws {@link CorruptObjectException}.</li>
 * </ul>
 * <ul>
 *   <li><b>Runs</b> ({@link #writeRun}, {@link #readRun}): the same steps for many objects around
 *       one copy of all their bytes, in one call of the streaming loop, which stores each object's
 *       own sums ({@link NonTemporalCopy#copyPairsSummed}). A run of writes begins every object
 *       (to WRITING), copies and sums them all, then stores each length and checksum and CASes
 *       each to PUBLISHED; the loop's closing store fence orders every payload byte before the
 *       first CAS. A run of reads acquire-loads each state word, length and checksum, copies and
 *       sums them all, then one {@link VarHandle#loadLoadFence()} and each state word again: an
 *       object whose word changed is "no object", one whose sums do not give its stored checksum
 *       is corrupt. Each object's failure is its own; where the loop does not take the run, each
 *       object takes the single path.</li>
 * </ul>
 * A reader therefore never returns a torn or half-written object. The writer's side needs no
 * flush on a cache-coherent host (one machine, or CXL 3 coherent memory); a non-coherent
 * multi-host CXL 2.0 pool would add non-temporal stores or cache-line flushes around these steps.
 *
 * <p>Threads: any, in any process; the protocol is lock-free.
 */
final class PublishProtocol {
    /** One checksum state per thread, reset per object: the hot paths allocate nothing. */
    private static final ThreadLocal<Checksum64> CHECKSUM = ThreadLocal.withInitial(Checksum64::new);
    private static final int SUMS_PER_OBJECT = 16; // words of one object's sums from a run: eight word sums, eight sums of those

    private final String tierName;
    private final ObjectDescriptorTable descriptors;
    private final MemorySegment data; // the data area, chunkCount * chunkSize bytes
    private final PoolAllocator allocator;

    PublishProtocol(String tierName, ObjectDescriptorTable descriptors, MemorySegment data, PoolAllocator allocator) {
        this.tierName = tierName;
        this.descriptors = descriptors;
        this.data = data;
        this.allocator = allocator;
    }

    /** Copies {@code parts} in order to the allocation {@code handle} and publishes them as one object. */
    void write(long handle, List<MemorySegment> parts) {
        long head = allocator.headChunk(handle);
        long total = 0;
        for (MemorySegment p : parts) {
            total += p.byteSize();
        }
        long writing = beginWrite(handle, head, total);
        Checksum64 checksum = CHECKSUM.get().reset().copyPartsToMappedAndUpdate(parts, data, handle);
        finishWrite(handle, head, writing, total, checksum.value());
    }

    /**
     * Publishes {@code length} bytes already placed in the allocation through a zero-copy view.
     */
    void publishInPlace(long handle, long length) {
        long head = allocator.headChunk(handle);
        long writing = beginWrite(handle, head, length);
        finishWrite(handle, head, writing, length, CHECKSUM.get().reset().updateMapped(data, handle, length).value());
    }

    /**
     * Publishes {@code length} bytes already placed in the allocation, whose {@link Checksum64}
     * the caller computed while placing them (fused into its copy), so no second pass is made.
     */
    void publishInPlace(long handle, long length, long checksum) {
        long head = allocator.headChunk(handle);
        long writing = beginWrite(handle, head, length);
        finishWrite(handle, head, writing, length, checksum);
    }

    private long beginWrite(long handle, long head, long length) {
        int me = allocator.slot();
        while (true) {
            long w = descriptors.stateAcquire(head);
            int s = ObjectDescriptorTable.state(w);
            long writing;
            if (s == ObjectDescriptorTable.WRITING) {
                if (ObjectDescriptorTable.owner(w) != me) {
                    throw afterPendingFaults(new IllegalStateException("handle " + handle + " in tier '" + tierName
                            + "' is being written by process slot " + ObjectDescriptorTable.owner(w)
                            + ", not by this process (slot " + me + ")"));
                }
                writing = w;
            } else if (s == ObjectDescriptorTable.PUBLISHED) {
                writing = ObjectDescriptorTable.word(ObjectDescriptorTable.WRITING, me,
                        ObjectDescriptorTable.generation(w) + 1);
                if (!descriptors.compareAndSetState(head, w, writing)) {
                    continue;
                }
            } else {
                throw afterPendingFaults(new IllegalStateException("handle " + handle + " is not allocated in tier '" + tierName
                        + "' (descriptor " + ObjectDescriptorTable.describe(w) + ")"));
            }
            long room = descriptors.runChunks(head) * allocator.alignment();
            if (length > room) {
                throw afterPendingFaults(new IllegalArgumentException("object of " + length + " bytes does not fit allocation "
                        + handle + " of " + room + " bytes in tier '" + tierName + "'"));
            }
            return writing;
        }
    }

    private void finishWrite(long handle, long head, long writing, long length, long checksum) {
        descriptors.setLengthAndChecksum(head, length, checksum);
        long published = ObjectDescriptorTable.word(ObjectDescriptorTable.PUBLISHED,
                ObjectDescriptorTable.owner(writing), ObjectDescriptorTable.generation(writing));
        if (!descriptors.compareAndSetState(head, writing, published)) {
            throw afterPendingFaults(new IllegalStateException("handle " + handle + " in tier '" + tierName
                    + "' was freed or reclaimed while being written (descriptor now "
                    + ObjectDescriptorTable.describe(descriptors.stateAcquire(head)) + ")"));
        }
    }

    /**
     * Copies the published object at {@code handle} into {@code parts} in order.
     *
     * @return false if there is no published object, or it changed during the copy
     * @throws IllegalArgumentException if the parts' total size differs from the object's length
     * @throws CorruptObjectException   if the stable copy fails its checksum
     */
    boolean read(long handle, List<MemorySegment> parts) {
        long head = allocator.headChunk(handle);
        long before = descriptors.stateAcquire(head);
        if (ObjectDescriptorTable.state(before) != ObjectDescriptorTable.PUBLISHED) {
            return false;
        }
        long length = descriptors.length(head);
        long stored = descriptors.checksum(head);
        long wanted = 0;
        for (MemorySegment p : parts) {
            wanted += p.byteSize();
        }
        if (wanted != length) {
            RuntimeException mismatch = lengthMismatch(handle, head, before, wanted, length);
            if (mismatch == null) {
                return false;
            }
            throw mismatch;
        }
        Checksum64 checksum = CHECKSUM.get().reset().copyMappedToPartsAndUpdate(data, handle, parts);
        VarHandle.loadLoadFence();
        if (descriptors.stateAcquire(head) != before) {
            return false;
        }
        long actual = checksum.value();
        if (actual != stored) {
            throw afterPendingFaults(new CorruptObjectException(tierName, handle, length, stored, actual));
        }
        return true;
    }

    /**
     * Writes and publishes {@code count} objects, object {@code i} the bytes of {@code sources[i]}
     * into allocation {@code handles[i]}, each as {@link #write} does, their bytes moved and summed
     * in one pass of the streaming loop ({@link NonTemporalCopy#copyPairsSummed}) where it takes
     * them, else one by one. Sets {@code failures[i]} to what object {@code i} met (not allocated,
     * written by another process, too long for its allocation, freed while written), else null;
     * the others are written all the same.
     *
     * @throws InternalError if a page of the mapping faulted: objects begun stay unpublished
     */
    void writeRun(long[] handles, MemorySegment[] sources, int count, Throwable[] failures) {
        long[] heads = new long[count];
        long[] writing = new long[count];
        int[] objects = new int[count]; // the objects begun, in order
        MemorySegment[] from = new MemorySegment[count];
        MemorySegment[] to = new MemorySegment[count];
        int begun = 0;
        for (int i = 0; i < count; i++) {
            failures[i] = null;
            try {
                long length = sources[i].byteSize();
                heads[i] = allocator.headChunk(handles[i]);
                writing[i] = beginWrite(handles[i], heads[i], length);
                from[begun] = sources[i];
                to[begun] = data.asSlice(handles[i], length);
                objects[begun++] = i;
            } catch (RuntimeException e) {
                failures[i] = e;
            }
        }
        long[] sums = new long[SUMS_PER_OBJECT * begun];
        boolean summed = NonTemporalCopy.copyPairsSummed(from, to, begun, sums);
        for (int k = 0; k < begun; k++) {
            int i = objects[k];
            long length = from[k].byteSize();
            try {
                long checksum = summed ? Checksum64.ofSums(sums, SUMS_PER_OBJECT * k, length)
                        : CHECKSUM.get().reset().copyPartsToMappedAndUpdate(List.of(from[k]), data, handles[i]).value();
                finishWrite(handles[i], heads[i], writing[i], length, checksum);
            } catch (RuntimeException e) {
                failures[i] = e;
            }
        }
    }

    /**
     * Copies {@code count} published objects out, object {@code i} at {@code handles[i]} into
     * {@code destinations[i]}, each as {@link #read} does (the same checks of state, length and
     * checksum), their bytes moved and summed in one pass of the streaming loop
     * ({@link NonTemporalCopy#copyPairsSummed}) where it takes them, else one by one. Sets
     * {@code found[i]} to whether object {@code i} was there, whole, for the whole copy, and
     * {@code failures[i]} to what it met (a destination of another length, a failed checksum:
     * {@link CorruptObjectException}), else null.
     *
     * @throws InternalError if a page of the mapping faulted
     */
    void readRun(long[] handles, MemorySegment[] destinations, int count, boolean[] found, Throwable[] failures) {
        long[] heads = new long[count];
        long[] before = new long[count];
        long[] stored = new long[count];
        int[] objects = new int[count]; // the objects being copied, in order
        MemorySegment[] from = new MemorySegment[count];
        MemorySegment[] to = new MemorySegment[count];
        int copying = 0;
        for (int i = 0; i < count; i++) {
            found[i] = false;
            failures[i] = null;
            try {
                heads[i] = allocator.headChunk(handles[i]);
                before[i] = descriptors.stateAcquire(heads[i]);
                if (ObjectDescriptorTable.state(before[i]) != ObjectDescriptorTable.PUBLISHED) {
                    continue;
                }
                long length = descriptors.length(heads[i]);
                stored[i] = descriptors.checksum(heads[i]);
                long wanted = destinations[i].byteSize();
                if (wanted != length) {
                    failures[i] = lengthMismatch(handles[i], heads[i], before[i], wanted, length);
                    continue;
                }
                from[copying] = data.asSlice(handles[i], length);
                to[copying] = destinations[i];
                objects[copying++] = i;
            } catch (RuntimeException e) {
                failures[i] = e;
            }
        }
        long[] sums = new long[SUMS_PER_OBJECT * copying];
        if (!NonTemporalCopy.copyPairsSummed(from, to, copying, sums)) {
            for (int k = 0; k < copying; k++) {
                int i = objects[k];
                try {
                    found[i] = read(handles[i], List.of(to[k]));
                } catch (RuntimeException e) {
                    failures[i] = e;
                }
            }
            return;
        }
        VarHandle.loadLoadFence();
        for (int k = 0; k < copying; k++) {
            int i = objects[k];
            if (descriptors.stateAcquire(heads[i]) != before[i]) {
                continue; // freed, reused or rewritten during the copy: not found
            }
            long length = from[k].byteSize();
            long actual = Checksum64.ofSums(sums, SUMS_PER_OBJECT * k, length);
            if (actual != stored[i]) {
                failures[i] = afterPendingFaults(new CorruptObjectException(tierName, handles[i], length, stored[i], actual));
            } else {
                found[i] = true;
            }
        }
    }

    /**
     * The error of a read into {@code wanted} bytes of the object of {@code length} bytes at
     * {@code handle}, whose state word was {@code before}: null if the word has changed since (the
     * length read may be another object's, so there is no object to read), else the mismatch.
     */
    private RuntimeException lengthMismatch(long handle, long head, long before, long wanted, long length) {
        VarHandle.loadLoadFence();
        if (descriptors.stateAcquire(head) != before) {
            return null;
        }
        return afterPendingFaults(new IllegalArgumentException("destination of " + wanted + " bytes does not match object of "
                + length + " bytes at handle " + handle + " in tier '" + tierName + "'"));
    }

    /**
     * {@code failure}, to throw, unless an access to the mapping before it faulted and the JDK has
     * not thrown that yet (see {@link Libc#deliverPendingFaults}): then that fault is thrown here,
     * since the values that led to {@code failure} may be the garbage a faulted load returns.
     */
    private static RuntimeException afterPendingFaults(RuntimeException failure) {
        Libc.deliverPendingFaults();
        return failure;
    }

    /** True if a published object is at {@code handle} now. */
    boolean isPublished(long handle) {
        return ObjectDescriptorTable.state(descriptors.stateAcquire(allocator.headChunk(handle)))
                == ObjectDescriptorTable.PUBLISHED;
    }

    /** The length of the published object at {@code handle}, or -1 if none is published. */
    long publishedLength(long handle) {
        long head = allocator.headChunk(handle);
        long before = descriptors.stateAcquire(head);
        if (ObjectDescriptorTable.state(before) != ObjectDescriptorTable.PUBLISHED) {
            return -1;
        }
        long length = descriptors.length(head);
        VarHandle.loadLoadFence();
        return descriptors.stateAcquire(head) == before ? length : -1;
    }
}
