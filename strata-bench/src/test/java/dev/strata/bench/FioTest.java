package dev.strata.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.strata.memory.Sizes;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk baselines against the real fio, where it is installed (the benchmark installs it; the
 * test suite does not need it): a plain read and a read that verifies a hash in every block, each
 * over its own laid-out file, both removed by {@link Fio#cleanUp}; a block changed after the layout
 * fails the verifying read.
 */
class FioTest {
    @TempDir
    Path dir;

    @Test
    void aVerifyingReadChecksEveryBlockOfItsOwnFileAndFailsOnAChangedOne() throws Exception {
        Optional<String> fio = Fio.ensureInstalled(false, new ArrayList<>());
        assumeTrue(fio.isPresent(), "fio is not installed");
        long file = 8 * Sizes.MiB;
        long block = 256 * Sizes.KiB;
        assertThat(Fio.bandwidth(fio.get(), dir, file, block, 4, false)).isPositive();
        assertThat(Fio.verifiedReadBandwidth(fio.get(), dir, file, block, 4)).isPositive();
        Path plain = dir.resolve("strata-fio.dat");
        Path verified = dir.resolve("strata-fio-verified.dat");
        assertThat(Files.size(plain)).isEqualTo(file);
        assertThat(Files.size(verified)).isEqualTo(file);
        assertThat(Fio.verifyingRead(fio.get(), dir, file, block, 4)).as("the laid-out file verifies again").isPositive();
        // the layout put a hash in every block: zeros over the second block must fail the verifying read
        byte[] bytes = Files.readAllBytes(verified);
        Arrays.fill(bytes, (int) block, (int) (2 * block), (byte) 0);
        Files.write(verified, bytes);
        assertThatThrownBy(() -> Fio.verifyingRead(fio.get(), dir, file, block, 4)).isInstanceOf(IOException.class)
                .hasMessageContaining("fio failed");
        assertThat(Path.of("local-strata-baseline-0-verify.state")).as("no verify state left in the working directory")
                .doesNotExist();
        Fio.cleanUp(dir);
        assertThat(plain).doesNotExist();
        assertThat(verified).doesNotExist();
    }
}
