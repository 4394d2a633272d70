package dev.strata.analysis.peer;

import dev.strata.cache.peer.trace.AvailabilitySample;
import dev.strata.cache.peer.trace.AvailabilityTrace;
import dev.strata.cache.peer.trace.AvailabilityTraceWriter;
import dev.strata.memory.Sizes;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.NoSuchElementException;
import java.util.SplittableRandom;

/**
 * Synthetic peer availability traces shaped after published cluster figures: how much memory each
 * device of a cluster leaves free, how that swings over the day, and the sudden falls when a job
 * lands on a device and takes its memory back. Deterministic for a seed.
 *
 * <p>Model (design note). Each peer {@code p} has a base utilisation {@code b_p}, drawn from a Beta
 * distribution whose concentration is {@link Parameters#spread} and then moved linearly (towards the
 * floor or the ceiling, which keeps every value in bounds) so that the peers' mean is exactly the
 * base target {@code m_b = meanUtilisation - reclaim load}. At time {@code t} its utilisation is
 * <pre>
 *   u_p(t) = clamp( b_p · (1 + A · sin(2π t / P + φ))  +  Σ jobs on p  +  jitter · N(0, 1),  0, 1 )
 *   free_p(t) = capacity · (1 - u_p(t)), rounded down to whole MiB (bytes for devices under 256 MiB)
 * </pre>
 * with one diurnal phase {@code φ} for the whole cluster (demand follows the same clock on every
 * device). Jobs arrive at each peer as a Poisson process ({@link Parameters#reclaimsPerPeerHour}),
 * take a uniform draw of 0.5–1.5 × {@link Parameters#reclaimSize} of the capacity (capped by what is
 * free when they land) and hold it for an exponential time of mean {@link Parameters#reclaimHold}.
 * By Little's law they add {@code rate × hold × size} to the mean utilisation, which is why the
 * base target subtracts it. Samples are taken every {@link Parameters#step} seconds from 0 to
 * {@link Parameters#duration} inclusive, every peer at every step, so jobs that land and leave
 * between two steps are not seen and not counted.
 *
 * <p>Sources of the defaults (see each parameter): Harvest (Gopal and Kaffes) §2.1 summarises the
 * Alibaba {@code gpu-v2020} trace (Weng et al., NSDI '22), FlexPipe (Lin et al., EuroSys '26),
 * MuxFlow (Liu et al., 2024) and the Kalos study (Hu et al., NSDI '24); the diurnal swing, the
 * reclaim rate and hold time are stated there as phenomena without figures, so their defaults are
 * assumptions to vary, not measurements.
 *
 * <p>Threads: one thread at a time (an iterator with random state). Each peer draws its base, jobs
 * and noise from its own split of the seed; the bases are then normalised together, so changing the
 * number of peers changes every peer's level.
 */
public final class AvailabilityTraceGenerator implements Iterator<AvailabilitySample> {

