package dev.strata.cache.expert;

import dev.strata.cache.split.ResizablePool;
import dev.strata.memory.Tier;
import dev.strata.memory.transfer.TransferEngine;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

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
 * slot holds its master's bytes (checked by {@link #verifyResidentBytes()}). DEVICE bytes never
 * exceed the tier's budget at any moment, resizes included: a grow allocates only new slots
 * (refused by the tier when over budget, the pager unchanged), a shrink only frees.
 *
 * <p>Structure: this class is the API and checks its arguments; the work is done by package-private
 * parts, one per job:
 * <ul>
 *   <li>{@link ExpertSlotTable}: which expert is in which slot (the maps and their inverse, free
 *       slots), the pins of the current call and the replacement policy;</li>
 *   <li>{@link ExpertSlotMemory}: the DEVICE allocation and views of each slot;</li>
 *   <li>{@link ExpertFetcher}: pages a call, fills the slots of misses from peer copies or masters,
 *       and keeps the fetches of {@link #pageAsync} in flight until they are awaited;</li>
 *   <li>{@link ExpertResizer}: grows and shrinks the slots at a drained barrier;</li>
 *   <li>{@link ExpertPagerCounters}: the counts behind {@link #stats()} and {@link #routeCount}.</li>
 * </ul>
 *
 * <p>Design note: one DEVICE allocation per slot rather than one scratch tensor per layer: a resize
 * then allocates or frees only the slots that change, so it never holds an old and a new scratch at
 * once (the budget holds at every moment) and a refused grow has nothing to undo but its own new
 * slots. The engine reads a slot through {@link #slot} or {@link #tensor} (views made once per
 * slot). A kernel that wants one {@code [k, ...]} tensor per layer would need the slots of a layer
 * contiguous, which this layout does not promise.
 *
 * <p>Hot path: a call whose routed experts are all resident allocates nothing and does O(routed)
 * array work (a range check, a stamp and a policy touch per expert, one counter update per call).
 *
 * <p>Threads: one thread drives the pager ({@code page}, {@code pageAsync}, {@code awaitExpert},
 * {@code awaitFetches}, {@code fetching}, {@code plan}, {@code resize}, {@code checkInvariants},
 * {@code verifyResidentBytes}, {@code close}: the engine's step thread, or whoever holds what
 * excludes it); the transfer engine's threads only write the slots of fetches in flight, which the
 * driving thread reads after joining them. {@link #stats()}, {@link #routeCount} and the
 * {@link ResizablePool} getters may be called from any thread: counters are plain {@code long}s
 * written only by the driving thread (64-bit stores, which the 64-bit JVMs Strata runs on never
 * split), so another thread reads each counter whole but possibly some calls behind, and counters
 * of one snapshot may come from different moments; {@link #units()} is volatile.
 */
public final class ExpertPager implements ResizablePool, AutoCloseable {

    private final String name;
    private final ExpertMasters masters;
    private final ExpertPolicy policy;
    private final SlotScope scope;
    private final int layers;
    private final int experts;
    private final ExpertPagerCounters counters; // hits, misses, evictions, bytes, residents, route counts, resizes
    private final ExpertSlotTable table;        // expert ↔ slot maps, free slots, pins, the policy
    private final ExpertSlotMemory memory;      // the slots' DEVICE allocations and views
    private final ExpertFetcher fetcher;        // fills the slots of misses; the fetches in flight
    private final ExpertResizer resizer;        // grows and shrinks memory and table together
    private int[] flat = new int[64];           // scratch for grouped calls, grows
    private boolean closed;

    private ExpertPager(Builder b, long[] initial) {
        this.name = b.name;
        this.masters = b.masters;
        this.policy = b.policy;
        this.scope = b.scope;
        this.layers = masters.layers();
        this.experts = masters.experts();
        this.counters = new ExpertPagerCounters(layers, experts);
        this.table = new ExpertSlotTable(name, scope, layers, experts, b.slotsPerLayer, policy, counters);
        this.memory = new ExpertSlotMemory(b.device, masters.layout(), table.groups(), table.capacity(), initial);
        this.fetcher = new ExpertFetcher(name, masters, table, memory, counters, b.engine, b.peerSource);
        this.resizer = new ExpertResizer(name, table, memory, counters, b.topK, experts);
    }

    /** Starts a pager over {@code masters} with slots in {@code device} (plain memory: DEVICE on the CPU backend). */
    public static Builder builder(ExpertMasters masters, Tier device) {
        return new Builder(masters, device);
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
        return page(layer, routed, count, false);
    }

    private int[] page(int layer, int[] routed, int count, boolean async) {
        fetcher.awaitAll();
        if (closed || layer < 0 || layer >= layers || count < 0 || count > routed.length) {
            throw misuse(layer, routed, count);
        }
        for (int i = 0; i < count; i++) { // ids first, so a refused call changes nothing
            int e = routed[i];
            if ((e | (experts - 1 - e)) < 0) {
                throw outOfRange(layer, routed, i);
            }
        }
        return fetcher.page(layer, routed, count, async);
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
        int total = flatten(routed, tokens);
        return page(layer, flat, total, false);
    }

    /** Puts the tokens' routes one after another in {@link #flat} (grown when too short); returns how many ids. */
    private int flatten(int[][] routed, int[] tokens) {
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
        return total;
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
        return page(layer, routed, count, true);
    }

    /** {@link #pageAsync(int, int[], int)} for the tokens of one group, as {@link #page(int, int[][], int[])}. */
    public int[] pageAsync(int layer, int[][] routed, int[] tokens) {
        int total = flatten(routed, tokens);
        return page(layer, flat, total, true);
    }

    /** Whether expert {@code expert} of {@code layer} is mapped but its fetch of the last {@link #pageAsync} not yet awaited. */
    public boolean fetching(int layer, int expert) {
        return fetcher.fetching(layer, expert);
    }

    /**
     * Waits until expert {@code expert} of {@code layer} is in its slot (returns at once when it is
     * not being fetched).
     *
     * @throws IllegalStateException when its fetch failed (then every fetch in flight is awaited
     *                               first and all failed experts are left non-resident)
     */
    public void awaitExpert(int layer, int expert) {
        fetcher.awaitExpert(layer, expert);
    }

    /** Waits for every fetch of the last {@link #pageAsync}; see {@link #awaitExpert} for failures. */
    public void awaitFetches() {
        fetcher.awaitAll();
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
        return table.layerCapacity();
    }

    // ------------------------------------------------------------------ access for the engine

    /** The layer's expert map (the array {@link #page} returns; read only). */
    public int[] expertMap(int layer) {
        return table.map(layer);
    }

    /** Slot of {@code expert} in {@code layer}, or -1 if not resident. */
    public int slotOf(int layer, int expert) {
        return table.map(layer)[expert];
    }

    /** The image held by slot {@code slot} of {@code layer}'s scope (a view of DEVICE memory; read only). */
    public MemorySegment slot(int layer, int slot) {
        return memory.view(table.group(layer), checkSlot(slot));
    }

    /** Tensor {@code tensor} (index in the layout) of the image in slot {@code slot} of {@code layer}'s scope. */
    public MemorySegment tensor(int layer, int slot, int tensor) {
        return memory.tensor(table.group(layer), checkSlot(slot), tensor);
    }

    private int checkSlot(int slot) {
        if (slot < 0 || slot >= table.capacity()) {
            throw new IllegalArgumentException("slot " + slot + " is outside [0, " + table.capacity() + ") in expert pager '" + name + "'");
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
        return counters.routeCount(layer * experts + expert);
    }

    /** Experts of {@code layer} resident now. */
    public int resident(int layer) {
        return table.resident(layer);
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
        return masters.layout();
    }

    public ExpertMasters masters() {
        return masters;
    }

    /** Slots held now, all layers. */
    public int slots() {
        return table.capacity() * table.groups();
    }

    // ------------------------------------------------------------------ ResizablePool

    @Override
    public String name() {
        return name;
    }

    /** Slots per layer ({@code k}); a shared pool holds {@code k × layers}. */
    @Override
    public int units() {
        return table.publishedUnits();
    }

    /** DEVICE bytes of one slot in every layer. */
    @Override
    public long bytesPerUnit() {
        return memory.slotBytes() * layers;
    }

    /** Top-K: one token's experts must fit at once. */
    @Override
    public int minUnits() {
        return resizer.minUnits();
    }

    /** Every expert of a layer. */
    @Override
    public int maxUnits() {
        return resizer.maxUnits();
    }

    /**
     * Grows or shrinks the slots to {@code units} per layer ({@code units × layers} shared), at a
     * drained barrier (after waiting for the fetches in flight); see {@link ExpertResizer}.
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
        fetcher.awaitAll();
        if (closed) {
            throw new IllegalStateException("expert pager '" + name + "' is closed");
        }
        return resizer.resize(units);
    }

    // ------------------------------------------------------------------ stats, checks, close

    /** Counts per layer and the pager's configuration, as of now (any thread). */
    public ExpertPagerStats stats() {
        int units = table.publishedUnits();
        int slots = table.capacityFor(units) * table.groups();
        return counters.snapshot(name, policy.name(), scope, units, slots, memory.slotBytes());
    }

    /**
     * Checks every structural invariant (map ↔ slot table, capacities, free stacks, policy sizes,
     * live DEVICE allocations); throws {@link IllegalStateException} naming the first violation.
     * Driving thread only. Byte equality with the masters is checked by {@link #verifyResidentBytes}.
     */
    public void checkInvariants() {
        fetcher.awaitAll();
        memory.checkInvariants(table.capacity());
        table.checkInvariants();
    }

    /**
     * Compares every resident slot with its master, byte for byte; returns the number compared.
     * Driving thread only (reads DISK masters into a scratch buffer).
     *
     * @throws IllegalStateException naming the layer, expert and slot of the first mismatch
     */
    public int verifyResidentBytes() {
        return fetcher.verifyResidentBytes();
    }

    /** Frees every slot (the device tier, masters and engine stay open; they are the caller's). */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        try {
            fetcher.awaitAll(); // the copies write into slots about to be freed
        } catch (IllegalStateException failedFetch) {
            // closing anyway: the failed experts are unmapped and every copy has ended
        }
        closed = true;
        memory.freeAll();
        table.clear();
    }

    @Override
    public String toString() {
        return "ExpertPager['" + name + "', " + policy.name() + ", " + scope + ", k=" + table.units() + ", " + layers + " layers x "
                + experts + " experts of " + masters.layout().bytes() + " bytes]";
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
        private long slotGranule = 1; // bytes: a slot's DEVICE allocation is a whole number of these
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

        /**
         * Rounds each slot's DEVICE allocation up to a whole number of {@code bytes} (default 1:
         * the image's size). When expert slots and KV slots share one DEVICE tier under a split,
         * the KV slot's allocation size makes a freed expert slot hold whole KV slots and no
         * unusable remainder, so a resize that moves bytes from experts to KV finds them.
         */
        public Builder slotGranule(long bytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException("expert pager '" + name + "': slot granule " + bytes + " must be at least 1 byte");
            }
            this.slotGranule = bytes;
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
            long slotRequest = (masters.layout().bytes() + slotGranule - 1) / slotGranule * slotGranule;
            long[] handles = ExpertSlotMemory.allocate(name, device, (int) total, slotRequest);
            return new ExpertPager(this, handles);
        }
    }
}
