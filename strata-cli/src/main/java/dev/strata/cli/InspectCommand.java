package dev.strata.cli;

import dev.strata.cache.config.ProcessConfig;
import dev.strata.cache.config.StrataConfig;
import dev.strata.memory.pool.PoolHeader;
import dev.strata.memory.pool.PoolInspector;
import dev.strata.memory.transfer.NonTemporalCopy;
import dev.strata.node.index.IndexStats;
import dev.strata.node.index.PoolIndexInspector;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code strata inspect ...}: shows configuration and on-disk or in-pool state without changing it. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Shows Strata's state without changing it.",
        subcommands = {InspectCommand.Config.class, InspectCommand.Pool.class})
final class InspectCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    /** The configuration as YAML-like text, sizes in binary units. */
    static String describe(StrataConfig c) {
        StringBuilder b = new StringBuilder("tiers:\n");
        if (c.device() != null) {
            b.append("  device: { capacity: ").append(size(c.device().capacity())).append(" }\n");
        }
        if (c.peer() != null) {
            b.append("  peer:   { capacity: ").append(size(c.peer().capacity())).append(", chunk: ").append(size(c.peer().chunk()))
                    .append(", durability: ").append(name(c.peer().durability())).append(", policy: ").append(c.peer().policy())
                    .append(" }\n");
        }
        if (c.host() != null) {
            b.append("  host:   { capacity: ").append(size(c.host().capacity())).append(", allocator: ")
                    .append(name(c.host().allocator()));
            if (c.host().allocator() == StrataConfig.AllocatorKind.SLAB) {
                b.append(", block: ").append(size(c.host().block()));
            }
            b.append(" }\n");
        }
        if (c.pool() != null) {
            b.append("  pool:   { capacity: ").append(size(c.pool().capacity())).append(", paths: ").append(c.pool().paths())
                    .append(", chunk: ").append(size(c.pool().chunk())).append(", create: ").append(c.pool().create()).append(" }\n");
        }
        if (c.disk() != null) {
            b.append("  disk:   { capacity: ").append(size(c.disk().capacity())).append(", directory: ")
                    .append(c.disk().directory()).append(", direct-io: ").append(c.disk().directIo()).append(" }\n");
        }
        if (c.cluster() != null) { // the password's source is named, never the password
            StrataConfig.ClusterTier k = c.cluster();
            b.append("  cluster: { nodes: ").append(k.nodes()).append(", tenant: ").append(k.tenant()).append(", ttl: ")
                    .append(k.ttlMillis()).append("ms, timeout: ").append(k.timeoutMillis()).append("ms, tls: ").append(k.tls())
                    .append(k.user() != null ? ", user: " + k.user() : "")
                    .append(k.passwordEnv() != null ? ", password-env: " + k.passwordEnv() : "")
                    .append(k.passwordFile() != null ? ", password-file: " + k.passwordFile() : "").append(" }\n");
        }
        b.append("store:\n  chain: ").append(c.store().chain().stream().map(InspectCommand::name).toList()).append('\n');
        for (var kind : c.store().chain()) {
            StrataConfig.TierPolicy p = c.store().policyOf(kind);
            b.append("  ").append(name(kind)).append(": { high-watermark: ").append(p.highWatermark())
                    .append(", low-watermark: ").append(p.lowWatermark()).append(", policy: ").append(name(p.policy())).append(" }\n");
        }
        b.append("  promotion: ").append(name(c.store().promotion()));
        if (c.store().promotion() == StrataConfig.Promotion.TO_TOP_AFTER) {
            b.append(" (after ").append(c.store().promoteAfter()).append(" hits)");
        }
        b.append("\ntransfer: { memory-link-workers: ").append(c.transfer().memoryLinkWorkers())
                .append(", disk-link-workers: ").append(c.transfer().diskLinkWorkers()).append(", staging: ")
                .append(size(c.transfer().stagingBytes())).append(" }\n");
        return b.toString();
    }

    /**
     * What {@code strata serve} builds from {@code c}: the model, the server, the KV geometry, the
     * expert slots, the pool and peers, and the KV offload chain (the tiers above, less DEVICE and
     * POOL, which the KV manager reaches directly).
     */
    static String describeServe(StrataConfig c) {
        var p = c.process();
        StringBuilder b = new StringBuilder("serve:\n");
        b.append("  model: ").append(p.model().path() != null ? p.model().path() : "the demo model")
                .append(p.model().id() != null ? " (id " + p.model().id() + ")" : "")
                .append(", weights ").append(p.model().load() == ProcessConfig.ModelLoad.MAP ? "mapped" : "copied").append('\n');
        b.append("  server: { host: ").append(p.server().host()).append(", port: ").append(p.server().port())
                .append(", threads: ").append(p.server().threads() > 0 ? p.server().threads() : Runtime.getRuntime().availableProcessors())
                .append(", api-key: ").append(p.server().apiKey() != null || System.getenv("STRATA_API_KEY") != null ? "set" : "none")
                .append(", max-body: ").append(size(p.server().maxBodyBytes())).append(" }\n");
        b.append("  kv: { block-tokens: ").append(p.kv().blockTokens()).append(", device-blocks: ").append(p.kv().deviceBlocks())
                .append(", policy: ").append(p.kv().policy().configName())
                .append(", recompute-when-faster: ").append(p.kv().recomputeWhenFaster()).append(" }\n");
        b.append("  experts: { device-slots: ").append(p.experts().deviceSlots()).append(", peer-bytes: ")
                .append(size(p.experts().peerBytes())).append(", rebalance-ms: ").append(p.experts().rebalanceMillis()).append(" }\n");
        var offload = c.onlyTiers(dev.strata.engine.serve.ServeEngine.Options.OFFLOAD_TIERS);
        b.append("  kv offload chain: ").append(offload.hasTiers() ? offload.store().chain().stream().map(InspectCommand::name).toList()
                : "none (KV in DEVICE memory only)").append('\n');
        if (c.pool() != null) {
            b.append("  shared pool: ").append(c.pool().paths()).append(" through ").append(name(p.node().access())).append(" access, rpc ")
                    .append(p.node().rpc() != null ? p.node().rpc() : dev.strata.node.rpc.RpcServerConfig.DEFAULT_PATH).append('\n');
        }
        if (!p.peers().files().isEmpty()) {
            b.append("  peers: ").append(p.peers().files()).append(", re-attach looks every ").append(p.peers().reattachMillis())
                    .append(" ms, a revocation waits up to ").append(p.peers().drainWaitMicros()).append(" us for copies under way")
                    .append(", a peer's revocations count half after ").append(p.peers().revocationHalfLifeSeconds()).append(" s\n");
        }
        if (p.split().enabled()) { // the budget serve splits: split.budget, else tiers.device.capacity
            b.append("  split: { enabled: true, budget: ").append(p.split().budget() > 0 ? size(p.split().budget())
                    : c.device() != null ? size(c.device().capacity()) + " (tiers.device.capacity)"
                    : "none (serve refuses: set split.budget or tiers.device.capacity)").append(" }\n");
        }
        return b.toString();
    }

    private static String size(long bytes) {
        return dev.strata.memory.Sizes.format(bytes).replace(" ", "");
    }

    private static String name(Enum<?> e) {
        return e.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }

    /** {@code strata inspect config}: the configuration after file, environment and flags, checked. */
    @Command(name = "config", mixinStandardHelpOptions = true,
            description = {"Prints the configuration after the file, STRATA_SET, --set and serve's shorthand flags are applied",
                    "and checked: exactly what strata serve with the same arguments would build."})
    static final class Config implements Callable<Integer> {
        @Mixin
        ConfigOptions options;

        @Mixin
        ServeFlags serve = new ServeFlags();

        @Override
        public Integer call() {
            StrataConfig c = options.load(ServeFlags.DEFAULTS, serve.settings());
            if (c.hasTiers()) {
                System.out.print(describe(c));
            } else {
                System.out.println("tiers: none");
            }
            String missing = NonTemporalCopy.unavailableReason();
            System.out.println("memory: { huge-pages: " + name(c.memory().hugePages()) + ", non-temporal-copies: "
                    + name(c.memory().nonTemporalCopies()) + " }"
                    + (missing == null ? "  # streaming copies: " + NonTemporalCopy.routine()
                    : "  # streaming copies unavailable here: " + missing));
            System.out.print(describeServe(c));
            System.out.println("configuration is valid");
            return 0;
        }
    }

    /**
     * {@code strata inspect pool PATH...}: a pool's header, processes, occupancy and KV block
     * index, read without attaching to it (read-only mapping, no process slot; see
     * {@link PoolInspector} and {@link PoolIndexInspector}).
     */
    @Command(name = "pool", mixinStandardHelpOptions = true,
            description = "Prints a pool's header, process table, occupancy and block index without attaching to it.")
    static final class Pool implements Callable<Integer> {
        @Parameters(arity = "1..*", paramLabel = "PATH",
                description = "The pool file or device; for a striped pool, every device in stripe order.")
        List<Path> paths;

        @Override
        public Integer call() {
            PoolInspector.Report r = PoolInspector.inspect(paths);
            PoolHeader.Layout l = r.layout();
            PoolInspector.Occupancy o = r.occupancy();
            System.out.printf("pool '%s' at %s%n", r.name(), r.paths());
            System.out.printf("  magic          0x%016x%n", r.magic());
            System.out.printf("  version        %d.%d%n", r.major(), r.minor());
            System.out.printf("  created        %s%n", Instant.ofEpochMilli(r.createdAtMillis()));
            System.out.printf("  capacity       %d bytes (%s)%n", l.dataCapacity(), human(l.dataCapacity()));
            System.out.printf("  chunk size     %d bytes%n", l.chunkSize());
            System.out.printf("  chunk count    %d%n", l.chunkCount());
            System.out.printf("  devices        %d (stripe %s)%n", l.deviceCount(), human(PoolHeader.STRIPE_SIZE));
            System.out.printf("  process slots  %d%n", l.processSlots());
            System.out.printf("  creator        pid %d, %s, heartbeat %s ago%n", r.creatorPid(),
                    r.creatorAlive() ? "alive" : "dead", age(r.creatorHeartbeatAgeMillis()));
            System.out.printf("processes (%d of %d slots occupied)%n", r.processes().size(), l.processSlots());
            if (r.processes().isEmpty()) {
                System.out.println("  none");
            }
            for (PoolInspector.ProcessEntry p : r.processes()) {
                System.out.printf("  slot %-4d pid %-8d %-5s %-10s heartbeat %s ago, incarnation %d%n", p.slot(), p.pid(),
                        p.alive() ? "alive" : "DEAD", p.state(), age(p.heartbeatAgeMillis()), p.incarnation());
            }
            System.out.println("occupancy");
            System.out.printf("  chunks FREE %d, WRITING %d, PUBLISHED %d, FREEING %d%s%n", o.freeChunks(),
                    o.writingChunks(), o.publishedChunks(), o.freeingChunks(),
                    o.claimingChunks() == 0 ? "" : ", being claimed " + o.claimingChunks());
            System.out.printf("  used           %d bytes (%s, %.1f%%); counter says %d bytes%n", o.usedBytes(),
                    human(o.usedBytes()), 100.0 * o.usedBytes() / Math.max(1, l.dataCapacity()), o.countedUsedBytes());
            System.out.printf("  objects        %d published, %d being written%n", o.objectsPublished(), o.allocationsWriting());
            System.out.printf("root region      %d bytes at offset %d%n", l.rootRegionSize(), l.rootRegionOffset());
            Optional<IndexStats> index = PoolIndexInspector.inspect(paths);
            if (index.isEmpty()) {
                System.out.println("block index      none");
                return 0;
            }
            IndexStats x = index.get();
            System.out.println("block index");
            System.out.printf("  identity       model fingerprint %s, block-hash version %d%n", x.modelFingerprint(),
                    x.hashVersion());
            System.out.printf("  entries        %d published (%d bytes), %d writing, %d evicting, %d quarantined; %d slots%n",
                    x.published(), x.publishedBytes(), x.writing(), x.evicting(), x.quarantined(), x.capacity());
            System.out.printf("  pins           %d blocks pinned by %d live pins%n", x.pinned(), x.livePins());
            return 0;
        }

        private static String human(long bytes) {
            String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
            double v = bytes;
            int u = 0;
            while (v >= 1024 && u < units.length - 1) {
                v /= 1024;
                u++;
            }
            return u == 0 ? bytes + " B" : String.format("%.1f %s", v, units[u]);
        }

        private static String age(long millis) {
            return millis < 10_000 ? millis + " ms" : String.format("%.1f s", millis / 1000.0);
        }
    }
}
