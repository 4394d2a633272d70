package dev.strata.node.client;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cache.kv.SharedPoolHealth;
import dev.strata.memory.TierIoException;
import dev.strata.memory.log.Log;
import dev.strata.memory.pool.PoolTier;
import dev.strata.memory.posix.Libc;
import dev.strata.node.index.IndexIdentityException;
import dev.strata.node.index.PoolSharedBlockStore;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;

/**
 * The {@link SharedBlockStore} a serving process uses: a {@link PoolSharedBlockStore} that takes
 * its pool out of the KV chain when the pool or the node daemon fails, instead of failing the
 * request, and puts it back when the daemon returns.
 *
 * <p>Design note (failure protocol, state kept in {@link SharedPoolHealth}):
 * <ul>
 *   <li>The node daemon is lost ({@link NodeUnavailableException} from any index call): the pool
 *       becomes UNAVAILABLE. Every call then answers without it (match 0, read false, publish
 *       {@link PublishStatus#UNAVAILABLE}), except one caller per retry interval, which first
 *       probes: it asks the index for its statistics (the remote index attaches again to a daemon
 *       serving the rpc path) and checks that the pool file at the path is still the file this
 *       process maps. Both pass: the pool is back (OK) and the call goes on through it. The
 *       daemon keeps the index in the pool, so blocks published before the loss are found again;
 *       their bytes are read from the same mapping and verified against their checksums as always.
 *       The file was replaced: this mapping no longer sees the daemon's blocks, so the pool is
 *       FAILED rather than read where the index points; so is a daemon that came back with the
 *       index of another model ({@link IndexIdentityException}).</li>
 *   <li>The pool's mapping faults (its file was truncated, or its file system ran out of space;
 *       {@link PoolTier#isMappingFault}, or the tier's own {@link TierIoException} once faulted):
 *       the tier is marked faulted and the pool FAILED for the life of the process; nothing
 *       touches the mapping again, {@link #tier()} included.</li>
 *   <li>Anything else (a corrupt block, a bad argument) is the caller's, as from the store
 *       underneath.</li>
 * </ul>
 * A block is never read as a hit unless its bytes pass the pool's seqlock and checksum: every read
 * still goes through {@link PoolSharedBlockStore#read}.
 *
 * <p>Threads: any, as the store underneath; the health is shared by all of them.
 */
public final class ResilientSharedBlockStore implements SharedBlockStore {
    private final PoolSharedBlockStore store;
    private final PoolTier pool;
    private final SharedPoolHealth health;

    /**
     * @param store         the store over the index and this process's mapping of the pool
     * @param retryInterval how often a lost pool is probed again
     */
    public ResilientSharedBlockStore(PoolSharedBlockStore store, Duration retryInterval) {
        this.store = store;
        this.pool = store.tier();
        this.health = new SharedPoolHealth(pool.name(), retryInterval.toNanos(), System::nanoTime);
    }

    /** The pool this process maps, or null once its mapping has failed. */
    @Override
    public PoolTier tier() {
        return health.status().state() == SharedPoolHealth.State.FAILED ? null : pool;
    }

    @Override
    public SharedPoolHealth.Status health() {
        return health.status();
    }

    @Override
    public int matchPrefix(ObjectKey[] keys, int from, int count) {
        if (!usable()) {
            return 0;
        }
        try {
            int matched = store.matchPrefix(keys, from, count);
            Libc.deliverPendingFaults(); // a fault the JDK has not thrown yet is thrown here, not in the caller
            return matched;
        } catch (RuntimeException | Error e) {
            lost(e);
            return 0;
        }
    }

    @Override
    public boolean read(ObjectKey key, List<MemorySegment> destinations) {
        if (!usable()) {
            return false;
        }
        try {
            boolean found = store.read(key, destinations);
            Libc.deliverPendingFaults();
            return found;
        } catch (RuntimeException | Error e) {
            lost(e);
            return false;
        }
    }

    @Override
    public PublishStatus publish(ObjectKey key, List<MemorySegment> sources) {
        if (!usable()) {
            return PublishStatus.UNAVAILABLE;
        }
        try {
            PublishStatus status = store.publish(key, sources);
            Libc.deliverPendingFaults();
            return status;
        } catch (RuntimeException | Error e) {
            lost(e);
            return PublishStatus.UNAVAILABLE;
        }
    }

    /** True if the pool is in the chain, or this caller probed it back. */
    private boolean usable() {
        if (health.ok()) {
            return true;
        }
        if (!health.mayProbe()) {
            return false;
        }
        try {
            store.index().stats(); // attaches again to a daemon serving the rpc path, or throws
            Libc.deliverPendingFaults();
        } catch (RuntimeException | Error e) {
            lost(e);
            return false;
        }
        if (!pool.filesUnchanged()) {
            health.failed("the pool file " + pool.paths() + " was replaced while strata node was away; this process still"
                    + " maps the old one: restart it to use the new pool");
            Log.warn("pool", "shared pool '" + pool.name() + "' left the KV chain for good: " + health.status().reason());
            return false;
        }
        health.reattached();
        Log.info("pool", "shared pool '" + pool.name() + "' is back in the KV chain (strata node reachable again)");
        return true;
    }

    /** Takes the pool out of the chain if {@code e} says it is lost; rethrows anything else. */
    private void lost(Throwable e) {
        if (e instanceof IndexIdentityException) { // a daemon of another model came back on the rpc path
            boolean was = health.status().state() != SharedPoolHealth.State.FAILED;
            health.failed(e.getMessage());
            if (was) {
                Log.warn("pool", "shared pool '" + pool.name() + "' left the KV chain for good: " + e.getMessage());
            }
            return;
        }
        if (e instanceof NodeUnavailableException) {
            boolean was = health.ok();
            health.unavailable(e.getMessage());
            if (was) {
                Log.warn("pool", "shared pool '" + pool.name() + "' left the KV chain until strata node is back: "
                        + e.getMessage());
            }
            return;
        }
        String fault = pool.fault();
        if (PoolTier.isMappingFault(e)) {
            pool.recordFault(e);
            fault = pool.fault();
        } else if (!(e instanceof TierIoException) || fault == null) {
            if (e instanceof RuntimeException r) {
                throw r;
            }
            throw (Error) e;
        }
        boolean was = health.status().state() != SharedPoolHealth.State.FAILED;
        health.failed(fault);
        if (was) {
            Log.warn("pool", "shared pool '" + pool.name() + "' left the KV chain for good: " + fault);
        }
    }
}
