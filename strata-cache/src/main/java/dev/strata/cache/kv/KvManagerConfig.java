package dev.strata.cache.kv;

import dev.strata.cache.Durability;
import dev.strata.cache.policy.EvictionPolicy;
import dev.strata.cache.policy.PolicyKind;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Settings of a {@link KvBlockManager}: the eviction policy of the DEVICE slots, when blocks are
 * offloaded and published to the shared pool, prefetch lookahead per tier, the two-stage disk
 * read, the disk admission filter, the durability of offloaded blocks. Built with withers from {@link #defaults()}; {@link #conclude()}
 * checks the values and fails with the offending one.
 *
 * <p>Immutable; any thread.
 */
public final class KvManagerConfig {
    /** Default lookahead for HOST (and POOL) resident blocks: the next block. */
    public static final int DEFAULT_HOST_LOOKAHEAD = 1;
    /** Default lookahead for DISK resident blocks: two, for the two-stage pipeline. */
    public static final int DEFAULT_DISK_LOOKAHEAD = 2;
    /** Default HOST staging blocks for two-stage disk reads (disk reads in flight at once). */
    public static final int DEFAULT_STAGING_BLOCKS = 16;
    /**
     * Default HOST staging blocks that resume staging ({@link KvBlockManager#stageForResume}) may
     * hold at once, all preempted sequences together.
     */
    public static final int DEFAULT_RESUME_STAGING_BLOCKS = 64;
    /** Default number of write-back evictions one allocation may start. */
    public static final int DEFAULT_MAX_PENDING_EVICTIONS = 8;

    private final String policyName; // for reports
    private final Supplier<EvictionPolicy> devicePolicy; // a new policy for the slots
    private final OffloadMode offload;
    private final SharedPublishMode sharedPublish;
    private final int hostLookahead; // blocks beyond the required one, HOST/POOL/SHARED resident
    private final int diskLookahead; // blocks beyond the required one, DISK resident
    private final boolean twoStageDisk; // DISK → HOST staging → DEVICE (else DISK → DEVICE directly)
    private final int maxPendingEvictions; // write-back evictions in flight that allocation may start
    private final KvDiskAdmission diskAdmission; // told of every use of a block; null for none
    private final int stagingBlocks; // blocks of HOST staging for two-stage disk reads in flight at once
    private final Durability offloadDurability; // of the blocks put into the store
    private final int resumeStagingBlocks; // blocks of HOST staging that resume staging may hold at once, all sequences together
    private final boolean recomputeWhenFaster; // worthLoading leaves cached blocks to recompute where that is faster than loading them

    private KvManagerConfig(String policyName, Supplier<EvictionPolicy> devicePolicy, OffloadMode offload,
            SharedPublishMode sharedPublish, int hostLookahead, int diskLookahead, boolean twoStageDisk,
            int maxPendingEvictions, KvDiskAdmission diskAdmission, int stagingBlocks, Durability offloadDurability,
            int resumeStagingBlocks, boolean recomputeWhenFaster) {
        this.policyName = policyName;
        this.recomputeWhenFaster = recomputeWhenFaster;
        this.devicePolicy = devicePolicy;
        this.offload = offload;
        this.sharedPublish = sharedPublish;
        this.hostLookahead = hostLookahead;
        this.diskLookahead = diskLookahead;
        this.twoStageDisk = twoStageDisk;
        this.maxPendingEvictions = maxPendingEvictions;
        this.diskAdmission = diskAdmission;
        this.stagingBlocks = stagingBlocks;
        this.offloadDurability = offloadDurability;
        this.resumeStagingBlocks = resumeStagingBlocks;
    }

    /**
     * {@link PolicyKind#KV_DEFAULT} (adaptive reach levels) on the slots, write-back, publish at commit, lookahead 1
     * (HOST) and 2 (DISK), cached blocks recomputed where that is faster than loading them.
     */
    public static KvManagerConfig defaults() {
        return new KvManagerConfig(PolicyKind.KV_DEFAULT.configName(), PolicyKind.KV_DEFAULT::create, OffloadMode.WRITE_BACK,
                SharedPublishMode.AT_COMMIT, DEFAULT_HOST_LOOKAHEAD, DEFAULT_DISK_LOOKAHEAD, true,
                DEFAULT_MAX_PENDING_EVICTIONS, null, DEFAULT_STAGING_BLOCKS, Durability.LOSSY,
                DEFAULT_RESUME_STAGING_BLOCKS, true);
    }

    /** One of the shipped policies for the DEVICE slots (a serving process takes it from {@code kv.policy}). */
    public KvManagerConfig devicePolicy(PolicyKind kind) {
        Objects.requireNonNull(kind, "policy kind");
        return new KvManagerConfig(kind.configName(), kind::create,
                offload, sharedPublish, hostLookahead, diskLookahead, twoStageDisk, maxPendingEvictions, diskAdmission, stagingBlocks,
                offloadDurability, resumeStagingBlocks, recomputeWhenFaster);
    }

    /**
     * Any policy for the DEVICE slots (for example a prefix-aware one that reads
     * {@link DeviceBlock#parent()}); the factory is called once per manager.
     */
    public KvManagerConfig devicePolicy(String name, Supplier<EvictionPolicy> factory) {
        return new KvManagerConfig(Objects.requireNonNull(name, "policy name"), Objects.requireNonNull(factory, "policy"),
                offload, sharedPublish, hostLookahead, diskLookahead, twoStageDisk, maxPendingEvictions, diskAdmission, stagingBlocks,
                offloadDurability, resumeStagingBlocks, recomputeWhenFaster);
    }

    public KvManagerConfig offload(OffloadMode mode) {
        return new KvManagerConfig(policyName, devicePolicy, Objects.requireNonNull(mode, "offload mode"), sharedPublish,
                hostLookahead, diskLookahead, twoStageDisk, maxPendingEvictions, diskAdmission, stagingBlocks, offloadDurability, resumeStagingBlocks, recomputeWhenFaster);
    }

    public KvManagerConfig sharedPublish(SharedPublishMode mode) {
        return new KvManagerConfig(policyName, devicePolicy, offload, Objects.requireNonNull(mode, "publish mode"),
                hostLookahead, diskLookahead, twoStageDisk, maxPendingEvictions, diskAdmission, stagingBlocks, offloadDurability, resumeStagingBlocks, recomputeWhenFaster);
    }

    /** Lookahead in blocks for HOST (and POOL, shared-pool) resident blocks and for DISK resident ones. */
    public KvManagerConfig lookahead(int host, int disk) {
        return new KvManagerConfig(policyName, devicePolicy, offload, sharedPublish, host, disk, twoStageDisk,
                maxPendingEvictions, diskAdmission, stagingBlocks, offloadDurability, resumeStagingBlocks, recomputeWhenFaster);
    }

    public KvManagerConfig twoStageDisk(boolean on) {
        return new KvManagerConfig(policyName, devicePolicy, offload, sharedPublish, hostLookahead, diskLookahead, on,
                maxPendingEvictions, diskAdmission, stagingBlocks, offloadDurability, resumeStagingBlocks, recomputeWhenFaster);
    }

    public KvManagerConfig maxPendingEvictions(int n) {
        return new KvManagerConfig(policyName, devicePolicy, offload, sharedPublish, hostLookahead, diskLookahead,
                twoStageDisk, n, diskAdmission, stagingBlocks, offloadDurability, resumeStagingBlocks, recomputeWhenFaster);
    }

    /** The disk admission filter the manager reports block uses to (install it on the store's disk tier too). */
    public KvManagerConfig diskAdmission(KvDiskAdmission filter) {
        return new KvManagerConfig(policyName, devicePolicy, offload, sharedPublish, hostLookahead, diskLookahead,
                twoStageDisk, maxPendingEvictions, filter, stagingBlocks, offloadDurability, resumeStagingBlocks, recomputeWhenFaster);
    }

    /**
     * HOST staging blocks the manager reserves for two-stage disk reads: that many disk reads can
     * be in their first stage at once; more go straight from DISK to DEVICE.
     */
    public KvManagerConfig stagingBlocks(int n) {
        return new KvManagerConfig(policyName, devicePolicy, offload, sharedPublish, hostLookahead, diskLookahead,
                twoStageDisk, maxPendingEvictions, diskAdmission, n, offloadDurability, resumeStagingBlocks, recomputeWhenFaster);
    }

    /**
     * HOST staging blocks that resume staging ({@link KvBlockManager#stageForResume}) may hold at
     * once, all preempted sequences together: the bound on the HOST memory that staged blocks of
     * preempted sequences take ({@code n} times a block's bytes, reserved on first use, apart from
     * the {@link #stagingBlocks} of disk reads). 0 turns resume staging off.
     */
    public KvManagerConfig resumeStagingBlocks(int n) {
        return new KvManagerConfig(policyName, devicePolicy, offload, sharedPublish, hostLookahead, diskLookahead,
                twoStageDisk, maxPendingEvictions, diskAdmission, stagingBlocks, offloadDurability, n, recomputeWhenFaster);
    }

    /**
     * The durability of the blocks the manager puts into the store. LOSSY (the default): a block
     * the store drops, a PEER copy revoked included, is a miss and is recomputed. BACKED: the
     * store keeps a durable copy of every block; on a chain with PEER before HOST, a block is
     * written through to HOST and cached on PEER, and a revoked PEER copy is served from HOST.
     */
    public KvManagerConfig offloadDurability(Durability durability) {
        return new KvManagerConfig(policyName, devicePolicy, offload, sharedPublish, hostLookahead, diskLookahead,
                twoStageDisk, maxPendingEvictions, diskAdmission, stagingBlocks, Objects.requireNonNull(durability, "durability"),
                resumeStagingBlocks, recomputeWhenFaster);
    }

    /**
     * Whether {@link KvBlockManager#worthLoading} leaves the cached blocks whose load is slower
     * than recomputing them to the engine (on by default; a serving process takes it from
     * {@code kv.recompute-when-faster}). Off: every matched block is loaded, however slow its tier.
     */
    public KvManagerConfig recomputeWhenFaster(boolean on) {
        return new KvManagerConfig(policyName, devicePolicy, offload, sharedPublish, hostLookahead, diskLookahead,
                twoStageDisk, maxPendingEvictions, diskAdmission, stagingBlocks, offloadDurability, resumeStagingBlocks, on);
    }

    /** Whether cached blocks slower to load than to recompute are recomputed ({@link #recomputeWhenFaster(boolean)}). */
    public boolean recomputeWhenFaster() {
        return recomputeWhenFaster;
    }

    /**
     * Checks the values.
     *
     * @throws IllegalArgumentException naming the setting and value
     */
    public KvManagerConfig conclude() {
        if (hostLookahead < 0 || diskLookahead < 0) {
            throw new IllegalArgumentException("prefetch lookahead must not be negative: host " + hostLookahead + ", disk "
                    + diskLookahead);
        }
        if (stagingBlocks < 0) {
            throw new IllegalArgumentException("staging blocks must not be negative, got " + stagingBlocks);
        }
        if (resumeStagingBlocks < 0) {
            throw new IllegalArgumentException("resume staging blocks must not be negative, got " + resumeStagingBlocks);
        }
        if (maxPendingEvictions < 1) {
            throw new IllegalArgumentException("max pending evictions must be at least 1, got " + maxPendingEvictions);
        }
        return this;
    }

    public String policyName() {
        return policyName;
    }

    EvictionPolicy newDevicePolicy() {
        EvictionPolicy p = devicePolicy.get();
        if (p == null || p.size() != 0) {
            throw new IllegalArgumentException("device policy '" + policyName + "' must be a new, empty policy");
        }
        return p;
    }

    public OffloadMode offload() {
        return offload;
    }

    public SharedPublishMode sharedPublish() {
        return sharedPublish;
    }

    public int hostLookahead() {
        return hostLookahead;
    }

    public int diskLookahead() {
        return diskLookahead;
    }

    public boolean twoStageDisk() {
        return twoStageDisk;
    }

    public int maxPendingEvictions() {
        return maxPendingEvictions;
    }

    public int stagingBlocks() {
        return stagingBlocks;
    }

    /** HOST staging blocks resume staging may hold at once ({@link #resumeStagingBlocks(int)}). */
    public int resumeStagingBlocks() {
        return resumeStagingBlocks;
    }

    /** The durability of offloaded blocks (LOSSY unless configured). */
    public Durability offloadDurability() {
        return offloadDurability;
    }

    /** The disk admission filter, or null. */
    public KvDiskAdmission diskAdmission() {
        return diskAdmission;
    }
}
