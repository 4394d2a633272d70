package dev.strata.cli;

import dev.strata.memory.Sizes;
import dev.strata.node.peer.DemandSignal;
import dev.strata.node.peer.PeerAgent;
import dev.strata.node.peer.PeerAgentConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata peer}: runs a peer agent ({@link PeerAgent}) until SIGTERM or SIGINT. Argument
 * handling only; the agent is strata-node's.
 */
@Command(name = "peer", mixinStandardHelpOptions = true,
        description = {"Runs a peer agent: lends the part of a memory budget its own demand leaves free to other",
                "processes through a shared-memory lending file, asks regions back when its demand rises, and fences",
                "borrowers that miss the deadline. Prints one 'strata peer ready' line when it lends; stops cleanly on",
                "SIGTERM or SIGINT (borrowers then see the peer lost)."})
final class PeerCommand implements Callable<Integer> {

    @Option(names = "--file", paramLabel = "PATH", description = "the lending file (default: ${DEFAULT-VALUE})")
    Path file = PeerAgentConfig.DEFAULT_FILE;

    @Option(names = "--budget", paramLabel = "SIZE", required = true, description = "bytes the agent may lend, e.g. 4GiB")
    String budget;

    @Option(names = "--region", paramLabel = "SIZE", description = "bytes per region, a multiple of 64 (default: ${DEFAULT-VALUE})")
    String region = "2MiB";

    @Option(names = "--demand", paramLabel = "SPEC",
            description = {"the agent's own demand (default: ${DEFAULT-VALUE}): fixed:SIZE, file:PATH (a file holding a size,",
                    "re-read every tick), or trace:PATH[,peer=NAME][,speed=X][,loop] (replay of an availability trace:",
                    "the demand is the budget minus the peer's free bytes)"})
    String demand = "fixed:0";

    @Option(names = "--grace-ms", paramLabel = "MS", description = "time a borrower has to give a region back (default: ${DEFAULT-VALUE})")
    long graceMillis = 1000;

    @Option(names = "--tick-ms", paramLabel = "MS", description = "how often the agent checks demand and deadlines (default: ${DEFAULT-VALUE})")
    long tickMillis = 2;

    @Option(names = "--no-stamp", description = "do not overwrite regions the agent takes back (by default it writes its own bytes over them)")
    boolean noStamp;

    @Override
    public Integer call() throws InterruptedException {
        long budgetBytes = size("--budget", budget);
        if (graceMillis <= 0 || tickMillis <= 0) {
            throw new IllegalArgumentException("--grace-ms " + graceMillis + " and --tick-ms " + tickMillis + " must be positive");
        }
        PeerAgentConfig config = PeerAgentConfig.builder().file(file).budget(budgetBytes).regionSize(size("--region", region))
                .demand(DemandSignal.parse(demand, budgetBytes)).grace(Duration.ofMillis(graceMillis))
                .tick(Duration.ofMillis(tickMillis)).stampReclaimed(!noStamp).conclude();
        PeerAgent agent;
        try {
            agent = PeerAgent.start(config, System.out);
        } catch (IllegalStateException e) {
            System.err.println("strata: " + e.getMessage());
            return 2;
        }
        agent.runUntilStopped();
        return 0;
    }

    private static long size(String option, String text) {
        try {
            return Sizes.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + ": " + e.getMessage(), e);
        }
    }
}
