package dev.strata.memory.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The CUDA driver binding: on a machine without a driver or a device it says why instead of
 * failing; on one with a device (a GPU machine; skipped elsewhere) bytes go to the device and come
 * back unchanged from page-locked and pageable memory, and a failed call names itself and the
 * driver's error.
 */
class CudaDriverTest {

    @Test
    void loadingSaysWhyThereIsNoDriverOrReturnsAnInitialisedOne() {
        CudaDriver.Loaded loaded = CudaDriver.load();
        switch (loaded) {
            case CudaDriver.Unavailable u -> assertThat(u.reason()).as("names the library or the driver's error")
                    .containsAnyOf(CudaDriver.LIBRARY, "CUDA");
            case CudaDriver.Available a -> assertThat(a.devices()).isPositive();
        }
        assertThat(CudaDriver.load().getClass()).as("loading twice gives the same answer").isEqualTo(loaded.getClass());
    }

    @Test
    void bytesGoToTheDeviceAndComeBackUnchanged() {
        org.junit.jupiter.api.Assumptions.assumeTrue(CudaDriver.load() instanceof CudaDriver.Available, "no CUDA device here");
        CudaDriver cuda = ((CudaDriver.Available) CudaDriver.load()).driver();
        MemorySegment context = cuda.retainPrimaryContext(0);
        try (Arena arena = Arena.ofConfined()) {
            cuda.makeCurrent(context);
            assertThat(cuda.deviceName(0)).isNotBlank();
            assertThat(cuda.deviceMemoryBytes(0)).isPositive();
            long bytes = 3 * 1024 * 1024 + 64;
            long device = cuda.allocateDevice(bytes);
            MemorySegment pinned = cuda.allocatePinnedHost(bytes);
            try {
                MemorySegment source = arena.allocate(bytes, 64);
                SplittableRandom r = new SplittableRandom(11);
                for (long o = 0; o < bytes; o += 8) {
                    source.set(ValueLayout.JAVA_LONG_UNALIGNED, o, r.nextLong());
                }
                cuda.copyHostToDevice(source, device); // pageable out
                cuda.synchronize();
                cuda.copyDeviceToHost(device, pinned); // page-locked back
                assertThat(pinned.mismatch(source)).isEqualTo(-1);
                pinned.set(ValueLayout.JAVA_LONG, 0, 42);
                cuda.copyHostToDevice(pinned.asSlice(0, 4096), device + 4096); // page-locked out, at an offset
                MemorySegment back = arena.allocate(bytes, 64);
                cuda.copyDeviceToHost(device, back); // pageable back
                assertThat(back.get(ValueLayout.JAVA_LONG, 4096)).isEqualTo(42);
                assertThat(back.asSlice(0, 4096).mismatch(source.asSlice(0, 4096))).isEqualTo(-1);
                assertThat(back.asSlice(8192).mismatch(source.asSlice(8192))).isEqualTo(-1);
                assertThatThrownBy(() -> cuda.allocateDevice(1L << 50)).isInstanceOf(CudaDriver.CudaException.class)
                        .hasMessageContaining("cuMemAlloc(" + (1L << 50) + " bytes) failed: CUDA_ERROR_");
            } finally {
                cuda.freePinnedHost(pinned);
                cuda.freeDevice(device);
            }
        } finally {
            cuda.releasePrimaryContext(0);
        }
    }
}
