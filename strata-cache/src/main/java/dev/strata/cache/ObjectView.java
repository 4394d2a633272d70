package dev.strata.cache;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A readable view of a stored object, returned by {@link TieredStore#get}. The object stays
 * pinned (not evicted, not moved, its copies not freed) until {@link #close()}.
 *
 * <p>{@link #bytes()} is a read-only segment of exactly {@link #sizeBytes()} bytes: zero-copy into
 * the tier when it is plain memory, otherwise a private copy made at {@code get}.
 *
 * <p>Threads: a view may be read from several threads while open; {@link #close()} once, by its
 * owner (later calls do nothing). Using {@link #bytes()} after close throws.
 */
public final class ObjectView implements AutoCloseable {
    private static final VarHandle CLOSED;

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(ObjectView.class, "closed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final TieredStore store;
    private final StoredObject object;
    private final MemorySegment bytes; // [sizeBytes] read-only
    private final String tierName; // tier the bytes come from
    private volatile boolean closed;

    ObjectView(TieredStore store, StoredObject object, MemorySegment bytes, String tierName) {
        this.store = store;
        this.object = object;
        this.bytes = bytes;
        this.tierName = tierName;
    }

    public ObjectKey key() {
        return object.key;
    }

    public ObjectKind kind() {
        return object.kind;
    }

    public Durability durability() {
        return object.durability;
    }

    public long sizeBytes() {
        return object.sizeBytes;
    }

    /** Name of the tier whose copy served this view. */
    public String tierName() {
        return tierName;
    }

    /** The object's bytes, read-only; valid until {@link #close()}. */
    public MemorySegment bytes() {
        if (closed) {
            throw new IllegalStateException("view of object " + object.key + " is closed");
        }
        return bytes;
    }

    /** Copies the object's bytes into {@code dst} at offset 0 ({@code dst} must be large enough). */
    public void copyTo(MemorySegment dst) {
        MemorySegment.copy(bytes(), 0, dst, 0, object.sizeBytes);
    }

    /** Unpins the object. */
    @Override
    public void close() {
        if (CLOSED.compareAndSet(this, false, true)) {
            store.release(object);
        }
    }
}
