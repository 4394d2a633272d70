package dev.strata.cli;

import dev.strata.cache.kv.PrefixHasher;
import dev.strata.cache.split.LiveSplit;
import dev.strata.cluster.LocalRedisCluster;
import dev.strata.engine.forward.ModelRunner;
import dev.strata.engine.model.ModelConfig;
import dev.strata.engine.model.ModelDirectory;
import dev.strata.engine.sample.FinishReason;
import dev.strata.engine.serve.GenerationRequest;
import dev.strata.engine.serve.ContinuousBatchingGenerator;
import dev.strata.engine.serve.ServeEngine;
import dev.strata.engine.serve.ServeMetrics;
import dev.strata.engine.serve.TextSink;
import dev.strata.engine.synth.DemoModel;
import dev.strata.engine.tokenizer.ChatMessage;
import dev.strata.memory.Sizes;
import dev.strata.memory.device.CpuDeviceBackend;
import dev.strata.memory.log.Log;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code strata demo}: the whole system on one machine in about a minute. Makes the demo model if
 * needed, starts {@code strata node} over a pool file in {@code /dev/shm} and two
 * {@code strata serve} instances attached to it (all three child JVMs; each instance with a KV chain
 * of DEVICE slots, PEER, HOST and a DISK tier in the demo's directory), replays multi-turn chat
 * sessions over HTTP with turns of each session alternating between the instances, replays the
 * same prompts through an unpaged in-process engine, and prints what happened: prefix KV blocks
 * found per tier (the default sizes make every tier serve some; a column left empty gets one line
 * saying why), TTFT cold and warm (including blocks the other instance wrote), decode speed,
 * the expert hit rate under a cap smaller than the experts, and whether every output was
 * byte-identical. With {@code --peer} it also starts a {@code strata peer} agent that both
 * instances borrow from (KV blocks on a PEER tier above HOST, experts placed by the rebalancer);
 * halfway through the replay the agent's demand rises (a file signal) and it takes most of its
 * memory back, and the report adds the KV blocks and expert fetches served from the peer, the bytes
 * kept off the host link and the revocations seen. Each instance splits one DEVICE budget live
 * between its expert slots and its KV slots ({@code --split-budget}, sized from the model by
 * default, 0 for none), and the report ends with the split each instance ended on. Exits 0 when every output matched, 1 if one
 * differed, 2 on bad arguments or a failure (a child that did not start, a request that failed),
 * after cleaning up. {@code -c FILE} and {@code --set key=value} are handed to every child before
 * the demo's own flags, which as shorthands are applied after them.
 *
 * <p>With {@code --machines 2} the demo runs two machines on this host instead: each is a
 * {@code strata node} over its own pool (in its own directory) with one {@code strata serve}
 * instance attached, and the two share nothing but a real local Redis Cluster (3 primaries, a
 * password, on free ports) that the demo starts with {@link LocalRedisCluster} and hands to each
 * instance through {@code tiers.cluster}; no peer agent runs. A session's turns alternate between
 * the machines, so the first turn of the first session is cold, the second session's first turn
 * on the other machine loads the shared system prompt from the cluster, and the third session's
 * first turn finds it in its own machine's tiers. After each turn the demo waits until the
 * instance's cluster publishes stop moving, so the next turn on the other machine can find them.
 * The report adds the KV blocks each turn loaded from the cluster (the delta of the instance's
 * {@code strata_cluster_hits_total}) as a CLUSTER column and a TTFT row, and each machine's
 * {@code strata_cluster_*} hits, misses and bytes. Without {@code redis-server} on the PATH it fails
 * at once with {@link LocalRedisCluster}'s error, which names the install command.
 *
 * <p>Design note (cleanup): the children and the pool's directory are registered with one
 * idempotent cleanup that runs in a {@code finally}, and from a shutdown hook on Ctrl-C or
 * SIGTERM; each child is also told this process's pid and ends itself when this process dies. The
 * pool, the node's RPC region, its lock file, the peer agent's lending and demand files and the
 * instances' DISK KV tiers live in one directory {@code /dev/shm/strata-demo-<pid>}, removed at the
 * end; directories of earlier runs whose process is gone are removed at start. With two machines
 * the local Redis Cluster (its directory under the demo's) is stopped after the children, and one
 * left by an earlier run whose process is gone is stopped before its directory is removed.
 *
 * <p>Threads: picocli's thread runs the demo; the shutdown hook may run the cleanup concurrently.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Runs Strata end to end: strata node over a shared pool, two strata serve instances attached to it,",
                "multi-turn chat sessions replayed across both, and a report of KV hits per tier (DEVICE, HOST, DISK, pool, PEER),",
                "TTFT cold and warm, decode speed, expert hits and a byte-for-byte check against an unpaged run."})
