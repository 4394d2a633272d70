package dev.strata.bench;

import dev.strata.bench.peer.LocalRevocationRig;
import dev.strata.bench.peer.PeerChurnMeasure;
import dev.strata.bench.peer.RevocationLatencyMeasure;
import dev.strata.bench.peer.ShmRevocationRig;
import dev.strata.bench.peer.WakeupMeasure;
import dev.strata.memory.log.Log;
import dev.strata.node.peer.PeerAgentConfig;
import dev.strata.node.peer.ShmLenderOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import dev.strata.memory.Sizes;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code strata bench peer}: memory lent by peers as a revocable tier. How fast a revocation
 * reaches the borrower and how long it waits for an access under way (against a thread hand-off
 * and against one read, measured in the same run); and, with peers whose free memory follows a
 * generated availability trace, the share of KV and expert fetches the peers serve (against the
 * same peers never revoked), the bytes they keep off the host link (against no peers), and the
 * NVLink-versus-PCIe cost of those fetches, modelled from Harvest's measurements.
 *
 * <p>Runs on the calling thread; the lenders and clients start their own threads.
 */
public final class PeerScenario implements Scenario {
    private final List<Series> series = new ArrayList<>(); // revocation latency CDFs, filled by run

    @Override
    public List<Series> series() {
        return List.copyOf(series);
    }
    /** How often the cross-process agent ticks and its lender polls: as shipped (doorbells wake both in between). */
    private static final Duration AGENT_TICK = PeerAgentConfig.DEFAULT_TICK;
    private static final Duration LENDER_POLL = ShmLenderOptions.defaults().pollInterval();

    @Override
    public String name() {
        return "peer";
    }

    @Override
    public String description() {
        return "peer revocation latency and drain, KV/expert fetches from peers under availability churn (NVLink modelled)";
    }

    @Override
    public List<Figure> run(Options options, List<String> notes) throws Exception {
        List<Figure> figures = new ArrayList<>();
        boolean quick = options.quick();
        Progress progress = new Progress(Log.stream("bench"), 3);
        progress.step("revocation to callback and drain, in-process lender");
        try (LocalRevocationRig rig = new LocalRevocationRig(64 * Sizes.MiB)) {
            figures.addAll(RevocationLatencyMeasure.figures(rig, quick ? 200 : 2000, Sizes.MiB + 4032, 4 * Sizes.MiB + 64, series));
        }
        progress.step("revocation to callback and drain, cross-process shared-memory lender (agent JVM, tick "
                + AGENT_TICK.toNanos() / 1000 + " us, poll " + LENDER_POLL.toNanos() / 1000 + " us)");
        Path dir = Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : options.workDir();
        int shmRounds = quick ? 100 : 900; // a full run: nine paired blocks of a hundred
        try (ShmRevocationRig rig = new ShmRevocationRig(dir, 8 * Sizes.MiB, 2 * Sizes.MiB, AGENT_TICK, LENDER_POLL);
             WakeupMeasure wakeup = WakeupMeasure.start(dir)) {
            wakeup.sample(shmRounds / 2); // the floor, before and after the revocation rounds
            List<Figure> shm = RevocationLatencyMeasure.figures(rig, shmRounds, 2 * Sizes.MiB, 4 * Sizes.MiB, series);
            wakeup.sample(shmRounds - shmRounds / 2);
            figures.addAll(shm);
            figures.addAll(wakeup.ratios(shm, rig.label()));
            notes.add(rig.doorbells()
                    ? "cross-process revocations travel by doorbell: the rig rings the agent after writing its demand file, the "
                            + "agent rings the lender's event thread after revoking; tick and poll (" + AGENT_TICK.toNanos() / 1000
                            + " and " + LENDER_POLL.toNanos() / 1000 + " us, the defaults) remain as the fallback; revoke-to-callback is timed from the agent's revocation stamp (its"
                            + " CLOCK_MONOTONIC reading in the lending file), the time from the rig's demand is in each p50 note"
                    : "cross-process revocations include the agent's tick and the lender's poll, every "
                            + AGENT_TICK.toNanos() / 1000 + " and " + LENDER_POLL.toNanos() / 1000 + " us (no doorbells here): the agent reads its demand file each tick, "
                            + "the lender polls its regions' states");
        }
        progress.step("KV and expert fetches through the PEER tier under availability churn");
        figures.addAll(PeerChurnMeasure.figures(quick, Log.stream("bench"), notes));
        return figures;
    }
}
