package dev.strata.bench.peer;

import dev.strata.analysis.peer.AvailabilityTraceGenerator;
import dev.strata.analysis.peer.AvailabilityTraceStats;
import dev.strata.analysis.routing.RoutingTraceGenerator;
import dev.strata.analysis.routing.RoutingWorkload;
import dev.strata.analysis.routing.SyntheticKvBlockStream;
import dev.strata.bench.Figure;
import dev.strata.cache.Durability;
import dev.strata.cache.ObjectKind;
import dev.strata.cache.PromotionRule;
import dev.strata.cache.StoreTierStats;
import dev.strata.cache.TieredStore;
import dev.strata.cache.expert.ExpertLayout;
import dev.strata.cache.expert.ExpertMasters;
import dev.strata.cache.expert.ExpertPager;
import dev.strata.cache.expert.ExpertRebalancer;
import dev.strata.cache.expert.LruExpertPolicy;
import dev.strata.cache.peer.LeaseHints;
import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.peer.PeerClientStats;
import dev.strata.cache.peer.PeerTier;
import dev.strata.cache.peer.PlacementPolicy;
import dev.strata.cache.peer.trace.AvailabilityTrace;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.memory.Sizes;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Peers that come and go, replayed: a generated availability trace drives in-process lenders (each
 * lender's own demand is its budget less what its peer had free at that moment of the trace, one
 * replay step per trace step, and the lender offers and takes back by the {@code LendingRule} every
 * Strata lender follows), and a KV workload and an expert-routing workload fetch into a compute device's cache
 * through memory borrowed from them by a {@link PeerClient}.
 *
 * <p>Each workload runs three times on the same references: under churn (the trace), with static
 * peers (each lender holding its peer's time-mean free memory for the whole run: the same memory on
 * average, never revoked), and with no peers (HOST only). Figures: the share of fetches peers
 * served under churn against static peers; the bytes fetched over the host link under churn
 * against no peers (what the peers kept off it); and the modelled fetch time of those bytes,
 * NVLink for peer fetches and PCIe for host fetches ({@link LinkCostModel}), against PCIe for all.
 *
 * <p>KV blocks go through a {@link TieredStore} whose chain is PEER ({@link PeerTier}) then HOST:
 * LOSSY, offloaded to the peers first when the device evicts them, demoted to HOST under pressure,
 * lost when revoked while only on a peer (then recomputed). Experts go through the real
 * {@link ExpertPager} (DEVICE slots, LRU) over HOST {@link ExpertMasters}, with an
 * {@link ExpertRebalancer} as its peer source: one rebalancing pass per replay step places the
 * most routed experts on the peers as they lend, a revocation sends their fetches back to the
 * masters. Fetched bytes are checked: KV blocks by their stamps, experts by comparing every
 * resident slot with its master. Peers are chosen by the default placement
 * ({@link PlacementPolicy#DEFAULT_NAME}), as a server chooses them; the KV replay under churn runs
 * once more with best fit, whose losses the note of {@code kv_lost_share_churn} gives.
 *
 * <p>Threads: the calling thread replays; the lenders and the client run their own event threads.
 */
public final class PeerChurnMeasure {

    /** The sizes of one run. */
    record Setup(int peers, long peerCapacity, long chunkBytes, AvailabilityTraceGenerator.Parameters trace,
                 long kvBlockBytes, int kvDeviceBlocks, long kvHostBytes, SyntheticKvBlockStream kvStream,
                 long expertBytes, int expertDeviceSlots, long expertHostBytes, RoutingWorkload routing) {

        static Setup of(boolean quick) {
            if (quick) {
                long cap = 16 * Sizes.MiB;
                var trace = AvailabilityTraceGenerator.Parameters.defaults().withPeers(2).withCapacity(cap).withTime(120, 1)
                        .withDiurnal(0.3, 120).withReclaims(60, 0.5, 15).withSeed(5);
                return new Setup(2, cap, Sizes.MiB, trace,
                        128 * Sizes.KiB + 192, 24, 64 * Sizes.MiB, new SyntheticKvBlockStream(16, 8, 4, 4, 12, 3, 1, 11),
                        256 * Sizes.KiB + 64, 32, 48 * Sizes.MiB,
                        RoutingWorkload.defaults().withShape(4, 32, 4).withLength(1, 2, 16, 96, 16).withSeed(13));
            }
            long cap = 32 * Sizes.MiB;
            var trace = AvailabilityTraceGenerator.Parameters.defaults().withPeers(4).withCapacity(cap).withTime(600, 1)
                    .withDiurnal(0.3, 600).withReclaims(40, 0.5, 20).withSeed(5);
            return new Setup(4, cap, 2 * Sizes.MiB, trace,
                    128 * Sizes.KiB + 192, 96, 400 * Sizes.MiB, new SyntheticKvBlockStream(48, 16, 6, 8, 24, 4, 2, 11),
                    512 * Sizes.KiB + 64, 128, 320 * Sizes.MiB,
                    RoutingWorkload.defaults().withShape(8, 64, 4).withLength(2, 2, 32, 256, 32).withSeed(13));
        }
    }

    /** Where the peers' memory comes from in one run. */
    enum Peers { CHURN, STATIC, NONE }

    /**
     * One run's outcome.
     *
     * @param revocations  leases the peers took back (any reason)
     * @param lossyDropped LOSSY objects the store dropped because their only copy was revoked
     * @param peerBytesIn  bytes copied onto the peers from the host: demotions and promotions into the store's
     *                     peer tier (KV), or the rebalancer's placements (experts)
     */
    record Run(FetchTally tally, long revocations, long lossyDropped, long peerBytesIn) {
    }

    private PeerChurnMeasure() {
    }

    /** The figures of both workloads, at the quick or the full sizes. */
    public static List<Figure> figures(boolean quick, PrintStream progress, List<String> notes) {
        return figures(Setup.of(quick), progress, notes);
    }

    static List<Figure> figures(Setup s, PrintStream progress, List<String> notes) {
        AvailabilityTrace trace = new AvailabilityTraceGenerator(s.trace()).toTrace();
        AvailabilityTraceStats stats = AvailabilityTraceStats.of(trace, s.peerCapacity(), 0.1);
        notes.add(String.format(Locale.ROOT, "peer churn: %d in-process lenders of %s driven by a generated availability trace "
                        + "(%.0f s, mean utilisation %.2f, %d reclaims, %.1f per peer-hour; a %.0f-second diurnal period)",
                s.peers(), Sizes.format(s.peerCapacity()), trace.duration(), stats.meanUtilisation(), stats.reclaims(),
                stats.reclaimsPerPeerHour(), s.trace().diurnalPeriod()));
        long[] kvRefs = kvReferences(s.kvStream());
        List<int[]> expertCalls = expertCalls(s.routing(), Math.max(s.routing().topK(), s.expertDeviceSlots() / s.routing().layers()));
        LinkCostModel low = LinkCostModel.harvestLow();
        LinkCostModel high = LinkCostModel.harvestHigh();
        List<Figure> out = new ArrayList<>();
        for (String workload : List.of("kv", "expert")) {
            boolean kv = workload.equals("kv");
            int references = kv ? kvRefs.length : expertCalls.size();
            Run[] runs = new Run[3];
            for (Peers p : Peers.values()) {
                progress.printf(Locale.ROOT, "  %s workload, %d %s, peers: %s%n", workload, references,
                        kv ? "block references" : "pager calls", p.name().toLowerCase(Locale.ROOT));
                runs[p.ordinal()] = kv ? replayKv(s, trace, stats, p, kvRefs) : replayExperts(s, trace, stats, p, expertCalls);
                progress.println("    " + runs[p.ordinal()].tally());
            }
            Run churn = runs[0];
            Run still = runs[1];
            Run none = runs[2];
            for (Run r : runs) {
                if (r.tally().wrongBytes() != 0) {
                    throw new IllegalStateException(workload + " replay fetched " + r.tally().wrongBytes()
                            + " objects whose bytes were not the ones stored");
                }
            }
            out.add(Figure.exact(workload + "_peer_fetch_share_churn", churn.tally().peerShare(), "share",
                    "same peers, static (each at its mean free memory, never revoked)", still.tally().peerShare(), ">= 0.7")
                    .withNote(String.format(Locale.ROOT, "%d fetches under churn (%d peer, %d host, %d lost), %d revocations; "
                                    + "static: %d fetches", churn.tally().fetches(), churn.tally().peerFetches(),
                            churn.tally().hostFetches(), churn.tally().lost(), churn.revocations(), still.tally().fetches())));
            double hostGb = churn.tally().hostBytes() / 1e9;
            double noneGb = none.tally().hostBytes() / 1e9;
            out.add(Figure.exact(workload + "_host_link_bytes_churn", hostGb, "GB", "no peers (HOST only)", noneGb, "<= 0.8")
                    .withNote(String.format(Locale.ROOT, "%.3f GB kept off the host link (%.0f%%); ", noneGb - hostGb,
                            100 * (1 - hostGb / noneGb)) + (kv
                            ? String.format(Locale.ROOT, "%d blocks (%.3f GB) offloaded from the device onto the peers",
                                    churn.tally().offloads(), churn.tally().offloads() * s.kvBlockBytes() / 1e9)
                            : String.format(Locale.ROOT, "the rebalancer copied %d experts (%.3f GB) from the host masters onto "
                                    + "the peers", churn.tally().offloads(), churn.peerBytesIn() / 1e9))));
            double modelledChurn = kv
                    ? low.kvPeerSeconds(churn.tally().peerBytes()) + low.hostSeconds(churn.tally().hostBytes())
                    : low.expertPeerSeconds(churn.tally().peerBytes()) + low.hostSeconds(churn.tally().hostBytes());
            double modelledHigh = kv
                    ? high.kvPeerSeconds(churn.tally().peerBytes()) + high.hostSeconds(churn.tally().hostBytes())
                    : high.expertPeerSeconds(churn.tally().peerBytes()) + high.hostSeconds(churn.tally().hostBytes());
            double modelledNone = low.hostSeconds(none.tally().hostBytes());
            out.add(Figure.exact(workload + "_fetch_time_modelled_churn", modelledChurn * 1e3, "ms (modelled)",
                    "no peers, every fetch over PCIe (modelled)", modelledNone * 1e3, "<= 0.8")
                    .withNote(String.format(Locale.ROOT, "modelled, not measured: %s; with the high end of Harvest's speed-ups "
                            + "%.3f ms. Rebuilt objects (%d lost fetches) are not costed", low.describe(), modelledHigh * 1e3,
                            churn.tally().lost())));
            if (kv) {
                progress.printf(Locale.ROOT, "  kv workload, peers: churn, placed by best fit instead of %s%n", PlacementPolicy.DEFAULT_NAME);
                Run bestFit = replayKv(s, trace, stats, Peers.CHURN, kvRefs, PlacementPolicy.bestFit());
                progress.println("    " + bestFit.tally());
                out.add(Figure.exact("kv_lost_share_churn", churn.tally().lostShare(), "share", "no peers (HOST only)",
                        none.tally().lostShare(), "<= 0.2 share")
                        .withNote(String.format(Locale.ROOT, "%d LOSSY blocks dropped by revocation and recomputed when needed; "
                                        + "placed by best fit instead of %s: %d lost fetches (share %.3f), %d revocations",
                                churn.lossyDropped(), PlacementPolicy.DEFAULT_NAME, bestFit.tally().lost(),
                                bestFit.tally().lostShare(), bestFit.revocations())));
            }
        }
        return out;
    }

    static long[] kvReferences(SyntheticKvBlockStream stream) {
        LongList refs = new LongList();
        stream.forEach(refs::add);
        return refs.toArray();
    }

    /** The KV workload with the default placement ({@link PlacementPolicy#defaultPolicy()}), as a server places its blocks. */
    static Run replayKv(Setup s, AvailabilityTrace trace, AvailabilityTraceStats stats, Peers peers, long[] refs) {
        return replayKv(s, trace, stats, peers, refs, PlacementPolicy.defaultPolicy());
    }

    /** The KV workload with the peers chosen by {@code placement}. */
    static Run replayKv(Setup s, AvailabilityTrace trace, AvailabilityTraceStats stats, Peers peers, long[] refs,
                        PlacementPolicy placement) {
        return replay(s, trace, stats, peers, refs, s.kvHostBytes(), PromotionRule.never(), placement, (store) -> new StoreReplay(store,
                ObjectKind.KV_BLOCK, Durability.LOSSY, StoreReplay.Mode.OFFLOAD_ON_EVICT, s.kvBlockBytes(), s.kvDeviceBlocks(), 0x4B56,
                17));
    }

    /**
     * The expert workload through the real pager and rebalancer: HOST masters, DEVICE slots
     * ({@code expertDeviceSlots / layers} per layer, LRU), an {@link ExpertRebalancer} over a
     * {@link PeerClient} as the pager's peer source (none for {@link Peers#NONE}); one rebalancing
     * pass per replay step, after the lenders took the step's offer. Every resident slot is checked
     * against its master every 50 steps and at the end.
     */
    static Run replayExperts(Setup s, AvailabilityTrace trace, AvailabilityTraceStats stats, Peers peers, List<int[]> calls) {
        RoutingWorkload w = s.routing();
        int layers = w.layers();
        int perLayer = Math.max(w.topK(), s.expertDeviceSlots() / layers);
        long image = Sizes.alignUp(s.expertBytes(), 64);
        FetchTally tally = new FetchTally();
        List<LocalLender> lenders = new ArrayList<>();
        PeerClient client = null;
        AtomicLong traceNanos = new AtomicLong(); // the client's clock: the trace's time, see traceNanos(Setup, int)
        ExpertRebalancer rebalancer = null;
        try (HostTier host = HostTier.create("host", s.expertHostBytes());
             DeviceTier device = DeviceTier.cpu("device", (long) layers * perLayer * Sizes.alignUp(image, 4096) + Sizes.MiB);
             ExpertMasters masters = ExpertMasters.allocate(host, ExpertLayout.single(s.expertBytes()), layers, w.experts())) {
            fillMasters(masters, layers, w.experts());
            if (peers != Peers.NONE) {
                for (int p = 0; p < s.peers(); p++) {
                    lenders.add(new LocalLender(LocalLender.Config.of(p, trace.peers().get(p), s.peerCapacity())));
                }
                client = PeerClient.builder().lenders(lenders).clock(traceNanos::get).build(); // the default placement, as a server's
                rebalancer = ExpertRebalancer.builder(masters, client).maxBytes(s.peers() * s.peerCapacity())
                        .chunkBytes(Math.max(s.chunkBytes(), image)).build();
            }
            ExpertPager.Builder pb = ExpertPager.builder(masters, device).topK(w.topK()).slotsPerLayer(perLayer)
                    .policy(new LruExpertPolicy());
            if (rebalancer != null) {
                pb.peerSource(rebalancer);
            }
            try (ExpertPager pager = pb.build()) {
                if (rebalancer != null) {
                    rebalancer.follow(pager);
                }
                AvailabilityDriver driver = new AvailabilityDriver(trace, s.peers(), s.peerCapacity(), s.trace().step(),
                        (p, bytes) -> lenders.get(p).demand(bytes));
                if (peers == Peers.STATIC) {
                    for (int p = 0; p < s.peers(); p++) {
                        lenders.get(p).lendable((long) stats.peers().get(p).meanFree());
                    }
                }
                int steps = driver.steps();
                int perStep = (int) Math.ceil((double) calls.size() / steps);
                int next = 0;
                for (int step = 0; step < steps && next < calls.size(); step++) {
                    if (peers == Peers.CHURN) {
                        traceNanos.set(traceNanos(s, step));
                        driver.apply(step);
                    }
                    if (rebalancer != null) {
                        settle(client, lenders, rebalancer.tier(), null);
                        rebalancer.rebalance();
                    }
                    int end = Math.min(calls.size(), next + perStep);
                    for (; next < end; next++) {
                        int[] call = calls.get(next); // {layer, ids...}
                        pager.page(call[0], java.util.Arrays.copyOfRange(call, 1, call.length));
                        tally.references += call.length - 1;
                    }
                    if (step % 50 == 49) {
                        pager.verifyResidentBytes(); // throws on the first slot that differs from its master
                    }
                }
                pager.verifyResidentBytes();
                long misses = 0;
                long hits = 0;
                for (var l : pager.stats().layers()) {
                    misses += l.misses();
                    hits += l.hits();
                }
                tally.deviceHits = hits;
                tally.references = hits + misses;
                long revocations = 0;
                if (rebalancer != null) {
                    ExpertRebalancer.Stats r = rebalancer.stats();
                    tally.peerFetches = r.fetchesFromPeer();
                    tally.hostFetches = r.fetchesFromHost();
                    for (PeerClientStats.Peer p : client.stats().peers()) {
                        revocations += p.revocations();
                    }
                    if (tally.peerFetches + tally.hostFetches != misses) {
                        throw new IllegalStateException("expert pager missed " + misses + " times but the rebalancer counted "
                                + tally.peerFetches + " peer and " + tally.hostFetches + " host fetches");
                    }
                    tally.offloads = r.placements();
                } else {
                    tally.hostFetches = misses;
                }
                tally.peerBytes = tally.peerFetches * s.expertBytes();
                tally.hostBytes = tally.hostFetches * s.expertBytes();
                long placedBytes = tally.offloads * s.expertBytes();
                return new Run(tally, revocations, 0, placedBytes);
            }
        } finally {
            if (rebalancer != null) {
                rebalancer.close();
            }
            if (client != null) {
                client.close(); // closes the lenders
            }
        }
    }

    private static void fillMasters(ExpertMasters masters, int layers, int experts) {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            long bytes = masters.layout().bytes();
            java.lang.foreign.MemorySegment image = arena.allocate(bytes, 64);
            java.util.SplittableRandom r = new java.util.SplittableRandom(0xE7E7);
            for (int l = 0; l < layers; l++) {
                for (int e = 0; e < experts; e++) {
                    for (long o = 0; o + 8 <= bytes; o += 8) {
                        image.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, o, r.nextLong());
                    }
                    masters.write(l, e, image);
                }
            }
        }
    }

    /**
     * The pager calls of a routing workload: per step and layer, one call with the union of the
     * step's routed experts when it fits the layer's slots, else one call per token. Each entry is
     * {@code {layer, ids...}}.
     */
    static List<int[]> expertCalls(RoutingWorkload w, int slotsPerLayer) {
        List<int[]> calls = new ArrayList<>();
        RoutingTraceGenerator g = new RoutingTraceGenerator(w);
        BitSet seen = new BitSet(w.experts());
        while (g.hasNext()) {
            if (g.next() instanceof RoutingStep st) {
                for (int l = 0; l < st.layers(); l++) {
                    seen.clear();
                    for (int t = 0; t < st.tokens(); t++) {
                        for (int k = 0; k < st.topK(); k++) {
                            seen.set(st.expert(l, t, k));
                        }
                    }
                    if (seen.cardinality() <= slotsPerLayer) {
                        int[] call = new int[1 + seen.cardinality()];
                        call[0] = l;
                        int i = 1;
                        for (int e = seen.nextSetBit(0); e >= 0; e = seen.nextSetBit(e + 1)) {
                            call[i++] = e;
                        }
                        calls.add(call);
                    } else {
                        for (int t = 0; t < st.tokens(); t++) {
                            int[] call = new int[1 + st.topK()];
                            call[0] = l;
                            for (int k = 0; k < st.topK(); k++) {
                                call[1 + k] = st.expert(l, t, k);
                            }
                            calls.add(call);
                        }
                    }
                }
            }
        }
        return calls;
    }

    /**
     * The trace's time at the start of replay step {@code step}, ns: the peer client's clock in a
     * replay. The replay runs the trace far faster than it happened, so the client's decayed
     * revocation counts (what the default placement weighs, halving every minute) must age with the
     * trace, not the wall: on the wall clock they would barely decay in a replay, and the figures
     * would depend on how fast the machine ran it.
     */
    static long traceNanos(Setup s, int step) {
        return Math.round(step * s.trace().step() * 1e9);
    }

    private interface ReplayFactory {
        StoreReplay open(TieredStore store);
    }

    private static Run replay(Setup s, AvailabilityTrace trace, AvailabilityTraceStats stats, Peers peers, long[] refs,
                              long hostBytes, PromotionRule promotion, PlacementPolicy placement, ReplayFactory factory) {
        FetchTally tally = new FetchTally();
        List<LocalLender> lenders = new ArrayList<>();
        PeerClient client = null;
        AtomicLong traceNanos = new AtomicLong(); // the client's clock: the trace's time, see traceNanos(Setup, int)
        PeerTier peerTier = null;
        try (HostTier host = HostTier.create("host", hostBytes)) {
            TieredStore.Builder b = TieredStore.builder().promotion(promotion);
            if (peers != Peers.NONE) {
                for (int p = 0; p < s.peers(); p++) {
                    lenders.add(new LocalLender(LocalLender.Config.of(p, trace.peers().get(p), s.peerCapacity())));
                }
                client = PeerClient.builder().lenders(lenders).policy(placement).clock(traceNanos::get).build();
                peerTier = new PeerTier("peer", client, s.peers() * s.peerCapacity(), s.chunkBytes(),
                        LeaseHints.of(Durability.LOSSY));
                b.tier(peerTier, 0.95, 0.85, PolicyKind.PRIORITY_LRU);
            }
            b.tier(host, 0.95, 0.85, PolicyKind.PRIORITY_LRU);
            AvailabilityDriver driver = new AvailabilityDriver(trace, s.peers(), s.peerCapacity(), s.trace().step(),
                    (p, bytes) -> lenders.get(p).demand(bytes));
            if (peers == Peers.STATIC) {
                for (int p = 0; p < s.peers(); p++) {
                    lenders.get(p).lendable((long) stats.peers().get(p).meanFree());
                }
            } else if (peers == Peers.CHURN) {
                driver.apply(0);
            }
            try (TieredStore store = b.build(); StoreReplay replay = factory.open(store)) {
                settle(client, lenders, peerTier, store);
                int steps = driver.steps();
                int perStep = (int) Math.ceil((double) refs.length / steps);
                int next = 0;
                for (int step = 0; step < steps && next < refs.length; step++) {
                    if (peers == Peers.CHURN) {
                        traceNanos.set(traceNanos(s, step));
                        driver.apply(step);
                        settle(client, lenders, peerTier, store);
                    }
                    int end = Math.min(refs.length, next + perStep);
                    for (; next < end; next++) {
                        replay.reference(refs[next], tally);
                    }
                }
                store.absorbRevocations();
                long revocations = 0;
                if (client != null) {
                    for (PeerClientStats.Peer p : client.stats().peers()) {
                        revocations += p.revocations();
                    }
                }
                StoreTierStats peerMetrics = peerTier == null ? null : store.stats().tier(peerTier.name());
                return new Run(tally, revocations, store.revocations().lossyDropped(),
                        peerMetrics == null ? 0 : peerMetrics.bytesIn());
            }
        } finally {
            if (peerTier != null) {
                peerTier.close();
            }
            if (client != null) {
                client.close(); // closes the lenders
            }
        }
    }

    /**
     * Lets revocations under way finish, so each step's workload sees the peers as the trace says:
     * first every event the lenders posted (a lender asks for its memory back on its own event
     * thread) has reached the client, then the client has ended those leases. Waiting for the
     * client alone raced the lenders' event threads: a revocation that had not yet reached it
     * arrived in the middle of the step's references, at a point that changed from run to run.
     */
    private static void settle(PeerClient client, List<LocalLender> lenders, PeerTier tier, TieredStore store) {
        if (client == null) {
            return;
        }
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (!(lenders.stream().allMatch(LocalLender::eventsDelivered) && client.revocationsIdle())
                && System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000);
        }
        if (store != null) {
            store.absorbRevocations();
        }
        tier.refresh();
    }

    /** A growable list of longs. */
    private static final class LongList {
        private long[] a = new long[1024];
        private int n;

        void add(long v) {
            if (n == a.length) {
                a = java.util.Arrays.copyOf(a, n * 2);
            }
            a[n++] = v;
        }

        long[] toArray() {
            return java.util.Arrays.copyOf(a, n);
        }
    }
}
