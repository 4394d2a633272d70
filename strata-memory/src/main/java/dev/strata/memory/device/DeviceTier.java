package dev.strata.memory.device;

import dev.strata.memory.Allocator;
import dev.strata.memory.TierKind;
import dev.strata.memory.host.PlainMemoryTier;

/**
 * The DEVICE tier: accelerator memory under a hard byte budget. Allocations never exceed the
 * budget; beyond it {@link #allocate} returns {@link Allocator#FULL}.
 *
 * <p>Over a host-addressable backend (the CPU backend) device memory is plain memory and the tier
 * shares every mechanic with the HOST tier through {@link PlainMemoryTier}. A backend whose memory
 * the host cannot address (CUDA) needs a tier that copies through the backend's copy calls; it is
 * refused here with a message saying so.
 *
 * <p>Threads: any; see {@link PlainMemoryTier}.
 */
public final class DeviceTier extends PlainMemoryTier {

    private final DeviceBackend backend;

    /** A DEVICE tier over {@code backend}, which it owns and closes. */
    public DeviceTier(String name, DeviceBackend backend) {
        super(name, TierKind.DEVICE, hostViewOf(name, backend), new BackendAllocator(backend), backend);
        this.backend = backend;
    }

    private static java.lang.foreign.MemorySegment hostViewOf(String name, DeviceBackend backend) {
        if (!backend.isHostAddressable()) {
            throw new IllegalArgumentException("tier '" + name + "': backend '" + backend.name()
                    + "' is not host-addressable; DeviceTier supports host-addressable backends only");
        }
        return backend.hostView(0, backend.budgetBytes());
    }

    /** A DEVICE tier on the CPU backend: an off-heap arena of exactly {@code budgetBytes}. */
    public static DeviceTier cpu(String name, long budgetBytes) {
        return new DeviceTier(name, new CpuDeviceBackend(name, budgetBytes));
    }

    /** The hard byte budget (equal to {@link #capacity()}). */
    public long budgetBytes() {
        return backend.budgetBytes();
    }

    /** The backend this tier allocates from. */
    public DeviceBackend backend() {
        return backend;
    }

    /** Presents the backend's range allocation as an {@link Allocator} over its budget. */
    private record BackendAllocator(DeviceBackend backend) implements Allocator {
        @Override
        public long allocate(long size) {
            return backend.allocate(size);
        }

        @Override
        public void free(long offset) {
            backend.free(offset);
        }

        @Override
        public long sizeOf(long offset) {
            return backend.sizeOf(offset);
        }

        @Override
        public long sizeIfAllocated(long offset) {
            return backend.sizeIfAllocated(offset);
        }

        @Override
        public long capacity() {
            return backend.budgetBytes();
        }

        @Override
        public long used() {
            return backend.used();
        }

        @Override
        public long alignment() {
            return backend.alignment();
        }

        @Override
        public long allocationCount() {
            return backend.allocationCount();
        }
    }
}
