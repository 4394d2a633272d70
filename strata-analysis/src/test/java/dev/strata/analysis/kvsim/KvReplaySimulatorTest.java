package dev.strata.analysis.kvsim;

import static dev.strata.analysis.kvsim.KvReplaySimulator.DEVICE;
import static dev.strata.analysis.kvsim.KvReplaySimulator.DISK;
import static dev.strata.analysis.kvsim.KvReplaySimulator.HOST;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.analysis.kvtrace.TraceRequest;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.testing.Property;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Replays of hand-made traces whose outcomes are derived by hand, and invariants on random ones. */
class KvReplaySimulatorTest {
    private static final long BLOCK_BYTES = 512L * 128 * 1024; // 512 tokens at 128 KiB per token: 64 MiB

    /** A trace of whole-block prompts, one request per id list. */
    static PrefixTrace trace(long[]... requests) {
        List<TraceRequest> list = new ArrayList<>();
        for (int i = 0; i < requests.length; i++) {
            list.add(new TraceRequest(i, requests[i].length * 512, 1, requests[i]));
        }
        return PrefixTrace.of(list);
    }

    private static long[] ids(long... ids) {
        return ids;
    }

    private static KvReplaySimulator.Config single(long capacity, PolicyKind kind) {
        return KvReplaySimulator.Config.single(capacity, kind, BLOCK_BYTES).withInvariantChecks();
    }

    @Test
    void aBlockWhosePredecessorIsMissingIsAMissEvenIfResident() {
        // capacity 3, LRU, unreachable blocks kept: r1 writes 1,2,3 (LRU order 1 oldest); r2 writes 9 and evicts 1,
        // leaving 2 and 3 resident without their parent; r3 asks 1,2,3: block 1 is missing, so all three miss.
        PrefixTrace t = trace(ids(1, 2, 3), ids(9), ids(1, 2, 3));
        ReplayResult r = KvReplaySimulator.replay(t, single(3, PolicyKind.LRU).withDropUnreachable(false));
        assertThat(r.hits()).isZero();
        assertThat(r.recomputed()).isEqualTo(7);
        assertThat(r.accesses()).isEqualTo(7);
        // evicting 1 (child 2 resident), then in r3 evicting 2 (child 3 resident) strands a child each time
        assertThat(r.strandingEvictions()).isEqualTo(2);
        assertThat(r.unreachableDrops()).isZero();

        // with the cascade, evicting 1 from the last tier drops 2 and 3 at once
        ReplayResult c = KvReplaySimulator.replay(t, single(3, PolicyKind.LRU));
        assertThat(c.hits()).isZero();
        assertThat(c.unreachableDrops()).isEqualTo(2);
        assertThat(c.strandingEvictions()).isEqualTo(1);
    }

    @Test
    void lruCutsOffAPrefixAtItsRootWhileThePrefixAwarePolicyTrimsTheLeaf() {
        // capacity 3: r1 = [1,2], r2 = [7,8], r3 = [1,2].
        // LRU: writing 8 evicts 1 (the least recently used: prefixes are touched root first) and so loses 2: r3 hits 0.
        // prefix-aware: 1 is not a leaf while 2 is resident; 7 is pinned by r2; so 2 goes and r3 hits block 1.
        PrefixTrace t = trace(ids(1, 2), ids(7, 8), ids(1, 2));
        ReplayResult lru = KvReplaySimulator.replay(t, single(3, PolicyKind.LRU));
        ReplayResult pa = KvReplaySimulator.replay(t, single(3, PolicyKind.PREFIX_AWARE));
        assertThat(lru.hits()).isZero();
        assertThat(pa.hits()).isEqualTo(1);
        assertThat(pa.hitsByTier()).containsExactly(1, 0, 0);
        assertThat(pa.recomputed()).isEqualTo(5);
        assertThat(pa.strandingEvictions()).isZero();
        assertThat(BeladyBound.hits(t, 3)).isEqualTo(2); // keeping 1 and 2, bypassing 8
    }

