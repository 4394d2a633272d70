package dev.strata.cache.expert;

import dev.strata.memory.transfer.TierCopy;
import dev.strata.memory.transfer.TransferEngine;
import dev.strata.memory.transfer.TransferResult;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The fetches of an {@link ExpertPager}: pages a layer for a call (routes it through the
 * {@link ExpertSlotTable}, which pins, counts and hands out slots) and fills the slots of the
 * missing experts, from a valid peer copy when the {@link ExpertPeerSource} has one, else from
 * their masters; then waits for those fetches, or leaves them in flight to be awaited expert by
 * expert.
 *
 * <p>Design note (the fetch protocol):
 * <ul>
 *   <li>Every missing expert of a call is mapped to its slot before any byte moves, so the map a
 *       call returns already names the slots of experts still being fetched.</li>
 *   <li>Sources, in order: the peer source, synchronously on this thread; then the master, by the
 *       one copy of {@link #copyFromMaster}: directly on this thread when masters and slots are
 *       both plain memory (HOST → DEVICE on the CPU backend; the whole call's direct copies are
 *       metered as one read of the masters' tier and one write of the device tier), else through
 *       the {@link TransferEngine}, all misses of the call submitted together.</li>
 *   <li>A synchronous call ({@code async} false) joins every engine fetch before it returns. An
 *       asynchronous call leaves them in flight: {@link #fetching} tells which experts are still
 *       arriving, {@link #awaitExpert} joins one, {@link #awaitAll} joins the rest. The flight is
 *       the last asynchronous call's; every other operation of the pager awaits it first, so at
 *       most one call's fetches are in flight.</li>
 *   <li>A fetch that fails leaves its expert unmapped and its slot free (no eviction counted) and
 *       is reported by the call that joins it, once every fetch of the flight has settled, as one
 *       {@link IllegalStateException} naming each failed expert. A submission the engine refuses
 *       unmaps every expert of the call after letting the fetches already submitted end.</li>
 *   <li>Bytes fetched are counted per completed copy from a master; peer copies are counted by the
 *       peer source.</li>
 * </ul>
 *
 * <p>Invariant: outside a flight, every mapped slot holds its master's bytes
 * ({@link #verifyResidentBytes}); inside one, every mapped slot whose fetch has completed does.
 * {@code inFlight} is the number of non-null {@code pending} entries among the flight's misses.
 *
 * <p>Threads: the pager's driving thread only; the transfer engine's threads write the slots of
 * fetches in flight, which this thread reads only after joining them.
 */
final class ExpertFetcher {

    private final String pager;                   // the pager's name, for messages
    private final ExpertMasters masters;
    private final ExpertSlotTable table;
    private final ExpertSlotMemory memory;
    private final ExpertPagerCounters counters;
    private final TransferEngine engine;          // null when every fetch is a direct copy
    private final ExpertPeerSource peerSource;    // asked before the masters on a miss; null for none
    private final long expertBytes;               // bytes of one expert image
    private final boolean directCopy;             // masters and slots both plain memory
    private final int[] missExperts;              // [experts] experts missing in the current call (the flight's, until settled)
    private final int[] missSlots;                // [experts] slots given to them
    private final CompletableFuture<?>[] pending; // [experts] engine fetches not yet joined, null once joined or when none
    private final boolean[] fromPeer;             // [experts] misses of the current call served by the peer source
    private int inFlight;                         // non-null entries of pending[0..flightMisses)
    private int flightLayer = -1;                 // layer and miss count of the last call's fetches
    private int flightMisses;
    private List<String> flightFailures;          // failures seen while joining them, reported once all are settled
    private Throwable flightCause;

    ExpertFetcher(String pager, ExpertMasters masters, ExpertSlotTable table, ExpertSlotMemory memory,
                  ExpertPagerCounters counters, TransferEngine engine, ExpertPeerSource peerSource) {
        this.pager = pager;
        this.masters = masters;
        this.table = table;
        this.memory = memory;
        this.counters = counters;
        this.engine = engine;
        this.peerSource = peerSource;
        this.expertBytes = masters.layout().bytes();
        this.directCopy = masters.isPlainMemory() && memory.device().isPlainMemory();
        int experts = masters.experts();
        this.missExperts = new int[experts];
        this.missSlots = new int[experts];
        this.pending = new CompletableFuture<?>[experts];
        this.fromPeer = new boolean[experts];
    }

    /**
     * Makes every expert of {@code routed[0..count)} resident for {@code layer} (ids checked by the
     * caller, no flight left) and returns the layer's map.
     *
     * @param async leave engine fetches in flight rather than joining them
     * @throws IllegalArgumentException when the distinct experts exceed the layer's capacity (nothing changes)
     * @throws IllegalStateException    when a fetch fails or cannot be submitted (its experts left non-resident)
     */
    int[] page(int layer, int[] routed, int count, boolean async) {
        int misses = table.route(layer, routed, count, missExperts);
        if (misses > 0) {
            fetch(layer, misses, async);
        }
        return table.map(layer);
    }

    private void fetch(int layer, int misses, boolean async) {
        for (int i = 0; i < misses; i++) {
            missSlots[i] = table.admit(layer, missExperts[i]);
        }
        int g = table.group(layer);
        int fromMasters = misses;
        if (peerSource != null) {
            for (int i = 0; i < misses; i++) {
                fromPeer[i] = peerSource.fetch(layer, missExperts[i], memory.view(g, missSlots[i]));
                if (fromPeer[i]) {
                    fromMasters--;
                }
            }
        }
        if (directCopy) {
            long start = System.nanoTime();
            for (int i = 0; i < misses; i++) {
                if (peerSource == null || !fromPeer[i]) {
                    copyFromMaster(layer, missExperts[i], g, missSlots[i]);
                }
            }
            if (fromMasters > 0) {
                TierCopy.meterViews(masters.tier(), memory.device(), fromMasters, fromMasters * expertBytes, System.nanoTime() - start);
            }
            counters.fetched(layer, fromMasters * expertBytes);
            return;
        }
        for (int i = 0; i < misses; i++) {
            if (peerSource != null && fromPeer[i]) {
                pending[i] = null; // already in its slot
                continue;
            }
            try {
                pending[i] = copyFromMaster(layer, missExperts[i], g, missSlots[i]);
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
                    table.release(layer, missExperts[j]);
                }
                throw new IllegalStateException("expert pager '" + pager + "': could not submit the fetch of layer " + layer
                        + " expert " + missExperts[i] + " from tier '" + masters.tier().name() + "': " + e.getMessage(), e);
            }
        }
        flightLayer = layer;
        flightMisses = misses;
        inFlight = 0;
        for (int i = 0; i < misses; i++) {
            if (pending[i] != null) {
                inFlight++;
            }
        }
        if (!async) {
            awaitAll();
        }
    }

    /**
     * Copies the master of expert {@code expert} of {@code layer} into slot {@code slot} of group
     * {@code g}: the pager's one copy from a master into a DEVICE slot. Directly, on this thread,
     * when masters and slots are both plain memory (returns null: done; the caller meters it);
     * otherwise submitted to the transfer engine (returns its future, which the caller joins).
     */
    private CompletableFuture<TransferResult> copyFromMaster(int layer, int expert, int g, int slot) {
        if (directCopy) { // plain masters into plain slots: the one copy path, metered once for the call by the caller
            if (TierCopy.direct().copyUnmetered(masters.tier(), masters.handle(layer, expert), memory.device(), memory.handle(g, slot),
                    expertBytes) < 0) {
                throw new IllegalStateException("expert pager '" + pager + "': the master of layer " + layer + " expert " + expert
                        + " is not allocated in tier '" + masters.tier().name() + "'");
            }
            return null;
        }
        return engine.copy(masters.tier(), masters.handle(layer, expert), memory.device(), memory.handle(g, slot), expertBytes);
    }

    /** Whether expert {@code expert} of {@code layer} is mapped but its fetch of the last asynchronous call not yet joined. */
    boolean fetching(int layer, int expert) {
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
     * Joins the fetch of expert {@code expert} of {@code layer} if it is in flight (returns at once otherwise).
     *
     * @throws IllegalStateException when its fetch failed (then every fetch in flight is joined first)
     */
    void awaitExpert(int layer, int expert) {
        if (inFlight == 0 || layer != flightLayer) {
            return;
        }
        for (int i = 0; i < flightMisses; i++) {
            if (missExperts[i] == expert && pending[i] != null) {
                if (!settle(i)) {
                    awaitAll();
                }
                return;
            }
        }
    }

    /**
     * Joins every fetch in flight; a no-op (two field reads) when there is none.
     *
     * @throws IllegalStateException naming every failed expert, once all have settled
     */
    void awaitAll() {
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
            throw new IllegalStateException("expert pager '" + pager + "': fetching layer " + flightLayer + " from tier '"
                    + masters.tier().name() + "' into tier '" + memory.device().name() + "' failed for " + failures.size() + " of "
                    + flightMisses + " experts: " + failures, cause);
        }
    }

    /**
     * Joins fetch {@code i} of the flight: a completed copy counts its bytes; a failed one is
     * recorded and its expert released. Returns whether it completed.
     */
    private boolean settle(int i) {
        String failure;
        Throwable cause = null;
        try {
            TransferResult r = (TransferResult) pending[i].join();
            failure = r.completed() ? null : "transfer " + r.status();
        } catch (CompletionException | CancellationException ex) {
            cause = ex.getCause() != null ? ex.getCause() : ex;
            failure = cause.toString();
        }
        pending[i] = null;
        inFlight--;
        if (failure == null) {
            counters.fetched(flightLayer, expertBytes);
            return true;
        }
        if (flightFailures == null) {
            flightFailures = new ArrayList<>();
            flightCause = cause;
        }
        flightFailures.add("expert " + missExperts[i] + " (master handle " + masters.handle(flightLayer, missExperts[i])
                + " -> slot " + missSlots[i] + "): " + failure);
        table.release(flightLayer, missExperts[i]);
        return false;
    }

    /**
     * Compares every resident slot with its master, byte for byte (after joining the flight);
     * returns the number compared.
     *
     * @throws IllegalStateException naming the layer, expert and slot of the first mismatch
     */
    int verifyResidentBytes() {
        awaitAll();
        int compared = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment scratch = masters.isPlainMemory() ? null : arena.allocate(expertBytes, 4096);
            for (int l = 0; l < masters.layers(); l++) {
                int[] map = table.map(l);
                for (int e = 0; e < map.length; e++) {
                    int s = map[e];
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
                    long at = master.mismatch(memory.view(table.group(l), s));
                    if (at >= 0) {
                        throw new IllegalStateException("expert pager '" + pager + "': slot " + s + " of layer " + l + " expert " + e
                                + " differs from its master at byte " + at);
                    }
                    compared++;
                }
            }
        }
        return compared;
    }
}
