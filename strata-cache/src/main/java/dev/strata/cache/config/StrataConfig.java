package dev.strata.cache.config;

import dev.strata.cache.Durability;
import dev.strata.cache.peer.PlacementPolicy;
import dev.strata.cache.policy.PolicyKind;
import dev.strata.memory.Sizes;
import dev.strata.memory.TierKind;
import dev.strata.memory.host.OffHeapRegion;
import dev.strata.memory.transfer.NonTemporalCopy;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The validated configuration of one Strata process: which tiers exist and how large they are,
 * the object store's demotion chain, watermarks and policy, and the transfer engine's link
 * workers.
 *
 * <p>Built by {@link ConfigLoader} from a YAML file, {@code --set key=value} flags and the
 * {@code STRATA_SET} environment variable, then checked as a whole by {@link #conclude(long)},
 * which fails fast naming the settings that cannot work together. Immutable; any thread.
 *
 * <pre>
 * tiers:
 *   device: { capacity: 2GiB }                      # CPU backend: a budgeted arena
 *   peer:   { capacity: 4GiB, chunk: 4MiB, durability: lossy, policy: stability } # memory lent by peers
 *   host:   { capacity: 8GiB, allocator: best-fit }  # or: slab, with block: 256KiB
 *   pool:   { capacity: 4GiB, paths: [/dev/shm/strata.pool] } # several paths: 2 MiB stripes
 *   disk:   { capacity: 64GiB, directory: /var/tmp/strata, direct-io: true }
 *   cluster: { nodes: [10.0.0.5:7000], password-env: STRATA_CLUSTER_PASSWORD, ttl: 1h } # KV shared across machines
 * store:
 *   chain: [device, peer, host, pool, disk]
 *   high-watermark: 0.95
 *   low-watermark: 0.85
 *   policy: priority-lru                            # lru, tiny-lfu, prefix-aware
 *   promotion: to-top                               # never, one-level-up, to-top-after
 *   promote-after: 2                                # hits before promotion (to-top-after)
 *   tiers:                                          # optional per-tier overrides
 *     disk: { high-watermark: 0.98, policy: tiny-lfu }
 * transfer:
 *   memory-link-workers: 1
 *   disk-link-workers: 4
 * memory:
 *   huge-pages: advise                              # or off
 *   non-temporal-copies: auto                       # or off
 * </pre>
 *
 * @param device   the DEVICE tier, or null when absent
 * @param peer     the PEER tier (memory borrowed from peers), or null when absent
 * @param host     the HOST tier, or null when absent
 * @param pool     the POOL tier, or null when absent
 * @param disk     the DISK tier, or null when absent
 * @param cluster  the CLUSTER tier (KV blocks shared across machines through a Redis Cluster), or
 *                 null when absent; it is reached through the KV manager's shared store, never
 *                 through the store's chain
 * @param store    the object store's settings
 * @param transfer the transfer engine's settings
 * @param memory   the process's off-heap memory settings
 * @param process  the settings of the long-running processes (server, node, agent, split): see {@link ProcessConfig}
 */
public record StrataConfig(DeviceTier device, PeerTier peer, HostTier host, PoolTier pool, DiskTier disk, ClusterTier cluster,
                           Store store, Transfer transfer, Memory memory, ProcessConfig process) {

    /** The interleaving unit of a pool striped over several files, in bytes. */
    public static final long POOL_STRIPE = 2 * Sizes.MiB;

    /** HOST staging memory of the transfer engine when {@code transfer.staging} is not set: 64 MiB. */
    public static final long DEFAULT_STAGING = 64 * Sizes.MiB;

    /** The pool file when {@code tiers.pool.paths} is not set. */
    public static final Path DEFAULT_POOL_PATH = dev.strata.memory.shm.ShmFiles.userDefault("strata.pool");

    /** Allocators a HOST tier can use. */
    public enum AllocatorKind { BEST_FIT, SLAB }

    /** @param capacity budget in bytes */
    public record DeviceTier(long capacity) {
    }

    /** The {@code tiers.cluster.timeout} when none is given: 200 ms. */
    public static final long DEFAULT_CLUSTER_TIMEOUT_MILLIS = 200;

    /** The {@code tiers.cluster.ttl} when none is given: one hour. */
    public static final long DEFAULT_CLUSTER_TTL_MILLIS = 3_600_000;

    /**
     * The CLUSTER tier: KV blocks shared across machines through a Redis Cluster (opened by
     * strata-cluster). The password itself is never part of the configuration: it is read from
     * the environment variable or the file named here.
     *
     * @param nodes         seed nodes, {@code host:port} each; the client learns the rest of the cluster from them
     * @param user          ACL user name; null: the default user
     * @param passwordEnv   environment variable holding the password; null: none
     * @param passwordFile  file holding the password (its first line); null: none
     * @param tls           connect with TLS
     * @param ttlMillis     how long a published block lives in the cluster, ms
     * @param timeoutMillis the longest a KV operation waits on the cluster before it answers absent, ms
     * @param tenant        the namespace blocks are kept under, so that tenants never share blocks
     * @param write         when blocks are written to the cluster
     * @param admission     which blocks are written
     * @param queueBytes    the most block bytes written to the cluster and not yet answered; a write past it is dropped
     * @param capacityHint  the cluster's memory for KV blocks as the operator sizes it (its primaries' maxmemory), bytes;
     *                      0: not given. A hint for reports: the cluster itself evicts at its own limit
     * @param tlsCaFile     PEM file of the CA that signed the nodes' certificates; null: the JVM's default trust store
     * @param tlsCertFile   PEM certificate (chain) this client presents (mutual TLS); null: none
     * @param tlsKeyFile    PEM private key (PKCS#8, unencrypted) of {@code tlsCertFile}; null: none
     * @param tlsVerify     how the nodes' certificates are checked; the combinations are validated where
     *                      the files are read (strata-cluster's ClusterSettings)
     * @param connectionsPerPrimary connections the block data path opens to each primary, 1 to
     *                      {@value #MAX_CLUSTER_CONNECTIONS}; a request goes on the least loaded one
     */
    public record ClusterTier(List<String> nodes, String user, String passwordEnv, Path passwordFile, boolean tls,
                              long ttlMillis, long timeoutMillis, String tenant, ClusterWrite write, ClusterAdmission admission,
                              long queueBytes, long capacityHint, Path tlsCaFile, Path tlsCertFile, Path tlsKeyFile,
                              ClusterTlsVerify tlsVerify, int connectionsPerPrimary) {
        public ClusterTier {
            nodes = List.copyOf(nodes);
            java.util.Objects.requireNonNull(tlsVerify, "tlsVerify");
        }

        /** A tier without TLS files: the JVM's trust store and full verification when {@code tls}. */
        public ClusterTier(List<String> nodes, String user, String passwordEnv, Path passwordFile, boolean tls,
                           long ttlMillis, long timeoutMillis, String tenant, ClusterWrite write, ClusterAdmission admission,
                           long queueBytes, long capacityHint) {
            this(nodes, user, passwordEnv, passwordFile, tls, ttlMillis, timeoutMillis, tenant, write, admission, queueBytes, capacityHint,
                    null, null, null, ClusterTlsVerify.FULL, DEFAULT_CLUSTER_CONNECTIONS);
        }
    }

    /**
     * The {@code tiers.cluster.connections-per-primary} when none is given. A primary sends a
     * large value a slice per turn of its event loop to each connection with replies pending:
     * blocks in flight spread over several connections per primary are sent in fewer turns than
     * the same blocks queued on one.
     */
    public static final int DEFAULT_CLUSTER_CONNECTIONS = 4;
    /** The most {@code tiers.cluster.connections-per-primary}. */
    public static final int MAX_CLUSTER_CONNECTIONS = 64;

    /** How the nodes' TLS certificates are checked ({@code tiers.cluster.tls-verify}). */
    public enum ClusterTlsVerify {
        /** Signed by a trusted CA and issued for the host name or IP address the client connects to. */
        FULL,
        /** Signed by a trusted CA, for any host. */
        CA,
        /** Not checked at all: encryption without authentication of the nodes. */
        NONE
    }

    /** When KV blocks are written to the cluster ({@code tiers.cluster.write}). */
    public enum ClusterWrite {
        /** Write-through: as soon as a block is committed (other machines can share it at once). */
        COMMIT,
        /**
         * Write-behind: when the block leaves this machine's HOST tier (or its DEVICE slot without
         * an offload store), so that only blocks this machine could not keep travel.
         */
        EVICTION
    }

    /** Which KV blocks are written to the cluster ({@code tiers.cluster.admission}). */
    public enum ClusterAdmission {
        /** Every block offered. */
        ALL,
        /** Blocks this process used (committed or matched) at least twice: one-off prefixes stay off the cluster. */
        SEEN_TWICE
    }

    /** The {@code tiers.cluster.write-queue} when none is given: 64 MiB of blocks in flight. */
    public static final long DEFAULT_CLUSTER_QUEUE_BYTES = 64L << 20;

    /**
     * The PEER tier: memory borrowed from peers through a peer client, revocable at any time.
     *
     * @param capacity   the most bytes borrowed at once
     * @param chunk      bytes of one borrowed lease, inside which objects are sub-allocated
     * @param durability what the leases declare to the lenders (objects keep their own durability:
     *                   a BACKED object on PEER always has a copy below)
     * @param policy     the peer client's placement policy: best-fit, locality, fairness or stability
     */
    public record PeerTier(long capacity, long chunk, Durability durability, String policy) {
    }

    /**
     * @param capacity  bytes of off-heap memory
     * @param allocator how allocations are carved
     * @param block     slab block size in bytes (SLAB only)
     */
    public record HostTier(long capacity, AllocatorKind allocator, long block) {
    }

    /**
     * @param capacity bytes of the pool (all devices together)
     * @param paths    one file per memory device; 2 MiB stripes interleave across them
     * @param chunk    allocation unit in bytes
     * @param create   create the pool when it does not exist
     */
    public record PoolTier(long capacity, List<Path> paths, long chunk, boolean create) {
    }

    /**
     * @param capacity      bytes of file space
     * @param directory     where the data files live
     * @param directIo      use O_DIRECT where the file system allows it
     * @param removeOnClose remove the data files when the tier closes (nothing reads them after a restart)
     */
    public record DiskTier(long capacity, Path directory, boolean directIo, boolean removeOnClose) {
    }

    /** When a get copies an object up the chain. */
    public enum Promotion { NEVER, TO_TOP, ONE_LEVEL_UP, TO_TOP_AFTER }

    /**
     * Watermarks and policy of one tier of the chain.
     *
     * @param highWatermark fraction of the tier's capacity past which eviction starts
     * @param lowWatermark  fraction eviction brings the tier down to
     * @param policy        the tier's eviction policy
     */
    public record TierPolicy(double highWatermark, double lowWatermark, PolicyKind policy) {
    }

    /**
     * @param chain        tiers in demotion order, fastest first
     * @param tierPolicies watermarks and policy of each tier of the chain (defaults or per-tier overrides)
     * @param promotion    when a get copies an object up
     * @param promoteAfter hits before promotion, for {@link Promotion#TO_TOP_AFTER}
     */
    public record Store(List<TierKind> chain, Map<TierKind, TierPolicy> tierPolicies, Promotion promotion,
                        int promoteAfter) {
        public Store {
            chain = List.copyOf(chain);
            tierPolicies = Map.copyOf(tierPolicies);
        }

        /** The settings of chain tier {@code kind}. */
        public TierPolicy policyOf(TierKind kind) {
            return tierPolicies.get(kind);
        }
    }

    /**
     * @param memoryLinkWorkers worker threads of a link between two memory tiers
     * @param diskLinkWorkers   worker threads (requests in flight) of a link touching DISK
     * @param stagingBytes      bytes of HOST staging memory for copies between tiers that are not plain memory
     */
    public record Transfer(int memoryLinkWorkers, int diskLinkWorkers, long stagingBytes) {
    }

    /**
     * @param hugePages         whether off-heap regions of {@link OffHeapRegion#HUGE_THRESHOLD} bytes or
     *                          more ask the kernel for transparent huge pages ({@code memory.huge-pages})
     * @param nonTemporalCopies whether copies between anonymous memory may use streaming stores
     *                          ({@code memory.non-temporal-copies}; see {@link NonTemporalCopy})
     */
    public record Memory(OffHeapRegion.HugePages hugePages, NonTemporalCopy.Mode nonTemporalCopies) {

        public Memory {
            java.util.Objects.requireNonNull(hugePages, "hugePages");
            java.util.Objects.requireNonNull(nonTemporalCopies, "nonTemporalCopies");
        }

        /** Applies the settings to this process: regions reserved from now on, copies from now on. */
        public void apply() {
            OffHeapRegion.hugePages(hugePages);
            NonTemporalCopy.mode(nonTemporalCopies);
        }
    }

    /** The configuration used when no file and no setting is given: HOST 1 GiB and nothing else. */
    public static StrataConfig defaults() {
        return ConfigLoader.load(null, List.of(), null);
    }

    /** Reads the tree; unknown keys are rejected by name. */
    static StrataConfig read(ConfigNode root) {
        root.allowOnly("tiers", "store", "transfer", "memory", "model", "server", "kv", "experts", "node", "peers", "agent", "split");
        ConfigNode tiers = root.child("tiers");
        ClusterTier cluster = null;
        DeviceTier device = null;
        PeerTier peer = null;
        HostTier host = null;
        PoolTier pool = null;
        DiskTier disk = null;
        if (tiers == null) {
            host = new HostTier(Sizes.GiB, AllocatorKind.BEST_FIT, 0);
        } else {
            tiers.allowOnly("device", "peer", "host", "pool", "disk", "cluster");
            cluster = readCluster(tiers.child("cluster"));
            ConfigNode d = tiers.child("device");
            if (d != null) {
                d.allowOnly("capacity");
                device = new DeviceTier(positive(d.size("capacity", -1), "tiers.device.capacity"));
            }
            ConfigNode e = tiers.child("peer");
            if (e != null) {
                e.allowOnly("capacity", "chunk", "durability", "policy");
                String policy = e.text("policy", PlacementPolicy.DEFAULT_NAME);
                try {
                    PlacementPolicy.named(policy);
                } catch (IllegalArgumentException ex) {
                    throw new ConfigException("tiers.peer.policy: unknown placement policy '" + policy
                            + "' (expected best-fit, locality, fairness or stability)");
                }
                Durability durability = e.choice("durability", Durability.class, Durability.LOSSY);
                long capacity = positive(e.size("capacity", -1), "tiers.peer.capacity");
                long align = dev.strata.cache.peer.PeerTier.ALIGNMENT;
                peer = new PeerTier(capacity,
                        e.size("chunk", Math.max(align, Math.min(dev.strata.cache.peer.PeerTier.DEFAULT_CHUNK, capacity / align * align))),
                        durability, policy);
            }
            ConfigNode h = tiers.child("host");
            if (h != null) {
                h.allowOnly("capacity", "allocator", "block");
                AllocatorKind kind = h.choice("allocator", AllocatorKind.class, AllocatorKind.BEST_FIT);
                long block = h.size("block", kind == AllocatorKind.SLAB ? -1 : 0);
                host = new HostTier(positive(h.size("capacity", -1), "tiers.host.capacity"), kind, block);
            }
            ConfigNode p = tiers.child("pool");
            if (p != null) {
                p.allowOnly("capacity", "paths", "chunk", "create");
                List<Path> paths = new ArrayList<>();
                for (String s : p.list("paths")) {
                    paths.add(Path.of(s));
                }
                if (paths.isEmpty()) {
                    paths.add(DEFAULT_POOL_PATH);
                }
                pool = new PoolTier(positive(p.size("capacity", Sizes.GiB), "tiers.pool.capacity"), List.copyOf(paths),
                        p.size("chunk", 64 * Sizes.KiB), p.bool("create", true));
            }
            ConfigNode k = tiers.child("disk");
            if (k != null) {
                k.allowOnly("capacity", "directory", "direct-io", "remove-on-close");
                disk = new DiskTier(positive(k.size("capacity", -1), "tiers.disk.capacity"),
                        Path.of(k.text("directory", "/var/tmp/strata")), k.bool("direct-io", true), k.bool("remove-on-close", true));
            }
        }
        EnumSet<TierKind> present = EnumSet.noneOf(TierKind.class);
        if (device != null) present.add(TierKind.DEVICE);
        if (peer != null) present.add(TierKind.PEER);
        if (host != null) present.add(TierKind.HOST);
        if (pool != null) present.add(TierKind.POOL);
        if (disk != null) present.add(TierKind.DISK);

        ConfigNode s = root.child("store");
        Store store = readStore(s == null ? new ConfigNode("store", com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode()) : s,
                present);
        ConfigNode t = root.child("transfer");
        if (t != null) {
            t.allowOnly("memory-link-workers", "disk-link-workers", "staging");
        }
        Transfer transfer = t == null ? new Transfer(1, 4, DEFAULT_STAGING)
                : new Transfer(t.integer("memory-link-workers", 1, 1, 64), t.integer("disk-link-workers", 4, 1, 256),
                positive(t.size("staging", DEFAULT_STAGING), "transfer.staging"));
        ConfigNode m = root.child("memory");
        if (m != null) {
            m.allowOnly("huge-pages", "non-temporal-copies");
        }
        Memory memory = new Memory(readHugePages(m), readNonTemporalCopies(m));
        return new StrataConfig(device, peer, host, pool, disk, cluster, store, transfer, memory, ProcessConfig.read(root));
    }

    /**
     * Reads {@code memory.huge-pages}: {@code advise} or {@code off}, and YAML's {@code true} and
     * {@code false} for them (YAML reads an unquoted {@code off} as {@code false}).
     */
    private static OffHeapRegion.HugePages readHugePages(ConfigNode m) {
        return readMemorySetting(m, "huge-pages", OffHeapRegion.HugePages.ADVISE,
                Map.of("advise", OffHeapRegion.HugePages.ADVISE, "true", OffHeapRegion.HugePages.ADVISE,
                        "off", OffHeapRegion.HugePages.OFF, "false", OffHeapRegion.HugePages.OFF), "advise or off");
    }

    /**
     * Reads {@code memory.non-temporal-copies}: {@code auto} or {@code off} (YAML's {@code false}
     * for an unquoted {@code off}).
     */
    private static NonTemporalCopy.Mode readNonTemporalCopies(ConfigNode m) {
        return readMemorySetting(m, "non-temporal-copies", NonTemporalCopy.Mode.AUTO,
                Map.of("auto", NonTemporalCopy.Mode.AUTO, "off", NonTemporalCopy.Mode.OFF, "false", NonTemporalCopy.Mode.OFF),
                "auto or off");
    }

    /**
     * The value of {@code memory.<key>} looked up (trimmed, any case) in {@code values}, or
     * {@code fallback} when the section or key is absent; any other text fails naming the key,
     * the text and {@code expected}.
     */
    private static <E> E readMemorySetting(ConfigNode m, String key, E fallback, Map<String, E> values, String expected) {
        String v = m == null ? null : m.text(key, null);
        if (v == null) {
            return fallback;
        }
        E value = values.get(v.trim().toLowerCase(java.util.Locale.ROOT));
        if (value == null) {
            throw new ConfigException("memory." + key + ": unknown value '" + v + "' (expected " + expected + ")");
        }
        return value;
    }

    /** Reads {@code tiers.cluster}; null when the section is absent. */
    private static ClusterTier readCluster(ConfigNode c) {
        if (c == null) {
            return null;
        }
        c.allowOnly("nodes", "user", "password-env", "password-file", "tls", "ttl", "timeout", "tenant", "write", "admission",
                "write-queue", "capacity", "tls-ca-file", "tls-cert-file", "tls-key-file", "tls-verify", "connections-per-primary");
        List<String> nodes = c.list("nodes");
        if (nodes.isEmpty()) {
            throw new ConfigException("tiers.cluster.nodes is required: the cluster's seed nodes as host:port (e.g. [10.0.0.5:7000])");
        }
        for (String n : nodes) {
            int colon = n.lastIndexOf(':');
            int port = -1;
            if (colon > 0) {
                try {
                    port = Integer.parseInt(n.substring(colon + 1));
                } catch (NumberFormatException e) {
                    port = -1;
                }
            }
            if (port < 1 || port > 65535) {
                throw new ConfigException("tiers.cluster.nodes: '" + n + "' is not host:port with a port in [1, 65535]");
            }
        }
        String passwordFile = c.text("password-file", null);
        String tenant = c.text("tenant", "default");
        if (tenant.isEmpty() || !tenant.matches("[A-Za-z0-9._-]+")) {
            throw new ConfigException("tiers.cluster.tenant: '" + tenant + "' must be letters, digits, '.', '_' or '-'");
        }
        return new ClusterTier(nodes, c.text("user", null), c.text("password-env", null),
                passwordFile == null || passwordFile.isBlank() ? null : Path.of(passwordFile), c.bool("tls", false),
                c.millis("ttl", DEFAULT_CLUSTER_TTL_MILLIS, 1_000, 365L * 86_400_000),
                c.millis("timeout", DEFAULT_CLUSTER_TIMEOUT_MILLIS, 1, 600_000), tenant,
                c.choice("write", ClusterWrite.class, ClusterWrite.COMMIT), c.choice("admission", ClusterAdmission.class, ClusterAdmission.ALL),
                queueBytes(c), c.size("capacity", 0), optionalPath(c, "tls-ca-file"), optionalPath(c, "tls-cert-file"),
                optionalPath(c, "tls-key-file"), c.choice("tls-verify", ClusterTlsVerify.class, ClusterTlsVerify.FULL),
                c.integer("connections-per-primary", DEFAULT_CLUSTER_CONNECTIONS, 1, MAX_CLUSTER_CONNECTIONS));
    }

    private static Path optionalPath(ConfigNode c, String name) {
        String t = c.text(name, null);
        return t == null || t.isBlank() ? null : Path.of(t);
    }

    private static long queueBytes(ConfigNode c) {
        long q = c.size("write-queue", DEFAULT_CLUSTER_QUEUE_BYTES);
        if (q < (1L << 20)) {
            throw new ConfigException("tiers.cluster.write-queue: " + q + " bytes is below 1 MiB; it must hold at least one KV block");
        }
        return q;
    }

    private static Store readStore(ConfigNode s, EnumSet<TierKind> present) {
        s.allowOnly("chain", "high-watermark", "low-watermark", "policy", "promotion", "promote-after", "tiers");
        List<TierKind> chain = new ArrayList<>();
        List<String> names = s.list("chain");
        for (String n : names) {
            chain.add(tierKind(n, "store.chain"));
        }
        if (names.isEmpty()) {
            chain.addAll(present);
        }
        TierPolicy defaults = new TierPolicy(s.fraction("high-watermark", 0.95), s.fraction("low-watermark", 0.85),
                s.choice("policy", PolicyKind.class, PolicyKind.PRIORITY_LRU));
        Map<TierKind, TierPolicy> policies = new EnumMap<>(TierKind.class);
        for (TierKind k : chain) {
            policies.put(k, defaults);
        }
        ConfigNode overrides = s.child("tiers");
        if (overrides != null) {
            overrides.allowOnly("device", "peer", "host", "pool", "disk");
            for (TierKind k : TierKind.values()) {
                ConfigNode o = overrides.child(k.name().toLowerCase(Locale.ROOT));
                if (o == null) {
                    continue;
                }
                o.allowOnly("high-watermark", "low-watermark", "policy");
                if (!chain.contains(k)) {
                    throw new ConfigException("store.tiers." + k.name().toLowerCase(Locale.ROOT) + " configures a tier that is not in store.chain " + chain);
                }
                policies.put(k, new TierPolicy(o.fraction("high-watermark", defaults.highWatermark()),
                        o.fraction("low-watermark", defaults.lowWatermark()), o.choice("policy", PolicyKind.class, defaults.policy())));
            }
        }
        Store store = new Store(chain, policies, s.choice("promotion", Promotion.class, Promotion.TO_TOP),
                s.integer("promote-after", 2, 1, 1_000_000));
        return store;
    }

    private static long positive(long v, String key) {
        if (v == -1) {
            throw new ConfigException(key + " is required (e.g. 1GiB)");
        }
        if (v <= 0) {
            throw new ConfigException(key + ": must be positive, found " + v);
        }
        return v;
    }

    private static TierKind tierKind(String name, String key) {
        try {
            return TierKind.valueOf(name.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(key + ": unknown tier '" + name + "' (expected device, peer, host, pool or disk)");
        }
    }

    /**
     * Checks the settings against each other and against the machine.
     *
     * @param physicalMemoryBytes memory of this machine, for the DRAM-backed tiers
     * @return this configuration
     * @throws ConfigException naming the settings that cannot work together
     */
    public StrataConfig conclude(long physicalMemoryBytes) {
        if (host != null && host.allocator == AllocatorKind.SLAB) {
            if (host.block <= 0) {
                throw new ConfigException("tiers.host.block is required with allocator: slab (e.g. 256KiB)");
            }
            if (host.block > host.capacity) {
                throw new ConfigException("tiers.host.block (" + Sizes.format(host.block)
                        + ") is larger than tiers.host.capacity (" + Sizes.format(host.capacity) + ")");
            }
        } else if (host != null && host.block != 0) {
            throw new ConfigException("tiers.host.block is only used with allocator: slab (allocator is best-fit)");
        }
        if (pool != null && (!Sizes.isPowerOfTwo(pool.chunk) || pool.chunk < 4 * Sizes.KiB || pool.chunk > POOL_STRIPE)) {
            throw new ConfigException("tiers.pool.chunk: " + pool.chunk
                    + " bytes must be a power of two between 4KiB and the 2MiB stripe");
        }
        if (peer != null) {
            if (peer.chunk <= 0 || peer.chunk % dev.strata.cache.peer.PeerTier.ALIGNMENT != 0
                    || peer.chunk > dev.strata.cache.peer.PeerTier.MAX_LEASE) {
                throw new ConfigException("tiers.peer.chunk: " + peer.chunk + " bytes must be a positive multiple of "
                        + dev.strata.cache.peer.PeerTier.ALIGNMENT + " up to " + Sizes.format(dev.strata.cache.peer.PeerTier.MAX_LEASE));
            }
            if (peer.chunk > peer.capacity) {
                throw new ConfigException("tiers.peer.chunk (" + Sizes.format(peer.chunk) + ") is larger than tiers.peer.capacity ("
                        + Sizes.format(peer.capacity) + ")");
            }
        }
        for (var e : store.tierPolicies.entrySet()) {
            TierPolicy p = e.getValue();
            if (p.lowWatermark() >= p.highWatermark()) {
                throw new ConfigException("the low watermark (" + p.lowWatermark() + ") of tier '" + name(e.getKey())
                        + "' must be below its high watermark (" + p.highWatermark() + "): see store.low-watermark,"
                        + " store.high-watermark and store.tiers." + name(e.getKey()));
            }
        }
        if (store.chain.isEmpty() && hasTiers()) {
            throw new ConfigException("store.chain is empty; list the tiers objects demote through, e.g. [host, disk]");
        }
        EnumSet<TierKind> seen = EnumSet.noneOf(TierKind.class);
        TierKind previous = null;
        for (TierKind k : store.chain) {
            if (!configured(k)) {
                throw new ConfigException("store.chain names tier '" + name(k) + "' but tiers." + name(k) + " is not configured");
            }
            if (!seen.add(k)) {
                throw new ConfigException("store.chain lists tier '" + name(k) + "' twice");
            }
            if (previous != null && k.ordinal() < previous.ordinal()) {
                throw new ConfigException("store.chain goes from '" + name(previous) + "' to the faster '" + name(k)
                        + "'; objects demote towards slower tiers (device, peer, host, pool, disk)");
            }
            previous = k;
        }
        long dram = (device == null ? 0 : device.capacity) + (host == null ? 0 : host.capacity);
        if (pool != null && pool.paths.stream().allMatch(p -> p.startsWith("/dev/shm"))) {
            dram += pool.capacity;
        }
        if (physicalMemoryBytes > 0 && dram > physicalMemoryBytes) {
            throw new ConfigException("the memory-backed tiers need " + Sizes.format(dram) + " (device + host"
                    + (pool != null ? " + pool in /dev/shm" : "") + ") but this machine has " + Sizes.format(physicalMemoryBytes));
        }
        return this;
    }

    /** Checks against this machine's physical memory. */
    public StrataConfig conclude() {
        long total = 0;
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            total = os.getTotalMemorySize();
        }
        return conclude(total);
    }

    /** True when at least one tier is configured (a server may run with none: KV in DEVICE memory only). */
    public boolean hasTiers() {
        return device != null || peer != null || host != null || pool != null || disk != null;
    }

    /**
     * This configuration with only the tiers of {@code kinds}: the others are left out, and so are
     * they from the store's chain. A server opens its KV offload chain this way (PEER, HOST, DISK),
     * while its DEVICE memory and the shared POOL are reached through the KV manager.
     */
    public StrataConfig onlyTiers(java.util.Set<TierKind> kinds) {
        List<TierKind> chain = new ArrayList<>();
        Map<TierKind, TierPolicy> policies = new EnumMap<>(TierKind.class);
        for (TierKind k : store.chain) {
            if (kinds.contains(k)) {
                chain.add(k);
                policies.put(k, store.policyOf(k));
            }
        }
        return new StrataConfig(kinds.contains(TierKind.DEVICE) ? device : null, kinds.contains(TierKind.PEER) ? peer : null,
                kinds.contains(TierKind.HOST) ? host : null, kinds.contains(TierKind.POOL) ? pool : null,
                kinds.contains(TierKind.DISK) ? disk : null, cluster, new Store(chain, policies, store.promotion, store.promoteAfter),
                transfer, memory, process);
    }

    private boolean configured(TierKind k) {
        return switch (k) {
            case DEVICE -> device != null;
            case HOST -> host != null;
            case POOL -> pool != null;
            case DISK -> disk != null;
            case PEER -> peer != null;
        };
    }

    private static String name(TierKind k) {
        return k.name().toLowerCase(Locale.ROOT);
    }
}
