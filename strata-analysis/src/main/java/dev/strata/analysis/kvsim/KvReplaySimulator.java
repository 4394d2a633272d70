package dev.strata.analysis.kvsim;

import dev.strata.cache.PriorityClass;
import dev.strata.cache.policy.EvictionPolicy;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.cache.policy.PolicyNode;
import dev.strata.cache.policy.PrefixNode;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.IntConsumer;

/**
 * Replays a prefix trace against KV tiers DEVICE → HOST → DISK, each with a capacity in blocks and
 * an eviction policy, driving the real policy classes ({@link EvictionPolicy}, {@link PolicyNode})
 * exactly as the tiered store does: insert, access, pin (ACTIVE) and unpin, victim, remove.
 *
 * <p>Model, per request:
 * <ol>
 *   <li>Its cached prefix is the longest run of its leading blocks resident in some tier; those
 *       blocks are hits, counted by the tier that serves them, and are pinned for the request.
 *       A block whose parent is missing is a miss even if a copy of it is resident.</li>
 *   <li>In prompt order, a hit in a lower tier is promoted to the top tier (moved: counted on each
 *       link it crosses, e.g. DISK→HOST then HOST→DEVICE); a hit in the top tier is an access; a
 *       miss is recomputed and written to the top tier (prefill). Each block is pinned there until
 *       the request ends.</li>
 *   <li>Room in a tier is made by taking the policy's victims. A victim is demoted to the next
 *       enabled tier below (counted on that link), making room there the same way, or dropped from
 *       the last tier. When a block leaves the last tier its resident descendants can never be
 *       reached again; with {@code dropUnreachable} they are dropped too (the cascade), otherwise
 *       they stay until evicted or rewritten.</li>
 *   <li>When no tier has room for a block (every resident block pinned) it is not cached.</li>
 * </ol>
 * Tiers are exclusive: a block is in at most one tier. A capacity of 0 disables a tier.
 *
 * <p>Priority classes, as the KV block manager assigns them: ACTIVE while a request uses the
 * block, RECENT once two or more requests have reached it (a shared prefix block), EVICTABLE
 * before that. Prefix structure ({@link PrefixNode}) is provided to policies that use it.
 *
 * <p>Threads: one simulator per thread; {@link #run} may be called once, or, instead, {@link #step}
 * once per request a caller chooses to send to this cache (a multi-instance replay gives each
 * instance's cache only the requests routed to it, reads its counts with {@link #result}, and may
 * learn of each block leaving this cache through {@link #onDeparture}).
 */
public final class KvReplaySimulator {
    /** Tier indices. */
    public static final int DEVICE = 0;
    public static final int HOST = 1;
    public static final int DISK = 2;
    /** Tier names by index, as the CLI prints them. */
    public static final String[] TIER_NAMES = {"device", "host", "disk"};

    /**
     * A replay's settings.
     *
     * @param capacity        [tier] capacity in blocks; 0 disables the tier
     * @param policy          [tier] the eviction policy of each tier
     * @param blockBytes      bytes of one block (block tokens × bytes per token)
     * @param dropUnreachable drop blocks whose parent left the last tier (the cascade)
     * @param checkInvariants check occupancy, counts and prefix closure after every step (tests)
     */
    public record Config(long[] capacity, PolicyKind[] policy, long blockBytes, boolean dropUnreachable,
                         boolean checkInvariants) {
        public Config {
            if (capacity.length != 3 || policy.length != 3) {
                throw new IllegalArgumentException("need a capacity and a policy for each of device, host, disk");
            }
            capacity = capacity.clone();
            policy = policy.clone();
            for (int t = 0; t < 3; t++) {
                if (capacity[t] < 0) {
                    throw new IllegalArgumentException(TIER_NAMES[t] + " capacity must not be negative, got " + capacity[t] + " blocks");
                }
            }
            if (blockBytes <= 0) {
                throw new IllegalArgumentException("block size must be positive, got " + blockBytes + " bytes");
            }
        }

        /** Tiers of the given capacities (blocks), every one with {@code policy}, the cascade on. */
        public static Config tiers(long device, long host, long disk, PolicyKind policy, long blockBytes) {
            return new Config(new long[] {device, host, disk}, new PolicyKind[] {policy, policy, policy}, blockBytes, true, false);
        }

        /** One DEVICE tier of {@code capacity} blocks. */
        public static Config single(long capacity, PolicyKind policy, long blockBytes) {
            return tiers(capacity, 0, 0, policy, blockBytes);
        }

        public Config withInvariantChecks() {
            return new Config(capacity, policy, blockBytes, dropUnreachable, true);
        }

        public Config withDropUnreachable(boolean on) {
            return new Config(capacity, policy, blockBytes, on, checkInvariants);
        }

        /** The sum of the enabled capacities: what Bélády's bound is computed at. */
        public long totalCapacity() {
            return capacity[0] + capacity[1] + capacity[2];
        }
    }

