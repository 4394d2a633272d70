package dev.strata.cli;

import dev.strata.analysis.peer.AvailabilityTraceGenerator;
import dev.strata.analysis.peer.AvailabilityTraceStats;
import dev.strata.cache.peer.trace.AvailabilityTrace;
import dev.strata.cache.peer.trace.AvailabilityTraceWriter;
import dev.strata.memory.Sizes;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code strata trace peers ...}: generates and summarises peer availability traces (JSON lines of
 * {@code {"t": seconds, "peer": name, "free": bytes}}). Runs on the main thread.
 */
@Command(name = "peers", mixinStandardHelpOptions = true,
        description = "Generates and inspects peer availability traces: each peer's free memory over time.",
        subcommands = {PeerTraceCommand.Generate.class, PeerTraceCommand.Stats.class})
final class PeerTraceCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    /** {@code strata trace peers generate --out FILE [knobs]}: a synthetic availability trace. */
    @Command(name = "generate", mixinStandardHelpOptions = true, sortOptions = false,
            description = {"Writes a synthetic peer availability trace shaped after published cluster figures: per-peer",
                    "utilisation dispersed as in the Alibaba GPU trace, a diurnal swing, and sudden reclaims when a job",
                    "lands. Deterministic for a seed."})
    static final class Generate implements Callable<Integer> {
        private static final AvailabilityTraceGenerator.Parameters D = AvailabilityTraceGenerator.Parameters.defaults();

        @Option(names = "--out", required = true, paramLabel = "FILE", description = "the trace to write (JSON lines)")
        Path out;
        @Option(names = "--peers", description = "devices that may lend (default: ${DEFAULT-VALUE})")
        int peers = D.peers();
        @Option(names = "--device-capacity", paramLabel = "SIZE", description = "memory per device, e.g. 80GiB (default: ${DEFAULT-VALUE})")
        String capacity = "80GiB";
        @Option(names = "--duration", paramLabel = "SECONDS", description = "(default: ${DEFAULT-VALUE})")
        double duration = D.duration();
        @Option(names = "--step", paramLabel = "SECONDS", description = "between samples of one peer (default: ${DEFAULT-VALUE})")
        double step = D.step();
        @Option(names = "--mean-utilisation", paramLabel = "FRACTION",
                description = "mean fraction of device memory in use (default: ${DEFAULT-VALUE}, FlexPipe's inference cluster)")
        double meanUtilisation = D.meanUtilisation();
        @Option(names = "--spread", description = "Beta concentration of per-peer utilisation; smaller: more dispersed "
                + "(default: ${DEFAULT-VALUE}, fitted to the Alibaba gpu-v2020 CDF)")
        double spread = D.spread();
        @Option(names = "--diurnal-amplitude", paramLabel = "FRACTION", description = "relative daily swing (default: ${DEFAULT-VALUE})")
        double diurnalAmplitude = D.diurnalAmplitude();
        @Option(names = "--diurnal-period", paramLabel = "SECONDS", description = "(default: ${DEFAULT-VALUE})")
        double diurnalPeriod = D.diurnalPeriod();
        @Option(names = "--reclaims-per-hour", paramLabel = "RATE", description = "jobs landing per peer per hour (default: ${DEFAULT-VALUE})")
        double reclaimsPerHour = D.reclaimsPerPeerHour();
        @Option(names = "--reclaim-size", paramLabel = "FRACTION", description = "mean share of a device a landing job takes (default: ${DEFAULT-VALUE})")
        double reclaimSize = D.reclaimSize();
        @Option(names = "--reclaim-hold", paramLabel = "SECONDS", description = "mean time a landed job keeps its memory (default: ${DEFAULT-VALUE})")
        double reclaimHold = D.reclaimHold();
        @Option(names = "--jitter", paramLabel = "FRACTION", description = "per-sample noise, share of the device (default: ${DEFAULT-VALUE})")
        double jitter = D.jitter();
        @Option(names = "--seed", description = "(default: ${DEFAULT-VALUE})")
        long seed = D.seed();

        @Override
        public Integer call() {
            long bytes = size(capacity);
            var p = new AvailabilityTraceGenerator.Parameters(peers, bytes, duration, step, meanUtilisation, spread,
                    diurnalAmplitude, diurnalPeriod, reclaimsPerHour, reclaimSize, reclaimHold, jitter, seed);
            var g = new AvailabilityTraceGenerator(p);
            long samples;
            try (AvailabilityTraceWriter w = AvailabilityTraceWriter.create(out)) {
                samples = g.writeTo(w);
            }
            System.out.printf(Locale.ROOT, "wrote %s: %d samples, %d peers × %s, %.1f s at a %.3g s step, seed %d, %d reclaims%n",
                    out, samples, peers, Sizes.format(bytes), duration, step, seed, g.reclaims());
            return 0;
        }
    }

    /** {@code strata trace peers stats FILE}: free memory and reclaims per peer. */
    @Command(name = "stats", mixinStandardHelpOptions = true,
            description = {"Summarises a peer availability trace: per peer the time-weighted mean, minimum and maximum free",
                    "memory and its reclaims (falls of at least --reclaim-drop of the device in one sample step)."})
    static final class Stats implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "FILE", description = "the trace (JSON lines)")
        Path file;
        @Option(names = "--device-capacity", paramLabel = "SIZE", description = "memory per device, to report utilisation (default: unknown)")
        String capacity;
        @Option(names = "--reclaim-drop", paramLabel = "FRACTION", description = "a fall of at least this share of the device "
                + "(of the largest free value when the capacity is unknown) is a reclaim (default: ${DEFAULT-VALUE})")
        double reclaimDrop = AvailabilityTraceStats.DEFAULT_RECLAIM_FRACTION;
        @Option(names = "--show", paramLabel = "N", description = "peers listed one per line (default: ${DEFAULT-VALUE})")
        int show = 16;

        @Override
        public Integer call() {
            long bytes = capacity == null ? 0 : size(capacity);
            AvailabilityTrace trace = AvailabilityTrace.read(file);
            AvailabilityTraceStats stats = AvailabilityTraceStats.of(trace, bytes, reclaimDrop);
            System.out.printf(Locale.ROOT, "availability trace %s%n", file);
            System.out.print(stats.report(Math.max(0, show)));
            return 0;
        }
    }

    /** A --device-capacity value in bytes; bad text gets an error naming the flag. */
    static long size(String text) {
        try {
            return Sizes.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--device-capacity: " + e.getMessage(), e);
        }
    }
}
