package dev.strata.bench;

import dev.strata.analysis.routing.RoutingTraceGenerator;
import dev.strata.analysis.routing.RoutingWorkload;
import dev.strata.analysis.routing.SyntheticKvBlockStream;
import dev.strata.cache.curve.ReuseDistanceTracker;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingStep;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Measures how fast exact LRU reuse distances are computed ({@link ReuseDistanceTracker}: a
 * Fenwick tree over reference times) on generated streams, against the naive stack walk (find the
 * item in a recency-ordered array, its depth is the distance, move it to the top) on the same
 * stream in the same run, in references per second. The stack walk costs O(distance) per
 * reference, so it is timed on a prefix of the stream; both sides' distances over that prefix are
 * compared, so a wrong tracker fails the measurement instead of looking fast.
 *
 * <p>Streams: the expert stream of a generated routing trace (default workload, one cache shared
 * by the layers, key = layer and expert) and a synthetic multi-turn KV block stream with many
 * distinct blocks. Runs on the calling thread.
 */
public final class ReuseDistanceMeasure {
    private ReuseDistanceMeasure() {
    }

    /** The figures; {@code quick} shortens the streams and the rounds. Progress goes to {@code progress}. */
    public static List<Figure> figures(boolean quick, PrintStream progress) {
        Progress p = new Progress(progress, 4);
        p.step("generating the expert stream");
        long[] experts = expertStream(quick);
        p.step(String.format(Locale.ROOT, "reuse distances of %d expert references", experts.length));
        List<Figure> out = new ArrayList<>();
        out.add(measure("reuse_distance_rate_expert_stream", experts, quick ? 20_000 : 200_000, quick ? 3 : 5,
                "generated routing trace, " + (quick ? "8 layers × 64 experts" : "48 layers × 128 experts") + ", top-8, shared cache"));
        p.step("generating the KV block stream");
        long[] kv = kvStream(quick);
        p.step(String.format(Locale.ROOT, "reuse distances of %d KV block references", kv.length));
        out.add(measure("reuse_distance_rate_kv_stream", kv, quick ? 5_000 : 50_000, quick ? 3 : 5,
                "synthetic multi-turn KV sessions"));
        return out;
    }

    private static long[] expertStream(boolean quick) {
        RoutingWorkload w = RoutingWorkload.defaults();
        w = quick ? w.withShape(8, 64, 8).withLength(2, 2, 32, 256, 32) : w.withLength(12, 4, 32, 256, 32);
        RoutingTraceGenerator g = new RoutingTraceGenerator(w);
        long[] stream = new long[1 << 16];
        int n = 0;
        while (g.hasNext()) {
            RoutingRecord r = g.next();
            if (r instanceof RoutingStep s) {
                for (int l = 0; l < s.layers(); l++) {
                    for (int t = 0; t < s.tokens(); t++) {
                        for (int k = 0; k < s.topK(); k++) {
                            if (n == stream.length) {
                                stream = Arrays.copyOf(stream, n * 2);
                            }
                            stream[n++] = ((long) l << 32) | s.expert(l, t, k);
                        }
                    }
                }
            }
        }
        return Arrays.copyOf(stream, n);
    }

    private static long[] kvStream(boolean quick) {
        SyntheticKvBlockStream s = quick ? new SyntheticKvBlockStream(200, 16, 4, 16, 24, 4, 2, 7)
                : new SyntheticKvBlockStream(4000, 64, 6, 32, 48, 8, 4, 7);
        long[][] holder = {new long[1 << 16]};
        int[] n = {0};
        s.forEach(id -> {
            if (n[0] == holder[0].length) {
                holder[0] = Arrays.copyOf(holder[0], n[0] * 2);
            }
            holder[0][n[0]++] = id;
        });
        return Arrays.copyOf(holder[0], n[0]);
    }

    private static Figure measure(String name, long[] stream, int naivePrefix, int rounds, String what) {
        int prefix = Math.min(naivePrefix, stream.length);
        long expected = naiveChecksum(stream, prefix);
        ReuseDistanceTracker check = new ReuseDistanceTracker();
        long got = 0;
        for (int i = 0; i < prefix; i++) {
            got += check.access(stream[i]) + 1;
        }
        if (got != expected) {
            throw new IllegalStateException("reuse distances disagree with the stack walk on " + name + ": " + got + " vs "
                    + expected);
        }
        long[] sink = new long[1];
        Paired naiveVsTracker = Trials.paired(rounds, () -> {
            long start = System.nanoTime();
            sink[0] += naiveChecksum(stream, prefix);
            return prefix / ((System.nanoTime() - start) / 1e9);
        }, () -> {
            long start = System.nanoTime();
            ReuseDistanceTracker t = new ReuseDistanceTracker();
            long sum = 0;
            for (long item : stream) {
                sum += t.access(item);
            }
            sink[0] += sum;
            return stream.length / ((System.nanoTime() - start) / 1e9);
        });
        return Figure.paired(name, "refs/s", "naive stack-walk LRU distances", naiveVsTracker, ">= 10000000 refs/s")
                .withNote(String.format(Locale.ROOT, "%s: %d references, %d distinct; stack walk timed on the first %d",
                        what, stream.length, distinct(stream), prefix));
    }

    private static int distinct(long[] stream) {
        ReuseDistanceTracker all = new ReuseDistanceTracker();
        for (long item : stream) {
            all.access(item);
        }
        return all.distinct();
    }

    /** Sum over the first {@code n} references of (distance + 1), first sights counting 0, by the naive stack walk. */
    static long naiveChecksum(long[] stream, int n) {
        long[] stack = new long[64]; // most recent at the end
        int depth = 0;
        long sum = 0;
        for (int i = 0; i < n; i++) {
            long item = stream[i];
            int at = depth - 1;
            while (at >= 0 && stack[at] != item) {
                at--;
            }
            if (at < 0) {
                if (depth == stack.length) {
                    stack = Arrays.copyOf(stack, depth * 2);
                }
                stack[depth++] = item;
            } else {
                sum += depth - at; // distance + 1
                System.arraycopy(stack, at + 1, stack, at, depth - 1 - at);
                stack[depth - 1] = item;
            }
        }
        return sum;
    }
}
