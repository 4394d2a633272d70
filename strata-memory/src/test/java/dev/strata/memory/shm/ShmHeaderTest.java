package dev.strata.memory.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ShmHeaderTest {
    private static final ShmHeader.Kind KIND = new ShmHeader.Kind("test file", 0x5453455441525453L, 9, 3, 2);
    private static final Path FILE = Path.of("/dev/shm/strata-test.file");

    @Test
    void thePrefixReadsBackAsWrittenAndIsUnpublishedUntilTheVersionIsStored() {
        MemorySegment file = MemorySegment.ofArray(new long[(int) (ShmHeader.PREFIX_SIZE / 8)]);
        ShmHeader.writePrefix(file, KIND, 4242, 1_700_000_000_123L, 1_700_000_100_000L);
        ShmHeader.Prefix before = ShmHeader.Prefix.of(file);
        assertThat(before.published()).isFalse();
        assertThat(before.mayBecome(KIND)).isTrue();

        ShmHeader.publish(file, KIND);
        ShmHeader.beat(file, 1_700_000_200_000L);
        ShmHeader.Prefix p = ShmHeader.Prefix.of(asBuffer(file));
        assertThat(p).isEqualTo(ShmHeader.Prefix.of(file));
        assertThat(p.magic()).isEqualTo(KIND.magic());
        assertThat(p.major()).isEqualTo(3);
        assertThat(p.minor()).isEqualTo(2);
        assertThat(p.kind()).isEqualTo(9);
        assertThat(p.ownerPid()).isEqualTo(4242);
        assertThat(p.ownerStartMillis()).isEqualTo(1_700_000_000_123L);
        assertThat(p.heartbeatMillis()).isEqualTo(1_700_000_200_000L);
        assertThat(p.createdAtMillis()).isEqualTo(1_700_000_100_000L);
        p.check(FILE, KIND); // valid: no exception
    }

    @Test
    void eachWrongFieldIsRefusedNamingPathFieldAndValue() {
        ShmHeader.Prefix good = new ShmHeader.Prefix(KIND.magic(), KIND.version(), KIND.id(), 1, 0, 0, 0);

        assertRefused(new ShmHeader.Prefix(0x1234, good.version(), KIND.id(), 1, 0, 0, 0), "magic",
                "0x0000000000001234", "not a Strata test file");
        assertRefused(new ShmHeader.Prefix(KIND.magic(), 0, KIND.id(), 77, 0, 0, 0), "version", "0",
                "never published");
        assertRefused(new ShmHeader.Prefix(0, 0, 0, 0, 0, 0, 0), "version", "0", "owner pid unknown");
        assertRefused(new ShmHeader.Prefix(KIND.magic(), (5L << 32) | 1, KIND.id(), 1, 0, 0, 0), "version", "5.1",
                "major version 5 is not supported (this code reads major version 3)");
        assertRefused(new ShmHeader.Prefix(KIND.magic(), good.version(), 4, 1, 0, 0, 0), "kind", "4",
                "expected layout id 9");
    }

    private static void assertRefused(ShmHeader.Prefix prefix, String field, String value, String problem) {
        assertThatThrownBy(() -> prefix.check(FILE, KIND)).isInstanceOfSatisfying(ShmFormatException.class, e -> {
            assertThat(e.file()).isEqualTo(FILE);
            assertThat(e.field()).isEqualTo(field);
            assertThat(e.value()).isEqualTo(value);
            assertThat(e.getMessage()).startsWith("test file " + FILE + ": field " + field + " = " + value + ": ")
                    .contains(problem);
        });
    }

    private static ByteBuffer asBuffer(MemorySegment file) {
        return ByteBuffer.wrap(file.toArray(ValueLayout.JAVA_BYTE)).order(ByteOrder.LITTLE_ENDIAN);
    }
}
