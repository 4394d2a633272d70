package dev.strata.cli;

import dev.strata.cache.config.ProcessConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The shorthand flags of {@code strata serve}, each standing for one configuration key (see
 * {@code docs/CONFIGURATION.md}, "Flags and keys"). Shared by {@code serve} and
 * {@code inspect config}, so that the latter prints exactly what the former would build. A flag
 * not given leaves the key to the file, {@code STRATA_SET} and {@code --set}. Confined to the main
 * thread.
 */
final class ServeFlags {
    /** What serve runs with before any file or flag: no offload tier (KV in DEVICE memory only). */
    static final List<String> DEFAULTS = List.of("tiers={}");

    @Option(names = "--model", paramLabel = "DIR",
            description = "model directory (config.json, safetensors, tokenizer.json); default: the demo model, written on first use [model.path]")
    Path model;
    @Option(names = "--models-dir", paramLabel = "DIR", description = "where the demo model is cached (default: $STRATA_MODELS, else ~/.cache/strata/models) [model.cache-dir]")
    Path modelsDir;
    @Option(names = "--model-id", description = "the id clients name in 'model' (default: the directory's name) [model.id]")
    String modelId;
    @Option(names = "--model-load", paramLabel = "copy|map",
            description = "how the weights are brought into memory: copy (read once into private memory; the files may then change without effect) or map (memory-mapped, sharing the page cache; the files must not be truncated or rewritten in place while served, and a change takes the model out of service) (default: copy) [model.load]")
    String modelLoad;
    @Option(names = "--host", description = "address to bind (default: 127.0.0.1; a non-loopback address needs --api-key, or --insecure) [server.host]")
    String host;
    @Option(names = "--insecure", arity = "0",
            description = "allow a non-loopback --host without --api-key: anyone who reaches the address may generate (default: refused) [server.insecure]")
    Boolean insecure;
    @Option(names = "--port", description = "TCP port; 0 picks a free one (default: 8000) [server.port]")
    Integer port;
    @Option(names = "--api-key", description = "require 'Authorization: Bearer KEY' on /v1/* and /metrics (default: none, or $STRATA_API_KEY) [server.api-key]")
    String apiKey;
    @Option(names = "--threads", description = "kernel threads (default: the available processors) [server.threads]")
    Integer threads;
    @Option(names = "--kv-blocks", description = "KV blocks in DEVICE memory; a sequence holds at most kv-blocks × block-tokens tokens (default: 256) [kv.device-blocks]")
    Integer kvBlocks;
    @Option(names = "--block-tokens", description = "tokens per KV block (default: 16) [kv.block-tokens]")
    Integer blockTokens;
    @Option(names = "--kv-policy", paramLabel = "NAME",
            description = "eviction policy of the KV blocks in DEVICE memory: adaptive-reach, priority-lru, lru, tiny-lfu or prefix-aware (default: adaptive-reach) [kv.policy]")
    String kvPolicy;
    @Option(names = "--expert-masters", paramLabel = "DIR",
            description = "keep the expert masters on SSD in this directory (direct I/O, removed at exit) instead of host memory, for MoE"
                    + " models larger than memory; needs --expert-cap (default: host memory) [experts.masters-dir]")
    Path expertMasters;
    @Option(names = "--expert-cap", description = "expert slots per MoE layer in DEVICE memory; 0 reads experts from the model's weights (default: 0) [experts.device-slots]")
    Integer expertCap;
    @Option(names = "--split-budget", paramLabel = "SIZE",
            description = "one DEVICE budget split live between expert slots and KV slots (MV-WSA), e.g. 2GiB; needs --expert-cap (the starting slots per layer), and --kv-blocks becomes the KV floor; 0: no split (default: no split) [split.budget, split.enabled]")
    String splitBudget;
    @Option(names = "--host-kv", paramLabel = "SIZE", description = "HOST tier that committed KV blocks are copied into and reloaded from after eviction, e.g. 256MiB; 0: none (default: none) [tiers.host.capacity]")
    String hostKv;
    @Option(names = "--disk-kv", paramLabel = "DIR", description = "a DISK tier for KV blocks below the HOST tier, in this directory (default: none) [tiers.disk.directory]")
    Path diskKv;
    @Option(names = "--disk-kv-size", paramLabel = "SIZE", description = "capacity of the DISK KV tier (default: 1GiB with --disk-kv) [tiers.disk.capacity]")
    String diskKvSize;
    @Option(names = "--pool", paramLabel = "PATH", description = "share KV blocks with other engine processes through this pool file (see strata node) [tiers.pool.paths]")
    Path pool;
    @Option(names = "--pool-name", paramLabel = "NAME", description = "the pool's name (default: the node's) [node.pool-name]")
    String poolName;
    @Option(names = "--pool-capacity", paramLabel = "SIZE", description = "capacity of the pool when this process creates it (embedded) (default: 1GiB) [tiers.pool.capacity]")
    String poolCapacity;
    @Option(names = "--node-access", paramLabel = "MODE",
            description = "how the pool's block index is reached: DAEMON (strata node), EMBEDDED (in this process) or AUTO (default: AUTO) [node.access]")
    ProcessConfig.Access nodeAccess;
    @Option(names = "--rpc", paramLabel = "PATH", description = "the RPC region of strata node (default: the node's) [node.rpc]")
    Path rpc;
    @Option(names = "--peer", paramLabel = "FILE", split = ",",
            description = "borrow memory lent by strata peer agents through these lending files (comma-separated): a PEER KV tier above the HOST tier and copies of the most-routed experts [peers.files]")
    List<Path> peerFiles = new ArrayList<>();
    @Option(names = "--peer-kv", paramLabel = "SIZE", description = "most bytes of KV blocks kept on peers (needs a HOST tier; 0: none) (default: 64MiB with --peer) [tiers.peer.capacity]")
    String peerKv;
    @Option(names = "--peer-durability", paramLabel = "MODE",
            description = "KV blocks offloaded to peers: lossy (only copy on the peer; a revoked block is recomputed) or backed (also written through to HOST) (default: lossy) [tiers.peer.durability]")
    String peerDurability;
    @Option(names = "--peer-experts", paramLabel = "SIZE", description = "most bytes of expert copies kept on peers (with --expert-cap; 0: none) (default: 64MiB) [experts.peer-bytes]")
    String peerExperts;
    @Option(names = "--routing-trace", paramLabel = "FILE",
            description = "record every routing decision of a MoE model in the routing-trace format (for strata trace stats and plan-split) [server.routing-trace]")
    Path routingTrace;
    @Option(names = "--rebalance-ms", paramLabel = "MS", description = "time between the expert rebalancer's passes (default: 200) [experts.rebalance-ms]")
    Long rebalanceMillis;
    @Option(names = "--peer-policy", paramLabel = "NAME", description = "how a peer is picked: best-fit, locality, fairness or stability (default: stability: the peer that took memory back least often lately) [tiers.peer.policy]")
    String peerPolicy;
    @Option(names = "--max-body-bytes", description = "largest request body (default: 1MiB) [server.max-body]")
    String maxBodyBytes;
    @Option(names = "--max-prompt-tokens", description = "longest prompt (default: kv-blocks × block-tokens − 1) [server.max-prompt-tokens]")
    Integer maxPromptTokens;
    @Option(names = "--header-timeout-ms", paramLabel = "MS",
            description = "time a client has to send a whole request before its connection is closed, rounded up to seconds (default: 10000) [server.header-timeout-ms]")
    Long headerTimeoutMillis;
    @Option(names = "--max-idle-connections", paramLabel = "N", description = "most kept-alive connections left open between requests (default: 256) [server.max-idle-connections]")
    Integer maxIdleConnections;
    @Option(names = "--max-tokens-limit", description = "largest max_tokens a request may ask for (default: kv-blocks × block-tokens − 1) [server.max-tokens-limit]")
    Integer maxTokensLimit;

