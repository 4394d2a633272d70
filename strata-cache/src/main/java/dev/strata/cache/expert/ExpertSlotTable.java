package dev.strata.cache.expert;

import java.util.Arrays;

/**
 * The slot table of an {@link ExpertPager}: which expert occupies which DEVICE slot, per layer the
 * {@code expert_map} the engine computes with (expert → slot, {@code -1} when not resident) and per
 * group its inverse (slot → key, {@code -1} when free) with the stack of free slots; the pins of the
 * call being paged; and the {@link ExpertPolicy} that ranks residents, told of every hit, admission
 * and eviction. It knows nothing of bytes: the fetcher fills the slots it hands out and the resizer
 * moves bytes before it moves keys.
 *
 * <p>Vocabulary (as in {@link ExpertPolicy}): a key is {@code layer × experts + expert}; a group is
 * the set of slots a key competes for, {@code layer} under {@link SlotScope#PER_LAYER} or {@code 0}
 * under {@link SlotScope#SHARED}; the capacity is the slots of one group, {@code k} or
 * {@code k × layers}.
 *
 * <p>Design note:
 * <ul>
 *   <li>Replacement: a miss takes the top of its group's free stack, and only when the stack is
 *       empty the policy's victim (a resident of the group that the current call does not route).
 *       Free slots are handed out lowest id first after a build or a shrink, and after a grow the
 *       new slots first, lowest id first; so which slot an expert lands in depends only on the
 *       sequence of calls.</li>
 *   <li>Pins are a stamp per expert of the current layer: {@link #route} pins the routed set by
 *       writing the call's stamp, and nothing has to be unpinned afterwards. A victim the policy
 *       offers that is pinned, or not resident, is refused with an exception: the policy broke its
 *       contract.</li>
 *   <li>A call whose id count is at most the layer capacity cannot exceed it, so hits are touched in
 *       the policy as they are found; only longer calls check the union first, so that a refused call
 *       changes no residency and no policy order (it does advance the stamp and the tick).</li>
 *   <li>The table counts in {@link ExpertPagerCounters} what it decides: hits, misses, route counts,
 *       evictions and residents per layer.</li>
 * </ul>
 *
 * <p>Invariants (checked by {@link #checkInvariants()}): each layer's map is a partial injection
 * into the slots of its group, and the inverse map agrees with it (each expert in at most one slot,
 * each slot holding at most one expert, of a layer of that group); a slot is either on its group's
 * free stack exactly once or holds a key; the policy tracks exactly the residents of each group; a
 * group holds at most its capacity, a layer under per-layer scope at most {@code k}; the counted
 * residents of each layer equal its mapped experts. A pinned key is never chosen as a victim.
 *
 * <p>Hot path: {@link #route} of a call whose experts are all resident allocates nothing and does
 * O(routed) array work.
 *
 * <p>Threads: the pager's driving thread only, except {@link #publishedUnits()} (any thread).
 */
final class ExpertSlotTable {

    private static final ExpertPolicy.Pins NONE_PINNED = key -> false;

    private final String pager;                   // the pager's name, for messages
    private final SlotScope scope;
    private final int layers;
    private final int experts;
    private final int groups;                     // layers (PER_LAYER) or 1 (SHARED)
    private final ExpertPolicy policy;
    private final ExpertPagerCounters counters;

    private int k;                                // slots per layer (unit of the pool)
    private volatile int publishedK;              // k, for other threads
    private int groupCapacity;                    // slots per group: k or k × layers
    private int layerCap;                         // distinct experts one call may route: min(groupCapacity, experts)
    private final int[][] expertMap;              // [layers][experts] slot of each expert or -1
    private int[][] slotKey;                      // [groups][groupCapacity] key resident in each slot, -1 if free
    private int[][] freeSlots;                    // [groups][groupCapacity] stack of free slot ids, top at freeCount - 1
    private final int[] freeCount;                // [groups] entries on each free stack
    private final int[] residents;                // [groups] resident experts
    private final long[] pinStamp;                // [experts] stamp of the call that pinned each expert of pinLayer
    private long stamp;                           // current call's stamp
    private int pinLayer = -1;                    // layer of the current call
    private final ExpertPolicy.Pins currentPins = this::pinned; // the current call's routed experts, for victim choice
    private long tick;                            // policy clock, one per routed call
    private final int[] hitKeys;                  // [experts] scratch: keys hit in a call checked for its union

