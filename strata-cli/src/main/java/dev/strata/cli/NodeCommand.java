package dev.strata.cli;

import dev.strata.cache.ObjectKey;
import dev.strata.memory.Sizes;
import dev.strata.memory.shm.ShmFormatException;
import dev.strata.node.daemon.NodeConfig;
import dev.strata.node.daemon.NodeDaemon;
import dev.strata.node.index.IndexIdentityException;
import dev.strata.node.rpc.RpcServerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code strata node}: runs the node daemon ({@link NodeDaemon}) until SIGTERM or SIGINT. Argument
 * handling only; the daemon is strata-node's.
 */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = {"Runs the node daemon: opens (or creates) a shared pool and the block index in it, and serves",
                "the index to engine processes over shared-memory RPC. Prints one 'strata node ready' line when it",
                "serves; stops cleanly on SIGTERM or SIGINT. A daemon started again on the same pool keeps every",
                "block published before."})
final class NodeCommand implements Callable<Integer> {

    @Option(names = "--pool", paramLabel = "PATH",
            description = "pool file or device; repeat to stripe over several (default: /dev/shm/strata-<pool-name>.pool)")
    List<Path> pool = new ArrayList<>();

    @Option(names = "--pool-name", paramLabel = "NAME", description = "pool name (default: ${DEFAULT-VALUE})")
    String poolName = NodeConfig.DEFAULT_POOL_NAME;

    @Option(names = "--capacity", paramLabel = "SIZE", description = "pool data capacity when creating it, e.g. 1GiB (default: ${DEFAULT-VALUE})")
    String capacity = "1GiB";

    @Option(names = "--chunk", paramLabel = "SIZE", description = "pool allocation unit when creating it (default: ${DEFAULT-VALUE})")
    String chunk = "64KiB";

    @Option(names = "--process-slots", paramLabel = "N", description = "processes that may map the pool at once (default: ${DEFAULT-VALUE})")
    int processSlots = 64;

    @Option(names = "--rpc", paramLabel = "PATH", description = "the RPC region file (default: ${DEFAULT-VALUE})")
    Path rpc = RpcServerConfig.DEFAULT_PATH;

    @Option(names = "--channels", paramLabel = "N", description = "engine processes that may attach at once (default: ${DEFAULT-VALUE})")
    int channels = 16;

    @Option(names = "--slots", paramLabel = "N", description = "requests each client may have in flight, a power of two (default: ${DEFAULT-VALUE})")
    int slots = 64;

    @Option(names = "--payload", paramLabel = "BYTES", description = "payload bytes per request slot, a multiple of 64 (default: ${DEFAULT-VALUE})")
    int payload = 512;

    @Option(names = "--hash-version", paramLabel = "N", description = "block-hash version; 0 adopts the index's (default: ${DEFAULT-VALUE})")
    int hashVersion;

    @Option(names = "--model-fingerprint", paramLabel = "HEX", description = "model fingerprint, 32 hex digits; default: the index's")
    String modelFingerprint;

    @Option(names = "--leases-per-process", paramLabel = "N",
            description = "lease records per process when the index is created (the daemon holds all its clients' leases) (default: ${DEFAULT-VALUE})")
    int leasesPerProcess = 2048;

    @Option(names = "--lease-seconds", paramLabel = "S", description = "how long a lease pins a block (default: ${DEFAULT-VALUE})")
    long leaseSeconds = 30;

    @Option(names = "--exit-with", paramLabel = "PID", hidden = true, description = "stop when the process PID ends (for child processes)")
    Long exitWith;

    @Override
    public Integer call() throws InterruptedException {
        NodeConfig.Builder b = NodeConfig.builder().poolName(poolName).capacity(size("--capacity", capacity))
                .chunkSize(size("--chunk", chunk)).processSlots(processSlots).hashVersion(hashVersion)
                .leasesPerProcess(leasesPerProcess);
        if (leaseSeconds <= 0) {
            throw new IllegalArgumentException("--lease-seconds " + leaseSeconds + " must be positive");
        }
        b.leaseDuration(Duration.ofSeconds(leaseSeconds));
        pool.forEach(b::poolPath);
        if (modelFingerprint != null) {
            b.modelFingerprint(ObjectKey.parse(modelFingerprint.strip().toLowerCase(java.util.Locale.ROOT)));
        }
        b.rpc().path(rpc).channels(channels).slotsPerChannel(slots).payloadBytes(payload);
        NodeConfig config = b.conclude();
        NodeDaemon daemon;
        try {
            daemon = NodeDaemon.start(config, System.out);
        } catch (IndexIdentityException | ShmFormatException | IllegalStateException e) {
            System.err.println("strata: " + e.getMessage());
            return 2;
        }
        if (exitWith != null) {
            ProcessHandle.of(exitWith).ifPresentOrElse(p -> p.onExit().thenRun(() -> System.exit(0)), () -> System.exit(0));
        }
        daemon.runUntilStopped();
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
