package dev.strata.node.rpc;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How to serve an RPC region: its file, geometry (channels, ring size, payload bytes per slot) and
 * the timing of the polling thread.
 *
 * <p>Build with {@link #builder()}; {@link Builder#conclude()} checks everything at once and fails
 * naming each bad value. Immutable; any thread.
 *
 * @param path              the region file (default {@code /dev/shm/strata-node.rpc})
 * @param channels          clients that may be attached at once
 * @param slotsPerChannel   requests a client may have outstanding, a power of two
 * @param payloadBytes      payload bytes per slot and direction, a multiple of 64
 * @param maxBatch          requests served from one channel per pass over all channels
 * @param maxIdlePark       the longest park of the idle polling thread: bounds the latency of the
 *                          first request after a pause
 * @param heartbeatInterval how often the polling thread refreshes the server heartbeat
 * @param livenessInterval  how often the polling thread looks for dead clients
 */
public record RpcServerConfig(Path path, int channels, int slotsPerChannel, int payloadBytes, int maxBatch,
                              Duration maxIdlePark, Duration heartbeatInterval, Duration livenessInterval) {

    public static final Path DEFAULT_PATH = dev.strata.memory.shm.ShmFiles.userDefault("node.rpc");

    public RpcRegionLayout.Geometry geometry() {
        return new RpcRegionLayout.Geometry(channels, slotsPerChannel, payloadBytes);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Collects settings; {@link #conclude()} checks them. Not thread-safe. */
    public static final class Builder {
        private Path path = DEFAULT_PATH;
        private int channels = 16;
        private int slotsPerChannel = 64;
        private int payloadBytes = 512;
        private int maxBatch = -1; // default: slotsPerChannel
        private Duration maxIdlePark = Duration.ofNanos(200_000);
        private Duration heartbeatInterval = Duration.ofMillis(100);
        private Duration livenessInterval = Duration.ofMillis(200);

        private Builder() {
        }

        public Builder path(Path p) {
            this.path = Objects.requireNonNull(p, "path");
            return this;
        }

        public Builder channels(int n) {
            this.channels = n;
            return this;
        }

        public Builder slotsPerChannel(int n) {
            this.slotsPerChannel = n;
            return this;
        }

        public Builder payloadBytes(int n) {
            this.payloadBytes = n;
            return this;
        }

        public Builder maxBatch(int n) {
            this.maxBatch = n;
            return this;
        }

        public Builder maxIdlePark(Duration d) {
            this.maxIdlePark = d;
            return this;
        }

        public Builder heartbeatInterval(Duration d) {
            this.heartbeatInterval = d;
            return this;
        }

        public Builder livenessInterval(Duration d) {
            this.livenessInterval = d;
            return this;
        }

        /** Checks the settings; throws {@link IllegalArgumentException} naming every bad value. */
        public RpcServerConfig conclude() {
            List<String> problems = new ArrayList<>();
            if (channels < 1 || channels > RpcRegionLayout.MAX_CHANNELS) {
                problems.add("channel count " + channels + " must be between 1 and " + RpcRegionLayout.MAX_CHANNELS);
            }
            if (slotsPerChannel < 1 || slotsPerChannel > RpcRegionLayout.MAX_SLOTS || Integer.bitCount(slotsPerChannel) != 1) {
                problems.add("slots per channel " + slotsPerChannel + " must be a power of two between 1 and "
                        + RpcRegionLayout.MAX_SLOTS);
            }
            if (payloadBytes < 0 || payloadBytes > RpcRegionLayout.MAX_PAYLOAD || payloadBytes % 64 != 0) {
                problems.add("payload bytes " + payloadBytes + " must be a multiple of 64 between 0 and "
                        + RpcRegionLayout.MAX_PAYLOAD);
            }
            int batch = maxBatch < 0 ? slotsPerChannel : maxBatch;
            if (batch < 1) {
                problems.add("max batch " + maxBatch + " must be at least 1");
            }
            checkPositive(problems, "max idle park", maxIdlePark);
            checkPositive(problems, "heartbeat interval", heartbeatInterval);
            checkPositive(problems, "liveness interval", livenessInterval);
            if (path.getFileName() == null) {
                problems.add("rpc path '" + path + "' names no file");
            }
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("rpc server configuration: " + String.join("; ", problems));
            }
            return new RpcServerConfig(path, channels, slotsPerChannel, payloadBytes, batch, maxIdlePark,
                    heartbeatInterval, livenessInterval);
        }

        private static void checkPositive(List<String> problems, String what, Duration d) {
            if (d == null || d.isNegative() || d.isZero()) {
                problems.add(what + " " + d + " must be positive");
            }
        }
    }
}
