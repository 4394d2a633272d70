package dev.strata.node.route;

/**
 * Chooses the engine instance that serves a request, and books the request's cost on it.
 *
 * <p>Contract: {@link #route} returns an instance in {@code [0, loads.instances())} and has added
 * {@link RouteRequest#cost()} to its load; the caller calls
 * {@link InstanceLoads#complete(int, long)} with the same cost when the request finishes.
 *
 * <p>Threads: implementations are safe for concurrent use by any thread.
 */
public interface Router {
    int route(RouteRequest request, InstanceLoads loads);

    /** A short name for reports, e.g. {@code least-loaded}. */
    String name();
}