    @Test
    void aOneOffDocumentCyclesThroughTheReachedOnceSegmentWithoutFlushingASharedPrompt() {
        // capacity 6: a prompt [1,2,3] is reached twice (shared), then two one-off documents of 4 blocks pass, then
        // the prompt returns.
        // LRU: writing 13 evicts 1 (least recently used) and the cascade drops 2 and 3: r4 hits nothing; 3 hits in all.
        // priority LRU: no EVICTABLE block is free while r2 runs (10..13 pinned), so 1 (RECENT, least recent) goes.
        // prefix-aware: 13 needs room while 10..12 are pinned, so the shared leaf 3 goes; r3 then takes the
        // reached-once segment (13, 12, 11, 10, leaves first) and keeps 1 and 2: r4 hits 1 and 2; 5 hits in all.
        PrefixTrace t = trace(ids(1, 2, 3), ids(1, 2, 3), ids(10, 11, 12, 13), ids(20, 21, 22, 23), ids(1, 2, 3));
        ReplayResult lru = KvReplaySimulator.replay(t, single(6, PolicyKind.LRU));
        ReplayResult plru = KvReplaySimulator.replay(t, single(6, PolicyKind.PRIORITY_LRU));
        ReplayResult pa = KvReplaySimulator.replay(t, single(6, PolicyKind.PREFIX_AWARE));
        assertThat(lru.hits()).isEqualTo(3);
        assertThat(plru.hits()).isEqualTo(3);
        assertThat(pa.hits()).isEqualTo(5);
        assertThat(pa.strandingEvictions()).isZero();
    }

    @Test
    void victimsMoveDownTheChainAndHitsComeBackUpOnEveryLink() {
        // one block per tier, LRU: r1..r3 write 1, 2, 3, pushing the older ones down: device {3}, host {2}, disk {1}.
        // r4 asks 1: a disk hit; it is promoted to device, pushing 3 to host and 2 to disk.
        PrefixTrace t = trace(ids(1), ids(2), ids(3), ids(1));
        KvReplaySimulator.Config c = KvReplaySimulator.Config.tiers(1, 1, 1, PolicyKind.LRU, BLOCK_BYTES).withInvariantChecks();
        ReplayResult r = KvReplaySimulator.replay(t, c);
        assertThat(r.hitsByTier()).containsExactly(0, 0, 1);
        assertThat(r.recomputed()).isEqualTo(3);
        assertThat(r.moved(DEVICE, HOST)).isEqualTo(3); // 1 (r2), 2 (r3), 3 (r4)
        assertThat(r.moved(HOST, DISK)).isEqualTo(2); // 1 (r3), 2 (r4)
        assertThat(r.moved(DISK, HOST)).isEqualTo(1); // 1 on its way up (r4)
        assertThat(r.moved(HOST, DEVICE)).isEqualTo(1);
        assertThat(r.moved(DEVICE, DISK)).isZero();
        assertThat(r.moved(DISK, DEVICE)).isZero();
        assertThat(r.bytesMoved(DEVICE, HOST)).isEqualTo(3 * 64L * 1024 * 1024);
        assertThat(r.bytesRecomputed()).isEqualTo(3 * BLOCK_BYTES);
        assertThat(r.hitRatio()).isEqualTo(0.25);
        assertThat(r.hitRatio(DISK)).isEqualTo(0.25);
        assertThat(BeladyBound.hits(t, c.totalCapacity())).isEqualTo(1);
    }