    /**
     * An empty table of {@code slotsPerLayer} units; attaches {@code policy} (a fresh instance).
     *
     * @throws IllegalArgumentException naming the value when a count is not positive or the slots
     *                                  per layer exceed the experts
     */
    ExpertSlotTable(String pager, SlotScope scope, int layers, int experts, int slotsPerLayer, ExpertPolicy policy,
                    ExpertPagerCounters counters) {
        if (layers < 1 || experts < 1 || slotsPerLayer < 1 || slotsPerLayer > experts) {
            throw new IllegalArgumentException("expert pager '" + pager + "': slot table needs layers >= 1, experts >= 1 and "
                    + "slots per layer in [1, experts], got " + layers + " layers, " + experts + " experts, " + slotsPerLayer
                    + " slots per layer");
        }
        this.pager = pager;
        this.scope = scope;
        this.layers = layers;
        this.experts = experts;
        this.groups = scope == SlotScope.PER_LAYER ? layers : 1;
        this.policy = policy;
        this.counters = counters;
        this.k = slotsPerLayer;
        this.publishedK = slotsPerLayer;
        this.groupCapacity = capacityFor(slotsPerLayer);
        this.layerCap = Math.min(groupCapacity, experts);
        this.expertMap = new int[layers][experts];
        for (int[] m : expertMap) {
            Arrays.fill(m, -1);
        }
        this.slotKey = new int[groups][groupCapacity];
        this.freeSlots = new int[groups][groupCapacity];
        this.freeCount = new int[groups];
        this.residents = new int[groups];
        for (int g = 0; g < groups; g++) {
            Arrays.fill(slotKey[g], -1);
            for (int s = 0; s < groupCapacity; s++) {
                freeSlots[g][groupCapacity - 1 - s] = s; // slot 0 on top
            }
            freeCount[g] = groupCapacity;
        }
        this.pinStamp = new long[experts];
        this.hitKeys = new int[experts];
        policy.attach(groups, layers * experts);
    }

    /** Slots of one group at {@code slotsPerLayer} units. */
    int capacityFor(int slotsPerLayer) {
        return scope == SlotScope.PER_LAYER ? slotsPerLayer : slotsPerLayer * layers;
    }

    int groups() {
        return groups;
    }

    int group(int layer) {
        return scope == SlotScope.PER_LAYER ? layer : 0;
    }

    /** {@code k}: slots per layer now. */
    int units() {
        return k;
    }

    /** {@code k} as last published, for threads other than the driving one. */
    int publishedUnits() {
        return publishedK;
    }

    /** Slots of one group now. */
    int capacity() {
        return groupCapacity;
    }

    /** The most distinct experts one call may route in a layer: {@code min(capacity, experts)}. */
    int layerCapacity() {
        return layerCap;
    }

    /** The layer's expert map (the table's own array; read only). */
    int[] map(int layer) {
        return expertMap[layer];
    }

    /** Key in slot {@code slot} of group {@code g}, or -1 when the slot is free. */
    int keyIn(int g, int slot) {
        return slotKey[g][slot];
    }

    /** Residents of group {@code g}. */
    int residents(int g) {
        return residents[g];
    }

    /** Experts of {@code layer} mapped now. */
    int resident(int layer) {
        int n = 0;
        for (int s : expertMap[layer]) {
            if (s >= 0) {
                n++;
            }
        }
        return n;
    }

    // ------------------------------------------------------------------ a paged call

