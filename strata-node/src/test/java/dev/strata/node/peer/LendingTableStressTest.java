package dev.strata.node.peer;

import dev.strata.testing.JcstressRun;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the JCStress tests of the lease guard ({@link LendingTableStress}) in a separate JVM and
 * fails on any FORBIDDEN outcome or error; {@code -Dstrata.jcstress.mode=default} runs every
 * configuration, e.g. {@code bin/test -pl strata-node -am -Dtest=LendingTableStressTest
 * -Dstrata.jcstress.mode=default -Dsurefire.failIfNoSpecifiedTests=false}.
 */
class LendingTableStressTest {

    @Test
    void leaseGuardHasNoForbiddenOutcomes(@TempDir Path dir) throws Exception {
        JcstressRun.assertNoForbiddenOutcomes(dir, LendingTableStress.class,
                List.of("--add-modules=jdk.incubator.vector"), "EnterAgainstRevoke", "EnterAgainstFence", "AccessAgainstReuse");
    }
}