    /**
     * What to generate.
     *
     * @param peers               devices that may lend; default 8, an eight-GPU NVLink board (Harvest
     *                            §2.2 expects larger NVLink domains to raise the chance that some
     *                            peer has spare memory)
     * @param capacity            bytes per device; default 80 GiB, the H100 of Harvest's testbed
     *                            (Azure NC80adis H100 v5)
     * @param duration            seconds covered; samples at 0, step, ... and at {@code duration};
     *                            default 86,400 (one diurnal period)
     * @param step                seconds between samples of one peer; default 10
     * @param meanUtilisation     the mean fraction of device memory in use, over peers and time; default
     *                            0.43: FlexPipe reports a mean GPU memory utilisation of 43.48% over two
     *                            weeks of an inference-only cluster, MuxFlow 42% in production at
     *                            ByteDance (both as cited by Harvest §2.1)
     * @param spread              concentration {@code a + b} of the Beta distribution of per-peer base
     *                            utilisation: small values make most devices light and a few heavy;
     *                            default 1.6, from fitting a Beta to the Alibaba {@code gpu-v2020}
     *                            points in Harvest's Figure 2 (about 68% of machines use at most 20%
     *                            of GPU memory, about 87% at most 50%: Beta(0.30, 1.32)); the mean
     *                            comes from {@code meanUtilisation}, the shape from this fit
     * @param diurnalAmplitude    relative swing of the base utilisation over a period, in [0, 1);
     *                            default 0.3 (an assumption: Harvest §2.1 names diurnal demand
     *                            patterns, after Yang et al., NSDI '25, without a figure)
     * @param diurnalPeriod       seconds per cycle; default 86,400 (a day); shorten it to compress
     *                            a day into a short benchmark
     * @param reclaimsPerPeerHour jobs landing on one peer per hour, each a sudden reclaim of its free
     *                            memory (Harvest §3.2: external reclamation by a higher-priority
     *                            workload); default 2 (an assumption)
     * @param reclaimSize         mean fraction of the capacity a landing job takes, in (0, 1];
     *                            default 0.5: between the 42–43% mean of inference clusters and the
     *                            Kalos study's GPUs above 75% (60 GB) under LLM development jobs
     * @param reclaimHold         mean seconds a landed job keeps its memory; default 300 (an assumption)
     * @param jitter              standard deviation of per-sample noise, fraction of the capacity, in
     *                            [0, 0.1]: allocator churn and varying KV-cache use (Harvest §2.1,
     *                            after Vijaya Kumar et al.); default 0.005
     * @param seed                the random seed
     */
    public record Parameters(int peers, long capacity, double duration, double step, double meanUtilisation, double spread,
                             double diurnalAmplitude, double diurnalPeriod, double reclaimsPerPeerHour, double reclaimSize,
                             double reclaimHold, double jitter, long seed) {

        /** The lowest base utilisation of a device: its runtime context and framework reserve. */
        public static final double BASE_FLOOR = 0.02;
        /** The highest base utilisation times {@code 1 + diurnalAmplitude}, leaving room for noise. */
        public static final double BASE_CEILING = 0.98;

        public Parameters {
            check(peers >= 1 && peers <= 1 << 16, "peers must be in [1, 65536]", peers);
            check(capacity > 0, "capacity must be > 0 bytes", capacity);
            check(Double.isFinite(duration) && duration > 0, "duration must be > 0 seconds", duration);
            check(Double.isFinite(step) && step > 0 && step <= duration, "step must be in (0, duration = " + duration + "] seconds", step);
            check(duration / step <= 1e8, "duration / step must be at most 1e8 steps (duration " + duration + ")", step);
            check(meanUtilisation > 0 && meanUtilisation < 1, "mean utilisation must be in (0, 1)", meanUtilisation);
            check(Double.isFinite(spread) && spread > 0 && spread <= 1e4, "spread must be in (0, 10000]", spread);
            check(diurnalAmplitude >= 0 && diurnalAmplitude < 1, "diurnal amplitude must be in [0, 1)", diurnalAmplitude);
            check(Double.isFinite(diurnalPeriod) && diurnalPeriod > 0, "diurnal period must be > 0 seconds", diurnalPeriod);
            check(Double.isFinite(reclaimsPerPeerHour) && reclaimsPerPeerHour >= 0, "reclaims per peer-hour must be >= 0",
                    reclaimsPerPeerHour);
            check(reclaimSize > 0 && reclaimSize <= 1, "reclaim size must be in (0, 1] of the capacity", reclaimSize);
            check(Double.isFinite(reclaimHold) && reclaimHold > 0, "reclaim hold must be > 0 seconds", reclaimHold);
            check(jitter >= 0 && jitter <= 0.1, "jitter must be in [0, 0.1] of the capacity", jitter);
            double load = reclaimLoad(reclaimsPerPeerHour, reclaimHold, reclaimSize);
            double base = meanUtilisation - load;
            double ceiling = BASE_CEILING / (1 + diurnalAmplitude);
            if (base < BASE_FLOOR || base > ceiling) {
                throw new IllegalArgumentException(String.format(Locale.ROOT,
                        "mean utilisation %s minus the reclaim load %.4f (reclaims per peer-hour %s × hold %s s × size %s) "
                                + "leaves a base utilisation of %.4f, outside [%.2f, %.4f] (the ceiling is %.2f / (1 + diurnal "
                                + "amplitude %s)): lower the reclaim rate, hold or size, or raise the mean utilisation",
                        meanUtilisation, load, reclaimsPerPeerHour, reclaimHold, reclaimSize, base, BASE_FLOOR, ceiling,
                        BASE_CEILING, diurnalAmplitude));
            }
        }

        private static void check(boolean ok, String what, Object value) {
            if (!ok) {
                throw new IllegalArgumentException(what + ", got " + value);
            }
        }

        private static double reclaimLoad(double perHour, double hold, double size) {
            return perHour / 3600.0 * hold * size;
        }

        /**
         * The defaults named on each parameter: 8 peers of 80 GiB for one day (a whole diurnal cycle, so
         * the trace's mean utilisation is the parameter's), a sample every 10 seconds.
         */
        public static Parameters defaults() {
            return new Parameters(8, 80 * Sizes.GiB, 86_400, 10, 0.43, 1.6, 0.3, 86_400, 2, 0.5, 300, 0.005, 1);
        }

        /** The mean utilisation landed jobs add, by Little's law: rate × hold × size. */
        public double reclaimLoad() {
            return reclaimLoad(reclaimsPerPeerHour, reclaimHold, reclaimSize);
        }

        /** The peers' mean base utilisation: {@code meanUtilisation - reclaimLoad()}. */
        public double baseUtilisation() {
            return meanUtilisation - reclaimLoad();
        }

        /** Sample steps per peer: the number of sample times, 0 and {@code duration} included. */
        public long sampleTimes() {
            return (long) Math.ceil(duration / step - 1e-9) + 1;
        }

        public Parameters withPeers(int n) {
            return new Parameters(n, capacity, duration, step, meanUtilisation, spread, diurnalAmplitude, diurnalPeriod,
                    reclaimsPerPeerHour, reclaimSize, reclaimHold, jitter, seed);
        }

        public Parameters withCapacity(long bytes) {
            return new Parameters(peers, bytes, duration, step, meanUtilisation, spread, diurnalAmplitude, diurnalPeriod,
                    reclaimsPerPeerHour, reclaimSize, reclaimHold, jitter, seed);
        }

        public Parameters withTime(double durationSeconds, double stepSeconds) {
            return new Parameters(peers, capacity, durationSeconds, stepSeconds, meanUtilisation, spread, diurnalAmplitude,
                    diurnalPeriod, reclaimsPerPeerHour, reclaimSize, reclaimHold, jitter, seed);
        }

        public Parameters withUtilisation(double mean, double spreadConcentration) {
            return new Parameters(peers, capacity, duration, step, mean, spreadConcentration, diurnalAmplitude, diurnalPeriod,
                    reclaimsPerPeerHour, reclaimSize, reclaimHold, jitter, seed);
        }

        public Parameters withDiurnal(double amplitude, double periodSeconds) {
            return new Parameters(peers, capacity, duration, step, meanUtilisation, spread, amplitude, periodSeconds,
                    reclaimsPerPeerHour, reclaimSize, reclaimHold, jitter, seed);
        }

        public Parameters withReclaims(double perPeerHour, double size, double holdSeconds) {
            return new Parameters(peers, capacity, duration, step, meanUtilisation, spread, diurnalAmplitude, diurnalPeriod,
                    perPeerHour, size, holdSeconds, jitter, seed);
        }

        public Parameters withJitter(double fraction) {
            return new Parameters(peers, capacity, duration, step, meanUtilisation, spread, diurnalAmplitude, diurnalPeriod,
                    reclaimsPerPeerHour, reclaimSize, reclaimHold, fraction, seed);
        }

        public Parameters withSeed(long s) {
            return new Parameters(peers, capacity, duration, step, meanUtilisation, spread, diurnalAmplitude, diurnalPeriod,
                    reclaimsPerPeerHour, reclaimSize, reclaimHold, jitter, s);
        }
    }

