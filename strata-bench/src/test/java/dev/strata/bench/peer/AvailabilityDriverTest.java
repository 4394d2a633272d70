package dev.strata.bench.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.strata.cache.peer.LentRegion;
import dev.strata.cache.peer.LocalLender;
import dev.strata.cache.peer.trace.AvailabilityTrace;
import dev.strata.analysis.peer.AvailabilityTraceGenerator;
import dev.strata.memory.Sizes;
import dev.strata.node.peer.DemandSignal;
import dev.strata.node.peer.LendingStats;
import dev.strata.node.peer.PeerAgent;
import dev.strata.node.peer.PeerAgentConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AvailabilityDriverTest {
    private static final long CAP = 8 * Sizes.MiB;
    private static final long REGION = 2 * Sizes.MiB;

    /** A demand the driver sets and the agent reads on its next step. */
    private static final class SetDemand implements DemandSignal {
        final AtomicLong bytes = new AtomicLong();

        @Override
        public long demandBytes(long elapsedNanos) {
            return bytes.get();
        }

        @Override
        public String describe() {
            return "set by the availability driver";
        }
    }

    private static AvailabilityTrace trace() {
        return new AvailabilityTraceGenerator(AvailabilityTraceGenerator.Parameters.defaults().withPeers(2).withCapacity(CAP)
                .withTime(60, 1).withDiurnal(0.3, 60).withReclaims(120, 0.5, 10).withSeed(3)).toTrace();
    }

    @Test
    void theTraceDrivesTheDemandOfAnInProcessLenderAndOfAPeerAgentAlike(@TempDir Path dir) {
        AvailabilityTrace trace = trace();
        SetDemand agentDemand = new SetDemand();
        PeerAgentConfig config = PeerAgentConfig.builder().file(dir.resolve("driver.lend")).budget(CAP).regionSize(REGION)
                .demand(agentDemand).stampReclaimed(false).conclude();
        List<LentRegion> borrowed = new ArrayList<>();
        try (LocalLender lender = new LocalLender(LocalLender.Config.of(0, trace.peers().get(0), CAP));
             PeerAgent agent = PeerAgent.create(config)) {
            AvailabilityDriver driver = new AvailabilityDriver(trace, 2, CAP, 1, (peer, bytes) -> {
                if (peer == 0) {
                    lender.demand(bytes);
                } else {
                    agentDemand.bytes.set(bytes);
                }
            });
            assertThat(driver.peers()).isEqualTo(trace.peers());
            long reclaims = 0;
            long previousOffer = CAP;
            for (int step = 0; step < driver.steps(); step++) {
                driver.apply(step);
                agent.step();
                double t = driver.time(step);
                long free0 = Math.min(trace.freeAt(0, t), CAP);
                long free1 = Math.min(trace.freeAt(1, t), CAP);
                LocalLender.Stats s = lender.stats();
                assertThat(s.offerBytes()).as("lender 0 offers what its peer had free at %s s", t).isEqualTo(free0);
                assertThat(s.lentBytes()).as("what stays lent fits the offer at %s s", t).isLessThanOrEqualTo(free0);
                LendingStats a = agent.stats();
                assertThat(a.demandBytes()).as("the agent's demand at %s s", t).isEqualTo(CAP - free1);
                assertThat(a.held()).as("the agent holds its demand in whole regions at %s s", t)
                        .isEqualTo((CAP - free1 + REGION - 1) / REGION);
                if (s.offerBytes() < previousOffer) {
                    reclaims++;
                }
                previousOffer = s.offerBytes();
                for (LentRegion r : borrowed) {
                    if (lender.phase(r.lease()) == LocalLender.Phase.REVOKING) {
                        lender.acknowledge(r);
                    }
                }
                borrowed.removeIf(r -> lender.phase(r.lease()) == LocalLender.Phase.RELEASED);
                for (LentRegion r; (r = lender.borrow(Sizes.MiB)) != null; ) {
                    borrowed.add(r);
                }
                lender.checkInvariants();
            }
            assertThat(reclaims).as("the trace took memory back").isPositive();
            assertThat(lender.stats().revocationRequests()).as("and the lender asked regions back by its rule").isPositive();
        }
    }

    @Test
    void aTraceWithFewerPeersThanLendersIsRefused() {
        assertThatThrownBy(() -> new AvailabilityDriver(trace(), 3, CAP, 1, (p, b) -> { }))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3 lenders");
    }
}
