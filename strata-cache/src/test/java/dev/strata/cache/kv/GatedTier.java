package dev.strata.cache.kv;

import dev.strata.cache.ForwardingTier;
import dev.strata.memory.Tier;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Fault injection: wraps a real tier, presents it as a framed, non-addressable tier (so every copy
 * into it goes through {@code write}), and holds every write until {@link #open} is called, so
 * that copies into it stay in flight for as long as a test needs (a slow store tier: a busy disk,
 * a peer across a congested link). A write waits at most a minute, then fails.
 *
 * <p>Threads: any; {@link #open} releases every waiting and later write.
 */
public final class GatedTier extends ForwardingTier {
    private final CountDownLatch gate = new CountDownLatch(1);

    public GatedTier(Tier inner) {
        super(inner, true);
    }

    /** Lets every held and later write through. */
    public void open() {
        gate.countDown();
    }

    private void pass() {
        try {
            if (!gate.await(1, TimeUnit.MINUTES)) {
                throw new IllegalStateException("gated tier '" + name() + "': the test never opened the gate");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("gated tier '" + name() + "': interrupted while held", e);
        }
    }

    @Override
    public void write(long handle, MemorySegment src) {
        pass();
        inner.write(handle, src);
    }

    @Override
    public void gatherWrite(long handle, List<MemorySegment> parts) {
        pass();
        inner.gatherWrite(handle, parts);
    }
}
