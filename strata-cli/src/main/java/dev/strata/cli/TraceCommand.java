package dev.strata.cli;

import dev.strata.analysis.routing.KvBlockStream;
import dev.strata.analysis.routing.MooncakeKvBlockStream;
import dev.strata.analysis.routing.RoutingTraceGenerator;
import dev.strata.analysis.routing.RoutingTraceStats;
import dev.strata.analysis.routing.RoutingWorkload;
import dev.strata.analysis.routing.SyntheticKvBlockStream;
import dev.strata.cache.curve.MissCurve;
import dev.strata.cache.curve.ReuseDistanceTracker;
import dev.strata.cache.routing.RoutingRecord;
import dev.strata.cache.routing.RoutingTraceFormat;
import dev.strata.cache.routing.RoutingTraceHeader;
import dev.strata.cache.routing.RoutingTraceReader;
import dev.strata.cache.routing.RoutingTraceText;
import dev.strata.cache.routing.RoutingTraceWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata trace ...}: generates routing traces and summarises routing traces and KV block
 * streams; {@code strata trace peers ...} does the same for peer availability traces.
 */
@Command(name = "trace", mixinStandardHelpOptions = true,
        description = "Generates and inspects routing traces (expert ids per step, layer and token), KV block streams and peer availability traces.",
        subcommands = {TraceCommand.Generate.class, TraceCommand.Stats.class, TraceCommand.Kv.class, PeerTraceCommand.class})
