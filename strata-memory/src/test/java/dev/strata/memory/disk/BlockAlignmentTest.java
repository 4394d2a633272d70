package dev.strata.memory.disk;

import dev.strata.testing.Property;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BlockAlignmentTest {

    private static long randomBlock(java.util.SplittableRandom r) {
        return 1L << r.nextInt(0, 22); // 1 B .. 2 MiB
    }

    private static long randomValue(java.util.SplittableRandom r) {
        return switch (r.nextInt(4)) {
            case 0 -> r.nextLong(0, 1L << 16);
            case 1 -> r.nextLong(0, 1L << 40);
            case 2 -> (r.nextLong(0, 1L << 20)) << r.nextInt(0, 12); // often aligned
            default -> r.nextLong(0, Long.MAX_VALUE >> 2);
        };
    }

    @Test
    void alignUpIsTheSmallestMultipleAtOrAbove() {
        Property.forAll("alignUp", 2000, r -> {
            long b = randomBlock(r);
            long v = randomValue(r);
            long up = BlockAlignment.alignUp(v, b);
            assertThat(up).isGreaterThanOrEqualTo(v);
            assertThat(up - v).isLessThan(b);
            assertThat(up % b).isZero();
            assertThat(BlockAlignment.alignUp(up, b)).isEqualTo(up);
            assertThat(BlockAlignment.isAligned(up, b)).isTrue();
        });
    }

    @Test
    void alignDownIsTheLargestMultipleAtOrBelow() {
        Property.forAll("alignDown", 2000, r -> {
            long b = randomBlock(r);
            long v = randomValue(r);
            long down = BlockAlignment.alignDown(v, b);
            assertThat(down).isLessThanOrEqualTo(v);
            assertThat(v - down).isLessThan(b);
            assertThat(down % b).isZero();
            assertThat(BlockAlignment.alignDown(down, b)).isEqualTo(down);
            assertThat(BlockAlignment.isAligned(v, b)).isEqualTo(down == v);
            assertThat(BlockAlignment.isAligned(v, b)).isEqualTo(BlockAlignment.alignUp(v, b) == v);
        });
    }

    @Test
    void directPrefixOfNativeSlicesCoversAllButASubBlockTailWhenTheAddressIsAligned() {
        long block = 4096;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment base = arena.allocate(64 * block, block);
            Property.forAll("directPrefix", 2000, r -> {
                long offset = r.nextBoolean() ? r.nextLong(0, 32) * block : r.nextLong(0, 32 * block);
                long size = r.nextLong(0, base.byteSize() - offset + 1);
                MemorySegment slice = base.asSlice(offset, size);
                long prefix = BlockAlignment.directPrefix(slice, block);
                boolean aligned = offset % block == 0;
                assertThat(BlockAlignment.isDirectCapable(slice, block)).isEqualTo(aligned);
                if (aligned) {
                    assertThat(prefix % block).isZero();
                    assertThat(prefix).isLessThanOrEqualTo(size);
                    assertThat(size - prefix).isLessThan(block);
                } else {
                    assertThat(prefix).isZero();
                }
            });
        }
    }

    @Test
    void heapSegmentsAreNeverDirectCapable() {
        Property.forAll("heapNotDirect", 200, r -> {
            MemorySegment heap = MemorySegment.ofArray(new byte[r.nextInt(1, 3 * 4096)]);
            assertThat(BlockAlignment.isDirectCapable(heap, 4096)).isFalse();
            assertThat(BlockAlignment.directPrefix(heap, 4096)).isZero();
        });
    }

    @Test
    void rejectsBlockSizesThatAreNotPowersOfTwoAndNegativeValues() {
        assertThatThrownBy(() -> BlockAlignment.alignUp(10, 3000))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3000");
        assertThatThrownBy(() -> BlockAlignment.alignDown(10, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("power of two");
        assertThatThrownBy(() -> BlockAlignment.isAligned(-4096, 4096))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-4096");
    }
}
