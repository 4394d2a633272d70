package dev.strata.node.index;

import dev.strata.cache.ObjectKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * How a process opens the block index of a pool: the identity it requires (block-hash version
 * and model fingerprint, checked against the index header on attach), how many pins each
 * process may hold at once (used when the index is formatted), how long a pin holds a block,
 * and the clock (epoch milliseconds, shared by all processes of the pool).
 *
 * <p>Build with {@link #builder(int, ObjectKey)}; {@link Builder#conclude()} validates and names
 * the offending value. Immutable; any thread.
 */
public record BlockIndexConfig(int hashVersion, ObjectKey modelFingerprint, int pinsPerProcess,
                               Duration pinDuration, LongSupplier clockMillis, dev.strata.cache.EvictionSink evictionSink) {

    public static final int DEFAULT_PINS_PER_PROCESS = 256;
    public static final int MAX_PINS_PER_PROCESS = 1 << 20;

    public static Builder builder(int hashVersion, ObjectKey modelFingerprint) {
        return new Builder(hashVersion, modelFingerprint);
    }

    /** Collects settings; not thread-safe. */
    public static final class Builder {
        private final int hashVersion;
        private final ObjectKey modelFingerprint;
        private int pinsPerProcess = DEFAULT_PINS_PER_PROCESS;
        private Duration pinDuration = Duration.ofSeconds(30);
        private LongSupplier clockMillis = System::currentTimeMillis;
        private dev.strata.cache.EvictionSink evictionSink = dev.strata.cache.EvictionSink.NONE;

        private Builder(int hashVersion, ObjectKey modelFingerprint) {
            this.hashVersion = hashVersion;
            this.modelFingerprint = modelFingerprint;
        }

        public Builder pinsPerProcess(int n) {
            this.pinsPerProcess = n;
            return this;
        }

        public Builder pinDuration(Duration d) {
            this.pinDuration = d;
            return this;
        }

        public Builder clockMillis(LongSupplier clock) {
            this.clockMillis = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Who is told of each block this process evicts from the pool, with its verified bytes,
         * before its room is freed (a write-behind tier below the pool); default nobody.
         */
        public Builder evictionSink(dev.strata.cache.EvictionSink sink) {
            this.evictionSink = java.util.Objects.requireNonNull(sink, "eviction sink");
            return this;
        }

        /** Validates and builds; throws {@link IllegalArgumentException} naming every bad value. */
        public BlockIndexConfig conclude() {
            List<String> problems = new ArrayList<>();
            if (modelFingerprint == null) {
                problems.add("model fingerprint is missing");
            }
            if (hashVersion <= 0) {
                problems.add("hash version " + hashVersion + " must be positive");
            }
            if (pinsPerProcess < 1 || pinsPerProcess > MAX_PINS_PER_PROCESS) {
                problems.add("pins per process " + pinsPerProcess + " must be between 1 and " + MAX_PINS_PER_PROCESS);
            }
            if (pinDuration == null || pinDuration.isNegative() || pinDuration.isZero()) {
                problems.add("pin duration " + pinDuration + " must be positive");
            }
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("invalid block index config: " + String.join("; ", problems));
            }
            return new BlockIndexConfig(hashVersion, modelFingerprint, pinsPerProcess, pinDuration, clockMillis, evictionSink);
        }
    }
}