final class DemoCommand implements Callable<Integer> {
    private static final Pattern NODE_READY = Pattern.compile("strata node ready");
    private static final Pattern PEER_READY = Pattern.compile("strata peer ready");
    private static final Pattern SERVING = Pattern.compile("serving .* on http://([^/\\s]+):(\\d+)/v1");
    private static final String MODEL_ID = "demo";
    private static final int BLOCK_TOKENS = 16;

    @Option(names = "--machines", description = "machines run on this host: 1 (a node and two instances over one pool) or 2 (each a node "
            + "over its own pool with one instance, sharing KV blocks only through a local Redis Cluster the demo starts from redis-server; "
            + "no peer agent) (default: ${DEFAULT-VALUE})")
    int machines = 1;
    @Option(names = "--sessions", description = "chat sessions (default: ${DEFAULT-VALUE})")
    int sessions = 6;
    @Option(names = "--turns", description = "turns per session (default: ${DEFAULT-VALUE})")
    int turns = 5;
    @Option(names = "--max-tokens", description = "tokens generated per turn (default: ${DEFAULT-VALUE})")
    int maxTokens = 16;
    @Option(names = "--expert-cap", description = "expert slots per MoE layer of each instance (the model has 32 experts) (default: ${DEFAULT-VALUE})")
    int expertCap = 16;
    @Option(names = "--kv-blocks", description = "DEVICE KV blocks of 16 tokens per instance (default: ${DEFAULT-VALUE})")
    int kvBlocks = 58;
    @Option(names = "--host-kv", paramLabel = "SIZE", description = "HOST KV tier per instance (default: ${DEFAULT-VALUE})")
    String hostKv = "512KiB";
    @Option(names = "--disk-kv", paramLabel = "SIZE", description = "DISK KV tier per instance, below HOST, in the demo's directory; 0: none (default: ${DEFAULT-VALUE})")
    String diskKv = "64MiB";
    @Option(names = "--pool-capacity", paramLabel = "SIZE", description = "the shared pool's capacity (default: ${DEFAULT-VALUE})")
    String poolCapacity = "256MiB";
    @Option(names = "--split-budget", paramLabel = "SIZE", description = "DEVICE bytes each instance splits live between expert slots "
            + "and KV slots (--expert-cap is where the experts start, --kv-blocks the KV floor); 0: no split (default: sized from the model: "
            + "the starting expert slots and the KV floor, plus the split's KV headroom of 4 blocks above the floor)")
    String splitBudget;
    @Option(names = "--threads", description = "kernel threads per instance (default: ${DEFAULT-VALUE})")
    int threads = 1;
    @Option(names = "--models-dir", paramLabel = "DIR", description = "where the demo model is cached (default: $STRATA_MODELS, else ~/.cache/strata/models)")
    Path modelsDir;
    @Option(names = "--model", paramLabel = "DIR", description = "serve this model directory instead of the demo model")
    Path model;
    @Option(names = "--shm", paramLabel = "DIR", description = "where the pool's directory is made (default: ${DEFAULT-VALUE})")
    Path shm = Path.of("/dev/shm");
    @Option(names = "--report-json", paramLabel = "FILE", description = "also write the report's facts as JSON")
    Path reportJson;
    @Option(names = "--peer", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "also start a strata peer agent that both instances borrow from, and that takes most of its memory back halfway "
                    + "(default: on; --no-peer leaves it out)")
    boolean peer;
    @Option(names = "--peer-budget", paramLabel = "SIZE", description = "bytes the peer agent lends (default: ${DEFAULT-VALUE})")
    String peerBudget = "64MiB";
    @Option(names = "--peer-kv", paramLabel = "SIZE", description = "PEER KV tier per instance, above HOST, on the peer's memory (default: ${DEFAULT-VALUE})")
    String peerKv = "2MiB";
    @Option(names = "--peer-durability", paramLabel = "MODE", description = "KV blocks on the peer: lossy or backed (default: ${DEFAULT-VALUE})")
    String peerDurability = "lossy";

    @Mixin
    ConfigOptions config = new ConfigOptions();

    private final List<ChildProcess> children = new ArrayList<>(); // guarded by this
    private Path workDir;
    private boolean cleaned; // guarded by this
    private LocalRedisCluster cluster; // with --machines 2, once created; guarded by this
    private int clusterNodesStopped = -1; // nodes the cleanup stopped; -1: no cluster
    private final Object cleanupLock = new Object(); // held for the whole cleanup