    /** One peer's state between samples. */
    private static final class PeerState {
        final String name;
        final SplittableRandom random;
        final double base; // base utilisation, fraction of capacity
        final List<double[]> jobs = new ArrayList<>(); // {end time s, fraction of capacity}
        double nextArrival; // seconds

        PeerState(String name, SplittableRandom random, double base) {
            this.name = name;
            this.random = random;
            this.base = base;
        }
    }

    private final Parameters p;
    private final PeerState[] peers;
    private final double phase; // radians, shared by every peer
    private final double arrivalRate; // jobs per second per peer
    private final long granularity; // bytes free values are rounded down to
    private final long steps; // sample times per peer
    private long stepIndex; // the step being emitted
    private int peerIndex; // the next peer to emit at that step
    private long reclaims; // jobs that landed and were seen by a sample
    private long samples; // samples emitted

    public AvailabilityTraceGenerator(Parameters parameters) {
        this.p = parameters;
        SplittableRandom master = new SplittableRandom(parameters.seed());
        this.phase = master.nextDouble() * 2 * Math.PI;
        this.arrivalRate = parameters.reclaimsPerPeerHour() / 3600.0;
        this.granularity = parameters.capacity() >= 256 * Sizes.MiB ? Sizes.MiB : 1;
        this.steps = parameters.sampleTimes();
        int n = parameters.peers();
        SplittableRandom[] randoms = new SplittableRandom[n];
        double[] base = new double[n];
        for (int i = 0; i < n; i++) {
            randoms[i] = master.split();
            double m = parameters.baseUtilisation();
            base[i] = beta(randoms[i], parameters.spread() * m, parameters.spread() * (1 - m));
        }
        normalise(base, parameters.baseUtilisation(), Parameters.BASE_FLOOR,
                Parameters.BASE_CEILING / (1 + parameters.diurnalAmplitude()));
        this.peers = new PeerState[n];
        for (int i = 0; i < n; i++) {
            peers[i] = new PeerState("gpu" + i, randoms[i], base[i]);
            peers[i].nextArrival = arrivalRate > 0 ? randoms[i].nextExponential() / arrivalRate : Double.POSITIVE_INFINITY;
        }
    }

