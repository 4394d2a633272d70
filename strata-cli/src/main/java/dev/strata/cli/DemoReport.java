package dev.strata.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.strata.engine.tokenizer.ChatMessage;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Predicate;

/**
 * What {@code strata demo} measured, summarised: KV prefix hits per tier, TTFT of cold and warm
 * turns (warm from this instance's own tiers, or from blocks the other instance wrote into the
 * pool), decode speed, the expert hit rate, whether every output matched the unpaged run, and the
 * cleanup; with a peer agent, the KV blocks and expert fetches served from the peer, the bytes kept
 * off the host link and the revocations; with the live expert/KV split, the split each instance
 * ended on. With two machines (one instance each, over a pool of its own, sharing a Redis Cluster)
 * the KV blocks loaded from the cluster are a column of their own and a TTFT row (warm from blocks
 * the other machine wrote), and each machine's {@code strata_cluster_*} counters are listed.
 * Prints a table and writes the same facts as JSON.
 *
 * <p>Not thread-safe: one thread fills and prints it.
 */
final class DemoReport {
    /** Where a turn's prompt KV came from. */
    enum Warmth {
        /** Nothing cached: the whole prompt computed. */
        COLD,
        /** Cached blocks of this instance only (DEVICE, HOST, DISK). */
        LOCAL,
        /** At least one block another instance wrote into the shared pool. */
        CROSS_INSTANCE,
        /** At least one block loaded from the cluster, which the other machine wrote. */
        CLUSTER
    }

    /**
     * One request of the replay, with the prefix blocks it found where (the deltas of the
     * instance's {@code strata_kv_*} counters across the request) and the unpaged run's output.
     */
    static final class Turn {
        final String label; // "probe 1" or "session 2 turn 3"
        final int session; // -1 for probes
        final int instance; // 0 (A) or 1 (B)
        final DemoClient.Reply reply;
        final double device; // prefix blocks found in DEVICE slots
        final double host; // ... in the instance's HOST tier
        final double disk; // ... in its DISK tier
        final double shared; // ... in the shared store: the pool shared with the other instance, and the cluster behind it
        final double misses; // full prompt blocks past the cached prefix
        double peer; // ... on memory lent by the peer agent
        double cluster; // ... of those in the shared store, loaded from the cluster (strata_cluster_hits_total)
        boolean poolOfItsOwn; // the instance is alone on its pool (two machines): blocks found there are its own
        List<ChatMessage> messages; // what was sent
        String reference; // the unpaged run's text, null until it ran
        int referenceTokens = -1;

        Turn(String label, int session, int instance, DemoClient.Reply reply, double device, double host, double disk,
             double shared, double misses) {
            this.label = label;
            this.session = session;
            this.instance = instance;
            this.reply = reply;
            this.device = device;
            this.host = host;
            this.disk = disk;
            this.shared = shared;
            this.misses = misses;
        }

        /** Prefix blocks found in the pool: the shared store's less the cluster's. */
        double pool() {
            return Math.max(0, shared - cluster);
        }

        Warmth warmth() {
            if (cluster > 0) {
                return Warmth.CLUSTER;
            }
            if (pool() > 0 && !poolOfItsOwn) {
                return Warmth.CROSS_INSTANCE;
            }
            return device + host + disk + peer + pool() > 0 ? Warmth.LOCAL : Warmth.COLD;
        }

        boolean identical() {
            return reply.text().equals(reference) && reply.completionTokens() == referenceTokens;
        }
    }

