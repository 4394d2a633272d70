package dev.strata.memory.device;

import dev.strata.memory.Allocator;
import dev.strata.memory.host.MemoryAudit;
import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DeviceTierTest {

    @Test
    void budgetIsNeverExceededUnderRandomSequences() {
        Property.forAll("device budget", 20, random -> {
            long budget = random.nextLong(8, 64) * CpuDeviceBackend.ALIGNMENT + random.nextLong(0, 4096);
            try (DeviceTier tier = DeviceTier.cpu("budget", budget)) {
                assertThat(tier.budgetBytes()).isEqualTo(budget);
                List<Long> handles = new ArrayList<>();
                int fulls = 0;
                for (int step = 0; step < 300; step++) {
                    if (handles.isEmpty() || random.nextInt(100) < 60) {
                        long h = tier.allocate(random.nextLong(1, budget / 3));
                        if (h == Allocator.FULL) {
                            fulls++;
                        } else {
                            assertThat(h + tier.allocationSize(h)).isLessThanOrEqualTo(budget);
                            handles.add(h);
                        }
                    } else {
                        tier.free(handles.remove(random.nextInt(handles.size())));
                    }
                    assertThat(tier.used()).isLessThanOrEqualTo(budget);
                    assertThat(tier.stats().usedBytes()).isLessThanOrEqualTo(budget);
                }
                assertThat(fulls).as("the sequence reached the budget").isPositive();
                for (long h : handles) {
                    tier.free(h);
                }
                assertThat(tier.used()).isZero();
            }
        });
    }

    @Test
    void backendCopiesAreByteExactAndBoundsChecked() {
        try (CpuDeviceBackend backend = new CpuDeviceBackend("copies", 1 << 16); Arena arena = Arena.ofConfined()) {
            long a = backend.allocate(5_001);
            long b = backend.allocate(5_001);
            MemorySegment src = arena.allocate(5_001);
            for (long i = 0; i < src.byteSize(); i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            backend.copyHostToDevice(src, a);
            backend.copyDeviceToDevice(a, b, 5_001);
            MemorySegment dst = arena.allocate(5_001);
            backend.copyDeviceToHost(b, dst);
            assertThat(dst.mismatch(src)).isEqualTo(-1);
            assertThatThrownBy(() -> backend.copyDeviceToHost(65_000, dst)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("65000").hasMessageContaining("5001").hasMessageContaining("copies");
            assertThat(backend.isHostAddressable()).isTrue();
            backend.free(a);
            backend.free(b);
            assertThatThrownBy(() -> backend.free(a)).hasMessageContaining(String.valueOf(a));
        }
    }

    @Test
    void nonAddressableBackendIsRefusedAndAuditIsClean() {
        int before = MemoryAudit.liveRegions().size();
        try (CpuDeviceBackend inner = new CpuDeviceBackend("opaque", 1 << 14)) {
            DeviceBackend opaque = (DeviceBackend) java.lang.reflect.Proxy.newProxyInstance(
                    DeviceBackend.class.getClassLoader(), new Class<?>[] {DeviceBackend.class},
                    (proxy, method, args) -> method.getName().equals("isHostAddressable")
                            ? Boolean.FALSE : method.invoke(inner, args));
            assertThatThrownBy(() -> new DeviceTier("opaque-tier", opaque)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("opaque-tier").hasMessageContaining("not host-addressable");
        }
        DeviceTier t = DeviceTier.cpu("audit", 1 << 14);
        t.close();
        assertThat(MemoryAudit.liveRegions()).hasSize(before);
    }
}