    /** The parameters this generator follows. */
    public Parameters parameters() {
        return p;
    }

    /** Base utilisation of each peer (fraction of capacity), in peer order; their mean is {@link Parameters#baseUtilisation}. */
    public double[] baseUtilisations() {
        double[] b = new double[peers.length];
        for (int i = 0; i < b.length; i++) {
            b[i] = peers[i].base;
        }
        return b;
    }

    /** Jobs that landed on a peer and were seen by a sample so far: the reclaims the trace holds. */
    public long reclaims() {
        return reclaims;
    }

    /** Samples emitted so far. */
    public long samples() {
        return samples;
    }

    @Override
    public boolean hasNext() {
        return stepIndex < steps;
    }

    @Override
    public AvailabilitySample next() {
        if (!hasNext()) {
            throw new NoSuchElementException("availability trace generator is past its last sample (t " + p.duration() + " s)");
        }
        double t = Math.min(stepIndex * p.step(), p.duration());
        AvailabilitySample s = sample(peers[peerIndex], t);
        if (++peerIndex == peers.length) {
            peerIndex = 0;
            stepIndex++;
        }
        samples++;
        return s;
    }

    /** Writes every remaining sample to {@code out}; returns how many. */
    public long writeTo(AvailabilityTraceWriter out) {
        long n = 0;
        while (hasNext()) {
            out.write(next());
            n++;
        }
        return n;
    }

