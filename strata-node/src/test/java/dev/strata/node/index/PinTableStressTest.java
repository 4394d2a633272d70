package dev.strata.node.index;

import dev.strata.testing.JcstressRun;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the JCStress tests of the block index ({@link PinTableStress}) in a separate JVM and
 * fails on any FORBIDDEN outcome or error. The regular suite runs JCStress's {@code quick} mode
 * with one JVM configuration; {@code -Dstrata.jcstress.mode=default} (or {@code tough}) runs
 * every configuration, e.g.
 * {@code bin/test -pl strata-node -am -Dtest=PinTableStressTest -Dstrata.jcstress.mode=default
 * -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class PinTableStressTest {

    @Test
    void pinProtocolHasNoForbiddenOutcomes(@TempDir Path dir) throws Exception {
        JcstressRun.assertNoForbiddenOutcomes(dir, PinTableStress.class,
                List.of("--add-modules=jdk.incubator.vector"), "PinAgainstEviction", "EntryPublication");
    }
}
