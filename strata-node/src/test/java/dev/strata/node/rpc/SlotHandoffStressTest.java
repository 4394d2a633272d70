package dev.strata.node.rpc;

import dev.strata.testing.JcstressRun;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the JCStress tests of the RPC slot handoff ({@link SlotHandoffStress}) in a separate
 * JVM and fails if any of them has a FORBIDDEN outcome or an error.
 *
 * <p>The regular suite runs JCStress's {@code quick} mode restricted to one JVM configuration
 * ({@code -jvmArgs -XX:+UseParallelGC}, unified compilation): about 15 s on 2 cores and over a
 * million samples per test. The full run, every JVM flag combination and split compilation, is
 * chosen with {@code -Dstrata.jcstress.mode=default} (or {@code tough}, {@code stress}), e.g.
 * {@code bin/test -pl strata-node -am -Dtest=SlotHandoffStressTest -Dstrata.jcstress.mode=default}.
 */
class SlotHandoffStressTest {

    @Test
    void slotHandoffHasNoForbiddenOutcomes(@TempDir Path dir) throws Exception {
        JcstressRun.assertNoForbiddenOutcomes(dir, SlotHandoffStress.class,
                List.of("--enable-native-access=ALL-UNNAMED"), "Request", "StaleResponse");
    }
}
