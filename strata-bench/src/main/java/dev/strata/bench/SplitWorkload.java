package dev.strata.bench;

import dev.strata.analysis.routing.KvBlockStream;
import dev.strata.cache.routing.BurstStart;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import dev.strata.cache.routing.RoutingTraceHeader;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Synthetic serving traces for the expert/KV split: bursts (one decode turn of one session each)
 * carrying the expert references of every step and layer and the KV blocks the turn reads.
 *
 * <p>Model. A workflow routes each token, at each layer, to {@code topK} distinct experts: each
 * pick comes from the workflow's hot set of that layer (a fixed random subset of {@code hotSet}
 * experts) with probability {@code hotProbability}, otherwise from all experts. A session holds a
 * context of KV blocks that grows by {@code growthBlocks} per turn; a turn reads its whole context
 * once (the prefix it attends over) and appends the new blocks; past {@code maxContextBlocks} the
 * session ends and a fresh one takes its place, so the stream stays stationary. Each burst picks a session at
 * random, so a session's blocks are reused across turns at a distance set by the other sessions'
 * contexts: many long sessions make the KV stream the pressured one, few short sessions with a wide
 * hot set make the expert stream the pressured one.
 *
 * <p>Immutable once generated; any thread.
 */
final class SplitWorkload {

    /**
     * One workflow's shape.
     *
     * @param name           short name for reports
     * @param hotSet         experts per layer in the workflow's hot set
     * @param hotProbability chance a pick comes from the hot set
     * @param sessions       concurrent sessions the bursts rotate among
     * @param contextBlocks  blocks of a session's context at its first turn
     * @param growthBlocks   blocks a turn appends
     * @param maxContextBlocks a session whose context would pass this ends; a new one takes its place
     * @param stepsPerBurst  decode steps per turn
     */
    record Profile(String name, int hotSet, double hotProbability, int sessions, int contextBlocks, int growthBlocks,
                   int maxContextBlocks, int stepsPerBurst) {
    }

    /**
     * One burst.
     *
     * @param experts  [step][layer][i] the distinct expert ids layer {@code layer} needs in step
     *                 {@code step} (the union over the step's tokens)
     * @param kvBlocks block ids read in order (session in the high bits)
     * @param peak     blocks the turn holds at once (its context after the turn)
     */
    record Burst(int[][][] experts, long[] kvBlocks, long peak) {
    }

    final int layers; // MoE layers
    final int expertsPerLayer;
    final int topK;
    final List<Burst> bursts;

    private SplitWorkload(int layers, int expertsPerLayer, int topK, List<Burst> bursts) {
        this.layers = layers;
        this.expertsPerLayer = expertsPerLayer;
        this.topK = topK;
        this.bursts = bursts;
    }

    /** {@code bursts} bursts of {@code phases} in order, each phase an equal share, with its own sessions and hot sets. */
    static SplitWorkload generate(int layers, int experts, int topK, int bursts, long seed, Profile... phases) {
        SplittableRandom random = new SplittableRandom(seed);
        List<Burst> out = new ArrayList<>(bursts);
        long nextSession = 0;
        for (int p = 0; p < phases.length; p++) {
            Profile profile = phases[p];
            int count = p == phases.length - 1 ? bursts - out.size() : bursts / phases.length;
            int[][] hot = new int[layers][];
            for (int l = 0; l < layers; l++) {
                hot[l] = sample(random, experts, profile.hotSet());
            }
            int[] context = new int[profile.sessions()];
            java.util.Arrays.fill(context, profile.contextBlocks());
            long[] ids = new long[profile.sessions()]; // the session each slot serves now
            for (int i = 0; i < ids.length; i++) {
                ids[i] = nextSession++;
            }
            for (int b = 0; b < count; b++) {
                int s = random.nextInt(profile.sessions());
                int[][][] steps = new int[profile.stepsPerBurst()][layers][topK];
                for (int[][] step : steps) {
                    for (int l = 0; l < layers; l++) {
                        pick(random, experts, hot[l], profile.hotProbability(), topK, step[l], 0);
                    }
                }
                if (context[s] + profile.growthBlocks() > profile.maxContextBlocks()) {
                    ids[s] = nextSession++;
                    context[s] = profile.contextBlocks();
                }
                context[s] += profile.growthBlocks();
                long[] kv = new long[context[s]];
                for (int i = 0; i < kv.length; i++) {
                    kv[i] = (ids[s] << 32) | i;
                }
                out.add(new Burst(steps, kv, context[s]));
            }
        }
        return new SplitWorkload(layers, experts, topK, List.copyOf(out));
    }

