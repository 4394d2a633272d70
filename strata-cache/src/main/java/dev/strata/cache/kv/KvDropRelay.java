package dev.strata.cache.kv;

import dev.strata.cache.DropListener;
import dev.strata.cache.DropReason;
import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.ObjectKind;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * The store's {@link DropListener} for KV blocks: install it when building the store, then give it
 * to the {@link KvBlockManager}, which forgets each dropped block exactly once on its scheduler
 * thread. Drops reported before a manager is attached wait in the relay.
 *
 * <p>Threads: {@link #dropped} may be called from any thread (the store calls it on the thread
 * that caused the drop); a drop is handed to the manager's completion queue on that same thread,
 * so it is ordered after everything that thread queued before it.
 */
public final class KvDropRelay implements DropListener {
    private final ConcurrentLinkedQueue<ObjectKey> early = new ConcurrentLinkedQueue<>(); // drops before attach
    private volatile Consumer<ObjectKey> sink; // the manager's hand-over, null until attached

    @Override
    public void dropped(ObjectKey key, ObjectKind kind, Durability durability, long sizeBytes, DropReason reason) {
        if (kind != ObjectKind.KV_BLOCK) {
            return;
        }
        Consumer<ObjectKey> s = sink;
        if (s != null) {
            s.accept(key);
        } else {
            early.add(key);
            s = sink;
            if (s != null) {
                drainInto(s);
            }
        }
    }

    /** Connects the relay to a manager; drops reported so far are handed over now. */
    synchronized void attach(Consumer<ObjectKey> target) {
        if (sink != null) {
            throw new IllegalStateException("this drop relay already serves a KV block manager");
        }
        sink = target;
        drainInto(target);
    }

    private void drainInto(Consumer<ObjectKey> target) {
        ObjectKey k;
        while ((k = early.poll()) != null) {
            target.accept(k);
        }
    }
}