    @Test
    void aDisabledTierIsSkippedAndABlockThatFitsNowhereIsNotCached() {
        // host disabled: device victims go straight to disk
        PrefixTrace t = trace(ids(1), ids(2), ids(1));
        ReplayResult r = KvReplaySimulator.replay(t,
                KvReplaySimulator.Config.tiers(1, 0, 1, PolicyKind.LRU, BLOCK_BYTES).withInvariantChecks());
        assertThat(r.hitsByTier()).containsExactly(0, 0, 1);
        assertThat(r.moved(DEVICE, DISK)).isEqualTo(2); // 1 (r2), 2 (r3)
        assertThat(r.moved(DISK, DEVICE)).isEqualTo(1);
        // a prompt longer than every tier together: its blocks are pinned while it runs, the rest is not cached
        ReplayResult big = KvReplaySimulator.replay(trace(ids(1, 2, 3, 4), ids(1, 2, 3, 4)), single(2, PolicyKind.PREFIX_AWARE));
        assertThat(big.hits()).isEqualTo(2);
        assertThat(big.recomputed()).isEqualTo(6);
        // no tier at all
        ReplayResult none = KvReplaySimulator.replay(t, KvReplaySimulator.Config.tiers(0, 0, 0, PolicyKind.LRU, BLOCK_BYTES));
        assertThat(none.hits()).isZero();
        assertThat(none.recomputed()).isEqualTo(3);
        assertThatThrownBy(() -> KvReplaySimulator.Config.tiers(-1, 0, 0, PolicyKind.LRU, 1))
                .hasMessageContaining("device capacity must not be negative, got -1 blocks");
    }

    @Test
    void beladyKeepsTheBlocksNeededSoonestAndStaysPrefixClosed() {
        PrefixTrace singles = trace(ids(1), ids(2), ids(3), ids(1), ids(2));
        assertThat(BeladyBound.hits(singles, 2)).isEqualTo(2); // bypasses 3
        assertThat(KvReplaySimulator.replay(singles, single(2, PolicyKind.LRU)).hits()).isZero();
        // [1,2] twice at capacity 1: 1 and 2 are next needed together; the deeper one leaves, so 1 still hits
        PrefixTrace chain = trace(ids(1, 2), ids(1, 2));
        assertThat(BeladyBound.hits(chain, 1)).isEqualTo(1);
        assertThat(BeladyBound.hits(chain, 2)).isEqualTo(2);
        assertThat(BeladyBound.hits(chain, 0)).isZero();
    }

    /** A random prefix trace: requests extend random prefixes of earlier ones with fresh blocks. */
    static PrefixTrace randomTrace(SplittableRandom rnd, int requests) {
        List<long[]> seqs = new ArrayList<>();
        long next = 1;
        List<TraceRequest> out = new ArrayList<>();
        for (int r = 0; r < requests; r++) {
            long[] base = seqs.isEmpty() || rnd.nextInt(4) == 0 ? new long[0] : seqs.get(rnd.nextInt(seqs.size()));
            int keep = base.length == 0 ? 0 : rnd.nextInt(base.length + 1);
            int fresh = rnd.nextInt(keep == 0 ? 1 : 0, 5);
            long[] ids = Arrays.copyOf(base, keep + fresh);
            for (int i = keep; i < ids.length; i++) {
                ids[i] = next++;
            }
            seqs.add(ids);
            out.add(new TraceRequest(r, Math.max(0, ids.length * 512 - rnd.nextInt(ids.length == 0 ? 1 : 512)), 1, ids));
        }
        return PrefixTrace.of(out);
    }