    /**
     * A workload from a routing trace (bursts as its burst markers say) and a KV block stream whose
     * references are spread evenly over the bursts in order (the two generators share no turn
     * boundaries); a burst's peak is the distinct blocks of its share.
     */
    static SplitWorkload fromRouting(RoutingTraceHeader header, Iterator<RoutingRecord> records, KvBlockStream kv) {
        List<int[][][]> bursts = new ArrayList<>();
        List<int[][]> current = new ArrayList<>();
        int[] seenAt = new int[header.experts()];
        int stamp = 0;
        while (records.hasNext()) {
            RoutingRecord r = records.next();
            if (r instanceof BurstStart && !current.isEmpty()) {
                bursts.add(current.toArray(new int[0][][]));
                current = new ArrayList<>();
            } else if (r instanceof RoutingStep step) {
                int[][] layersOfStep = new int[header.layers()][];
                for (int l = 0; l < header.layers(); l++) {
                    stamp++;
                    int[] union = new int[step.tokens() * step.topK()];
                    int n = 0;
                    for (int t = 0; t < step.tokens(); t++) {
                        for (int k = 0; k < step.topK(); k++) {
                            int e = step.expert(l, t, k);
                            if (seenAt[e] != stamp) {
                                seenAt[e] = stamp;
                                union[n++] = e;
                            }
                        }
                    }
                    layersOfStep[l] = java.util.Arrays.copyOf(union, n);
                }
                current.add(layersOfStep);
            }
        }
        if (!current.isEmpty()) {
            bursts.add(current.toArray(new int[0][][]));
        }
        java.util.ArrayList<Long> refs = new java.util.ArrayList<>();
        kv.forEach(refs::add);
        List<Burst> out = new ArrayList<>(bursts.size());
        for (int b = 0; b < bursts.size(); b++) {
            int from = (int) ((long) refs.size() * b / bursts.size());
            int to = (int) ((long) refs.size() * (b + 1) / bursts.size());
            long[] blocks = new long[to - from];
            for (int i = from; i < to; i++) {
                blocks[i - from] = refs.get(i);
            }
            out.add(new Burst(bursts.get(b), blocks, java.util.Arrays.stream(blocks).distinct().count()));
        }
        return new SplitWorkload(header.layers(), header.experts(), header.topK(), List.copyOf(out));
    }

    /** The largest context any burst holds. */
    long maxPeak() {
        long m = 0;
        for (Burst b : bursts) {
            m = Math.max(m, b.peak());
        }
        return m;
    }

    private static int[] sample(SplittableRandom random, int n, int k) {
        int[] all = new int[n];
        for (int i = 0; i < n; i++) {
            all[i] = i;
        }
        for (int i = 0; i < k; i++) {
            int j = i + random.nextInt(n - i);
            int t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        return java.util.Arrays.copyOf(all, k);
    }

    private static void pick(SplittableRandom random, int experts, int[] hot, double hotProbability, int topK, int[] dst, int at) {
        for (int s = 0; s < topK; s++) {
            int e;
            do {
                e = random.nextDouble() < hotProbability ? hot[random.nextInt(hot.length)] : random.nextInt(experts);
            } while (contains(dst, at, s, e));
            dst[at + s] = e;
        }
    }

    private static boolean contains(int[] a, int from, int n, int v) {
        for (int i = from; i < from + n; i++) {
            if (a[i] == v) {
                return true;
            }
        }
        return false;
    }
}
