package dev.strata.bench.peer;

import dev.strata.cache.peer.PeerClient;
import dev.strata.memory.log.Log;
import dev.strata.node.peer.FileDemand;
import dev.strata.node.peer.LendingStats;
import dev.strata.node.peer.PeerAgent;
import dev.strata.node.peer.PeerAgentConfig;
import dev.strata.node.peer.ShmLenderOptions;
import dev.strata.node.peer.ShmPeerLender;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The cross-process rig: a {@link PeerAgent} in a child JVM lends from a shared-memory file; this
 * process borrows through a {@link ShmPeerLender} under a {@link PeerClient}. The agent's demand is
 * a {@link FileDemand}: a demand is written into the demand file (by a rename, so the agent never
 * reads half a number), the rig rings the agent's doorbell ({@link ShmPeerLender#wakeAgent}) and
 * the agent's tick, woken by it, reads the file and asks back by its lending rule; the agent rings
 * the lender's event thread in turn. Without doorbells both sides poll, the agent every
 * {@code tick}, the lender's event thread every {@code poll}, and the latencies measured include
 * that polling.
 *
 * <p>The child runs {@link #main}: it starts the agent (without stamping the memory it takes back,
 * which would add the agent's own overwrite of every reclaimed region to the latency), prints the
 * agent's ready line, and closes the agent when its standard input ends. Keep the budget small: the
 * agent takes its free regions before it revokes lent ones.
 *
 * <p>Threads: the measuring thread.
 */
public final class ShmRevocationRig implements RevocationRig {
    private final Process child;
    private final Path lendFile;
    private final Path demandFile;
    private final long budget; // bytes
    private final ShmPeerLender lender;
    private final PeerClient client;

    /**
     * Starts the agent JVM and attaches to it.
     *
     * @param dir    where the lending and demand files go (a tmpfs such as /dev/shm)
     * @param budget the agent's budget, bytes
     * @param region the agent's region size, bytes
     */
    public ShmRevocationRig(Path dir, long budget, long region, Duration tick, Duration poll) throws IOException {
        this.budget = budget;
        String tag = "strata-bench-peer-" + ProcessHandle.current().pid();
        this.lendFile = dir.resolve(tag + ".lend");
        this.demandFile = dir.resolve(tag + ".demand");
        writeDemand(0);
        String java = System.getProperty("strata.java");
        if (java == null || java.isBlank()) {
            java = ProcessHandle.current().info().command().orElse("java");
        }
        List<String> command = List.of(java, "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-Xmx128m", "-cp", System.getProperty("java.class.path"), ShmRevocationRig.class.getName(),
                lendFile.toString(), Long.toString(budget), Long.toString(region), demandFile.toString(),
                Long.toString(tick.toNanos()));
        this.child = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        ShmPeerLender l = null;
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line;
            while ((line = out.readLine()) != null && !line.startsWith("strata peer ready")) {
                // skip anything before the ready line
            }
            if (line == null) {
                throw new IllegalStateException("the peer agent JVM (pid " + child.pid() + ") ended before it was ready");
            }
            l = ShmPeerLender.open(lendFile, 0, ShmLenderOptions.defaults().withName("agent").withDistance(1).withPollInterval(poll));
        } catch (IOException | RuntimeException e) {
            child.destroyForcibly();
            throw e;
        }
        this.lender = l;
        this.client = PeerClient.of(List.of(lender), "BEST_FIT");
    }

    private void writeDemand(long bytes) {
        try {
            Path tmp = demandFile.resolveSibling(demandFile.getFileName() + ".tmp");
            Files.writeString(tmp, Long.toString(bytes), StandardCharsets.UTF_8);
            Files.move(tmp, demandFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the agent's demand file " + demandFile + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String label() {
        return "cross_process";
    }

    @Override
    public PeerClient client() {
        return client;
    }

    @Override
    public long budget() {
        return budget;
    }

    @Override
    public void demand(long bytes) {
        writeDemand(bytes);
        lender.wakeAgent();
    }

    /** True if the agent and the lender wake each other by doorbell rather than polling. */
    public boolean doorbells() {
        return lender.doorbells();
    }

    @Override
    public boolean settled() {
        LendingStats s = lender.stats();
        return client.revocationsIdle() && s.revoking() == 0 && s.fenced() == 0 && s.lent() == 0;
    }

    @Override
    public void close() {
        try {
            client.close(); // closes the lender
        } finally {
            try {
                child.getOutputStream().close(); // the agent closes when its input ends
                if (!child.waitFor(10, TimeUnit.SECONDS)) {
                    child.destroyForcibly();
                    child.waitFor(10, TimeUnit.SECONDS);
                }
                Files.deleteIfExists(demandFile);
                Files.deleteIfExists(lendFile);
                Files.deleteIfExists(lendFile.resolveSibling(lendFile.getFileName() + ".lock"));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot clean up the peer agent's files: " + e.getMessage(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                child.destroyForcibly();
            }
        }
    }

    /** The agent JVM: {@code FILE BUDGET REGION DEMAND_FILE TICK_NANOS}; runs until its standard input ends. */
    public static void main(String[] args) throws IOException {
        Log.useForJavaLogging();
        PeerAgentConfig config = PeerAgentConfig.builder().file(Path.of(args[0])).budget(Long.parseLong(args[1]))
                .regionSize(Long.parseLong(args[2])).demand(new FileDemand(Path.of(args[3])))
                .tick(Duration.ofNanos(Long.parseLong(args[4]))).stampReclaimed(false).conclude();
        try (PeerAgent agent = PeerAgent.start(config, System.out)) {
            while (System.in.read() >= 0) {
                // wait for the parent to close our input
            }
        }
    }
}
