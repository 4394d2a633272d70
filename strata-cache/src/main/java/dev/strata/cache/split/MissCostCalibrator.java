package dev.strata.cache.split;

import dev.strata.memory.TierStats;
import dev.strata.memory.transfer.LinkStats;
import java.util.HashMap;
import java.util.Map;

/**
 * Self-calibrating miss costs: the expert fetch time from the measured bandwidth of the link that
 * brings experts into their slots, the KV recompute time from the measured prefill speed, the KV
 * reload time from the measured bandwidth of the link (or tier) that reloads blocks from a lower
 * tier. Until a figure has been measured, its configured prior is used and labelled
 * {@link MissCosts.Source#PRIOR}.
 *
 * <p>Design note. Each figure is an exponentially weighted moving average (weight {@code alpha} on
 * the newest sample); the first sample replaces the prior outright, so a badly wrong prior costs
 * one burst, not many. Link samples are deltas between successive {@link LinkStats} snapshots of
 * the same link: bytes moved over worker busy time in between (busy time, not wall time, so idle
 * gaps do not read as a slow link). A snapshot with no new bytes adds no sample.
 *
 * <p>Threads: every method may be called from any thread (synchronized; calls are per burst or per
 * prefill, not per byte).
 */
public final class MissCostCalibrator implements RecomputeMeter {

    /**
     * Configured priors, used until measurements exist.
     *
     * @param linkBytesPerSecond       expert fetch bandwidth, bytes/s
     * @param recomputeSecondsPerToken prefill seconds per token
     * @param reloadBytesPerSecond     KV reload bandwidth from a lower tier, bytes/s; NaN when no
     *                                 lower tier keeps KV blocks
     */
    public record Priors(double linkBytesPerSecond, double recomputeSecondsPerToken, double reloadBytesPerSecond) {
        public Priors {
            if (!(linkBytesPerSecond > 0) || !(recomputeSecondsPerToken > 0)
                    || !(Double.isNaN(reloadBytesPerSecond) || reloadBytesPerSecond > 0)) {
                throw new IllegalArgumentException("priors must be positive: link " + linkBytesPerSecond
                        + " B/s, recompute " + recomputeSecondsPerToken + " s/token, reload " + reloadBytesPerSecond + " B/s");
            }
        }
    }

    private final long expertBytes; // one expert of one layer, bytes
    private final long kvBlockBytes; // one KV block over all layers, bytes
    private final int blockTokens; // tokens per KV block
    private final double alpha; // EWMA weight of the newest sample, (0, 1]
    private final Priors priors;

    private double linkBytesPerSecond; // current estimate
    private boolean linkMeasured;
    private double recomputeSecondsPerToken;
    private boolean recomputeMeasured;
    private double reloadBytesPerSecond; // NaN when no lower tier
    private boolean reloadMeasured;
    private final Map<String, long[]> lastLink = new HashMap<>(); // link name -> {bytes, busyNanos}

    public MissCostCalibrator(long expertBytes, long kvBlockBytes, int blockTokens, double alpha, Priors priors) {
        if (expertBytes <= 0 || kvBlockBytes <= 0 || blockTokens < 1 || !(alpha > 0 && alpha <= 1) || priors == null) {
            throw new IllegalArgumentException("calibrator needs positive expert bytes, KV block bytes and block tokens and"
                    + " alpha in (0, 1]: got " + expertBytes + ", " + kvBlockBytes + ", " + blockTokens + ", " + alpha);
        }
        this.expertBytes = expertBytes;
        this.kvBlockBytes = kvBlockBytes;
        this.blockTokens = blockTokens;
        this.alpha = alpha;
        this.priors = priors;
        this.linkBytesPerSecond = priors.linkBytesPerSecond();
        this.recomputeSecondsPerToken = priors.recomputeSecondsPerToken();
        this.reloadBytesPerSecond = priors.reloadBytesPerSecond();
    }

    /** A snapshot of the link experts are fetched over (e.g. {@code host->device}). */
    public synchronized void observeExpertLink(LinkStats stats) {
        double sample = linkSample(stats);
        if (sample > 0) {
            linkBytesPerSecond = linkMeasured ? blend(linkBytesPerSecond, sample) : sample;
            linkMeasured = true;
        }
    }

    /** A snapshot of the link KV blocks are reloaded over from a lower tier. */
    public synchronized void observeReloadLink(LinkStats stats) {
        double sample = linkSample(stats);
        if (sample > 0) {
            reloadBytesPerSecond = reloadMeasured ? blend(reloadBytesPerSecond, sample) : sample;
            reloadMeasured = true;
        }
    }

    /**
     * The lower tier's own read meter as a reload sample, for a tier read without the transfer
     * engine; ignored until the tier has measured a read.
     */
    public synchronized void observeReloadTier(TierStats stats) {
        double sample = stats.readBytesPerSec();
        if (sample > 0 && Double.isFinite(sample)) {
            reloadBytesPerSecond = reloadMeasured ? blend(reloadBytesPerSecond, sample) : sample;
            reloadMeasured = true;
        }
    }

    @Override
    public synchronized void recordPrefill(long tokens, long nanos) {
        if (tokens <= 0 || nanos <= 0) {
            return;
        }
        double sample = nanos / 1e9 / tokens;
        recomputeSecondsPerToken = recomputeMeasured ? blend(recomputeSecondsPerToken, sample) : sample;
        recomputeMeasured = true;
    }

    /** The miss costs now, each labelled with its source. */
    public synchronized MissCosts costs() {
        boolean reload = !Double.isNaN(reloadBytesPerSecond);
        return new MissCosts(expertBytes / linkBytesPerSecond, blockTokens * recomputeSecondsPerToken,
                reload ? kvBlockBytes / reloadBytesPerSecond : Double.NaN,
                linkMeasured ? MissCosts.Source.MEASURED : MissCosts.Source.PRIOR,
                recomputeMeasured ? MissCosts.Source.MEASURED : MissCosts.Source.PRIOR,
                reload ? (reloadMeasured ? MissCosts.Source.MEASURED : MissCosts.Source.PRIOR) : MissCosts.Source.NONE);
    }

    /** Expert link bandwidth now, bytes/s. */
    public synchronized double linkBytesPerSecond() {
        return linkBytesPerSecond;
    }

    /** Prefill seconds per token now. */
    public synchronized double recomputeSecondsPerToken() {
        return recomputeSecondsPerToken;
    }

    /** The priors configured. */
    public Priors priors() {
        return priors;
    }

    private double linkSample(LinkStats s) {
        long[] last = lastLink.put(s.name(), new long[] {s.bytes(), s.busyNanos()});
        long bytes = s.bytes() - (last == null ? 0 : last[0]);
        long busy = s.busyNanos() - (last == null ? 0 : last[1]);
        if (bytes <= 0 || busy <= 0) {
            return 0;
        }
        return bytes * 1e9 / busy;
    }

    private double blend(double old, double sample) {
        return (1 - alpha) * old + alpha * sample;
    }
}