    /** One block's copy in one tier, as the tier's policy sees it. */
    private final class Copy extends PolicyNode implements PrefixNode {
        final int block;
        final int tier;

        Copy(int block, int tier) {
            this.block = block;
            this.tier = tier;
        }

        @Override
        public PriorityClass priority() {
            return pinned[block] ? PriorityClass.ACTIVE : reach[block] >= 2 ? PriorityClass.RECENT : PriorityClass.EVICTABLE;
        }

        @Override
        public boolean evictable() {
            return !pinned[block];
        }

        @Override
        public long keyHash() {
            return blockHash(block);
        }

        @Override
        public PolicyNode prefixParent() {
            int p = trace.parent(block);
            return p >= 0 && tierOf[p] == tier ? copies[tier][p] : null;
        }

        @Override
        public int residentPrefixChildren() {
            return childrenIn[tier][block];
        }

        @Override
        public long prefixReach() {
            return Math.max(1, reach[block]);
        }

        @Override
        public String toString() {
            return "block " + block + " in " + TIER_NAMES[tier];
        }
    }

    private final Config config;
    private final PrefixTrace trace;
    private final EvictionPolicy[] policies = new EvictionPolicy[3]; // null for a disabled tier
    private final int[] enabled; // indices of enabled tiers, top first
    private final Copy[][] copies; // [tier][block], created on first use
    private final byte[] tierOf; // [block] tier holding it, -1 when none
    private final boolean[] pinned; // [block] used by the request being replayed
    private final long[] reach; // [block] requests that reached it so far
    private final boolean[] inFlight; // [block] between two tiers: removed from one, room being made in another
    private final int[][] childrenIn; // [tier][block] children resident in that tier
    private final int[] firstChild; // [block] first child in the trie, -1 if none
    private final int[] nextSibling; // [block] next child of the same parent, -1 if none
    private final long[] occupancy = new long[3]; // [tier] blocks resident
    private final long[] hitsByTier = new long[3];
    private final long[][] moved = new long[3][3];
    private long recomputed;
    private long requestsReplayed;
    private long accessesReplayed; // block references of the requests replayed
    private IntConsumer departures = b -> { }; // told of each block leaving every tier (see onDeparture)
    private long strandingEvictions;
    private long unreachableDrops;
    private int[] stack = new int[64]; // scratch for the cascade
    private boolean ran;
    private boolean stepped;

    public KvReplaySimulator(PrefixTrace trace, Config config) {
        this.trace = trace;
        this.config = config;
        int count = 0;
        int[] en = new int[3];
        for (int t = 0; t < 3; t++) {
            if (config.capacity()[t] > 0) {
                policies[t] = config.policy()[t].create();
                en[count++] = t;
            }
        }
        this.enabled = Arrays.copyOf(en, count);
        int n = trace.blockCount();
        this.copies = new Copy[3][n];
        this.tierOf = new byte[n];
        Arrays.fill(tierOf, (byte) -1);
        this.pinned = new boolean[n];
        this.reach = new long[n];
        this.inFlight = new boolean[n];
        this.childrenIn = new int[3][n];
        this.firstChild = new int[n];
        this.nextSibling = new int[n];
        Arrays.fill(firstChild, -1);
        for (int b = n - 1; b >= 0; b--) {
            int p = trace.parent(b);
            if (p >= 0) {
                nextSibling[b] = firstChild[p];
                firstChild[p] = b;
            } else {
                nextSibling[b] = -1;
            }
        }
    }