    /** Every remaining sample as an in-memory trace. */
    public AvailabilityTrace toTrace() {
        List<AvailabilitySample> all = new ArrayList<>();
        forEachRemaining(all::add);
        return AvailabilityTrace.of(all);
    }

    private AvailabilitySample sample(PeerState peer, double t) {
        double diurnal = 1 + p.diurnalAmplitude() * Math.sin(2 * Math.PI * t / p.diurnalPeriod() + phase);
        double u = peer.base * diurnal;
        peer.jobs.removeIf(j -> j[0] <= t);
        double held = 0;
        for (double[] j : peer.jobs) {
            held += j[1];
        }
        while (peer.nextArrival <= t) {
            double end = peer.nextArrival + peer.random.nextExponential() * p.reclaimHold();
            double size = p.reclaimSize() * (0.5 + peer.random.nextDouble());
            if (end > t) {
                double taken = Math.min(size, Math.max(0, 1 - u - held));
                if (taken > 0) {
                    peer.jobs.add(new double[] {end, taken});
                    held += taken;
                    reclaims++;
                }
            }
            peer.nextArrival += peer.random.nextExponential() / arrivalRate;
        }
        u += held;
        if (p.jitter() > 0) {
            u += p.jitter() * peer.random.nextGaussian();
        }
        u = Math.clamp(u, 0.0, 1.0);
        long free = (long) Math.floor(p.capacity() * (1 - u));
        free = Math.clamp(free - free % granularity, 0, p.capacity());
        return new AvailabilitySample(t, peer.name, free);
    }

    /**
     * Moves {@code values} (each in [lo, hi]) linearly towards {@code lo} or {@code hi} so that their
     * mean is {@code target} exactly; order and bounds are kept.
     */
    static void normalise(double[] values, double target, double lo, double hi) {
        for (int i = 0; i < values.length; i++) {
            values[i] = Math.clamp(values[i], lo, hi);
        }
        double mean = mean(values);
        if (mean < target) {
            double a = (target - mean) / (hi - mean);
            for (int i = 0; i < values.length; i++) {
                values[i] += (hi - values[i]) * a;
            }
        } else if (mean > target) {
            double a = (target - lo) / (mean - lo);
            for (int i = 0; i < values.length; i++) {
                values[i] = lo + (values[i] - lo) * a;
            }
        }
    }

    private static double mean(double[] v) {
        double s = 0;
        for (double x : v) {
            s += x;
        }
        return s / v.length;
    }

    /** A Beta(a, b) draw as X / (X + Y) of two Gamma draws. */
    static double beta(SplittableRandom r, double a, double b) {
        double x = gamma(r, a);
        double y = gamma(r, b);
        return x + y > 0 ? x / (x + y) : 0.5;
    }

    /**
     * A Gamma(shape, 1) draw by Marsaglia and Tsang's squeeze method; shapes below 1 draw at
     * {@code shape + 1} and scale by {@code U^(1/shape)}.
     */
    static double gamma(SplittableRandom r, double shape) {
        if (shape < 1) {
            double u = r.nextDouble();
            return gamma(r, shape + 1) * Math.pow(Math.max(u, Double.MIN_NORMAL), 1 / shape);
        }
        double d = shape - 1.0 / 3;
        double c = 1 / Math.sqrt(9 * d);
        while (true) {
            double x = r.nextGaussian();
            double v = 1 + c * x;
            if (v <= 0) {
                continue;
            }
            v = v * v * v;
            double u = r.nextDouble();
            if (u < 1 - 0.0331 * x * x * x * x || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) {
                return d * v;
            }
        }
    }
}