    /**
     * Starts a call for {@code layer}: pins every distinct expert of {@code routed[0..count)},
     * touches the resident ones in the policy and counts them as hits, counts the call in each
     * expert's route count, and lists the missing experts in {@code missing} (in first-routed
     * order). The ids must be in range (the pager checks them).
     *
     * @param missing receives the missing experts; at least {@code experts} long
     * @return how many experts are missing; {@link #admit} each of them next, in this call
     * @throws IllegalArgumentException when the distinct experts exceed {@link #layerCapacity()};
     *                                  no residency, policy order or count changes then
     */
    int route(int layer, int[] routed, int count, int[] missing) {
        if (count > layerCap) {
            return routeCheckingUnion(layer, routed, count, missing);
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
                counters.routed(base + e);
                if (map[e] >= 0) {
                    hits++;
                    policy.onHit(g, base + e, t);
                } else {
                    missing[misses++] = e;
                }
            }
        }
        counters.hits(layer, hits);
        if (misses > 0) {
            counters.misses(layer, misses);
        }
        return misses;
    }

    /** {@link #route} for a call listing more ids than the layer's capacity: checks the union before touching anything. */
    private int routeCheckingUnion(int layer, int[] routed, int count, int[] missing) {
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
                    missing[misses++] = e;
                }
            }
        }
        if (hits + misses > layerCap) {
            throw new IllegalArgumentException("layer " + layer + " routes " + (hits + misses) + " distinct experts, more than its "
                    + layerCap + " slots in expert pager '" + pager + "'; split the tokens with plan()");
        }
        for (int i = 0; i < hits; i++) {
            policy.onHit(g, hitKeys[i], t);
            counters.routed(hitKeys[i]);
        }
        for (int i = 0; i < misses; i++) {
            counters.routed(base + missing[i]);
        }
        counters.hits(layer, hits);
        if (misses > 0) {
            counters.misses(layer, misses);
        }
        return misses;
    }

    /**
     * Maps {@code expert} of {@code layer}, a missing expert of the current call, to a slot of its
     * group: the top of the free stack, else the slot of the policy's victim (evicted: unmapped,
     * told to the policy, counted). The slot's bytes are the caller's to fill.
     *
     * @return the slot
     * @throws IllegalStateException when the policy offers no victim, or one that is pinned or not resident
     */
    int admit(int layer, int expert) {
        int g = group(layer);
        int slot = takeSlot(g);
        int key = layer * experts + expert;
        expertMap[layer][expert] = slot;
        slotKey[g][slot] = key;
        residents[g]++;
        policy.onAdmit(g, key, tick);
        counters.resident(layer, 1);
        return slot;
    }

    /** A free slot of group {@code g}, evicting the policy's victim when none is free. */
    private int takeSlot(int g) {
        if (freeCount[g] > 0) {
            return freeSlots[g][--freeCount[g]];
        }
        int victim = policy.victim(g, currentPins);
        if (victim < 0) {
            throw new IllegalStateException("expert pager '" + pager + "': policy '" + policy.name() + "' found no unpinned victim in group "
                    + g + " (" + residents[g] + " residents, capacity " + groupCapacity + ")");
        }
        int vl = victim / experts;
        int ve = victim - vl * experts;
        int slot = vl < layers ? expertMap[vl][ve] : -1;
        if (slot < 0 || slotKey[g][slot] != victim) {
            throw new IllegalStateException("expert pager '" + pager + "': policy '" + policy.name() + "' chose key " + victim
                    + " (layer " + vl + ", expert " + ve + ") which is not resident in group " + g);
        }
        if (pinned(victim)) {
            throw new IllegalStateException("expert pager '" + pager + "': policy '" + policy.name() + "' chose key " + victim
                    + " (layer " + vl + ", expert " + ve + ") which the current call routes");
        }
        expertMap[vl][ve] = -1;
        slotKey[g][slot] = -1;
        residents[g]--;
        policy.onEvict(g, victim);
        counters.eviction(vl);
        counters.resident(vl, -1);
        return slot;
    }

    /**
     * Unmaps resident {@code expert} of {@code layer} and puts its slot back on the free stack,
     * without counting an eviction (its fetch failed, so it never was usable).
     */
    void release(int layer, int expert) {
        int g = group(layer);
        int slot = expertMap[layer][expert];
        if (slot < 0) {
            throw new IllegalStateException("expert pager '" + pager + "': layer " + layer + " expert " + expert + " is not resident");
        }
        unmap(g, slot, layer * experts + expert);
    }

    private void unmap(int g, int slot, int key) {
        int l = key / experts;
        expertMap[l][key - l * experts] = -1;
        slotKey[g][slot] = -1;
        residents[g]--;
        policy.onEvict(g, key);
        freeSlots[g][freeCount[g]++] = slot;
        counters.resident(l, -1);
    }

    /** For the policy: true if {@code key} is routed by the current call. */
    boolean pinned(int key) {
        int layer = key / experts;
        return layer == pinLayer && pinStamp[key - layer * experts] == stamp;
    }

    // ------------------------------------------------------------------ resizing (driven by ExpertResizer)

    /**
     * Evicts the policy's victims (no pins: between calls) until group {@code g} holds at most
     * {@code residentsLeft} experts, counting each as an eviction.
     */
    void evictDownTo(int g, int residentsLeft) {
        while (residents[g] > residentsLeft) {
            int victim = policy.victim(g, NONE_PINNED);
            if (victim < 0) {
                throw new IllegalStateException("expert pager '" + pager + "': policy '" + policy.name()
                        + "' offered no victim with " + residents[g] + " residents in group " + g);
            }
            int vl = victim / experts;
            int slot = expertMap[vl][victim - vl * experts];
            unmap(g, slot, victim);
            counters.eviction(vl);
        }
    }

    /**
     * Moves the key in slot {@code from} of group {@code g} into free slot {@code to} of the same
     * group (the caller has copied its bytes); {@code from} becomes free.
     */
    void move(int g, int from, int to) {
        int key = slotKey[g][from];
        if (key < 0 || slotKey[g][to] >= 0) {
            throw new IllegalStateException("expert pager '" + pager + "': cannot move slot " + from + " (key " + key + ") of group "
                    + g + " into slot " + to + " (key " + slotKey[g][to] + ")");
        }
        int at = 0;
        while (at < freeCount[g] && freeSlots[g][at] != to) {
            at++;
        }
        if (at == freeCount[g]) {
            throw new IllegalStateException("expert pager '" + pager + "': slot " + to + " of group " + g + " is not on the free stack");
        }
        freeSlots[g][at] = from;
        int l = key / experts;
        expertMap[l][key - l * experts] = to;
        slotKey[g][to] = key;
        slotKey[g][from] = -1;
    }

    /**
     * Removes the slots of group {@code g} from {@code newCap} on, which must all be free, and
     * restacks the free slots lowest id on top. The group's capacity is in effect once
     * {@link #setUnits} has been called for every group.
     */
    void truncate(int g, int newCap) {
        for (int s = newCap; s < slotKey[g].length; s++) {
            if (slotKey[g][s] >= 0) {
                throw new IllegalStateException("expert pager '" + pager + "': slot " + s + " of group " + g + " still holds key "
                        + slotKey[g][s] + " at a shrink to " + newCap + " slots");
            }
        }
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

    /** Adds free slots {@code capacity()..capacityFor(units)-1} to every group (slot {@code capacity()} on top) and sets {@code k}. */
    void grow(int units) {
        int oldCap = groupCapacity;
        int newCap = capacityFor(units);
        for (int g = 0; g < groups; g++) {
            slotKey[g] = Arrays.copyOf(slotKey[g], newCap);
            int[] free = new int[newCap];
            System.arraycopy(freeSlots[g], 0, free, 0, freeCount[g]);
            for (int s = newCap - 1; s >= oldCap; s--) {
                slotKey[g][s] = -1;
                free[freeCount[g]++] = s;
            }
            freeSlots[g] = free;
        }
        setUnits(units);
    }

    /** Sets {@code k} and the capacities that follow from it, and publishes {@code k}. */
    void setUnits(int units) {
        k = units;
        groupCapacity = capacityFor(units);
        layerCap = Math.min(groupCapacity, experts);
        publishedK = units;
    }

    /** Unmaps everything without telling the policy or the counters (the pager is closing). */
    void clear() {
        for (int g = 0; g < groups; g++) {
            Arrays.fill(slotKey[g], -1);
            residents[g] = 0;
        }
        for (int[] m : expertMap) {
            Arrays.fill(m, -1);
        }
    }

    // ------------------------------------------------------------------ checks

    /** Checks every invariant of the class comment; throws {@link IllegalStateException} naming the first violation. */
    void checkInvariants() {
        int[] perLayer = new int[layers];
        for (int g = 0; g < groups; g++) {
            if (slotKey[g].length != groupCapacity) {
                throw new IllegalStateException("group " + g + " has " + slotKey[g].length + " slots, capacity " + groupCapacity);
            }
            int used = 0;
            for (int s = 0; s < groupCapacity; s++) {
                int key = slotKey[g][s];
                if (key >= 0) {
                    used++;
                    int l = key / experts;
                    if (l >= layers || group(l) != g) {
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
            boolean[] stacked = new boolean[groupCapacity];
            for (int i = 0; i < freeCount[g]; i++) {
                int s = freeSlots[g][i];
                if (slotKey[g][s] != -1) {
                    throw new IllegalStateException("free slot " + s + " of group " + g + " holds key " + slotKey[g][s]);
                }
                if (stacked[s]) {
                    throw new IllegalStateException("free slot " + s + " of group " + g + " is on the free stack twice");
                }
                stacked[s] = true;
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
            if (mapped != perLayer[l] || mapped != counters.resident(l)) {
                throw new IllegalStateException("layer " + l + ": " + mapped + " mapped, " + perLayer[l] + " in slots, "
                        + counters.resident(l) + " counted resident");
            }
            if (scope == SlotScope.PER_LAYER && mapped > k) {
                throw new IllegalStateException("layer " + l + " holds " + mapped + " experts, more than k = " + k);
            }
        }
    }
}