    /** A well-mixed hash of block index {@code block} (SplitMix64's finalizer): its key hash in every model. */
    static long blockHash(int block) {
        long z = block * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Replays {@code trace} and returns the counts. */
    public static ReplayResult replay(PrefixTrace trace, Config config) {
        return new KvReplaySimulator(trace, config).run();
    }

    /** Replays the whole trace once. */
    public ReplayResult run() {
        if (ran || stepped) {
            throw new IllegalStateException("a simulator replays its trace once, by run() or by step(), not both");
        }
        ran = true;
        for (int r = 0; r < trace.requestCount(); r++) {
            replayRequest(trace.blocksOf(r));
            if (config.checkInvariants()) {
                checkInvariants(r);
            }
        }
        return result();
    }

    /**
     * The counts so far: after {@link #run}, the whole trace's; while stepping, those of the
     * requests stepped (its {@link ReplayResult#requests()} and {@link ReplayResult#accesses()}
     * count only them).
     */
    public ReplayResult result() {
        String[] names = new String[3];
        for (int t = 0; t < 3; t++) {
            names[t] = policies[t] == null ? "" : policies[t].name();
        }
        return new ReplayResult(names, requestsReplayed, accessesReplayed, hitsByTier, recomputed, moved,
                strandingEvictions, unreachableDrops, config.blockBytes());
    }

    /**
     * Tells {@code listener} the index of each block that leaves this cache altogether, as it
     * happens: evicted from the last tier (or from a tier with no room below), dropped as
     * unreachable by the cascade, or computed or promoted with no tier able to keep it. A block
     * moving between tiers, or removed to be rewritten by the same request, has not left.
     * Replaces the previous listener; call before the first step.
     */
    public void onDeparture(IntConsumer listener) {
        this.departures = Objects.requireNonNull(listener, "listener");
    }

    /**
     * Replays request {@code request} of the trace alone, as {@link #run} replays each request, and
     * returns the length of its cached prefix in blocks as found before the step (the blocks served
     * from some tier; the rest were recomputed). Requests may be stepped in any subset, in trace
     * order; not after {@link #run}.
     */
    public int step(int request) {
        if (ran) {
            throw new IllegalStateException("a simulator replays its trace once, by run() or by step(), not both");
        }
        stepped = true;
        int prefix = replayRequest(trace.blocksOf(request));
        if (config.checkInvariants()) {
            checkInvariants(request);
        }
        return prefix;
    }

    /** Blocks resident in {@code tier} now. */
    public long occupancy(int tier) {
        return occupancy[tier];
    }

    /** Blocks of {@code request} resident, in prompt order from the first, in some tier now (the prefix a lookup would find). */
    public int cachedPrefix(int request) {
        int[] blocks = trace.blocksOf(request);
        int prefix = 0;
        while (prefix < blocks.length && tierOf[blocks[prefix]] >= 0) {
            prefix++;
        }
        return prefix;
    }

    private int replayRequest(int[] blocks) {
        int n = blocks.length;
        requestsReplayed++;
        accessesReplayed += n;
        int prefix = 0;
        while (prefix < n && tierOf[blocks[prefix]] >= 0) {
            prefix++;
        }
        for (int i = 0; i < prefix; i++) {
            int b = blocks[i];
            hitsByTier[tierOf[b]]++;
            setPinned(b, true);
        }
        for (int i = 0; i < n; i++) {
            int b = blocks[i];
            reach[b]++;
            if (i < prefix) {
                int t = tierOf[b];
                if (t == enabled[0]) {
                    policies[t].onAccess(copies[t][b]);
                } else {
                    remove(b);
                    inFlight[b] = true;
                    int to = place(b);
                    inFlight[b] = false;
                    if (to >= 0) {
                        countHops(t, to);
                    }
                }
            } else {
                recomputed++;
                if (tierOf[b] >= 0) {
                    remove(b); // a stranded copy (its parent was missing): rewritten by the prefill
                }
                boolean reachable = i == 0 || tierOf[blocks[i - 1]] >= 0;
                if (enabled.length > 0 && (reachable || !config.dropUnreachable())) {
                    int to = place(b);
                    if (to > enabled[0]) {
                        countHops(enabled[0], to); // written by prefill straight past a full top tier
                    }
                } else {
                    departures.accept(b); // computed, never kept: no tier, or its parent is gone
                }
            }
            if (config.checkInvariants()) {
                checkOccupancy();
            }
        }
        for (int b : blocks) {
            if (pinned[b]) {
                setPinned(b, false);
            }
        }
        return prefix;
    }

    /** Puts block {@code b} (pinned) in the highest tier that has or can make room; its tier or -1. */
    private int place(int b) {
        pinned[b] = true;
        for (int t : enabled) {
            if (makeRoom(t)) {
                insert(b, t);
                return t;
            }
        }
        pinned[b] = false;
        dropped(b);
        return -1;
    }

    /** Evicts from {@code t} until a block fits; false if no victim remains. */
    private boolean makeRoom(int t) {
        EvictionPolicy policy = policies[t];
        while (occupancy[t] >= config.capacity()[t]) {
            PolicyNode v = policy.victim();
            if (v == null) {
                return false;
            }
            evict((Copy) v);
        }
        return true;
    }

    private void evict(Copy v) {
        int b = v.block;
        int t = v.tier;
        if (pinned[b] || tierOf[b] != t) {
            throw new IllegalStateException("policy '" + policies[t].name() + "' offered " + v + ", which is "
                    + (pinned[b] ? "pinned" : "not resident there"));
        }
        if (childrenIn[t][b] > 0) {
            strandingEvictions++;
        }
        remove(b);
        inFlight[b] = true; // not resident while room is made for it below
        try {
            for (int k = indexOf(t) + 1; k < enabled.length; k++) {
                int to = enabled[k];
                if (makeRoom(to)) {
                    int parent = trace.parent(b);
                    if (config.dropUnreachable() && parent >= 0 && tierOf[parent] < 0 && !inFlight[parent]) {
                        // making room below dropped an ancestor while b was on its way down: b is unreachable now
                        unreachableDrops++;
                        dropped(b);
                        return;
                    }
                    insert(b, to);
                    moved[t][to]++;
                    return;
                }
            }
            dropped(b);
        } finally {
            inFlight[b] = false;
        }
    }

    /** Block {@code b} left this cache (the last tier, or found no room): its resident descendants are unreachable. */
    private void dropped(int b) {
        departures.accept(b);
        if (!config.dropUnreachable()) {
            return;
        }
        int top = 0;
        for (int c = firstChild[b]; c >= 0; c = nextSibling[c]) {
            stack = push(stack, top++, c);
        }
        while (top > 0) {
            int c = stack[--top];
            if (tierOf[c] < 0) {
                continue; // nothing resident below a missing block, except below one in flight (checked when it lands)
            }
            if (pinned[c]) {
                throw new IllegalStateException("block " + c + " is in use but its ancestor " + b + " was dropped");
            }
            remove(c);
            unreachableDrops++;
            departures.accept(c);
            for (int d = firstChild[c]; d >= 0; d = nextSibling[d]) {
                stack = push(stack, top++, d);
            }
        }
    }

    private static int[] push(int[] s, int at, int v) {
        if (at == s.length) {
            s = Arrays.copyOf(s, s.length * 2);
        }
        s[at] = v;
        return s;
    }

    private void insert(int b, int t) {
        Copy c = copies[t][b];
        if (c == null) {
            c = new Copy(b, t);
            copies[t][b] = c;
        }
        tierOf[b] = (byte) t;
        occupancy[t]++;
        int p = trace.parent(b);
        if (p >= 0) {
            childrenIn[t][p]++;
        }
        policies[t].onInsert(c);
    }

    private void remove(int b) {
        int t = tierOf[b];
        policies[t].onRemove(copies[t][b]);
        int p = trace.parent(b);
        if (p >= 0) {
            childrenIn[t][p]--;
        }
        tierOf[b] = -1;
        occupancy[t]--;
    }

    private void setPinned(int b, boolean on) {
        pinned[b] = on;
        int t = tierOf[b];
        if (t >= 0) {
            policies[t].onEligibilityChange(copies[t][b]);
        }
    }

    /** Counts a block's move from {@code from} to {@code to} on each link between enabled tiers it crosses. */
    private void countHops(int from, int to) {
        int a = indexOf(from);
        int z = indexOf(to);
        for (int k = a; k > z; k--) { // up: a reload
            moved[enabled[k]][enabled[k - 1]]++;
        }
        for (int k = a; k < z; k++) { // down: an offload
            moved[enabled[k]][enabled[k + 1]]++;
        }
    }

    private int indexOf(int tier) {
        for (int k = 0; k < enabled.length; k++) {
            if (enabled[k] == tier) {
                return k;
            }
        }
        throw new IllegalStateException("tier " + TIER_NAMES[tier] + " is disabled");
    }

    private void checkOccupancy() {
        for (int t = 0; t < 3; t++) {
            if (occupancy[t] > config.capacity()[t]) {
                throw new IllegalStateException(TIER_NAMES[t] + " holds " + occupancy[t] + " blocks, capacity " + config.capacity()[t]);
            }
            if (policies[t] != null && policies[t].size() != occupancy[t]) {
                throw new IllegalStateException(TIER_NAMES[t] + " policy tracks " + policies[t].size() + " blocks, tier holds " + occupancy[t]);
            }
        }
    }

    private void checkInvariants(int request) {
        checkOccupancy();
        long[] counted = new long[3];
        int[][] children = new int[3][trace.blockCount()];
        for (int b = 0; b < trace.blockCount(); b++) {
            if (pinned[b]) {
                throw new IllegalStateException("block " + b + " still pinned after request " + request);
            }
            int t = tierOf[b];
            if (t < 0) {
                continue;
            }
            counted[t]++;
            int p = trace.parent(b);
            if (p >= 0) {
                children[t][p]++;
                if (config.dropUnreachable() && tierOf[p] < 0) {
                    throw new IllegalStateException("block " + b + " is resident but its parent " + p + " is not, after request " + request);
                }
            }
        }
        for (int t = 0; t < 3; t++) {
            if (counted[t] != occupancy[t]) {
                throw new IllegalStateException(TIER_NAMES[t] + " counts " + occupancy[t] + " blocks, holds " + counted[t]);
            }
            if (!Arrays.equals(children[t], childrenIn[t])) {
                throw new IllegalStateException(TIER_NAMES[t] + " child counts drifted after request " + request);
            }
        }
    }
}
