package dev.strata.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class SizesTest {

    @Test
    void parsesBinaryAndDecimalUnits() {
        assertThat(Sizes.parse("4096")).isEqualTo(4096);
        assertThat(Sizes.parse("64KiB")).isEqualTo(65_536);
        assertThat(Sizes.parse("8GiB")).isEqualTo(8L << 30);
        assertThat(Sizes.parse("1.5 GiB")).isEqualTo(3L << 29);
        assertThat(Sizes.parse("2GB")).isEqualTo(2_000_000_000L);
        assertThat(Sizes.parse("80GB")).isEqualTo(80_000_000_000L);
        assertThat(Sizes.parse("300GiB")).isGreaterThan(Integer.MAX_VALUE);
    }

    @Test
    void rejectsNonSizesNamingTheText() {
        assertThatThrownBy(() -> Sizes.parse("eight")).hasMessageContaining("'eight'");
        assertThatThrownBy(() -> Sizes.parse("8 parsecs")).hasMessageContaining("parsecs");
        assertThatThrownBy(() -> Sizes.parse("1.3B")).hasMessageContaining("whole number");
    }

    @Test
    void formatsAndAligns() {
        assertThat(Sizes.format(2 * Sizes.MiB)).isEqualTo("2 MiB");
        assertThat(Sizes.format(1536)).isEqualTo("1.50 KiB");
        assertThat(Sizes.alignUp(4097, 4096)).isEqualTo(8192);
        assertThat(Sizes.alignUp(4096, 4096)).isEqualTo(4096);
        assertThat(Sizes.isPowerOfTwo(2 * Sizes.MiB)).isTrue();
        assertThat(Sizes.isPowerOfTwo(3)).isFalse();
    }
}