final class TraceCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    /** {@code strata trace generate --out FILE [knobs]}: a synthetic routing trace. */
    @Command(name = "generate", mixinStandardHelpOptions = true, sortOptions = false,
            description = {"Writes a synthetic routing trace: Zipf-skewed layers, burst locality, drift and co-activation paths.",
                    "Binary by default; JSON lines with --text or an --out ending in .jsonl. Deterministic for a seed."})
    static final class Generate implements Callable<Integer> {
        private static final RoutingWorkload D = RoutingWorkload.defaults();

        @Option(names = "--out", required = true, paramLabel = "FILE", description = "the trace to write")
        Path out;
        @Option(names = "--text", description = "write the JSON-lines text form")
        boolean text;
        @Option(names = "--layers", description = "MoE layers (default: ${DEFAULT-VALUE})")
        int layers = D.layers();
        @Option(names = "--experts", description = "experts per layer (default: ${DEFAULT-VALUE})")
        int experts = D.experts();
        @Option(names = "--top-k", description = "experts per token per layer (default: ${DEFAULT-VALUE})")
        int topK = D.topK();
        @Option(names = "--model-id", paramLabel = "NAME",
                description = "the model's id in the header, as serve's --model-id names it (default: synthetic-LxE-topK)")
        String model;
        @Option(names = "--seed", description = "(default: ${DEFAULT-VALUE})")
        long seed = D.seed();
        @Option(names = "--sessions", description = "(default: ${DEFAULT-VALUE})")
        int sessions = D.sessions();
        @Option(names = "--requests", description = "requests per session (default: ${DEFAULT-VALUE})")
        int requests = D.requests();
        @Option(names = "--prefill-tokens", description = "tokens of each request's prefill step, 0 for none (default: ${DEFAULT-VALUE})")
        int prefillTokens = D.prefillTokens();
        @Option(names = "--decode-steps", description = "decode steps per request (default: ${DEFAULT-VALUE})")
        int decodeSteps = D.decodeSteps();
        @Option(names = "--burst-steps", description = "decode steps per burst (default: ${DEFAULT-VALUE})")
        int burstSteps = D.burstSteps();
        @Option(names = "--skew", description = "mean Zipf exponent of the layers' popularity (default: ${DEFAULT-VALUE})")
        double skew = D.skew();
        @Option(names = "--skew-spread", description = "per-layer spread of the exponent, 0..1 (default: ${DEFAULT-VALUE})")
        double skewSpread = D.skewSpread();
        @Option(names = "--support", description = "fraction of a layer's experts routed to at all (default: ${DEFAULT-VALUE})")
        double support = D.support();
        @Option(names = "--burst-locality", description = "probability a choice comes from the burst-local set (default: ${DEFAULT-VALUE})")
        double burstLocality = D.burstLocality();
        @Option(names = "--burst-set", description = "experts per layer in a burst-local set (default: ${DEFAULT-VALUE})")
        int burstSet = D.burstSetSize();
        @Option(names = "--drift", description = "none, abrupt or gradual (default: ${DEFAULT-VALUE})")
        String drift = "none";
        @Option(names = "--drift-period", description = "abrupt: steps between topic changes (default: ${DEFAULT-VALUE})")
        int driftPeriod = D.driftPeriod();
        @Option(names = "--drift-rate", description = "gradual: popularity swaps per layer per step (default: ${DEFAULT-VALUE})")
        double driftRate = D.driftRate();
        @Option(names = "--paths", description = "hidden paths coupling the layers (default: ${DEFAULT-VALUE})")
        int paths = D.paths();
        @Option(names = "--coupling", description = "probability a choice comes from the token's path set; 0: no co-activation (default: ${DEFAULT-VALUE})")
        double coupling = D.coupling();
        @Option(names = "--path-set", description = "experts per (layer, path) set (default: ${DEFAULT-VALUE})")
        int pathSet = D.pathSetSize();
        @Option(names = "--path-stickiness", description = "probability a token keeps its path to the next layer (default: ${DEFAULT-VALUE})")
        double pathStickiness = D.pathStickiness();

        @Override
        public Integer call() {
            RoutingWorkload.Drift d;
            try {
                d = RoutingWorkload.Drift.valueOf(drift.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--drift must be none, abrupt or gradual, got '" + drift + "'");
            }
            String name = model != null ? model : String.format(Locale.ROOT, "synthetic-%dx%d-top%d", layers, experts, topK);
            RoutingWorkload w = new RoutingWorkload(layers, experts, topK, name, seed, sessions, requests, prefillTokens,
                    decodeSteps, burstSteps, skew, skewSpread, support, burstLocality, burstSet, d, driftPeriod, driftRate, paths,
                    coupling, pathSet, pathStickiness);
            RoutingTraceGenerator g = new RoutingTraceGenerator(w);
            long records = 0;
            if (text || out.getFileName().toString().endsWith(".jsonl")) {
                List<RoutingRecord> all = new ArrayList<>();
                g.forEachRemaining(all::add);
                try (Writer writer = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
                    RoutingTraceText.write(writer, w.header(), all);
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot write " + out + ": " + e.getMessage(), e);
                }
                records = all.size();
            } else {
                try (RoutingTraceWriter writer = RoutingTraceWriter.create(out, w.header())) {
                    while (g.hasNext()) {
                        writer.write(g.next());
                    }
                    records = writer.records();
                }
            }
            System.out.printf(Locale.ROOT, "wrote %s: %d records, %d steps, %d layers × %d experts, top-%d, seed %d%n", out, records,
                    w.totalSteps(), layers, experts, topK, seed);
            return 0;
        }
    }

    /** {@code strata trace stats FILE}: what a routing trace says about its working set. */
    @Command(name = "stats", mixinStandardHelpOptions = true,
            description = {"Summarises a routing trace (binary or JSON lines): counts, per-layer LRU hit ratios from exact",
                    "miss curves, burst unions and overlaps, session footprint, working-set support estimate."})
    static final class Stats implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "FILE", description = "the trace")
        Path file;
        @Option(names = "--predict", description = "also measure the co-activation predictor's next-layer precision@k")
        boolean predict;
        @Option(names = "--tolerate-truncation", description = "read up to a final record cut short instead of failing")
        boolean tolerate;

        @Override
        public Integer call() {
            RoutingTraceHeader header;
            RoutingTraceStats stats;
            String ending;
            if (isBinary(file)) {
                try (RoutingTraceReader in = RoutingTraceReader.open(file,
                        tolerate ? RoutingTraceReader.TailPolicy.STOP : RoutingTraceReader.TailPolicy.FAIL)) {
                    header = in.header();
                    stats = new RoutingTraceStats(header, predict);
                    for (RoutingRecord r; (r = in.next()) != null; ) {
                        stats.accept(r);
                    }
                    ending = in.ending().name().toLowerCase(Locale.ROOT) + (in.problem().isEmpty() ? "" : " (" + in.problem() + ")");
                }
            } else {
                RoutingTraceText.Trace t = RoutingTraceText.read(file);
                header = t.header();
                stats = new RoutingTraceStats(header, predict);
                t.records().forEach(stats::accept);
                ending = "text";
            }
            System.out.printf(Locale.ROOT, "trace %s: %d layers × %d experts, top-%d, model '%s', ending %s%n", file,
                    header.layers(), header.experts(), header.topK(), header.model(), ending);
            stats.report().lines().forEach(System.out::println);
            return 0;
        }

        private static boolean isBinary(Path file) {
            try (InputStream in = Files.newInputStream(file)) {
                byte[] b = in.readNBytes(8);
                return b.length == 8 && ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong() == RoutingTraceFormat.MAGIC;
            } catch (NoSuchFileException e) {
                throw new IllegalArgumentException("routing trace " + file + ": no such file");
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
            }
        }
    }

    /** {@code strata trace kv [--trace FILE]}: the exact LRU miss curve of a KV block stream. */
    @Command(name = "kv", mixinStandardHelpOptions = true,
            description = {"Exact LRU hit ratios of a KV block stream at several capacities: the Mooncake trace's hash_ids",
                    "with --trace, else synthetic multi-turn sessions."})
    static final class Kv implements Callable<Integer> {
        @Option(names = "--trace", paramLabel = "FILE", description = "a KV request trace in the Mooncake format (JSON lines with hash_ids)")
        Path trace;
        @Option(names = "--seed", description = "seed of the synthetic stream (default: ${DEFAULT-VALUE})")
        long seed = 1;

        @Override
        public Integer call() {
            KvBlockStream stream = trace != null ? new MooncakeKvBlockStream(trace) : SyntheticKvBlockStream.defaults(seed);
            ReuseDistanceTracker t = new ReuseDistanceTracker(1 << 12);
            stream.forEach(t::access);
            MissCurve c = t.missCurve();
            System.out.printf(Locale.ROOT, "%s%n%d references, %d distinct blocks (first sights)%n", stream.describe(),
                    t.references(), t.distinct());
            StringBuilder b = new StringBuilder("LRU hit ratio by capacity (blocks):");
            for (int cap = 16; ; cap *= 4) {
                int at = Math.min(cap, t.distinct());
                b.append(String.format(Locale.ROOT, "  %d: %.3f", at, c.hitRatio(at)));
                if (at == t.distinct()) {
                    break;
                }
            }
            System.out.println(b);
            return 0;
        }
    }
}