    /**
     * The expert/KV split one instance ended on, read from its {@code strata_split_*} metrics.
     *
     * @param budgetBytes         DEVICE bytes the two sides share
     * @param expertSlotsPerLayer expert slots per MoE layer
     * @param expertBytes         DEVICE bytes of the expert slots
     * @param kvBlocks            KV block slots
     * @param kvBytes             DEVICE bytes of the KV slots
     * @param applied             resizes applied over the instance's life
     * @param failed              resizes refused (the previous split kept, or not even that)
     */
    record Split(long budgetBytes, int expertSlotsPerLayer, long expertBytes, long kvBlocks, long kvBytes, long applied, long failed) {
        /** The split in {@code metrics} (one scrape of {@code /metrics}), or null when the instance runs none. */
        static Split of(Map<String, Double> metrics) {
            if (!metrics.containsKey("strata_split_budget_bytes")) {
                return null;
            }
            return new Split(metrics.get("strata_split_budget_bytes").longValue(),
                    (int) DemoClient.sum(metrics, "strata_split_expert_slots_per_layer"),
                    (long) DemoClient.sample(metrics, "strata_split_bytes", "side", "experts"), (long) DemoClient.sum(metrics, "strata_split_kv_blocks"),
                    (long) DemoClient.sample(metrics, "strata_split_bytes", "side", "kv"),
                    (long) DemoClient.sample(metrics, "strata_split_resizes_total", "outcome", "applied"),
                    (long) (DemoClient.sum(metrics, "strata_split_resizes_total")
                            - DemoClient.sample(metrics, "strata_split_resizes_total", "outcome", "applied")));
        }
    }

    /**
     * One machine's {@code strata_cluster_*} counters at the end of the replay (the instance's whole life).
     *
     * @param hits         blocks read from the cluster and verified
     * @param misses       block reads that found no value
     * @param readBytes    payload bytes of those hits
     * @param writtenBytes payload bytes this machine published to the cluster
     */
    record ClusterCounters(double hits, double misses, double readBytes, double writtenBytes) {
        /** The counters in {@code metrics} (one scrape of {@code /metrics}); 0 where a family is absent. */
        static ClusterCounters of(Map<String, Double> metrics) {
            return new ClusterCounters(DemoClient.sum(metrics, "strata_cluster_hits_total"), DemoClient.sum(metrics, "strata_cluster_misses_total"),
                    DemoClient.sum(metrics, "strata_cluster_read_bytes_total"), DemoClient.sum(metrics, "strata_cluster_written_bytes_total"));
        }
    }

    /** The two instances' names (with two machines, also the machines'). */
    static final String[] INSTANCE_NAMES = {"A", "B"};

    final List<Turn> turns = new ArrayList<>(); // probes first, then the sessions' turns in replay order
    final String[] instanceNames = INSTANCE_NAMES;
    final long[] instancePids = new long[2];
    final List<Long> nodePids = new ArrayList<>(); // one node per machine
    int machines = 1; // 1: both instances on one node's pool; 2: one instance per machine, sharing the cluster
    List<String> clusterNodes = List.of(); // host:port of the local Redis Cluster's nodes (two machines)
    final ClusterCounters[] clusterCounters = new ClusterCounters[2]; // per machine at the end; null with one machine
    int clusterNodesStopped = -1; // nodes of the local Redis Cluster the cleanup stopped; -1: none ran
    final double[] expertHits = new double[2]; // over the replay, per instance
    final double[] expertMisses = new double[2];
    String setup = ""; // one line describing model, caps and tiers
    int sessions;
    int turnsPerSession;
    boolean childrenStopped;
    boolean shmRemoved;
    Path shmDir;
    double seconds; // the whole demo's wall time, model synthesis excluded
    boolean peer; // a strata peer agent lent memory to both instances
    long peerPid;
    long kvBlockBytes; // bytes of one KV block (all layers, K and V)
    int reclaimedAfterTurn; // the peer's demand rose after this many turns of each session (0: never)
    int deviceKvBlocks; // DEVICE KV blocks per instance (--kv-blocks)
    long hostKvBytes; // HOST KV tier per instance (0: none)
    long diskKvBytes; // DISK KV tier per instance (0: none)
    long peerKvBytes; // PEER KV tier per instance (0: none; only with a peer)
    final double[] expertFromPeer = new double[2]; // pager misses served from peer copies, per instance, over the replay
    final double[] expertBytesFromPeer = new double[2]; // their bytes
    final double[] revocations = new double[2]; // leases the peer took back from each instance (any reason)
    final boolean[] peerAlive = new boolean[2]; // each instance still saw the peer alive at the end
    final Split[] splits = new Split[2]; // the expert/KV split each instance ended on; null where it ran none

