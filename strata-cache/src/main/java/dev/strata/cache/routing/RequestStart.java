package dev.strata.cache.routing;

/**
 * Marks the start of a request: every step after it, up to the next {@code RequestStart}, belongs
 * to request {@code request} of session {@code session}. A session is a run of requests that share
 * context (the turns of one conversation or agent run); a new session id starts a new session.
 * Immutable; any thread.
 *
 * @param session the session's id, chosen by the recorder (any value)
 * @param request the request's id, chosen by the recorder (any value)
 */
public record RequestStart(long session, long request) implements RoutingRecord {
}
