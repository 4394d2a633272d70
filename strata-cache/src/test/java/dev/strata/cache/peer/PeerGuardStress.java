package dev.strata.cache.peer;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.lang.foreign.MemorySegment;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * JCStress tests of the two guards on a peer lease, on the real code: the lender's region
 * handshake ({@link LocalRegion#enter} against {@link LocalRegion#close}, Dekker style) and the
 * client's guard ({@link LeaseGuard#enter} against {@link LeaseGuard#close}, one word). A
 * revocation request ({@link LocalRegion#beginRevocation}) is the same store of the same word as
 * the close, with another gate, so the close race covers it.
 *
 * <p>Run in the regular suite by {@code PeerGuardStressTest} in JCStress's quick mode.
 */
public final class PeerGuardStress {
    private PeerGuardStress() {
    }

    /**
     * A client enters a region (and stays in) while the agent closes it (fence: epoch 1 -&gt; 2) and
     * then checks whether it may reuse the memory. r1: 1 the client is in; r2: 1 the agent saw no
     * access in flight and would reuse the memory.
     */
    @JCStressTest
    @Outcome(id = "1, 0", expect = ACCEPTABLE, desc = "client entered first; agent saw it and waits")
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "agent closed first; client refused; memory reusable")
    @Outcome(id = "0, 0", expect = ACCEPTABLE_INTERESTING, desc = "client's failed attempt was still counted when the agent looked")
    @Outcome(id = "1, 1", expect = FORBIDDEN, desc = "an access entered while the agent reuses the memory")
    @State
    public static class RegionEnterAgainstClose {
        final LocalRegion region = new LocalRegion(new Object(), new PeerLease(0, 0, 8, 1), MemorySegment.ofArray(new byte[8]), 0, 8);

        @Actor
        public void client(II_Result r) {
            r.r1 = region.enter() ? 1 : 0;
        }

        @Actor
        public void agent(II_Result r) {
            region.close(2);
            r.r2 = region.inFlight() == 0 ? 1 : 0;
        }
    }

    /**
     * The action on a drain: the last access of a closed guard exits while a revocation registers
     * what to do once it has drained. r1: 1 the registrant was told the exit will act; r2: how many
     * times the exit ran the action (read after both, by the arbiter).
     */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "registered first; the last exit ran the action")
    @Outcome(id = "0, 0", expect = ACCEPTABLE_INTERESTING, desc = "exited first; the registrant acts itself")
    @Outcome(id = "1, 0", expect = FORBIDDEN, desc = "the drain was lost: nobody acts")
    @Outcome(id = "0, 1", expect = FORBIDDEN, desc = "both act on the same drain")
    @State
    public static class GuardDrainAction {
        final LeaseGuard guard = new LeaseGuard();
        final java.util.concurrent.atomic.AtomicInteger ran = new java.util.concurrent.atomic.AtomicInteger();

        public GuardDrainAction() {
            guard.enter();
            guard.close();
        }

        @Actor
        public void registrant(II_Result r) {
            r.r1 = guard.runWhenDrained(ran::incrementAndGet) ? 1 : 0;
        }

        @Actor
        public void lastAccess() {
            guard.exit();
        }

        @org.openjdk.jcstress.annotations.Arbiter
        public void arbiter(II_Result r) {
            r.r2 = ran.get();
        }
    }

    /**
     * The client's guard: an access enters while a revocation closes the guard and then checks the
     * in-flight count (the drain). r1: 1 the access is in; r2: 1 the drain saw nothing in flight.
     */
    @JCStressTest
    @Outcome(id = "1, 0", expect = ACCEPTABLE_INTERESTING, desc = "access entered first; the drain waits for it")
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "guard closed first; access refused; drained")
    @Outcome(id = "0, 0", expect = FORBIDDEN, desc = "a refused access left a count behind")
    @Outcome(id = "1, 1", expect = FORBIDDEN, desc = "an access entered but the drain did not see it")
    @State
    public static class GuardEnterAgainstClose {
        final LeaseGuard guard = new LeaseGuard();

        @Actor
        public void access(II_Result r) {
            r.r1 = guard.enter() ? 1 : 0;
        }

        @Actor
        public void revocation(II_Result r) {
            guard.close();
            r.r2 = guard.inFlight() == 0 ? 1 : 0;
        }
    }
}
