package dev.strata.cache.peer;

import dev.strata.testing.JcstressRun;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the JCStress tests of the peer lease guards ({@link PeerGuardStress}) in a separate JVM and
 * fails on any FORBIDDEN outcome or error. The regular suite runs JCStress's {@code quick} mode
 * with one JVM configuration; {@code -Dstrata.jcstress.mode=default} (or {@code tough}) runs every
 * configuration, e.g. {@code bin/test -pl strata-cache -am -Dtest=PeerGuardStressTest
 * -Dstrata.jcstress.mode=default -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class PeerGuardStressTest {

    @Test
    void leaseGuardsHaveNoForbiddenOutcomes(@TempDir Path dir) throws Exception {
        JcstressRun.assertNoForbiddenOutcomes(dir, PeerGuardStress.class, List.of("--add-modules=jdk.incubator.vector"),
                "RegionEnterAgainstClose", "GuardEnterAgainstClose", "GuardDrainAction");
    }
}