    @Test
    void invariantsHoldAndBeladyBoundsEveryPolicyOnRandomTraces() {
        Property.forAll("replay invariants and Belady's bound", 40, rnd -> {
            PrefixTrace t = randomTrace(rnd, 20 + rnd.nextInt(120));
            long[] cap = {rnd.nextInt(12), rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(10), rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(10)};
            long total = cap[0] + cap[1] + cap[2];
            long optimum = BeladyBound.hits(t, total);
            assertThat(optimum).isLessThanOrEqualTo(t.accessCount());
            for (PolicyKind kind : PolicyKind.values()) {
                for (boolean cascade : new boolean[] {true, false}) {
                    KvReplaySimulator.Config c = new KvReplaySimulator.Config(cap, new PolicyKind[] {kind, kind, kind}, 4096,
                            cascade, true); // occupancy, policy sizes, child counts and prefix closure checked every step
                    ReplayResult r = KvReplaySimulator.replay(t, c);
                    String what = kind + " at " + Arrays.toString(cap) + (cascade ? " with cascade" : "");
                    assertThat(r.hits() + r.recomputed()).as(what).isEqualTo(t.accessCount());
                    assertThat(r.hits()).as(what).isLessThanOrEqualTo(optimum);
                    for (int tier = 0; tier < 3; tier++) {
                        if (cap[tier] == 0) {
                            assertThat(r.hitsByTier()[tier]).as(what).isZero();
                            for (int o = 0; o < 3; o++) {
                                assertThat(r.moved(tier, o) + r.moved(o, tier)).as(what).isZero();
                            }
                        }
                    }
                    if (kind == PolicyKind.PREFIX_AWARE) {
                        assertThat(r.strandingEvictions()).as(what + ": evictions of blocks with a resident child").isZero();
                        // leaves go first in every tier, so a parent never sits below its children: none is ever stranded
                        assertThat(r.unreachableDrops()).as(what + ": blocks made unreachable").isZero();
                    }
                }
            }
        });
    }

    @Test
    void aTraceReplayedTwiceGivesTheSameCounts() {
        PrefixTrace t = randomTrace(new SplittableRandom(7), 300);
        KvReplaySimulator.Config c = KvReplaySimulator.Config.tiers(20, 30, 40, PolicyKind.TINY_LFU, 1);
        ReplayResult a = KvReplaySimulator.replay(t, c);
        ReplayResult b = KvReplaySimulator.replay(t, c);
        assertThat(a.hitsByTier()).containsExactly(b.hitsByTier());
        assertThat(a.moved()).isDeepEqualTo(b.moved());
        KvReplaySimulator sim = new KvReplaySimulator(t, c);
        sim.run();
        assertThatThrownBy(sim::run).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void steppingEveryRequestFindsTheSamePrefixesAsARunAndRefusesARunAfterwards() {
        PrefixTrace t = PrefixTrace.of(SyntheticPrefixTraceGenerator.generate(SyntheticPrefixTraceGenerator.Knobs.chat(400), 3));
        KvReplaySimulator.Config c = KvReplaySimulator.Config.tiers(30, 60, 0, PolicyKind.PREFIX_AWARE, 512).withInvariantChecks();
        ReplayResult whole = KvReplaySimulator.replay(t, c);
        KvReplaySimulator stepped = new KvReplaySimulator(t, c);
        long hits = 0;
        for (int r = 0; r < t.requestCount(); r++) {
            int found = stepped.cachedPrefix(r);
            int prefix = stepped.step(r);
            assertThat(prefix).isEqualTo(found).isBetween(0, t.blocks(r).length);
            assertThat(stepped.occupancy(DEVICE)).isLessThanOrEqualTo(30);
            assertThat(stepped.occupancy(HOST)).isLessThanOrEqualTo(60);
            hits += prefix;
        }
        assertThat(hits).isEqualTo(whole.hits()).isPositive();
        assertThatThrownBy(stepped::run).isInstanceOf(IllegalStateException.class).hasMessageContaining("not both");
    }

    @Test
    void requestLengthsAreKeptByTheInternedTrace() {
        PrefixTrace t = PrefixTrace.of(List.of(new TraceRequest(5, 1000, 37, new long[] {4, 5}),
                new TraceRequest(9, 513, 0, new long[] {4, 6})));
        assertThat(t.inputLength(0)).isEqualTo(1000);
        assertThat(t.outputLength(0)).isEqualTo(37);
        assertThat(t.inputLength(1)).isEqualTo(513);
        assertThat(t.outputLength(1)).isZero();
    }
}