    private List<Turn> replay() {
        return turns.stream().filter(t -> t.session >= 0).toList();
    }

    /** Whether every replayed turn's output equals the unpaged run's. */
    boolean identical() {
        return !replay().isEmpty() && replay().stream().allMatch(Turn::identical);
    }

    long crossInstanceTurns() {
        return replay().stream().filter(t -> t.warmth() == Warmth.CROSS_INSTANCE).count();
    }

    double crossInstanceBlocks() {
        return replay().stream().filter(t -> !t.poolOfItsOwn).mapToDouble(Turn::pool).sum();
    }

    long clusterTurns() {
        return replay().stream().filter(t -> t.warmth() == Warmth.CLUSTER).count();
    }

    double clusterBlocks() {
        return replay().stream().mapToDouble(t -> t.cluster).sum();
    }

    private static double median(List<Double> v) {
        if (v.isEmpty()) {
            return Double.NaN;
        }
        List<Double> s = v.stream().sorted().toList();
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    private double ttftMillis(Predicate<Turn> which) {
        return median(turns.stream().filter(which).map(t -> t.reply.ttftNanos() / 1e6).toList());
    }

    private double promptTokens(Predicate<Turn> which) {
        return turns.stream().filter(which).mapToInt(t -> t.reply.promptTokens()).average().orElse(Double.NaN);
    }

    private long count(Predicate<Turn> which) {
        return turns.stream().filter(which).count();
    }

    /** Generated tokens after the first over the decode time, all replayed turns. */
    double decodeTokensPerSecond() {
        double tokens = 0;
        double nanos = 0;
        for (Turn t : replay()) {
            if (t.reply.completionTokens() > 1) {
                tokens += t.reply.completionTokens() - 1;
                nanos += t.reply.decodeNanos();
            }
        }
        return nanos == 0 ? Double.NaN : tokens / (nanos / 1e9);
    }

    double expertHitRate() {
        double h = expertHits[0] + expertHits[1];
        double m = expertMisses[0] + expertMisses[1];
        return h + m == 0 ? Double.NaN : h / (h + m);
    }

    /** {device, host, disk, pool, miss, peer, cluster} prefix blocks of the replay on {@code instance} (-1: both). */
    double[] kvBlocks(int instance) {
        double[] b = new double[7];
        for (Turn t : replay()) {
            if (instance < 0 || t.instance == instance) {
                b[0] += t.device;
                b[1] += t.host;
                b[2] += t.disk;
                b[3] += t.pool();
                b[4] += t.misses;
                b[5] += t.peer;
                b[6] += t.cluster;
            }
        }
        return b;
    }

    /**
     * One line for each column of the KV table that is empty over both instances (and for PEER
     * when no peer ran), saying why and which flag would fill it; empty when every column served
     * blocks.
     */
    List<String> emptyColumns() {
        double[] b = kvBlocks(-1);
        List<String> why = new ArrayList<>();
        if (replay().isEmpty()) {
            return why;
        }
        if (b[0] == 0) {
            why.add("DEVICE 0.0%: no prefix block was still in a DEVICE slot when a turn asked for it; raise --kv-blocks (now "
                    + deviceKvBlocks + ") to see it");
        }
        if (hostKvBytes == 0) {
            why.add("HOST: no HOST KV tier in this run (--host-kv 0), so evicted blocks are not kept by the instance");
        } else if (b[1] == 0 && b[2] > 0) {
            why.add("HOST 0.0%: every block asked for again" + (peer ? " and not still on the peer" : "")
                    + " had already moved on from HOST to DISK; raise --host-kv (now " + dev.strata.memory.Sizes.format(hostKvBytes)
                    + ") to see it");
        } else if (b[1] == 0) {
            why.add("HOST 0.0%: every block asked for again was still in DEVICE" + (peer ? " or on the peer" : "")
                    + ", or found in the pool first; lower --kv-blocks (now " + deviceKvBlocks + ") or " + fartherApart());
        }
        if (diskKvBytes == 0) {
            why.add("DISK: no DISK KV tier in this run (--disk-kv 0)");
        } else if (b[2] == 0) {
            why.add("DISK 0.0%: every block asked for again was still in DEVICE, " + (peer ? "on the peer, " : "")
                    + "in HOST or found in the pool first; lower --host-kv (now " + dev.strata.memory.Sizes.format(hostKvBytes)
                    + ") or " + fartherApart());
        }
        if (b[3] == 0 && machines == 2) {
            why.add("POOL 0.0%: each machine runs one instance, so its pool holds only blocks that instance wrote, and every block "
                    + "it asked for again was still in its own tiers");
        } else if (b[3] == 0) {
            why.add("POOL 0.0%: no turn found blocks the other instance wrote before its own tiers ran out; a session's turns alternate "
                    + "between the instances, so raise --turns (now " + turnsPerSession + ") to 2 or more to see it");
        }
        if (machines == 2 && b[6] == 0) {
            why.add("CLUSTER 0.0%: no turn found blocks the other machine wrote; sessions share their system prompt and a session's turns "
                    + "alternate between the machines, so raise --sessions (now " + sessions + ") or --turns (now " + turnsPerSession
                    + ") to 2 or more to see it");
        }
        if (b[4] == 0) {
            why.add("computed 0.0%: every prompt block was found cached");
        }
        if (!peer && machines == 2) {
            why.add("PEER: no strata peer agent in this run (--machines 2 runs none), so no instance borrows memory");
        } else if (!peer) {
            why.add("PEER: no strata peer agent in this run (--no-peer), so no instance borrows memory");
        } else if (peerKvBytes == 0) {
            why.add("PEER: no PEER KV tier in this run (--peer-kv 0); the peer lends for expert copies only");
        } else if (b[5] == 0) {
            why.add("PEER 0.0%: no block asked for again was still on the peer: each was still in DEVICE, had moved down to HOST"
                    + (reclaimedAfterTurn > 0 ? ", or was lost when the peer took its memory back after turn " + reclaimedAfterTurn : "")
                    + "; lower --kv-blocks (now " + deviceKvBlocks + ") or " + fartherApart());
        }
        return why;
    }

    /**
     * The end of a hint for a lower tier left empty: how to make a session's blocks come back to
     * the instance that holds them after more traffic has pushed them down. A session's turns
     * alternate between the instances, so only from its third turn does it ask its first turn's
     * instance again; until then, the other sessions' turns are what push its blocks out of DEVICE
     * (more turns of its own do not: they run after it came back).
     */
    private String fartherApart() {
        if (turnsPerSession < 3) {
            return "raise --turns (now " + turnsPerSession + ") to 3 or more to see it: turns alternate between the instances, so a "
                    + "session first comes back to an instance at its third turn";
        }
        return "raise --sessions (now " + sessions + ") to see it: the more sessions, the more turns come between two of a "
                + "session's and push its blocks down";
    }

    /** KV blocks found on the peer, both instances. */
    double kvBlocksFromPeer() {
        return kvBlocks(-1)[5];
    }

    /** Bytes served from the peer instead of over the host link: KV blocks found there and expert fetches. */
    double bytesKeptOffHostLink() {
        return kvBlocksFromPeer() * kvBlockBytes + expertBytesFromPeer[0] + expertBytesFromPeer[1];
    }

    private static Predicate<Turn> warmth(Warmth w) {
        return t -> t.warmth() == w;
    }

    void print(PrintStream out) {
        out.println();
        if (machines == 2) {
            out.println("strata demo: two machines on this host, each a strata node over its own pool with one engine instance, "
                    + "sharing KV only through a local Redis Cluster");
        } else {
            out.println("strata demo: two engine instances sharing one KV pool through strata node");
        }
        out.println("  " + setup);
        out.printf(Locale.ROOT, "  replayed %d sessions × %d turns (%d requests) with one shared system prompt; turns alternate A, B, A, ...%n",
                sessions, turnsPerSession, replay().size());
        out.println();
        if (machines == 2) {
            out.println("  KV prefix blocks found    DEVICE    HOST    DISK    POOL (own machine)    CLUSTER (other machine)    computed");
        } else {
            out.println("  KV prefix blocks found    DEVICE    HOST    DISK    POOL (other instance)    computed" + (peer ? "      PEER" : ""));
        }
        for (int i = -1; i < 2; i++) {
            double[] b = kvBlocks(i);
            double total = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6];
            String unit = machines == 2 ? "machine" : "instance";
            String who = i < 0 ? "both " + unit + "s" : unit + " " + instanceNames[i];
            if (machines == 2) {
                out.printf(Locale.ROOT, "    %-23s %6s  %6s  %6s  %19s  %25s  %10s%n", who, pct(b[0], total), pct(b[1], total), pct(b[2], total),
                        pct(b[3], total), pct(b[6], total), pct(b[4], total));
            } else {
                out.printf(Locale.ROOT, "    %-23s %6s  %6s  %6s  %22s  %10s%s%n", who, pct(b[0], total), pct(b[1], total), pct(b[2], total),
                        pct(b[3], total), pct(b[4], total), peer ? String.format(Locale.ROOT, "  %8s", pct(b[5], total)) : "");
            }
        }
        for (String line : emptyColumns()) {
            out.println("    " + line);
        }
        out.println();
        out.println("  time to first token (median)              turns   prompt tokens   TTFT");
        Object[][] rows = machines == 2 ? new Object[][] {
                {"cold (nothing cached)", warmth(Warmth.COLD)},
                {"warm, this machine's tiers and pool", warmth(Warmth.LOCAL)},
                {"warm, from the cluster (other machine)", warmth(Warmth.CLUSTER)}} : new Object[][] {
                {"cold (nothing cached)", warmth(Warmth.COLD)},
                {"warm, this instance's tiers", warmth(Warmth.LOCAL)},
                {"warm, blocks the other instance wrote", warmth(Warmth.CROSS_INSTANCE)}};
        for (Object[] r : rows) {
            @SuppressWarnings("unchecked")
            Predicate<Turn> p = (Predicate<Turn>) r[1];
            out.printf(Locale.ROOT, "    %-40s %5d   %13.0f   %s%n", r[0], count(p), promptTokens(p), millis(ttftMillis(p)));
        }
        if (machines == 2) {
            out.printf(Locale.ROOT, "  cluster hits: %d turns loaded %.0f blocks from the cluster that the other machine wrote%n",
                    clusterTurns(), clusterBlocks());
            for (int i = 0; i < 2; i++) {
                ClusterCounters c = clusterCounters[i];
                if (c != null) {
                    out.printf(Locale.ROOT, "    machine %s's /metrics: strata_cluster_hits_total %.0f, strata_cluster_misses_total %.0f, "
                                    + "%s read, %s written%n", instanceNames[i], c.hits(), c.misses(),
                            dev.strata.memory.Sizes.format((long) c.readBytes()), dev.strata.memory.Sizes.format((long) c.writtenBytes()));
                }
            }
        } else {
            out.printf(Locale.ROOT, "  cross-instance hits: %d turns loaded %.0f blocks from the pool that the other instance wrote%n",
                    crossInstanceTurns(), crossInstanceBlocks());
        }
        out.printf(Locale.ROOT, "  decode: %.1f tokens/s per instance (tokens after the first over their time, all turns)%n",
                decodeTokensPerSecond());
        double fromPeer = expertFromPeer[0] + expertFromPeer[1];
        double misses = expertMisses[0] + expertMisses[1];
        if (peer) {
            out.printf(Locale.ROOT, "  experts: hit rate %s (%.0f hits, %.0f fetched: %.0f from the peer, %.0f from HOST masters)%n",
                    pct(expertHitRate(), 1), expertHits[0] + expertHits[1], misses, fromPeer, misses - fromPeer);
        } else {
            out.printf(Locale.ROOT, "  experts: hit rate %s (%.0f hits, %.0f fetched from HOST masters)%n", pct(expertHitRate(), 1),
                    expertHits[0] + expertHits[1], misses);
        }
        if (peer) {
            out.printf(Locale.ROOT, "  peer memory (strata peer, pid %d): %.0f KV blocks and %.0f expert fetches served from the peer, "
                            + "%s kept off the host link%n", peerPid, kvBlocksFromPeer(), expertFromPeer[0] + expertFromPeer[1],
                    dev.strata.memory.Sizes.format((long) bytesKeptOffHostLink()));
            out.printf(Locale.ROOT, "    the peer took memory back after turn %d: %.0f leases revoked (A %.0f, B %.0f); peer still alive: %s%n",
                    reclaimedAfterTurn, revocations[0] + revocations[1], revocations[0], revocations[1],
                    peerAlive[0] && peerAlive[1] ? "yes" : "no");
        }
        for (int i = 0; i < 2; i++) {
            Split s = splits[i];
            if (s != null) {
                out.printf(Locale.ROOT, "  split on %s: ended on %d expert slots per layer (%s) and %d KV blocks (%s) of its %s budget; "
                                + "%d resizes applied, %d failed%n", instanceNames[i], s.expertSlotsPerLayer(),
                        dev.strata.memory.Sizes.format(s.expertBytes()), s.kvBlocks(), dev.strata.memory.Sizes.format(s.kvBytes()),
                        dev.strata.memory.Sizes.format(s.budgetBytes()), s.applied(), s.failed());
            }
        }
        long same = replay().stream().filter(Turn::identical).count();
        out.printf(Locale.ROOT, "  outputs byte-identical to an unpaged in-process run: %s (%d of %d turns)%n", identical() ? "yes" : "NO",
                same, replay().size());
        for (Turn t : replay()) {
            if (!t.identical()) {
                out.printf(Locale.ROOT, "    %s on %s differs: served %d tokens %s, unpaged %d tokens %s%n", t.label,
                        instanceNames[t.instance], t.reply.completionTokens(), quote(t.reply.text()), t.referenceTokens,
                        quote(t.reference));
            }
        }
        out.printf(Locale.ROOT, "  cleanup: child processes stopped: %s; %s%s removed: %s%n", childrenStopped ? "yes" : "NO",
                clusterNodesStopped >= 0 ? "local Redis Cluster stopped (" + clusterNodesStopped + " of " + clusterNodes.size() + " nodes); " : "",
                shmDir, shmRemoved ? "yes" : "NO");
        out.printf(Locale.ROOT, "  finished in %.1f s%n", seconds);
        out.flush();
    }

