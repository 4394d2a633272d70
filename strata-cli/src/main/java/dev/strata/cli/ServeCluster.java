package dev.strata.cli;

import dev.strata.cache.config.StrataConfig;
import dev.strata.cache.kv.KvGeometry;
import dev.strata.cache.kv.SharedBlockStore;
import dev.strata.cluster.ClusterBlockStore;
import dev.strata.cluster.ClusterSettings;
import dev.strata.cluster.PoolThenClusterBlockStore;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.serve.ServeEngine;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The CLUSTER tier of {@code strata serve}: opens the cluster store that {@code tiers.cluster}
 * describes for the served model, and makes it the server's shared store — alone without a pool,
 * behind the pool with one.
 *
 * <p>Called on the thread that starts the server.
 */
final class ServeCluster {
    /** How long start-up waits for the cluster's first answer. */
    static final Duration CONNECT_WAIT = Duration.ofSeconds(10);
    /** How often a server started while its cluster was unreachable tries again. */
    static final Duration CONNECT_RETRY = Duration.ofSeconds(1);

    private ServeCluster() {
    }

    /**
     * The cluster store of {@code c} for the model in {@code model} with {@code blockTokens}
     * tokens per block, or null when {@code tiers.cluster} is not configured.
     *
     * <p>A cluster that cannot be reached is no reason not to serve: the server starts without it
     * (a warning names the nodes) and connects as soon as the cluster answers.
     *
     * @throws IllegalArgumentException naming the key when the password cannot be resolved
     * @throws IllegalStateException    naming the node when a node refuses the credentials
     */
    static ClusterBlockStore open(StrataConfig c, Path model, int blockTokens) {
        if (c.cluster() == null) {
            return null;
        }
        KvGeometry geometry = ModelRunner.kvGeometry(ModelConfig.read(model), blockTokens);
        return ClusterBlockStore.openOrConnectLater(ClusterSettings.from(c.cluster(), System.getenv()),
                ServeEngine.fingerprint(model, blockTokens), geometry, CONNECT_WAIT, CONNECT_RETRY);
    }

    /**
     * What a process that evicts blocks from the pool does with them: with
     * {@code tiers.cluster.write: eviction}, writes them behind to {@code cluster}; otherwise
     * nothing.
     */
    static dev.strata.cache.EvictionSink poolEvictions(StrataConfig c, ClusterBlockStore cluster) {
        if (cluster == null || c.cluster().write() != StrataConfig.ClusterWrite.EVICTION) {
            return dev.strata.cache.EvictionSink.NONE;
        }
        return (key, kind, bytes) -> cluster.evicted(key, bytes);
    }

    /** The server's shared store: the pool's, the cluster's, both (pool first), or null for neither. */
    static SharedBlockStore shared(SharedBlockStore pool, ClusterBlockStore cluster) {
        if (cluster == null) {
            return pool;
        }
        return pool == null ? cluster : new PoolThenClusterBlockStore(pool, cluster);
    }
}