    @Override
    public Integer call() {
        try {
            return run();
        } catch (IllegalStateException e) {
            Log.error("demo", "failed: " + e.getMessage(), null);
            if (e.getMessage() != null && e.getMessage().contains("above the limit")) {
                Log.error("demo", "the conversations outgrew one sequence's KV: raise --kv-blocks (now " + kvBlocks
                        + " blocks of " + BLOCK_TOKENS + " tokens) or lower --turns", null);
            }
            return 2;
        }
    }

    private int run() {
        if (machines == 2) {
            peer = false; // a peer agent's memory would be a third thing the machines share (and its flags are not checked)
        }
        validate();
        removeStaleWorkDirs();
        workDir = shm.resolve("strata-demo-" + ProcessHandle.current().pid());
        Thread hook = new Thread(this::cleanup, "strata-demo-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
        DemoReport report = new DemoReport();
        report.sessions = sessions;
        report.turnsPerSession = turns;
        report.shmDir = workDir;
        report.machines = machines;
        Path dir;
        long start = System.nanoTime();
        try {
            Files.createDirectories(workDir);
            if (machines == 2) { // first: without redis-server the demo ends here, before the model is made or a child starts
                startCluster(report);
            }
            long made = System.nanoTime();
            dir = model != null ? model : DemoModel.ensure(modelsDir != null ? modelsDir : DemoModel.defaultCacheRoot(), Log.stream("demo"));
            start += System.nanoTime() - made; // model synthesis excluded
            runServed(dir, report);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + workDir + ": " + e.getMessage(), e);
        } finally {
            cleanup();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or has run
            }
        }
        synchronized (this) {
            report.childrenStopped = children.stream().noneMatch(ChildProcess::isAlive);
            report.clusterNodesStopped = clusterNodesStopped;
        }
        report.shmRemoved = !Files.exists(workDir);
        progress("replaying the same prompts through an unpaged in-process engine");
        runUnpaged(dir, report);
        report.seconds = (System.nanoTime() - start) / 1e9;
        report.print(System.out);
        if (reportJson != null) {
            report.writeJson(reportJson);
        }
        return report.identical() ? 0 : 1;
    }

    private void validate() {
        for (Object[] v : new Object[][] {{"--sessions", sessions}, {"--turns", turns}, {"--max-tokens", maxTokens},
                {"--kv-blocks", kvBlocks}, {"--threads", threads}}) {
            if ((int) v[1] < 1) {
                throw new IllegalArgumentException(v[0] + " must be at least 1, got " + v[1]);
            }
        }
        if (machines != 1 && machines != 2) {
            throw new IllegalArgumentException("--machines must be 1 or 2, got " + machines);
        }
        if (expertCap < 0) {
            throw new IllegalArgumentException("--expert-cap must be at least 0, got " + expertCap);
        }
        if (!peerDurability.equalsIgnoreCase("lossy") && !peerDurability.equalsIgnoreCase("backed")) {
            throw new IllegalArgumentException("--peer-durability must be lossy or backed, got '" + peerDurability + "'");
        }
        for (String[] v : new String[][] {{"--host-kv", hostKv}, {"--disk-kv", diskKv}, {"--pool-capacity", poolCapacity},
                {"--peer-budget", peerBudget}, {"--peer-kv", peerKv}, {"--split-budget", splitBudget == null ? "0" : splitBudget}}) {
            try {
                Sizes.parse(v[1]);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(v[0] + ": " + e.getMessage(), e);
            }
        }
        if (Sizes.parse(diskKv) > 0 && Sizes.parse(hostKv) == 0) {
            throw new IllegalArgumentException("--disk-kv " + diskKv + " needs a HOST KV tier above it (--host-kv is " + hostKv + ")");
        }
        if (peer && Sizes.parse(peerKv) > 0 && Sizes.parse(hostKv) == 0) {
            throw new IllegalArgumentException("--peer-kv " + peerKv + " needs a HOST KV tier below it (--host-kv is " + hostKv
                    + "); give --host-kv SIZE or --peer-kv 0");
        }
        if (!Files.isDirectory(shm)) {
            throw new IllegalArgumentException("--shm " + shm + " is not a directory");
        }
        if (config.file != null && !Files.isRegularFile(config.file)) {
            throw new IllegalArgumentException("-c " + config.file + ": no such file");
        }
        config.load(ServeFlags.DEFAULTS, new Shorthands()); // a bad file or setting ends the demo before any child starts
    }

    /**
     * The arguments of one child: its subcommand, then the user's configuration file and
     * {@code --set} settings (every child reads the same configuration), then the demo's own
     * flags, which as shorthands are applied after the file and the settings.
     */
    private List<String> childArgs(String command, List<String> flags) {
        List<String> args = new ArrayList<>(List.of(command));
        if (config.file != null) {
            args.addAll(List.of("-c", config.file.toAbsolutePath().toString()));
        }
        for (String setting : config.settings) {
            args.addAll(List.of("--set", setting));
        }
        args.addAll(flags);
        return args;
    }

    private static void progress(String message) {
        Log.info("demo", message);
    }

    /**
     * The directory of machine {@code m}'s pool, node RPC region and DISK tiers: the demo's own
     * with one machine, {@code machine-A} or {@code machine-B} in it with two.
     */
    private Path machineDir(int m) {
        return machines == 1 ? workDir : workDir.resolve("machine-" + DemoReport.INSTANCE_NAMES[m]);
    }

    /**
     * Starts the local Redis Cluster the two machines share: 3 primaries without replicas, with a
     * password, on ports found free, in the demo's directory.
     *
     * @throws IllegalStateException with {@link LocalRedisCluster}'s error naming the install command when
     *                               {@code redis-server} is not on the PATH, or naming the node that did not start
     */
    private void startCluster(DemoReport report) {
        int base = LocalRedisCluster.freePortBase(3);
        progress("starting a local Redis Cluster of 3 primaries on " + LocalRedisCluster.HOST + ":" + base + "-" + (base + 2));
        LocalRedisCluster c = LocalRedisCluster.create(workDir.resolve("cluster"), 3, 0, base, true);
        synchronized (this) {
            if (cleaned) {
                throw new IllegalStateException("the demo is stopping");
            }
            cluster = c; // registered before it starts, so that the cleanup stops whatever part of it started
        }
        c.start(Duration.ofSeconds(60));
        report.clusterNodes = c.nodes();
        progress("local Redis Cluster ready: " + String.join(", ", c.nodes()));
    }

    /**
     * A port from which {@code count} consecutive ports, and their cluster bus ports 10000 above,
     * are free on {@link LocalRedisCluster#HOST} now (another process may still take one before the
     * cluster binds it).
     */
    /**
     * Starts the node(s) and both instances, replays the sessions, and reads the instances'
     * counters. One machine: one node, both instances on its pool. Two machines: a node each, one
     * instance on each node's pool, both instances on the cluster.
     */
    private void runServed(Path dir, DemoReport report) {
        long self = ProcessHandle.current().pid();
        ModelConfig modelConfig = ModelConfig.read(dir);
        String fingerprint = ServeEngine.fingerprint(dir, BLOCK_TOKENS).toString();
        Path[] pools = new Path[machines];
        Path[] rpcs = new Path[machines];
        ChildProcess[] nodes = new ChildProcess[machines];
        for (int m = 0; m < machines; m++) {
            Path at = machineDir(m);
            try {
                Files.createDirectories(at);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create " + at + ": " + e.getMessage(), e);
            }
            pools[m] = at.resolve("kv.pool");
            rpcs[m] = at.resolve("node.rpc");
            progress("starting strata node" + (machines == 1 ? "" : " of machine " + DemoReport.INSTANCE_NAMES[m]) + " over " + pools[m]);
            nodes[m] = launch("strata node" + (machines == 1 ? "" : " " + DemoReport.INSTANCE_NAMES[m]), childArgs("node",
                    List.of("--pool", pools[m].toString(), "--pool-name", "demo", "--rpc", rpcs[m].toString(), "--pool-capacity", poolCapacity,
                            "--model-fingerprint", fingerprint, "--hash-version", Integer.toString(PrefixHasher.VERSION), "--channels", "4",
                            "--exit-with", Long.toString(self))));
        }
        for (ChildProcess node : nodes) {
            node.awaitLine(NODE_READY, 60_000);
            progress(node.name() + " ready (pid " + node.pid() + ")");
            report.nodePids.add(node.pid());
        }
        Path lendFile = workDir.resolve("peer.lend");
        Path demandFile = workDir.resolve("peer.demand");
        long budget = Sizes.parse(peerBudget);
        List<String> peerArgs = List.of();
        if (peer) {
            writeDemand(demandFile, 0);
            progress("starting strata peer lending " + Sizes.format(budget) + " from " + lendFile);
            ChildProcess agent = launch("strata peer", childArgs("peer", List.of("--file", lendFile.toString(), "--budget", Long.toString(budget),
                    "--region", "1MiB", "--demand", "file:" + demandFile, "--grace-ms", "1000", "--exit-with", Long.toString(self))));
            agent.awaitLine(PEER_READY, 60_000);
            progress("strata peer ready (pid " + agent.pid() + ")");
            report.peerPid = agent.pid();
            String share = Long.toString(Math.max(1L << 20, budget / 4));
            peerArgs = List.of("--peer", lendFile.toString(), "--peer-kv", peerKv, "--peer-experts", share, "--peer-durability",
                    peerDurability.toLowerCase(Locale.ROOT), "--rebalance-ms", "100");
        }
        long split = splitBudget(modelConfig);
        String[] bases = new String[2];
        ChildProcess[] instances = new ChildProcess[2];
        for (int i = 0; i < 2; i++) {
            progress("starting engine instance " + report.instanceNames[i]);
            List<String> args = new ArrayList<>(List.of("--model", dir.toString(), "--model-id",
                    MODEL_ID, "--port", "0", "--threads", Integer.toString(threads), "--kv-blocks", Integer.toString(kvBlocks),
                    "--block-tokens", Integer.toString(BLOCK_TOKENS), "--expert-cap", Integer.toString(expertCap), "--host-kv", hostKv,
                    "--pool", pools[i % machines].toString(), "--pool-name", "demo", "--rpc", rpcs[i % machines].toString(),
                    "--node-access", "DAEMON", "--exit-with", Long.toString(self)));
            if (Sizes.parse(diskKv) > 0) {
                args.addAll(List.of("--disk-kv", machineDir(i % machines).resolve("disk-" + report.instanceNames[i]).toString(),
                        "--disk-kv-size", diskKv));
            }
            if (machines == 2) { // the cluster's nodes and password file, after the user's settings
                args.addAll(List.of("--set", "tiers.cluster.nodes=[" + String.join(",", report.clusterNodes) + "]",
                        "--set", "tiers.cluster.password-file=" + cluster.passwordFile()));
            }
            if (split > 0) {
                args.addAll(List.of("--split-budget", Long.toString(split)));
            }
            args.addAll(peerArgs);
            instances[i] = launch("strata serve " + report.instanceNames[i], childArgs("serve", args));
        }
        for (int i = 0; i < 2; i++) {
            Matcher m = instances[i].awaitLine(SERVING, 120_000);
            bases[i] = "http://" + m.group(1) + ":" + m.group(2);
            report.instancePids[i] = instances[i].pid();
            progress("engine instance " + report.instanceNames[i] + " ready at " + bases[i] + " (pid " + instances[i].pid() + ")");
        }
        report.setup = String.format(Locale.ROOT, "model %s (%s, %d layers, %d experts, top-%d); per instance: %d expert slots per layer, "
                        + "%d DEVICE KV blocks of %d tokens, %s HOST KV, %s DISK KV; %s",
                dir.getFileName(), modelConfig.family().cliName(), modelConfig.numHiddenLayers(), modelConfig.numExperts(),
                modelConfig.numExpertsPerTok(), expertCap, kvBlocks, BLOCK_TOKENS, hostKv, Sizes.parse(diskKv) > 0 ? diskKv : "no",
                machines == 1 ? "pool " + poolCapacity : "each machine a pool of " + poolCapacity
                        + " of its own; the machines share KV only through a local Redis Cluster of 3 primaries ("
                        + String.join(", ", report.clusterNodes) + ")")
                + (peer ? String.format(Locale.ROOT, "; strata peer lending %s, %s PEER KV (%s) and expert copies up to %s per instance",
                Sizes.format(budget), peerKv, peerDurability.toLowerCase(Locale.ROOT), Sizes.format(Math.max(1L << 20, budget / 4))) : "")
                + (split > 0 ? "; expert slots and KV blocks share a live split of " + Sizes.format(split) + " per instance" : "")
                + (config.file != null || !config.settings.isEmpty() ? "; over " + configDescription() : "");
        report.peer = peer;
        report.deviceKvBlocks = kvBlocks;
        report.hostKvBytes = Sizes.parse(hostKv);
        report.diskKvBytes = Sizes.parse(diskKv);
        report.peerKvBytes = peer ? Sizes.parse(peerKv) : 0;
        report.kvBlockBytes = ModelRunner.kvGeometry(modelConfig, BLOCK_TOKENS).bytesPerBlock();

        DemoClient client = new DemoClient();
        DemoSessions text = new DemoSessions();
        // the first request of each instance compiles its kernels; then one cold probe each, not sharing the sessions' prefix
        for (int i = 0; i < 2; i++) {
            client.chat(bases[i], MODEL_ID, List.of(ChatMessage.user(text.unrelatedPrompt(10 + i))), 4);
        }
        for (int i = 0; i < 2; i++) {
            report.turns.add(measured(client, bases, i, "probe " + (i + 1), -1,
                    List.of(ChatMessage.user(text.unrelatedPrompt(20 + i))), maxTokens));
            awaitClusterPublishes(client, bases[i]);
        }
        Map<String, Double>[] before = expertCounters(client, bases);
        List<List<ChatMessage>> histories = new ArrayList<>();
        for (int s = 0; s < sessions; s++) {
            histories.add(new ArrayList<>(List.of(ChatMessage.system(DemoSessions.SYSTEM_PROMPT))));
        }
        progress(String.format(Locale.ROOT, "replaying %d sessions × %d turns", sessions, turns));
        for (int t = 0; t < turns; t++) {
            for (int s = 0; s < sessions; s++) {
                List<ChatMessage> history = histories.get(s);
                history.add(ChatMessage.user(text.userMessage(s, t)));
                int instance = (s + t) % 2;
                DemoReport.Turn turn = measured(client, bases, instance, "session " + s + " turn " + t, s, List.copyOf(history), maxTokens);
                report.turns.add(turn);
                awaitClusterPublishes(client, bases[instance]);
                history.add(ChatMessage.assistant(turn.reply.text()));
            }
            progress(String.format(Locale.ROOT, "  turn %d of %d done", t + 1, turns));
            if (peer && t + 1 == (turns + 1) / 2) {
                long demand = budget - budget / 8;
                writeDemand(demandFile, demand);
                report.reclaimedAfterTurn = t + 1;
                progress("the peer's own demand rises to " + Sizes.format(demand) + ": it takes its memory back");
            }
        }
        Map<String, Double>[] after = expertCounters(client, bases);
        for (int i = 0; i < 2; i++) {
            report.expertHits[i] = DemoClient.sum(after[i], "strata_expert_hits_total") - DemoClient.sum(before[i], "strata_expert_hits_total");
            report.expertMisses[i] = DemoClient.sum(after[i], "strata_expert_misses_total")
                    - DemoClient.sum(before[i], "strata_expert_misses_total");
            if (peer) {
                report.expertFromPeer[i] = labelled(after[i], "strata_expert_peer_fetches_total", "source=\"peer\"")
                        - labelled(before[i], "strata_expert_peer_fetches_total", "source=\"peer\"");
                report.expertBytesFromPeer[i] = DemoClient.sum(after[i], "strata_expert_peer_bytes_kept_off_host_link_total")
                        - DemoClient.sum(before[i], "strata_expert_peer_bytes_kept_off_host_link_total");
                report.revocations[i] = DemoClient.sum(after[i], "strata_peer_revocations_total");
                report.peerAlive[i] = DemoClient.sum(after[i], "strata_peer_alive") > 0;
            }
        }
        for (int i = 0; i < 2; i++) {
            report.splits[i] = DemoReport.Split.of(after[i]);
            if (machines == 2) {
                report.clusterCounters[i] = DemoReport.ClusterCounters.of(after[i]);
            }
        }
        histories.clear();
    }

    /**
     * The DEVICE budget each instance splits between expert slots and KV slots: {@code --split-budget}
     * when given, else 0 for a dense model or an instance without paged experts, else the bytes of
     * the starting expert slots of every MoE layer and of the KV floor, as the serve side lays them
     * out (each slot aligned to the DEVICE tier's alignment), plus the live split's own KV headroom
     * ({@link LiveSplit.Settings#headroomBlocks}) above the floor. The instance starts where the
     * demo without a split runs (DEVICE KV a little above the longest conversation, so every tier
     * below it still serves blocks); from there the controller may give expert slots to the KV
     * side down to top-k per layer and take them back, and grow the experts into KV it holds above
     * the floor.
     */
    private long splitBudget(ModelConfig c) {
        if (splitBudget != null) {
            return Sizes.parse(splitBudget);
        }
        if (!c.moe() || expertCap == 0) {
            return 0;
        }
        long blockBytes = Sizes.alignUp(ModelRunner.kvGeometry(c, BLOCK_TOKENS).bytesPerBlock(), CpuDeviceBackend.ALIGNMENT);
        long slotBytes = Sizes.alignUp(ModelRunner.expertLayout(c).bytes(), blockBytes); // one expert slot: whole KV slots under a split
        long startSlots = Math.min(expertCap, c.numExperts());
        long headroomBlocks = LiveSplit.Settings.defaults(1).headroomBlocks();
        return startSlots * ModelRunner.moeLayerCount(c) * slotBytes + (kvBlocks + headroomBlocks) * blockBytes;
    }

    /** The user's configuration as given: "-c FILE" and the --set settings. */
    private String configDescription() {
        List<String> parts = new ArrayList<>();
        if (config.file != null) {
            parts.add("-c " + config.file);
        }
        config.settings.forEach(setting -> parts.add("--set " + setting));
        return String.join(" ", parts);
    }

    /** The sum of the samples of family {@code name} whose labels contain {@code label} (e.g. {@code source="peer"}). */
    private static double labelled(Map<String, Double> samples, String name, String label) {
        double s = 0;
        for (Map.Entry<String, Double> e : samples.entrySet()) {
            String key = e.getKey();
            if (key.startsWith(name + "{") && key.contains(label)) {
                s += e.getValue();
            }
        }
        return s;
    }

    /** Sets the peer agent's own demand: the file it re-reads every tick (written whole, then moved into place). */
    private static void writeDemand(Path file, long bytes) {
        Path temp = file.resolveSibling(file.getFileName() + ".tmp");
        try {
            Files.writeString(temp, Long.toString(bytes));
            Files.move(temp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the peer's demand file " + file + ": " + e.getMessage(), e);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Double>[] expertCounters(DemoClient client, String[] bases) {
        return new Map[] {client.metrics(bases[0]), client.metrics(bases[1])};
    }

    /**
     * With two machines, waits until {@code base}'s cluster publishes ({@code strata_cluster_publishes_total},
     * all outcomes) have stood still over three scrapes 50 ms apart, at most 10 s: a turn's blocks
     * are published after it committed them, by the instance's I/O thread, and the next turn on the
     * other machine should find them there. Returns at once with one machine.
     */
    private void awaitClusterPublishes(DemoClient client, String base) {
        if (machines == 1) {
            return;
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        double last = -1;
        int still = 0;
        while (still < 3 && System.nanoTime() < deadline) {
            double now = DemoClient.sum(client.metrics(base), "strata_cluster_publishes_total");
            still = now == last ? still + 1 : 0;
            last = now;
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the cluster publishes of " + base, e);
            }
        }
    }

    /**
     * Sends one turn to {@code instance} and records where its prefix blocks were found: per tier
     * from {@code strata_kv_hits_total}, and how many of the shared store's blocks came from the
     * cluster from {@code strata_cluster_hits_total} (absent, so 0, without a cluster).
     */
    private DemoReport.Turn measured(DemoClient client, String[] bases, int instance, String label, int session,
                                           List<ChatMessage> messages, int maxTokens) {
        Map<String, Double> before = client.metrics(bases[instance]);
        DemoClient.Reply reply = client.chat(bases[instance], MODEL_ID, messages, maxTokens);
        Map<String, Double> after = client.metrics(bases[instance]);
        double[] d = new double[5];
        String[] where = {"device", "host", "disk", "shared"};
        for (int k = 0; k < where.length; k++) {
            d[k] = DemoClient.sample(after, "strata_kv_hits_total", "location", where[k])
                    - DemoClient.sample(before, "strata_kv_hits_total", "location", where[k]);
        }
        d[4] = DemoClient.sum(after, "strata_kv_misses_total") - DemoClient.sum(before, "strata_kv_misses_total");
        DemoReport.Turn turn = new DemoReport.Turn(label, session, instance, reply, d[0], d[1], d[2], d[3], d[4]);
        turn.peer = DemoClient.sample(after, "strata_kv_hits_total", "location", "peer")
                - DemoClient.sample(before, "strata_kv_hits_total", "location", "peer");
        turn.cluster = DemoClient.sum(after, "strata_cluster_hits_total") - DemoClient.sum(before, "strata_cluster_hits_total");
        turn.poolOfItsOwn = machines == 2;
        turn.messages = messages;
        return turn;
    }

    /**
     * Runs every replayed turn's prompt through an in-process engine without an expert pager, KV
     * offload or pool, greedy, and records its output beside the served one.
     */
    private void runUnpaged(Path dir, DemoReport report) {
        int longest = 0;
        for (DemoReport.Turn t : report.turns) {
            longest = Math.max(longest, t.reply.promptTokens() + maxTokens);
        }
        int blocks = Math.max(kvBlocks, (longest + BLOCK_TOKENS - 1) / BLOCK_TOKENS + 1);
        try (ServeEngine engine = new ServeEngine(dir, ServeEngine.Options.builder().threads(threads).blockTokens(BLOCK_TOKENS)
                .kvBlocks(blocks).conclude());
             ContinuousBatchingGenerator generator = new ContinuousBatchingGenerator(engine, new ServeMetrics())) {
            ModelDirectory m = engine.model();
            for (DemoReport.Turn t : report.turns) {
                if (t.session < 0) {
                    continue;
                }
                String prompt = m.chat().render(t.messages, true); // as the server renders it
                int[] tokens = m.tokenizer().encode(prompt);
                Collected out = new Collected();
                generator.submit(GenerationRequest.greedy(tokens, maxTokens), out);
                out.done.join();
                if (out.error != null) {
                    throw new IllegalStateException("the unpaged run of " + t.label + " failed: " + out.error.getMessage(), out.error);
                }
                t.reference = out.text.toString();
                t.referenceTokens = tokens.length == t.reply.promptTokens() ? out.completionTokens : -1;
            }
        }
    }

    /** Collects one in-process generation. */
    private static final class Collected implements TextSink {
        final StringBuilder text = new StringBuilder();
        final CompletableFuture<Void> done = new CompletableFuture<>();
        int completionTokens;
        RuntimeException error;

        @Override
        public void text(String delta) {
            text.append(delta);
        }

        @Override
        public void finished(FinishReason reason, int promptTokens, int completionTokens) {
            this.completionTokens = completionTokens;
            done.complete(null);
        }

        @Override
        public void failed(RuntimeException e) {
            error = e;
            done.complete(null);
        }
    }

    private ChildProcess launch(String name, List<String> args) {
        synchronized (this) {
            if (cleaned) {
                throw new IllegalStateException("the demo is stopping");
            }
            ChildProcess child = ChildProcess.start(name, args);
            children.add(child);
            return child;
        }
    }

    /**
     * Stops the instances, then the node, then removes the pool's directory. Idempotent; a second
     * caller (the shutdown hook while the main thread cleans up, or the reverse) waits until the
     * first is done, so the JVM never exits half-way through.
     */
    private void cleanup() {
        synchronized (cleanupLock) {
            cleanupOnce();
        }
    }

    private void cleanupOnce() {
        List<ChildProcess> toStop;
        synchronized (this) {
            if (cleaned) {
                return;
            }
            cleaned = true;
            toStop = new ArrayList<>(children);
        }
        for (int i = toStop.size() - 1; i >= 0; i--) { // the instances before the node they attach to
            ChildProcess c = toStop.get(i);
            if (c.stop(10_000)) {
                Log.warn("demo", c.name() + " (pid " + c.pid() + ") did not stop on SIGTERM and was killed");
            }
        }
        LocalRedisCluster c;
        synchronized (this) {
            c = cluster;
        }
        if (c != null) { // after the instances, which would otherwise count its going away as errors
            try {
                int stopped = c.stop();
                synchronized (this) {
                    clusterNodesStopped = stopped;
                }
            } catch (RuntimeException e) {
                Log.warn("demo", "could not stop the " + c + ": " + e.getMessage());
            }
        }
        if (workDir != null) {
            deleteTree(workDir);
        }
    }

    /** Removes demo directories under --shm whose process is gone (a demo killed with SIGKILL). */
    private void removeStaleWorkDirs() {
        try (Stream<Path> entries = Files.list(shm)) {
            for (Path p : entries.toList()) {
                String name = p.getFileName().toString();
                if (!name.startsWith("strata-demo-") || !Files.isDirectory(p)) {
                    continue;
                }
                try {
                    long pid = Long.parseLong(name.substring("strata-demo-".length()));
                    if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                        stopStaleCluster(p.resolve("cluster"));
                        deleteTree(p);
                    }
                } catch (NumberFormatException e) {
                    // not a demo directory
                }
            }
        } catch (IOException e) {
            // best effort
        }
    }

    /** Stops the nodes of a local Redis Cluster a demo killed with SIGKILL left in {@code dir}, if any. */
    private static void stopStaleCluster(Path dir) {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try {
            LocalRedisCluster.open(dir).stop();
        } catch (RuntimeException e) {
            Log.warn("demo", "could not stop the local Redis Cluster left in " + dir + ": " + e.getMessage());
        }
    }

    private static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            Log.warn("demo", "could not remove " + dir + ": " + e.getMessage());
        }
    }
}
