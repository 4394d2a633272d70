package dev.strata.cache.expert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.memory.device.DeviceTier;
import dev.strata.memory.host.HostTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;

class ExpertLayoutTest {

    @Test
    void tensorsTileTheImageInOrder() {
        ExpertLayout layout = ExpertLayout.of("gate", 10, "up", 10, "down", 7, "scales", 3);
        assertThat(layout.bytes()).isEqualTo(30);
        assertThat(layout.indexOf("down")).isEqualTo(2);
        assertThat(layout.tensors().get(3).offset()).isEqualTo(27);
        assertThatThrownBy(() -> layout.indexOf("bias")).hasMessageContaining("'bias'");
        assertThatThrownBy(() -> new ExpertLayout(List.of(new ExpertLayout.Tensor("a", 0, 4), new ExpertLayout.Tensor("b", 5, 4))))
                .hasMessageContaining("starts at 5").hasMessageContaining("end at 4");
        assertThatThrownBy(() -> ExpertLayout.of("a", 4, "a", 4)).hasMessageContaining("appears twice");
        assertThatThrownBy(() -> ExpertLayout.of("a", 0)).hasMessageContaining("bytes 0");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment image = arena.allocate(30);
            assertThat(layout.slice(image, 1).address()).isEqualTo(image.address() + 10);
            assertThatThrownBy(() -> layout.slice(arena.allocate(29), 0)).hasMessageContaining("29");
        }
    }

    @Test
    void mastersAreWrittenWholeOrByTensorAndRefuseWrongSizesAndDeviceTiers() {
        ExpertLayout layout = ExpertLayout.of("up", 33, "down", 17);
        try (HostTier host = HostTier.create("host", 1 << 20);
             DeviceTier device = DeviceTier.cpu("device", 1 << 16);
             ExpertMasters masters = ExpertMasters.allocate(host, layout, 2, 3);
             Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> ExpertMasters.allocate(device, layout, 1, 1)).hasMessageContaining("not in DEVICE tier");
            assertThatThrownBy(() -> ExpertMasters.allocate(host, layout, 1000, 1000)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("cannot hold 1000000 expert masters");
            assertThat(host.allocationCount()).as("a refused allocation frees what it took").isEqualTo(6);
            MemorySegment up = arena.allocate(33).fill((byte) 5);
            MemorySegment down = arena.allocate(17).fill((byte) 9);
            masters.write(1, 2, List.of(up, down));
            MemorySegment view = masters.view(1, 2);
            assertThat(layout.slice(view, 0).mismatch(up)).isEqualTo(-1);
            assertThat(layout.slice(view, 1).mismatch(down)).isEqualTo(-1);
            assertThatThrownBy(() -> masters.write(1, 2, List.of(down, up))).hasMessageContaining("tensor 'up' is 17 bytes");
            assertThatThrownBy(() -> masters.write(0, 0, arena.allocate(49))).hasMessageContaining("49 bytes");
            assertThatThrownBy(() -> masters.write(2, 0, arena.allocate(50))).hasMessageContaining("(2, 0)");
            MemorySegment back = arena.allocate(50);
            assertThat(masters.read(1, 2, back)).isTrue();
            assertThat(back.mismatch(view)).isEqualTo(-1);
        }
    }
}
