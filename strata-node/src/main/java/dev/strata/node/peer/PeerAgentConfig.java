package dev.strata.node.peer;

import dev.strata.memory.Sizes;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How a {@code strata peer} agent runs: the lending file, the budget it lends out of and the size
 * of one region, its own demand, how long a borrower has to give a region back, and how often the
 * agent looks at its table.
 *
 * <p>Build with {@link #builder()}; {@link Builder#conclude()} checks every value at once and fails
 * with one message naming each bad one. Immutable; any thread.
 *
 * @param file            the lending file (created; an old file of a dead agent is replaced)
 * @param budget          bytes the agent may lend: rounded down to whole regions
 * @param regionSize      bytes per region, a positive multiple of 64; a lease is one region or a
 *                        contiguous run of them
 * @param demand          the agent's own demand
 * @param grace           how long a borrower has between a revocation and its acknowledgement
 * @param tick            how often the agent checks demand, deadlines and dead borrowers
 * @param stampReclaimed  whether the agent writes its own pattern over every region it takes back
 *                        (its reuse of the memory, made visible: a borrower that reads reclaimed
 *                        memory sees foreign bytes)
 * @param clock           wall clock for heartbeats and deadlines (shared with other processes)
 */
public record PeerAgentConfig(Path file, long budget, long regionSize, DemandSignal demand, Duration grace,
                              Duration tick, boolean stampReclaimed, InstantSource clock) {

    public static final Path DEFAULT_FILE = dev.strata.memory.shm.ShmFiles.userDefault("peer.lend");
    public static final long DEFAULT_REGION_SIZE = 2 * Sizes.MiB;
    /** How often an agent ticks unless told otherwise (between ticks it sleeps on its doorbell). */
    public static final Duration DEFAULT_TICK = Duration.ofMillis(2);

    public static Builder builder() {
        return new Builder();
    }

    /** The regions of the budget. */
    public long regionCount() {
        return budget / regionSize;
    }

    /** Collects settings; not thread-safe. */
    public static final class Builder {
        private Path file = DEFAULT_FILE;
        private long budget = -1;
        private long regionSize = DEFAULT_REGION_SIZE;
        private DemandSignal demand = new FixedDemand(0);
        private Duration grace = Duration.ofSeconds(1);
        private Duration tick = DEFAULT_TICK;
        private boolean stampReclaimed = true;
        private InstantSource clock = InstantSource.system();

        private Builder() {
        }

        public Builder file(Path p) {
            this.file = p;
            return this;
        }

        public Builder budget(long bytes) {
            this.budget = bytes;
            return this;
        }

        public Builder regionSize(long bytes) {
            this.regionSize = bytes;
            return this;
        }

        public Builder demand(DemandSignal d) {
            this.demand = d;
            return this;
        }

        public Builder grace(Duration d) {
            this.grace = d;
            return this;
        }

        public Builder tick(Duration d) {
            this.tick = d;
            return this;
        }

        public Builder stampReclaimed(boolean b) {
            this.stampReclaimed = b;
            return this;
        }

        public Builder clock(InstantSource c) {
            this.clock = c;
            return this;
        }

        /** Checks everything; throws {@link IllegalArgumentException} naming every bad value. */
        public PeerAgentConfig conclude() {
            List<String> problems = new ArrayList<>();
            if (file == null) {
                problems.add("no lending file given");
            }
            if (regionSize < 64 || regionSize % 64 != 0) {
                problems.add("region size " + regionSize + " must be a positive multiple of 64 bytes");
            }
            if (budget < 0) {
                problems.add("no budget given (--budget)");
            } else if (regionSize >= 64 && budget < regionSize) {
                problems.add("budget " + budget + " bytes is smaller than one region of " + regionSize + " bytes");
            } else if (regionSize >= 64 && budget / regionSize > LendingFileLayout.MAX_REGIONS) {
                problems.add("budget " + budget + " bytes makes " + budget / regionSize + " regions of " + regionSize
                        + " bytes; at most " + LendingFileLayout.MAX_REGIONS + " (choose a larger region)");
            }
            if (demand == null) {
                problems.add("no demand signal given");
            }
            if (grace == null || grace.isNegative() || grace.isZero()) {
                problems.add("grace " + grace + " must be positive");
            }
            if (tick == null || tick.isNegative() || tick.isZero()) {
                problems.add("tick " + tick + " must be positive");
            }
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("strata peer configuration: " + String.join("; ", problems));
            }
            return new PeerAgentConfig(file, budget, regionSize, demand, grace, tick, stampReclaimed,
                    Objects.requireNonNull(clock, "clock"));
        }
    }
}
