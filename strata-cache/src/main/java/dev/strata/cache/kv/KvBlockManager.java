package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import dev.strata.cache.PriorityClass;
import dev.strata.cache.PutStatus;
import dev.strata.cache.TieredStore;
import dev.strata.cache.policy.PolicyNode;
import dev.strata.cache.split.ResizablePool;
import dev.strata.memory.Tier;
import dev.strata.memory.transfer.TransferEngine;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The KV block manager an engine calls: it finds the cached prefix of a token sequence across
 * every tier, brings matched blocks into the engine's DEVICE block slots, hands out slots for new
 * tokens (evicting cached blocks by priority class), shares committed blocks between sequences
 * under their chained prefix hashes, and moves blocks to and from the tiered store
 * asynchronously: offload, reload, lookahead prefetch, preempt and resume.
 *
 * <p><b>Model.</b> The engine's KV lives in {@link KvLayout#slots()} block slots described by a
 * {@link KvLayout}; a slot is free or holds exactly one {@link DeviceBlock}. A block the engine is
 * still writing has no key; {@link #commit} gives each full block its chained key
 * ({@link PrefixHasher}) and makes it shareable: a later sequence whose tokens start the same way
 * {@link #match matches} it and {@link #load loads} it by reference (the block's refcount is the
 * number of sequences holding it). Released blocks stay cached in their slots (RECENT; IDLE for
 * preempted sequences; EVICTABLE on request) until the slot policy (any
 * {@link EvictionPolicy}, priority-class LRU by default) picks them to make room. Offloaded copies
 * live in a {@link TieredStore} (top tier HOST, or PEER before HOST to offload onto memory lent by
 * peers, then POOL, DISK by the store's demotion policy) as {@code KV_BLOCK} objects, LOSSY unless
 * {@link KvManagerConfig#offloadDurability} says BACKED (then a block on PEER always has a HOST copy
 * too, and a load whose PEER copy was revoked mid-way is served from the next copy); an optional {@link SharedBlockStore} is consulted after the local
 * tiers and receives committed blocks.
 *
 * <p><b>Transfers.</b> Offload gather-writes the slot's segments ({@link KvLayout#segments})
 * straight into the store's top tier; reload scatters the store's copy into the slot through the
 * {@link TransferEngine}; a DISK copy comes back in two stages, DISK → HOST staging, then HOST →
 * DEVICE as soon as the first stage lands. Write-through ({@link OffloadMode#WRITE_THROUGH})
 * offloads at commit, write-back at eviction and preemption; a slot whose copy is in flight is
 * never reused or evicted, and an eviction that needs a copy frees its slot when the copy lands.
 *
 * <p><b>Threads.</b> One scheduler thread calls every method of the manager (the engine's
 * scheduling loop); the manager is not thread-safe. Work that may wait runs elsewhere: store calls
 * (which take the store's lock and may write to disk) and shared-pool copies run on the manager's
 * single I/O thread, in submission order; byte copies run on the transfer engine's link threads.
 * Their completions are handed back through a lock-free queue and applied on the scheduler thread
 * at the start of the next call (or by {@link #poll()}); so the manager's state only ever changes on
 * the scheduler thread. Futures returned by {@link #load} complete on I/O or transfer threads as
 * soon as the bytes are in place; the block table reflects a failure from the next call on. No
 * method waits for a transfer except {@link #awaitIdle} and {@link #close}, which say so. The store
 * must be used only through this manager while it is open (its drop listener must be the
 * manager's {@link KvDropRelay}).
 *
 * <p><b>Parts.</b> The manager keeps the sequences and decides; the parts it delegates to have one
 * purpose each: {@link DeviceSlots} (slot occupancy, the free stack, the key table, the slot policy
 * and the prefix-tree child counts it reads), {@link KvLoadPipeline} (reads into slots from the
 * shared pool or the store, with two-stage DISK staging), {@link KvOffloadPipeline} (offload to the
 * store, publication in the shared pool), {@link KvAsync} (the I/O thread, work in flight and the
 * hand-back of completions), {@link OpenSequences} (the list of open sequences).
 *
 * <p><b>Resize.</b> Over a {@link ResizableKvLayout} (slots allocated in a DEVICE tier shared with
 * the expert pager, {@link TierSlotKvLayout}) the slot count changes at a drained barrier through
 * {@link #resizeSlots} or the {@link #slotPool} view ({@link dev.strata.cache.split.ResizablePool}):
 * a grow allocates slots or changes nothing; a shrink is refused while a removed slot is in use,
 * otherwise evicts cached blocks by the slot policy's order until the blocks fit, moves the
 * survivors out of the removed slots and frees those slots' memory before it returns.
 *
 * <p><b>Invariants</b> (checked by {@link #checkInvariants()}): a slot is free or holds exactly one
 * block; a block's refcount equals the number of running sequences holding it; a block with a
 * transfer in flight is never evicted and its slot never reused; every keyed block is in the key map
 * and the slot policy exactly once; a block the store drops is forgotten exactly once; after
 * {@link #close()} the manager holds nothing in the store.
 */
public final class KvBlockManager implements AutoCloseable {
    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);
    private static final int CACHED_OUTCOMES = 64; // complete outcomes of loads of fewer blocks are shared
    @SuppressWarnings("unchecked")
    private static final CompletableFuture<LoadOutcome>[] COMPLETE = new CompletableFuture[CACHED_OUTCOMES];

    static {
        for (int n = 0; n < CACHED_OUTCOMES; n++) {
            COMPLETE[n] = CompletableFuture.completedFuture(new LoadOutcome(n, n, List.of(), 0));
        }
    }

    private final KvLayout layout;
    private final PrefixHasher hasher;
    private final TieredStore store; // null: DEVICE only
    private final SharedBlockStore shared; // null: no shared pool
    private final KvManagerConfig config;
    private final ObjectKey root; // the hasher's root: parent of every block 0
    private final int blockTokens; // tokens per block
    private final long blockBytes; // bytes of one block's contiguous form
    private final TokenSelection allTokens;
    private final List<Tier> storeTiers; // the store's chain, top first

    private final DeviceSlots deviceSlots; // the slots, their key table and eviction policy
    private final Set<ObjectKey> offloaded = new HashSet<>(); // keys this manager put into the store, not dropped since
    private final OpenSequences sequences = new OpenSequences(); // running or preempted
    private long nextSequenceId;
    private int pendingEvictions; // blocks with evictAfterOffload set

    private final KvAsync async; // the I/O thread, work in flight, completions for the scheduler thread
    private final KvLoadPipeline loads; // reads blocks into slots
    private final KvOffloadPipeline offloads; // copies blocks to the store and the shared pool
    private final KvCounters counters = new KvCounters();
    private final KvLoadGate gate; // load or recompute: measured costs of both
    private boolean closed;

    private KvBlockManager(Builder b) {
        this.layout = b.layout;
        this.hasher = b.hasher;
        this.store = b.store;
        this.shared = b.shared;
        this.config = b.config.conclude();
        this.root = hasher.root();
        this.blockTokens = hasher.blockTokens();
        this.allTokens = TokenSelection.all(blockTokens);
        this.blockBytes = layout.blockBytes(allTokens);
        this.gate = new KvLoadGate(blockTokens);
        this.storeTiers = store == null ? List.of() : store.tiers();
        this.deviceSlots = new DeviceSlots(layout.slots(), config.newDevicePolicy(), root);
        this.async = new KvAsync();
        this.loads = new KvLoadPipeline(layout, store, b.transfers, shared, config, async, this::applyLoad);
        this.offloads = new KvOffloadPipeline(layout, store, shared, async, config.offloadDurability(), this::applyOffload);
        if (b.relay != null) {
            b.relay.attach(key -> async.post(() -> forgetDropped(key)));
        }
    }

    /**
     * A builder for a manager over the engine's KV {@code layout}, hashing with {@code hasher}
     * (whose block size must be the layout's).
     */
    public static Builder builder(KvLayout layout, PrefixHasher hasher) {
        return new Builder(layout, hasher);
    }

    // ------------------------------------------------------------------ sequences

    /** A new, empty running sequence. */
    public KvSequence newSequence() {
        poll();
        KvSequence s = new KvSequence(this, nextSequenceId++, root);
        sequences.add(s);
        return s;
    }

    // ------------------------------------------------------------------ match

    /**
     * The cached prefix of {@code tokens[0, length)}: the leading full blocks whose KV is in a
     * DEVICE slot, a store tier or the shared pool (after the local tiers), each with its location.
     * Changes nothing but the hit counters.
     */
    public PrefixMatch match(int[] tokens, int length) {
        poll();
        checkOpen();
        return matchKeys(hasher.chain(tokens, length), length, null);
    }

    /** Matches {@code keys}; a block not found locally but claimable in {@code staged} (may be null) counts as on HOST. */
    private PrefixMatch matchKeys(ObjectKey[] keys, int tokensLength, StagedBlock[] staged) {
        counters.inc(KvCounters.LOOKUPS);
        BlockLocation[] where = new BlockLocation[keys.length];
        int n = 0;
        while (n < keys.length) {
            BlockLocation l = locateLocally(keys[n]);
            if (l == null && staged != null && staged[n] != null && staged[n].claimable()) {
                l = BlockLocation.HOST; // its bytes are in a HOST staging buffer
            }
            if (l == null) {
                break;
            }
            where[n++] = l;
        }
        if (shared != null && n < keys.length) {
            int more = shared.matchPrefix(keys, n, keys.length - n);
            for (int i = 0; i < more; i++) {
                where[n++] = BlockLocation.SHARED;
            }
        }
        for (int i = 0; i < n; i++) {
            counters.hit(where[i]);
            if (config.diskAdmission() != null) {
                config.diskAdmission().recordUse(keys[i]);
            }
            if (shared != null) {
                shared.used(keys[i]);
            }
        }
        counters.add(KvCounters.MISSES, keys.length - n);
        BlockLocation[] matched = n == keys.length ? where : java.util.Arrays.copyOf(where, n);
        return new PrefixMatch(keys, matched, tokensLength);
    }

    /** Where {@code key} is in this process now (DEVICE, or the top store copy), or null. */
    private BlockLocation locateLocally(ObjectKey key) {
        if (deviceSlots.contains(key)) {
            return BlockLocation.DEVICE;
        }
        if (store != null) {
            int mask = store.tierMask(key);
            if (mask != 0) {
                return BlockLocation.of(storeTiers.get(Integer.numberOfTrailingZeros(mask)).kind());
            }
        }
        return null;
    }

    /**
     * The part of {@code match} worth loading: its leading blocks up to where loading them stops
     * beating recomputing them, by the load times this manager measured per location and the
     * prefill speed the engine reported ({@link #recordPrefill}); see {@link KvLoadGate}. The
     * blocks left out are counted ({@link KvManagerStats#recomputedInstead}) and are for the
     * engine to recompute. With {@link KvManagerConfig#recomputeWhenFaster} off, or before the
     * prefill speed is known, the match itself.
     */
    public PrefixMatch worthLoading(PrefixMatch match) {
        checkOpen();
        if (!config.recomputeWhenFaster() || match.blocks() == 0) {
            return match;
        }
        int k = gate.blocksWorthLoading(match, System.nanoTime());
        if (k == match.blocks()) {
            return match;
        }
        for (int i = k; i < match.blocks(); i++) {
            counters.recomputedInstead(match.location(i));
        }
        return match.prefix(k);
    }

    /**
     * One prefill of the engine: {@code tokens} tokens computed in {@code nanos} ns of wall time,
     * the cost {@link #worthLoading} weighs loads against. Prefills of less than a block are not
     * counted. Scheduler thread.
     */
    public void recordPrefill(long tokens, long nanos) {
        gate.recordPrefill(tokens, nanos);
    }

    // ------------------------------------------------------------------ load

    /**
     * Brings the matched blocks into DEVICE slots of {@code seq}: blocks already in slots are
     * shared by reference, the others get a slot (evicting cached blocks if needed) and are read
     * from where they are, asynchronously. The sequence's block table lists them at once (its
     * tokens are the loaded blocks' tokens); the engine must not read a block before the returned
     * future completes. {@code seq} must hold no blocks but a prefix of the match loaded before: a
     * load cut short for lack of slots ({@link LoadOutcome#slotsShort()}) is continued by calling
     * load again with the same match.
     *
     * @return completes when every block has landed or failed; a failed block and every block after
     *         it leave the sequence (from the next call on) and are for the engine to recompute
     */
    public CompletableFuture<LoadOutcome> load(PrefixMatch match, KvSequence seq) {
        poll();
        checkOpen();
        checkRunning(seq);
        checkLoadable(seq, match);
        return loadInto(match, seq, null);
    }

    /**
     * {@link #load}, taking block {@code i} from {@code staged[i]} (when not null and not refused)
     * instead of reading it from where it is; cancels every staged block it does not take.
     */
    private CompletableFuture<LoadOutcome> loadInto(PrefixMatch match, KvSequence seq, StagedBlock[] staged) {
        int n = match.blocks();
        long startNanos = 0; // when the first read started
        KvLoadGate.Batch[] batches = null; // [location] the reads started here, timed together; made at the first read
        BlockLocation[] sources = new BlockLocation[n]; // [block] where it is read from
        BlockLoadFailure early = null; // a block gone between match and load
        boolean async = false; // some block is still loading
        for (int i = 0; i < seq.blocks.size(); i++) {
            async |= seq.blocks.get(i).loading;
            sources[i] = BlockLocation.DEVICE;
        }
        int slotsShort = 0;
        for (int i = seq.blocks.size(); i < n; i++) {
            ObjectKey key = match.key(i);
            DeviceBlock b = deviceSlots.get(key);
            BlockLocation source = BlockLocation.DEVICE;
            if (b != null) {
                hold(b);
            } else {
                StagedBlock st = staged != null && i < staged.length ? staged[i] : null;
                BlockLocation stored = currentLocation(match, i); // before the block below registers its key on DEVICE
                source = stored == null && st != null && st.claimable() ? BlockLocation.HOST : stored;
                if (source == null) {
                    early = new BlockLoadFailure(i, key, match.location(i), "block " + key + " (block " + i
                            + ") left every tier between match and load", null);
                    counters.inc(KvCounters.FAILED_LOADS);
                    break;
                }
                int slot = takeSlot();
                if (slot < 0) {
                    slotsShort = n - i;
                    break;
                }
                b = newLoadingBlock(slot, key, i == 0 ? root : match.key(i - 1));
                if (st == null || !claimStaged(st, b)) {
                    BlockLocation from = stored == null ? match.location(i) : stored; // not stored: fails as a missing block
                    if (batches == null) {
                        batches = new KvLoadGate.Batch[BlockLocation.values().length];
                        startNanos = System.nanoTime();
                    }
                    KvLoadGate.Batch batch = batches[from.ordinal()];
                    if (batch == null) {
                        batch = batches[from.ordinal()] = new KvLoadGate.Batch(from, startNanos);
                    }
                    b.loadBatch = batch;
                    gate.start(batch);
                    startLoad(b, from, KvLink.RELOAD);
                }
                if (st != null) {
                    staged[i] = null; // claimed, or refused and nothing to give back
                }
            }
            seq.blocks.add(b);
            async |= b.loading;
            sources[i] = source;
        }
        cancelStaged(staged);
        int acquired = seq.blocks.size();
        seq.committed = acquired;
        seq.tokens = acquired * blockTokens;
        seq.lastKey = acquired == 0 ? root : match.key(acquired - 1);
        List<BlockLoadFailure> failures = early == null ? List.of() : List.of(early);
        if (!async) {
            if (acquired == n && acquired < CACHED_OUTCOMES) {
                return COMPLETE[n];
            }
            return CompletableFuture.completedFuture(new LoadOutcome(n, acquired, failures, slotsShort));
        }
        List<CompletableFuture<Void>> ready = new ArrayList<>(acquired);
        for (DeviceBlock b : seq.blocks) {
            ready.add(b.loading ? b.ready : DONE);
        }
        return outcomeOf(match, n, ready, sources, failures, slotsShort);
    }

    private static CompletableFuture<LoadOutcome> outcomeOf(PrefixMatch match, int requested,
            List<CompletableFuture<Void>> ready, BlockLocation[] sources, List<BlockLoadFailure> early, int slotsShort) {
        CompletableFuture<?>[] all = ready.toArray(new CompletableFuture<?>[0]);
        return CompletableFuture.allOf(all).handle((ignored, error) -> {
            List<BlockLoadFailure> failures = new ArrayList<>();
            int loaded = -1;
            for (int i = 0; i < all.length; i++) {
                if (all[i].isCompletedExceptionally()) {
                    Throwable t = causeOf(all[i]);
                    failures.add(new BlockLoadFailure(i, match.key(i), sources[i], t.getMessage(), t.getCause()));
                    if (loaded < 0) {
                        loaded = i;
                    }
                }
            }
            if (loaded < 0) {
                loaded = all.length;
            }
            failures.addAll(early);
            return new LoadOutcome(requested, loaded, failures, slotsShort);
        });
    }

    private static Throwable causeOf(CompletableFuture<?> f) {
        try {
            f.join();
            return null;
        } catch (CompletionException e) {
            return e.getCause() == null ? e : e.getCause();
        } catch (java.util.concurrent.CancellationException e) {
            return e;
        }
    }

    /** Where matched block {@code i} can be read from now, or null if it is gone. */
    private BlockLocation currentLocation(PrefixMatch match, int i) {
        BlockLocation l = locateLocally(match.key(i));
        if (l == null && match.location(i) == BlockLocation.SHARED && shared != null) {
            return BlockLocation.SHARED; // the read will tell if it is still published
        }
        return l;
    }

    /**
     * Starts a progressive load of {@code match} into {@code seq} (which must hold no blocks yet):
     * blocks are loaded in order as the engine {@link #require}s them, each block {@code j} started
     * once the engine requires a block at or past {@code j - lookahead}, the lookahead being that of
     * the tier the block is in ({@link KvManagerConfig#hostLookahead()},
     * {@link KvManagerConfig#diskLookahead()}). Block 0 and its lookahead start now.
     *
     * @return the number of blocks started (or shared from DEVICE) so far
     */
    public int loadProgressively(PrefixMatch match, KvSequence seq) {
        poll();
        checkOpen();
        checkRunning(seq);
        checkEmpty(seq);
        seq.pending = match;
        seq.pendingNext = 0;
        seq.pendingFailedAt = -1;
        startPending(seq, 0);
        return seq.blocks.size();
    }

    /**
     * Says the engine is about to use block {@code blockIndex} of a progressively loaded sequence,
     * starts the loads its lookahead covers, and tells whether the block is usable. The first call
     * for a block counts a prefetch hit (the prefetch had landed) or a late prefetch (still in
     * flight).
     */
    public BlockReadiness require(KvSequence seq, int blockIndex) {
        poll();
        checkOpen();
        checkRunning(seq);
        if (blockIndex < 0) {
            throw new IllegalArgumentException("block index must not be negative, got " + blockIndex);
        }
        if (seq.pending != null) {
            startPending(seq, blockIndex);
        }
        if (blockIndex >= seq.blocks.size()) {
            return seq.pending != null && blockIndex < seq.pending.blocks() ? BlockReadiness.IN_FLIGHT
                    : BlockReadiness.MISSING;
        }
        DeviceBlock b = seq.blocks.get(blockIndex);
        if (!b.required) {
            b.required = true;
            if (b.byPrefetch) {
                counters.inc(b.loading ? KvCounters.PREFETCH_LATE : KvCounters.PREFETCH_HITS);
            }
        }
        return b.loading ? BlockReadiness.IN_FLIGHT : BlockReadiness.READY;
    }

    /** Starts the pending blocks of a progressive load that the lookahead from {@code need} covers. */
    private void startPending(KvSequence seq, int need) {
        PrefixMatch m = seq.pending;
        while (seq.pendingNext < m.blocks()) {
            int j = seq.pendingNext;
            ObjectKey key = m.key(j);
            DeviceBlock b = deviceSlots.get(key);
            if (b != null) {
                hold(b);
            } else {
                BlockLocation source = currentLocation(m, j);
                if (source == null) {
                    counters.inc(KvCounters.FAILED_LOADS);
                    seq.pendingFailedAt = j;
                    seq.pending = null;
                    return;
                }
                int ahead = source == BlockLocation.DISK ? config.diskLookahead() : config.hostLookahead();
                if ((long) j > (long) need + ahead) {
                    return;
                }
                int slot = takeSlot();
                if (slot < 0) {
                    return;
                }
                b = newLoadingBlock(slot, key, j == 0 ? root : m.key(j - 1));
                b.byPrefetch = j > need;
                startLoad(b, source, b.byPrefetch ? KvLink.PREFETCH : KvLink.RELOAD);
            }
            seq.blocks.add(b);
            seq.pendingNext++;
            seq.committed = seq.blocks.size();
            seq.tokens = seq.committed * blockTokens;
            seq.lastKey = key;
        }
        seq.pending = null;
    }

    private DeviceBlock newLoadingBlock(int slot, ObjectKey key, ObjectKey parent) {
        DeviceBlock b = deviceSlots.newBlock(slot);
        b.loading = true;
        b.ready = new CompletableFuture<>();
        b.refCount = 1;
        b.priority = PriorityClass.ACTIVE;
        deviceSlots.register(b, key, parent);
        return b;
    }

    /** Starts reading {@code b}'s bytes from {@code source} into its slot. */
    private void startLoad(DeviceBlock b, BlockLocation source, KvLink link) {
        b.inFlight++;
        loads.start(b, source, link);
    }

    /** On the scheduler thread: the load of {@code b} finished. */
    private void applyLoad(DeviceBlock b, KvLoadException failure, boolean forgetStoreCopy, KvLink link, boolean twoStage,
            long endNanos) {
        b.inFlight--;
        if (b.loadBatch != null) {
            gate.landed(b.loadBatch, endNanos, failure == null);
            b.loadBatch = null;
        }
        if (failure == null) {
            landed(b, link, twoStage);
            return;
        }
        b.loading = false;
        counters.inc(KvCounters.FAILED_LOADS);
        if (forgetStoreCopy) {
            offloaded.remove(b.key);
        }
        deviceSlots.unregister(b);
        for (KvSequence s = sequences.first(); s != null; s = s.next) {
            if (s.state != KvSequence.State.RUNNING) {
                continue;
            }
            int at = s.blocks.indexOf(b);
            if (at >= 0) {
                truncate(s, at);
                if (s.pending != null || s.pendingNext > at) {
                    s.pending = null;
                    s.pendingFailedAt = at;
                }
            }
        }
        maybeFree(b);
    }

    /** Block {@code b}'s bytes are in its slot, brought over {@code link} (and from DISK through a HOST buffer when {@code twoStage}). */
    private void landed(DeviceBlock b, KvLink link, boolean twoStage) {
        b.loading = false;
        counters.link(link, blockBytes);
        if (twoStage) {
            counters.link(KvLink.DISK_TO_HOST, blockBytes);
        }
        deviceSlots.sync(b);
    }

    /** Drops blocks {@code [from, end)} from {@code seq}'s table. */
    private void truncate(KvSequence seq, int from) {
        for (int i = seq.blocks.size() - 1; i >= from; i--) {
            unhold(seq.blocks.get(i), PriorityClass.RECENT);
        }
        seq.blocks.subList(from, seq.blocks.size()).clear();
        seq.committed = Math.min(seq.committed, from);
        seq.tokens = Math.min(seq.tokens, from * blockTokens);
        seq.lastKey = seq.committed == 0 ? root : seq.blocks.get(seq.committed - 1).key;
    }

    // ------------------------------------------------------------------ allocate and commit

    /**
     * Gives {@code seq} slots for {@code newTokens} more tokens, evicting cached blocks (never one
     * that is ACTIVE, held or in flight; by the slot policy's order) when no slot is free.
     *
     * <p>Completions are applied first, and a failed load may have shortened {@code seq} since the
     * caller last read it; a caller that knows the length it wants should use
     * {@link #allocateTo}, which counts from the sequence as it is after those completions.
     *
     * @throws IllegalStateException if a progressive load of the sequence has blocks not started
     */
    public AllocationStatus allocate(KvSequence seq, int newTokens) {
        poll();
        checkOpen();
        checkRunning(seq);
        if (newTokens < 0) {
            throw new IllegalArgumentException("token count must not be negative, got " + newTokens);
        }
        return allocateSlots(seq, (long) seq.tokens + newTokens);
    }

    /**
     * Gives {@code seq} slots for its first {@code totalTokens} tokens, allocating only what it
     * lacks after the pending completions are applied (a block whose load failed is counted as
     * missing, so its slot is taken again here). This is the form an engine step uses: it
     * cannot under-allocate when a load failed since the engine last looked at the sequence.
     *
     * @throws IllegalArgumentException if {@code totalTokens} is below the tokens the sequence
     *                                  holds after the completions
     * @throws IllegalStateException    if a progressive load of the sequence has blocks not started
     */
    public AllocationStatus allocateTo(KvSequence seq, int totalTokens) {
        poll();
        checkOpen();
        checkRunning(seq);
        if (totalTokens < seq.tokens) {
            throw new IllegalArgumentException("sequence " + seq.id + " holds " + seq.tokens + " tokens; cannot allocate to "
                    + totalTokens);
        }
        return allocateSlots(seq, totalTokens);
    }

    private AllocationStatus allocateSlots(KvSequence seq, long needTokens) {
        if (seq.pending != null) {
            throw new IllegalStateException("sequence " + seq.id + " is still loading progressively; require its blocks first");
        }
        long needBlocks = (needTokens + blockTokens - 1) / blockTokens;
        while (seq.blocks.size() < needBlocks) {
            int slot = takeSlot();
            if (slot < 0) {
                return aSlotFreesWhenTransfersLand() ? AllocationStatus.WAIT : AllocationStatus.NO_SPACE;
            }
            DeviceBlock b = deviceSlots.newBlock(slot);
            b.refCount = 1;
            seq.blocks.add(b);
        }
        seq.tokens = (int) needTokens;
        return AllocationStatus.ALLOCATED;
    }

    /**
     * Commits every full block of {@code seq} among {@code tokens[0, length)} not committed yet:
     * each gets its chained key and becomes shareable. A block whose key is already resident is
     * deduplicated: the sequence shares the resident block and the duplicate's slot is freed, so
     * the engine must re-read the block table ({@link KvSequence#slot}) after a commit. With
     * write-through the new blocks' offload starts now; with a shared pool in
     * {@link SharedPublishMode#AT_COMMIT} mode, their publication too.
     *
     * @return blocks committed by this call
     * @throws IllegalArgumentException if the full blocks exceed the sequence's slots
     */
    public int commit(KvSequence seq, int[] tokens, int length) {
        poll();
        checkCommittable(seq);
        if (length < 0 || length > tokens.length) {
            throw new IllegalArgumentException("length " + length + " is outside a token array of " + tokens.length);
        }
        int full = checkFullBlocks(seq, length / blockTokens);
        int done = 0;
        for (int i = seq.committed; i < full; i++) {
            commitBlock(seq, i, hasher.next(seq.lastKey, tokens, i * blockTokens));
            done++;
        }
        return done;
    }

    /**
     * Commits the first {@code blocks} blocks of {@code seq} under the keys {@code match} computed
     * for them (its {@link PrefixMatch#fullBlocks()} keys, matched or not), saving the hashing
     * that {@link #commit(KvSequence, int[], int)} does: for an engine that matched its prompt,
     * loaded the cached prefix and computed the rest from the same tokens. Otherwise the same as
     * that method.
     *
     * @return blocks committed by this call
     * @throws IllegalArgumentException if {@code blocks} exceeds the match's full blocks or the
     *                                  sequence's slots, or the sequence's committed prefix is not
     *                                  the match's
     */
    public int commit(KvSequence seq, PrefixMatch match, int blocks) {
        poll();
        checkCommittable(seq);
        if (blocks < 0 || blocks > match.fullBlocks()) {
            throw new IllegalArgumentException("commit of " + blocks + " blocks, but the match keys " + match.fullBlocks());
        }
        int full = checkFullBlocks(seq, blocks);
        ObjectKey expected = seq.committed == 0 ? root : match.key(seq.committed - 1);
        if (full > seq.committed && !expected.equals(seq.lastKey)) {
            throw new IllegalArgumentException("sequence " + seq.id + " ends in block " + seq.lastKey + " but the match has "
                    + expected + " at block " + (seq.committed - 1) + ": it keys other tokens");
        }
        int done = 0;
        for (int i = seq.committed; i < full; i++) {
            commitBlock(seq, i, match.key(i));
            done++;
        }
        return done;
    }

    private void checkCommittable(KvSequence seq) {
        checkOpen();
        checkRunning(seq);
        if (seq.pending != null) {
            throw new IllegalStateException("sequence " + seq.id + " is still loading progressively; require its blocks first");
        }
    }

    private int checkFullBlocks(KvSequence seq, int full) {
        if (full > seq.blocks.size()) {
            throw new IllegalArgumentException("commit of " + full + " full blocks, but sequence " + seq.id + " has slots for "
                    + seq.blocks.size() + " blocks");
        }
        return full;
    }

    /** Commits block {@code i} of {@code seq} (the next uncommitted one) under {@code key}. */
    private void commitBlock(KvSequence seq, int i, ObjectKey key) {
        DeviceBlock b = seq.blocks.get(i);
        ObjectKey parent = seq.lastKey;
        if (shared != null) {
            shared.used(key); // before any publish, so that a store admitting by uses sees this one
        }
        DeviceBlock existing = deviceSlots.putIfAbsent(key, b);
        if (existing == null) {
            deviceSlots.registerMapped(b, key, parent);
            counters.inc(KvCounters.COMMITS);
            boolean toStore = config.offload() == OffloadMode.WRITE_THROUGH && store != null && !inStore(key);
            boolean publishNow = shared != null && config.sharedPublish() == SharedPublishMode.AT_COMMIT;
            if (toStore || publishNow) {
                startOffload(b, false, toStore, publishNow);
            }
        } else if (!existing.loading) {
            hold(existing);
            seq.blocks.set(i, existing);
            b.refCount = 0;
            deviceSlots.free(b);
            counters.inc(KvCounters.DEDUPS);
        } else {
            b.key = key; // its twin is still loading: keep this one private to the sequence
            b.parentKey = parent;
            b.keyHash = key.hash64();
        }
        KvDiskAdmission admission = config.diskAdmission();
        if (admission != null) {
            admission.recordUse(key);
        }
        seq.lastKey = key;
        seq.committed = i + 1;
    }

    private boolean inStore(ObjectKey key) {
        return offloaded.contains(key) || store.contains(key);
    }

    // ------------------------------------------------------------------ release, preempt, resume

    /** Releases {@code seq}: its blocks stay cached as RECENT, evictable once no sequence holds them. */
    public void release(KvSequence seq) {
        release(seq, PriorityClass.RECENT);
    }

    /**
     * Releases {@code seq}; blocks no other sequence holds stay cached in class {@code cachedAs}
     * (RECENT, IDLE or EVICTABLE). Blocks still being written (not committed) are freed.
     */
    public void release(KvSequence seq, PriorityClass cachedAs) {
        poll();
        checkOpen();
        if (cachedAs == PriorityClass.ACTIVE) {
            throw new IllegalArgumentException("released blocks cannot stay ACTIVE");
        }
        if (seq.state == KvSequence.State.RELEASED) {
            throw new IllegalStateException("sequence " + seq.id + " is already released");
        }
        checkOwn(seq);
        for (int i = seq.blocks.size() - 1; i >= 0; i--) {
            unhold(seq.blocks.get(i), cachedAs);
        }
        seq.blocks.clear();
        seq.pending = null;
        seq.preemptedKeys = null;
        cancelStaged(seq.staged);
        seq.staged = null;
        seq.state = KvSequence.State.RELEASED;
        sequences.remove(seq);
    }

    /**
     * Preempts {@code seq}: its committed blocks that no other sequence holds are marked IDLE and
     * offloaded asynchronously (unless a copy is already in the store), and their slots freed once
     * the copy has landed; blocks still being written are freed now (the engine recomputes that
     * tail on resume). The sequence gives up its block table.
     */
    public void preempt(KvSequence seq) {
        poll();
        checkOpen();
        checkRunning(seq);
        ObjectKey[] keys = new ObjectKey[seq.committed];
        for (int i = 0; i < seq.committed; i++) {
            keys[i] = seq.blocks.get(i).key;
        }
        for (int i = seq.blocks.size() - 1; i >= 0; i--) {
            DeviceBlock b = seq.blocks.get(i);
            unhold(b, PriorityClass.IDLE);
            if (b.registered && b.refCount == 0 && !b.loading && !b.evictAfterOffload) {
                boolean toStore = config.offload() != OffloadMode.NONE && store != null && !inStore(b.key);
                boolean toShared = needsSharedCopy(b);
                if (toStore || toShared) {
                    if (b.inFlight == 0) {
                        startOffload(b, true, toStore, toShared);
                    } else {
                        markEvictAfterOffload(b);
                    }
                } else if (b.inFlight == 0) {
                    evictNow(b);
                } else {
                    markEvictAfterOffload(b);
                }
            }
        }
        seq.blocks.clear();
        seq.pending = null;
        seq.committed = 0;
        seq.tokens = 0;
        seq.lastKey = root;
        seq.preemptedKeys = keys;
        seq.state = KvSequence.State.PREEMPTED;
    }

    /**
     * Resumes a preempted sequence: matches its committed blocks again and loads them (as
     * {@link #load}); the tokens of its uncommitted tail are for the engine to recompute. A block
     * staged by {@link #stageForResume} and not in a slot any more is taken from its staging
     * buffer: copied into its slot now if the staging read has landed (a prefetch hit: the block is
     * usable at once), or as soon as the read lands (a late prefetch); a staged block counts as
     * found even if the store dropped its copy since. The blocks not staged are loaded from where
     * they are; staged blocks the resume does not take are given up.
     */
    public CompletableFuture<LoadOutcome> resume(KvSequence seq) {
        poll();
        checkOpen();
        checkOwn(seq);
        if (seq.state != KvSequence.State.PREEMPTED) {
            throw new IllegalStateException("sequence " + seq.id + " is " + seq.state + ", not preempted");
        }
        ObjectKey[] keys = seq.preemptedKeys;
        StagedBlock[] staged = seq.staged;
        seq.preemptedKeys = null;
        seq.staged = null;
        seq.state = KvSequence.State.RUNNING;
        return loadInto(matchKeys(keys, keys.length * blockTokens, staged), seq, staged);
    }

    /**
     * Stages the stored blocks of preempted sequence {@code seq} toward the device ahead of its
     * resume: the lookahead a scheduler gives the preempted sequence it will resume next, while
     * other sequences hold the DEVICE slots. For each committed block of the sequence that has left
     * the DEVICE slots, has a landed copy in the store and is not staged yet, in block order, a HOST
     * staging buffer is
     * borrowed and the store's top copy (HOST or DISK) read into it asynchronously: the first stage
     * of a two-stage load ({@link KvLoadPipeline}), which needs no DEVICE slot. {@link #resume} then
     * only copies staged blocks into their slots (HOST to DEVICE), counted as prefetch hits (or late
     * prefetches when a read is still in flight), and loads the rest the normal way.
     *
     * <p>Bounded: staging holds at most {@link KvManagerConfig#resumeStagingBlocks} buffers, all
     * sequences together, in HOST memory of its own (it never evicts or demotes store content);
     * when they are all held, the remaining blocks are left for the resume to load. Idempotent and
     * cheap to repeat: a scheduler may call it every step (blocks whose offload landed or that
     * were evicted since are staged by the next call). Cancel-safe: a sequence released or resumed while reads are in
     * flight gives their buffers back as they land, each exactly once; the blocks a resume takes
     * are the store's bytes either way.
     *
     * <p>Threads: the scheduler thread; never waits.
     *
     * @return blocks whose staging this call started
     * @throws IllegalStateException    if the manager is closed or the sequence is not preempted
     * @throws IllegalArgumentException if the sequence is released or not this manager's
     */
    public int stageForResume(KvSequence seq) {
        poll();
        checkOpen();
        checkOwn(seq);
        if (seq.state != KvSequence.State.PREEMPTED) {
            throw new IllegalStateException("sequence " + seq.id + " is " + seq.state + ", not preempted: only a preempted sequence"
                    + " is staged for its resume");
        }
        ObjectKey[] keys = seq.preemptedKeys;
        if (store == null || keys.length == 0) {
            return 0;
        }
        if (seq.staged == null) {
            seq.staged = new StagedBlock[keys.length];
        }
        int started = 0;
        for (int i = 0; i < keys.length; i++) {
            if (seq.staged[i] != null || !offloaded.contains(keys[i]) || deviceSlots.contains(keys[i])) {
                continue; // staged (or tried) already, no landed store copy yet, or still on DEVICE (the resume shares it)
            }
            int mask = store.tierMask(keys[i]);
            if (mask == 0) {
                continue;
            }
            java.lang.foreign.MemorySegment buffer = loads.tryBorrowResumeStaging();
            if (buffer == null) {
                break; // every staging buffer is held: the rest is loaded at resume
            }
            BlockLocation source = BlockLocation.of(storeTiers.get(Integer.numberOfTrailingZeros(mask)).kind());
            StagedBlock st = new StagedBlock(keys[i], source, buffer);
            seq.staged[i] = st;
            loads.stage(st, this::applyStaged);
            started++;
        }
        return started;
    }

    /** Buffers held now by blocks staged for a resume ({@link #stageForResume}), all sequences together. */
    public int stagedBlocks() {
        return loads.resumeStagingLent();
    }

    /** On the scheduler thread: a staging read ended. */
    private void applyStaged(StagedBlock s, boolean ok) {
        if (ok) {
            counters.link(KvLink.STAGE, blockBytes);
        } else {
            counters.inc(KvCounters.FAILED_STAGINGS);
        }
    }

    /**
     * Takes staged block {@code st} for {@code b} (a loading block in its slot): fills the slot now
     * if the read landed, else leaves the read to fill it. False if refused (the caller loads it).
     */
    private boolean claimStaged(StagedBlock st, DeviceBlock b) {
        loads.claiming();
        switch (st.claim(b)) {
            case LANDED -> {
                loads.unclaimed();
                loads.fillFromStaged(st, b);
                b.byPrefetch = true;
                b.required = true;
                counters.inc(KvCounters.PREFETCH_HITS);
                landed(b, KvLink.PREFETCH, st.source == BlockLocation.DISK);
                b.ready.complete(null);
                return true;
            }
            case IN_FLIGHT -> {
                b.inFlight++; // the read's completion lands it (applyLoad)
                b.byPrefetch = true;
                b.required = true;
                counters.inc(KvCounters.PREFETCH_LATE);
                return true;
            }
            default -> {
                loads.unclaimed();
                return false;
            }
        }
    }

    /** Gives up every staged block left in {@code staged} (buffers of landed reads back now, others as they land). */
    private void cancelStaged(StagedBlock[] staged) {
        if (staged == null) {
            return;
        }
        for (int i = 0; i < staged.length; i++) {
            StagedBlock st = staged[i];
            if (st != null && st.cancel()) {
                loads.giveBackStaged(st);
            }
            staged[i] = null;
        }
    }

    // ------------------------------------------------------------------ slots and eviction

    /** A free slot, evicting if needed; -1 if none can be had now. */
    private int takeSlot() {
        while (deviceSlots.freeCount() == 0) {
            PolicyNode node = deviceSlots.victim();
            if (node == null) {
                return -1;
            }
            DeviceBlock b = (DeviceBlock) node;
            if (!b.evictable()) {
                throw new IllegalStateException("slot policy '" + deviceSlots.policyName() + "' offered a block that is not evictable: " + b);
            }
            boolean toStore = config.offload() == OffloadMode.WRITE_BACK && store != null && !inStore(b.key);
            boolean toShared = needsSharedCopy(b);
            if (toStore || toShared) {
                if (pendingEvictions >= config.maxPendingEvictions()) {
                    return -1;
                }
                startOffload(b, true, toStore, toShared);
            } else {
                evictNow(b);
            }
        }
        return deviceSlots.popFree();
    }

    /**
     * True if a transfer in flight will give a slot back without anyone being preempted: a block
     * waits for its copy to land before it is evicted, or a block no sequence holds is still being
     * copied (a write-through offload or a publish begun at commit, a load whose sequence went
     * away), after which it is evictable or freed. Otherwise every slot is held by a sequence and
     * only preempting one frees any. Scans the slots: only an allocation that found none free
     * and nothing evictable asks.
     */
    private boolean aSlotFreesWhenTransfersLand() {
        if (pendingEvictions > 0) {
            return true;
        }
        for (int s = 0; s < deviceSlots.count(); s++) {
            DeviceBlock b = deviceSlots.owner(s);
            if (b != null && b.refCount == 0 && b.inFlight > 0) {
                return true;
            }
        }
        return false;
    }

    private boolean needsSharedCopy(DeviceBlock b) {
        return shared != null && config.sharedPublish() == SharedPublishMode.ON_EVICTION && !b.published;
    }

    private void markEvictAfterOffload(DeviceBlock b) {
        if (!b.evictAfterOffload) {
            b.evictAfterOffload = true;
            pendingEvictions++;
        }
    }

    /** Removes an evictable block from its slot. */
    private void evictNow(DeviceBlock b) {
        counters.eviction(b.priority);
        deviceSlots.unregister(b);
        deviceSlots.free(b);
    }

    /** Frees the slot of a block no one needs any more (unregistered, unreferenced, idle). */
    private void maybeFree(DeviceBlock b) {
        if (!b.registered && b.refCount == 0 && b.inFlight == 0 && deviceSlots.occupies(b)) {
            if (b.evictAfterOffload) {
                b.evictAfterOffload = false;
                pendingEvictions--;
            }
            deviceSlots.free(b);
        }
    }

    private void hold(DeviceBlock b) {
        b.reach++;
        if (b.refCount++ == 0) {
            if (b.evictAfterOffload) {
                b.evictAfterOffload = false; // wanted again: keep it when the copy lands
                pendingEvictions--;
            }
            deviceSlots.setPriority(b, PriorityClass.ACTIVE);
        } else {
            deviceSlots.access(b);
        }
    }

    private void unhold(DeviceBlock b, PriorityClass cachedAs) {
        if (b.refCount <= 0) {
            throw new IllegalStateException("block " + b + " is not held");
        }
        if (--b.refCount == 0) {
            if (b.registered) {
                deviceSlots.setPriority(b, cachedAs);
            } else {
                maybeFree(b);
            }
        }
    }

    // ------------------------------------------------------------------ resize

    /**
     * The DEVICE block slots as one side of a live memory split ({@link ResizablePool}; units are
     * slots, a unit's bytes are one slot's allocation). Requires a {@link ResizableKvLayout}.
     *
     * @throws IllegalStateException    if the layout cannot be resized
     * @throws IllegalArgumentException if the bounds are not {@code 1 <= minSlots <= maxSlots}
     */
    public KvSlotPool slotPool(int minSlots, int maxSlots) {
        resizableLayout();
        return new KvSlotPool(this, minSlots, maxSlots);
    }

    /** DEVICE block slots now (any thread). */
    public int slotCount() {
        return deviceSlots.count();
    }

    private ResizableKvLayout resizableLayout() {
        if (!(layout instanceof ResizableKvLayout r)) {
            throw new IllegalStateException("KV layout " + layout + " cannot be resized: use a ResizableKvLayout such as "
                    + "TierSlotKvLayout");
        }
        return r;
    }

    /**
     * Resizes the DEVICE slots to {@code slots}, at a drained barrier (scheduler thread; waits up to
     * a minute for this manager's transfers in flight). A grow allocates the new slots from the
     * layout's memory; if that refuses, nothing changes. A shrink is refused (nothing changes) if a
     * slot to be removed holds a block a sequence uses; otherwise cached blocks leave by the slot
     * policy's order (offloaded or published first, as an eviction would) until the blocks fit in
     * {@code slots}, the cached blocks of the removed slots move into free surviving slots (bytes
     * copied), and the removed slots' memory is released before this returns.
     *
     * @return true if the manager now has {@code slots} slots; false if refused (nothing changed)
     * @throws IllegalArgumentException if {@code slots} is not positive
     * @throws IllegalStateException    if the layout cannot be resized
     */
    public boolean resizeSlots(int slots) {
        poll();
        checkOpen();
        ResizableKvLayout rl = resizableLayout();
        if (slots < 1) {
            throw new IllegalArgumentException("the KV slots cannot shrink below 1, asked for " + slots);
        }
        if (!awaitIdle(60, TimeUnit.SECONDS)) {
            return false;
        }
        int current = deviceSlots.count();
        if (slots == current) {
            return true;
        }
        return slots > current ? growSlots(rl, slots) : shrinkSlots(rl, slots);
    }

    private boolean growSlots(ResizableKvLayout rl, int slots) {
        if (!rl.growTo(slots)) {
            return false;
        }
        deviceSlots.grow(slots);
        return true;
    }

    /** Evicts cached blocks by the slot policy until at most {@code slots} slots hold blocks. Waits. */
    private void makeRoomFor(int slots) {
        while (deviceSlots.occupied() > slots) {
            while (deviceSlots.occupied() - pendingEvictions > slots) { // a pending eviction frees its slot when its copy lands
                PolicyNode node = deviceSlots.victim();
                if (node == null) {
                    if (async.idle()) {
                        throw new IllegalStateException("shrinking the KV slots to " + slots + ": " + deviceSlots.occupied()
                                + " blocks are in slots but the slot policy offers no victim");
                    }
                    awaitIdle(60, TimeUnit.SECONDS); // write-back evictions free their slots as their copies land
                    continue;
                }
                DeviceBlock b = (DeviceBlock) node;
                if (!b.evictable()) {
                    throw new IllegalStateException("slot policy '" + deviceSlots.policyName() + "' offered a block that is not evictable: " + b);
                }
                boolean toStore = config.offload() != OffloadMode.NONE && store != null && !inStore(b.key);
                boolean toShared = needsSharedCopy(b);
                if (toStore || toShared) {
                    startOffload(b, true, toStore, toShared);
                } else {
                    evictNow(b);
                }
            }
            if (!awaitIdle(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("shrinking the KV slots to " + slots + ": offloads still in flight after a minute");
            }
        }
    }

    private boolean shrinkSlots(ResizableKvLayout rl, int slots) {
        for (int s = slots; s < deviceSlots.count(); s++) {
            DeviceBlock b = deviceSlots.owner(s);
            if (b != null && (b.refCount > 0 || b.inFlight > 0 || b.loading)) {
                return false; // a sequence uses a block in a slot that would go
            }
        }
        // every block held by a sequence is in a surviving slot, so the cached ones can make room
        makeRoomFor(slots);
        counters.add(KvCounters.SLOT_MOVES, deviceSlots.compact(slots, rl));
        return true;
    }

    // ------------------------------------------------------------------ offload

    /** Starts copying {@code b} to the store and/or the shared pool; optionally frees it once landed. */
    private void startOffload(DeviceBlock b, boolean evictAfter, boolean toStore, boolean toShared) {
        b.inFlight++;
        if (evictAfter) {
            markEvictAfterOffload(b);
        }
        deviceSlots.sync(b);
        offloads.start(b, toStore, toShared);
    }

    /** On the scheduler thread: an offload of {@code b} finished. */
    private void applyOffload(DeviceBlock b, PutStatus put, SharedBlockStore.PublishStatus pub, RuntimeException error) {
        b.inFlight--;
        if (put == PutStatus.STORED || put == PutStatus.ALREADY_PRESENT) {
            offloaded.add(b.key);
            if (put == PutStatus.STORED) {
                counters.link(KvLink.OFFLOAD, blockBytes);
            }
        } else if (put != null || error != null) {
            counters.inc(KvCounters.OFFLOAD_REFUSED);
        }
        if (pub == SharedBlockStore.PublishStatus.PUBLISHED || pub == SharedBlockStore.PublishStatus.EXISTS) {
            b.published = true;
            if (pub == SharedBlockStore.PublishStatus.PUBLISHED) {
                counters.link(KvLink.SHARED_PUBLISH, blockBytes);
            }
        }
        if (b.evictAfterOffload && b.inFlight == 0) {
            b.evictAfterOffload = false;
            pendingEvictions--;
            if (b.registered && b.refCount == 0 && !b.loading) {
                evictNow(b);
                return;
            }
        }
        deviceSlots.sync(b);
        maybeFree(b);
    }

    /** On the scheduler thread: the store dropped {@code key}. */
    private void forgetDropped(ObjectKey key) {
        if (offloaded.remove(key)) {
            counters.inc(KvCounters.DROPS);
        } else {
            counters.inc(KvCounters.UNEXPECTED_DROPS);
        }
    }

    // ------------------------------------------------------------------ completions, waiting, stats

    /**
     * Applies the transfer completions and store drops handed over since the last call (every
     * public method does this first). Never waits.
     *
     * @return completions applied
     */
    public int poll() {
        return async.poll();
    }

    /**
     * True when no transfer or store task of this manager is in flight and no completion waits to
     * be applied by {@link #poll()}. Never waits.
     */
    public boolean transfersIdle() {
        return async.idle();
    }

    /**
     * Waits until one transfer or store task of this manager ends (its completion queued),
     * {@code nanos} pass, or {@code enough} is true (looked at again after each
     * {@link #wakeTransferWait}), then applies the queued completions, as {@link #poll} does;
     * returns at once when nothing is in flight or a completion is queued already. For a scheduler
     * whose step could do nothing but wait for slots ({@link AllocationStatus#WAIT}): it parks
     * instead of stepping again at once, and a new request ends the wait. Scheduler thread only.
     *
     * @return completions applied
     */
    public int awaitTransfer(long nanos, BooleanSupplier enough) {
        return async.awaitCompletion(nanos, enough);
    }

    /** Has a wait in {@link #awaitTransfer} look at its condition again now. Any thread. */
    public void wakeTransferWait() {
        async.wake();
    }

    /**
     * Waits until no transfer or store task of this manager is in flight, applying completions as
     * they arrive. Waits: for tests, shutdown and barriers, not for the scheduling loop.
     *
     * @return false if the timeout passed first
     */
    public boolean awaitIdle(long timeout, TimeUnit unit) {
        return async.awaitIdle(timeout, unit);
    }

    /** Counters and gauges now. */
    public KvManagerStats stats() {
        double[] loadSeconds = new double[BlockLocation.values().length];
        for (BlockLocation l : BlockLocation.values()) {
            loadSeconds[l.ordinal()] = gate.secondsPerBlock(l);
        }
        return new KvManagerStats(counters.snapshot(), deviceSlots.count(), deviceSlots.freeCount(), deviceSlots.keyed(), sequences.size(),
                deviceSlots.policyName(), loadSeconds, gate.recomputeSecondsPerBlock());
    }

    /** The engine KV layout the slots live in. */
    public KvLayout layout() {
        return layout;
    }

    /** The hasher that keys the blocks. */
    public PrefixHasher hasher() {
        return hasher;
    }

    /** Whether {@link #worthLoading} leaves blocks slower to load than to recompute to the engine ({@code kv.recompute-when-faster}). */
    public boolean recomputeWhenFaster() {
        return config.recomputeWhenFaster();
    }

    /** The slot eviction policy's name. */
    public String policyName() {
        return deviceSlots.policyName();
    }

    /**
     * Blocks in DEVICE slots whose copy to the store or the shared pool is in flight now (their
     * slots cannot be reused until it lands), as of the last applied completion; call
     * {@link #poll()} first for a current count. Scheduler thread; scans the slots.
     */
    public int offloadsInFlight() {
        int n = 0;
        for (int s = 0; s < deviceSlots.count(); s++) {
            DeviceBlock b = deviceSlots.owner(s);
            if (b != null && b.inFlight > 0 && !b.loading) {
                n++;
            }
        }
        return n;
    }

    /** Free DEVICE slots now. */
    public int freeSlots() {
        return deviceSlots.freeCount();
    }

    /** True if block {@code key} is in a DEVICE slot (loaded or loading). */
    public boolean isOnDevice(ObjectKey key) {
        return deviceSlots.contains(key);
    }

    /** The DEVICE block of {@code key}, or null (for inspection and policies). */
    public DeviceBlock deviceBlock(ObjectKey key) {
        return deviceSlots.get(key);
    }

    /** Keys this manager has offloaded to the store and not seen dropped (a copy, for tests). */
    public Set<ObjectKey> offloadedKeys() {
        return Set.copyOf(offloaded);
    }

    /**
     * Checks every invariant of the class comment and throws {@link IllegalStateException} naming
     * the first one broken. Scheduler thread; for tests.
     */
    public void checkInvariants() {
        deviceSlots.checkInvariants(layout.slots());
        IdentityHashMap<DeviceBlock, Integer> holders = new IdentityHashMap<>();
        for (KvSequence seq = sequences.first(); seq != null; seq = seq.next) {
            if (seq.state != KvSequence.State.PREEMPTED && seq.staged != null) {
                throw new IllegalStateException("sequence " + seq.id + " is " + seq.state + " but has blocks staged for a resume");
            }
            if (seq.state != KvSequence.State.RUNNING && !seq.blocks.isEmpty()) {
                throw new IllegalStateException("sequence " + seq.id + " is " + seq.state + " but holds blocks");
            }
            for (DeviceBlock b : seq.blocks) {
                holders.merge(b, 1, Integer::sum);
            }
            if (seq.committed > seq.blocks.size() || seq.tokens > seq.blocks.size() * blockTokens) {
                throw new IllegalStateException("sequence " + seq + " claims more than its blocks hold");
            }
        }
        int evictAfter = 0;
        for (int s = 0; s < deviceSlots.count(); s++) {
            DeviceBlock b = deviceSlots.owner(s);
            if (b == null) {
                continue;
            }
            int held = holders.getOrDefault(b, 0);
            if (b.refCount != held) {
                throw new IllegalStateException(b + " has refcount " + b.refCount + " but " + held + " sequences hold it");
            }
            if (!b.registered && b.refCount == 0 && b.inFlight == 0) {
                throw new IllegalStateException(b + " is held by no one and not cached: its slot leaked");
            }
            if ((b.refCount > 0) != (b.priority == PriorityClass.ACTIVE) && b.registered) {
                throw new IllegalStateException(b + ": ACTIVE exactly while held");
            }
            if (b.loading && b.inFlight == 0) {
                throw new IllegalStateException(b + " is loading with no transfer in flight");
            }
            if (b.evictAfterOffload) {
                evictAfter++;
            }
        }
        for (DeviceBlock b : holders.keySet()) {
            if (!deviceSlots.occupies(b)) {
                throw new IllegalStateException("a sequence holds " + b + " but its slot does not");
            }
        }
        if (evictAfter != pendingEvictions) {
            throw new IllegalStateException(evictAfter + " blocks wait for eviction but the count says " + pendingEvictions);
        }
        sequences.checkInvariants();
        if (counters.get(KvCounters.UNEXPECTED_DROPS) != 0) {
            throw new IllegalStateException("the store dropped blocks this manager had not offloaded");
        }
    }

    /**
     * Waits for every transfer in flight (up to a minute), releases the open sequences, removes
     * the manager's blocks from the store and stops the I/O thread. Waits.
     *
     * @throws IllegalStateException if transfers were still in flight after a minute
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        boolean idle = awaitIdle(60, TimeUnit.SECONDS);
        closed = true;
        while (sequences.first() != null) {
            KvSequence s = sequences.first();
            for (int i = s.blocks.size() - 1; i >= 0; i--) {
                unhold(s.blocks.get(i), PriorityClass.RECENT);
            }
            s.blocks.clear();
            cancelStaged(s.staged);
            s.staged = null;
            s.state = KvSequence.State.RELEASED;
            sequences.remove(s);
        }
        if (!async.shutdown()) {
            idle = false;
        }
        poll();
        if (store != null) {
            for (ObjectKey k : offloaded) {
                store.remove(k);
            }
        }
        offloaded.clear();
        loads.close();
        if (!idle) {
            throw new IllegalStateException("KV block manager closed with " + async.inFlight() + " transfers in flight");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("KV block manager is closed");
        }
    }

    private void checkOwn(KvSequence seq) {
        if (seq.owner != this || seq.state == KvSequence.State.RELEASED) {
            throw new IllegalArgumentException("sequence " + seq.id + " does not belong to this manager or is released");
        }
    }

    private void checkRunning(KvSequence seq) {
        checkOwn(seq);
        if (seq.state != KvSequence.State.RUNNING) {
            throw new IllegalStateException("sequence " + seq.id + " is " + seq.state + ", not running");
        }
    }

    /** {@code seq} holds nothing but a prefix of {@code match}'s blocks. */
    private static void checkLoadable(KvSequence seq, PrefixMatch match) {
        if (seq.pending != null || seq.blocks.size() != seq.committed || seq.committed > match.blocks()) {
            throw new IllegalStateException("sequence " + seq.id + " already holds " + seq.blocks.size()
                    + " blocks: load into a new (or resumed) sequence");
        }
        for (int i = 0; i < seq.committed; i++) {
            if (!seq.blocks.get(i).key.equals(match.key(i))) {
                throw new IllegalStateException("sequence " + seq.id + " holds block " + seq.blocks.get(i).key + " at " + i
                        + ", not the match's " + match.key(i) + ": load into a new (or resumed) sequence");
            }
        }
    }

    private static void checkEmpty(KvSequence seq) {
        if (!seq.blocks.isEmpty() || seq.pending != null) {
            throw new IllegalStateException("sequence " + seq.id + " already holds " + seq.blocks.size()
                    + " blocks: load into a new (or resumed) sequence");
        }
    }

    /**
     * Configures a manager: the engine's KV layout and hasher (required), the store and transfer
     * engine for offload (optional together), the store's drop relay, the shared pool, settings.
     *
     * <p>Threads: one thread builds.
     */
    public static final class Builder {
        private final KvLayout layout;
        private final PrefixHasher hasher;
        private TieredStore store;
        private TransferEngine transfers;
        private KvDropRelay relay;
        private SharedBlockStore shared;
        private KvManagerConfig config = KvManagerConfig.defaults();

        private Builder(KvLayout layout, PrefixHasher hasher) {
            this.layout = Objects.requireNonNull(layout, "KV layout");
            this.hasher = Objects.requireNonNull(hasher, "prefix hasher");
        }

        /**
         * The store blocks are offloaded into (top tier first: HOST), the transfer engine that moves
         * them, and the relay installed as the store's drop listener. Close the manager before
         * the store, the engine and the tiers.
         */
        public Builder store(TieredStore store, TransferEngine transfers, KvDropRelay relay) {
            this.store = Objects.requireNonNull(store, "store");
            this.transfers = Objects.requireNonNull(transfers, "transfer engine");
            this.relay = Objects.requireNonNull(relay, "drop relay");
            return this;
        }

        /** The cross-process shared block pool (optional). */
        public Builder shared(SharedBlockStore sharedStore) {
            this.shared = Objects.requireNonNull(sharedStore, "shared block store");
            return this;
        }

        public Builder config(KvManagerConfig settings) {
            this.config = Objects.requireNonNull(settings, "config");
            return this;
        }

        /**
         * @throws IllegalArgumentException if the hasher's block size is not the layout's, or the
         *                                  configuration is invalid
         */
        public KvBlockManager build() {
            if (hasher.blockTokens() != layout.geometry().blockTokens()) {
                throw new IllegalArgumentException("hasher keys blocks of " + hasher.blockTokens()
                        + " tokens but the layout holds blocks of " + layout.geometry().blockTokens());
            }
            if (store == null && config.offload() != OffloadMode.NONE) {
                config = config.offload(OffloadMode.NONE);
            }
            return new KvBlockManager(this);
        }
    }
}
