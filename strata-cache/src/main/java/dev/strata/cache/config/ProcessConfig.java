package dev.strata.cache.config;

import dev.strata.cache.peer.PeerClient;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Sizes;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The settings of Strata's long-running processes beyond their tiers: the model a server serves,
 * its HTTP endpoint, its KV geometry and expert slots, how it reaches the node daemon's pool, the
 * peers it borrows from, the lending agent of {@code strata peer}, and the online expert/KV split.
 * Every section is optional; a process reads the sections it runs and ignores the others, so one
 * file can describe a whole node (a daemon, its agents and its servers).
 *
 * <p>Values left unset stay null (or 0) where the default belongs to another module (the node's
 * RPC path, the pool name); the command resolves them and {@code strata inspect config} shows the
 * resolved value. Immutable; any thread.
 *
 * <pre>
 * model:   { path: DIR, id: NAME, cache-dir: DIR, load: copy }
 * server:  { host: 127.0.0.1, port: 8000, api-key: KEY, threads: N, max-body: 1MiB,
 *            max-prompt-tokens: N, max-tokens-limit: N, routing-trace: FILE, insecure: false,
 *            header-timeout-ms: 10000, max-idle-connections: 256 }
 * kv:      { block-tokens: 16, device-blocks: 256, policy: adaptive-reach }
 * experts: { device-slots: 0, peer-bytes: 64MiB, rebalance-ms: 200, masters-dir: /mnt/ssd/strata-experts }
 * node:    { access: auto, rpc: PATH, pool-name: NAME, channels: 16, slots: 64, payload: 512,
 *            process-slots: 64, hash-version: 0, model-fingerprint: HEX, pins-per-process: 2048,
 *            pin-seconds: 30 }
 * peers:   { files: [PATH, ...], reattach-ms: 1000, drain-wait-us: 100, revocation-half-life-s: 60 }
 * agent:   { file: PATH, budget: SIZE, region: 2MiB, demand: fixed:0, grace-ms: 1000, tick-ms: 2, stamp: true }
 * split:   { enabled: false, budget: SIZE }
 * </pre>
 *
 * @param model   the served model
 * @param server  the HTTP server
 * @param kv      the KV cache's geometry in DEVICE memory and the eviction policy of its slots
 * @param experts the expert pager and expert copies on peers
 * @param node    the node daemon and how servers reach it
 * @param peers   the lending files a server borrows through
 * @param agent   the lending agent ({@code strata peer})
 * @param split   the online expert/KV split of one DEVICE budget
 */
