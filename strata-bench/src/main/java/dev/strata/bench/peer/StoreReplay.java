package dev.strata.bench.peer;

import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKey;
import dev.strata.cache.ObjectKind;
import dev.strata.cache.ObjectView;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.PutStatus;
import dev.strata.cache.TieredStore;
import dev.strata.memory.Tier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Replays a stream of object references (KV blocks or experts) through a compute device's own
 * cache and a {@link TieredStore} below it, counting where each fetch was served from.
 *
 * <p>The device cache is an LRU of {@code deviceSlots} objects (ids only: the device's bytes are one
 * scratch buffer each fetch is copied into). A reference that misses it is fetched from the store
 * ({@link TieredStore#get}, copied out, its stamps checked) and takes a slot; the object it displaces
 * is offloaded. Two ways objects reach the store:
 * <ul>
 *   <li>{@link Mode#OFFLOAD_ON_EVICT} (KV blocks): an object is written into the store's top tier
 *       when the device evicts it: put if new, and re-put into the top tier (a device-to-peer copy)
 *       if its only copies are below a revocable tier, so blocks go to peers first.</li>
 *   <li>{@link Mode#MASTERS} (experts): every object is stored once before the replay
 *       ({@link #preload}), as the authoritative copy; nothing is written on eviction.</li>
 * </ul>
 * A fetch counts as served by a peer only if the object had a copy on a revocable tier before the
 * {@code get} and the view came from it: a host hit that the store's promotion rule copies onto a
 * peer is a host fetch (its bytes crossed the host link). Objects are filled with seeded random
 * bytes and stamped with their id at both ends; a fetched copy whose stamps differ counts in
 * {@link FetchTally#wrongBytes()}.
 *
 * <p>Threads: one replaying thread (the store's revocations arrive on the peer client's thread and
 * are absorbed by the store).
 */
public final class StoreReplay implements AutoCloseable {

    /** How objects reach the store. */
    public enum Mode { OFFLOAD_ON_EVICT, MASTERS }

    private final TieredStore store;
    private final ObjectKind kind;
    private final Durability durability;
    private final Mode mode;
    private final long objectBytes; // bytes of every object
    private final int deviceSlots; // objects the device cache holds
    private final long keyHigh; // the high half of every key: keeps KV and expert keys apart
    private final Set<String> revocableTiers = new HashSet<>(); // names of the store's revocable tiers
    private final int topRevocable; // chain index of the first revocable tier, -1 if none
    private final LinkedHashMap<Long, Boolean> device; // id -> present, in LRU order
    private final Set<Long> offloaded = new HashSet<>(); // ids stored at least once
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment template; // objectBytes of seeded random bytes
    private final MemorySegment staging; // an object being written
    private final MemorySegment scratch; // the device copy of a fetched object
    private long pendingEvict = -1; // id the device cache just displaced, -1 if none
    private boolean hasPendingEvict;

    public StoreReplay(TieredStore store, ObjectKind kind, Durability durability, Mode mode, long objectBytes, int deviceSlots,
                       long keyHigh, long seed) {
        if (objectBytes < 32 || deviceSlots < 1) {
            throw new IllegalArgumentException("store replay: objects of " + objectBytes + " bytes must be >= 32 and the device must hold "
                    + deviceSlots + " >= 1 objects");
        }
        this.store = store;
        this.kind = kind;
        this.durability = durability;
        this.mode = mode;
        this.objectBytes = objectBytes;
        this.deviceSlots = deviceSlots;
        this.keyHigh = keyHigh;
        int top = -1;
        for (int i = 0; i < store.tiers().size(); i++) {
            Tier t = store.tiers().get(i);
            if (t.revocable()) {
                revocableTiers.add(t.name());
                top = top < 0 ? i : top;
            }
        }
        this.topRevocable = top;
        this.device = new LinkedHashMap<>(deviceSlots * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                if (size() > StoreReplay.this.deviceSlots) {
                    pendingEvict = eldest.getKey();
                    hasPendingEvict = true;
                    return true;
                }
                return false;
            }
        };
        this.template = arena.allocate(objectBytes, 64);
        this.staging = arena.allocate(objectBytes, 64);
        this.scratch = arena.allocate(objectBytes, 64);
        SplittableRandom r = new SplittableRandom(seed);
        for (long o = 0; o + 8 <= objectBytes; o += 8) {
            template.set(ValueLayout.JAVA_LONG_UNALIGNED, o, r.nextLong());
        }
    }

    private ObjectKey key(long id) {
        return new ObjectKey(keyHigh, id);
    }

    /** Stores {@code ids} as masters (mode {@link Mode#MASTERS}); returns how many the store refused. */
    public long preload(long[] ids, FetchTally tally) {
        long refused = 0;
        for (long id : ids) {
            if (!offloaded.contains(id)) {
                if (write(id, 0, tally)) {
                    offloaded.add(id);
                } else {
                    refused++;
                }
            }
        }
        return refused;
    }

    /** Replays one reference. */
    public void reference(long id, FetchTally tally) {
        tally.references++;
        if (device.get(id) != null) {
            tally.deviceHits++;
            return;
        }
        if (!offloaded.contains(id)) {
            tally.cold++;
        } else {
            fetch(id, tally);
        }
        hasPendingEvict = false;
        device.put(id, Boolean.TRUE);
        if (hasPendingEvict && mode == Mode.OFFLOAD_ON_EVICT) {
            offload(pendingEvict, tally);
        }
    }

    private void fetch(long id, FetchTally tally) {
        ObjectKey key = key(id);
        boolean onPeer = topRevocable >= 0 && (store.tierMask(key) & revocableMask()) != 0; // before a promotion can add a copy
        ObjectView view = store.get(key);
        if (view == null) {
            tally.lost++;
            if (mode == Mode.MASTERS) {
                offloaded.remove(id); // a master gone is a bug of the store; counted, then treated as cold
            }
            return;
        }
        try {
            view.copyTo(scratch);
            // a view from a peer of an object that had no peer copy was promoted there from the host by this get
            if (onPeer && revocableTiers.contains(view.tierName())) {
                tally.peerFetches++;
                tally.peerBytes += objectBytes;
            } else {
                tally.hostFetches++;
                tally.hostBytes += objectBytes;
            }
        } finally {
            view.close();
        }
        if (!stamped(scratch, id)) {
            tally.wrongBytes++;
        }
    }

    private void offload(long id, FetchTally tally) {
        ObjectKey key = key(id);
        if (store.contains(key)) {
            if (topRevocable < 0 || (store.tierMask(key) & (1 << topRevocable)) != 0) {
                return; // already where an offload would put it
            }
            if ((store.tierMask(key) & ((1 << topRevocable) - 1)) != 0) {
                return; // a copy above the peer tier already
            }
            store.remove(key); // re-place it on the peers: a device-to-peer copy
        }
        if (write(id, 0, tally)) {
            offloaded.add(id);
            tally.offloads++;
        } else {
            offloaded.remove(id);
        }
    }

    private boolean write(long id, int tier, FetchTally tally) {
        MemorySegment.copy(template, 0, staging, 0, objectBytes);
        stamp(staging, id);
        PutStatus s = store.put(key(id), kind, durability, PriorityClass.RECENT, staging, tier);
        if (s == PutStatus.STORED || s == PutStatus.ALREADY_PRESENT) {
            return true;
        }
        tally.refusedOffloads++;
        return false;
    }

    private void stamp(MemorySegment s, long id) {
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, id);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, ~id ^ keyHigh);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, objectBytes - 8, id * 0x9E3779B97F4A7C15L);
    }

    private boolean stamped(MemorySegment s, long id) {
        return s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) == id
                && s.get(ValueLayout.JAVA_LONG_UNALIGNED, 8) == (~id ^ keyHigh)
                && s.get(ValueLayout.JAVA_LONG_UNALIGNED, objectBytes - 8) == id * 0x9E3779B97F4A7C15L
                && s.get(ValueLayout.JAVA_LONG_UNALIGNED, 16) == template.get(ValueLayout.JAVA_LONG_UNALIGNED, 16);
    }

    private int revocableMask() {
        int m = 0;
        for (int i = 0; i < store.tiers().size(); i++) {
            if (store.tiers().get(i).revocable()) {
                m |= 1 << i;
            }
        }
        return m;
    }

    /** Objects the device cache holds now. */
    public int deviceObjects() {
        return device.size();
    }

    @Override
    public void close() {
        arena.close();
    }
}