    /** The flags given, as configuration settings. */
    Shorthands settings() {
        Shorthands s = new Shorthands()
                .put("--model", "model.path", model).put("--models-dir", "model.cache-dir", modelsDir).put("--model-id", "model.id", modelId)
                .put("--model-load", "model.load", modelLoad)
                .put("--host", "server.host", host).put("--port", "server.port", port).put("--api-key", "server.api-key", apiKey)
                .put("--insecure", "server.insecure", insecure).put("--threads", "server.threads", threads)
                .put("--max-body-bytes", "server.max-body", maxBodyBytes).put("--max-prompt-tokens", "server.max-prompt-tokens", maxPromptTokens)
                .put("--max-tokens-limit", "server.max-tokens-limit", maxTokensLimit).put("--routing-trace", "server.routing-trace", routingTrace)
                .put("--header-timeout-ms", "server.header-timeout-ms", headerTimeoutMillis)
                .put("--max-idle-connections", "server.max-idle-connections", maxIdleConnections)
                .put("--kv-blocks", "kv.device-blocks", kvBlocks).put("--block-tokens", "kv.block-tokens", blockTokens)
                .put("--kv-policy", "kv.policy", kvPolicy)
                .put("--expert-cap", "experts.device-slots", expertCap).put("--expert-masters", "experts.masters-dir", expertMasters)
                .put("--split-budget", "split.budget", splitBudget)
                .put("--split-budget", "split.enabled", splitBudget == null ? null : !Shorthands.isZero(splitBudget)).put("--peer-experts", "experts.peer-bytes", peerExperts).put("--rebalance-ms", "experts.rebalance-ms", rebalanceMillis)
                .tierCapacity("--host-kv", "tiers.host", hostKv)
                .put("--disk-kv", "tiers.disk.directory", diskKv).put("--disk-kv-size", "tiers.disk.capacity", diskKv != null && diskKvSize == null ? "1GiB" : diskKvSize)
                .list("--pool", "tiers.pool.paths", pool == null ? List.of() : List.of(pool)).put("--pool-capacity", "tiers.pool.capacity", poolCapacity)
                .put("--pool-name", "node.pool-name", poolName).put("--node-access", "node.access", nodeAccess).put("--rpc", "node.rpc", rpc)
                .list("--peer", "peers.files", peerFiles);
        String peerKvSize = peerKv;
        if (peerKvSize == null && !peerFiles.isEmpty()) {
            peerKvSize = "64MiB"; // --peer: a PEER KV tier above the HOST tier unless --peer-kv says otherwise
        }
        s.tierCapacity("--peer-kv", "tiers.peer", peerKvSize);
        if (peerKvSize == null || !Shorthands.isZero(peerKvSize)) {
            s.put("--peer-durability", "tiers.peer.durability", peerDurability).put("--peer-policy", "tiers.peer.policy", peerPolicy);
        }
        return s;
    }
}
