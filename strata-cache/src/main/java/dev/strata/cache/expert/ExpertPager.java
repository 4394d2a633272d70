package dev.strata.cache.expert;

import dev.strata.cache.split.ResizablePool;
import dev.strata.memory.Allocator;
import dev.strata.memory.Tier;
import dev.strata.memory.host.PlainMemoryTier;
import dev.strata.memory.transfer.TierCopy;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.memory.transfer.TransferResult;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The MoE expert pager: keeps a working set of experts in DEVICE slots and gives the engine, per
 * layer and step, the {@code expert_map} it computes with (logical expert → slot, {@code -1} when
 * not resident), fetching only the routed experts that are missing.
 *
 * <p>Model: {@code layers × experts} experts, each an image of {@link ExpertLayout#bytes()} bytes
 * whose master lives in {@link ExpertMasters} (HOST or DISK, never dropped). Each slot is one
 * DEVICE allocation that holds one expert image; a resident expert's slot is byte-equal to its
 * master. Slots are counted in units of {@code k} per layer: under {@link SlotScope#PER_LAYER}
 * each layer owns {@code k} slots (slot ids {@code 0..k-1} of that layer), under
 * {@link SlotScope#SHARED} all layers draw from one pool of {@code k × layers} slots (slot ids
 * {@code 0..k×layers-1}, the same for every layer). The {@link ExpertPolicy} picks victims.
 *
 * <p>Per step, for each MoE layer ({@link #page(int, int[], int)}):
 * <ol>
 *   <li>every distinct routed expert is pinned for the call; residents count as hits and are
 *       touched in the policy;</li>
 *   <li>each missing expert takes a free slot of its scope, or the slot of the policy's victim (an
 *       unpinned resident, whose map entry becomes {@code -1}), and is copied from a valid peer
 *       copy when an {@link ExpertPeerSource} has one (see {@link ExpertRebalancer}), else from
 *       its master:
 *       directly on the calling thread when masters and slots are both plain memory (HOST →
 *       DEVICE on the CPU backend), else through the {@link TransferEngine}, all misses of the call
 *       in flight together, the call waiting for all of them ({@link #page}) or leaving them in
 *       flight for the engine to await expert by expert while it computes the resident ones
 *       ({@link #pageAsync}, {@link #awaitExpert});</li>
 *   <li>the layer's map is returned. It is the pager's own array: read it, do not write it. It
 *       stays valid until the next call that pages this layer, or, with a shared pool, until the
 *       next {@code page} call of any layer (which may evict this layer's experts; the map is kept
 *       exact, evicted entries read {@code -1}).</li>
 * </ol>
 * When a batch's routed union for a layer exceeds the layer's capacity ({@link #layerCapacity}),
 * the engine calls {@link #plan} and runs the layer group by group with
 * {@link #page(int, int[][], int[])}. A call whose union exceeds the capacity is refused with an
 * exception and changes nothing that matters (no residency, no policy order).
 *
 * <p>Invariants (checked by {@link #checkInvariants()}): each layer's map is a partial injection
 * into the slots of its scope, consistent with the slot table; a layer holds at most {@code k}
 * residents (per-layer scope) or all layers together at most {@code k × layers} (shared); every
 * slot is exactly one live DEVICE allocation; the policy tracks exactly the residents; a resident
 * slot holds its master's bytes (checked by tests). DEVICE bytes never exceed the tier's budget at
 * any moment, resizes included: a grow allocates only new slots (refused by the tier when over
 * budget, the pager unchanged), a shrink only frees.
 *
 * <p>Design note:
 * <ul>
 *   <li>One DEVICE allocation per slot rather than one scratch tensor per layer: a resize then
 *       allocates or frees only the slots that change, so it never holds an old and a new scratch
 *       at once (the budget holds at every moment) and a refused grow has nothing to undo but its
 *       own new slots. The engine reads a slot through {@link #slot} or {@link #tensor} (views made
 *       once per slot). A kernel that wants one {@code [k, ...]} tensor per layer would need the
 *       slots of a layer contiguous, which this layout does not promise.</li>
 *   <li>A shrink re-pages survivors by a DEVICE-to-DEVICE copy of their byte-equal images into the
 *       slots that stay, rather than re-reading their masters: the same bytes, without a HOST or
 *       DISK read.</li>
 *   <li>Pins are a stamp per expert of the current layer: the routed set is pinned by writing the
 *       call's stamp, and nothing has to be unpinned afterwards.</li>
 *   <li>A call whose id count is at most the capacity cannot exceed it, so hits are touched in
 *       the policy as they are found; only longer calls check the union first.</li>
 * </ul>
 *
 * <p>Hot path: a call whose routed experts are all resident allocates nothing and does O(routed)
 * array work (a range check, a stamp and a policy touch per expert, one counter update per call).
 *
 * <p>Threads: one thread drives the pager ({@code page}, {@code pageAsync}, {@code awaitExpert},
 * {@code fetching}, {@code plan}, {@code resize}, {@code close}: the engine's step thread, or
 * whoever holds what excludes it); the transfer engine's threads only write the slots of fetches
 * in flight, which the driving thread reads after joining them.
 * {@link #stats()} and the {@link ResizablePool} getters may be called from any thread: counters
 * are plain {@code long} array elements written only by the driving thread (64-bit stores, which
 * the 64-bit JVMs Strata runs on never split), so another thread reads each counter whole but
 * possibly some calls behind, and counters of one snapshot may come from different moments;
 * {@link #units()} is volatile.
 */
public final class ExpertPager implements ResizablePool, AutoCloseable {

    private static final int HITS = 0;        // counter offsets within a layer's stride
    private static final int MISSES = 1;
    private static final int EVICTIONS = 2;
    private static final int BYTES = 3;
    private static final int RESIDENT = 4;
    private static final int STRIDE = 5;
    private static final int RESIZES = 0;     // pager-wide counter offsets
    private static final int FAILED_RESIZES = 1;
    private static final ExpertPolicy.Pins NONE_PINNED = key -> false;

    private final String name;
    private final ExpertMasters masters;
    private final ExpertLayout layout;
    private final Tier device;
    private final TransferEngine engine;          // null when every fetch is a direct copy
    private final ExpertPolicy policy;
    private final SlotScope scope;
    private final int layers;
    private final int experts;
    private final int topK;
    private final int groups;                     // layers (PER_LAYER) or 1 (SHARED)
    private final long expertBytes;               // bytes of one expert image
    private final long slotBytes;                 // DEVICE bytes of one slot allocation
    private final boolean directCopy;             // masters and slots both plain memory
    private final PlainMemoryTier meteredMasters; // masters' tier when plain memory, for its meter
    private final PlainMemoryTier meteredDevice;  // device tier when plain memory, for its meter

    private int k;                                // slots per layer (unit of the pool)
    private volatile int publishedK;              // k, for other threads
    private int groupCapacity;                    // slots per group: k or k x layers
    private int layerCap;                         // distinct experts one call may route: min(groupCapacity, experts)
    private final int[][] expertMap;              // [layers][experts] slot of each expert or -1
    private long[][] slotHandle;                  // [groups][groupCapacity] DEVICE allocation of each slot
    private MemorySegment[][] slotView;           // [groups][groupCapacity] view of each slot's image
    private MemorySegment[][][] tensorView;       // [groups][groupCapacity][tensors] views of each slot's tensors
    private int[][] slotKey;                      // [groups][groupCapacity] key resident in each slot, -1 if free
    private int[][] freeSlots;                    // [groups][groupCapacity] stack of free slot ids
    private final int[] freeCount;                // [groups] entries on each free stack
    private final int[] residents;                // [groups] resident experts
    private final long[] pinStamp;                // [experts] stamp of the call that pinned each expert of pinLayer
    private long stamp;                           // current call's stamp
    private int pinLayer = -1;                    // layer of the current call
    private final ExpertPolicy.Pins currentPins = this::pinned; // the current call's routed experts, for victim choice
    private long tick;                            // policy clock, one per paged call
    private final int[] hitKeys;                  // [experts] scratch: keys hit in the current call
    private final int[] missExperts;              // [experts] scratch: experts missing in the current call
    private final int[] missSlots;                // [experts] scratch: slots given to them
    private final CompletableFuture<?>[] pending; // [experts] scratch: fetches in flight
    private int[] flat = new int[64];             // scratch for grouped calls, grows
    private final long[] counters;                // [layers x STRIDE] per-layer counters, plain 64-bit stores by the driving thread
    private final long[] pagerCounters = new long[2]; // resizes, failed resizes, as counters
    private final long[] routeCounts;             // [layers x experts] calls that routed each expert, plain 64-bit stores by the driving thread
    private final ExpertPeerSource peerSource;    // asked before the masters on a miss; null for none
    private final boolean[] fromPeer;             // [experts] scratch: misses of the current call served by the peer source
    private boolean closed;
    private boolean asyncCall;                    // the current page call leaves its fetches in flight
    private int inFlight;                         // fetches of the last pageAsync not yet awaited (non-null pending[])
    private int flightLayer = -1;                 // layer, group, key base and miss count of those fetches
    private int flightGroup;
    private int flightBase;
    private int flightMisses;
    private List<String> flightFailures;          // failures seen while awaiting them, reported once all are settled
    private Throwable flightCause;

    private ExpertPager(Builder b, long slotBytes, long[] initial) {
        this.name = b.name;
        this.masters = b.masters;
        this.layout = b.masters.layout();
        this.device = b.device;
        this.engine = b.engine;
        this.policy = b.policy;
        this.scope = b.scope;
        this.layers = masters.layers();
        this.experts = masters.experts();
        this.topK = b.topK;
        this.groups = scope == SlotScope.PER_LAYER ? layers : 1;
        this.expertBytes = layout.bytes();
        this.slotBytes = slotBytes;
        this.directCopy = masters.isPlainMemory() && device.isPlainMemory();
        this.meteredMasters = masters.tier() instanceof PlainMemoryTier p ? p : null;
        this.meteredDevice = device instanceof PlainMemoryTier p ? p : null;
        this.k = b.slotsPerLayer;
        this.publishedK = k;
        this.groupCapacity = capacityFor(k);
        this.expertMap = new int[layers][experts];
        for (int[] m : expertMap) {
            Arrays.fill(m, -1);
        }
        this.freeCount = new int[groups];
        this.residents = new int[groups];
        this.slotHandle = new long[groups][];
        this.slotView = new MemorySegment[groups][];
        this.tensorView = new MemorySegment[groups][][];
        this.slotKey = new int[groups][];
        this.freeSlots = new int[groups][];
        for (int g = 0; g < groups; g++) {
            slotHandle[g] = Arrays.copyOfRange(initial, g * groupCapacity, (g + 1) * groupCapacity);
            slotView[g] = new MemorySegment[groupCapacity];
            tensorView[g] = new MemorySegment[groupCapacity][];
            slotKey[g] = new int[groupCapacity];
            freeSlots[g] = new int[groupCapacity];
            Arrays.fill(slotKey[g], -1);
            for (int s = 0; s < groupCapacity; s++) {
                setViews(g, s);
                freeSlots[g][groupCapacity - 1 - s] = s; // slot 0 on top
            }
            freeCount[g] = groupCapacity;
        }
        this.pinStamp = new long[experts];
        this.layerCap = Math.min(groupCapacity, experts);
        this.hitKeys = new int[experts];
        this.missExperts = new int[experts];
        this.missSlots = new int[experts];
        this.pending = new CompletableFuture<?>[experts];
        this.counters = new long[layers * STRIDE];
        this.routeCounts = new long[layers * experts];
        this.peerSource = b.peerSource;
        this.fromPeer = new boolean[experts];
        policy.attach(groups, layers * experts);
    }

    /** Starts a pager over {@code masters} with slots in {@code device} (plain memory: DEVICE on the CPU backend). */
    public static Builder builder(ExpertMasters masters, Tier device) {
        return new Builder(masters, device);
    }

    private int capacityFor(int slotsPerLayer) {
        return scope == SlotScope.PER_LAYER ? slotsPerLayer : slotsPerLayer * layers;
    }

    private void setViews(int g, int s) {
        MemorySegment view = device.segment(slotHandle[g][s], 0, expertBytes);
        slotView[g][s] = view;
        MemorySegment[] tensors = new MemorySegment[layout.tensorCount()];
        for (int t = 0; t < tensors.length; t++) {
            tensors[t] = layout.slice(view, t);
        }
        tensorView[g][s] = tensors;
    }

    private int group(int layer) {
        return scope == SlotScope.PER_LAYER ? layer : 0;
    }

    // ------------------------------------------------------------------ paging

    /** Pages {@code layer} for all of {@code routed} (any length, duplicates allowed); see {@link #page(int, int[], int)}. */
    public int[] page(int layer, int[] routed) {
        return page(layer, routed, routed.length);
    }

    /**
     * Makes every expert in {@code routed[0..count)} resident for {@code layer} and returns the
     * layer's expert map.
     *
     * @param layer  the MoE layer about to run
     * @param routed expert ids routed by the step's tokens (all tokens, all top-K), duplicates allowed
     * @param count  how many entries of {@code routed} to use
     * @return the layer's map: {@code map[e]} is the slot of expert {@code e}, {@code -1} if not resident
     * @throws IllegalArgumentException naming the value for a layer or expert id out of range, or
     *                                  when the distinct routed experts exceed {@link #layerCapacity}
     *                                  (use {@link #plan}); nothing changes then
     * @throws IllegalStateException    when the pager is closed, or a fetch from a master fails (the experts it was fetching
     *                                  are left non-resident; the pager stays usable)
     */
    public int[] page(int layer, int[] routed, int count) {
        awaitFetches();
        if (closed || layer < 0 || layer >= layers || count < 0 || count > routed.length) {
            throw misuse(layer, routed, count);
        }
        for (int i = 0; i < count; i++) { // ids first, so a refused call changes nothing
            int e = routed[i];
            if ((e | (experts - 1 - e)) < 0) {
                throw outOfRange(layer, routed, i);
            }
        }
        if (count > layerCap) {
            return pageCheckingUnion(layer, routed, count);
        }
        // The union fits whatever it is: touch hits as they come.
        int[] map = expertMap[layer];
        int base = layer * experts;
        int g = group(layer);
        long s = ++stamp;
        long t = ++tick;
        pinLayer = layer;
        long[] pins = pinStamp;
        int hits = 0;
        int misses = 0;
        for (int i = 0; i < count; i++) {
            int e = routed[i];
            if (pins[e] != s) {
                pins[e] = s;
                routeCounts[base + e]++;
                if (map[e] >= 0) {
                    hits++;
                    policy.onHit(g, base + e, t);
                } else {
                    missExperts[misses++] = e;
                }
            }
        }
        counters[layer * STRIDE + HITS] += hits;
        if (misses > 0) {
            fetch(layer, g, base, misses, t);
        }
        return map;
    }

    /** {@link #page} for a call listing more ids than the layer's capacity: checks the union before touching anything. */
    private int[] pageCheckingUnion(int layer, int[] routed, int count) {
        int[] map = expertMap[layer];
        int base = layer * experts;
        int g = group(layer);
        long s = ++stamp;
        long t = ++tick;
        pinLayer = layer;
        long[] pins = pinStamp;
        int hits = 0;
        int misses = 0;
        for (int i = 0; i < count; i++) {
            int e = routed[i];
            if (pins[e] != s) {
                pins[e] = s;
                if (map[e] >= 0) {
                    hitKeys[hits++] = base + e;
                } else {
                    missExperts[misses++] = e;
                }
            }
        }
        if (hits + misses > layerCap) {
            throw new IllegalArgumentException("layer " + layer + " routes " + (hits + misses) + " distinct experts, more than its "
                    + layerCap + " slots in expert pager '" + name + "'; split the tokens with plan()");
        }
        for (int i = 0; i < hits; i++) {
            policy.onHit(g, hitKeys[i], t);
            routeCounts[hitKeys[i]]++;
        }
        for (int i = 0; i < misses; i++) {
            routeCounts[base + missExperts[i]]++;
        }
        counters[layer * STRIDE + HITS] += hits;
        if (misses > 0) {
            fetch(layer, g, base, misses, t);
        }
        return map;
    }

    private RuntimeException misuse(int layer, int[] routed, int count) {
        if (closed) {
            return new IllegalStateException("expert pager '" + name + "' is closed");
        }
        if (layer < 0 || layer >= layers) {
            return new IllegalArgumentException("layer " + layer + " is outside [0, " + layers + ") in expert pager '" + name + "'");
        }
        return new IllegalArgumentException("count " + count + " is outside [0, " + routed.length + "] routed ids");
    }

    private IllegalArgumentException outOfRange(int layer, int[] routed, int i) {
        return new IllegalArgumentException("routed expert " + routed[i] + " (entry " + i + ") is outside [0, " + experts
                + ") in layer " + layer + " of expert pager '" + name + "'");
    }

    /** Pages {@code layer} for the tokens of one group: {@code routed[t]} for each {@code t} in {@code tokens}. */
    public int[] page(int layer, int[][] routed, int[] tokens) {
        int total = 0;
        for (int t : tokens) {
            total += routed[t].length;
        }
        if (flat.length < total) {
            flat = new int[Math.max(total, flat.length * 2)];
        }
        int at = 0;
        for (int t : tokens) {
            int[] ids = routed[t];
            System.arraycopy(ids, 0, flat, at, ids.length);
            at += ids.length;
        }
        return page(layer, flat, total);
    }

    /**
     * {@link #page(int, int[], int)}, except that fetches through the {@link TransferEngine} are
     * left in flight, all of them submitted together: the returned map already names the slots of
     * the experts being fetched, {@link #fetching} tells which, and {@link #awaitExpert} waits for
     * one of them, so the engine computes the resident experts while the others arrive. Direct
     * copies (plain-memory masters and slots) and peer copies complete before the call returns, as
     * in {@link #page}. Every other call on the driving thread ({@code page}, {@code pageAsync},
     * {@code resize}, {@code checkInvariants}, {@code verifyResidentBytes}, {@code close}) first
     * waits for the fetches still in flight; a fetch that failed is reported by the call that
     * waits for it ({@link IllegalStateException}, the expert left non-resident), as {@code page}
     * reports it.
     */
    public int[] pageAsync(int layer, int[] routed, int count) {
        asyncCall = true;
        try {
            return page(layer, routed, count);
        } finally {
            asyncCall = false;
        }
    }

    /** {@link #pageAsync(int, int[], int)} for the tokens of one group, as {@link #page(int, int[][], int[])}. */
    public int[] pageAsync(int layer, int[][] routed, int[] tokens) {
        asyncCall = true;
        try {
            return page(layer, routed, tokens);
        } finally {
            asyncCall = false;
        }
    }

    /** Whether expert {@code expert} of {@code layer} is mapped but its fetch of the last {@link #pageAsync} not yet awaited. */
    public boolean fetching(int layer, int expert) {
        if (inFlight == 0 || layer != flightLayer) {
            return false;
        }
        for (int i = 0; i < flightMisses; i++) {
            if (missExperts[i] == expert) {
                return pending[i] != null;
            }
        }
        return false;
    }

    /**
     * Waits until expert {@code expert} of {@code layer} is in its slot (returns at once when it is
     * not being fetched).
     *
     * @throws IllegalStateException when its fetch failed (then every fetch in flight is awaited
     *                               first and all failed experts are left non-resident)
     */
    public void awaitExpert(int layer, int expert) {
        if (inFlight == 0 || layer != flightLayer) {
            return;
        }
        for (int i = 0; i < flightMisses; i++) {
            if (missExperts[i] == expert && pending[i] != null) {
                if (!settle(i)) {
                    awaitFetches();
                }
                return;
            }
        }
    }

    /** Waits for every fetch of the last {@link #pageAsync}; see {@link #awaitExpert} for failures. */
    public void awaitFetches() {
        if (inFlight == 0 && flightFailures == null) {
            return;
        }
        for (int i = 0; i < flightMisses; i++) {
            if (pending[i] != null) {
                settle(i);
            }
        }
        if (flightFailures != null) {
            List<String> failures = flightFailures;
            Throwable cause = flightCause;
            flightFailures = null;
            flightCause = null;
            throw new IllegalStateException("expert pager '" + name + "': fetching layer " + flightLayer + " from tier '"
                    + masters.tier().name() + "' into tier '" + device.name() + "' failed for " + failures.size() + " of "
                    + flightMisses + " experts: " + failures, cause);
        }
    }

    /**
     * Joins fetch {@code i} of the flight: a completed copy counts its bytes; a failed one is
     * recorded and its expert unmapped. Returns whether it completed.
     */
    private boolean settle(int i) {
        String failure;
        Throwable cause = null;
        try {
            TransferResult r = (TransferResult) pending[i].join();
            failure = r.completed() ? null : "transfer " + r.status();
        } catch (CompletionException | java.util.concurrent.CancellationException ex) {
            cause = ex.getCause() != null ? ex.getCause() : ex;
            failure = cause.toString();
        }
        pending[i] = null;
        inFlight--;
        if (failure == null) {
            add(flightLayer * STRIDE + BYTES, expertBytes);
            return true;
        }
        if (flightFailures == null) {
            flightFailures = new ArrayList<>();
            flightCause = cause;
        }
        flightFailures.add("expert " + missExperts[i] + " (master handle " + masters.handle(flightLayer, missExperts[i])
                + " -> slot " + missSlots[i] + "): " + failure);
        unmap(flightGroup, missSlots[i], flightBase + missExperts[i]);
        return false;
    }

    /**
     * Splits a batch's tokens for {@code layer} into groups whose routed unions fit
     * {@link #layerCapacity}: one group holding every token when the batch fits. See
     * {@link TokenGrouper} for what is guaranteed.
     *
     * @param routed {@code routed[t]}: the experts token {@code t} routes to in this layer
     */
    public TokenGroups plan(int layer, int[][] routed) {
        if (layer < 0 || layer >= layers) {
            throw new IllegalArgumentException("layer " + layer + " is outside [0, " + layers + ") in expert pager '" + name + "'");
        }
        return TokenGrouper.plan(routed, experts, layerCapacity(layer));
    }

    /** The most distinct experts one call may route in {@code layer}: {@code k}, or {@code min(experts, k × layers)} shared. */
    public int layerCapacity(int layer) {
        return layerCap;
    }

    private void fetch(int layer, int g, int base, int misses, long t) {
        add(layer * STRIDE + MISSES, misses);
        for (int i = 0; i < misses; i++) {
            int slot = takeSlot(g);
            int e = missExperts[i];
            expertMap[layer][e] = slot;
            slotKey[g][slot] = base + e;
            residents[g]++;
            policy.onAdmit(g, base + e, t);
            missSlots[i] = slot;
        }
        int at = layer * STRIDE;
        add(at + RESIDENT, misses);
        int fromMasters = misses;
        if (peerSource != null) {
            for (int i = 0; i < misses; i++) {
                fromPeer[i] = peerSource.fetch(layer, missExperts[i], slotView[g][missSlots[i]]);
                if (fromPeer[i]) {
                    fromMasters--;
                }
            }
        }
        if (directCopy) { // plain masters into plain slots: the one copy path, metered once for the call
            long start = System.nanoTime();
            for (int i = 0; i < misses; i++) {
                if ((peerSource == null || !fromPeer[i]) && TierCopy.direct().copyUnmetered(masters.tier(),
                        masters.handle(layer, missExperts[i]), device, slotHandle[g][missSlots[i]], expertBytes) < 0) {
                    throw new IllegalStateException("expert pager '" + name + "': the master of layer " + layer + " expert "
                            + missExperts[i] + " is not allocated in tier '" + masters.tier().name() + "'");
                }
            }
            if (fromMasters > 0) {
                TierCopy.meterViews(masters.tier(), device, fromMasters, fromMasters * expertBytes, System.nanoTime() - start);
            }
            add(at + BYTES, fromMasters * expertBytes);
            return;
        }
        for (int i = 0; i < misses; i++) {
            if (peerSource != null && fromPeer[i]) {
                pending[i] = null; // already in its slot
                continue;
            }
            try {
                pending[i] = engine.copy(masters.tier(), masters.handle(layer, missExperts[i]), device,
                        slotHandle[g][missSlots[i]], expertBytes);
            } catch (RuntimeException e) { // e.g. the engine was closed: none of these experts is resident
                for (int j = 0; j < misses; j++) {
                    if (j < i && pending[j] != null) {
                        try {
                            pending[j].join(); // it writes into the slot: let it finish before the slot is reused
                        } catch (RuntimeException ignored) {
                            // the submission failure below is what the caller needs to see
                        }
                        pending[j] = null;
                    }
                    unmap(g, missSlots[j], base + missExperts[j]);
                }
                throw new IllegalStateException("expert pager '" + name + "': could not submit the fetch of layer " + layer
                        + " expert " + missExperts[i] + " from tier '" + masters.tier().name() + "': " + e.getMessage(), e);
            }
        }
        flightLayer = layer;
        flightGroup = g;
        flightBase = base;
        flightMisses = misses;
        inFlight = 0;
        for (int i = 0; i < misses; i++) {
            if (pending[i] != null) {
                inFlight++;
            }
        }
        if (!asyncCall) {
            awaitFetches();
        }
    }

    /** A free slot of group {@code g}, evicting the policy's victim when none is free. */
    private int takeSlot(int g) {
        if (freeCount[g] > 0) {
            return freeSlots[g][--freeCount[g]];
        }
        int victim = policy.victim(g, currentPins);
        if (victim < 0) {
            throw new IllegalStateException("expert pager '" + name + "': policy '" + policy.name() + "' found no unpinned victim in group "
                    + g + " (" + residents[g] + " residents, capacity " + groupCapacity + ")");
        }
        int vl = victim / experts;
        int ve = victim - vl * experts;
        int slot = expertMap[vl][ve];
        if (slot < 0 || slotKey[g][slot] != victim) {
            throw new IllegalStateException("expert pager '" + name + "': policy '" + policy.name() + "' chose key " + victim
                    + " (layer " + vl + ", expert " + ve + ") which is not resident in group " + g);
        }
        expertMap[vl][ve] = -1;
        slotKey[g][slot] = -1;
        residents[g]--;
        policy.onEvict(g, victim);
        add(vl * STRIDE + EVICTIONS, 1);
        add(vl * STRIDE + RESIDENT, -1);
        return slot;
    }

    /** Makes resident {@code key} in {@code slot} of group {@code g} non-resident and frees the slot (a failed fetch). */
    private void unmap(int g, int slot, int key) {
        int l = key / experts;
        expertMap[l][key - l * experts] = -1;
        slotKey[g][slot] = -1;
        residents[g]--;
        policy.onEvict(g, key);
        freeSlots[g][freeCount[g]++] = slot;
        add(l * STRIDE + RESIDENT, -1);
    }

    /** For the policy: true if {@code key} is routed by the current call. */
    private boolean pinned(int key) {
        int layer = key / experts;
        return layer == pinLayer && pinStamp[key - layer * experts] == stamp;
    }

    private void add(int index, long delta) {
        counters[index] += delta;
    }

    // ------------------------------------------------------------------ access for the engine

    /** The layer's expert map (the array {@link #page} returns; read only). */
    public int[] expertMap(int layer) {
        return expertMap[layer];
    }

    /** Slot of {@code expert} in {@code layer}, or -1 if not resident. */
    public int slotOf(int layer, int expert) {
        return expertMap[layer][expert];
    }

    /** The image held by slot {@code slot} of {@code layer}'s scope (a view of DEVICE memory; read only). */
    public MemorySegment slot(int layer, int slot) {
        return slotView[group(layer)][checkSlot(slot)];
    }

    /** Tensor {@code tensor} (index in the layout) of the image in slot {@code slot} of {@code layer}'s scope. */
    public MemorySegment tensor(int layer, int slot, int tensor) {
        return tensorView[group(layer)][checkSlot(slot)][tensor];
    }

    private int checkSlot(int slot) {
        if (slot < 0 || slot >= groupCapacity) {
            throw new IllegalArgumentException("slot " + slot + " is outside [0, " + groupCapacity + ") in expert pager '" + name + "'");
        }
        return slot;
    }

    /**
     * How many {@code page} calls routed expert {@code expert} of {@code layer} since the pager
     * opened (each call counts an expert once). Any thread: a plain 64-bit counter written by the
     * driving thread, read whole but possibly a few calls behind.
     */
    public long routeCount(int layer, int expert) {
        if (layer < 0 || layer >= layers || expert < 0 || expert >= experts) {
            throw new IllegalArgumentException("expert (" + layer + ", " + expert + ") is outside " + layers + " layers x "
                    + experts + " experts");
        }
        return routeCounts[layer * experts + expert];
    }

    /** Experts of {@code layer} resident now. */
    public int resident(int layer) {
        int n = 0;
        for (int s : expertMap[layer]) {
            if (s >= 0) {
                n++;
            }
        }
        return n;
    }

    public String pagerName() {
        return name;
    }

    public ExpertPolicy policy() {
        return policy;
    }

    public SlotScope scope() {
        return scope;
    }

    public int layers() {
        return layers;
    }

    public int experts() {
        return experts;
    }

    public ExpertLayout layout() {
        return layout;
    }

    public ExpertMasters masters() {
        return masters;
    }

    /** Slots held now, all layers. */
    public int slots() {
        return groupCapacity * groups;
    }

    // ------------------------------------------------------------------ ResizablePool

    @Override
    public String name() {
        return name;
    }

    /** Slots per layer ({@code k}); a shared pool holds {@code k × layers}. */
    @Override
    public int units() {
        return publishedK;
    }

    /** DEVICE bytes of one slot in every layer. */
    @Override
    public long bytesPerUnit() {
        return slotBytes * layers;
    }

    /** Top-K: one token's experts must fit at once. */
    @Override
    public int minUnits() {
        return topK;
    }

    /** Every expert of a layer. */
    @Override
    public int maxUnits() {
        return experts;
    }

    /**
     * Grows or shrinks the slots to {@code units} per layer ({@code units × layers} shared), at a
     * drained barrier.
     *
     * <p>Grow: allocates every new slot first; if the DEVICE tier refuses one, the new slots are
     * freed and the pager is exactly as before (returns false). Residents stay where they are.
     *
     * <p>Shrink: evicts the policy's victims until each scope holds at most the new capacity,
     * re-pages residents from slots being removed into free slots that stay (a DEVICE-to-DEVICE
     * copy of byte-equal images, so slot ids stay below the new capacity), then frees the removed
     * slots before returning. Never allocates, so it cannot be refused.
     */
    @Override
    public boolean resize(int units) {
        awaitFetches();
        if (closed) {
            throw new IllegalStateException("expert pager '" + name + "' is closed");
        }
        if (units < minUnits() || units > maxUnits()) {
            throw new IllegalArgumentException("expert pager '" + name + "': " + units + " slots per layer is outside ["
                    + minUnits() + ", " + maxUnits() + "]");
        }
        if (units == k) {
            return true;
        }
        boolean done = units > k ? grow(units) : shrink(units);
        pagerCounters[done ? RESIZES : FAILED_RESIZES]++;
        return done;
    }

    private boolean grow(int units) {
        int oldCap = groupCapacity;
        int newCap = capacityFor(units);
        int add = newCap - oldCap;
        long[] fresh = new long[groups * add];
        int got = 0;
        try {
            for (; got < fresh.length; got++) {
                long h = device.allocate(expertBytes);
                if (h == Allocator.FULL) {
                    break;
                }
                fresh[got] = h;
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < got; i++) {
                device.free(fresh[i]);
            }
            throw e;
        }
        if (got < fresh.length) {
            for (int i = 0; i < got; i++) {
                device.free(fresh[i]);
            }
            return false;
        }
        for (int g = 0; g < groups; g++) {
            slotHandle[g] = Arrays.copyOf(slotHandle[g], newCap);
            slotView[g] = Arrays.copyOf(slotView[g], newCap);
            tensorView[g] = Arrays.copyOf(tensorView[g], newCap);
            slotKey[g] = Arrays.copyOf(slotKey[g], newCap);
            int[] free = new int[newCap];
            System.arraycopy(freeSlots[g], 0, free, 0, freeCount[g]);
            for (int s = newCap - 1; s >= oldCap; s--) {
                slotHandle[g][s] = fresh[g * add + (s - oldCap)];
                slotKey[g][s] = -1;
                setViews(g, s);
                free[freeCount[g]++] = s;
            }
            freeSlots[g] = free;
        }
        k = units;
        groupCapacity = newCap;
        layerCap = Math.min(newCap, experts);
        publishedK = units;
        return true;
    }

    private boolean shrink(int units) {
        int oldCap = groupCapacity;
        int newCap = capacityFor(units);
        for (int g = 0; g < groups; g++) {
            while (residents[g] > newCap) {
                int victim = policy.victim(g, NONE_PINNED);
                if (victim < 0) {
                    throw new IllegalStateException("expert pager '" + name + "': policy '" + policy.name()
                            + "' offered no victim with " + residents[g] + " residents in group " + g);
                }
                int vl = victim / experts;
                int slot = expertMap[vl][victim - vl * experts];
                unmap(g, slot, victim);
                add(vl * STRIDE + EVICTIONS, 1);
            }
            int target = 0;
            for (int s = newCap; s < oldCap; s++) {
                int key = slotKey[g][s];
                if (key < 0) {
                    continue;
                }
                while (slotKey[g][target] >= 0) {
                    target++;
                }
                long start = System.nanoTime();
                MemorySegment.copy(slotView[g][s], 0, slotView[g][target], 0, expertBytes);
                if (meteredDevice != null) {
                    long nanos = System.nanoTime() - start;
                    meteredDevice.recordDirectRead(1, expertBytes, nanos);
                    meteredDevice.recordDirectWrite(1, expertBytes, nanos);
                }
                int l = key / experts;
                expertMap[l][key - l * experts] = target;
                slotKey[g][target] = key;
                slotKey[g][s] = -1;
            }
            for (int s = newCap; s < oldCap; s++) {
                device.free(slotHandle[g][s]);
            }
            slotHandle[g] = Arrays.copyOf(slotHandle[g], newCap);
            slotView[g] = Arrays.copyOf(slotView[g], newCap);
            tensorView[g] = Arrays.copyOf(tensorView[g], newCap);
            slotKey[g] = Arrays.copyOf(slotKey[g], newCap);
            int[] free = new int[newCap];
            int n = 0;
            for (int s = newCap - 1; s >= 0; s--) {
                if (slotKey[g][s] < 0) {
                    free[n++] = s;
                }
            }
            freeSlots[g] = free;
            freeCount[g] = n;
        }
        k = units;
        groupCapacity = newCap;
        layerCap = Math.min(newCap, experts);
        publishedK = units;
        return true;
    }

    // ------------------------------------------------------------------ stats, checks, close

    /** Counts per layer and the pager's configuration, as of now (any thread). */
    public ExpertPagerStats stats() {
        List<ExpertPagerStats.Layer> list = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            int at = l * STRIDE;
            list.add(new ExpertPagerStats.Layer(l, read(at + HITS), read(at + MISSES), read(at + EVICTIONS), read(at + BYTES),
                    read(at + RESIDENT)));
        }
        int units = publishedK;
        int slots = capacityFor(units) * groups;
        return new ExpertPagerStats(name, policy.name(), scope, units, slots, slotBytes, slots * slotBytes,
                pagerCounters[RESIZES], pagerCounters[FAILED_RESIZES], list);
    }

    private long read(int index) {
        return counters[index];
    }

    /**
     * Checks every structural invariant (map ↔ slot table, capacities, free stacks, policy sizes,
     * live DEVICE allocations); throws {@link IllegalStateException} naming the first violation.
     * Driving thread only. Byte equality with the masters is checked by {@link #verifyResidentBytes}.
     */
    public void checkInvariants() {
        awaitFetches();
        int[] perLayer = new int[layers];
        for (int g = 0; g < groups; g++) {
            if (slotHandle[g].length != groupCapacity || slotKey[g].length != groupCapacity) {
                throw new IllegalStateException("group " + g + " has " + slotHandle[g].length + " slots, capacity " + groupCapacity);
            }
            int used = 0;
            for (int s = 0; s < groupCapacity; s++) {
                if (device.allocationSize(slotHandle[g][s]) < expertBytes) {
                    throw new IllegalStateException("slot " + s + " of group " + g + " is smaller than an expert");
                }
                int key = slotKey[g][s];
                if (key >= 0) {
                    used++;
                    int l = key / experts;
                    if (group(l) != g) {
                        throw new IllegalStateException("slot " + s + " of group " + g + " holds key " + key + " of layer " + l);
                    }
                    if (expertMap[l][key - l * experts] != s) {
                        throw new IllegalStateException("slot " + s + " of group " + g + " holds key " + key + " but the map says "
                                + expertMap[l][key - l * experts]);
                    }
                    perLayer[l]++;
                }
            }
            if (used != residents[g] || used != policy.size(g)) {
                throw new IllegalStateException("group " + g + ": " + used + " slots in use, " + residents[g] + " residents counted, "
                        + policy.size(g) + " in the policy");
            }
            if (used + freeCount[g] != groupCapacity) {
                throw new IllegalStateException("group " + g + ": " + used + " used + " + freeCount[g] + " free != " + groupCapacity);
            }
            for (int i = 0; i < freeCount[g]; i++) {
                int s = freeSlots[g][i];
                if (slotKey[g][s] != -1) {
                    throw new IllegalStateException("free slot " + s + " of group " + g + " holds key " + slotKey[g][s]);
                }
            }
            if (used > groupCapacity) {
                throw new IllegalStateException("group " + g + " holds " + used + " experts, capacity " + groupCapacity);
            }
        }
        for (int l = 0; l < layers; l++) {
            int mapped = 0;
            for (int e = 0; e < experts; e++) {
                int s = expertMap[l][e];
                if (s < -1 || s >= groupCapacity) {
                    throw new IllegalStateException("layer " + l + " expert " + e + " maps to slot " + s + " outside [-1, " + groupCapacity + ")");
                }
                if (s >= 0) {
                    mapped++;
                    if (slotKey[group(l)][s] != l * experts + e) {
                        throw new IllegalStateException("layer " + l + " expert " + e + " maps to slot " + s + " holding key "
                                + slotKey[group(l)][s]);
                    }
                }
            }
            if (mapped != perLayer[l] || mapped != read(l * STRIDE + RESIDENT)) {
                throw new IllegalStateException("layer " + l + ": " + mapped + " mapped, " + perLayer[l] + " in slots, "
                        + read(l * STRIDE + RESIDENT) + " counted resident");
            }
            if (scope == SlotScope.PER_LAYER && mapped > k) {
                throw new IllegalStateException("layer " + l + " holds " + mapped + " experts, more than k = " + k);
            }
        }
    }

    /**
     * Compares every resident slot with its master, byte for byte; returns the number compared.
     * Driving thread only (reads DISK masters into a scratch buffer).
     *
     * @throws IllegalStateException naming the layer, expert and slot of the first mismatch
     */
    public int verifyResidentBytes() {
        awaitFetches();
        int compared = 0;
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment scratch = masters.isPlainMemory() ? null : arena.allocate(expertBytes, 4096);
            for (int l = 0; l < layers; l++) {
                for (int e = 0; e < experts; e++) {
                    int s = expertMap[l][e];
                    if (s < 0) {
                        continue;
                    }
                    MemorySegment master;
                    if (scratch == null) {
                        master = masters.view(l, e);
                    } else {
                        if (!masters.read(l, e, scratch)) {
                            throw new IllegalStateException("master of layer " + l + " expert " + e + " is not readable");
                        }
                        master = scratch;
                    }
                    long at = master.mismatch(slot(l, s));
                    if (at >= 0) {
                        throw new IllegalStateException("expert pager '" + name + "': slot " + s + " of layer " + l + " expert " + e
                                + " differs from its master at byte " + at);
                    }
                    compared++;
                }
            }
        }
        return compared;
    }

    /** Frees every slot (the device tier, masters and engine stay open; they are the caller's). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        try {
            awaitFetches(); // the copies write into slots about to be freed
        } catch (IllegalStateException failedFetch) {
            // closing anyway: the failed experts are unmapped and every copy has ended
        }
        closed = true;
        for (int g = 0; g < groups; g++) {
            for (long h : slotHandle[g]) {
                device.free(h);
            }
            Arrays.fill(slotKey[g], -1);
            residents[g] = 0;
        }
        for (int[] m : expertMap) {
            Arrays.fill(m, -1);
        }
    }

    @Override
    public String toString() {
        return "ExpertPager['" + name + "', " + policy.name() + ", " + scope + ", k=" + k + ", " + layers + " layers x " + experts
                + " experts of " + expertBytes + " bytes]";
    }

    /**
     * Configures a pager. Required: masters and device (given to {@link ExpertPager#builder}), top-K
     * and slots per layer. Defaults: name {@code experts}, per-layer scope, LRU, no transfer engine
     * (required when masters are not plain memory).
     *
     * <p>Confined to one thread.
     */
    public static final class Builder {
        private final ExpertMasters masters;
        private final Tier device;
        private String name = "experts";
        private int topK = -1;
        private int slotsPerLayer = -1;
        private SlotScope scope = SlotScope.PER_LAYER;
        private ExpertPolicy policy;
        private TransferEngine engine;
        private ExpertPeerSource peerSource;

        private Builder(ExpertMasters masters, Tier device) {
            this.masters = Objects.requireNonNull(masters, "expert masters");
            this.device = Objects.requireNonNull(device, "device tier");
        }

        public Builder name(String value) {
            this.name = Objects.requireNonNull(value, "name");
            return this;
        }

        /** Experts one token routes to in a layer (the smallest usable {@code k}). */
        public Builder topK(int value) {
            this.topK = value;
            return this;
        }

        /** {@code k}: slots per layer (a shared pool holds {@code k × layers}). */
        public Builder slotsPerLayer(int value) {
            this.slotsPerLayer = value;
            return this;
        }

        public Builder scope(SlotScope value) {
            this.scope = Objects.requireNonNull(value, "scope");
            return this;
        }

        /** A fresh policy instance for this pager (default {@link LruExpertPolicy}). */
        public Builder policy(ExpertPolicy value) {
            this.policy = Objects.requireNonNull(value, "policy");
            return this;
        }

        /** The engine that fetches from masters that are not plain memory (DISK). */
        public Builder transferEngine(TransferEngine value) {
            this.engine = value;
            return this;
        }

        /** Peer copies a miss tries before the masters (an {@link ExpertRebalancer}); none by default. */
        public Builder peerSource(ExpertPeerSource value) {
            this.peerSource = value;
            return this;
        }

        /**
         * Checks the settings and allocates every slot (all or nothing).
         *
         * @throws IllegalArgumentException naming the setting and value that is not valid
         * @throws IllegalStateException    naming the tier and sizes when the DEVICE tier cannot hold the slots
         */
        public ExpertPager build() {
            int experts = masters.experts();
            if (topK < 1 || topK > experts) {
                throw new IllegalArgumentException("expert pager '" + name + "': top-K must be in [1, " + experts + "], got " + topK);
            }
            if (slotsPerLayer < topK || slotsPerLayer > experts) {
                throw new IllegalArgumentException("expert pager '" + name + "': slots per layer must be in [top-K = " + topK + ", "
                        + experts + "], got " + slotsPerLayer);
            }
            if (!device.isPlainMemory()) {
                throw new IllegalArgumentException("expert pager '" + name + "': slots need a plain-memory DEVICE tier the engine "
                        + "computes from; tier '" + device.name() + "' (" + device.kind() + ") is not");
            }
            if (!masters.isPlainMemory() && engine == null) {
                throw new IllegalArgumentException("expert pager '" + name + "': masters in tier '" + masters.tier().name() + "' ("
                        + masters.tier().kind() + ") are fetched through a transfer engine; none was given");
            }
            if (policy == null) {
                policy = new LruExpertPolicy();
            }
            int groupsCount = scope == SlotScope.PER_LAYER ? masters.layers() : 1;
            long perGroup = scope == SlotScope.PER_LAYER ? slotsPerLayer : (long) slotsPerLayer * masters.layers();
            long total = groupsCount * perGroup;
            if (total > Integer.MAX_VALUE / 2) {
                throw new IllegalArgumentException("expert pager '" + name + "': " + total + " slots are too many");
            }
            long bytes = masters.layout().bytes();
            long[] handles = new long[(int) total];
            for (int i = 0; i < handles.length; i++) {
                long h = device.allocate(bytes);
                if (h == Allocator.FULL) {
                    for (int j = 0; j < i; j++) {
                        device.free(handles[j]);
                    }
                    throw new IllegalStateException("expert pager '" + name + "': DEVICE tier '" + device.name() + "' cannot hold "
                            + total + " slots of " + bytes + " bytes (full after " + i + "; capacity " + device.capacity()
                            + ", used " + device.used() + ")");
                }
                handles[i] = h;
            }
            long slotBytes = device.allocationSize(handles[0]);
            return new ExpertPager(this, slotBytes, handles);
        }
    }
}
