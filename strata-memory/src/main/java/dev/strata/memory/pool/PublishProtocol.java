package dev.strata.memory.pool;

import dev.strata.memory.Checksum64;
import dev.strata.memory.CorruptObjectException;
import dev.strata.memory.posix.Libc;
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
 * A reader therefore never returns a torn or half-written object. The writer's side needs no
 * flush on a cache-coherent host (one machine, or CXL 3 coherent memory); a non-coherent
 * multi-host CXL 2.0 pool would add non-temporal stores or cache-line flushes around these steps.
 *
 * <p>Threads: any, in any process; the protocol is lock-free.
 */
final class PublishProtocol {
    /** One checksum state per thread, reset per object: the hot paths allocate nothing. */
    private static final ThreadLocal<Checksum64> CHECKSUM = ThreadLocal.withInitial(Checksum64::new);

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
            VarHandle.loadLoadFence();
            if (descriptors.stateAcquire(head) != before) {
                return false;
            }
            throw afterPendingFaults(new IllegalArgumentException("destination of " + wanted + " bytes does not match object of "
                    + length + " bytes at handle " + handle + " in tier '" + tierName + "'"));
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
