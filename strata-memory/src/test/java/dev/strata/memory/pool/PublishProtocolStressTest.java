package dev.strata.memory.pool;

import dev.strata.testing.JcstressRun;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the JCStress tests of the publish protocol ({@link PublishProtocolStress}) in a separate
 * JVM and fails if any of them has a FORBIDDEN outcome or an error.
 *
 * <p>The regular suite runs JCStress's {@code quick} mode restricted to one JVM configuration
 * ({@code -jvmArgs -XX:+UseParallelGC}, unified compilation): about 15 s on 2 cores and over a
 * million samples per test. The full run, every JVM flag combination and split compilation, is
 * chosen with {@code -Dstrata.jcstress.mode=default} (or {@code tough}, {@code stress}), e.g.
 * {@code bin/test -pl strata-memory -Dtest=PublishProtocolStressTest -Dstrata.jcstress.mode=default}
 * (JCStress's own {@code quick} over all configurations takes about 80 s here).
 */
class PublishProtocolStressTest {

    @Test
    void publishProtocolHasNoForbiddenOutcomes(@TempDir Path dir) throws Exception {
        JcstressRun.assertNoForbiddenOutcomes(dir, PublishProtocolStress.class,
                List.of("--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"), "Publish", "Reuse", "RunPublish", "RunReuse");
    }
}