    void writeJson(Path file) {
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ObjectNode root = json.createObjectNode();
        root.put("setup", setup).put("sessions", sessions).put("turns", turnsPerSession).put("requests", replay().size());
        ObjectNode kv = root.putObject("kv_prefix_blocks");
        for (int i = -1; i < 2; i++) {
            double[] b = kvBlocks(i);
            ObjectNode row = kv.putObject(i < 0 ? "both" : instanceNames[i]).put("device", b[0]).put("host", b[1]).put("disk", b[2])
                    .put("pool", b[3]).put("computed", b[4]).put("peer", b[5]);
            if (machines == 2) {
                row.put("cluster", b[6]);
            }
        }
        ArrayNode empty = root.putArray("empty_columns");
        emptyColumns().forEach(empty::add);
        ObjectNode ttft = root.putObject("ttft_ms");
        for (Warmth w : Warmth.values()) {
            if (w == (machines == 2 ? Warmth.CROSS_INSTANCE : Warmth.CLUSTER)) {
                continue; // never happens in this shape
            }
            ttft.putObject(w.name().toLowerCase(Locale.ROOT)).put("turns", count(warmth(w))).put("median", ttftMillis(warmth(w)))
                    .put("prompt_tokens", promptTokens(warmth(w)));
        }
        root.put("cross_instance_turns", crossInstanceTurns()).put("cross_instance_blocks", crossInstanceBlocks());
        if (machines == 2) {
            root.put("machines", machines);
            ObjectNode c = root.putObject("cluster");
            ArrayNode nodes = c.putArray("nodes");
            clusterNodes.forEach(nodes::add);
            c.put("turns", clusterTurns()).put("blocks", clusterBlocks()).put("nodes_stopped", clusterNodesStopped);
            for (int i = 0; i < 2; i++) {
                ClusterCounters k = clusterCounters[i];
                if (k != null) {
                    c.putObject(instanceNames[i]).put("hits", k.hits()).put("misses", k.misses()).put("read_bytes", k.readBytes())
                            .put("written_bytes", k.writtenBytes());
                }
            }
        }
        root.put("decode_tokens_per_s", decodeTokensPerSecond()).put("expert_hit_rate", expertHitRate());
        root.put("byte_identical", identical()).put("seconds", seconds);
        root.put("children_stopped", childrenStopped).put("shm_removed", shmRemoved).put("shm_dir", String.valueOf(shmDir));
        if (peer) {
            root.putObject("peer").put("pid", peerPid).put("kv_blocks", kvBlocksFromPeer())
                    .put("expert_fetches", expertFromPeer[0] + expertFromPeer[1])
                    .put("bytes_kept_off_host_link", bytesKeptOffHostLink()).put("reclaimed_after_turn", reclaimedAfterTurn)
                    .put("revocations", revocations[0] + revocations[1]).put("alive", peerAlive[0] && peerAlive[1]);
        }
        ObjectNode split = root.putObject("split");
        for (int i = 0; i < 2; i++) {
            Split s = splits[i];
            if (s == null) {
                split.putNull(instanceNames[i]);
            } else {
                split.putObject(instanceNames[i]).put("budget_bytes", s.budgetBytes()).put("expert_slots_per_layer", s.expertSlotsPerLayer())
                        .put("expert_bytes", s.expertBytes()).put("kv_blocks", s.kvBlocks()).put("kv_bytes", s.kvBytes())
                        .put("resizes_applied", s.applied()).put("resizes_failed", s.failed());
            }
        }
        ArrayNode pids = root.putArray("pids");
        nodePids.forEach(pids::add);
        pids.add(instancePids[0]).add(instancePids[1]);
        if (peer) {
            pids.add(peerPid);
        }
        ArrayNode list = root.putArray("turns_detail");
        for (Turn t : turns) {
            list.addObject().put("label", t.label).put("instance", instanceNames[t.instance]).put("warmth", t.warmth().name())
                    .put("prompt_tokens", t.reply.promptTokens()).put("completion_tokens", t.reply.completionTokens())
                    .put("ttft_ms", t.reply.ttftNanos() / 1e6).put("device", t.device).put("host", t.host).put("disk", t.disk)
                    .put("pool", t.pool()).put("computed", t.misses).put("peer", t.peer)
                    .put("identical", t.session < 0 || t.identical());
            if (machines == 2) {
                ((ObjectNode) list.get(list.size() - 1)).put("cluster", t.cluster);
            }
        }
        try {
            Files.writeString(file, json.writeValueAsString(root));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the demo report " + file + ": " + e.getMessage(), e);
        }
    }

    private static String pct(double part, double whole) {
        return whole == 0 || Double.isNaN(part) ? "-" : String.format(Locale.ROOT, "%.1f%%", 100 * part / whole);
    }

    private static String millis(double ms) {
        return Double.isNaN(ms) ? "-" : String.format(Locale.ROOT, "%.0f ms", ms);
    }

    private static String quote(String s) {
        if (s == null) {
            return "(none)";
        }
        String q = s.replace("\n", "\\n");
        return "\"" + (q.length() > 60 ? q.substring(0, 57) + "..." : q) + "\"";
    }
}
