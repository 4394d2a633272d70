package dev.strata.node.route;

import java.util.concurrent.ThreadLocalRandom;

/**
 * Cache-oblivious routing: by load alone.
 *
 * <p>Design note: when every block is equally near every instance (a shared pool that any
 * instance reads at memory speed), where a prefix was computed before does not matter, and the
 * best placement is the one that evens out work. Two modes:
 * <ul>
 *   <li>{@link Mode#EXACT}: the instance with the fewest outstanding tokens. The pick is booked
 *       with a compare-and-set on the load that was read, and re-decided if another thread booked
 *       that instance meanwhile, so concurrent routers do not herd onto one instance. Ties go to
 *       a random instance among the least loaded. O(instances).</li>
 *   <li>{@link Mode#TWO_CHOICES}: the less loaded of two instances drawn at random (power of two
 *       choices): O(1) and within a small factor of exact balance, for many instances.</li>
 * </ul>
 *
 * <p>Threads: any; no state besides the loads it is given.
 */
public final class LeastLoadedRouter implements Router {
    /** How the instance is chosen. */
    public enum Mode {
        EXACT,
        TWO_CHOICES
    }

    private static final int CAS_ATTEMPTS = 16;

    private final Mode mode;

    public LeastLoadedRouter(Mode mode) {
        this.mode = java.util.Objects.requireNonNull(mode, "mode");
    }

    @Override
    public String name() {
        return mode == Mode.EXACT ? "least-loaded" : "two-choices";
    }

    @Override
    public int route(RouteRequest request, InstanceLoads loads) {
        long cost = request.cost();
        int n = loads.instances();
        if (n == 1) {
            loads.book(0, cost);
            return 0;
        }
        ThreadLocalRandom random = ThreadLocalRandom.current();
        if (mode == Mode.TWO_CHOICES) {
            int a = random.nextInt(n);
            int b = random.nextInt(n - 1);
            if (b >= a) {
                b++;
            }
            int pick = loads.load(b) < loads.load(a) ? b : a;
            loads.book(pick, cost);
            return pick;
        }
        for (int attempt = 0; ; attempt++) {
            int start = random.nextInt(n); // ties: the first least-loaded from a random start
            int best = start;
            long bestLoad = loads.load(start);
            for (int k = 1; k < n; k++) {
                int i = start + k < n ? start + k : start + k - n;
                long l = loads.load(i);
                if (l < bestLoad) {
                    best = i;
                    bestLoad = l;
                }
            }
            if (loads.tryBook(best, bestLoad, cost)) {
                return best;
            }
            if (attempt >= CAS_ATTEMPTS) { // heavy contention: book where we looked last
                loads.book(best, cost);
                return best;
            }
        }
    }
}
