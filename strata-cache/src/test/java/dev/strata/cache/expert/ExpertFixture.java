package dev.strata.cache.expert;

import dev.strata.memory.Tier;
import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

/** Tiers and masters filled with seeded random bytes, for pager tests. Closes what it opened. */
final class ExpertFixture implements AutoCloseable {
    final HostTier host;
    final DeviceTier device;
    final ExpertMasters masters;

    ExpertFixture(ExpertLayout layout, int layers, int experts, long deviceBytes, long seed) {
        long hostBytes = (long) layers * experts * (layout.bytes() + 4096) + (1 << 20);
        this.host = HostTier.create("host", hostBytes);
        this.device = DeviceTier.cpu("device", deviceBytes);
        this.masters = ExpertMasters.allocate(host, layout, layers, experts);
        fill(masters, seed);
    }

    /** Writes a distinct seeded random image (never all zero) into every master. */
    static void fill(ExpertMasters masters, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int size = (int) masters.layout().bytes();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment image = arena.allocate(size, 4096);
            byte[] bytes = new byte[size];
            for (int l = 0; l < masters.layers(); l++) {
                for (int e = 0; e < masters.experts(); e++) {
                    random.nextBytes(bytes);
                    bytes[0] = (byte) (l * 31 + e | 1);
                    MemorySegment.copy(bytes, 0, image, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, size);
                    masters.write(l, e, image);
                }
            }
        }
    }

    /** Bytes one slot takes in the device tier. */
    static long slotBytes(ExpertLayout layout) {
        return (layout.bytes() + 4095) / 4096 * 4096;
    }

    Tier deviceTier() {
        return device;
    }

    @Override
    public void close() {
        masters.close();
        device.close();
        host.close();
    }
}
