package dev.strata.cli;

import dev.strata.memory.log.Log;
import dev.strata.node.peer.DemandSignal;
import dev.strata.node.peer.PeerAgent;
import dev.strata.node.peer.PeerAgentConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import dev.strata.cache.config.ProcessConfig;
import dev.strata.cache.config.StrataConfig;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
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

    @Mixin
    ConfigOptions config = new ConfigOptions();

    @Option(names = "--file", paramLabel = "PATH", description = "the lending file (default: /dev/shm/strata-<uid>-peer.lend) [agent.file]")
    Path file;

    @Option(names = "--budget", paramLabel = "SIZE", description = "bytes the agent may lend, e.g. 4GiB (required) [agent.budget]")
    String budget;

    @Option(names = "--region", paramLabel = "SIZE", description = "bytes per region, a multiple of 64 (default: 2MiB) [agent.region]")
    String region;

    @Option(names = "--demand", paramLabel = "SPEC",
            description = {"the agent's own demand (default: fixed:0): fixed:SIZE, file:PATH (a file holding a size,",
                    "re-read every tick), or trace:PATH[,peer=NAME][,speed=X][,loop] (replay of an availability trace:",
                    "the demand is the budget minus the peer's free bytes) [agent.demand]"})
    String demand;

    @Option(names = "--grace-ms", paramLabel = "MS", description = "time a borrower has to give a region back (default: 1000) [agent.grace-ms]")
    Long graceMillis;

    @Option(names = "--tick-ms", paramLabel = "MS", description = "how often the agent checks demand and deadlines (default: 2) [agent.tick-ms]")
    Long tickMillis;

    @Option(names = "--exit-with", paramLabel = "PID", hidden = true, description = "stop when the process PID ends (for child processes)")
    Long exitWith;

    @Option(names = "--no-stamp", description = "do not overwrite regions the agent takes back (by default it writes its own bytes over them) [agent.stamp=false]")
    boolean noStamp;

    /** The flags given, as configuration settings. */
    Shorthands settings() {
        return new Shorthands().put("--file", "agent.file", file).put("--budget", "agent.budget", budget).put("--region", "agent.region", region).put("--demand", "agent.demand", demand)
                .put("--grace-ms", "agent.grace-ms", graceMillis).put("--tick-ms", "agent.tick-ms", tickMillis).put("--no-stamp", "agent.stamp", noStamp ? false : null);
    }

    /** The agent's configuration from the agent section of {@code c}. */
    static PeerAgentConfig agentConfig(StrataConfig c) {
        ProcessConfig.Agent a = c.process().agent();
        if (a.budget() <= 0) {
            throw new IllegalArgumentException("agent.budget is required: the bytes the agent may lend (--budget SIZE, e.g. 4GiB)");
        }
        return PeerAgentConfig.builder().file(a.file() != null ? a.file() : PeerAgentConfig.DEFAULT_FILE)
                .budget(a.budget()).regionSize(a.region())
                .demand(DemandSignal.parse(a.demand(), a.budget())).grace(Duration.ofMillis(a.graceMillis()))
                .tick(Duration.ofMillis(a.tickMillis())).stampReclaimed(a.stamp()).conclude();
    }

    @Override
    public Integer call() throws InterruptedException {
        PeerAgentConfig config = agentConfig(this.config.load(List.of("tiers={}"), settings()));
        PeerAgent agent;
        try {
            agent = PeerAgent.start(config, System.out);
        } catch (IllegalStateException e) {
            System.err.println(Log.failure(e.getMessage()));
            return 2;
        }
        if (exitWith != null) { // System.exit runs the agent's shutdown hook: a clean stop, the file removed
            ProcessHandle.of(exitWith).ifPresentOrElse(p -> p.onExit().thenRun(() -> System.exit(0)), () -> System.exit(0));
        }
        agent.runUntilStopped();
        return 0;
    }
}