public record ProcessConfig(Model model, Server server, Kv kv, Experts experts, Node node, Peers peers, Agent agent,
                            Split split) {

    /**
     * How a server brings the model's weights into memory: {@code COPY} reads them once into private
     * memory (the files may then change or go without effect); {@code MAP} memory-maps the files,
     * which must then not be truncated or rewritten in place while served (a change is detected and
     * takes the model out of service).
     */
    public enum ModelLoad { COPY, MAP }

    /**
     * @param path     model directory; null: the demo model
     * @param id       the id clients name; null: the directory's name
     * @param cacheDir where the demo model is cached; null: $STRATA_MODELS, else ~/.cache/strata/models
     * @param load     how the weights are brought into memory
     */
    public record Model(Path path, String id, Path cacheDir, ModelLoad load) {
    }

    /**
     * @param host            bind address
     * @param port            TCP port, 0 picks a free one
     * @param apiKey          bearer key required on /v1/* and /metrics; null: none
     * @param threads         kernel threads; 0: the available processors
     * @param maxBodyBytes    largest request body, bytes
     * @param maxPromptTokens longest prompt, tokens; 0: the KV capacity less one
     * @param maxTokensLimit  largest max_tokens, tokens; 0: the KV capacity less one
     * @param routingTrace    file the routing of served requests is recorded in; null: none
     * @param insecure        serve a non-loopback host without an API key (refused otherwise)
     * @param headerTimeoutMillis time a client has to send a whole request before its connection is closed, ms
     * @param maxIdleConnections  most kept-alive connections left open between requests
     */
    public record Server(String host, int port, String apiKey, int threads, long maxBodyBytes, int maxPromptTokens,
                         int maxTokensLimit, Path routingTrace, boolean insecure, long headerTimeoutMillis,
                         int maxIdleConnections) {
    }

    /**
     * @param blockTokens  tokens per KV block
     * @param deviceBlocks KV blocks in DEVICE memory; a sequence holds at most deviceBlocks × blockTokens tokens
     * @param policy       the eviction policy of the KV manager's DEVICE slots ({@link PolicyKind#KV_DEFAULT} unless set)
     * @param recomputeWhenFaster recompute a cached block rather than load it where that is faster, by the measured
     *                     load and prefill times ({@code kv.recompute-when-faster}, on unless set)
     */
    public record Kv(int blockTokens, int deviceBlocks, PolicyKind policy, boolean recomputeWhenFaster) {
        public Kv {
            Objects.requireNonNull(policy, "kv.policy");
        }
    }

    /**
     * @param deviceSlots   expert slots per MoE layer in DEVICE memory; 0 reads experts from the model's weights
     * @param peerBytes     most bytes of expert copies kept on peers
     * @param rebalanceMillis time between the expert rebalancer's passes, ms
     * @param mastersDir    a directory on SSD where the expert masters live (DISK, direct I/O) instead of HOST memory,
     *                      for MoE models larger than memory; null: HOST
     */
    public record Experts(int deviceSlots, long peerBytes, long rebalanceMillis, java.nio.file.Path mastersDir) {
    }

    /** How the node's pool is reached: through {@code strata node}, in this process, or whichever works. */
    public enum Access { DAEMON, EMBEDDED, AUTO }

    /**
     * @param access           how a server reaches the pool's block index
     * @param rpc              the node's RPC region; null: the node's default path
     * @param poolName         the pool's name; null: the node's default
     * @param channels         engine processes that may attach at once
     * @param slots            requests each client may have in flight, a power of two
     * @param payload          payload bytes per request slot, a multiple of 64
     * @param processSlots     processes that may map the pool at once
     * @param hashVersion      block-hash version; 0 adopts the index's
     * @param modelFingerprint model fingerprint, 32 hex digits; null: the index's, else learned from the first server to attach
     * @param pinsPerProcess   block pins one process may hold
     * @param pinSeconds       how long a pin holds a block, seconds
     */
    public record Node(Access access, Path rpc, String poolName, int channels, int slots, int payload, int processSlots,
                       int hashVersion, String modelFingerprint, int pinsPerProcess, int pinSeconds) {
    }

    /**
     * @param files          lending files of {@code strata peer} agents this process borrows through
     * @param reattachMillis how often each lending file's path is looked at for a restarted agent
     *                       (a lost peer lends again from the next look that finds one), ms
     * @param drainWaitMicros how long a lender's event thread waits for the copies under way on a
     *                       lease it revokes before leaving the lease to them (they stop at their
     *                       next 256 KiB step), µs; 0: never waits
     * @param revocationHalfLifeSeconds how long until a peer's revocations count half as much in
     *                       the default placement (STABILITY, which passes over peers that took
     *                       memory back lately), s
     */
    public record Peers(List<Path> files, long reattachMillis, long drainWaitMicros, long revocationHalfLifeSeconds) {
        public Peers {
            files = List.copyOf(files);
        }
    }

    /**
     * @param file        the lending file; null: the agent's default
     * @param budget      bytes the agent may lend; 0: not set (strata peer requires it)
     * @param region      bytes per lent region, a multiple of 64
     * @param demand      the agent's own demand: fixed:SIZE, file:PATH or trace:PATH[,options]
     * @param graceMillis time a borrower has to give a region back, ms
     * @param tickMillis  how often the agent checks demand and deadlines, ms
     * @param stamp       overwrite regions the agent takes back with its own bytes
     */
    public record Agent(Path file, long budget, long region, String demand, long graceMillis, long tickMillis, boolean stamp) {
    }

    /**
     * @param enabled run the online MV-WSA controller over one DEVICE budget holding experts and KV
     * @param budget  bytes of that budget; 0: {@code tiers.device.capacity}
     */
    public record Split(boolean enabled, long budget) {
    }

    static ProcessConfig read(ConfigNode root) {
        ConfigNode m = section(root, "model", "path", "id", "cache-dir", "load");
        Model model = new Model(path(m.text("path", null)), m.text("id", null), path(m.text("cache-dir", null)),
                m.choice("load", ModelLoad.class, ModelLoad.COPY));
        ConfigNode s = section(root, "server", "host", "port", "api-key", "threads", "max-body", "max-prompt-tokens",
                "max-tokens-limit", "routing-trace", "insecure", "header-timeout-ms", "max-idle-connections");
        Server server = new Server(s.text("host", "127.0.0.1"), s.integer("port", 8000, 0, 65535), s.text("api-key", null),
                s.integer("threads", 0, 0, 4096), positive(s.size("max-body", Sizes.MiB), "server.max-body"),
                s.integer("max-prompt-tokens", 0, 0, Integer.MAX_VALUE), s.integer("max-tokens-limit", 0, 0, Integer.MAX_VALUE),
                path(s.text("routing-trace", null)), s.bool("insecure", false), s.integer("header-timeout-ms", 10_000, 1, 3_600_000),
                s.integer("max-idle-connections", 256, 0, 1 << 20));
        ConfigNode k = section(root, "kv", "block-tokens", "device-blocks", "policy", "recompute-when-faster");
        Kv kv = new Kv(k.integer("block-tokens", 16, 1, 1 << 20), k.integer("device-blocks", 256, 1, Integer.MAX_VALUE),
                k.policy("policy", PolicyKind.KV_DEFAULT), k.bool("recompute-when-faster", true));
        if ((long) kv.blockTokens() * kv.deviceBlocks() > Integer.MAX_VALUE) {
            throw new ConfigException("kv.device-blocks (" + kv.deviceBlocks() + ") × kv.block-tokens (" + kv.blockTokens()
                    + ") is more tokens than a sequence can index");
        }
        ConfigNode e = section(root, "experts", "device-slots", "peer-bytes", "rebalance-ms", "masters-dir");
        long rebalance = e.integer("rebalance-ms", 200, 1, 3_600_000);
        String mastersDir = e.text("masters-dir", null);
        Experts experts = new Experts(e.integer("device-slots", 0, 0, 1 << 20), nonNegative(e.size("peer-bytes", 64 * Sizes.MiB),
                "experts.peer-bytes"), rebalance, mastersDir == null || mastersDir.isBlank() ? null : java.nio.file.Path.of(mastersDir));
        if (experts.mastersDir() != null && experts.deviceSlots() == 0) {
            throw new ConfigException("experts.masters-dir (" + mastersDir + ") keeps the expert masters on DISK for the expert pager;"
                    + " it needs experts.device-slots above 0 (--expert-cap N)");
        }
        ConfigNode n = section(root, "node", "access", "rpc", "pool-name", "channels", "slots", "payload", "process-slots",
                "hash-version", "model-fingerprint", "pins-per-process", "pin-seconds");
        String fingerprint = n.text("model-fingerprint", null); // checked by the node, which names the value
        Node node = new Node(n.choice("access", Access.class, Access.AUTO), path(n.text("rpc", null)), n.text("pool-name", null),
                n.integer("channels", 16, 0, 1 << 16), n.integer("slots", 64, 0, 1 << 16), n.integer("payload", 512, 0, 1 << 24),
                n.integer("process-slots", 64, 1, 4096), n.integer("hash-version", 0, 0, 255), fingerprint,
                n.integer("pins-per-process", 2048, 1, 1 << 24), n.integer("pin-seconds", 30, 1, 86_400));
        // channels, slots and payload are checked together by the node, which names every bad value
        ConfigNode p = section(root, "peers", "files", "reattach-ms", "drain-wait-us", "revocation-half-life-s");
        List<Path> files = new ArrayList<>();
        for (String f : p.list("files")) {
            files.add(Path.of(f));
        }
        Peers peers = new Peers(files, p.integer("reattach-ms", 1000, 1, 3_600_000),
                p.integer("drain-wait-us", (int) (PeerClient.DEFAULT_DRAIN_WAIT_NANOS / 1000), 0, 1_000_000),
                p.integer("revocation-half-life-s", (int) (PeerClient.DEFAULT_REVOCATION_HALF_LIFE_NANOS / 1_000_000_000L), 1, 86_400));
        ConfigNode a = section(root, "agent", "file", "budget", "region", "demand", "grace-ms", "tick-ms", "stamp");
        Agent agent = new Agent(path(a.text("file", null)), nonNegative(a.size("budget", 0), "agent.budget"),
                positive(a.size("region", 2 * Sizes.MiB), "agent.region"), a.text("demand", "fixed:0"),
                a.integer("grace-ms", 1000, 1, 3_600_000), a.integer("tick-ms", 2, 1, 60_000), a.bool("stamp", true));
        // the region size is checked by the agent against its lending file's geometry
        ConfigNode t = section(root, "split", "enabled", "budget");
        Split split = new Split(t.bool("enabled", false), nonNegative(t.size("budget", 0), "split.budget"));
        return new ProcessConfig(model, server, kv, experts, node, peers, agent, split);
    }

    private static ConfigNode section(ConfigNode root, String name, String... keys) {
        ConfigNode c = root.child(name);
        if (c == null) {
            c = new ConfigNode(name, com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode());
        }
        c.allowOnly(keys);
        return c;
    }

    private static Path path(String text) {
        return text == null || text.isBlank() ? null : Path.of(text);
    }

    private static long positive(long v, String key) {
        if (v <= 0) {
            throw new ConfigException(key + ": must be positive, found " + v);
        }
        return v;
    }

    private static long nonNegative(long v, String key) {
        if (v < 0) {
            throw new ConfigException(key + ": must be at least 0, found " + v);
        }
        return v;
    }
}
